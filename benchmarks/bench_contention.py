#!/usr/bin/env python
"""A run's cost beside one busy process: ``mibench run --task gaussian --estimator smile --steps 1500``
timed on the otherwise idle machine and beside one busy loop at normal priority (a plain Python
``while True: pass`` that this script starts and stops itself), with

* ``--threads N`` fixed at torch's default thread count (what every run used before the thread rule:
  one thread per core), and
* the thread rule (``mibench/utils/threads.py``: the cores free to the run at its start),
* ``--threads 1``, for reference: a run on one core, the best a run can do beside a busy process on
  2 cores,

interleaved round by round (idle and busy alternate, each round runs both variants in alternating
order), medians over rounds.  Prints each variant's busy / idle ratio; a fair share of the cores
costs at most cores / (cores - 1) = 2x on 2 cores.  Times are the runs' own ``wall_seconds``
(``config.json``: the run from its start to its end, the interpreter's start-up not included).  On
a shared machine each run's record also says how busy other processes kept the CPUs meanwhile
(``--wait-quiet`` waits for a quiet machine before each run, not during it).

    python benchmarks/bench_contention.py [--rounds 3] [--steps 1500] [--wait-quiet 300]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from common import header, wait_for_quiet


def default_threads() -> int:
    """torch's thread count in a fresh process (one per physical core unless OMP_NUM_THREADS says otherwise)."""
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def start_busy() -> subprocess.Popen:
    """One busy process at normal priority."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(1.0)            # running before the measured run starts (and probes the load)
    return proc


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed_run(args, threads: int | None, out: Path, busy: subprocess.Popen | None = None) -> dict:
    """One run in a fresh process; also the other processes' load during it (cores: all CPU time
    on the machine minus this run's and the script's busy loop's, over the run's wall time)."""
    from mibench.utils.threads import LoadProbe

    probe, children = LoadProbe(), resource.getrusage(resource.RUSAGE_CHILDREN)
    loop0 = cpu_seconds(busy.pid) if busy is not None else 0.0
    cmd = [sys.executable, "-m", "mibench.cli", "run", "--task", args.task, "--estimator", args.estimator,
           "--steps", str(args.steps), "--device", "cpu", "--quiet", "--no-plot", "--overwrite", "--out", str(out)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    process = time.perf_counter() - t0
    loop = cpu_seconds(busy.pid) - loop0 if busy is not None else 0.0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_cpu = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    background = max(0.0, probe.busy_cores(0.0) - (run_cpu + loop) / process)
    cfg = json.loads((out / "config.json").read_text())
    return {"seconds": float(cfg["wall_seconds"]), "process": process, "background": background,
            "threads": cfg["environment"]["torch_threads"], "rule": cfg["environment"].get("threads_rule", "")}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--task", default="gaussian")
    p.add_argument("--estimator", default="smile")
    p.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                   help="shared machine: before each run wait up to SECONDS until other processes keep less than "
                        "0.3 cores busy, so that 'idle' is idle (default 0: do not wait)")
    args = p.parse_args(argv)
    header(f"a run beside one busy process: mibench run --task {args.task} --estimator {args.estimator} "
           f"--steps {args.steps}")
    n_default = default_threads()
    print(f"# nproc {os.cpu_count()}, torch's default threads {n_default}, load average at start "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    variants = {f"--threads {n_default} (before)": n_default, "thread rule (after)": None}
    if n_default > 1:
        variants["--threads 1 (reference)"] = 1
    times = {(v, c): [] for v in variants for c in ("idle", "busy")}
    process = {(v, c): [] for v in variants for c in ("idle", "busy")}
    chosen, loads = {}, []
    with tempfile.TemporaryDirectory(prefix="mibench-contention-") as tmp:
        out = Path(tmp) / "run"
        timed_run(argparse.Namespace(**{**vars(args), "steps": 50}), None, out)    # warm the caches once
        for r in range(args.rounds):
            for cond in (("idle", "busy") if r % 2 == 0 else ("busy", "idle")):
                order = list(variants.items())
                for name, threads in (order if r % 2 == 0 else order[::-1]):
                    loads.append(wait_for_quiet(timeout=args.wait_quiet))
                    busy = start_busy() if cond == "busy" else None
                    try:
                        res = timed_run(args, threads, out, busy)
                    finally:
                        if busy is not None:
                            busy.kill()
                            busy.wait()
                    times[(name, cond)].append(res["seconds"])
                    process[(name, cond)].append(res["process"])
                    chosen.setdefault((name, cond), []).append(
                        f"{res['seconds']:.1f} s, {res['threads']} threads [{res['rule']}], background during "
                        f"the run {res['background']:.2f} cores")
    print(f"\n## seconds per run (median of {args.rounds}; the run's wall_seconds, and in brackets the whole "
          "process with the interpreter's start-up and the load probe)")
    print(f"{'variant':<28} {'idle':>16} {'beside 1 busy':>16} {'busy / idle':>18}")
    for name in variants:
        idle, busy = statistics.median(times[(name, "idle")]), statistics.median(times[(name, "busy")])
        p_idle, p_busy = statistics.median(process[(name, "idle")]), statistics.median(process[(name, "busy")])
        print(f"{name:<28} {idle:7.2f} ({p_idle:6.2f}) {busy:7.2f} ({p_busy:6.2f}) "
              f"{busy / idle:8.2f}x ({p_busy / p_idle:.2f}x)")
    print()
    print("each run: seconds, threads [why], other processes' load during it")
    for (name, cond), rules in sorted(chosen.items()):
        print(f"{name}, {cond}: " + " | ".join(rules))
    if args.wait_quiet:
        print("\nother processes' load before each run (cores; the script's busy loop started after): "
              + " ".join(f"{v:.2f}" for v in loads))
    print(f"\n# load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}; torch {torch.__version__}")
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
