#!/usr/bin/env python
"""The streaming training step against its GEMM floor, in one run with the same threads:

(a) the step: one training step of ``mibench run --task vision --estimator smile --side 28`` (the
    protocol's own loop, ``mibench.protocols.stream.training``: the batch from the image sampler,
    the joint critic 2 x 256 on the 64 x 64 = 4096 pairs, the SMILE head, backward, Adam);
(b) the floor: the step's large GEMMs alone, timed with torch at the same shapes: for each of the
    critic's ``--layers`` hidden layers on 4096 rows the forward (x W^T + b), the input gradient
    (g W) and the weight gradient (g^T x), each through the fastest of torch's routes (aten's mm,
    oneDNN's linear on pre-transposed copies, oneDNN's matmul on the transposed view);
(c) the same step with the code paths it replaced: the pairs as one autograd node per layer
    (``kernels.linear`` each) and the sampler's digit gather + transposing copy;

(a), (b) and (c) alternate round by round (medians), and the script prints floor / step for (a) and
(c).  Then where the step's time goes: its GEMMs timed inside the step (each call wrapped), its
parts timed alone (sampler, the critic's forward + backward on a fixed batch, Adam), its phases timed
in place (:func:`phases_in_place`), what a step at 80% of the floor would leave for its elementwise work
once its GEMMs, the sampler and Adam are paid (each at its time measured above) and, with
``--profile-steps``, a ``torch.profiler`` table by operator.

    python benchmarks/bench_step_floor.py [--threads 2] [--side 28] [--rounds 9] [--reps 20] [--wait-quiet 120]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import time

import torch
import torch.nn.functional as F
from common import header, interleaved, wait_for_quiet

from mibench.critics import kernels
from mibench.protocols.stream import training
from mibench.protocols.stream.config import StreamConfig
from mibench.protocols.stream.run import prepare


def build_loop(side: int, hidden: int, layers: int, steps: int):
    """The stream protocol's training loop for the vision SMILE run, as ``mibench run`` builds it."""
    cfg = StreamConfig(task="vision", task_params={"side": side}, estimators=["smile"], hidden=hidden,
                       layers=layers, steps=steps, mi="4", device="cpu")
    prep = prepare(cfg)
    critics, heads, groups = training.build_models(prep.config, prep.task.dim_x, prep.task.dim_y, prep.device)
    run = training.TrainingRun(prep.config, prep.task, prep.schedule, critics, heads, groups, prep.device)
    params = [p for m in (*critics, *heads) for p in m.parameters()]
    with training._precision("fp32", prep.device) as scores_of:
        return training._Loop(run, critics, None, params, scores_of)


def floor_routes(rows: int, hidden: int) -> dict:
    """name -> callable for each GEMM kind of a hidden layer on ``rows`` rows, through each torch route."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(rows, hidden, generator=gen).relu_()
    g = torch.randn(rows, hidden, generator=gen)
    w = torch.randn(hidden, hidden, generator=gen) / hidden ** 0.5
    b = torch.randn(hidden, generator=gen)
    routes = {
        "forward x W^T + b|aten": lambda: F.linear(x, w, b),
        "input grad g W|aten": lambda: torch.mm(g, w),
        "weight grad g^T x|aten": lambda: torch.mm(g.t(), x),
    }
    if kernels.ONEDNN:
        op = torch.ops.mkldnn._linear_pointwise
        # pre-transposed copies: the floor counts the GEMM only, not a layout change
        wt, gt, xt = w.t().contiguous(), g.t().contiguous(), x.t().contiguous()
        routes.update({
            "forward x W^T + b|oneDNN": lambda: op(x, w, b, "none", [], ""),
            "input grad g W|oneDNN": lambda: op(g, wt, None, "none", [], ""),
            "weight grad g^T x|oneDNN": lambda: op(gt, xt, None, "none", [], ""),
        })
        if kernels.strided_mm_is_fp32():
            routes["input grad g W|oneDNN matmul"] = lambda: kernels._mm_via_onednn(g, w)
            routes["weight grad g^T x|oneDNN matmul, in place"] = lambda: kernels._mm_via_onednn(g.t(), x)
    return routes


def time_floor(routes: dict, layers: int, reps: int) -> tuple[float, dict]:
    """Seconds of the step's ``3 * layers`` hidden-layer GEMMs, each kind through its fastest route now."""
    t = interleaved(routes, rounds=1, reps=reps, warmup=1)
    best = {}
    for name, sec in t.items():
        kind, route = name.split("|")
        if kind not in best or sec < best[kind][1]:
            best[kind] = (route, sec)
    return layers * sum(sec for _, sec in best.values()), best


def _layer_by_layer(hx, hy, *params):
    """The pairs as before the fused node: one autograd node (kernels.linear) per layer."""
    h = (hx + hy).relu_()
    shape = h.shape
    h = h.reshape(-1, shape[-1])
    n = len(params) // 2
    for i in range(n):
        h = kernels.linear(h, params[2 * i], params[2 * i + 1], relu=i < n - 1)
    return h.reshape(*shape[:-1], h.shape[-1])


@contextlib.contextmanager
def previous_code(loop):
    """The step with the code paths it replaced (module docstring, (c))."""
    render = loop.run.task.render
    fused = kernels._PairMLP.apply
    kernels._PairMLP.apply = _layer_by_layer
    render.from_pool = lambda pool, index, generator: render(pool.gather(index), generator)
    try:
        yield
    finally:
        kernels._PairMLP.apply = fused
        del render.from_pool


def parts(loop, level: float):
    """The step's parts as callables: the sampler, the critic's forward + backward on one fixed batch
    (no optimizer), the Adam update on the gradients left by it."""
    cfg, critic, head = loop.run.cfg, loop.critics[0], loop.run.heads[0]
    gen = torch.Generator().manual_seed(1)
    x, y = loop.run.task.sample(cfg.batch_size, level, gen)

    def sampler():
        loop.run.task.sample(cfg.batch_size, level, gen)

    def critic_fwd_bwd():
        for p in critic.parameters():
            p.grad = None
        loss, _ = head(critic(x, y))
        loss.backward()

    critic_fwd_bwd()
    return {"sampler": sampler, "critic forward + backward": critic_fwd_bwd, "Adam": loop.optimizer.step}


def phases_in_place(loop, steps: int, first: int) -> dict:
    """ms per step of each phase of the step as the loop runs it, timed in sequence within the steps
    (with the caches as the step leaves them, unlike the parts alone): the sampler, zero_grad, the
    critic's forward, the head, the backward pass, Adam.  The same operations as ``loop.step`` for the
    one-critic, one-estimator run built here."""
    cfg, critic, head = loop.run.cfg, loop.critics[0], loop.run.heads[0]
    names = ("sampler", "zero_grad", "critic forward", "head forward", "backward", "Adam")
    acc = dict.fromkeys(names, 0.0)
    for step in range(first, first + steps):
        marks = [time.perf_counter()]
        x, y = loop.run.task.sample(cfg.batch_size, float(loop.levels[step]), loop.generator)
        marks.append(time.perf_counter())
        loop.optimizer.zero_grad(set_to_none=True)
        marks.append(time.perf_counter())
        scores = loop.scores_of(critic, x, y)
        marks.append(time.perf_counter())
        loss, loop.buffer[0, step] = head(scores)
        marks.append(time.perf_counter())
        loss.backward()
        marks.append(time.perf_counter())
        loop.optimizer.step()
        marks.append(time.perf_counter())
        for name, a, b in zip(names, marks, marks[1:]):
            acc[name] += b - a
    return {name: sec / steps * 1e3 for name, sec in acc.items()}


@contextlib.contextmanager
def gemm_clock(acc: dict):
    """Time every GEMM call of the oneDNN path (kernels._dnn, kernels._grad_weight) by its shapes."""
    dnn, grad_weight = kernels._dnn, kernels._grad_weight

    def timed(name, f):
        def call(a, b, *rest):
            t0 = time.perf_counter()
            out = f(a, b, *rest)
            acc.setdefault((name, tuple(a.shape), tuple(b.shape)), []).append(time.perf_counter() - t0)
            return out
        return call

    kernels._dnn, kernels._grad_weight = timed("linear", dnn), timed("weight grad", grad_weight)
    try:
        yield
    finally:
        kernels._dnn, kernels._grad_weight = dnn, grad_weight


def profile_table(loop, steps: int, first: int, top: int = 18) -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for i in range(first, first + steps):
            loop.step(i)
    events = [e for e in prof.key_averages(group_by_input_shape=True) if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    print(f"{'operator':<34} {'calls':>5} {'ms/step':>8} {'share':>6}  input shapes")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:top]:
        shapes = ", ".join(str(tuple(s)) for s in e.input_shapes if s)[:70]
        print(f"{e.key[:34]:<34} {e.count / steps:5.1f} {e.self_cpu_time_total / steps / 1e3:8.3f} "
              f"{100 * e.self_cpu_time_total / total:5.1f}%  {shapes}")
    print(f"(profiled: {total / steps / 1e3:.2f} ms/step, profiler overhead included)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--side", type=int, default=28, help="vision image side (the issue's setup: 28)")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--profile-steps", type=int, default=0, help="steps under torch.profiler (0: no table)")
    p.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                   help="shared machine: before each round wait up to SECONDS until other processes keep less "
                        "than 0.3 cores busy (default 0: do not wait)")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    header(f"the vision SMILE step vs its GEMM floor: joint critic {args.layers}x{args.hidden}, batch 64, ds 10, "
           f"{args.side}x{args.side}")
    print(f"# nproc {os.cpu_count()}, load average at start {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    steps = 1_000_000
    loop = build_loop(args.side, args.hidden, args.layers, steps)
    rows = loop.run.cfg.batch_size ** 2
    counter = iter(range(steps))

    def step():
        loop.step(next(counter))

    def step_before():
        with previous_code(loop):
            loop.step(next(counter))

    routes = floor_routes(rows, args.hidden)
    for _ in range(10):
        step()
        step_before()
    # (a), (b), (c) alternate round by round (the step args.reps times, the floor's GEMMs args.reps
    # times each, the previous step args.reps times), so background load hits all alike
    times = {"step": [], "floor": [], "before": []}
    best_routes, loads = {}, []
    for r in range(args.rounds):
        loads.append(wait_for_quiet(timeout=args.wait_quiet))
        cases = [("step", step), ("floor", None), ("before", step_before)]
        for name, f in (cases if r % 2 == 0 else cases[::-1]):
            if f is None:
                sec, best_routes = time_floor(routes, args.layers, args.reps)
            else:
                sec = interleaved({name: f}, rounds=1, reps=args.reps, warmup=1)[name]
            times[name].append(sec)
    med = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    gflop = 3 * args.layers * 2 * rows * args.hidden ** 2 / 1e9
    print(f"\n## floor / step ({torch.get_num_threads()} threads, medians of {args.rounds} alternating rounds)")
    print(f"floor {med['floor'] * 1e3:7.2f} ms  ({3 * args.layers} GEMMs {rows}x{args.hidden}x{args.hidden}, "
          f"{gflop:.2f} GFLOP, {gflop / med['floor']:.0f} GFLOP/s; fastest routes: "
          + "; ".join(f"{k} {r}" for k, (r, _) in best_routes.items()) + ")")
    print(f"step  {med['step'] * 1e3:7.2f} ms  floor / step = {med['floor'] / med['step']:.0%}")
    print(f"the step with the replaced code paths {med['before'] * 1e3:7.2f} ms  floor / step = "
          f"{med['floor'] / med['before']:.0%}  (now {med['before'] / med['step']:.2f}x faster)")
    print(f"# load average after the comparison {' '.join(f'{v:.2f}' for v in os.getloadavg())}"
          + (f"; other processes' load before each round (cores): {' '.join(f'{v:.2f}' for v in loads)}"
             if args.wait_quiet else ""))

    print("\n## GEMMs inside the step, ms per step (each call timed; medians over 100 steps)")
    acc: dict = {}
    n = 100
    wait_for_quiet(timeout=args.wait_quiet)
    with gemm_clock(acc):
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        whole = (time.perf_counter() - t0) / n
    gemms = large = 0.0
    for (kind, a, b), secs in sorted(acc.items(), key=lambda kv: -sum(kv[1])):
        per_step = len(secs) / n
        ms = sorted(secs)[len(secs) // 2] * per_step * 1e3
        gemms += ms
        large += ms if min(a) >= args.hidden and min(b) >= args.hidden else 0.0     # the floor's GEMMs
        print(f"{kind:<12} {str(a):<12} x {str(b):<12} {per_step:3.0f}/step {ms:7.3f}")
    print(f"GEMMs {gemms:.2f} of {whole * 1e3:.2f} ms per step (these 100 steps); the rest {whole * 1e3 - gemms:.2f}")

    print("\n## the step's parts alone, ms (interleaved with the whole step)")
    level = float(loop.levels[0])
    wait_for_quiet(timeout=args.wait_quiet)
    t = interleaved({"whole step": step, **parts(loop, level)}, rounds=args.rounds, reps=args.reps)
    for name, sec in t.items():
        print(f"{name:<28} {sec * 1e3:7.2f}   {sec / t['whole step']:5.0%} of the step")

    print("\n## the step's phases in place, ms per step (each timed within 200 steps)")
    wait_for_quiet(timeout=args.wait_quiet)
    ph = phases_in_place(loop, 200, next(counter))
    total = sum(ph.values())
    for name, ms in ph.items():
        print(f"{name:<28} {ms:7.2f}   {ms / total:5.0%} of {total:.2f}")

    print("\n## what 80% would leave, ms per step")
    goal = med["floor"] * 1e3 / 0.8
    fixed = {"the floor's GEMMs inside the step": large, "the step's other GEMMs inside it": gemms - large,
             "the sampler alone": t["sampler"] * 1e3, "Adam alone": t["Adam"] * 1e3}
    print(f"{'the step at 80% of the floor':<40} {goal:7.2f}")
    for name, ms in fixed.items():
        print(f"{'- ' + name:<40} {ms:7.2f}")
    print(f"{'= left for everything else':<40} {goal - sum(fixed.values()):7.2f}   (the ReLUs and their backward, "
          f"the bias and pair sums, the pair add, the head, zero_grad, autograd and Python; now "
          f"{whole * 1e3 - sum(fixed.values()):.2f})")
    left_alone = goal - sum(fixed.values()) + large - med["floor"] * 1e3
    print(f"{'  with the floor GEMMs as fast as alone':<40} {left_alone:7.2f}")

    if args.profile_steps:
        print(f"\n## torch.profiler, {args.profile_steps} steps: operators by self time")
        profile_table(loop, args.profile_steps, next(counter))
    print(f"\n# load average at end {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
