#!/usr/bin/env python
"""Estimators' accuracy against the analytic MI, one row per (case, seed, estimator), then a summary.

mibench's estimators (and peer libraries' stock ones) on datasets whose true MI is known in closed form.

Estimators (``--estimators``, comma-separated; each row is named as given):

* ``estimate``: ``mibench.estimate`` with its defaults (``--preprocess`` and ``--device`` passed on);
* a critic bound of the registry (``infonce``, ``smile-5``, ``smile-adaptive``, ``nishiyama``, ``jsd-kl``,
  ...): ``mibench.estimate(x, y, estimator=NAME)`` with its data-sized defaults;
* a sample estimator of the registry (``ksg``, ``gaussian``, ``histogram``, ``doe-flow``, ``ba``,
  ``minde-c``, ...): its ``ESTIMATORS`` entry's ``.estimate(x, y, seed=seed)``, trained for ``--budget``;
* ``--peer NAME=PYTHON[:EST,...]`` (repeatable) adds a peer library's estimators (rows ``NAME:EST``; by
  default its stock ones: bmi infonce,ksg; torch-mist smile,infonce; latentmi lmi), run on the same data
  (.npz) by ``benchmarks/peers/run_<NAME>.py`` under that environment's python (peers/comparison.run_peer).

Cases (``--cases``, comma-separated):

* ``distributions``: every case of ``mibench.tasks.distributions.SUITE`` at ``--mi`` nats;
* ``levels``: gauss-dense-DxD at 1, 2, 4 and 6 bits, student-t-dof5-DxD and asinh-DxD at 2 bits
  (D = ``--dim``; rows gauss-1 ... asinh-2);
* ``correlated``, ``correlated-cubic``: X ~ N(0, I_d), Y = rho X + sqrt(1 - rho^2) N(0, I_d) for d in
  ``--dims`` (truth -(d/2) log(1 - rho^2) nats; ``-cubic``: Y -> Y^3, the same MI), numpy default_rng(seed);
* ``setup:NAME``: a sample-protocol dataset of mibench.evaluate's suites (gaussian, vision at 4 bits; text,
  text-offshelf at 1 bit; mixed = vision X, text Y, ds 2 at 1 bit), drawn once with
  ``mibench.protocols.sample.run.draw_dataset`` and kept as .npz under ``--data-cache``;
* ``TASK`` / ``TASK@BITS``: one distributions task at ``--mi`` nats / at BITS bits.

One dataset of ``--n`` pairs per (case, seed), the same for every estimator; the estimator's seed is the
data seed.  ``--budget`` trains the registry's sample estimators: ``default`` (their registry settings),
``short`` (ba, gm-flow, club, l1out, hybrid-resampled 300 steps, the other generative estimators and flo
400; eval_every 50) or a number of steps (eval_every min(50, steps)); critic bounds always take
mibench.estimate's data-sized defaults.  ``--ksg-max-dim D`` skips ksg above dx + dy = D.

Output (``--units``): a header (date, torch, threads, load, the command), one row per (case, seed,
estimator) with estimate, truth, error, seconds, and mibench.estimate's standard error, status and steps
and the parameter count where the estimator has them; then per (estimator, case) the mean +- sample sd
over seeds, how many seeds are within the target |error| <= max(0.1, 10 % of the truth) (in the table's
unit), and a note where a lower bound's mean exceeds the truth by more than its sd ("VIOLATION" on a
Gaussian case) or an upper bound's mean lies below the truth; last, how often the first estimator is
closer to the truth than each of the others.

    OMP_NUM_THREADS=1 python benchmarks/bench_accuracy.py [--estimators estimate,ksg] [--cases distributions]
        [--n 10000] [--seeds 0,1,2] [--budget default] [--units bits] [--threads 1]
        [--peer bmi=$BMI_PYTHON] [--out benchmarks/results/FILE.txt]

The committed files this script's flags reproduce (written by its predecessors, each in its own column
layout; benchmarks/README.md lists them all):

* ``accuracy_levels.txt``: ``--cases levels --dim 3 --n 2000 --seeds 0,1,2,3,4 --budget short --estimators
  nishiyama,jsd-kl,ba,gm-flow,club,l1out,flo,mienf,mienf-tridiag,minde-c,minde-j,fmmi-c,fmmi-j``, then
  ``--estimators ba,gm-flow,l1out,minde-c,minde-j`` and ``--estimators hybrid-resampled`` (its later sections);
* ``sample_estimators.txt``: ``--cases correlated --dims 1,5 --seeds 0,1,2 --units nats --digits 4 --threads 2
  --estimators doe-flow`` (and ksg,gaussian,histogram);
* ``estimate_seeds*.txt``: ``--cases distributions --seeds 0,1,2,3,4 --units nats --estimators estimate``
  (``--preprocess zscore``; ``--estimators smile-adaptive``), with the defaults of their date;
* ``estimate.txt``: ``--cases distributions --seeds 0 --units nats --estimators estimate,ksg --ksg-max-dim 20
  --peer bmi=$BMI_PYTHON``;
* ``estimate_setups_*.txt``: ``--cases setup:gaussian,setup:vision,setup:text,setup:text-offshelf
  --seeds 0,1,2 --estimators estimate`` (peers: ``--peer torch-mist=$TORCH_MIST_PYTHON --peer
  bmi=$BMI_PYTHON:infonce``; ``--peer latentmi=$LATENTMI_PYTHON``).
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

import common  # noqa: F401  (puts the repository on sys.path)
import numpy as np
import torch
from peers.comparison import run_peer, table_writer

import mibench
from mibench.errors import MibenchError
from mibench.estimators.kinds import LOWER_BOUND, SAMPLE_KINDS, UPPER_BOUND
from mibench.estimators.registry import ESTIMATORS, estimator_bound, estimator_kind
from mibench.tasks.distributions import SUITE, draw

SHORT_STEPS = {"ba": 300, "gm-flow": 300, "club": 300, "l1out": 300, "flo": 400, "mienf": 400,
               "mienf-tridiag": 400, "minde-c": 400, "minde-j": 400, "fmmi-c": 400, "fmmi-j": 400,
               "hybrid-resampled": 300}
PEER_STOCK = {"bmi": ["infonce", "ksg"], "torch-mist": ["smile", "infonce"], "latentmi": ["lmi"]}
SETUPS = {"gaussian": ("gaussian", {}, 4.0), "vision": ("vision", {}, 4.0), "text": ("text", {"ds": 2}, 1.0),
          "text-offshelf": ("text", {"ds": 2, "encoder": "all-MiniLM-L6-v2"}, 1.0),
          "mixed": ("mixed", {"ds": 2}, 1.0)}


@dataclass
class Case:
    """One row group: ``data(seed)`` -> (x, y, truth in nats, .npz path or None)."""

    label: str
    what: str
    data: object
    gaussian: bool


def distributions_case(task: str, label: str, *, bits: float | None = None, nats: float | None = None,
                       n: int) -> Case:
    def data(seed):
        x, y, truth = draw(task, n, mi_bits=bits, mi_nats=nats, seed=seed)
        return x, y, truth, None
    level = f"{bits:g} bits" if bits is not None else f"{nats:g} nats"
    return Case(label, f"{task} at {level}", data, task.startswith("gauss"))


def correlated_case(d: int, rho: float, cubic: bool, n: int) -> Case:
    def data(seed):
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((n, d))
        y = rho * x + math.sqrt(1 - rho ** 2) * rng.standard_normal((n, d))
        return x, y ** 3 if cubic else y, -0.5 * d * math.log(1 - rho ** 2), None
    label = f"corr-d{d}" + ("-cubic" if cubic else "")
    return Case(label, f"d = {d}, rho {rho:g}" + (", Y -> Y^3" if cubic else ""), data, not cubic)


def setup_case(name: str, n: int, cache: Path) -> Case:
    """The sample-protocol dataset of ``name``, drawn once and kept under ``cache`` (peers read the file)."""
    if name not in SETUPS:
        raise MibenchError(f"unknown setup {name!r}; known: {', '.join(SETUPS)}")
    task, params, bits = SETUPS[name]

    def data(seed):
        tag = ""
        if task in ("text", "mixed") and "encoder" not in params:   # the default text encoder has changed: name it
            from mibench.data.embeddings import DEFAULT_ENCODER
            tag = f"_{DEFAULT_ENCODER}"
        path = cache / f"{name}{tag}_n{n}_s{seed}.npz"
        if not path.exists():
            from mibench.protocols.sample.run import draw_dataset
            from mibench.tasks import make_task

            x, y = draw_dataset(make_task(task, device="cpu", **params), n, bits, seed)
            cache.mkdir(parents=True, exist_ok=True)
            np.savez(path, x=x.astype(np.float32), y=y.astype(np.float32), seed=seed, truth_bits=bits)
        d = np.load(path)
        return d["x"].astype(np.float64), d["y"].astype(np.float64), bits * math.log(2), str(path)
    return Case(name, f"{task} {params} at {bits:g} bits (sample protocol)", data, task == "gaussian")


def parse_cases(args) -> list[Case]:
    out: list[Case] = []
    for spec in filter(None, args.cases.split(",")):
        if spec == "distributions":
            out += [distributions_case(t, t, nats=args.mi, n=args.n) for t in SUITE]
        elif spec == "levels":
            d = args.dim
            out += [distributions_case(f"gauss-dense-{d}x{d}", f"gauss-{b}", bits=b, n=args.n) for b in (1, 2, 4, 6)]
            out += [distributions_case(f"student-t-dof5-{d}x{d}", "student-t-2", bits=2.0, n=args.n),
                    distributions_case(f"asinh-{d}x{d}", "asinh-2", bits=2.0, n=args.n)]
        elif spec in ("correlated", "correlated-cubic"):
            out += [correlated_case(int(d), args.rho, spec.endswith("cubic"), args.n) for d in args.dims.split(",")]
        elif spec.startswith("setup:"):
            out.append(setup_case(spec.removeprefix("setup:"), args.n, Path(args.data_cache)))
        elif "@" in spec:
            task, bits = spec.split("@")
            out.append(distributions_case(task, spec, bits=float(bits), n=args.n))
        else:
            out.append(distributions_case(spec, spec, nats=args.mi, n=args.n))
    return out


def budget_steps(name: str, budget: str) -> int | None:
    """Training steps of a sample estimator under ``--budget`` (None: its registry setting)."""
    if budget == "default":
        return None
    return SHORT_STEPS.get(name) if budget == "short" else int(budget)


def mibench_estimator(name: str, args):
    """``run(x, y, seed) -> (nats, {stderr, status, steps, params})`` for a mibench name."""
    kw = {"preprocess": args.preprocess} if args.preprocess else {}
    if name != "estimate" and estimator_kind(name) in SAMPLE_KINDS:
        steps = budget_steps(name, args.budget)

        def run(x, y, seed):
            est = ESTIMATORS.get(name).obj()
            if steps is not None and hasattr(est, "training"):
                est.training = replace(est.training, steps=steps, eval_every=min(50, steps))
            nats = est.estimate(x, y, seed=seed)
            return nats, {"params": getattr(est, "n_parameters", None)}
        return run
    if name != "estimate":
        kw["estimator"] = name

    def run_estimate(x, y, seed):
        r = mibench.estimate(x, y, seed=seed, units="nats", device=args.device, **kw)
        return r.mi, {"stderr": r.mi_stderr, "status": r.status, "steps": r.steps_run, "params": r.n_parameters}
    return run_estimate


def bound_of(name: str) -> str | None:
    """The registry's lower / upper bound for a name (None for ``estimate`` and peers)."""
    return None if name == "estimate" or ":" in name else estimator_bound(name)


def command_line(ap: argparse.ArgumentParser, args) -> str:
    """The command with its non-default flags; peer pythons, output and cache paths left out (no machine paths)."""
    defaults = vars(ap.parse_args([]))
    parts = ["python benchmarks/bench_accuracy.py"]
    for key, value in vars(args).items():
        if key in ("out", "data_cache") or value == defaults[key]:
            continue
        flag = "--" + key.replace("_", "-")
        if key == "peer":
            parts += [f"--peer {p.split('=')[0]}=${p.split('=')[0].upper().replace('-', '_')}_PYTHON"
                      + (f":{p.split(':', 1)[1]}" if ":" in p.split("=", 1)[1] else "") for p in value]
        else:
            parts.append(flag if value is True else f"{flag} {value}")
    return " ".join(parts)


def within(err: float, truth: float) -> bool:
    """The target of mibench.estimate's validation: within 0.1 or 10 % of the truth (the table's unit)."""
    return abs(err) <= max(0.1, 0.1 * abs(truth))


def row_line(label: str, seed: int, name: str, v: float, truth: float, secs: float, extra: dict, digits: int) -> str:
    """One table row ('-' where the estimator does not report a column), with the load average now."""
    def cell(key, fmt: str, width: int) -> str:
        return f"{'-':>{width}}" if extra.get(key) is None else f"{extra[key]:>{width}{fmt}}"
    w = digits + 6
    return (f"{label:<22}{seed:>5}  {name:<20}{v:>{w}.{digits}f}{truth:>{w}.{digits}f}{v - truth:>+{w}.{digits}f}"
            f"{secs:>9.1f}"
            f"{cell('stderr', '.3f', 8)} {extra.get('status', '-'):<17}{cell('steps', 'd', 6)}{cell('params', 'd', 8)}"
            f"{os.getloadavg()[0]:>7.2f}")


def measure(label: str, seed: int, x, y, runners: dict, args, emit) -> dict:
    """{name: (nats, seconds, extras)} of every mibench estimator on one dataset; for a refusal (MibenchError)
    or a ksg above --ksg-max-dim, {name: what happened}."""
    row = {}
    for name, run in runners.items():
        if name.startswith("ksg") and args.ksg_max_dim and x.shape[1] + y.shape[1] > args.ksg_max_dim:
            row[name] = f"skipped: dx + dy > {args.ksg_max_dim}"
            continue
        t0 = time.perf_counter()
        try:
            nats, extra = run(x, y, seed)
        except MibenchError as exc:
            row[name] = f"refused: {exc}"
            continue
        row[name] = (nats, time.perf_counter() - t0, extra)
    return row


def measure_peers(peers: dict, x, y, seed: int, path: str, args) -> dict:
    """{"peer:estimator": (nats, seconds, {})} from each peer's runner on the .npz at ``path`` (written first
    when it does not exist yet)."""
    if not Path(path).exists():
        np.savez(path, x=x, y=y)
    row = {}
    for peer, (python, ests) in peers.items():
        got = run_peer(python, f"run_{peer.replace('-', '_')}.py", ests, path, timeout=args.peer_timeout,
                       options=["--seed", str(seed), "--device", args.peer_device])
        row.update({f"{peer}:{e}": (v[0], v[1], {}) for e, v in got.items()})
    return row


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--estimators", default="estimate", help="comma-separated (module docstring)")
    ap.add_argument("--cases", default="distributions", help="comma-separated (module docstring)")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--mi", type=float, default=1.0, help="true MI of the distributions cases without @BITS, nats")
    ap.add_argument("--dim", type=int, default=3, help="D of the 'levels' cases")
    ap.add_argument("--dims", default="1,5,10,20", help="d of the 'correlated' cases")
    ap.add_argument("--rho", type=float, default=0.5, help="rho of the 'correlated' cases")
    ap.add_argument("--budget", default="default", help="default, short or a number of steps (module docstring)")
    ap.add_argument("--units", choices=("bits", "nats"), default="bits")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of this process")
    ap.add_argument("--digits", type=int, default=3, help="decimals of the estimates in the rows")
    ap.add_argument("--preprocess", default=None, help="mibench.estimate's preprocess (default: its default)")
    ap.add_argument("--device", default="cpu", help="mibench.estimate's device (the committed figures are CPU's)")
    ap.add_argument("--ksg-max-dim", type=int, default=None, help="skip ksg above this dx + dy")
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=PYTHON[:EST,EST]",
                    help=f"a peer library run by its environment's python (stock estimators {PEER_STOCK})")
    ap.add_argument("--peer-timeout", type=float, default=1200.0,
                    help="seconds per peer call (one peer, all its estimators, one dataset); NaN past it")
    ap.add_argument("--peer-device", default="cpu", help="torch device passed to the peer runners")
    ap.add_argument("--data-cache", default=str(Path.home() / ".cache" / "mibench" / "bench_accuracy"),
                    help="where the setup: datasets are kept as .npz")
    ap.add_argument("--out", default=None, help="also write the output to this file")
    return ap


def header(ap, args, seeds, cases, emit) -> None:
    """Title, machine and load, settings, cases and the command line."""
    emit(f"# bench_accuracy: {__doc__.splitlines()[0]}")
    emit(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, torch {torch.__version__}, "
         f"{torch.get_num_threads()} torch thread(s), OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, "
         f"{os.cpu_count()} cores, load average at start {'%.2f %.2f %.2f' % os.getloadavg()}")
    emit(f"# n = {args.n}, seeds {seeds}, budget {args.budget}"
         + (f" {SHORT_STEPS} (eval_every 50)" if args.budget == "short" else "")
         + f", mibench.estimate on {args.device}{', preprocess ' + args.preprocess if args.preprocess else ''}; "
         f"{args.units}")
    emit("# cases: " + ", ".join(f"{c.label} = {c.what}" for c in cases))
    emit(f"# command: {command_line(ap, args)}")
    emit()


def main() -> int:
    ap = parser()
    args = ap.parse_args()
    if args.budget not in ("default", "short") and not args.budget.isdigit():
        ap.error(f"--budget takes default, short or a number of steps, not {args.budget!r}")
    torch.set_num_threads(args.threads)
    names = [n for n in args.estimators.split(",") if n]
    try:
        runners = {n: mibench_estimator(n, args) for n in names}
        cases = parse_cases(args)
    except MibenchError as e:
        ap.error(str(e))
    peers = {}
    for spec in args.peer:
        peer, _, rest = spec.partition("=")
        python, _, ests = rest.partition(":")
        peers[peer] = (python, ests.split(",") if ests else PEER_STOCK[peer])
    columns = names + [f"{p}:{e}" for p, (_, ests) in peers.items() for e in ests]
    seeds = [int(s) for s in args.seeds.split(",")]
    scale = 1.0 if args.units == "nats" else 1 / math.log(2)
    emit = table_writer(Path(args.out), []) if args.out else print
    header(ap, args, seeds, cases, emit)
    w = args.digits + 6
    emit(f"{'case':<22}{'seed':>5}  {'estimator':<20}{'estimate':>{w}}{'truth':>{w}}{'error':>{w}}{'seconds':>9}"
         f"{'stderr':>8} {'status':<17}{'steps':>6}{'params':>8}{'load1':>7}")
    results: dict[tuple[str, str], list[tuple[int, float, float, float]]] = {}
    truths: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            for seed in seeds:
                x, y, truth_nats, path = case.data(seed)
                truth = truth_nats * scale
                truths[case.label] = truth
                row = measure(case.label, seed, x, y, runners, args, emit)
                if peers:
                    path = path or str(Path(tmp) / f"{case.label}_s{seed}.npz")
                    row.update(measure_peers(peers, x, y, seed, path, args))
                for name in (n for n in columns if n in row):
                    if isinstance(row[name], str):
                        emit(f"{case.label:<22}{seed:>5}  {name:<20}{row[name]}")
                        continue
                    nats, secs, extra = row[name]
                    v = nats * scale
                    results.setdefault((name, case.label), []).append((seed, v, truth, secs))
                    emit(row_line(case.label, seed, name, v, truth, secs, extra, args.digits))
    summarize(results, truths, cases, columns, args.units, emit)
    emit(f"# load average at the end {'%.2f %.2f %.2f' % os.getloadavg()}")
    return 0


def summarize(results, truths, cases, columns, units, emit) -> None:
    emit()
    emit(f"# summary, {units}: mean +- sample sd over seeds; within = seeds with |error| <= max(0.1, 10 % of the "
         "truth); 'lower > truth' where a lower bound's mean exceeds the truth by more than its sd, 'upper < truth' "
         "where an upper bound's mean is below the truth")
    emit(f"{'estimator':<20}{'case':<22}{'mean':>8}{'sd':>8}{'truth':>8}{'error':>9}{'within':>8}{'s/est':>8}  note")
    for name in columns:
        for case in cases:
            rows = results.get((name, case.label))
            if not rows:
                continue
            vals = [v for _, v, _, _ in rows]
            m, truth = statistics.mean(vals), truths[case.label]
            sd = statistics.stdev(vals) if len(vals) > 1 else float("nan")
            note, bound = "", bound_of(name)
            if bound == LOWER_BOUND and m - truth > sd:
                note = "lower > truth" + (" (VIOLATION)" if case.gaussian else "")
                if name == "ba" and not case.gaussian:
                    note += " (Gaussian H(Y) only an upper bound here)"
            if bound == UPPER_BOUND and m < truth:
                note = "upper < truth"
            ok = sum(within(v - truth, truth) for v in vals)
            emit(f"{name:<20}{case.label:<22}{m:>8.3f}{sd:>8.3f}{truth:>8.3f}{m - truth:>+9.3f}{f'{ok}/{len(vals)}':>8}"
                 f"{statistics.mean(s for *_, s in rows):>8.1f}  {note}".rstrip())
    if len(columns) > 1:
        first = {(case, seed): abs(v - t) for (n, case), rows in results.items() if n == columns[0]
                 for seed, v, t, _ in rows}
        for other in columns[1:]:
            pairs = [(first[(case, seed)], abs(v - t)) for (n, case), rows in results.items() if n == other
                     for seed, v, t, _ in rows if (case, seed) in first and math.isfinite(v)]
            if pairs:
                emit(f"# {columns[0]} closer to the truth than {other} on {sum(a < b for a, b in pairs)}/{len(pairs)} "
                     "(case, seed) rows")


if __name__ == "__main__":
    sys.exit(main())
