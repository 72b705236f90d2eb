#!/usr/bin/env python
"""What n costs ``mibench.estimate``: wall time and peak resident memory at n = 10,000 / 50,000 /
200,000 pairs (x ~ N(0, 1), y = x + s noise with s = 1 / sqrt(2^(2 I) - 1), I = 1 bit; 1 x 1; defaults:
``infonce``, ``preprocess="auto"``, so two critics; 1 torch thread).

Each n runs in a fresh interpreter (``python -c``), so every peak is that call's own: the child reports
its VmHWM (``/proc/self/status``) and the parent reads the child's ``ru_maxrss`` from ``os.wait4``;
"call s" is ``mibench.estimate`` alone, "process s" the child from spawn to exit (imports included).
The peak includes the interpreter with torch, numpy and scipy imported (about 245 MB here).  Other
processes on the machine slow the timings; the load average is printed before each case.

``--vs-old-defaults`` adds, in this process, one 1-d 10,000-pair call (gauss-dense-1x1 at 1 nat) with the
current defaults next to the defaults before issue 13 (SMILE-5, joint critic 2 x 256, 2,000 steps, batch 64,
whole-batch scoring, torch's threads; reproduced with the streaming harness's training loop): the last line
of benchmarks/results/estimate.txt.

    python benchmarks/bench_estimate_scaling.py [--n 10000,50000,200000] [--seed 0] [--out FILE]
        [--pythonpath DIR]   # measure another checkout (e.g. the code before a change)
        [--vs-old-defaults]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "estimate_scaling.txt"
MI_BITS = 1.0

CHILD = """
import json, math, time, warnings
import numpy as np
import mibench
n, seed, bits = {n}, {seed}, {bits}
rng = np.random.default_rng(seed)
x = rng.standard_normal(n)
y = x + rng.standard_normal(n) / math.sqrt(2.0 ** (2 * bits) - 1)
t0 = time.perf_counter()
r = mibench.estimate(x, y, seed=seed, units="bits")
seconds = time.perf_counter() - t0
hwm = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM"))
print(json.dumps({{"seconds": seconds, "mi": r.mi, "status": r.status, "n_test": r.n_test,
                   "steps_run": r.steps_run, "preprocess": r.settings.get("preprocess"), "vmhwm_kb": hwm}}))
"""


def run_case(n: int, seed: int, pythonpath: str | None, timeout: float) -> dict:
    """One estimate in a fresh interpreter: the child's report, its wall time from spawn to exit and its
    own ``ru_maxrss`` (``os.wait4`` on its pid)."""
    env = dict(os.environ, PYTHONPATH=pythonpath or str(REPO))
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", CHILD.format(n=n, seed=seed, bits=MI_BITS)], env=env,
                                stdout=out, stderr=subprocess.DEVNULL)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - t0 > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -9
                return {"error": f"no result within {timeout:.0f} s"}
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().strip()
    if proc.returncode != 0 or not text:
        return {"error": f"exit {proc.returncode}"}
    rec = json.loads(text.splitlines()[-1])
    rec.update(process_seconds=wall, ru_maxrss_kb=usage.ru_maxrss)
    return rec


class ArrayTask:
    """Minibatches of fixed training pairs, as a task the streaming harness can train on."""

    name = "arrays"
    max_mi_bits = float("inf")

    def __init__(self, x, y):
        self.x, self.y = x, y
        self.dim_x, self.dim_y = x.shape[1], y.shape[1]
        self.device = x.device

    def sample(self, batch_size, mi_bits, generator):
        import torch

        idx = torch.randint(0, self.x.shape[0], (batch_size,), generator=generator, device=self.device)
        return self.x[idx], self.y[idx]

    def info(self):
        return {"task": self.name, "n": int(self.x.shape[0]), "dim_x": self.dim_x, "dim_y": self.dim_y}


def old_defaults(x, y, seed=0):
    """The pre-issue-13 estimate defaults, reproduced with the harness's training loop."""
    import numpy as np
    import torch

    from mibench.protocols.schedule import parse_schedule
    from mibench.protocols.stream.run import RunConfig
    from mibench.protocols.stream.training import build_models, train

    rng = np.random.default_rng(seed)
    perm = rng.permutation(x.shape[0])
    tr = perm[: int(0.8 * x.shape[0])]
    xt, yt = torch.as_tensor(x[tr]), torch.as_tensor(y[tr])
    task = ArrayTask((xt - xt.mean(0)) / xt.std(0), (yt - yt.mean(0)) / yt.std(0))
    cfg = RunConfig(task="arrays", estimators=["smile"], critic="joint", hidden=256, layers=2, mi=0.0, steps=2000,
                    batch_size=64, lr=5e-4, seed=seed, device="cpu").resolved()
    critics, heads, groups = build_models(cfg, task.dim_x, task.dim_y, torch.device("cpu"))
    train(cfg, task, parse_schedule(0.0, 2000), critics, heads, groups, torch.device("cpu"), False)


def vs_old_defaults() -> str:
    """One line: a 1-d 10,000-pair call with the current defaults vs the pre-issue-13 ones, in this process."""
    sys.path.insert(0, str(REPO))
    import mibench
    from mibench.tasks.distributions import draw

    x, y, _ = draw("gauss-dense-1x1", 10_000, mi_nats=1.0, seed=0)
    t0 = time.perf_counter()
    r = mibench.estimate(x, y, units="nats", device="cpu")
    new = time.perf_counter() - t0
    t0 = time.perf_counter()
    old_defaults(x, y)
    old = time.perf_counter() - t0
    return (f"# speed, 1-d 10,000 pairs: new defaults {new:.1f} s ({r.steps_run} steps, status {r.status}); "
            f"old defaults (2000 steps, batch 64, joint 2x256, torch's threads) {old:.1f} s; "
            f"ratio old/new {old / new:.1f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="10000,50000,200000")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per case")
    ap.add_argument("--pythonpath", default=None, help="the checkout to import mibench from (default: this one)")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--vs-old-defaults", action="store_true",
                    help="also time a 1-d call with the current defaults vs the pre-issue-13 ones (module docstring)")
    args = ap.parse_args()
    import platform

    lines = [f"# mibench.estimate scaling: x ~ N(0, 1), y = x + noise at {MI_BITS:g} bit, 1 x 1, defaults "
             f"(infonce, preprocess=auto, 1 thread), seed {args.seed}",
             f"# python {platform.python_version()}, {os.cpu_count()} CPUs, "
             f"{platform.processor() or platform.machine()}, "
             f"mibench from {'--pythonpath ' + Path(args.pythonpath).name if args.pythonpath else 'this checkout'}, "
             f"{time.strftime('%Y-%m-%d %H:%M')}",
             f"# {'n':>8} {'call s':>8} {'process s':>9} {'peak MB':>8} {'ru_maxrss MB':>12} {'mi bits':>8} "
             f"{'status':>14} {'n_test':>7} {'steps':>6}  load before"]
    print("\n".join(lines), flush=True)
    for n in (int(v) for v in args.n.split(",")):
        load = "%.2f %.2f %.2f" % os.getloadavg()
        r = run_case(n, args.seed, args.pythonpath, args.timeout)
        if "error" in r:
            row = f"  {n:>8} {r['error']}  load {load}"
        else:
            row = (f"  {n:>8} {r['seconds']:8.1f} {r['process_seconds']:9.1f} {r['vmhwm_kb'] / 1024:8.0f} "
                   f"{r['ru_maxrss_kb'] / 1024:12.0f} {r['mi']:8.3f} {r['status']:>14} {r['n_test']:7d} "
                   f"{r['steps_run']:6d}  {load}")
        lines.append(row)
        print(row, flush=True)
    if args.vs_old_defaults:
        lines.append(vs_old_defaults())
        print(lines[-1], flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
