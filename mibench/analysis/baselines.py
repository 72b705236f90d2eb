"""The baselines :func:`mibench.evaluate` ranks against, shipped inside the package.

``results/sample_leaderboard/`` (the committed sample-protocol leaderboard) exists only in a
checkout; a wheel carries a compact copy instead: ``mibench/analysis/packaged/sample_leaderboard.json``
holds, for every complete run directory of that leaderboard, its ``config.json`` and the text of
its ``summary.csv`` and ``sample_estimates.csv`` (no figures).  :func:`materialize` writes those
run directories back into a temporary directory, so the leaderboard is built from them exactly as
from the checkout (``mibench.analysis.leaderboard.build``).

Regenerate after re-running the sample leaderboard (a test checks that the two agree)::

    python scripts/export_sample_baselines.py
"""
from __future__ import annotations

import atexit
import gzip
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mibench.errors import MibenchError

#: the compact copy inside the package
PACKAGED = Path(__file__).resolve().parent / "packaged" / "sample_leaderboard.json"
#: the committed sample leaderboard of a checkout (absent in an installed wheel)
CHECKOUT = Path(__file__).resolve().parents[2] / "results" / "sample_leaderboard"
FORMAT = 1


@dataclass(frozen=True)
class BaselineSet:
    """One set of committed baseline runs: the checkout's directory, its compact copy in the package
    (``.json`` or gzip-compressed ``.json.gz``) and the environment variable that overrides both."""

    name: str
    checkout: Path
    packaged: Path
    env: str


#: the sample leaderboard (``mibench.evaluate``'s ``quick`` and ``paper`` suites)
SAMPLE = BaselineSet("sample_leaderboard", CHECKOUT, PACKAGED, "MIBENCH_SAMPLE_BASELINES")
#: the reference table (the ``bmi`` and ``reference`` suites): its sweep's complete cells
REFERENCE = BaselineSet("reference", Path(__file__).resolve().parents[2] / "results" / "reference" / "sweep",
                        Path(__file__).resolve().parent / "packaged" / "reference.json.gz",
                        "MIBENCH_REFERENCE_BASELINES")

_materialized: dict[Path, Path] = {}


def run_files() -> tuple[str, ...]:
    """The run-directory files the leaderboard reads of a sample run (figures are left out)."""
    from mibench.protocols import get_protocol

    return get_protocol("sample").record_files


def _has_runs(path: Path) -> bool:
    from mibench.records import find_run_dirs

    return path.is_dir() and bool(find_run_dirs([path])[0])


def export(src) -> dict:
    """The compact form of the sample leaderboard under ``src``: every complete run directory
    (``config.json`` status ``complete``) with its config and the text of :func:`run_files`."""
    src = Path(src)
    runs = []
    for cfg_path in sorted(src.rglob("config.json")):
        d = cfg_path.parent
        cfg = json.loads(cfg_path.read_text())
        if cfg.get("status") != "complete" or not all((d / f).is_file() for f in run_files()):
            continue
        runs.append({"dir": d.relative_to(src).as_posix(), "config": cfg,
                     "files": {f: (d / f).read_text() for f in run_files()}})
    if not runs:
        raise MibenchError(f"no complete sample-protocol run directories under {src}")
    meta_path = src / "leaderboard.meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    repo = Path(__file__).resolve().parents[2]
    source = src.resolve().relative_to(repo).as_posix() if src.resolve().is_relative_to(repo) else src.name
    return {"format": FORMAT, "source": source,
            "command": meta.get("command"), "generated": meta.get("generated"), "runs": runs}


def dumps(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_packaged(src=CHECKOUT, dest=PACKAGED) -> Path:
    """Export ``src`` into the package's compact file (what scripts/export_sample_baselines.py runs)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    text = dumps(export(src))
    if dest.suffix == ".gz":
        tmp.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))     # mtime 0: the same runs, the same bytes
    else:
        tmp.write_text(text)
    os.replace(tmp, dest)
    return dest


def load_packaged(path=PACKAGED) -> dict:
    path = Path(path)
    if not path.is_file():
        raise MibenchError(f"the packaged baselines {path} are missing (a broken install?); pass baselines=DIR")
    raw = gzip.decompress(path.read_bytes()).decode("utf-8") if path.suffix == ".gz" else path.read_text()
    data = json.loads(raw)
    if data.get("format") != FORMAT:
        raise MibenchError(f"{path}: baseline format {data.get('format')!r}, expected {FORMAT}")
    return data


def materialize(dest, path=PACKAGED) -> Path:
    """Write the packaged run directories under ``dest`` (created); returns ``dest``."""
    dest = Path(dest)
    for run in load_packaged(path)["runs"]:
        rel = Path(run["dir"])
        if rel.is_absolute() or ".." in rel.parts:
            raise MibenchError(f"{path}: bad run directory name {run['dir']!r}")
        d = dest / rel
        d.mkdir(parents=True, exist_ok=True)
        for name, text in run["files"].items():
            if name in run_files():
                (d / name).write_text(text)
        (d / "config.json").write_text(json.dumps(run["config"], indent=2))
    return dest


def baseline_dir(which: BaselineSet | None = None) -> Path:
    """Where a set of baselines (default: the sample leaderboard) is read from: its environment variable
    (``$MIBENCH_SAMPLE_BASELINES``), else the checkout's directory (``results/sample_leaderboard``) when it
    holds runs, else the packaged copy written into a temporary directory (once per process, removed at
    exit)."""
    which = which or BaselineSet(SAMPLE.name, CHECKOUT, PACKAGED, SAMPLE.env)     # module attributes, patchable
    env = os.environ.get(which.env)
    if env:
        return Path(env)
    if _has_runs(which.checkout):
        return which.checkout
    return packaged_dir(which.packaged)


def packaged_dir(path=PACKAGED) -> Path:
    """The packaged baselines as run directories in a temporary directory (cached per process)."""
    path = Path(path)
    if path not in _materialized or not _has_runs(_materialized[path]):
        tmp = Path(tempfile.mkdtemp(prefix="mibench-baselines-"))
        atexit.register(shutil.rmtree, tmp, ignore_errors=True)
        _materialized[path] = materialize(tmp / path.name.split(".")[0], path)
    return _materialized[path]
