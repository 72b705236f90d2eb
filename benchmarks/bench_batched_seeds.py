"""Batched training over seeds: the three seeds of one BMI 5x5 cell at n = 5,000, each estimator's
members trained as one stacked network (``HeldOutEstimator.estimate_members(..., stacked=True)``,
mibench/estimators/trained_members.py) against the same three estimates one at a time, in one process,
the two ways alternating within each round (and their order swapped every round) so that the load of
this shared machine hits both alike.

    python benchmarks/bench_batched_seeds.py [--task multinormal-dense-5-5-0.5] [--n 5000] [--seeds 0,1,2]
        [--estimators infonce,ba,doe-flow,minde-c,fmmi-c] [--rounds 2] [--steps-rounds 7]
        [--out benchmarks/results/batched_seeds.txt] [--steps-only] [--routes-only] [--members-only]
        [--runs-only] [--levels 0.5,1,2,4]

Section 1, whole cells: per estimator and way, the median over rounds of the wall and CPU seconds of the
cell (its three estimates, data rules and readouts included), the throughput ratio (one at a time /
batched; above 1: batched is faster) and each seed's value from both ways.  ``infonce`` trains through
``mibench.estimate`` (critic-bound, its own loop), which has no batched path: its row is one at a time
only.  Section 2, training steps alone: one Adam step of every trained sample estimator's networks on a
256-pair batch (5 x 5), one member vs three stacked, and for infonce one step of its default critic
(joint, hidden 64, 8 blocks of 32 pairs, the InfoNCE bound) vs three such critics as batched matrix
products: the ceiling on what stacking can buy for each, beside the time of one member's matrix products
at this thread's measured rate (the arithmetic a stacked step repeats per member), one member through
the stacked layers, and one member with torch's default (per-parameter) Adam instead of the fused one
the estimators train with.  Section 3: one training step of 3, 6 and 12 members stacked against as many
one-member steps, for the stacked estimators of ``--estimators`` (a sample run stacks every (level, seed)
pair it misses: four levels and three seeds are 12 members); section 4: whole sample runs over ``--levels``
and the seeds, stacked against one member at a time (``--members-only``, ``--runs-only``: section 3, 4 alone).
``--routes-only``: one member layer's forward and backward by width, through aten's ``baddbmm`` and
oneDNN's batched matmul (and which of them ``member_linear`` takes). CPU time (``time.process_time``) is
given beside the wall time: with one torch thread it counts the work of this process and not its waits
for a loaded core.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from common import gemm_peak_gflops, header  # noqa: E402

STACKABLE = ("ba", "doe-flow", "gm-flow", "club", "l1out", "flo", "minde-c", "minde-j", "fmmi-c", "fmmi-j")


def _clock(f):
    """(result, wall seconds, CPU seconds) of ``f()``."""
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - w, time.process_time() - c


def _cell_ways(name: str, data: list, seeds: list[int]) -> dict:
    """The two ways to estimate the cell: name -> a function returning the values (nats)."""
    import mibench
    from mibench.estimators import ESTIMATORS

    if name == "infonce":
        return {"one at a time": lambda: [mibench.estimate(x, y, estimator="infonce", seed=s, units="nats").mi_raw
                                          for (x, y), s in zip(data, seeds)]}
    est = ESTIMATORS.get(name).obj().with_settings(device="cpu")

    def batched():
        members = est.estimate_members(data, seeds, stacked=True)
        assert all(m.batched for m in members), f"{name} did not stack"
        return [m.value for m in members]

    return {"one at a time": lambda: [est.estimate(x, y, seed=s) for (x, y), s in zip(data, seeds)],
            "batched": batched}


def whole_cells(names: list[str], data: list, seeds: list[int], rounds: int) -> list[str]:
    lines = ["", "## 1. Whole cells: three seeds, one at a time vs batched (median over rounds)", "",
             f"{'estimator':<10} {'way':<14} {'wall s':>8} {'cpu s':>8} {'ratio wall':>10} {'ratio cpu':>9}"
             "  values (nats) per seed"]
    for name in names:
        ways = _cell_ways(name, data, seeds)
        times = {w: [] for w in ways}
        values = {}
        for r in range(rounds):
            for w in (list(ways) if r % 2 == 0 else list(ways)[::-1]):
                values[w], wall, cpu = _clock(ways[w])
                times[w].append((wall, cpu))
                print(f"  {name} round {r} {w}: {wall:.1f} s", file=sys.stderr, flush=True)
        med = {w: (statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts)) for w, ts in times.items()}
        base = med["one at a time"]
        for w, (wall, cpu) in med.items():
            ratio = f"{base[0] / wall:>10.2f} {base[1] / cpu:>9.2f}" if w != "one at a time" else f"{'':>10} {'':>9}"
            vals = " ".join(f"{v:.4f}" for v in values[w])
            lines.append(f"{name:<10} {w:<14} {wall:>8.1f} {cpu:>8.1f} {ratio}  {vals}")
        if "batched" in values:
            diff = max(abs(a - b) for a, b in zip(values["one at a time"], values["batched"]))
            lines.append(f"{'':<10} max |batched - one at a time| = {diff:.2e} nats")
    return lines


def _step_pair(name: str, members: int = 3):
    """One training step of trained sample estimator ``name``: (one member, ``members`` stacked, one member
    through the stacked layers, one member with torch's default Adam)."""
    from mibench.critics.kernels import make_adam
    from mibench.estimators import ESTIMATORS
    from mibench.estimators.members import stack_members

    est = ESTIMATORS.get(name).obj()

    def build(seed):
        torch.manual_seed(seed)
        return est.models(5, 5)

    single, nets, alone, looped = build(0), [build(s) for s in range(members)], build(0), build(0)
    folds = {k: stack_members([m[k] for m in nets]) for k in nets[0]}
    fold1 = {k: stack_members([m]) for k, m in alone.items()}
    x, y = torch.randn(members * 256, 5), torch.randn(members * 256, 5)
    # Adam as the estimators train (fused where torch has it), and torch's default (per-parameter
    # loops) for the 'foreach Adam' column
    opts = [make_adam([p for m in ms.values() for p in m.parameters()], lr=1e-3) for ms in (single, folds, fold1)]
    opts.append(torch.optim.Adam([p for m in looped.values() for p in m.parameters()], lr=1e-3))

    def step(models, opt, xb, yb, m):
        total = sum(est.loss(k, f, xb, yb).reshape(m, -1).mean(1) for k, f in models.items()).sum()
        opt.zero_grad()
        total.backward()
        opt.step()

    return ((lambda: step(single, opts[0], x[:256], y[:256], 1)), (lambda: step(folds, opts[1], x, y, members)),
            (lambda: step(fold1, opts[2], x[:256], y[:256], 1)), (lambda: step(looped, opts[3], x[:256], y[:256], 1)))


def _member_mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A batched matrix product through the route the stacked layers take (oneDNN's batched matmul where
    :func:`mibench.critics.kernels.strided_mm_is_fp32`, else aten's ``bmm``)."""
    from mibench.critics import kernels

    return kernels._mm_via_onednn(a, b) if kernels.strided_mm_is_fp32() else torch.bmm(a, b)


class _MemberPairMLP(torch.autograd.Function):
    """The joint critic's pair node (``kernels._PairMLP``: ``relu(hx + hy)``, a hidden layer, one output)
    for S members at once, written the same way: one autograd node, each ReLU's backward in place, the
    output layer's input gradient as a broadcast product; every product batched over the members.
    ``hx`` (S, G, B, 1, h), ``hy`` (S, G, 1, B, h), weights (S, out, in), biases (S, out)."""

    @staticmethod
    def forward(ctx, hx, hy, w2, b2, w3, b3):
        h1 = torch.add(hx, hy).relu_()
        shape = h1.shape
        h1 = h1.view(shape[0], -1, shape[-1])
        h2 = _member_mm(h1, w2.transpose(1, 2)).add_(b2.unsqueeze(1)).relu_()
        out = _member_mm(h2, w3.transpose(1, 2)).add_(b3.unsqueeze(1))
        ctx.save_for_backward(h1, h2, w2, w3)
        ctx.shapes = hx.shape, hy.shape, shape
        return out.view(*shape[:-1])

    @staticmethod
    def backward(ctx, grad):
        h1, h2, w2, w3 = ctx.saved_tensors
        hx_shape, hy_shape, shape = ctx.shapes
        g = grad.reshape(shape[0], -1, 1)
        grad_w3, grad_b3 = _member_mm(g.transpose(1, 2), h2), g.sum(1)
        g = g * w3
        g = torch.ops.aten.threshold_backward.grad_input(g, h2, 0.0, grad_input=g)
        grad_w2, grad_b2 = _member_mm(g.transpose(1, 2), h1), g.sum(1)
        g = _member_mm(g, w2)
        g = torch.ops.aten.threshold_backward.grad_input(g, h1, 0.0, grad_input=g).view(shape)
        return g.sum_to_size(hx_shape), g.sum_to_size(hy_shape), grad_w2, grad_b2, grad_w3, grad_b3


def _infonce_step_pair(members: int = 3, hidden: int = 64, blocks: int = 8, block: int = 32):
    """infonce's training step (joint critic, one hidden layer, the InfoNCE bound on 32 x 32 blocks): one
    critic as ``mibench.estimate`` trains it (oneDNN GEMMs, the fused pair node, fused Adam), ``members``
    critics stacked (the stacked form a batched infonce would take: the first layer through
    ``member_linear``, the pairs through :class:`_MemberPairMLP`, one fused Adam over the stacked
    weights), and one critic through that stacked form."""
    from mibench.critics import make_critic
    from mibench.critics.kernels import make_adam, member_linear
    from mibench.estimators import make_estimator

    head = make_estimator("infonce")
    critics = []
    for seed in range(members):
        torch.manual_seed(seed)
        critics.append(make_critic("joint", 5, 5, hidden, 1, 32))
    net = critics[0]
    opt = make_adam(list(net.parameters()), 2e-3)
    xs, ys = torch.randn(members, blocks * block, 5), torch.randn(members, blocks * block, 5)

    def single():
        loss, _ = head(net.block_scores(xs[0].view(blocks, block, 5), ys[0].view(blocks, block, 5)))
        opt.zero_grad()
        loss.mean().backward()
        opt.step()

    def stacked_form(parts):
        s = len(parts)
        layers = [[m for m in c.net if hasattr(m, "bias")] for c in parts]

        def stack(get):
            return torch.nn.Parameter(torch.stack([get(ls).detach() for ls in layers]).clone())

        wx, wy, b1 = stack(lambda ls: ls[0].weight_x), stack(lambda ls: ls[0].weight_y), stack(lambda ls: ls[0].bias)
        w2, b2, w3, b3 = (stack(lambda ls, i=i, k=k: getattr(ls[i], k)) for i, k in ((1, "weight"), (1, "bias"),
                                                                                      (2, "weight"), (2, "bias")))
        opt_s = make_adam([wx, wy, b1, w2, b2, w3, b3], 2e-3)
        x, y = xs[:s], ys[:s]

        def step():
            hx = member_linear(x, wx, b1).view(s, blocks, block, 1, hidden)
            hy = member_linear(y, wy, None).view(s, blocks, 1, block, hidden)
            scores = _MemberPairMLP.apply(hx, hy, w2, b2, w3, b3).view(s * blocks, block, block)
            loss, _ = head(scores)
            opt_s.zero_grad()
            loss.mean().backward()
            opt_s.step()
        return step

    return single, stacked_form(critics), stacked_form(critics[:1]), None


def _alternating(ways: dict, rounds: int, calls: int = 20) -> dict:
    """name -> (wall, CPU) seconds per call of each of ``ways``: after 5 warm-up calls each, the medians of
    ``rounds`` rounds in which every way runs ``calls`` calls in turn (so that a load change hits all alike)."""
    for f in ways.values():
        for _ in range(5):
            f()
    res = {k: [] for k in ways}
    for _ in range(rounds):
        for key, f in ways.items():
            _, wall, cpu = _clock(lambda: [f() for _ in range(calls)])
            res[key].append((wall / calls, cpu / calls))
    return {k: (statistics.median(t[0] for t in v), statistics.median(t[1] for t in v)) for k, v in res.items()}


def _flops(f) -> int:
    """Floating-point operations of the matrix products in one call of ``f`` (forward and backward),
    counted by torch's FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        f()
    return int(mode.get_total_flops())


def _per_call(f, rounds: int = 7, calls: int = 200) -> float:
    """Seconds per call of ``f``: after 20 warm-up calls, the median of ``rounds`` rounds of ``calls``."""
    for _ in range(20):
        f()
    return statistics.median(_clock(lambda: [f() for _ in range(calls)])[1] for _ in range(rounds)) / calls


def _gemm_rates(rounds: int = 7) -> dict:
    """FLOP/s of this thread on 256 x 256 x 256 matrix products, the size of these networks' hidden
    layers on a 256-pair batch, by route: one product through aten (an ``nn.Linear``'s route) and
    oneDNN's linear (:func:`common.gemm_peak_gflops`), three members' products through aten's ``bmm``
    and :func:`mibench.critics.kernels.member_linear` (the stacked layers' route)."""
    from mibench.critics.kernels import member_linear

    names = {"aten": "aten linear", "onednn": "oneDNN linear"}
    rates = {names[k]: v * 1e9 for k, v in gemm_peak_gflops(256, 256, 256).items()}
    a3, b3 = torch.randn(3, 256, 256), torch.randn(3, 256, 256)
    for name, f in (("aten bmm, 3 members", lambda: torch.bmm(a3, b3.transpose(1, 2))),
                    ("member_linear, 3 members", lambda: member_linear(a3, b3, None))):
        rates[name] = 3 * 2 * 256 ** 3 / _per_call(f, rounds)
    return rates


def member_routes(rounds: int = 7) -> list[str]:
    """Three members' layers on 256 rows each, ``in -> out`` wide, forward and backward (the input's, the
    weight's and the bias's gradients), through aten's ``baddbmm`` and through the oneDNN route of
    :func:`mibench.critics.kernels.member_linear` (forced): where the route pays
    (:func:`~mibench.critics.kernels.member_layer_on_onednn`)."""
    from mibench.critics import kernels

    lines = ["", "## member layers by route: forward + backward of 3 members x 256 rows (median of rounds of "
                 "200 calls, microseconds)", "",
             f"{'in -> out':<12} {'aten baddbmm':>12} {'oneDNN':>8} {'oneDNN / aten':>13}  member_linear takes"]
    for d_in, d_out in ((5, 128), (10, 128), (128, 10), (128, 5), (128, 1), (32, 32), (64, 64), (64, 10),
                        (128, 128), (256, 256)):
        x = torch.randn(3, 256, d_in, requires_grad=True)
        w, b = torch.randn(3, d_out, d_in, requires_grad=True), torch.randn(3, d_out, requires_grad=True)
        g = torch.randn(3, 256, d_out)

        def both(f):
            return lambda: torch.autograd.grad(f(), (x, w, b), g)

        ways = {"aten": both(lambda: torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))),
                "onednn": both(lambda: kernels._MemberLinear.apply(x, w, b))}
        us = {name: 1e6 * _per_call(f, rounds) for name, f in ways.items()}
        takes = "oneDNN" if kernels.member_layer_on_onednn(d_in, d_out) else "aten"
        lines.append(f"{f'{d_in} -> {d_out}':<12} {us['aten']:>12.1f} {us['onednn']:>8.1f} "
                     f"{us['onednn'] / us['aten']:>13.2f}  {takes}")
    return lines


def steps(names: list[str], rounds: int) -> list[str]:
    rates = _gemm_rates()
    rate = max(rates["aten linear"], rates.get("oneDNN linear", 0.0))
    fastest = max(rates.values())
    lines = ["", "## 2. One training step: one member vs three stacked (median of rounds of 20 steps)", "",
             "256 x 256 x 256 matrix products on this thread, GFLOP/s: "
             + ", ".join(f"{k} {v / 1e9:.1f}" for k, v in rates.items()), "",
             f"a 256 x 256 x 256 matrix product runs at {rate / 1e9:.1f} GFLOP/s on this thread (the faster of "
             "aten's and oneDNN's linear); 'arithmetic ms' is one member's step's matrix-product FLOPs "
             "(forward and backward) at that rate, and 'ceiling' the step's time over it: three stacked "
             "members do three times those FLOPs, so stacking cannot make a cell more than that much faster. "
             "'1 on stacked ms' is one member through the stacked network's layers (the same kernels as the "
             "3 stacked), and 'ratio same kernels' three such steps over the 3 stacked. Every step uses Adam as "
             "the estimators train (fused where torch has it) but '1 foreach Adam ms': one member with "
             "torch's default Adam (per-parameter loops), and 'fused gain' that step over the first column's. "
             "'ceiling at 3': three one-member steps over the least time three stacked members can take: "
             "the one-member step's time outside its matrix products (the step less its FLOPs at aten "
             f"linear's {rates['aten linear'] / 1e9:.1f} GFLOP/s, the route an nn.Linear takes), which the stacked "
             "step repeats at least once, plus three members' FLOPs at the fastest rate above "
             f"({fastest / 1e9:.1f} GFLOP/s); a one-member step's smaller products run slower than aten's "
             "256-wide rate, so its time outside them is smaller and the true ceiling lower still",
             "",
             f"{'estimator':<10} {'1 member ms':>11} {'3 stacked ms':>12} {'ratio wall':>10} {'ratio cpu':>9} "
             f"{'arithmetic ms':>13} {'ceiling':>7} {'ceiling at 3':>12} {'1 on stacked ms':>15} "
             f"{'ratio same kernels':>18} {'1 foreach Adam ms':>17} {'fused gain':>10}"]
    for name in names:
        one, three, alone, looped = _infonce_step_pair() if name == "infonce" else _step_pair(name)
        ways = {"one": one, "three": three, **({"alone": alone} if alone is not None else {}),
                **({"looped": looped} if looped is not None else {})}
        med = _alternating(ways, rounds)
        # one member's products, counted on its stacked form where it has one (the same products as its own
        # step; the counter does not see oneDNN's linear, which infonce's own step takes); after the warm-up:
        # a first call may time kernel routes
        flops = _flops(alone if alone is not None else one)
        arithmetic = flops / rate
        same = (f"{med['alone'][0] * 1e3:>15.2f} {3 * med['alone'][0] / med['three'][0]:>18.2f}" if "alone" in med
                else f"{'':>15} {'':>18}")
        same += f" {med['looped'][0] * 1e3:>17.2f} {med['looped'][0] / med['one'][0]:>9.2f}x" if "looped" in med else ""
        outside = max(med['one'][0] - flops / rates["aten linear"], 0.0)
        at_three = 3 * med['one'][0] / (outside + 3 * flops / fastest)
        lines.append(f"{name:<10} {med['one'][0] * 1e3:>11.2f} {med['three'][0] * 1e3:>12.2f} "
                     f"{3 * med['one'][0] / med['three'][0]:>10.2f} {3 * med['one'][1] / med['three'][1]:>9.2f} "
                     f"{arithmetic * 1e3:>13.2f} {med['one'][0] / arithmetic:>6.1f}x {at_three:>11.2f}x {same}")
    return lines


def level_runs(names: list[str], n: int, levels: str, seeds: list[int]) -> list[str]:
    """Whole sample runs (``run_sample``, as ``mibench run --n N --mi LEVELS --seeds ...`` runs them) of a
    5 x 5 correlated Gaussian at every level of ``levels`` and seed: the run as it stacks each estimator's
    (level, seed) pairs in one cell, against the same run with that estimator training one member at a
    time (its ``batch_members_on`` emptied), once each."""
    from mibench.estimators import ESTIMATORS
    from mibench.protocols.sample.run import SampleConfig, prepare, run_sample

    count = len(levels.split(",")) * len(seeds)
    lines = ["", f"## 4. Whole sample runs: gaussian dim 5, n = {n}, levels {levels} bits, seeds "
                 f"{','.join(map(str, seeds))} ({count} members), stacked vs one at a time (one run each)", "",
             f"{'estimator':<10} {'one at a time s':>15} {'stacked s':>9} {'ratio':>6}  max |difference| (bits)  "
             "largest sd over seeds at a level, one at a time (bits)"]
    for name in names:
        cfg = SampleConfig(task="gaussian", task_params={"dim": 5}, estimators=[name], mi=levels, n=n, seeds=seeds,
                           timeout=None, device="cpu")
        cls = type(ESTIMATORS.get(name).obj())
        stacked, wall_stacked, _ = _clock(lambda: run_sample(prepare(cfg), plot=False))
        old = cls.batch_members_on
        cls.batch_members_on = ()
        try:
            alone, wall_alone, _ = _clock(lambda: run_sample(prepare(cfg), plot=False))
        finally:
            cls.batch_members_on = old
        diff = max(abs(a["estimate"] - b["estimate"]) for a, b in zip(stacked.rows, alone.rows))
        by_level = {}
        for r in alone.rows:
            by_level.setdefault(r["true_mi"], []).append(r["estimate"])
        spread = max(statistics.stdev(v) for v in by_level.values() if len(v) > 1)
        ratio = wall_alone / wall_stacked
        lines.append(f"{name:<10} {wall_alone:>15.1f} {wall_stacked:>9.1f} {ratio:>6.2f}  {diff:>24.2e}  {spread:.2e}")
        print(f"  {name}: {wall_alone:.1f} s one at a time, {wall_stacked:.1f} s stacked", file=sys.stderr, flush=True)
    return lines


def member_counts(names: list[str], counts: tuple, rounds: int) -> list[str]:
    """One training step of ``counts`` members stacked against as many one-member steps: a sample run
    stacks every (level, seed) pair it misses (``mibench run --mi 1,2,4,8 --seeds 0,1,2``: 12 members)."""
    lines = ["", "## 3. One training step by members stacked: that many one-member steps over one stacked step "
                 f"(median of {rounds} rounds of 20 steps, the two alternating; '1 member ms': the median over "
                 "the counts)", "",
             f"{'estimator':<10} {'1 member ms':>11} "
             + " ".join(f"{f'{m} stacked ms':>15} {'ratio':>6}" for m in counts)]
    for name in names:
        singles, cells = [], []
        for m in counts:
            single, stacked, _, _ = _step_pair(name, members=m)
            med = _alternating({"single": single, "stacked": stacked}, rounds)
            one, sec = med["single"][0], med["stacked"][0]
            singles.append(one)
            cells.append(f"{sec * 1e3:>15.2f} {m * one / sec:>6.2f}")
        lines.append(f"{name:<10} {statistics.median(singles) * 1e3:>11.2f} " + " ".join(cells))
    return lines


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="multinormal-dense-5-5-0.5")
    p.add_argument("--n", type=int, default=5000)
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--estimators", default="infonce,ba,doe-flow,minde-c,fmmi-c")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--steps-rounds", type=int, default=7)
    p.add_argument("--out", default=None)
    p.add_argument("--steps-only", action="store_true", help="section 2 alone")
    p.add_argument("--routes-only", action="store_true", help="the member layers' routes alone")
    p.add_argument("--members-only", action="store_true", help="section 3 alone")
    p.add_argument("--runs-only", action="store_true", help="section 4 alone")
    p.add_argument("--levels", default="0.5,1,2,4", help="section 4's levels (bits)")
    args = p.parse_args(argv)
    from mibench.protocols.sample.run import draw_dataset
    from mibench.tasks import make_task

    torch.set_num_threads(1)        # as every estimate here runs (HeldOutEstimator, mibench.estimate)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        header("bench_batched_seeds.py: a BMI 5x5 cell's three seeds, batched vs one at a time")
    print(buf.getvalue(), end="", flush=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    task = make_task(args.task)
    data = [draw_dataset(task, args.n, task.mi_bits, s) for s in seeds]
    names = args.estimators.split(",")
    lines = [f"# machine: nproc {os.cpu_count()}, {_uptime()} (start)",
             f"# task {args.task} (true MI {task.mi_bits:.4f} bits), n = {args.n}, seeds {args.seeds}, "
             f"default settings, 1 torch thread"]
    if args.routes_only:
        lines += member_routes()
    elif args.members_only:
        lines += member_counts([n for n in names if n in STACKABLE], (3, 6, 12), args.steps_rounds)
    elif args.runs_only:
        lines += level_runs([n for n in names if n in STACKABLE], args.n, args.levels, seeds)
    else:
        if not args.steps_only:
            lines += whole_cells(names, data, seeds, args.rounds)
        lines += steps(["infonce", *STACKABLE], args.steps_rounds)
        if not args.steps_only:
            lines += member_counts([n for n in names if n in STACKABLE], (3, 6, 12), args.steps_rounds)
    lines += ["", f"# machine: {_uptime()} (end)"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(buf.getvalue() + text + "\n")


def _uptime() -> str:
    try:
        return "uptime:" + subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip().split("up", 1)[1]
    except (OSError, IndexError):
        return "uptime unknown"


if __name__ == "__main__":
    main()
