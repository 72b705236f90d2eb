"""Worker processes of mibench's own: what sweeps and the sample protocol share.

* :func:`watch_parent` -- a worker exits when the process that started it dies (killed, not
  interrupted), so an orphan never keeps computing or writing for nobody;
* :func:`plugin_payload` / :func:`install_payload` -- this process's
  :func:`mibench.register_estimator` registrations, cloudpickled for a worker and re-played there
  (``module:Name`` specs and entry points need nothing: workers resolve them by import);
* :class:`EstimateWorker` -- a killable process (spawn) that runs sample-protocol estimates with a
  timeout and is restarted after a kill.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

from mibench.errors import MibenchError, Terminated

#: set in processes that are mibench's own workers (a sweep's pool, an estimate worker)
IN_WORKER = {"value": False}
#: how often a wait on an estimate worker checks for a stop request (seconds)
STOP_POLL_SECONDS = 0.2


def watch_parent(parent_pid: int) -> None:
    """Start a daemon thread that exits this process when its parent is no longer ``parent_pid``."""
    IN_WORKER["value"] = True

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, daemon=True, name="mibench-parent-watch").start()


def plugin_payload() -> bytes | None:
    """This process's register_estimator registrations, cloudpickled (None when there are none)."""
    from mibench.estimators.plugins import registrations

    regs = registrations()
    if not regs:
        return None
    import cloudpickle

    return cloudpickle.dumps(regs)


def install_payload(payload: bytes | None) -> None:
    """Re-play a :func:`plugin_payload` in this (worker) process."""
    if payload:
        import cloudpickle

        from mibench.estimators.plugins import install_registrations

        install_registrations(cloudpickle.loads(payload))


def _estimate_worker_main(conn, payload: bytes | None, sys_path: list, parent_pid: int | None = None,
                          threads: int | None = None) -> None:
    """A spawned estimate worker: receives jobs, answers with
    :func:`mibench.protocols.sample.job.run_job` results; exits when its parent dies."""
    if parent_pid is not None:
        watch_parent(parent_pid)
    for p in sys_path:
        if p not in sys.path:
            sys.path.append(p)
    if threads:      # the parent's torch threads (a sweep cell's share of the cores)
        import torch

        torch.set_num_threads(int(threads))
    try:
        install_payload(payload)
        from mibench.protocols.sample.job import run_job

        conn.send(("ready", None))
    except BaseException as exc:  # pragma: no cover - reported to the parent
        conn.send(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    try:
        while True:
            try:
                job = conn.recv()
            except EOFError:
                return
            if job is None:
                return
            result = run_job(job)
            try:
                conn.send(("done", result))
            except OSError:      # the parent is gone (killed): nobody to answer, and nothing to report
                return
    except KeyboardInterrupt:
        # Ctrl-C reached the worker too: end by the signal itself (the parent reads the exit code), without the
        # traceback multiprocessing prints for an exception ("Process mibench-estimate-worker:")
        from mibench.protocols.runtime import end_by_interrupt

        end_by_interrupt()


class EstimateWorker:
    """A killable worker process (spawn) for estimates with a timeout; restarted after a kill."""

    def __init__(self):
        self.proc = None
        self.conn = None

    def _start(self) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        threads = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else None
        self.proc = ctx.Process(target=_estimate_worker_main,
                                args=(child, plugin_payload(), list(sys.path), os.getpid(), threads),
                                daemon=True, name="mibench-estimate-worker")
        me = mp.current_process()
        daemonic = me.daemon     # a Dask / pool worker is daemonic; multiprocessing refuses its children,
        if daemonic:             # but this child is killed by us and exits when we die (watch_parent)
            me._config["daemon"] = False
        # spawn re-runs the parent's __main__ in the child (its file, or its module for ``python -m``): a
        # user's script without an ``if __name__ == "__main__":`` guard would start again there, and one
        # read from stdin (``"<stdin>"``) cannot be re-run at all.  The worker needs nothing from __main__
        # (registered estimators travel with cloudpickle), so the child is started as from a REPL: with
        # __main__'s __file__ and __spec__ hidden while it starts
        main = sys.modules.get("__main__")
        hidden = {k: getattr(main, k) for k in ("__file__", "__spec__") if main is not None and hasattr(main, k)}
        for k in hidden:
            setattr(main, k, None) if k == "__spec__" else delattr(main, k)
        try:
            self.proc.start()
        except BaseException:
            self.proc = None
            raise
        finally:
            if daemonic:
                me._config["daemon"] = True
            for k, v in hidden.items():
                setattr(main, k, v)
        child.close()
        self.conn = parent
        if not parent.poll(120):
            self.stop(kill=True)
            raise MibenchError("the estimate worker process did not start within 120 s")
        try:
            kind, msg = parent.recv()
        except (EOFError, OSError):
            code = self.proc.exitcode if self.proc is not None else None
            self.stop(kill=True)
            raise MibenchError(f"the estimate worker process exited before it started (exit code {code}); "
                               "run with timeout=None (--timeout 0) to estimate in this process") from None
        if kind != "ready":
            self.stop(kill=True)
            raise MibenchError(f"the estimate worker failed to start: {msg}")

    def run(self, job: tuple, timeout: float, limit: str | None = None) -> dict:
        """Run one ``estimate_once`` job; a timeout or a dead worker is returned as a failed result (``limit``:
        how a timeout names the limit, default ``--timeout <timeout> s``).
        While it waits, a stop request (SIGTERM, :func:`~mibench.protocols.runtime.check_stop`) is
        honoured at once: the worker is killed and :class:`~mibench.errors.Terminated` raised, so the
        run ends ``interrupted`` without waiting for the estimate in flight."""
        from mibench.protocols.runtime import check_stop

        if self.proc is None or not self.proc.is_alive():
            self._start()
        try:
            self.conn.send(job)
            deadline = time.monotonic() + timeout
            while not self.conn.poll(max(0.0, min(STOP_POLL_SECONDS, deadline - time.monotonic()))):
                if time.monotonic() >= deadline:
                    break
                try:
                    check_stop()
                except KeyboardInterrupt:
                    self.stop(kill=True)
                    raise
            else:
                kind, res = self.conn.recv()
                return res
            self.stop(kill=True)
            limit = limit or f"--timeout {timeout:g} s"
            return {"status": "timeout", "error": f"no estimate within {limit} (worker killed)",
                    "value_nats": float("nan"), "seconds": float(timeout), "n_parameters": 0, "kind": ""}
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError) as exc:
            if self.proc is not None:
                self.proc.join(1.0)         # its exit code, if it is going
            code = self.proc.exitcode if self.proc is not None else None
            self.stop(kill=True)
            if code in (-signal.SIGTERM, -signal.SIGINT):
                # the stop signal reached the worker too (a process group's: timeout, kill -- -PGID, a
                # scheduler): the run is interrupted, not the estimate failed, which --resume would keep
                check_stop()
                raise Terminated("SIGTERM") if code == -signal.SIGTERM else KeyboardInterrupt
            return {"status": "crashed", "error": f"estimate worker died ({type(exc).__name__}, exit code {code})",
                    "value_nats": float("nan"), "seconds": float("nan"), "n_parameters": 0, "kind": ""}

    def stop(self, kill: bool = False) -> None:
        if self.proc is None or self.proc.pid is None:
            self.proc = None
            return
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(5)
        self.conn.close()
        self.proc = self.conn = None
