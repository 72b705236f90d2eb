"""Shared pieces of the benchmark scripts: interleaved timing (so background load hits every
variant alike and ratios stay meaningful), FLOP counts and the GEMM peak of this machine."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def interleaved(cases: dict, rounds: int = 3, reps: int = 10, warmup: int = 2) -> dict:
    """Median-of-rounds seconds per call for each case, the cases alternating within each round."""
    for f in cases.values():
        for _ in range(warmup):
            f()
    times = {k: [] for k in cases}
    for _ in range(rounds):
        for k, f in cases.items():
            t0 = time.perf_counter()
            for _ in range(reps):
                f()
            times[k].append((time.perf_counter() - t0) / reps)
    return {k: sorted(v)[len(v) // 2] for k, v in times.items()}


def wait_for_quiet(limit: float = 0.3, timeout: float = 0.0, window: float = 1.0) -> float | None:
    """On a shared machine: wait (at most ``timeout`` seconds) until other processes keep less than
    ``limit`` cores busy over ``window`` seconds (``mibench.utils.threads.LoadProbe``); returns the
    last load seen (None with ``timeout=0``: no waiting)."""
    if timeout <= 0:
        return None
    from mibench.utils.threads import LoadProbe

    t0 = time.monotonic()
    while True:
        busy = LoadProbe().busy_cores(window)
        if busy < limit or time.monotonic() - t0 > timeout:
            return busy


def joint_train_flops(k: int, dx: int, dy: int, hidden: int = 256, layers: int = 2) -> float:
    """FLOPs of one joint-critic training step (forward + backward) with the first layer split:
    per-sample first layer 2K(dx+dy)h, hidden layers 2K^2 h^2 each, output 2K^2 h; backward = 2x
    forward except the first layer's input gradient (not needed)."""
    first = 2 * k * (dx + dy) * hidden
    hidden_fl = layers * 2 * k * k * hidden * hidden
    out = 2 * k * k * hidden
    return first * 2 + (hidden_fl + out) * 3


def gemm_peak_gflops(m: int = 4096, n: int = 256, kdim: int = 256) -> dict:
    """GFLOP/s of the critic's dominant GEMM via aten (MKL) and via oneDNN, measured now."""
    a, w, b = torch.randn(m, kdim), torch.randn(n, kdim), torch.randn(n)
    cases = {"aten": lambda: torch.nn.functional.linear(a, w, b)}
    try:
        op = torch.ops.mkldnn._linear_pointwise
        cases["onednn"] = lambda: op(a, w, b, "none", [], "")
    except (AttributeError, RuntimeError):
        pass
    t = interleaved(cases, rounds=3, reps=20)
    return {k: 2 * m * n * kdim / v / 1e9 for k, v in t.items()}


def header(title: str) -> None:
    """Print the benchmark's header; also tunes the CPU allocator as mibench's own processes do (the
    CLI and sweep workers; library calls such as harness.run leave it alone, see mibench.utils.allocator),
    so in-process harness runs are timed as ``mibench run`` runs."""
    import platform

    from mibench.utils.allocator import tune_cpu_allocator

    allocator = tune_cpu_allocator()
    print(f"# {title}")
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{platform.processor() or platform.machine()}, allocator {allocator}, {time.strftime('%Y-%m-%d %H:%M')}")
