"""Running a sweep's cells: in this process, on local worker processes, or on a Dask cluster.

``local`` (default): a :class:`concurrent.futures.ProcessPoolExecutor` (spawned processes), each
worker limited to ``threads`` torch threads so that workers x threads <= cores; ``workers=1`` runs
the cells in this process.  ``dask``: :mod:`dask.distributed` -- ``address=tcp://host:8786``
connects to an existing cluster (workers run each cell in a temporary directory and ship the files
back, so no shared filesystem is needed; ``shared_fs=True`` writes directly instead); without an
address a :class:`~dask.distributed.LocalCluster` of ``workers`` processes is started.

One driver per sweep directory (an OS file lock beside it); the manifest ``sweep.json`` is
written by the driver only (:class:`mibench.records.SweepManifest`).  A failing cell writes
``failed.json`` (error + traceback) into its directory and is recorded in the manifest; the sweep
carries on.
"""
from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import MibenchError, one_line
from .plan import clear_cell, plan
from .spec import SweepSpec

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
    def failed_estimates(self) -> int:
        """Estimates that failed inside cells that ran (the sample protocol records them per estimate)."""
        return sum(len(r.failed_estimates) for r in self.results.values())

    @property
    def ok(self) -> bool:
        return not self.failed and not self.failed_estimates


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS / Windows)
        return os.cpu_count() or 1


def default_workers(n_cells: int, device: str = "auto") -> int:
    if uses_gpu(device):
        return 1
    return max(1, min(n_cells, available_cores()))


def uses_gpu(device) -> bool:
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
                 ship: bool = False, plugins: bytes | None = None, resume: bool = False) -> dict:
    """Run (or resume) one cell in whatever process or cluster worker calls this and return a
    JSON-ready result.  Never raises for a failing run: the error and traceback are returned and
    written to ``failed.json``.  With ``ship=True`` the run directory is built in a temporary
    directory and its files come back in ``result["files"]`` (clusters without a shared filesystem)."""
    import torch

    from ..protocols import protocol_of
    from ..records import read_config, write_json
    from ..workers import IN_WORKER, install_payload

    install_payload(plugins)        # register_estimator objects of the driver process, re-played here
    if IN_WORKER["value"] or _in_dask_worker():      # a process of mibench's own, not the caller's
        from ..allocator import tune_cpu_allocator

        tune_cpu_allocator()
    old_threads = torch.get_num_threads()
    torch.set_num_threads(int(threads or _threads_for_this_worker()))
    target = Path(tempfile.mkdtemp(prefix="mibench-cell-")) if ship else Path(out_dir)
    t0 = time.perf_counter()
    result = {"status": "failed", "error": None, "diverged": {}, "host": socket.gethostname(), "pid": os.getpid(),
              "torch_threads": torch.get_num_threads()}
    try:
        protocol = protocol_of({"config": config})
        prepared = protocol.prepare(protocol.config_from_dict(config, "sweep cell"))
        res = protocol.run(prepared, target, plot=plot, run_id=Path(out_dir).name, resume=resume and not ship)
        result.update(status="complete", diverged=dict(getattr(res, "diverged", {}) or {}),
                      failed_estimates=protocol.failed_estimates(res.config))
    except Exception as exc:   # recorded, not fatal: the sweep goes on
        while isinstance(exc, UnboundLocalError) and exc.__context__ is not None:
            exc = exc.__context__  # an error raised while cleaning up hides the real one
        result.update(status="failed", error=one_line(exc),
                      traceback=traceback.format_exc())
        with contextlib.suppress(Exception):
            cfg = read_config(target)
            if cfg.get("status") != "complete":
                cfg["status"] = "failed"
                cfg.setdefault("error", result["error"])
                write_json(target / "config.json", cfg)
        write_json(target / FAILED, {"error": result["error"], "traceback": result["traceback"],
                                     "host": result["host"], "config": config,
                                     "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    finally:
        torch.set_num_threads(old_threads)
    result["wall_seconds"] = round(time.perf_counter() - t0, 3)
    if ship:
        import shutil

        result["files"] = {p.name: p.read_bytes() for p in sorted(target.iterdir())
                           if p.is_file() and not p.name.startswith(".")}
        shutil.rmtree(target, ignore_errors=True)
    return result


def _in_dask_worker() -> bool:
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
    from ..records import write_bytes

    cell_dir.mkdir(parents=True, exist_ok=True)
    for name in sorted(files, key=lambda n: n == "config.json"):
        write_bytes(cell_dir / name, files[name])


def lock_path(out_dir: Path) -> Path:
    """The sweep's lock file: beside the sweep directory (so --overwrite can remove the directory)."""
    return out_dir.parent / f".{out_dir.name}.sweep-lock"


@contextlib.contextmanager
def sweep_lock(out_dir: Path):
    """One driver per sweep directory (a second one would redo the first one's running cells).

    An OS file lock (``filelock``: ``flock`` on POSIX, ``LockFileEx`` on Windows) on a file beside
    the directory: the OS drops it when its holder dies, however it dies, so a killed driver's lock
    is never stale.  The lock file records its holder (``host:pid``) for the error message."""
    from filelock import FileLock, Timeout

    path = lock_path(out_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MibenchError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
    holder_path = path.with_suffix(".holder")
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        try:
            holder = holder_path.read_text().strip()
        except OSError:
            holder = ""
        raise MibenchError(f"{out_dir} is being swept by {holder or 'another process'} "
                           "(one driver per sweep directory; wait for it or stop it)") from None
    except OSError as exc:
        raise MibenchError(f"cannot lock {out_dir}: {exc.strerror or exc}") from None
    try:
        with contextlib.suppress(OSError):
            tmp = holder_path.with_name(f"{holder_path.name}.{os.getpid()}.tmp")
            tmp.write_text(f"{socket.gethostname()}:{os.getpid()}")
            os.replace(tmp, holder_path)
        yield
    finally:
        with contextlib.suppress(OSError):
            holder_path.unlink()
        lock.release()


def run_sweep(spec: SweepSpec, out_dir, *, resume: bool = False, overwrite: bool = False, backend: str = "local",
              workers: int | None = None, threads: int | None = None, address: str | None = None,
              shared_fs: bool | None = None, plot: bool = True, log=None, command: str | None = None,
              preset: str | None = None, client=None) -> SweepReport:
    """Run a sweep into ``out_dir`` (a new directory), or continue it there.

    Parameters
    ----------
    spec : the sweep (:class:`~mibench.sweep.spec.SweepSpec`).
    out_dir : the sweep directory: new or empty; with ``resume`` one holding this sweep (complete cells
        are skipped, interrupted ones continued, failed ones redone); with ``overwrite`` any sweep
        directory, replaced.  Anything else is refused in one line (:func:`mibench.records.claim`).
    backend, workers, threads, address, shared_fs, client : where cells run (module docstring).
    plot : each cell writes its figure.
    log : a callable taking one line of progress (default: stderr).
    command, preset : recorded in the manifest.
    """
    from ..records import SweepManifest, claim, read_config
    from ..workers import plugin_payload

    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    out_dir = Path(out_dir)
    ex = spec.execution
    backend = (backend or ex.get("backend") or "local").lower()
    if backend not in ("local", "dask"):
        raise MibenchError(f"--backend must be local or dask, got {backend!r}")
    workers = workers if workers is not None else ex.get("workers")
    threads = threads if threads is not None else ex.get("threads")
    address = address or ex.get("address")
    if shared_fs is None:
        shared_fs = ex.get("shared_fs")
    if workers is not None and int(workers) < 1:
        raise MibenchError(f"--workers must be >= 1, got {workers}")
    if threads is not None and int(threads) < 1:
        raise MibenchError(f"--threads must be >= 1, got {threads}")
    cells = spec.cells()
    t0 = time.perf_counter()
    with sweep_lock(out_dir):
        claim(out_dir, [c.config for c in cells], resume=resume, overwrite=overwrite, kind="sweep")
        p = plan(spec, out_dir)
        device = cells[0].config.get("device", "auto")
        if backend == "local" or (address is None and client is None):   # workers on this machine
            workers = int(workers or default_workers(len(p.to_run), device))
            if threads is None and not uses_gpu(device):
                threads = max(1, available_cores() // workers)
        meta = {"command": command, "preset": preset, "backend": backend, "address": address,
                "workers": workers, "threads_per_worker": threads, "mibench": _version()}
        manifest = SweepManifest(out_dir, spec.name, spec.to_dict(), {c.name: c.config for c in cells}, meta)
        results: dict[str, CellResult] = {}
        for c in p.done:
            cfg = read_config(out_dir / c.name)
            manifest.update(c.name, status="complete", wall_seconds=cfg.get("wall_seconds"),
                            diverged=cfg.get("diverged") or {})
            results[c.name] = CellResult(c.name, "skipped", cfg.get("wall_seconds"), cfg.get("diverged") or {})
        for c in p.todo:
            clear_cell(out_dir / c.name)        # a failed or half-written cell: start it afresh
        manifest.write("running")
        log(f"sweep {spec.name}: {len(cells)} cells, {len(p.done)} already complete, {len(p.resume)} to resume, "
            f"{len(p.todo)} to run -> {out_dir} ({backend}" + (f", {workers} workers x {threads} threads" if workers else "")
            + (f", {address}" if address else "") + ")")
        counter = {"n": 0}
        resuming = {c.name for c in p.resume}

        def finished(cell, res: dict) -> None:
            counter["n"] += 1
            d = out_dir / cell.name
            if res.get("files"):
                _receive_files(d, res["files"])
            entry = manifest.by_name[cell.name]
            status = res.get("status", "failed")
            manifest.update(cell.name, status=status, wall_seconds=res.get("wall_seconds"),
                            diverged=res.get("diverged") or {}, error=res.get("error"), host=res.get("host"),
                            pid=res.get("pid"), failed_estimates=len(res.get("failed_estimates") or []),
                            attempts=entry.get("attempts", 0) + 1, finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            if status != "failed":
                manifest.by_name[cell.name].pop("error", None)
            manifest.write()
            results[cell.name] = CellResult(cell.name, status, res.get("wall_seconds"), res.get("diverged") or {},
                                            res.get("error"), res.get("host"), list(res.get("failed_estimates") or []))
            extra = ""
            if status == "failed":
                extra = f"  FAILED: {res.get('error')} (see {d / FAILED})"
            elif res.get("failed_estimates"):
                extra = f"  {len(res['failed_estimates'])} estimate(s) failed"
            elif res.get("diverged"):
                extra = "  diverged: " + ", ".join(f"{k} at step {v}" for k, v in res["diverged"].items())
            wall = res.get("wall_seconds")
            log(f"[{counter['n']}/{len(p.to_run)}] {status:<8} {cell.name}" + (f"  {wall:.1f}s" if wall is not None else "")
                + extra)

        def started(cell, status: str = "queued") -> None:
            manifest.update(cell.name, status=status, started=time.strftime("%Y-%m-%dT%H:%M:%S%z"))

        try:
            if p.to_run:
                args = (p.to_run, out_dir, workers, threads, plot, started, finished, manifest, resuming,
                        plugin_payload())
                if backend == "local":
                    _run_local(*args)
                else:
                    _run_dask(*args, address, shared_fs, client)
        except KeyboardInterrupt:
            for c in p.to_run:
                if manifest.by_name[c.name]["status"] in ("running", "queued"):
                    manifest.update(c.name, status="interrupted")
            manifest.write("interrupted")
            raise
        failed = [n for n, r in results.items() if r.status == "failed"]
        diverged = [n for n, r in results.items() if r.diverged]
        manifest.data["invocations"][-1]["wall_seconds"] = round(time.perf_counter() - t0, 2)
        manifest.data["invocations"][-1]["ran"] = len(p.to_run)
        manifest.write("complete" if not failed else "incomplete")
    return SweepReport(out_dir, cells, results, ran=len(p.to_run), skipped=len(p.done), failed=failed,
                       diverged=diverged, wall_seconds=round(time.perf_counter() - t0, 2))


def _version() -> str:
    from .._version import __version__

    return __version__


def _run_local(todo, out_dir, workers, threads, plot, started, finished, manifest, resuming, payload) -> None:
    if workers == 1:
        for c in todo:
            started(c, "running")
            manifest.write()
            finished(c, execute_cell(c.config, str(out_dir / c.name), threads, plot, resume=c.name in resuming))
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from ..workers import watch_parent

    ex = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                             initializer=watch_parent, initargs=(os.getpid(),))
    try:
        futures = {}
        for c in todo:
            futures[ex.submit(execute_cell, c.config, str(out_dir / c.name), threads, plot, False, payload,
                              c.name in resuming)] = c
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


def _run_dask(todo, out_dir, workers, threads, plot, started, finished, manifest, resuming, payload, address,
              shared_fs, client):
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
                                payload, c.name in resuming, key=f"mibench-cell-{c.name}-{os.urandom(4).hex()}",
                                pure=False)
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
    from ..records import write_json

    write_json(cell_dir / FAILED, {"error": error, "config": config, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
