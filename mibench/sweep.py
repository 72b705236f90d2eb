"""Sweeps: a grid of runs, each cell a normal run directory, resumable, on local processes or Dask.

Grid
----
A sweep spec (TOML / YAML file, a preset, or the CLI shorthand) expands to **cells**.  A cell is
one :class:`~mibench.harness.RunConfig`: (task, task params, critic, depth, width, embed, batch
size, lr, MI schedule, steps, seed) with **all the sweep's estimators training together** on the
same batch stream (paired and cheaper; each estimator's numbers are the same as if it trained
alone, see :mod:`mibench.harness`).  ``split_estimators = N`` splits the estimators into N cells
with nearly equal numbers of critics (so N CPU workers share a cell's work; the numbers are the
same, each cell regenerates the same batch stream); estimators that share a critic (JS, SMILE-tau)
stay in one cell, and ``split_estimators = true`` gives one cell per critic.

Spec keys (file, preset and shorthand share them; a list is a grid axis unless noted)::

    name, description      free text; name is the default sweep directory results/sweeps/<name>
    tasks                  list of task names or tables {task = "...", params = {...}, <any key below>}
                           (keys in a task table override the top level for that task)
    params                 task parameters for every task, e.g. {dim = [2, 4]} (a list = an axis)
    estimators             the estimators of every cell (a list, NOT an axis), or "all"
    critics                axis: inner | bilinear | separable | joint
    seeds                  axis: [0, 1, 2] (or "0-2")
    layers, hidden, embed  axes: critic depth (hidden layers), width, separable embedding size
    batch_size, lr, steps  axes
    mi                     axis of MI schedules: "stepwise", 2 (constant), "2,4,6" (one staircase);
                           mi = [2, 6] is two cells (constant 2 bits, constant 6 bits)
    burn_in                axis
    device, log_every,     scalars (precision: fp32 | bf16 | tf32, see mibench run --precision)
    precision
    split_estimators       bool or N cells (default false; whole critics, see above)
    n, timeout             the sample protocol (issue 12, :mod:`mibench.sample_protocol`): with n set, a
                           cell is one sample run (a fixed dataset of n pairs per level and seed; all the
                           seeds in one cell, so variance is over seeds; timeout seconds per estimate);
                           split_estimators = true gives one cell per estimator.  Critic-bound estimators
                           run through mibench.estimate with the critic axis and, where given,
                           hidden / layers / embed / batch_size / lr / steps.

Cell names are readable and deterministic, e.g. ``gaussian_dim10_joint-d2w256_b64_mistepwise_s0``;
axes that do not appear in the name (lr, steps, burn-in) are appended when they vary.

Resume
------
The sweep directory holds one run directory per cell plus ``sweep.json`` (the manifest: spec,
command, per-cell status, wall time, divergence, failure reason).  Re-running the same sweep
skips every cell whose run directory is complete (:func:`mibench.results.is_complete`) *and* whose
recorded config equals the cell's; a partial cell (status running / interrupted / failed, or no
config) is wiped and redone.  A complete cell whose config differs (the spec was edited) is an
error rather than a silent overwrite.  A failing cell writes ``failed.json`` (error + traceback)
into its directory and is recorded in the manifest; the sweep carries on.

Backends
--------
``local`` (default): a :class:`concurrent.futures.ProcessPoolExecutor` (spawned processes), each
worker limited to ``threads`` torch threads so that workers x threads <= cores; ``workers=1``
runs the cells in this process.  ``dask``: :mod:`dask.distributed` -- ``address=tcp://host:8786``
connects to an existing cluster (workers run each cell in a temporary directory and ship the
files back, so no shared filesystem is needed; ``shared_fs=True`` writes directly instead);
without an address a :class:`~dask.distributed.LocalCluster` of ``workers`` processes is started.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import itertools
import json
import math
import os
import re
import shutil
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MibenchError

MANIFEST = "sweep.json"
FAILED = "failed.json"
LOCK = ".sweep.lock"

#: grid axes (key in the spec -> RunConfig field), in the order cells are enumerated (seed last)
AXES = [("critics", "critic"), ("layers", "layers"), ("hidden", "hidden"), ("embed", "embed"),
        ("batch_size", "batch_size"), ("lr", "lr"), ("mi", "mi"), ("steps", "steps"),
        ("burn_in", "burn_in"), ("seeds", "seed")]
SCALARS = ("device", "log_every", "precision", "n", "timeout")   # n, timeout: the sample protocol (issue 12)
SPEC_KEYS = {"name", "description", "tasks", "params", "estimators", "split_estimators", "execution",
             *(a for a, _ in AXES), *SCALARS}
TASK_KEYS = {"task", "params", "estimators", *(a for a, _ in AXES), *SCALARS}
SINGULAR = {"critic": "critics", "seed": "seeds", "estimator": "estimators", "task": "tasks",
            "batch": "batch_size", "depth": "layers", "width": "hidden", "schedule": "mi"}
EXECUTION_KEYS = {"backend", "workers", "threads", "address", "shared_fs"}
#: short names for task parameters in cell names
PARAM_ABBR = {"nuisance": "eta", "n_per_class": "npc", "layout": "L", "side": "side", "ds": "ds", "dim": "dim"}
NAME_SKIP_PARAMS = {"data_dir"}


# --------------------------------------------------------------------------------------- spec


def _listify(v) -> list:
    if isinstance(v, (list, tuple)):
        if not v:
            raise MibenchError("empty list in the sweep spec (every axis needs at least one value)")
        return list(v)
    return [v]


def parse_seeds(v) -> list[int]:
    """``[0, 1]``, ``3``, ``"0,1"`` or ``"0-4"`` -> list of ints."""
    out: list[int] = []
    for item in _listify(v):
        if isinstance(item, str):
            for part in item.split(","):
                part = part.strip()
                if not part:
                    continue
                m = re.fullmatch(r"(-?\d+)\s*-\s*(\d+)", part)
                try:
                    out += list(range(int(m.group(1)), int(m.group(2)) + 1)) if m else [int(part)]
                except ValueError:
                    raise MibenchError(f"seeds must be integers or ranges like 0-4, got {part!r}") from None
        elif isinstance(item, bool) or not isinstance(item, int):
            raise MibenchError(f"seeds must be integers, got {item!r}")
        else:
            out.append(item)
    if not out:
        raise MibenchError("no seeds given")
    return list(dict.fromkeys(out))


def _normalise_keys(d: dict, allowed: set, where: str) -> dict:
    import difflib

    out = {}
    for key, value in d.items():
        k = str(key).strip().replace("-", "_").lower()
        k = SINGULAR.get(k, k)
        if k not in allowed:
            close = difflib.get_close_matches(k, sorted(allowed), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(sorted(allowed))}"
            raise MibenchError(f"unknown key {key!r} in {where}{hint}")
        if k in out:
            raise MibenchError(f"key {k!r} given twice in {where} (singular and plural?)")
        out[k] = value
    return out


@dataclass
class SweepSpec:
    """A normalised sweep specification (see the module docstring for the keys)."""

    name: str = "sweep"
    description: str = ""
    tasks: list = field(default_factory=list)       # [{"task": str, "params": {..}, overrides...}]
    params: dict = field(default_factory=dict)
    estimators: object = field(default_factory=lambda: ["smile-5"])
    split_estimators: bool | int = False
    grid: dict = field(default_factory=dict)        # axis -> list (spec key names of AXES)
    scalars: dict = field(default_factory=dict)     # device, log_every
    execution: dict = field(default_factory=dict)   # backend, workers, threads, address, shared_fs

    @classmethod
    def from_dict(cls, data: dict, name: str | None = None) -> "SweepSpec":
        if not isinstance(data, dict):
            raise MibenchError("a sweep config must be a table / mapping at the top level")
        d = _normalise_keys(data, SPEC_KEYS, "the sweep config")
        tasks_raw = d.get("tasks")
        if tasks_raw is None:
            raise MibenchError("the sweep config needs 'tasks' (e.g. tasks = [\"gaussian\"])")
        tasks = []
        for t in _listify(tasks_raw):
            if isinstance(t, str):
                tasks.append({"task": t, "params": {}})
            elif isinstance(t, dict):
                td = _normalise_keys(t, TASK_KEYS | {"tasks"}, "a [[tasks]] table")
                if "tasks" in td:          # "task" was normalised to the plural
                    td["task"] = td.pop("tasks")
                if "task" not in td or not isinstance(td["task"], str):
                    raise MibenchError("every [[tasks]] table needs task = \"<name>\"")
                td["params"] = dict(td.get("params") or {})
                tasks.append(td)
            else:
                raise MibenchError(f"tasks must be names or tables, got {t!r}")
        grid = {a: d[a] for a, _ in AXES if a in d}
        scalars = {k: d[k] for k in SCALARS if k in d}
        execution = _normalise_keys(d.get("execution") or {}, EXECUTION_KEYS, "[execution]")
        spec = cls(name=str(name or d.get("name") or "sweep"), description=str(d.get("description", "")),
                   tasks=tasks, params=dict(d.get("params") or {}), estimators=d.get("estimators", ["smile-5"]),
                   split_estimators=_check_split(d.get("split_estimators", False)), grid=grid, scalars=scalars,
                   execution=execution)
        spec.cells()   # validate now: a mistake is one line before anything runs
        return spec

    def to_dict(self) -> dict:
        out = {"name": self.name}
        if self.description:
            out["description"] = self.description
        out["tasks"] = [dict(t) for t in self.tasks]
        if self.params:
            out["params"] = dict(self.params)
        out["estimators"] = self.estimators
        out.update(self.grid)
        out.update(self.scalars)
        if self.split_estimators:
            out["split_estimators"] = self.split_estimators
        if self.execution:
            out["execution"] = dict(self.execution)
        return out

    def with_overrides(self, **over) -> "SweepSpec":
        """A copy with top-level keys replaced (CLI flags over a file or preset); an overridden
        key is also removed from per-task tables, so the flag wins everywhere."""
        data = self.to_dict()
        for key, value in over.items():
            if value is None:
                continue
            key = SINGULAR.get(key, key)
            if key == "params":      # merged: --set dim=2,4 replaces only 'dim'
                data["params"] = {**data.get("params", {}), **value}
                for t in data["tasks"]:
                    for k in value:
                        t.get("params", {}).pop(k, None)
                continue
            data[key] = value
            if key in TASK_KEYS - {"task"}:
                for t in data["tasks"]:
                    t.pop(key, None)
        return SweepSpec.from_dict(data)

    # ------------------------------------------------------------------ expansion
    def cells(self) -> list["Cell"]:
        from .estimators import resolve_estimators
        from .harness import RunConfig

        if any(t.get("n", self.scalars.get("n")) is not None for t in self.tasks):
            return self._sample_cells()
        cells: list[Cell] = []
        for t in self.tasks:
            task = _check_task(t["task"])
            params_grid = {**self.params, **t.get("params", {})}
            _check_task_params(task, params_grid)
            estimators = resolve_estimators(t.get("estimators", self.estimators))
            from .estimators.protocols import require_streamable

            require_streamable(estimators)
            axes = {}
            for key, fld in AXES:
                raw = t.get(key, self.grid.get(key))
                if raw is None:
                    axes[fld] = [getattr(RunConfig, fld)] if fld not in ("seed",) else [0]
                elif key == "seeds":
                    axes[fld] = parse_seeds(raw)
                else:
                    axes[fld] = [_check_axis_value(fld, v) for v in _listify(raw)]
            scal = {k: t.get(k, self.scalars.get(k)) for k in SCALARS}
            pkeys = list(params_grid)
            pvals = [_listify(params_grid[k]) for k in pkeys]
            groups = _estimator_groups(estimators, self.split_estimators)
            for pcombo in itertools.product(*pvals):
                tparams = dict(zip(pkeys, pcombo))
                for combo in itertools.product(*(axes[f] for _, f in AXES)):
                    kw = dict(zip([f for _, f in AXES], combo))
                    for group in groups:
                        cfg = RunConfig(task=task, task_params=dict(tparams), estimators=list(group), **kw,
                                        **{k: v for k, v in scal.items() if v is not None})
                        cells.append(Cell(name="", config=_checked_config(cfg)))
        if not cells:
            raise MibenchError("the sweep has no cells")
        _name_cells(cells, bool(self.split_estimators))
        return cells

    def _sample_cells(self) -> list["Cell"]:
        """Cells of the sample protocol: one per task x params x critic x mi x n (x estimate settings)
        x estimator group, all seeds inside (see the module docstring)."""
        from .sample_protocol import SampleConfig

        cells: list[Cell] = []
        for t in self.tasks:
            if t.get("n", self.scalars.get("n")) is None:
                raise MibenchError(f"task {t['task']!r}: give n for every task of a sample-protocol sweep")
            task = _check_task(t["task"])
            params_grid = {**self.params, **t.get("params", {})}
            _check_task_params(task, params_grid)
            from .estimators import resolve_estimators

            estimators = resolve_estimators(t.get("estimators", self.estimators))
            raw = {key: t.get(key, self.grid.get(key)) for key, _ in AXES}
            if raw.get("burn_in") is not None:
                raise MibenchError("burn_in belongs to the streaming protocol; a sample sweep (n set) has none")
            seeds = parse_seeds(raw["seeds"]) if raw.get("seeds") is not None else [0]
            critics = [_check_axis_value("critic", v) for v in _listify(raw["critics"])] if raw.get("critics") else ["joint"]
            mis = [_check_axis_value("mi", v) for v in _listify(raw["mi"])] if raw.get("mi") is not None else [4.0]
            ns = _listify(t.get("n", self.scalars.get("n")))
            est_axes = {fld: [_check_axis_value(fld, v) for v in _listify(raw[key])]
                        for key, fld in AXES if fld in ("hidden", "layers", "embed", "batch_size", "lr", "steps")
                        and raw.get(key) is not None}
            scal = {k: t.get(k, self.scalars.get(k)) for k in ("device", "timeout")}
            split = self.split_estimators
            if split is True:
                groups = [[e] for e in estimators]
            else:
                k = min(len(estimators), int(split or 1))
                size, extra = divmod(len(estimators), k)
                groups, start = [], 0
                for i in range(k):
                    stop = start + size + (i < extra)
                    groups.append(estimators[start:stop])
                    start = stop
            pkeys = list(params_grid)
            for pcombo in itertools.product(*[_listify(params_grid[k]) for k in pkeys]):
                for critic, mi, n in itertools.product(critics, mis, ns):
                    for ecombo in itertools.product(*est_axes.values()):
                        kw = dict(zip(est_axes, ecombo))
                        for group in groups:
                            cfg = SampleConfig(task=task, task_params=dict(zip(pkeys, pcombo)), estimators=list(group),
                                               critic=critic, mi=mi, n=n, seeds=seeds, estimate_kwargs=kw,
                                               **{k: v for k, v in scal.items() if v is not None})
                            cfg = cfg.resolved()
                            cells.append(Cell(name="", config=json.loads(json.dumps(dataclasses.asdict(cfg)))))
        if not cells:
            raise MibenchError("the sweep has no cells")
        _name_sample_cells(cells, bool(self.split_estimators))
        return cells


def _check_task(name) -> str:
    from .tasks import TASKS

    return TASKS.get(str(name)).name


def _check_task_params(task: str, params: dict) -> None:
    from .tasks import TASKS

    accepted = inspect.signature(TASKS.get(task).obj).parameters
    for key in params:
        if (key not in accepted and key not in ("transform", "layer")) or key == "device":  # encoders wrap any task
            ok = sorted(k for k in accepted if k != "device")
            raise MibenchError(f"task {task!r} does not take {key!r}; it takes: {', '.join(ok) or 'nothing'}")


def _check_axis_value(fld: str, v):
    if fld == "critic":
        from .critics import CRITICS

        return CRITICS.get(str(v)).name
    if fld == "mi":
        from .schedule import parse_schedule

        if isinstance(v, bool):
            raise MibenchError(f"mi must be 'stepwise', a number or a comma list, got {v!r}")
        parse_schedule(v, 10_000)
        return float(v) if isinstance(v, (int, float)) else v   # 2 and 2.0 are the same schedule
    if fld in ("layers", "hidden", "embed", "batch_size", "steps", "burn_in"):
        if isinstance(v, bool) or not isinstance(v, int):
            try:
                if isinstance(v, str) and re.fullmatch(r"\s*\d+\s*", v):
                    return int(v)
            except ValueError:
                pass
            raise MibenchError(f"{fld} must be an integer, got {v!r}")
        return v
    if fld == "lr":
        try:
            return float(v)
        except (TypeError, ValueError):
            raise MibenchError(f"lr must be a number, got {v!r}") from None
    return v


def _checked_config(cfg) -> dict:
    """Resolve a RunConfig (canonical estimator names, checks) without building the task."""
    from .schedule import parse_schedule

    cfg = cfg.resolved()
    parse_schedule(cfg.mi, cfg.steps)
    if cfg.hidden < 1 or cfg.layers < 0 or cfg.embed < 1:
        raise MibenchError(f"critic sizes must be positive (hidden={cfg.hidden}, layers={cfg.layers}, embed={cfg.embed})")
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


@dataclass
class Cell:
    name: str
    config: dict          # a resolved RunConfig as a JSON-ready dict

    def run_config(self):
        if self.config.get("protocol") == "sample":
            from .sample_protocol import SampleConfig

            return SampleConfig(**self.config)
        from .harness import RunConfig

        return RunConfig(**self.config)


def _fmt_value(v) -> str:
    if isinstance(v, bool):
        return "T" if v else "F"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _mi_token(mi) -> str:
    return "mi" + (str(mi).replace(",", "-").replace(" ", "") if not isinstance(mi, float) else f"{mi:g}")


def _check_split(value) -> bool | int:
    """``split_estimators``: true (one cell per estimator), false, or a number of groups."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value >= 1:
        return value
    raise MibenchError(f"split_estimators must be true, false or a number of groups >= 1, got {value!r}")


def _estimator_groups(estimators: list, split) -> list[list]:
    """The estimators of one cell per group: whole training groups (estimators that share a
    critic, :func:`mibench.estimators.training_groups`, are never separated), contiguous, with
    (nearly) equal numbers of critics per cell; ``True``: one cell per critic."""
    from .estimators import training_groups

    units = list(training_groups(estimators).values())
    n = len(units) if split is True else min(len(units), int(split or 1))
    size, extra = divmod(len(units), n)
    cells, start = [], 0
    for i in range(n):
        stop = start + size + (i < extra)
        members = sorted(e for unit in units[start:stop] for e in unit)
        cells.append([estimators[e] for e in members])
        start = stop
    return cells


def _name_cells(cells: list[Cell], split: bool) -> None:
    varying = {k for k in ("lr", "steps", "burn_in", "embed", "device", "log_every", "precision")
               if len({json.dumps(c.config[k]) for c in cells}) > 1}
    for c in cells:
        cfg = c.config
        parts = [cfg["task"]]
        for k, v in cfg["task_params"].items():
            if k in NAME_SKIP_PARAMS:
                continue
            if isinstance(v, bool):
                parts.append(k if v else f"no{k}")
            else:
                parts.append(f"{PARAM_ABBR.get(k, k)}{_fmt_value(v)}")
        if split:
            parts.append("+".join(cfg["estimators"]))
        crit = f"{cfg['critic']}-d{cfg['layers']}w{cfg['hidden']}"
        if cfg["critic"] == "separable" or "embed" in varying:
            crit += f"e{cfg['embed']}"
        parts += [crit, f"b{cfg['batch_size']}", _mi_token(cfg["mi"])]
        if "steps" in varying:
            parts.append(f"n{cfg['steps']}")
        if "lr" in varying:
            parts.append(f"lr{cfg['lr']:g}")
        if "burn_in" in varying:
            parts.append(f"bi{cfg['burn_in']}")
        if "device" in varying:
            parts.append(str(cfg["device"]))
        if "precision" in varying or cfg.get("precision", "fp32") != "fp32":
            parts.append(cfg.get("precision", "fp32"))
        parts.append(f"s{cfg['seed']}")
        c.name = re.sub(r"[^A-Za-z0-9_.+-]", "-", "_".join(parts))
    seen: dict[str, int] = {}
    for c in cells:
        seen[c.name] = seen.get(c.name, 0) + 1
    for c in cells:   # anything still ambiguous (e.g. data_dir varies) gets a short config hash
        if seen[c.name] > 1:
            c.name += "_" + fingerprint(c.config)[:8]
    if len({c.name for c in cells}) != len(cells):
        raise MibenchError("the sweep contains the same cell twice (duplicate values in an axis?)")


def _name_sample_cells(cells: list[Cell], split: bool) -> None:
    for c in cells:
        cfg = c.config
        parts = [cfg["task"]]
        for k, v in cfg["task_params"].items():
            if k not in NAME_SKIP_PARAMS:
                parts.append((k if v else f"no{k}") if isinstance(v, bool) else f"{PARAM_ABBR.get(k, k)}{_fmt_value(v)}")
        if split:
            parts.append("+".join(e.split(":")[-1] for e in cfg["estimators"]))
        parts.append(f"sample-n{cfg['n']}")
        if cfg["critic"] != "joint":
            parts.append(cfg["critic"])
        parts += [f"{k}{_fmt_value(v)}" for k, v in sorted(cfg.get("estimate_kwargs", {}).items())]
        parts += [_mi_token(cfg["mi"] if not isinstance(cfg["mi"], list) else ",".join(f"{v:g}" for v in cfg["mi"])),
                  "seeds" + "-".join(map(str, cfg["seeds"]))]
        c.name = re.sub(r"[^A-Za-z0-9_.+-]", "-", "_".join(parts))
    seen: dict[str, int] = {}
    for c in cells:
        seen[c.name] = seen.get(c.name, 0) + 1
    for c in cells:
        if seen[c.name] > 1:
            c.name += "_" + fingerprint(c.config)[:8]
    if len({c.name for c in cells}) != len(cells):
        raise MibenchError("the sweep contains the same cell twice (duplicate values in an axis?)")


def fingerprint(config: dict) -> str:
    config = {**ADDED_FIELDS, **config}
    relevant = {k: v for k, v in config.items() if k not in IGNORED_FOR_RESUME}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


#: config fields that do not change a run's numbers, so a finished cell is reused across them
IGNORED_FOR_RESUME = ("log_every",)
#: RunConfig fields added after runs were recorded, with the value such a run had
ADDED_FIELDS = {"precision": "fp32"}


def load_spec(path) -> SweepSpec:
    """Read a TOML (``.toml``) or YAML (``.yaml`` / ``.yml``) sweep config."""
    path = Path(path)
    if not path.is_file():
        raise MibenchError(f"sweep config not found: {path}")
    text = path.read_text()
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        data = _load_yaml(text, path)
    elif suffix == ".toml":
        data = _load_toml(text, path)
    else:
        try:
            data = _load_toml(text, path)
        except MibenchError:
            data = _load_yaml(text, path)
    return SweepSpec.from_dict(data, name=(data or {}).get("name") or path.stem)


def _load_toml(text, path):
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MibenchError(f"{path}: not valid TOML: {exc}") from None


def _load_yaml(text, path):
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        msg = str(exc).replace("\n", " ")
        raise MibenchError(f"{path}: not valid YAML: {msg}") from None


def dump_spec_yaml(spec: SweepSpec) -> str:
    import yaml

    return yaml.safe_dump(spec.to_dict(), sort_keys=False, default_flow_style=None, allow_unicode=True, width=100)


# ------------------------------------------------------------------------------ execution


@dataclass
class CellResult:
    name: str
    status: str                        # complete | failed | skipped
    wall_seconds: float | None = None
    diverged: dict = field(default_factory=dict)
    error: str | None = None
    host: str | None = None


@dataclass
class SweepReport:
    out_dir: Path
    cells: list
    results: dict                      # name -> CellResult (this invocation and skipped)
    ran: int = 0
    skipped: int = 0
    failed: list = field(default_factory=list)
    diverged: list = field(default_factory=list)
    wall_seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed


def default_workers(n_cells: int, device: str = "auto") -> int:
    if _uses_gpu(device):
        return 1
    return max(1, min(n_cells, available_cores()))


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS / Windows)
        return os.cpu_count() or 1


def _uses_gpu(device) -> bool:
    device = str(device or "auto").lower()
    if device.startswith(("cuda", "mps")):
        return True
    if device == "auto":
        try:
            import torch

            return torch.cuda.is_available()
        except Exception:  # pragma: no cover
            return False
    return False


def execute_cell(config: dict, out_dir: str, threads: int | None = None, plot: bool = True,
                 ship: bool = False, plugins: bytes | None = None) -> dict:
    """Run one cell (in whatever process or cluster worker calls this) and return a JSON-ready
    result.  Never raises for a failing run: the error and traceback are returned and written to
    ``failed.json``.  With ``ship=True`` the run directory is built in a temporary directory and
    its files come back in ``result["files"]`` (for clusters without a shared filesystem)."""
    import torch

    from .harness import RunConfig, run
    from .results import read_config, write_json

    if plugins:    # register_estimator objects of the driver process, re-played here (cloudpickle)
        import cloudpickle

        from .plugins import install_registrations

        install_registrations(cloudpickle.loads(plugins))

    if _in_worker_process():      # a process of mibench's own (pool / Dask worker), not the caller's
        from .allocator import tune_cpu_allocator

        tune_cpu_allocator()
    old_threads = torch.get_num_threads()
    torch.set_num_threads(int(threads or _threads_for_this_worker()))
    target = Path(tempfile.mkdtemp(prefix="mibench-cell-")) if ship else Path(out_dir)
    t0 = time.perf_counter()
    result = {"status": "failed", "error": None, "diverged": {}, "host": socket.gethostname(), "pid": os.getpid(),
              "torch_threads": torch.get_num_threads()}
    try:
        if config.get("protocol") == "sample":
            from .sample_protocol import SampleConfig, run_sample

            res = run_sample(SampleConfig(**config), out_dir=target, progress=False, plot=plot,
                             run_id=Path(out_dir).name)
            result.update(status="complete", failed_estimates=res.config.get("failed_estimates", []))
        else:
            res = run(RunConfig(**config), out_dir=target, progress=False, plot=plot, run_id=Path(out_dir).name)
            result.update(status="complete", diverged=dict(res.diverged))
    except Exception as exc:   # recorded, not fatal: the sweep goes on
        while isinstance(exc, UnboundLocalError) and exc.__context__ is not None:
            exc = exc.__context__  # an error raised while cleaning up hides the real one
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        result.update(status="failed", error=f"{type(exc).__name__}: {msg}".rstrip(": "),
                      traceback=traceback.format_exc())
        with contextlib.suppress(Exception):
            cfg = read_config(target)
            if cfg.get("status") != "complete":
                cfg["status"] = "failed"
                write_json(target / "config.json", cfg)
        write_json(target / FAILED, {"error": result["error"], "traceback": result["traceback"],
                                     "host": result["host"], "config": config,
                                     "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    finally:
        torch.set_num_threads(old_threads)
    result["wall_seconds"] = round(time.perf_counter() - t0, 3)
    if ship:
        files = {}
        for p in sorted(target.iterdir()):
            if p.is_file() and not p.name.startswith("."):
                files[p.name] = p.read_bytes()
        result["files"] = files
        shutil.rmtree(target, ignore_errors=True)
    return result


_POOL_WORKER = False     # set in the local pool's worker processes (see _watch_parent)


def _in_worker_process() -> bool:
    """Whether this process is a sweep worker (a local pool process or a Dask worker), where
    mibench may set process-wide options such as the allocator (:mod:`mibench.allocator`)."""
    if _POOL_WORKER:
        return True
    if "distributed" not in sys.modules:
        return False
    try:
        from dask.distributed import get_worker

        get_worker()
        return True
    except (ImportError, ValueError):
        return False


def _threads_for_this_worker() -> int:
    """Cores / tasks that may run at once in this process (1 per Dask worker thread)."""
    per = 1
    with contextlib.suppress(Exception):
        from dask.distributed import get_worker

        w = get_worker()
        per = int(getattr(w, "nthreads", None) or w.state.nthreads)
    return max(1, available_cores() // max(1, per))


def _receive_files(cell_dir: Path, files: dict) -> None:
    """Write shipped files atomically, config.json last (it is what marks the cell complete)."""
    from .results import atomic_path

    cell_dir.mkdir(parents=True, exist_ok=True)
    for name in sorted(files, key=lambda n: n == "config.json"):
        with atomic_path(cell_dir / name) as tmp:
            tmp.write_bytes(files[name])


class _Manifest:
    """``sweep.json``: written by the driver only, atomically, after every cell."""

    def __init__(self, out_dir: Path, spec: SweepSpec, cells: list[Cell], meta: dict):
        self.path = out_dir / MANIFEST
        old = {}
        if self.path.is_file():
            with contextlib.suppress(json.JSONDecodeError):
                old = json.loads(self.path.read_text())
        old_cells = {c["name"]: c for c in old.get("cells", [])}
        self.data = {
            "mibench_sweep": 1,
            "name": spec.name,
            **meta,
            "created": old.get("created", _now()),
            "updated": _now(),
            "status": "running",
            "spec": spec.to_dict(),
            "invocations": old.get("invocations", []) + [{"started": _now(), **meta}],
            "counts": {},
            "cells": [],
        }
        for c in cells:
            prev = old_cells.get(c.name, {})
            self.data["cells"].append({"name": c.name, "dir": c.name, "status": "pending",
                                       "attempts": prev.get("attempts", 0), "config": c.config})
        self.by_name = {c["name"]: c for c in self.data["cells"]}

    def update(self, name: str, **fields) -> None:
        self.by_name[name].update(fields)

    def write(self, status: str | None = None) -> None:
        from .results import write_json

        counts: dict[str, int] = {}
        for c in self.data["cells"]:
            counts[c["status"]] = counts.get(c["status"], 0) + 1
        counts["diverged"] = sum(1 for c in self.data["cells"] if c.get("diverged"))
        self.data["counts"] = counts
        self.data["updated"] = _now()
        if status:
            self.data["status"] = status
        write_json(self.path, self.data)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


@contextlib.contextmanager
def _sweep_lock(out_dir: Path):
    """One driver per sweep directory (a second one would redo the first one's running cells).

    The lock is an OS file lock (``filelock``: ``flock`` on POSIX, ``LockFileEx`` on Windows) on
    ``<sweep>/.sweep.lock.flock``: the OS drops it when its holder dies, however it dies, so a
    killed driver's lock is never stale and no process-id probing is needed.  ``<sweep>/.sweep.lock``
    records who holds it (``host:pid``, for the error message); it is removed on a normal exit and
    left behind by a killed driver, where it means nothing once the OS lock is free."""
    from filelock import FileLock, Timeout

    out_dir.mkdir(parents=True, exist_ok=True)
    holder_path = out_dir / LOCK
    lock = FileLock(str(out_dir / (LOCK + ".flock")), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            holder = holder_path.read_text().strip()
        except OSError:
            holder = ""
        raise MibenchError(f"{out_dir} is being swept by {holder or 'another process'} "
                           "(one driver per sweep directory; wait for it or stop it)") from None
    me = f"{socket.gethostname()}:{os.getpid()}"
    try:
        tmp = holder_path.with_name(f"{LOCK}.{os.getpid()}.tmp")
        tmp.write_text(me)
        os.replace(tmp, holder_path)
        yield
    finally:
        with contextlib.suppress(OSError):
            holder_path.unlink()
        lock.release()


def plan(spec: SweepSpec, out_dir) -> tuple[list[Cell], list[Cell], list[Cell]]:
    """(all cells, cells to run, cells already complete).  Raises if a complete cell's recorded
    config differs from the spec's (an edited spec would otherwise silently mix protocols)."""
    from .results import is_complete, read_config

    out_dir = Path(out_dir)
    cells = spec.cells()
    todo, done = [], []
    for c in cells:
        d = out_dir / c.name
        if is_complete(d):
            recorded = read_config(d).get("config", {})
            if fingerprint(recorded) != fingerprint(c.config):
                diff = sorted(k for k in set(recorded) | set(c.config)
                              if k not in IGNORED_FOR_RESUME
                              and recorded.get(k, ADDED_FIELDS.get(k)) != c.config.get(k, ADDED_FIELDS.get(k)))
                raise MibenchError(f"cell {c.name} in {out_dir} finished with a different config "
                                   f"({', '.join(diff)} changed); use a new --out directory or delete that cell")
            done.append(c)
        else:
            todo.append(c)
    return cells, todo, done


def run_sweep(spec: SweepSpec, out_dir, *, backend: str = "local", workers: int | None = None,
              threads: int | None = None, address: str | None = None, shared_fs: bool | None = None,
              plot: bool = True, log=None, command: str | None = None, preset: str | None = None,
              client=None) -> SweepReport:
    """Run (or resume) a sweep into ``out_dir``; see the module docstring.  ``log`` is a callable
    taking one line (default: stderr).  ``client`` may be an existing ``dask.distributed.Client``."""
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    out_dir = Path(out_dir)
    ex = spec.execution
    backend = (backend or ex.get("backend") or "local").lower()
    if backend not in ("local", "dask"):
        raise MibenchError(f"--backend must be local or dask, got {backend!r}")
    workers = workers or ex.get("workers")
    threads = threads or ex.get("threads")
    address = address or ex.get("address")
    if shared_fs is None:
        shared_fs = ex.get("shared_fs")
    if workers is not None and int(workers) < 1:
        raise MibenchError(f"--workers must be >= 1, got {workers}")
    if threads is not None and int(threads) < 1:
        raise MibenchError(f"--threads must be >= 1, got {threads}")

    t0 = time.perf_counter()
    with _sweep_lock(out_dir):
        cells, todo, done = plan(spec, out_dir)
        device = cells[0].config.get("device", "auto")
        gpu = _uses_gpu(device)
        if backend == "local" or (address is None and client is None):   # workers on this machine
            workers = int(workers or default_workers(len(todo), device))
            if threads is None and not gpu:
                threads = max(1, available_cores() // workers)
        # else: an existing cluster decides; each cell uses cores // (tasks per worker) threads
        meta = {"command": command, "preset": preset, "backend": backend, "address": address,
                "workers": workers, "threads_per_worker": threads, "mibench": _version()}
        manifest = _Manifest(out_dir, spec, cells, meta)
        results: dict[str, CellResult] = {}
        for c in done:
            rec = _record_from_disk(out_dir / c.name)
            manifest.update(c.name, status="complete", **rec)
            results[c.name] = CellResult(c.name, "skipped", rec.get("wall_seconds"), rec.get("diverged") or {})
        for c in todo:
            d = out_dir / c.name
            if d.exists():     # a partial / failed cell: start it afresh
                shutil.rmtree(d)
        manifest.write("running")
        log(f"sweep {spec.name}: {len(cells)} cells, {len(done)} already complete, {len(todo)} to run"
            f" -> {out_dir} ({backend}" + (f", {workers} workers x {threads} threads" if workers else "")
            + (f", {address}" if address else "") + ")")

        counter = {"n": 0}

        def finished(cell: Cell, res: dict) -> None:
            counter["n"] += 1
            d = out_dir / cell.name
            if res.get("files"):
                _receive_files(d, res["files"])
            entry = manifest.by_name[cell.name]
            status = res.get("status", "failed")
            manifest.update(cell.name, status=status, wall_seconds=res.get("wall_seconds"),
                            diverged=res.get("diverged") or {}, error=res.get("error"), host=res.get("host"),
                            pid=res.get("pid"),
                            attempts=entry.get("attempts", 0) + 1, finished=_now())
            if status != "failed":
                manifest.by_name[cell.name].pop("error", None)
            manifest.write()
            results[cell.name] = CellResult(cell.name, status, res.get("wall_seconds"), res.get("diverged") or {},
                                            res.get("error"), res.get("host"))
            extra = ""
            if status == "failed":
                extra = f"  FAILED: {res.get('error')} (see {d / FAILED})"
            elif res.get("diverged"):
                extra = "  diverged: " + ", ".join(f"{k} at step {v}" for k, v in res["diverged"].items())
            wall = res.get("wall_seconds")
            log(f"[{counter['n']}/{len(todo)}] {status:<8} {cell.name}" + (f"  {wall:.1f}s" if wall is not None else "")
                + extra)

        def started(cell: Cell, status: str = "queued") -> None:
            manifest.update(cell.name, status=status, started=_now())

        try:
            if todo:
                if backend == "local":
                    _run_local(todo, out_dir, workers, threads, plot, started, finished, manifest)
                else:
                    _run_dask(todo, out_dir, workers, threads, plot, started, finished, manifest, address,
                              shared_fs, client)
        except KeyboardInterrupt:
            for c in todo:
                if manifest.by_name[c.name]["status"] in ("running", "queued"):
                    manifest.update(c.name, status="interrupted")
            manifest.write("interrupted")
            raise
        failed = [n for n, r in results.items() if r.status == "failed"]
        diverged = [n for n, r in results.items() if r.diverged]
        manifest.data["invocations"][-1]["wall_seconds"] = round(time.perf_counter() - t0, 2)
        manifest.data["invocations"][-1]["ran"] = len(todo)
        manifest.write("complete" if not failed else "incomplete")
    report = SweepReport(out_dir, cells, results, ran=len(todo), skipped=len(done), failed=failed,
                         diverged=diverged, wall_seconds=round(time.perf_counter() - t0, 2))
    return report


def _record_from_disk(cell_dir: Path) -> dict:
    from .results import read_config

    cfg = read_config(cell_dir)
    return {"wall_seconds": cfg.get("wall_seconds"), "diverged": cfg.get("diverged") or {}}


def _version() -> str:
    from . import __version__

    return __version__


def _run_local(todo, out_dir, workers, threads, plot, started, finished, manifest) -> None:
    if workers == 1:
        for c in todo:
            started(c, "running")
            manifest.write()
            finished(c, execute_cell(c.config, str(out_dir / c.name), threads, plot))   # registrations: in-process
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ex = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                             initializer=_watch_parent, initargs=(os.getpid(),))
    try:
        futures = {}
        for c in todo:
            futures[ex.submit(execute_cell, c.config, str(out_dir / c.name), threads, plot, False, _plugin_payload())] = c
            started(c)
        manifest.write()
        for fut in as_completed(futures):
            c = futures[fut]
            try:
                res = fut.result()
            except Exception as exc:   # a worker process died (OOM kill, segfault, ...)
                res = {"status": "failed", "error": f"worker process failed: {type(exc).__name__}: {exc}"}
                _write_failed(out_dir / c.name, res["error"], c.config)
            finished(c, res)
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        raise
    ex.shutdown(wait=True)


def _plugin_payload() -> bytes | None:
    """This process's :func:`mibench.register_estimator` registrations, cloudpickled for workers
    (``module:Name`` specs and entry points need nothing: workers resolve them by import)."""
    from .plugins import registrations

    regs = registrations()
    if not regs:
        return None
    import cloudpickle

    return cloudpickle.dumps(regs)


def _watch_parent(parent_pid: int) -> None:
    """Pool-worker initializer: exit when the sweep driver dies (killed, not interrupted), so an
    orphan never keeps writing into a cell that a re-run is redoing."""
    import threading

    global _POOL_WORKER
    _POOL_WORKER = True

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, daemon=True, name="mibench-parent-watch").start()


def _run_dask(todo, out_dir, workers, threads, plot, started, finished, manifest, address, shared_fs, client):
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise MibenchError("--backend dask needs dask[distributed] (pip install 'mibench[cluster]')") from None
    ship = (not shared_fs) if shared_fs is not None else bool(address)
    cluster = None
    own_client = client is None
    if client is None:
        if address:
            try:
                client = Client(address, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise MibenchError(f"cannot connect to the Dask scheduler at {address}: {exc}") from None
        else:
            cluster = LocalCluster(n_workers=workers or 1, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None)
            client = Client(cluster)
    try:
        futures = {}
        for c in todo:
            fut = client.submit(execute_cell, c.config, str((out_dir / c.name).resolve()), threads, plot, ship,
                                _plugin_payload(), key=f"mibench-cell-{c.name}-{os.urandom(4).hex()}", pure=False)
            futures[fut] = c
            started(c)
        manifest.write()
        for fut in as_completed(list(futures)):
            c = futures[fut]
            try:
                res = fut.result()
            except Exception as exc:   # worker lost, unpicklable result, ...
                res = {"status": "failed", "error": f"dask task failed: {type(exc).__name__}: {exc}"}
                _write_failed(out_dir / c.name, res["error"], c.config)
            finished(c, res)
    finally:
        if own_client:
            client.close()
        if cluster is not None:
            cluster.close()


def _write_failed(cell_dir: Path, error: str, config: dict) -> None:
    from .results import write_json

    write_json(cell_dir / FAILED, {"error": error, "config": config, "time": _now()})


def find_manifest(path) -> dict | None:
    p = Path(path) / MANIFEST
    if p.is_file():
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(p.read_text())
    return None


def shorthand_name(spec_dict: dict) -> str:
    """Deterministic directory name for a CLI-shorthand sweep (same command -> same dir -> resume)."""
    tasks = "+".join(t["task"] if isinstance(t, dict) else str(t) for t in spec_dict.get("tasks", []))
    digest = hashlib.sha256(json.dumps(spec_dict, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"{tasks}-{digest}"


def parse_set(items: list[str] | None) -> dict:
    """``["dim=2,4", "cubic=true"]`` -> ``{"dim": [2, 4], "cubic": [True]}`` (values typed)."""
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise MibenchError(f"--set expects KEY=V1,V2,..., got {item!r}")
        vals = [_typed(v.strip()) for v in value.split(",") if v.strip()]
        if not vals:
            raise MibenchError(f"--set {key}= needs at least one value")
        out[key] = vals if len(vals) > 1 else vals[0]
    return out


def _typed(text: str):
    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for cast in (int, float):
        try:
            v = cast(text)
            if cast is float and not math.isfinite(v):
                return text
            return v
        except ValueError:
            pass
    return text
