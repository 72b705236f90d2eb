#!/usr/bin/env python
"""The cost of a benchmark cell, in one run on this machine: the three measurements of
docs/install.md ("Threads") and docs/estimators.md ("Members of a cell"), one after the other, into one
result file with the machine's description.

(a) batched seeds: the three seeds of a BMI 5 x 5 cell at n = 5,000 for ``infonce``, ``ba``, ``doe-flow``,
    ``minde-c`` and ``fmmi-c``, batched against one at a time (``bench_batched_seeds.py``);
(b) the vision step against its GEMM floor (``bench_step_floor.py``);
(c) a run beside one busy process against idle (``bench_contention.py``, which starts the busy process).

    python benchmarks/bench_cell_cost.py [--quick] [--wait-quiet 120] [--out benchmarks/results/cell_cost.txt]

``--quick`` runs each with fewer rounds (a check that it works, not a measurement).
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARTS = [
    ("(a) batched seeds", "bench_batched_seeds.py", ["--rounds", "2"], ["--rounds", "1", "--steps-rounds", "2",
                                                                         "--estimators", "ba,minde-c"]),
    ("(b) the vision step against its GEMM floor", "bench_step_floor.py", ["--rounds", "9"], ["--rounds", "2",
                                                                                               "--reps", "3"]),
    ("(c) beside a busy process against idle", "bench_contention.py", ["--rounds", "3"], ["--rounds", "1",
                                                                                          "--steps", "200"]),
]


def _cpu() -> str:
    """The CPU's model, its vector extension and the memory, from /proc (Linux; '' elsewhere)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
        mem_kb = int(next(ln.split()[1] for ln in Path("/proc/meminfo").read_text().splitlines()
                          if ln.startswith("MemTotal")))
    except (OSError, StopIteration, ValueError):
        return ""
    fields = {k.strip(): v for k, v in (ln.split(":", 1) for ln in info.splitlines() if ":" in ln)}
    flags = fields.get("flags", "").split()
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    hyper = ", virtual machine" if "hypervisor" in flags else ""
    return f"{fields.get('model name', '?').strip()} ({vector}{hyper}), {mem_kb / 2 ** 20:.0f} GiB, "


def machine() -> str:
    import torch

    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    return (f"{platform.machine()}, {_cpu()}{os.cpu_count()} cores, {platform.python_implementation()} "
            f"{platform.python_version()}, torch {torch.__version__} (CPU kernels "
            f"{torch.backends.cpu.get_cpu_capability()}), load average {' '.join(load)}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {_commit()}")


def _commit() -> str:
    """The checkout's commit (with ``+changes`` where the working tree differs from it), or '?'."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE,
                               capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return rev + ("+changes" if dirty else "")


def _cpu_ticks() -> tuple[int, int] | None:
    """(steal, total) clock ticks of all CPUs since boot, from /proc/stat (Linux; None elsewhere): steal is
    the time the hypervisor ran other guests while this machine had work, which no load average shows."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_share(start: tuple[int, int] | None) -> str:
    """The share of CPU time stolen by the hypervisor since ``start`` (:func:`_cpu_ticks`)."""
    end = _cpu_ticks()
    if start is None or end is None or end[1] <= start[1]:
        return "steal time unknown"
    return f"{100 * (end[0] - start[0]) / (end[1] - start[1]):.1f}% of the CPU time stolen by the hypervisor"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                   help="passed to (b) and (c): wait up to this long for a quiet machine before each round")
    p.add_argument("--out", default=str(HERE / "results" / "cell_cost.txt"))
    args = p.parse_args(argv)
    lines = [f"# bench_cell_cost.py{' --quick' if args.quick else ''}: {machine()}"]
    ticks = _cpu_ticks()
    with tempfile.TemporaryDirectory() as tmp:
        for title, script, full, quick in PARTS:
            out = Path(tmp) / f"{script}.txt"
            batched = "batched" in script          # (a) writes its table to --out; (b) and (c) print theirs
            extra = ["--wait-quiet", str(args.wait_quiet)] if args.wait_quiet and not batched else []
            shown = [*(quick if args.quick else full), *extra]
            cmd = [sys.executable, str(HERE / script), *shown, *(["--out", str(out)] if batched else [])]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True)
            lines += ["", f"## {title}: python benchmarks/{script} {' '.join(shown)} "
                          f"({time.perf_counter() - t0:.0f} s)"]
            if proc.returncode:
                lines += [f"FAILED (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}"]
                continue
            lines += (out.read_text() if out.is_file() else proc.stdout).rstrip().splitlines()
    lines += ["", f"# during the run: {steal_share(ticks)}"]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
