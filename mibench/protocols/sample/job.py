"""One estimate of one dataset under the sample protocol, in this process: the job an estimate
worker (:class:`mibench.protocols.workers.EstimateWorker`) runs (:func:`run_job`); or the members of a
cell, one estimator on the datasets of several (level, seed) pairs trained together (:class:`CellJob`,
:meth:`mibench.estimators.trained.HeldOutEstimator.estimate_members`), each member's outcome the one its
separate estimate records.  Never raises for a failing estimator: the outcome (``ok``, ``error``,
``non_finite``, ``implausible``: the plausibility rule of :mod:`mibench.estimation.plausibility`) is
returned with the error text."""
from __future__ import annotations

import math
import time
import traceback
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from mibench.errors import one_line
from mibench.estimation.plausibility import IMPLAUSIBLE
from mibench.estimation.result import own_n_parameters, own_status
from mibench.records.io import float_or_nan
from mibench.utils.checks import estimate_value
from mibench.utils.units import LN2


def estimate_once(name: str, x: np.ndarray, y: np.ndarray, seed: int, critic: str, device: str,
                  estimate_kwargs: dict | None = None) -> dict:
    """Run estimator ``name`` on one dataset in this process; never raises (errors are recorded)."""
    from mibench.estimators import ESTIMATORS
    from mibench.estimators.kinds import CRITIC

    out = _blank()
    try:
        entry = ESTIMATORS.get(name)
        kind = entry.obj.kind
        out["kind"] = kind
        t0 = time.perf_counter()
        if kind == CRITIC:
            from mibench.estimation import estimate

            res = estimate(x, y, estimator=name, critic=critic, seed=int(seed), units="nats", device=device,
                           **(estimate_kwargs or {}))
            out["seconds"] = time.perf_counter() - t0
            out["mi_status"] = str(getattr(res, "status", "") or "")
            # an implausible value is recorded as read (mi is NaN or kept for it), a plausible one as reported
            value = float(res.mi_raw if out["mi_status"] in IMPLAUSIBLE else getattr(res, "mi", res))
            if out["mi_status"] in IMPLAUSIBLE:
                out["error"] = str(res.settings.get("implausible", ""))
            out["mi_stderr_nats"] = float_or_nan(getattr(res, "mi_stderr", float("nan")))
            if hasattr(res, "clipped"):
                out["clipped"] = bool(res.clipped)
            out["n_parameters"] = int(getattr(res, "n_parameters", 0) or 0)
        else:
            from mibench.estimation.estimate import parameters_of, sample_estimator
            from mibench.utils.device import resolve_device

            obj = sample_estimator(entry.obj(), str(resolve_device(device)))
            out["parameters"] = parameters_of(obj)
            # copies: in this process every estimator of the run reads the same arrays, and one that wrote
            # into them would change what the next one estimates
            raw = obj.estimate(np.array(x, copy=True), np.array(y, copy=True), seed=int(seed))
            out["seconds"] = time.perf_counter() - t0
            value = estimate_value(raw, "estimate")
            out["n_parameters"] = own_n_parameters(obj)
            out["mi_status"] = own_status(obj)     # as mibench.estimate records it: not_assessed where it sets none
            out["info"] = str(getattr(obj, "last_info", "") or "")
        _finish(out, value, None if kind == CRITIC else obj, len(x))
    except BaseException as exc:  # recorded, the run carries on (KeyboardInterrupt re-raised)
        if isinstance(exc, KeyboardInterrupt):
            raise
        _failed(out, exc)
    return out


def _finish(out: dict, value: float, sample_obj, n: int) -> None:
    """Record ``value`` (nats) in ``out`` with its status; for a sample estimator (``sample_obj``, whose
    ``last`` holds the value's details) the plausibility rule first."""
    out["value_nats"] = value
    if sample_obj is not None:
        from mibench.estimation.plausibility import implausible, pairs_read, stderr_of

        out["mi_stderr_nats"] = stderr_of(sample_obj)       # NaN where the estimator gives none
        flag = implausible(value, pairs_read(sample_obj, n), out["mi_stderr_nats"])
        if flag:
            out["mi_status"], out["error"] = flag
        elif math.isfinite(value):
            # a plausible value below zero is recorded as 0 and marked clipped, as mibench.estimate reports
            # it and as a critic bound's estimate is recorded
            out["clipped"] = value < 0
            out["value_nats"] = max(value, 0.0)
    if not math.isfinite(value):
        out["status"] = "non_finite"
        out["error"] = f"estimate is {value}"
    elif out["mi_status"] in IMPLAUSIBLE:
        out["status"] = "implausible"
        out["error"] = out["error"] or f"{out['mi_status']}: the estimate cannot stand as a result"
    else:
        out["status"] = "ok"


def _failed(out: dict, exc: BaseException) -> None:
    out["error"] = one_line(exc)[:500]
    out["status"] = "error"
    out["traceback"] = "".join(traceback.format_exception(exc))


def _blank() -> dict:
    return {"value_nats": float("nan"), "seconds": float("nan"), "n_parameters": 0, "status": "error",
            "mi_status": "", "mi_stderr_nats": float("nan"), "clipped": "", "error": "", "kind": "", "info": ""}


@dataclass(frozen=True)
class CellJob:
    """The members of a cell: sample estimator ``name`` on ``datasets[i]`` = (x, y) with ``seeds[i]``."""

    name: str
    datasets: list
    seeds: list
    device: str


def estimate_cell(job: CellJob) -> list[dict]:
    """One :func:`estimate_once` result per member of ``job``, the members trained together
    (:meth:`~mibench.estimators.trained.HeldOutEstimator.estimate_members`; each member's ``seconds`` is
    its share of the cell's time); never raises."""
    from mibench.estimation.estimate import parameters_of, sample_estimator
    from mibench.estimators import ESTIMATORS
    from mibench.utils.device import resolve_device

    outs = [_blank() for _ in job.seeds]
    try:
        entry = ESTIMATORS.get(job.name)
        obj = sample_estimator(entry.obj(), str(resolve_device(job.device)))
        members = obj.estimate_members(job.datasets, job.seeds)
    except BaseException as exc:  # every member fails alike (KeyboardInterrupt re-raised)
        if isinstance(exc, KeyboardInterrupt):
            raise
        for out in outs:
            _failed(out, exc)
        return outs
    for out, member, (x, _) in zip(outs, members, job.datasets):
        out.update(kind=obj.kind, parameters=parameters_of(obj))
        if member.error is not None:     # recorded as its separate estimate's error is
            _failed(out, member.error)
            continue
        out.update(seconds=member.seconds, n_parameters=int(getattr(obj, "n_parameters", 0) or 0),
                   mi_status=member.status, info=str(getattr(obj, "last_info", "") or ""))
        try:
            _finish(out, float(member.value), SimpleNamespace(last=member.last), len(x))
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            _failed(out, exc)
    return outs


def run_job(job) -> dict | list[dict]:
    """What an estimate worker runs: a :class:`CellJob` (a list of results) or :func:`estimate_once`'s
    arguments (one result)."""
    return estimate_cell(job) if isinstance(job, CellJob) else estimate_once(*job)


def bits_or_empty(nats):
    """A standard error in nats -> bits for the CSV; empty when there is none."""
    v = float_or_nan(nats)
    return v / LN2 if math.isfinite(v) else ""
