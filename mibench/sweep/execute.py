"""Running a sweep's cells: in this process, on local worker processes, or on a Dask cluster.

``local`` (default): a :class:`concurrent.futures.ProcessPoolExecutor` (spawned processes), each
worker limited to ``threads`` torch threads so that workers x threads <= free cores; ``workers=1`` runs
the cells in this process.  ``dask``: :mod:`dask.distributed` -- ``address=tcp://host:8786``
connects to an existing cluster (workers run each cell in a temporary directory and ship the files
back, so no shared filesystem is needed; ``shared_fs=True`` writes directly instead); without an
address a :class:`~dask.distributed.LocalCluster` of ``workers`` processes is started.  These
options are one :class:`Execution` (a field set to ``None`` comes from the spec's ``execution``
table).

One driver per sweep directory (an OS file lock beside it); the manifest ``sweep.json`` is
written by the driver only (:class:`mibench.records.SweepManifest`).  A failing cell writes
``failed.json`` (error + traceback) into its directory and is recorded in the manifest; the sweep
carries on.  A pool worker process that dies fails the cell it ran, and the other cells go to a fresh
pool (:meth:`SweepProgress.lost`, :data:`IDLE_POOLS`).  The driver's bookkeeping is :mod:`mibench.sweep.progress`.
"""
from __future__ import annotations

import contextlib
import os
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from mibench.errors import MibenchError, one_line
from mibench.sweep.dask_api import dask_api
from mibench.sweep.lock import sweep_lock
from mibench.sweep.plan import clear_cell, plan
from mibench.sweep.progress import FAILED, CellResult, SweepProgress, write_failed
from mibench.sweep.spec import SweepSpec
from mibench.utils.checks import check_positive_int


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
    """Cores this process may use at all: its CPU affinity capped by its cgroup quota
    (:func:`mibench.utils.threads.usable_cores`)."""
    from mibench.utils.threads import usable_cores

    return usable_cores()


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
                 ship: bool = False, plugins: bytes | None = None, resume: bool = False,
                 threads_rule: str | None = None) -> dict:
    """Run (or resume) one cell in whatever process or cluster worker calls this and return a
    JSON-ready result.  Never raises for a failing run: the error and traceback are returned and
    written to ``failed.json``.  With ``ship=True`` the run directory is built in a temporary
    directory and its files come back in ``result["files"]`` (clusters without a shared filesystem).
    ``threads``: torch threads for the cell (default: the usable cores over this worker's task
    slots); ``threads_rule``: how the driver chose them, for the cell's config.json."""
    from mibench.utils.threads import using_threads

    install_payload_and_allocator(plugins)
    if threads is None:
        threads, threads_rule = _threads_for_this_worker(), "usable cores / this worker's task slots"
    with using_threads(int(threads), threads_rule):
        return _execute_cell(config, out_dir, ship, plot, resume)


def install_payload_and_allocator(plugins: bytes | None) -> None:
    """A cell's process: the driver's register_estimator objects re-played here, and the CPU allocator
    setting where the process is mibench's own (a pool or Dask worker), not the caller's."""
    from mibench.protocols.workers import IN_WORKER, install_payload

    install_payload(plugins)
    if IN_WORKER["value"] or _in_dask_worker():
        from mibench.utils.allocator import tune_cpu_allocator

        tune_cpu_allocator()


def _execute_cell(config: dict, out_dir: str, ship: bool, plot: bool, resume: bool) -> dict:
    import torch

    from mibench.protocols import protocol_of
    from mibench.protocols.workers import IN_WORKER
    from mibench.records import read_config, write_json

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
        (target / FAILED).unlink(missing_ok=True)     # an earlier attempt's failure: stale now the cell is complete
    except KeyboardInterrupt as exc:
        if IN_WORKER["value"]:   # a pool worker told to stop (its run recorded interrupted): no further cell
            from mibench.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated

            os._exit(EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED)
        raise
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


@dataclass
class Execution:
    """Where and how a sweep's cells run (module docstring).  A field set to ``None`` is taken from
    the spec's ``execution`` table, else defaulted (:meth:`resolve`, :meth:`sized`).

    Parameters
    ----------
    backend : ``"local"`` (default) or ``"dask"``; ``None``: the spec's, else local.
    workers : local worker processes, or the processes of a Dask ``LocalCluster`` started without an
        address; default one per free core, at most one per cell (one when the cells use a GPU).
    threads : torch threads per worker; default free cores // workers on CPU (:meth:`sized`).
    address : the Dask scheduler to connect to (``tcp://host:8786``).
    shared_fs : Dask workers write the cell directories directly instead of shipping the files back
        (default: ship when an address is given).
    plot : each cell writes its figure.
    client : a :class:`dask.distributed.Client` to submit to (left open).
    """

    backend: str | None = "local"
    workers: int | None = None
    threads: int | None = None
    address: str | None = None
    shared_fs: bool | None = None
    plot: bool = True
    client: object = None
    #: how :meth:`sized` chose workers and threads (the log line, the manifest, each cell's config.json)
    threads_rule: str | None = field(default=None, init=False, repr=False, compare=False)

    def resolve(self, spec_execution: dict) -> "Execution":
        """Unset fields filled from the spec's ``execution`` table, and checked (one-line errors)."""
        backend = (self.backend or spec_execution.get("backend") or "local").lower()
        if backend not in ("local", "dask"):
            raise MibenchError(f"--backend must be local or dask, got {backend!r}")
        workers = self.workers if self.workers is not None else spec_execution.get("workers")
        threads = self.threads if self.threads is not None else spec_execution.get("threads")
        shared_fs = self.shared_fs if self.shared_fs is not None else spec_execution.get("shared_fs")
        for flag, value in (("--workers", workers), ("--threads", threads)):
            if value is not None:
                check_positive_int(value, flag)
        return replace(self, backend=backend, workers=workers, threads=threads,
                       address=self.address or spec_execution.get("address"), shared_fs=shared_fs)

    def sized(self, n_cells: int, device, *, usable: int | None = None, busy: float | None = None) -> "Execution":
        """Workers on this machine (local backend, or Dask without an address or client): the number
        of workers for ``n_cells`` cells and the torch threads per worker, where not given.

        On CPU the workers share the cores free when the sweep starts (:mod:`mibench.utils.threads`:
        affinity, cgroup quota, other processes' load; ``usable`` and ``busy`` are read where not
        given): at most one worker per cell and ``workers x threads <= free cores`` -- a ``--workers``
        above that runs fewer cells at a time -- and ``threads = free // workers`` unless requested
        (``--threads``, else ``OMP_NUM_THREADS``).  On a GPU one worker unless asked."""
        if not (self.backend == "local" or (self.address is None and self.client is None)):
            return self
        if uses_gpu(device):
            return replace(self, workers=int(self.workers or default_workers(n_cells, device)))
        from mibench.utils.threads import LoadProbe, free_cores, max_workers, requested_threads, usable_cores

        usable = usable_cores() if usable is None else int(usable)
        busy = LoadProbe().busy_cores() if busy is None else float(busy)
        free = free_cores(usable, busy)
        threads, source = requested_threads(self.threads)
        wanted = int(self.workers or n_cells)
        workers = max_workers(wanted, free, threads or 1)
        rule = f"{free} of {usable} usable cores free (others busy {busy:.2f} cores)"
        if threads is None:
            threads = max(1, free // workers)
            rule = f"{threads} = {rule} / {workers} workers"
        else:
            rule = f"{threads} from {source}; {rule}"
        if self.workers and workers < wanted:
            rule += f"; --workers {wanted} would oversubscribe them: {workers} at a time"
        sized = replace(self, workers=workers, threads=threads)
        sized.threads_rule = rule
        return sized


def run_sweep(spec: SweepSpec, out_dir, execution: Execution | None = None, *, resume: bool = False,
              overwrite: bool = False, log=None, command: str | None = None, preset: str | None = None,
              **options) -> SweepReport:
    """Run a sweep into ``out_dir`` (a new directory), or continue it there.

    Parameters
    ----------
    spec : the sweep (:class:`~mibench.sweep.spec.SweepSpec`).
    out_dir : the sweep directory: new or empty; with ``resume`` one holding this sweep (complete cells
        are skipped, interrupted ones continued, failed ones redone); with ``overwrite`` any sweep
        directory, replaced.  Anything else is refused in one line (:func:`mibench.records.claim`).
    execution : where cells run (default ``Execution()``: the local backend, the other fields from the
        spec's ``execution`` table or defaulted).
    resume, overwrite : see ``out_dir``.
    log : a callable taking one line of progress (default: stderr).
    command, preset : recorded in the manifest.
    **options : fields of :class:`Execution` given as keywords (``backend=``, ``workers=``,
        ``threads=``, ``address=``, ``shared_fs=``, ``plot=``, ``client=``); they override
        ``execution``'s.
    """
    from mibench.protocols.runtime import sigterm_requests_stop
    from mibench.records import claim

    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    out_dir = Path(out_dir)
    ex = _with_options(execution, options).resolve(spec.execution)
    if ex.backend == "dask" and ex.client is None:
        dask_api()   # before the directory is claimed: a missing dask left the sweep 'running'
    cells = spec.cells()
    t0 = time.perf_counter()
    with sigterm_requests_stop(), sweep_lock(out_dir):
        claim(out_dir, [c.config for c in cells], resume=resume, overwrite=overwrite, kind="sweep")
        p = plan(spec, out_dir, cells)
        ex = ex.sized(len(p.to_run), cells[0].config.get("device", "auto"))
        meta = {"command": command, "preset": preset, "backend": ex.backend, "address": ex.address,
                "workers": ex.workers, "threads_per_worker": ex.threads, "threads_rule": ex.threads_rule,
                "mibench": _version()}
        for name, why in p.damaged.items():
            log(f"cell {name} is redone: {why}")
        progress = _start_manifest(spec, out_dir, cells, p, meta, log)
        log(f"sweep {spec.name}: {len(cells)} cells, {len(p.done)} already complete, {len(p.resume)} to resume, "
            f"{len(p.todo)} to run -> {out_dir} ({ex.backend}"
            + (f", {ex.workers} workers x {ex.threads} threads" if ex.workers else "")
            + (f": {ex.threads_rule}" if ex.threads_rule else "")
            + (f", {ex.address}" if ex.address else "") + ")")
        try:
            _dispatch(p, out_dir, ex, progress)
        except KeyboardInterrupt:          # Ctrl-C or SIGTERM: the slice's wall time is kept all the same
            _record_invocation(progress, p, t0, stopped=True)
            progress.manifest.write("interrupted")
            raise
        results = progress.results
        failed = [n for n, r in results.items() if r.status == "failed"]
        diverged = [n for n, r in results.items() if r.diverged]
        _record_invocation(progress, p, t0, stopped=False)
        progress.manifest.write("complete" if not failed else "incomplete")
    return SweepReport(out_dir, cells, results, ran=len(p.to_run), skipped=len(p.done), failed=failed,
                       diverged=diverged, wall_seconds=round(time.perf_counter() - t0, 2))


def _record_invocation(progress, p, t0: float, stopped: bool) -> None:
    """This invocation's wall time, how many cells it set out to run and how many of them are complete, in
    sweep.json; ``stopped`` when Ctrl-C or SIGTERM ended it (a slice of a sweep computed in slices)."""
    entry = progress.manifest.data["invocations"][-1]
    entry["wall_seconds"] = round(time.perf_counter() - t0, 2)
    entry["ran"] = len(p.to_run)
    entry["completed"] = sum(progress.manifest.by_name[c.name]["status"] == "complete" for c in p.to_run)
    entry["stopped"] = stopped


def _with_options(execution: Execution | None, options: dict) -> Execution:
    """``execution`` (default: all unset) with the :class:`Execution` fields given as keywords."""
    known = {f.name for f in fields(Execution) if f.init}
    for name in options:
        if name not in known:
            raise TypeError(f"run_sweep() got an unexpected keyword argument {name!r}")
    return replace(execution or Execution(), **options)


def _start_manifest(spec: SweepSpec, out_dir: Path, cells, p, meta: dict, log) -> SweepProgress:
    """The manifest of this invocation, written ``running``: complete cells recorded as skipped,
    the cells to redo cleared."""
    from mibench.records import SweepManifest, read_config

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
    return SweepProgress(out_dir, manifest, results, len(p.to_run), log)


def _dispatch(p, out_dir: Path, ex: Execution, progress: SweepProgress) -> None:
    """Run the plan's cells on the execution's backend; an interruption is recorded, then re-raised."""
    from mibench.protocols.workers import plugin_payload

    resuming = {c.name for c in p.resume}
    try:
        if p.to_run:
            run = _run_local if ex.backend == "local" else _run_dask
            run(p.to_run, out_dir, ex, progress, resuming, plugin_payload())
    except KeyboardInterrupt:
        progress.interrupted(p.to_run)
        raise


def _version() -> str:
    from mibench._version import __version__

    return __version__


def _run_local(todo, out_dir: Path, ex: Execution, progress: SweepProgress, resuming: set, payload) -> None:
    from mibench.protocols.runtime import check_stop

    if ex.workers == 1:
        for c in todo:
            check_stop()           # a cell's own run checks it while it works, the driver between cells
            progress.started(c, "running")
            progress.manifest.write()
            progress.finished(c, execute_cell(c.config, str(out_dir / c.name), ex.threads, ex.plot,
                                              resume=c.name in resuming, threads_rule=ex.threads_rule))
        return
    losses: dict[str, int] = {}
    idle = 0
    while todo:      # a pool that broke (a worker process died) leaves cells to run on a fresh one
        check_stop()
        before = progress.n
        todo = _run_pool(todo, out_dir, ex, progress, resuming, payload, losses)
        idle = idle + 1 if todo and progress.n == before else 0
        if idle >= IDLE_POOLS:        # workers that die before they finish anything: not a cell's doing
            for c in todo:
                progress.fail(c, f"{IDLE_POOLS} pools in a row broke before any cell finished (worker processes "
                                 "die at start-up or before they record a cell)")
            return


def _run_pool(todo, out_dir: Path, ex: Execution, progress: SweepProgress, resuming: set, payload,
              losses: dict) -> list:
    """Run ``todo`` on a pool of ``ex.workers`` spawned processes; return the cells to run on a fresh pool
    when a worker process died and broke this one (:meth:`SweepProgress.lost`), else []."""
    import multiprocessing as mp
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    from mibench.protocols.runtime import check_stop
    from mibench.protocols.workers import watch_parent

    pool = ProcessPoolExecutor(max_workers=ex.workers, mp_context=mp.get_context("spawn"),
                               initializer=watch_parent, initargs=(os.getpid(),))
    lost, taken = [], set()          # taken: cells handed to a worker (a future running)
    try:
        futures = {}
        for i, c in enumerate(todo):
            try:
                fut = pool.submit(execute_cell, c.config, str(out_dir / c.name), ex.threads, ex.plot, False, payload,
                                  c.name in resuming, ex.threads_rule)
            except BrokenProcessPool:
                lost.extend(todo[i:])
                break
            futures[fut] = c
            progress.started(c)
        progress.manifest.write()
        pending, look = set(futures), 0.0
        while pending:
            check_stop()           # SIGTERM: raised here, and passed on to the workers by _stop_pool
            taken.update(futures[f].name for f in pending if f.running())
            done, pending = wait(pending, timeout=STOP_POLL_SECONDS, return_when=FIRST_COMPLETED)
            for fut in done:
                if isinstance(fut.exception(), BrokenProcessPool):
                    lost.append(futures[fut])
                else:
                    _finished(fut, futures[fut], out_dir, progress, "worker process failed")
            if time.monotonic() >= look:     # the cells a worker has started, from their run directories
                progress.mark_running(futures[f] for f in pending)
                look = time.monotonic() + RUNNING_LOOK_SECONDS
    except BaseException:
        _stop_pool(pool)
        raise
    if lost:       # a broken pool: its workers are told to stop and, past the deadline, killed
        _stop_pool(pool)
        return progress.lost(lost, taken, resuming, losses)
    pool.shutdown(wait=True)
    return []


def _finished(fut, c, out_dir: Path, progress: SweepProgress, what: str) -> None:
    """Record the result of cell ``c``'s future (a future that raised: its worker died, ``what``)."""
    try:
        res = fut.result()
    except Exception as exc:   # a worker process died (OOM kill, segfault, ...), a dask task was lost
        res = {"status": "failed", "error": f"{what}: {type(exc).__name__}: {exc}"}
        write_failed(out_dir / c.name, res["error"], c.config)
    progress.finished(c, res)


#: seconds the workers of an interrupted driver get to record their runs as interrupted
STOP_WORKERS_SECONDS = 20.0
#: how often a driver waiting for its cells checks for a stop request (seconds)
STOP_POLL_SECONDS = 0.2
#: how often a driver looks at its queued cells' run directories for the ones a worker has started
RUNNING_LOOK_SECONDS = 2.0
#: pools in a row that break before any cell finishes: then the cells left are failed, not retried
IDLE_POOLS = 3


def _stop_pool(pool) -> None:
    """The driver was interrupted: cancel the queued cells and pass the stop on to the running ones
    (SIGTERM, which a run honours at its next step or estimate, or in the estimate it waits for,
    recording ``interrupted``), then wait for the
    workers to end -- killing those still running after :data:`STOP_WORKERS_SECONDS` -- so that
    every cell's run directory holds its final status when the manifest is written."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.terminate()
    deadline = time.monotonic() + STOP_WORKERS_SECONDS
    for proc in processes:
        with contextlib.suppress(Exception):
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join(5.0)


def _run_dask(todo, out_dir: Path, ex: Execution, progress: SweepProgress, resuming: set, payload) -> None:
    from mibench.protocols.runtime import check_stop

    Client, LocalCluster, as_completed = dask_api()
    ship = (not ex.shared_fs) if ex.shared_fs is not None else bool(ex.address)
    cluster = None
    client = ex.client
    own_client = client is None
    if client is None:
        if ex.address:
            try:
                client = Client(ex.address, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise MibenchError(f"cannot connect to the Dask scheduler at {ex.address}: {exc}") from None
        else:
            cluster = LocalCluster(n_workers=ex.workers or 1, threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address=None)
            client = Client(cluster)
    try:
        futures = {}
        for c in todo:
            fut = client.submit(execute_cell, c.config, str((out_dir / c.name).resolve()), ex.threads, ex.plot, ship,
                                payload, c.name in resuming, ex.threads_rule,
                                key=f"mibench-cell-{c.name}-{os.urandom(4).hex()}", pure=False)
            futures[fut] = c
            progress.started(c)
        progress.manifest.write()
        done, look = as_completed(list(futures)), 0.0
        while not done.is_empty():
            check_stop()           # SIGTERM: raised here; closing the client and cluster stops the cells
            if time.monotonic() >= look:     # on a shared filesystem, the cells a worker has started
                progress.mark_running(c for f, c in futures.items() if not f.done())
                look = time.monotonic() + RUNNING_LOOK_SECONDS
            if not done.has_ready():
                time.sleep(STOP_POLL_SECONDS)
                continue
            fut = next(done)
            _finished(fut, futures[fut], out_dir, progress, "dask task failed")
    finally:
        if own_client:
            client.close()
        if cluster is not None:
            cluster.close()
