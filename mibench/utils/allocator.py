"""The CPU allocator setting of mibench's own processes (no torch import here).

A training step allocates a dozen K^2 x h activation buffers (4 MiB each at batch 64) and frees
them again; glibc serves blocks that size with ``mmap`` and unmaps them on free, so every step
page-faults ~60 MiB of fresh zeroed pages (the time that costs: benchmarks/README.md, "Performance";
``benchmarks/bench_step_parts.py`` section 3).  :func:`tune_cpu_allocator` raises glibc's
mmap and trim thresholds (``mallopt``) so freed blocks are reused; memory stays flat at the step's
working set.

It changes the whole process's ``malloc``, so mibench applies it only in processes it owns: the
``mibench`` command (:func:`mibench.cli.main`) and sweep worker processes (local pool and Dask
workers).  Never on ``import mibench`` and never inside library calls (``mibench.estimate``,
a streaming run, ``run_sweep`` in the caller's process); a user who wants it in their own
process calls :func:`tune_cpu_allocator` themselves.  ``MIBENCH_ALLOCATOR=default`` turns it off.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

_ALLOCATOR_TUNED: str | None = None


def tune_cpu_allocator() -> str:
    """Keep freed large blocks in the process heap instead of returning them to the OS (glibc
    ``mallopt``: mmap threshold 1 GiB, trim threshold 2 GiB).  Idempotent; a no-op off glibc
    or with ``MIBENCH_ALLOCATOR=default``.  Returns a description for config.json."""
    global _ALLOCATOR_TUNED
    if _ALLOCATOR_TUNED is not None:
        return _ALLOCATOR_TUNED
    _ALLOCATOR_TUNED = "default"
    if sys.platform.startswith("linux") and os.environ.get("MIBENCH_ALLOCATOR", "tuned").strip().lower() != "default":
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            m_trim_threshold, m_mmap_threshold = -1, -3          # glibc mallopt parameters
            if libc.mallopt(m_mmap_threshold, 1 << 30) and libc.mallopt(m_trim_threshold, (1 << 31) - 1):
                _ALLOCATOR_TUNED = "glibc: mmap threshold 1 GiB, trim threshold 2 GiB"
        except (OSError, AttributeError):
            pass
    return _ALLOCATOR_TUNED


def allocator_setting() -> str:
    """What :func:`tune_cpu_allocator` did in this process (for config.json), without doing it."""
    return _ALLOCATOR_TUNED or "default"
