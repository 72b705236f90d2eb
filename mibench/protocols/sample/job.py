"""One estimate of one dataset under the sample protocol, in this process: the job an estimate
worker (:class:`mibench.protocols.workers.EstimateWorker`) runs.  Never raises for a failing estimator: the
outcome (``ok``, ``error``, ``non_finite``, ``implausible``: the plausibility rule of
:mod:`mibench.estimation.plausibility`) is returned with the error text."""
from __future__ import annotations

import math
import time
import traceback

import numpy as np

from mibench.errors import MibenchError, one_line
from mibench.estimation.plausibility import IMPLAUSIBLE
from mibench.records.io import float_or_nan
from mibench.utils.units import LN2


def estimate_once(name: str, x: np.ndarray, y: np.ndarray, seed: int, critic: str, device: str,
                  estimate_kwargs: dict | None = None) -> dict:
    """Run estimator ``name`` on one dataset in this process; never raises (errors are recorded)."""
    from mibench.estimators import ESTIMATORS
    from mibench.estimators.kinds import CRITIC

    out = {"value_nats": float("nan"), "seconds": float("nan"), "n_parameters": 0, "status": "error",
           "mi_status": "", "mi_stderr_nats": float("nan"), "clipped": "", "error": "", "kind": "", "info": ""}
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
            raw = obj.estimate(x, y, seed=int(seed))
            out["seconds"] = time.perf_counter() - t0
            try:
                value = float(raw)
            except (TypeError, ValueError):
                raise MibenchError(f"estimate returned {type(raw).__name__}, not a number") from None
            out["n_parameters"] = int(getattr(obj, "n_parameters", 0) or 0)
            out["mi_status"] = str(getattr(obj, "status", "") or "")
            out["info"] = str(getattr(obj, "last_info", "") or "")
        out["value_nats"] = value
        if kind != CRITIC:
            from mibench.estimation.plausibility import implausible, pairs_read, stderr_of

            flag = implausible(value, pairs_read(obj, len(x)), stderr_of(obj))
            if flag:
                out["mi_status"], out["error"] = flag
        if not math.isfinite(value):
            out["status"] = "non_finite"
            out["error"] = f"estimate is {value}"
        elif out["mi_status"] in IMPLAUSIBLE:
            out["status"] = "implausible"
            out["error"] = out["error"] or f"{out['mi_status']}: the estimate cannot stand as a result"
        else:
            out["status"] = "ok"
    except BaseException as exc:  # recorded, the run carries on (KeyboardInterrupt re-raised)
        if isinstance(exc, KeyboardInterrupt):
            raise
        out["error"] = one_line(exc)[:500]
        out["status"] = "error"
        out["traceback"] = traceback.format_exc()
    return out




def bits_or_empty(nats):
    """A standard error in nats -> bits for the CSV; empty when there is none."""
    v = float_or_nan(nats)
    return v / LN2 if math.isfinite(v) else ""
