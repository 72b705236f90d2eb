"""What the report reads: the leaderboard of the given directories (``mibench.analysis.leaderboard.build``,
its documented CSV columns only) and the files on disk next to it (``leaderboard.meta.json``,
``sweep.json`` manifests, each run's ``config.json``).  Everything the page shows comes from the
:class:`Results` built here, so a change of the results layer is absorbed in this module.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from mibench.errors import MibenchError
from mibench.records.io import slug
from mibench.records.setup import SETUP_COLUMNS


@dataclass
class Setup:
    fields: dict                  # setup column -> value
    label: str                    # one line naming the setup
    slug: str                     # unique id / file-name part
    rows: list                    # leaderboard rows (dicts), the board's order
    runs: list = field(default_factory=list)      # run directories (Path) of this setup
    figures: list = field(default_factory=list)   # filled by mibench.report.figures

    @property
    def protocol(self):
        """The setup's run protocol (:mod:`mibench.protocols`)."""
        return _protocol(self.fields)


@dataclass
class Source:
    """One directory given on the command line."""
    path: Path
    shown: str                    # the path as given (the page never shows absolute temporary paths)
    meta: dict | None             # leaderboard.meta.json next to the results, if any
    manifests: list               # (sweep dir shown, sweep.json dict with counts from its cells' directories)
    runs: list                    # (run dir shown, config.json dict)
    incomplete: list = field(default_factory=list)   # (run dir shown, status): not complete, not ranked


@dataclass
class Results:
    board: object                 # pandas DataFrame (mibench.analysis.leaderboard columns)
    setups: list
    sources: list
    estimators: dict              # name -> {"kind": ..., "description": ...}


def _clean(v):
    """numpy / pandas scalars -> plain Python; NaN -> None."""
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and math.isnan(v):
        return None
    return v


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return "" if v is None else str(v)


def setup_label(f: dict) -> str:
    params = f" ({f['task_params']})" if f.get("task_params") else ""
    dims = []
    if f.get("ds") is not None:
        dims.append(f"ds {_fmt(f['ds'])}")
    if f.get("dr") is not None:
        dims.append(f"dr {_fmt(f['dr'])}")
    dims = f" [{', '.join(dims)}]" if dims else ""
    how = _protocol(f).setup_description(f)
    return f"{f.get('task')}{params}{dims} · {how} · MI {f.get('schedule')} bits"


def _protocol(f: dict):
    from mibench.protocols import get_protocol

    return get_protocol(str(f.get("protocol") or "stream"))


def _slug_text(f: dict) -> str:
    return f"{f.get('task')} {f.get('task_params') or ''} {_protocol(f).setup_description(f)} mi {f.get('schedule')}"


def _unique_slug(text: str, taken: set) -> str:
    """The setup's id: :func:`mibench.records.io.slug` of ``text``, made unique among ``taken`` (updated)."""
    base = slug(text, allowed="A-Za-z0-9.", max_len=80, lower=True) or "setup"
    name, i = base, 2
    while name in taken:
        name, i = f"{base}-{i}", i + 1
    taken.add(name)
    return name


def _setup_key(row: dict, columns: list) -> tuple:
    return tuple(json.dumps(_clean(row.get(c)), default=str) for c in columns)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _shown(path: Path, source: Path, shown: str) -> str:
    try:
        rel = path.resolve().relative_to(source.resolve())
    except ValueError:
        return str(path)
    return shown if str(rel) == "." else f"{shown.rstrip('/')}/{rel.as_posix()}"


def pinned_params(cfg: dict) -> dict:
    """Task parameters a run used that are no longer the task's defaults: a factory parameter with
    a (non-None) default that the run did not set, whose value in the run's ``task_info`` differs
    from today's default (e.g. vision ``side`` 28 after the default became 64).  Re-running the
    recorded spec or config reproduces the run only with these set."""
    import inspect

    from mibench.tasks import TASKS

    c = cfg.get("config") or {}
    info = cfg.get("task_info") or {}
    try:
        sig = inspect.signature(TASKS.get(c.get("task")).obj)
    except Exception:  # an unknown (third-party) task: nothing to compare with
        return {}
    given = c.get("task_params") or {}
    out = {}
    for k, prm in sig.parameters.items():
        default = prm.default
        if default is inspect.Parameter.empty or default is None or k in given or k not in info:
            continue
        if info[k] != default and isinstance(info[k], (int, float, str, bool)):
            out[k] = info[k]
    return out


def _estimator_info(names, kinds: dict) -> dict:
    from mibench.estimators import ESTIMATORS

    out = {}
    for name in names:
        try:
            desc = ESTIMATORS.get(name).description
        except Exception:  # a plug-in that is not installed where the report is made
            desc = "not installed where this page was made: no description"
        out[name] = {"kind": kinds.get(name) or "", "description": desc}
    return out


def read_results(paths, shown=None) -> Results:
    """The leaderboard of ``paths`` (run, sweep or results directories) split into setups, with
    each setup's run directories, and the metadata found next to the results."""
    from mibench.analysis.leaderboard import build
    from mibench.sweep.plan import cell_counts, cell_status, sweep_status

    paths = [Path(p) for p in paths]
    shown = [str(s) for s in (shown or paths)]
    board, col = build(paths)
    columns = [c for c in SETUP_COLUMNS if c in board.columns]
    records = [{k: _clean(v) for k, v in r.items()} for r in board.to_dict("records")]
    setups: dict = {}
    taken: set = set()
    for r in records:
        key = _setup_key(r, columns)
        if key not in setups:
            f = {c: r.get(c) for c in columns}
            setups[key] = Setup(fields=f, label=setup_label(f), slug=_unique_slug(_slug_text(f), taken), rows=[])
        setups[key].rows.append(r)
    # a run's setup: the setup of its own one-run leaderboard (the layer's own definition of a setup)
    for run in col.runs:
        try:
            sub, _ = build([run.path])
        except MibenchError:
            continue
        first = {k: _clean(v) for k, v in sub.iloc[0].to_dict().items()} if len(sub) else None
        if first is not None and _setup_key(first, columns) in setups:
            setups[_setup_key(first, columns)].runs.append(Path(run.path))
    sources = []
    for p, s in zip(paths, shown):
        meta = _read_json(p / "leaderboard.meta.json") if p.is_dir() else None
        manifests = [(_shown(Path(d), p, s), {**m, "counts": cell_counts(d, m),
                                            "status": sweep_status(d, m)})
                     for d, m in sorted(col.manifests.items(), key=lambda kv: str(kv[0])) if _inside(Path(d), p)]
        runs = [(_shown(Path(r.path), p, s), r.config) for r in col.runs if _inside(Path(r.path), p)]
        incomplete = [(_shown(Path(d), p, s), cell_status(d) or "unreadable") for d in col.incomplete
                      if _inside(Path(d), p)]
        sources.append(Source(path=p, shown=s, meta=meta, manifests=manifests, runs=runs, incomplete=incomplete))
    kinds = {r["estimator"]: r.get("kind") for r in records}
    return Results(board=board, setups=list(setups.values()), sources=sources,
                   estimators=_estimator_info(sorted(kinds), kinds))


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def empty_results(paths, shown=None) -> Results:
    """:class:`Results` with no runs, for directories that hold only other tables (the
    self-consistency tests, :mod:`mibench.analysis.consistency`)."""
    import pandas as pd

    paths = [Path(p) for p in paths]
    shown = [str(s) for s in (shown or paths)]
    return Results(board=pd.DataFrame(), setups=[], estimators={},
                   sources=[Source(path=p, shown=s, meta=None, manifests=[], runs=[]) for p, s in zip(paths, shown)])
