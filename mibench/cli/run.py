"""``mibench run`` and ``mibench list``."""
from __future__ import annotations

import sys
from pathlib import Path

#: task flags forwarded to the task factory when the user sets them: name -> (type, help); the
#: factory's signature decides what each task accepts
TASK_FLAGS = {
    "dim": (int, "gaussian: dimension d (default 10)"),
    "cubic": (bool, "gaussian: y -> y^3 (MI unchanged)"),
    "ds": (int, "vision/text/mixed: number of binary information sources"),
    "layout": (str, "vision: CxRxC patch grid, e.g. 1x2x5 (3 channels = RGB stacking)"),
    "side": (int, "vision: image side after resizing (dr = channels * side^2; default 64)"),
    "nuisance": (float, "vision: CIFAR-10 background strength eta in [0, 1]"),
    "exclude_same_item": (bool, "vision/text: the paper's pairing, Y's item never X's item when the classes agree "
                                "(adds a small excess over ds (1 - H_b(beta)); default: Y drawn independently, exact "
                                "truth)"),
    "encoder": (str, "text: minilm-imdb (default: MiniLM fine-tuned on IMDB labels), all-MiniLM-L6-v2 (off the "
                     "shelf), or a BERT-family checkpoint (path or id)"),
    "data_dir": (str, "dataset directory (else $MIBENCH_DATA, else the user cache)"),
    "n_per_class": (int, "text: reviews embedded per class"),
    "rows": (int, "self-consistency tasks: t, the rows of the image Y keeps (default half the height)"),
    "rows_h": (int, "consistency-dp: the rows h(Y) keeps (default t - 3)"),
    "noise": (float, "self-consistency tasks: std of Gaussian noise added to Y (default 0; Gaussian analogue 2)"),
    "transform": (str, "apply g to X and Y: realnvp | maf | irevnet (invertible) | resnet (vision)"),
    "layer": (str, "resnet features: stem | layer1 | layer2 | layer3 | layer4 | pool (default pool)"),
}


def register_cli(sub) -> None:
    from mibench.protocols.params import add_flags
    from mibench.protocols.sample.config import SampleConfig
    from mibench.protocols.stream.config import StreamConfig

    p = sub.add_parser("run", help="train estimators on a task and write a run directory",
                       description="Train the estimators' critics on a shared batch stream (one critic per training "
                                   "objective: JS and SMILE-tau share one); write config.json, "
                                   "estimates.csv, summary.csv and staircase.png (all estimates in bits).  "
                                   "Exit status: 0 every estimate obtained, 2 usage error, 3 some estimates failed, "
                                   "4 unreadable input, 130 / 143 interrupted.")
    add_flags(p, StreamConfig)           # --task, --estimator, --critic, --mi, --steps, ... with their defaults
    p.add_argument("--out", default=None, help="run directory: new or empty (default results/runs/<readable name>); "
                   "one that holds this run needs --resume or --overwrite, any other is refused")
    p.add_argument("--resume", action="store_true", help="continue the run in --out (a stream run from its last "
                   "checkpoint, a sample run from its last estimate); nothing to do when it is complete")
    p.add_argument("--overwrite", action="store_true", help="replace the run in --out and start again")
    p.add_argument("--no-plot", action="store_true", help="skip staircase.png")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: the cores free to this "
                   "run at its start: affinity, cgroup quota and other processes' load; docs/install.md#threads)")
    p.add_argument("--config", default=None, metavar="CONFIG_JSON",
                   help="re-run a recorded run exactly: its config.json (or run directory); flags given alongside "
                        "override it and are recorded in the new config.json under rerun_of")
    add_flags(p.add_argument_group("sample protocol: --n draws a fixed dataset per MI level and seed"), SampleConfig,
              ("n", "seeds", "timeout"), unset=True)
    g = p.add_argument_group("task parameters (only those a task takes are accepted)")
    for name, (kind, text) in TASK_FLAGS.items():
        flag = "--" + name.replace("_", "-")
        if kind is bool:
            g.add_argument(flag, action="store_true", default=None, help=text)
        else:
            g.add_argument(flag, type=kind if kind is not str else None, help=text)
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


#: ``run`` flags that do not change the numbers (allowed next to --config, not recorded as overrides)
OUTPUT_FLAGS = {"out", "no_plot", "quiet", "config", "resume", "overwrite", "threads"}


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

    from mibench.errors import MibenchError, UnreadableInput
    from mibench.records import read_json

    path = Path(args.config)
    path = path / "config.json" if path.is_dir() else path
    try:
        data = read_json(path, "--config")
    except UnreadableInput as exc:
        raise MibenchError(str(exc)) from None
    raw = data.get("config") if isinstance(data, dict) and isinstance(data.get("config"), dict) else data
    if not isinstance(raw, dict) or "task" not in raw:
        raise MibenchError(f"--config: {path} is not a mibench run config (no 'config' with a 'task')")
    protocol = _protocol_of_config(raw, data)
    base = protocol.config_from_dict(raw, f"--config {path}")
    fields = {f.name for f in dataclasses.fields(base)}
    changes, params, overrides, training = {}, dict(base.task_params or {}), {}, {}
    flags = _flag_names()
    for dest in sorted(getattr(args, "_given", ())):
        value = getattr(args, dest)
        if dest in OUTPUT_FLAGS:
            continue
        if dest in TASK_FLAGS:
            params[dest] = value
        elif dest in fields:
            changes[dest] = value
        elif protocol.name == "sample" and dest in SAMPLE_TRAINING_FLAGS:
            training[dest] = value          # the critic estimators' settings, as on a sample run's command line
        else:
            raise MibenchError(f"--{flags[dest]} cannot be combined with --config of a {protocol.name} run "
                               "(it is not part of its config)")
        overrides[flags[dest]] = value
    if protocol.name == "sample":
        changes["estimate_kwargs"] = _sample_training(base, changes.get("estimators", base.estimators), training)
    cfg = dataclasses.replace(base, task_params=params, **changes)
    recorded_id = data.get("run_id") if isinstance(data, dict) else None
    return protocol, cfg, {"rerun_of": {"config": str(path.resolve()), "run_id": recorded_id, "overrides": overrides}}


#: a sample run's flags that set its critic estimators' training (``estimate_kwargs``)
SAMPLE_TRAINING_FLAGS = ("steps", "batch_size", "lr", "hidden", "layers", "embed")


def _sample_training(base, estimators, given: dict) -> dict:
    """The ``estimate_kwargs`` of a sample run re-run with ``--config``: the recorded ones with the training flags
    ``given`` on top; given flags that reach no critic estimator of ``estimators`` are refused as on the command
    line, and recorded ones are dropped where none is left to take them (a run of ksg alone recorded the steps
    of the critic estimators it no longer runs)."""
    from mibench.protocols.sample.config import check_flags_reach_a_critic, takes_training_flags

    check_flags_reach_a_critic(given, estimators)
    return {**(base.estimate_kwargs or {}), **given} if takes_training_flags(estimators) else {}


def _protocol_of_config(raw: dict, data):
    """The protocol of a ``--config`` file, by name: the file is an argument, so its mistakes are
    usage errors, reported by ``config_from_dict`` with the file's name (not a damaged record)."""
    from mibench.protocols import LEGACY_PROTOCOL, get_protocol

    named = data.get("protocol") if isinstance(data, dict) else None
    return get_protocol(named or raw.get("protocol") or LEGACY_PROTOCOL)


class _FlagNames(dict):
    """dest -> its flag as typed, without the dashes (``estimators`` -> ``estimator``); a dest without a
    declared flag: its own name, dashed."""

    def __missing__(self, dest: str) -> str:
        return dest.replace("_", "-")


def _flag_names() -> _FlagNames:
    from mibench.protocols.params import flag_fields, flag_of
    from mibench.protocols.sample.config import SampleConfig
    from mibench.protocols.stream.config import StreamConfig

    return _FlagNames({f.name: flag_of(f)[2:] for cls in (StreamConfig, SampleConfig) for f in flag_fields(cls)})


def cmd_run(args) -> int:
    """``mibench run``: either protocol (``--n`` chooses the sample protocol), into ``--out``."""
    from mibench.errors import EXIT_FAILED_ESTIMATES, EXIT_OK, MibenchError
    from mibench.protocols import choose_protocol
    from mibench.records import claim, unique_dir
    from mibench.utils.threads import LoadProbe, choose_threads, requested_threads, using_threads

    if args.resume and args.overwrite:
        raise MibenchError("--resume and --overwrite exclude each other")
    requested_threads(args.threads)           # a bad --threads is one line before anything is built
    probe = LoadProbe()                       # other processes' load, read while the run is prepared
    extra = None
    if getattr(args, "config", None):
        protocol, cfg, extra = rerun_config(args)
    else:
        from mibench.tasks import TASKS

        protocol = choose_protocol({"n": args.n})
        # recorded as the registry names it: '1V1-NORMAL-0.75' and ' Gaussian ' made setups of their own
        args.task = TASKS.get(args.task).name
        args.mi = task_mi(args.task, args.mi, "mi" in getattr(args, "_given", ()))
        cfg = protocol.config_from_args(args, task_params_from_args(args))
    from mibench.tasks.base import LevelAboveTask

    try:
        prepared = protocol.prepare(cfg)
    except LevelAboveTask as exc:
        if "mi" in getattr(args, "_given", ()) or getattr(args, "config", None):
            raise
        raise MibenchError(f"{exc}, the default when --mi is left out: pass --mi with a level it holds") from None
    cfg = prepared.config
    if args.out:
        if not args.overwrite:
            _check_recorded(args.out)
        c = claim(args.out, prepared.config_dict(), resume=args.resume, overwrite=args.overwrite)
        out = c.path
        if c.mode == "complete":
            _check_complete_files(out)
            print(f"{out} already holds this run, complete; nothing to do (--overwrite to run it again)")
            return _exit_code(protocol, out)
    else:
        if args.resume:
            raise MibenchError("--resume needs --out DIR (the run to continue)")
        out = unique_dir(Path("results") / "runs", protocol.default_run_name(cfg))
        c = None
    resume = c is not None and c.mode == "resume"
    threads = choose_threads(args.threads, busy=None if args.threads is not None else probe.busy_cores())
    with using_threads(threads.threads, threads.describe()):     # for the run only (main may run in-process)
        if not args.quiet:
            print(f"mibench: {'resuming ' if resume else ''}{cfg.task} · {protocol.name} protocol · "
                  f"{', '.join(cfg.estimators)} -> {out} · torch threads {threads.describe()}", file=sys.stderr)
            data = data_line(prepared.task.info(), (cfg.task_params or {}).get("data_dir"))
            if data:
                print(data, file=sys.stderr)
        result = protocol.run(prepared, c or out, progress=not args.quiet, plot=not args.no_plot, extra=extra,
                              resume=resume)
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


def data_line(info: dict, data_dir=None) -> str | None:
    """The line ``mibench run`` starts with for a task backed by a dataset: which data it uses -- the
    full data (and where its data directory came from: --data-dir, MIBENCH_DATA or the user cache)
    or the small subset shipped in the package (and its folder); None for a task without a dataset."""
    source = str(info.get("data_source") or "")
    notes = []
    if "full data" in source:
        from mibench.data.sources import data_dir_origin

        origin = {"argument": "--data-dir", "user cache": "the user cache"}.get(data_dir_origin(data_dir))
        notes.append(f"data directory from {origin or 'MIBENCH_DATA'}")
    if "embedded subset" in source:
        from mibench.data.embedded import EMBEDDED_DIR

        notes.append(f"the small subset shipped with mibench ({EMBEDDED_DIR}), not the full data")
    return f"mibench: data: {source}; {'; '.join(notes)}" if notes else None


def task_mi(task: str, mi, given: bool):
    """``--mi`` for ``task``: a fixed-MI task (every BMI task) runs at its own MI when ``--mi`` is not
    given, and at exactly it when ``--mi`` is it at the printed precision; otherwise ``mi`` as given
    (or the default schedule)."""
    from mibench.tasks import TASKS
    from mibench.tasks.base import mi_for_task

    chosen = mi_for_task(TASKS.get(task).name, mi if given else None)
    return mi if chosen is None else chosen


def _check_recorded(out) -> None:
    """A run already in ``--out`` must be a readable record: a config.json that is damaged, or whose
    fields have the wrong types, is one :class:`~mibench.errors.UnreadableInput` line (exit 4)."""
    from mibench.errors import UnreadableInput
    from mibench.protocols import protocol_of
    from mibench.records import read_config

    if not (Path(out) / "config.json").is_file():
        return
    try:
        protocol_of(read_config(out))
    except UnreadableInput as exc:
        raise UnreadableInput(f"--out {out}: {exc} (pass --overwrite to replace it)") from None


def _check_complete_files(out) -> None:
    """A complete run that ``--resume`` would leave as it is: a file it recorded that was edited or cut
    short since is one :class:`~mibench.errors.UnreadableInput` line (exit 4), not 'complete; nothing to
    do'.  A file removed since passes, as for the leaderboard: kept runs drop the per-step log."""
    from mibench.errors import UnreadableInput
    from mibench.records import read_config
    from mibench.records.run_dir import verify_present_files

    try:
        verify_present_files(out, read_config(out))
    except UnreadableInput as exc:
        raise UnreadableInput(f"--out {out} is not the complete run it recorded: {exc} "
                              "(pass --overwrite to run it again)") from None


def _exit_code(protocol, out) -> int:
    from mibench.errors import EXIT_FAILED_ESTIMATES, EXIT_OK
    from mibench.records import read_config

    return EXIT_FAILED_ESTIMATES if protocol.failed_estimates(read_config(out)) else EXIT_OK


def cmd_list(args) -> int:
    from mibench.critics import CRITICS
    from mibench.estimators import ESTIMATORS, PAPER_ESTIMATORS
    from mibench.estimators.plugins import plugin_lines

    def section(title, reg):
        print(title)
        for e in reg:
            print(f"  {e.name:<12} {e.description}")
        for h in reg.patterns_help():
            print(f"  {h}")

    print("tasks:")
    from mibench.tasks.catalogue import task_list_lines

    print("\n".join(task_list_lines()))   # catalogue tasks grouped by catalogue
    section("estimators:", ESTIMATORS)
    print(f"  'all' = {', '.join(PAPER_ESTIMATORS)}")
    print("\n".join(plugin_lines()))
    section("critics:", CRITICS)
    print("  depth: --layers d = input layer + d hidden layers of --hidden units + output layer"
          " (default joint: 3 ReLU layers of 256)")
    try:
        from mibench.disentanglement import MI_BACKENDS
    except ImportError:
        return 0
    section("MI back-ends (disentanglement):", MI_BACKENDS)
    return 0
