"""The sweep driver's bookkeeping: each cell's status in the manifest ``sweep.json`` as it is queued,
starts, finishes or is stopped (:class:`SweepProgress`), the result of a cell (:class:`CellResult`), and
the files a cell leaves behind it when its worker cannot (``failed.json``, a killed run's
``interrupted``, files shipped back from a cluster worker)."""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from pathlib import Path

from mibench.sweep.plan import cell_status

FAILED = "failed.json"


@dataclass
class CellResult:
    name: str
    status: str                        # complete | failed | skipped
    wall_seconds: float | None = None
    diverged: dict = field(default_factory=dict)
    error: str | None = None
    host: str | None = None
    failed_estimates: list = field(default_factory=list)


class SweepProgress:
    """The driver's account of one invocation: each cell's status in the manifest, its
    :class:`CellResult` and a progress line as it starts and finishes."""

    def __init__(self, out_dir: Path, manifest, results: dict, total: int, log):
        self.out_dir, self.manifest, self.results, self.total, self.log = out_dir, manifest, results, total, log
        self.n = 0

    def started(self, cell, status: str = "queued") -> None:
        self.manifest.update(cell.name, status=status, started=time.strftime("%Y-%m-%dT%H:%M:%S%z"))

    def finished(self, cell, res: dict) -> None:
        self.n += 1
        d = self.out_dir / cell.name
        if res.get("files"):
            receive_files(d, res["files"])
        manifest = self.manifest
        entry = manifest.by_name[cell.name]
        status = res.get("status", "failed")
        manifest.update(cell.name, status=status, wall_seconds=res.get("wall_seconds"),
                        diverged=res.get("diverged") or {}, error=res.get("error"), host=res.get("host"),
                        pid=res.get("pid"), failed_estimates=len(res.get("failed_estimates") or []),
                        attempts=entry.get("attempts", 0) + 1, finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        if status != "failed":
            manifest.by_name[cell.name].pop("error", None)
        manifest.write()
        self.results[cell.name] = CellResult(cell.name, status, res.get("wall_seconds"), res.get("diverged") or {},
                                             res.get("error"), res.get("host"), list(res.get("failed_estimates") or []))
        extra = ""
        if status == "failed":
            extra = f"  FAILED: {res.get('error')} (see {d / FAILED})"
        elif res.get("failed_estimates"):
            extra = f"  {len(res['failed_estimates'])} estimate(s) failed"
        elif res.get("diverged"):
            extra = "  diverged: " + ", ".join(f"{k} at step {v}" for k, v in res["diverged"].items())
        wall = res.get("wall_seconds")
        self.log(f"[{self.n}/{self.total}] {status:<8} {cell.name}" + (f"  {wall:.1f}s" if wall is not None else "")
                 + extra)

    def mark_running(self, cells) -> None:
        """Those of ``cells`` still ``queued`` in the manifest whose run directory says a worker is running
        them now, recorded ``running`` (a pool's driver does not see a worker take a cell)."""
        started = [c for c in cells if self.manifest.by_name[c.name]["status"] == "queued"
                   and cell_status(self.out_dir / c.name) == "running"]
        for c in started:
            self.manifest.update(c.name, status="running", started=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        if started:
            self.manifest.write()

    def lost(self, cells, taken: set, resuming: set, losses: dict) -> list:
        """A worker process died (the OOM killer, a signal) and broke the pool: each of ``cells``, those the
        pool never answered, is recorded as its run directory holds it, and those to run on a fresh pool are
        returned.  A cell complete or failed by its own record is recorded so.  One no worker had
        ``taken`` (still queued) is run again as it was.  Of those taken, each loss counted in ``losses``:
        the one still ``running`` in its config.json with its writer gone -- the cell whose process died --
        is failed (``--resume`` continues it); one the pool's end stopped (``interrupted``) is continued
        (added to ``resuming``), and one that died before it wrote its config.json is run again, once:
        taken at a second break, either is failed."""
        from mibench.errors import UnreadableInput
        from mibench.records import read_config, run_status

        again = []
        for c in cells:
            d = self.out_dir / c.name
            try:
                cfg = read_config(d) if (d / "config.json").is_file() else None
            except UnreadableInput:
                cfg = None
            own = run_status(cfg) if cfg is not None else None
            if own in ("complete", "failed") and cell_status(d) == own:
                self.finished(c, {"status": own, "wall_seconds": cfg.get("wall_seconds"),
                                  "diverged": cfg.get("diverged") or {}, "error": cfg.get("error"),
                                  "failed_estimates": cfg.get("failed_estimates") or []})
                continue
            if c.name in taken:
                losses[c.name] = losses.get(c.name, 0) + 1
            if c.name not in taken or (own in (None, "interrupted") and losses[c.name] < 2):
                if own == "interrupted":
                    resuming.add(c.name)
                again.append(c)
            else:
                self.fail(c, "its worker process died (killed by a signal or out of memory) while it ran; "
                             "--resume " + ("continues" if cfg is not None else "runs") + " it")
        if again:
            self.log(f"a worker process died: {len(again)} cell(s) go to a fresh pool")
        return again

    def fail(self, cell, error: str) -> None:
        """Record ``cell`` failed with ``error`` where its worker could not: ``failed.json``, its run
        ``interrupted`` if it was left running (:func:`record_killed`), the manifest."""
        record_killed(self.out_dir / cell.name)
        write_failed(self.out_dir / cell.name, error, cell.config)
        self.finished(cell, {"status": "failed", "error": error})

    def interrupted(self, todo) -> None:
        """The driver was interrupted: each cell it had queued or running is recorded with the status
        its run directory holds (:func:`~mibench.sweep.plan.cell_status`), so a cell that completed
        before the driver read its result stays complete; a queued cell that never started stays
        pending, one that started is interrupted -- in its own config.json too, where its worker was
        killed before it could record that (:func:`record_killed`)."""
        from mibench.records import read_config

        for c in todo:
            entry = self.manifest.by_name[c.name]
            if entry["status"] not in ("running", "queued"):
                continue
            record_killed(self.out_dir / c.name)
            status = cell_status(self.out_dir / c.name)
            if status == "complete":
                cfg = read_config(self.out_dir / c.name)
                self.manifest.update(c.name, status="complete", wall_seconds=cfg.get("wall_seconds"),
                                     diverged=cfg.get("diverged") or {}, attempts=entry.get("attempts", 0) + 1)
            elif status == "failed":
                self.manifest.update(c.name, status="failed", error=read_config(self.out_dir / c.name).get("error"))
            elif status is None and entry["status"] == "queued":
                self.manifest.update(c.name, status="pending")
            else:
                self.manifest.update(c.name, status="interrupted")
        self.manifest.write("interrupted")


def record_killed(cell_dir: Path) -> None:
    """A cell whose run is ``running`` in its config.json but whose writer is gone (``stale``: the
    driver killed the worker after :data:`STOP_WORKERS_SECONDS`, e.g. in an estimate that runs in
    the worker's own process) is recorded ``interrupted`` there, as the run itself records a stop:
    the writer is dead, so nothing else writes that file."""
    from mibench.errors import UnreadableInput
    from mibench.records import RunWriter, read_config, run_status

    if not (cell_dir / "config.json").is_file():
        return
    with contextlib.suppress(UnreadableInput):
        cfg = read_config(cell_dir)
        if run_status(cfg) == "stale":
            RunWriter(cell_dir, cfg).finish("interrupted")


def receive_files(cell_dir: Path, files: dict) -> None:
    """Write shipped files atomically, config.json last (it is what marks the cell complete)."""
    from mibench.records import write_bytes

    cell_dir.mkdir(parents=True, exist_ok=True)
    for name in sorted(files, key=lambda n: n == "config.json"):
        write_bytes(cell_dir / name, files[name])


def write_failed(cell_dir: Path, error: str, config: dict) -> None:
    """``failed.json`` in ``cell_dir`` (made if the cell never started)."""
    from mibench.records import write_json

    cell_dir.mkdir(parents=True, exist_ok=True)
    write_json(cell_dir / FAILED, {"error": error, "config": config, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
