"""``mibench run`` and ``mibench list``."""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path


#: task flags forwarded to the task factory when the user sets them (name -> type)
TASK_FLAGS = {
    "dim": int, "cubic": None, "ds": int, "layout": str, "side": int, "nuisance": float,
    "encoder": str, "data_dir": str, "n_per_class": int, "transform": str, "layer": str,
    "exclude_same_item": None,
}


def register_cli(sub) -> None:
    p = sub.add_parser("run", help="train estimators on a task and write a run directory",
                       description="Train the estimators' critics on a shared batch stream (one critic per training "
                                   "objective: JS and SMILE-tau share one); write config.json, "
                                   "estimates.csv, summary.csv and staircase.png (all estimates in bits).")
    p.add_argument("--task", default="gaussian", help="task name (see `mibench list`)")
    p.add_argument("--estimator", default="smile", help="estimator name(s), comma separated, or 'all' (default smile)")
    p.add_argument("--critic", default="joint", help="critic: inner, bilinear, separable, joint (default joint)")
    p.add_argument("--mi", default="stepwise", help="'stepwise' (2,4,6,8,10 bits), a number of bits, or a comma list")
    p.add_argument("--steps", type=int, default=20_000, help="training steps (default 20000)")
    p.add_argument("--batch-size", type=int, default=64, help="batch size K (default 64)")
    p.add_argument("--lr", type=float, default=5e-4, help="Adam learning rate (default 5e-4)")
    p.add_argument("--hidden", type=int, default=256, help="critic MLP width (default 256)")
    p.add_argument("--layers", type=int, default=2, help="critic depth: hidden layers between input and output layer (default 2)")
    p.add_argument("--embed", type=int, default=32, help="separable critic embedding size (default 32)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] | mps (default auto: CUDA if available, else CPU)")
    p.add_argument("--burn-in", type=int, default=0, help="steps skipped at the start of each MI level in the metrics")
    p.add_argument("--engine", default="auto", help="several joint critics: sequential | stacked (one batched pass) | auto")
    p.add_argument("--precision", default="fp32", help="critic arithmetic: fp32 (default) | bf16 (autocast, opt-in, "
                   "~1.5x faster on CPUs with AVX512-BF16) | tf32 (CUDA matmuls)")
    p.add_argument("--out", default=None, help="run directory (default results/runs/<readable name>)")
    p.add_argument("--no-plot", action="store_true", help="skip staircase.png")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.add_argument("--config", default=None, metavar="CONFIG_JSON",
                   help="re-run a recorded run exactly: its config.json (or run directory); flags given alongside "
                        "override it and are recorded in the new config.json under rerun_of")
    sp = p.add_argument_group("sample protocol (issue 12): --n draws a fixed dataset per MI level and seed")
    sp.add_argument("--n", type=int, default=None, help="sample protocol: n pairs per dataset (e.g. 10000); every "
                    "estimator returns one number per dataset; needed by black-box / generative estimators")
    sp.add_argument("--seeds", default=None, help="sample protocol: seeds, comma list or range (default 0,1,2)")
    sp.add_argument("--timeout", type=float, default=None, help="sample protocol: seconds per estimate before its "
                    "worker is killed and the estimate recorded as failed (default 600; 0 = in-process, no limit)")
    g = p.add_argument_group("task parameters (only those a task takes are accepted)")
    g.add_argument("--dim", type=int, help="gaussian: dimension d (default 10)")
    g.add_argument("--cubic", action="store_true", default=None, help="gaussian: y -> y^3 (MI unchanged)")
    g.add_argument("--ds", type=int, help="vision/text/mixed: number of binary information sources")
    g.add_argument("--layout", help="vision: CxRxC patch grid, e.g. 1x2x5 (3 channels = RGB stacking)")
    g.add_argument("--side", type=int, help="vision: image side after resizing (dr = channels * side^2; default 64)")
    g.add_argument("--nuisance", type=float, help="vision: CIFAR-10 background strength eta in [0, 1]")
    g.add_argument("--exclude-same-item", action="store_true", default=None,
                   help="vision/text: the paper's pairing, Y's item never X's item when the classes agree (adds a "
                        "small excess over ds (1 - H_b(beta)); default: Y drawn independently, exact truth)")
    g.add_argument("--encoder", help="text: Hugging Face BERT-family checkpoint (path or id)")
    g.add_argument("--data-dir", help="dataset directory (else $MIBENCH_DATA, else the user cache)")
    g.add_argument("--n-per-class", type=int, help="text: reviews embedded per class")
    g.add_argument("--transform", help="apply g to X and Y: realnvp | maf | irevnet (invertible) | resnet (vision)")
    g.add_argument("--layer", help="resnet features: stem | layer1 | layer2 | layer3 | layer4 | pool (default pool)")
    track_given(p)      # last before set_defaults: --config needs to know which flags were given
    p.set_defaults(func=cmd_run)

    lp = sub.add_parser("list", help="list tasks, estimators and critics")
    lp.set_defaults(func=cmd_list)


def task_params_from_args(args) -> dict:
    params = {}
    for name in TASK_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            params[name] = value
    return params


def default_run_name(cfg) -> str:
    est = cfg.estimators if isinstance(cfg.estimators, str) else ",".join(cfg.estimators)
    est = est if len(est) <= 40 else f"{len(est.split(','))}est"
    mi = str(cfg.mi).replace(",", "-")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{cfg.task}_{est}_{cfg.critic}_{mi}_s{cfg.seed}_{stamp}"
    return re.sub(r"[^A-Za-z0-9_.+-]", "-", name.replace(",", "+"))


#: ``run`` flags whose dest differs from the RunConfig field they set
FLAG_FIELDS = {"estimator": "estimators"}
#: ``run`` flags that do not change the numbers (allowed next to --config, not recorded as overrides)
OUTPUT_FLAGS = {"out", "no_plot", "quiet", "config"}


class _GivenMixin:
    """An argparse action that also records its dest in ``namespace._given``."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        namespace._given = set(getattr(namespace, "_given", ())) | {self.dest}


_GIVEN_CLASSES: dict = {}


def track_given(parser) -> None:
    """Make every option of ``parser`` added so far record that it was given on the command line
    (``args._given``), so ``--config`` overrides exactly the flags the user typed (even one set to
    its default value)."""
    for action in parser._actions:
        cls = type(action)
        if not action.option_strings or issubclass(cls, _GivenMixin) or action.dest == "help":
            continue
        if cls not in _GIVEN_CLASSES:
            _GIVEN_CLASSES[cls] = type(f"Given{cls.__name__}", (_GivenMixin, cls), {})
        action.__class__ = _GIVEN_CLASSES[cls]


def rerun_config(args):
    """``mibench run --config FILE [flags]``: the recorded RunConfig with the flags given on the
    command line applied on top; returns ``(config, extra)`` with ``extra`` the ``rerun_of``
    record for config.json.  Unknown or bad files and flags that cannot apply raise MibenchError."""
    import dataclasses
    import json

    from .errors import MibenchError
    from .harness import RunConfig
    from .results import load_run_config

    base = load_run_config(args.config)
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    changes, params, overrides = {}, dict(base.task_params or {}), {}
    for dest in sorted(getattr(args, "_given", ())):
        value = getattr(args, dest)
        if dest in OUTPUT_FLAGS:
            continue
        if dest in TASK_FLAGS:
            params[dest] = value
        elif FLAG_FIELDS.get(dest, dest) in fields:
            changes[FLAG_FIELDS.get(dest, dest)] = value
        else:
            raise MibenchError(f"--{dest.replace('_', '-')} cannot be combined with --config (it is not part of a "
                               "run's config)")
        overrides[dest.replace("_", "-")] = value
    cfg = dataclasses.replace(base, task_params=params, **changes)
    path = Path(args.config)
    path = path / "config.json" if path.is_dir() else path
    try:
        recorded_id = json.loads(path.read_text()).get("run_id")
    except (OSError, ValueError, AttributeError):
        recorded_id = None
    return cfg, {"rerun_of": {"config": str(path.resolve()), "run_id": recorded_id, "overrides": overrides}}


def cmd_run(args) -> int:
    from .harness import RunConfig, prepare, run

    if getattr(args, "n", None) is not None:
        return cmd_run_sample(args)
    if getattr(args, "seeds", None) is not None or getattr(args, "timeout", None) is not None:
        from .errors import MibenchError

        raise MibenchError("--seeds and --timeout belong to the sample protocol: add --n N (e.g. --n 10000); "
                           "a streaming run takes one --seed")
    extra = None
    if getattr(args, "config", None):
        cfg, extra = rerun_config(args)
    else:
        cfg = RunConfig(task=args.task, task_params=task_params_from_args(args), estimators=args.estimator,
                        critic=args.critic, hidden=args.hidden, layers=args.layers, embed=args.embed, mi=args.mi,
                        steps=args.steps, batch_size=args.batch_size, lr=args.lr, seed=args.seed,
                        device=args.device, burn_in=args.burn_in, engine=args.engine, precision=args.precision)
    prepared = prepare(cfg)
    cfg = prepared[0]
    out = Path(args.out) if args.out else Path("results") / "runs" / default_run_name(cfg)
    if not args.quiet:
        print(f"mibench: {cfg.task} · {', '.join(cfg.estimators)} · {cfg.critic} critic · {cfg.steps} steps · -> {out}",
              file=sys.stderr)
    result = run(cfg, out_dir=out, progress=not args.quiet, plot=not args.no_plot, prepared=prepared, extra=extra)
    if not args.quiet:
        print(format_summary(result))
    print(f"wrote {out}/ (config.json, estimates.csv, summary.csv{'' if args.no_plot else ', staircase.png'})")
    return 0


def cmd_run_sample(args) -> int:
    """``mibench run --n N``: the sample-based protocol (mibench.sample_protocol)."""
    from .errors import MibenchError
    from .sample_protocol import DEFAULT_TIMEOUT, SampleConfig, format_sample_summary, prepare as prepare_sample, run_sample

    if getattr(args, "config", None):
        raise MibenchError("--config re-runs streaming runs; for a sample run give its flags again")
    mi = args.mi if str(args.mi).strip().lower() not in ("stepwise", "staircase") else "4"
    timeout = DEFAULT_TIMEOUT if args.timeout is None else (None if args.timeout == 0 else args.timeout)
    cfg = SampleConfig(task=args.task, task_params=task_params_from_args(args), estimators=args.estimator,
                       critic=args.critic, mi=mi, n=args.n, seeds=args.seeds if args.seeds is not None else [args.seed],
                       timeout=timeout, device=args.device)
    prepared = prepare_sample(cfg)
    cfg = prepared[0]
    if args.out:
        out = Path(args.out)
    else:
        est = ",".join(cfg.estimators)
        est = est if len(est) <= 40 else f"{len(cfg.estimators)}est"
        name = f"{cfg.task}_{est}_n{cfg.n}_mi{'-'.join(f'{v:g}' for v in cfg.levels)}_{time.strftime('%Y%m%d-%H%M%S')}"
        out = Path("results") / "runs" / re.sub(r"[^A-Za-z0-9_.+-]", "-", name)
    if not args.quiet:
        print(f"mibench: {cfg.task} · sample protocol n = {cfg.n} · {', '.join(cfg.estimators)} · seeds "
              f"{','.join(map(str, cfg.seeds))} · -> {out}", file=sys.stderr)
    result = run_sample(cfg, out_dir=out, progress=not args.quiet, plot=not args.no_plot, prepared=prepared)
    if not args.quiet:
        print(format_sample_summary(result))
    print(f"wrote {out}/ (config.json, sample_estimates.csv, summary.csv{'' if args.no_plot else ', estimates.png'})")
    return 0


def format_summary(result) -> str:
    cfg = result.config
    info = cfg["task_info"]
    lines = [f"task {info.get('task')}: ds={info.get('ds')} dr={info.get('dr')}"
             + (f" · data: {info['data_source']}" if "data_source" in info else "")
             + f" · device {cfg['environment']['device']} · {cfg.get('steps_per_second')} steps/s"]
    header = f"{'estimator':<11}{'true':>6}{'mean':>8}{'bias':>8}{'var':>8}{'mse':>8}{'steps':>7}"
    lines += [header, "-" * len(header)]
    for r in result.summary:
        lines.append(f"{r['estimator']:<11}{r['true_mi']:>6g}{r['mean_estimate']:>8.3f}{r['bias']:>8.3f}"
                     f"{r['variance']:>8.3f}{r['mse']:>8.3f}{r['steps']:>7d}")
    for name, step in result.diverged.items():
        lines.append(f"! {name} diverged (non-finite estimate) at step {step}; its later steps are excluded")
    for note in cfg.get("notes", []):
        lines.append(f"note: {note}")
    return "\n".join(lines)


def cmd_list(args) -> int:
    from .critics import CRITICS
    from .estimators import ESTIMATORS, PAPER_ESTIMATORS
    from .plugins import plugin_lines
    from .tasks import TASKS

    def section(title, reg):
        print(title)
        for e in reg:
            print(f"  {e.name:<12} {e.description}")
        for h in reg.patterns_help():
            print(f"  {h}")

    section("tasks:", TASKS)
    section("estimators:", ESTIMATORS)
    print(f"  'all' = {', '.join(PAPER_ESTIMATORS)}")
    print("\n".join(plugin_lines()))
    section("critics:", CRITICS)
    print("  depth: --layers d = input layer + d hidden layers of --hidden units + output layer"
          " (default joint: 3 ReLU layers of 256)")
    try:
        from .disentanglement import MI_BACKENDS
    except ImportError:
        return 0
    section("MI back-ends (disentanglement):", MI_BACKENDS)
    return 0
