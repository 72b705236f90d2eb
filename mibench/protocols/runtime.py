"""What both protocols record about where a run ran, and how SIGTERM stops a run cleanly."""
from __future__ import annotations

import contextlib
import os
import platform
import signal
import sys
import threading

from .._version import __version__


def environment(device) -> dict:
    """Versions, device, torch threads and kernels of this process, for config.json."""
    import numpy as np
    import torch

    from ..kernels import _strided_mm_is_fp32, allocator_setting, kernel_name

    env = {"mibench": __version__, "torch": torch.__version__, "numpy": np.__version__,
           "python": sys.version.split()[0], "platform": platform.platform(), "device": str(device),
           "torch_threads": torch.get_num_threads(), "kernels": kernel_name(device)}
    if device.type == "cpu":
        env["allocator"] = allocator_setting()
        if env["kernels"] == "onednn":
            env["grad_weight_matmul"] = ("oneDNN matmul, transposed operands in place (probed fp32)"
                                         if _strided_mm_is_fp32() else "oneDNN linear, transposed copy")
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


@contextlib.contextmanager
def sigterm_requests_stop(flag):
    """While a run works, SIGTERM only sets ``flag.requested``, which the run checks at every step
    or estimate (an exception raised from a known place, never asynchronously mid-write); the run
    is then recorded as interrupted.  Installed only in the main thread and only over the default
    handler (a sweep's or the user's own handler is left alone).  A SIGTERM that lands after the
    last check is delivered again, with the default action, once the handler is removed."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return
    flag.requested = False
    signal.signal(signal.SIGTERM, lambda signum, frame: setattr(flag, "requested", True))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if flag.requested:
            flag.requested = False
            os.kill(os.getpid(), signal.SIGTERM)
