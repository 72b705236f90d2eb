"""What both protocols share while a run runs: its life in its directory (:class:`RunLifecycle`:
claim -> config.json -> resume -> signals -> finish), what config.json records about where it ran,
and how SIGTERM stops a run or a sweep driver cleanly (:func:`sigterm_requests_stop`, the one policy)."""
from __future__ import annotations

import contextlib
import os
import platform
import signal
import sys
import threading
from pathlib import Path

from mibench._version import __version__
from mibench.errors import MibenchError, Terminated, one_line


def environment(device) -> dict:
    """Versions, device, torch threads and kernels of this process, for config.json."""
    import numpy as np
    import torch

    from mibench.critics.kernels import allocator_setting, kernel_name, strided_mm_is_fp32

    env = {"mibench": __version__, "torch": torch.__version__, "numpy": np.__version__,
           "python": sys.version.split()[0], "platform": platform.platform(), "device": str(device),
           "torch_threads": torch.get_num_threads(), "kernels": kernel_name(device)}
    if device.type == "cpu":
        env["allocator"] = allocator_setting()
        from mibench.utils.threads import thread_setting

        if thread_setting() is not None:
            env["threads_rule"] = thread_setting()
        if env["kernels"] == "onednn":
            env["grad_weight_matmul"] = ("oneDNN matmul, transposed operands in place (probed fp32)"
                                         if strided_mm_is_fp32() else "oneDNN linear, transposed copy")
    if device.type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(device)
    else:
        env["device_name"] = platform.processor() or platform.machine()
    return env


def peak_memory(device) -> dict:
    """Peak resident memory of this process so far (MiB) and, on CUDA, the run's peak allocation."""
    import torch

    out = {}
    try:
        import resource

        out["process_max_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    except ImportError:  # pragma: no cover (Windows)
        pass
    if device.type == "cuda":
        out["cuda_max_allocated_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    return out


class StopFlag:
    """SIGTERM's request to stop at the next step or estimate (set by :func:`sigterm_requests_stop`)."""

    requested = False


#: the stop request of this process (one run or one sweep driver at a time per process)
STOP = StopFlag()


def _request_stop(signum, frame) -> None:
    STOP.requested = True


@contextlib.contextmanager
def sigterm_requests_stop():
    """mibench's one SIGTERM policy, for a run and for a sweep driver alike: while they work, SIGTERM
    only sets :data:`STOP`, which they check where stopping is safe -- a run at every step or
    estimate (and while an estimate worker computes), a sweep driver while it waits for its cells --
    and then raise :class:`~mibench.errors.Terminated` from that known place (never asynchronously
    mid-write); what ran is recorded ``interrupted``.

    This is the only place that installs a SIGTERM handler: in the main thread, over the default
    handler only.  Nested (a sweep's cell run in the driver's process) it changes nothing, and a
    handler of the user's own is left alone.  A SIGTERM that lands after the last check is delivered
    again, with the default action, once the handler is removed."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    STOP.requested = False
    signal.signal(signal.SIGTERM, _request_stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if STOP.requested:
            STOP.requested = False
            os.kill(os.getpid(), signal.SIGTERM)


def end_by_interrupt() -> None:
    """End this process as Ctrl-C does by default -- killed by SIGINT, exit code -2 -- without the traceback
    Python prints for a KeyboardInterrupt: an estimate worker's way out, so that its parent reads an
    interrupt (:meth:`mibench.protocols.workers.EstimateWorker.run`), not a crash."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGINT)


def check_stop() -> None:
    """Raise :class:`~mibench.errors.Terminated` where SIGTERM asked to stop (called at every step or
    estimate, and by a sweep driver while it waits)."""
    if STOP.requested:
        STOP.requested = False
        raise Terminated("SIGTERM")


class RunLifecycle:
    """A run's life in its directory, one for both protocols.

    1. **claim** -- ``out`` (a path, or the :class:`~mibench.records.Claim` the caller already made)
       is new or empty, or holds this very run to continue (``resume``); anything else is refused in
       one line (:func:`mibench.records.claim`), and a complete run has nothing to resume.
    2. **config.json** -- :meth:`running` writes the run's :class:`~mibench.records.RunHeader` as
       ``running`` with its writer and heartbeat (:class:`~mibench.records.RunWriter`); a resumed run
       keeps its ``started`` and adds the time to ``resumed``.
    3. **signals** -- inside :meth:`running`, SIGTERM is a stop request the run honours at its next
       step or estimate (:func:`check_stop`), never an interruption mid-write.
    4. **finish** -- :meth:`complete` records the files' checksums and ``complete``, last; leaving
       :meth:`running` any other way records ``interrupted`` (Ctrl-C, SIGTERM) or ``failed`` with
       the error's first line.

    Without ``out`` nothing is written; the signal handling is the same.
    """

    def __init__(self, out, resolved_config: dict, *, resume: bool = False):
        from mibench.records import Claim, claim, read_config

        self.out: Path | None = None
        self.resume = False
        self.previous: dict = {}          # a resumed run's config.json as it was
        if out is not None:
            c = out if isinstance(out, Claim) else claim(out, resolved_config, resume=resume)
            if c.mode == "complete":
                raise MibenchError(f"{c.path} holds this run, complete: nothing to resume")
            self.out, self.resume = Path(c.path), c.mode == "resume"
            self.previous = read_config(self.out) if self.resume else {}
        self.writer = None
        self.config: dict = {}
        self._complete = False

    def run_id(self, given: str | None = None) -> str | None:
        """The run's id: ``given``, else its directory's name."""
        return given or (self.out.resolve().name if self.out is not None else None)

    @contextlib.contextmanager
    def running(self, header, carry: tuple[str, ...] = ()):
        """Write config.json ``running`` from ``header`` and yield its dict (the run adds its outcome
        to it); ``carry``: keys a resumed run keeps from its previous config.json."""
        from mibench.records import RunWriter
        from mibench.records.run_dir import now_iso

        config = header.as_config()
        if self.resume:
            config["started"] = self.previous.get("started", config["started"])
            config["resumed"] = list(self.previous.get("resumed") or []) + [now_iso()]
            for key in carry:
                config[key] = self.previous.get(key) or {}
        self.config = config
        if self.out is not None:
            self.writer = RunWriter(self.out, config).start()
        try:
            with sigterm_requests_stop():
                yield config
        except KeyboardInterrupt:
            self._end("interrupted")
            raise
        except Exception as exc:
            self._end("failed", one_line(exc))
            raise
        if not self._complete:
            self._end("failed", "the run ended without recording its outcome")
            raise RuntimeError("RunLifecycle.running: the run did not call complete()")

    def beat(self) -> None:
        """Refresh the heartbeat (at most every few seconds; see :class:`~mibench.records.RunWriter`)."""
        if self.writer is not None:
            self.writer.beat()

    def complete(self, files=()) -> None:
        """Record the checksums of ``files`` and the status ``complete`` (the last write of a run)."""
        if self.writer is not None:
            self.writer.finish("complete", files=files)
        self._complete = True

    def _end(self, status: str, error: str | None = None) -> None:
        if self.writer is not None and not self._complete:
            self.writer.finish(status, error=error)
