"""``mibench run`` and ``mibench list``."""
from __future__ import annotations

import sys
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
                                   "estimates.csv, summary.csv and staircase.png (all estimates in bits).  Exit status: "
                                   "0 every estimate obtained, 2 usage error, 3 some estimates failed, 4 unreadable "
                                   "input, 130 / 143 interrupted.")
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
    p.add_argument("--seed", type=int, default=0, help="seed of the batch stream and the critics (0 .. 2^63-1)")
    p.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] | mps (default auto: CUDA if available, else CPU)")
    p.add_argument("--burn-in", type=int, default=0, help="steps skipped at the start of each MI level in the metrics")
    p.add_argument("--engine", default="auto", help="several joint critics: sequential | stacked (one batched pass) | auto")
    p.add_argument("--precision", default="fp32", help="critic arithmetic: fp32 (default) | bf16 (autocast, opt-in, "
                   "~1.5x faster on CPUs with AVX512-BF16) | tf32 (CUDA matmuls)")
    p.add_argument("--out", default=None, help="run directory: new or empty (default results/runs/<readable name>); "
                   "one that holds this run needs --resume or --overwrite, any other is refused")
    p.add_argument("--resume", action="store_true", help="continue the run in --out (a stream run from its last "
                   "checkpoint, a sample run from its last estimate); nothing to do when it is complete")
    p.add_argument("--overwrite", action="store_true", help="replace the run in --out and start again")
    p.add_argument("--no-plot", action="store_true", help="skip staircase.png")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.add_argument("--config", default=None, metavar="CONFIG_JSON",
                   help="re-run a recorded run exactly: its config.json (or run directory); flags given alongside "
                        "override it and are recorded in the new config.json under rerun_of")
    sp = p.add_argument_group("sample protocol: --n draws a fixed dataset per MI level and seed")
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
    g.add_argument("--encoder", help="text: minilm-imdb (default: MiniLM fine-tuned on IMDB labels), all-MiniLM-L6-v2 (off the shelf), or a BERT-family checkpoint (path or id)")
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


#: ``run`` flags whose dest differs from the RunConfig field they set
FLAG_FIELDS = {"estimator": "estimators"}
#: ``run`` flags that do not change the numbers (allowed next to --config, not recorded as overrides)
OUTPUT_FLAGS = {"out", "no_plot", "quiet", "config", "resume", "overwrite"}


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
    """``mibench run --config FILE [flags]``: the recorded config (either protocol) with the flags given
    on the command line applied on top; returns ``(protocol, config, extra)`` with ``extra`` the
    ``rerun_of`` record for config.json.  Unknown or bad files and flags that cannot apply raise
    MibenchError (one line)."""
    import dataclasses

    from .errors import MibenchError, UnreadableInput
    from .protocols import protocol_of
    from .records import read_json

    path = Path(args.config)
    path = path / "config.json" if path.is_dir() else path
    try:
        data = read_json(path, "--config")
    except UnreadableInput as exc:
        raise MibenchError(str(exc)) from None
    raw = data.get("config") if isinstance(data, dict) and isinstance(data.get("config"), dict) else data
    if not isinstance(raw, dict) or "task" not in raw:
        raise MibenchError(f"--config: {path} is not a mibench run config (no 'config' with a 'task')")
    protocol = protocol_of({"config": raw, **({"protocol": data.get("protocol")} if isinstance(data, dict) and
                                                data.get("protocol") else {})})
    base = protocol.config_from_dict(raw, f"--config {path}")
    fields = {f.name for f in dataclasses.fields(base)}
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
            raise MibenchError(f"--{dest.replace('_', '-')} cannot be combined with --config of a {protocol.name} run "
                               "(it is not part of its config)")
        overrides[dest.replace("_", "-")] = value
    cfg = dataclasses.replace(base, task_params=params, **changes)
    recorded_id = data.get("run_id") if isinstance(data, dict) else None
    return protocol, cfg, {"rerun_of": {"config": str(path.resolve()), "run_id": recorded_id, "overrides": overrides}}


def cmd_run(args) -> int:
    """``mibench run``: either protocol (``--n`` chooses the sample protocol), into ``--out``."""
    from .errors import EXIT_FAILED_ESTIMATES, EXIT_OK
    from .protocols import choose_protocol
    from .records import claim, unique_dir

    if args.resume and args.overwrite:
        from .errors import MibenchError

        raise MibenchError("--resume and --overwrite exclude each other")
    extra = None
    if getattr(args, "config", None):
        protocol, cfg, extra = rerun_config(args)
    else:
        protocol = choose_protocol({"n": args.n})
        cfg = protocol.config_from_args(args, task_params_from_args(args))
    prepared = protocol.prepare(cfg)
    cfg = prepared[0]
    if args.out:
        c = claim(args.out, protocol.resolved_dict(prepared), resume=args.resume, overwrite=args.overwrite)
        out = c.path
        if c.mode == "complete":
            print(f"{out} already holds this run, complete; nothing to do (--overwrite to run it again)")
            return _exit_code(protocol, out)
    else:
        if args.resume:
            from .errors import MibenchError

            raise MibenchError("--resume needs --out DIR (the run to continue)")
        out = unique_dir(Path("results") / "runs", protocol.default_run_name(cfg))
        c = None
    resume = c is not None and c.mode == "resume"
    if not args.quiet:
        print(f"mibench: {'resuming ' if resume else ''}{cfg.task} · {protocol.name} protocol · "
              f"{', '.join(cfg.estimators)} -> {out}", file=sys.stderr)
    result = protocol.run(prepared, out, progress=not args.quiet, plot=not args.no_plot, extra=extra, resume=resume)
    if not args.quiet:
        print(protocol.format_result(result))
    files = ", ".join(["config.json", protocol.estimates_file, "summary.csv"])
    print(f"wrote {out}/ ({files}{'' if args.no_plot else ', figure'})")
    failed = protocol.failed_estimates(result.config)
    if failed:
        print(f"mibench: {len(failed)} estimate(s) failed (listed above and in {out}/config.json); exit status "
              f"{EXIT_FAILED_ESTIMATES}", file=sys.stderr)
        return EXIT_FAILED_ESTIMATES
    return EXIT_OK


def _exit_code(protocol, out) -> int:
    from .errors import EXIT_FAILED_ESTIMATES, EXIT_OK
    from .records import read_config

    return EXIT_FAILED_ESTIMATES if protocol.failed_estimates(read_config(out)) else EXIT_OK


def cmd_list(args) -> int:
    from .critics import CRITICS
    from .estimators import ESTIMATORS, PAPER_ESTIMATORS
    from .plugins import plugin_lines

    def section(title, reg):
        print(title)
        for e in reg:
            print(f"  {e.name:<12} {e.description}")
        for h in reg.patterns_help():
            print(f"  {h}")

    print("tasks:")
    from .tasks.catalogue import task_list_lines

    print("\n".join(task_list_lines()))   # catalogue tasks grouped by catalogue
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
