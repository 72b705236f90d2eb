"""``mibench sweep``: a grid of runs from a config file, a preset or the command line."""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from mibench.cli.args import axis_values, mi_values, parse_set, printing_result
from mibench.errors import EXIT_FAILED_ESTIMATES, EXIT_OK, MibenchError
from mibench.protocols.params import flag_of


def register_cli(sub) -> None:
    _sweep_parser(sub)


# ------------------------------------------------------------------------------------ sweep


def _sweep_parser(sub) -> None:
    p = sub.add_parser(
        "sweep", help="run a grid of runs (resumable; local processes or Dask)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run a grid of runs: tasks x task params x critics x depth/width x batch size x MI schedule x "
                    "seeds; all estimators of a cell train together on one batch stream.  Each cell is a run "
                    "directory under the sweep directory, next to sweep.json (the manifest).  --resume continues "
                    "the same sweep in its directory: complete cells are skipped, interrupted ones continued, failed "
                    "ones redone; --overwrite starts it again.",
        epilog="examples:\n"
               "  mibench sweep --preset estimators --quick\n"
               "  mibench sweep sweep.toml --workers 2\n"
               "  mibench sweep --task gaussian --estimator smile,nwj --seeds 0,1 --steps 200 --set dim=2,4\n"
               "  mibench sweep --preset ds --full --backend dask --address tcp://scheduler:8786\n"
               "exit status: 0 every cell complete and every estimate obtained, 2 usage error, 3 a cell or an "
               "estimate failed (or an estimator diverged, with --fail-on-diverged), 4 unreadable input, "
               "130 / 143 interrupted")
    p.add_argument("config", nargs="?", help="sweep config file (.toml or .yaml)")
    g = p.add_argument_group("presets (the paper's studies, §5.1-5.6)")
    g.add_argument("--preset",
                   help="study preset: critics, depth, estimators, ds, dr, nuisance, smoke, ... (--list-presets)")
    form = g.add_mutually_exclusive_group()
    form.add_argument("--quick", dest="form", action="store_const", const="quick",
                      help="reduced CPU form (default)")
    form.add_argument("--full", dest="form", action="store_const", const="full", help="paper protocol (GPU)")
    g.add_argument("--list-presets", action="store_true", help="list the presets with their sizes and exit")
    s = p.add_argument_group("grid shorthand (also overrides a config or preset)")
    s.add_argument("--task", help="task name(s), comma separated")
    s.add_argument("--estimator", help="estimators trained together in every cell, comma separated, or 'all'")
    s.add_argument("--seeds", help="seed axis: 0,1,2 or 0-4")
    s.add_argument("--mi", nargs="+", help="MI schedule axis: 'stepwise', 2 (constant), 2,4,6 (one staircase); "
                                           "several values = several cells")
    for f in _grid_fields():          # --critic, --layers, --hidden, ... from StreamConfig's axis fields
        s.add_argument(flag_of(f), dest=f.name, help=f"{f.metadata['help']} (comma list: one cell per value)")
    s.add_argument("--set", action="append", metavar="KEY=V1,V2",
                   help="task parameter axis, e.g. --set dim=2,4 --set nuisance=0,0.5 (repeatable)")
    s.add_argument("--split-estimators", nargs="?", const=True, default=None, type=int, metavar="N",
                   help="one cell per trained critic (or, with N, the estimators split into N cells of nearly "
                        "equal critic counts) instead of all estimators in one cell; estimators sharing a "
                        "critic (JS, SMILE-tau) stay together")
    s.add_argument("--device", help="auto | cpu | cuda[:N] | mps (default auto: CUDA if available, else CPU)")
    s.add_argument("--n", help="sample protocol: n pairs per fixed dataset (comma list = axis); all "
                               "seeds of a cell in one sample run")
    s.add_argument("--timeout", type=float, help="sample protocol: seconds per estimate before it is killed and "
                                                 "recorded as failed (default 600)")
    e = p.add_argument_group("execution")
    e.add_argument("--out", help="sweep directory (default results/sweeps/<sweep name>): new or empty; one that holds "
                                 "this sweep needs --resume or --overwrite")
    e.add_argument("--resume", action="store_true", help="continue the sweep in its directory (complete cells "
                                                         "skipped, interrupted ones continued, failed ones redone)")
    e.add_argument("--overwrite", action="store_true", help="replace the sweep directory and start again")
    e.add_argument("--backend", choices=["local", "dask"], help="local processes (default) or dask.distributed")
    e.add_argument("--address", help="dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: start a "
                                     "LocalCluster with --workers processes)")
    e.add_argument("--workers", type=int, help="parallel cells (local: processes; default min(cells, free cores), "
                                               "1 on a GPU; 1 = in this process; on CPU never more than the free "
                                               "cores hold at --threads each)")
    e.add_argument("--threads", type=int, help="torch threads per cell (default free cores // workers; "
                                               "docs/install.md#threads)")
    e.add_argument("--shared-fs", action="store_true", default=None,
                   help="dask with --address: workers write run directories directly (shared filesystem) "
                        "instead of shipping the files back")
    e.add_argument("--no-plot", action="store_true", help="skip each cell's staircase.png")
    e.add_argument("--no-leaderboard", action="store_true",
                   help="do not write <sweep dir>/leaderboard.csv (+ .md) at the end")
    e.add_argument("--fail-on-diverged", action="store_true", help="exit 3 when an estimator diverged in some cell")
    e.add_argument("--dry-run", action="store_true", help="list the cells (and which are done) without running")
    e.add_argument("--dump-config", action="store_true", help="print the effective sweep config as YAML and exit")
    p.set_defaults(func=cmd_sweep)


def _grid_fields():
    """StreamConfig's sweep-axis fields that take a comma list on the command line (--mi and --seeds
    have their own forms)."""
    from mibench.protocols.params import axis_fields
    from mibench.protocols.stream.config import StreamConfig

    return [f for f in axis_fields(StreamConfig) if f.name not in ("mi", "seed")]


def spec_from_args(args):
    """(SweepSpec, default directory name, preset label) from the parsed arguments."""
    from mibench.sweep import SweepSpec, load_spec
    from mibench.sweep.presets import preset_dict
    from mibench.sweep.spec import shorthand_name
    from mibench.utils.checks import parse_seeds

    over = {
        "tasks": axis_values(args.task), "estimators": args.estimator,
        "seeds": parse_seeds(args.seeds) if args.seeds else None, "mi": mi_values(args.mi),
        **{f.metadata["axis"]: axis_values(getattr(args, f.name), f.metadata["check"]) for f in _grid_fields()},
        "params": parse_set(args.set) or None, "split_estimators": args.split_estimators, "device": args.device,
        "n": axis_values(getattr(args, "n", None), int), "timeout": getattr(args, "timeout", None),
    }
    over = {k: v for k, v in over.items() if v is not None}
    if isinstance(over.get("tasks"), str):
        over["tasks"] = [over["tasks"]]
    preset = None
    if args.config and args.preset:
        raise MibenchError("give a CONFIG file or --preset, not both")
    if args.config:
        base = load_spec(args.config)
    elif args.preset:
        form = args.form or "quick"
        base = SweepSpec.from_dict(preset_dict(args.preset, form))
        preset = f"{args.preset}/{form}"
    else:
        if "tasks" not in over:
            raise MibenchError("give a sweep CONFIG file, --preset NAME or at least --task (see mibench sweep -h)")
        data = {"tasks": over.pop("tasks")}
        data.update(over)
        spec = SweepSpec.from_dict(data)
        name = "sweep-" + shorthand_name(spec.to_dict())
        spec.name = name
        return spec, name, None
    if args.form and not args.preset:
        raise MibenchError("--quick / --full go with --preset")
    if over:
        spec = base.with_overrides(**over)
        digest = hashlib.sha256(json.dumps(over, sort_keys=True, default=str).encode()).hexdigest()[:6]
        spec.name = f"{base.name}-{digest}"
    else:
        spec = base
    return spec, spec.name, preset


def cmd_sweep(args) -> int:
    from mibench.analysis.leaderboard import command_line
    from mibench.errors import MibenchError
    from mibench.sweep import Execution, dump_spec_yaml, plan, run_sweep
    from mibench.sweep.presets import describe_presets

    if args.list_presets:
        print("presets (mibench sweep --preset NAME [--quick | --full]):")
        print(describe_presets())
        return EXIT_OK
    spec, name, preset = spec_from_args(args)
    if args.dump_config:
        print(dump_spec_yaml(spec), end="")
        return EXIT_OK
    if args.address and args.backend != "dask":
        raise MibenchError("--address goes with --backend dask")
    if args.resume and args.overwrite:
        raise MibenchError("--resume and --overwrite exclude each other")
    out = Path(args.out) if args.out else Path("results") / "sweeps" / name
    # the execution flags are checked before anything runs, a dry run included (one-line errors)
    Execution(backend=args.backend or None, workers=args.workers, threads=args.threads,
              address=args.address).resolve(spec.execution)
    if args.dry_run:
        # what the run would say of --out (a run directory, another sweep, --resume needed), said now
        from mibench.records import claim
        from mibench.sweep.plan import Plan

        cells = spec.cells()
        claim(out, [c.config for c in cells], resume=args.resume, overwrite=args.overwrite, kind="sweep",
              check_only=True)
        p = Plan(cells, list(cells), [], []) if args.overwrite else plan(spec, out, cells)
        state = {**{c.name: "todo  " for c in p.todo}, **{c.name: "resume" for c in p.resume},
                 **{c.name: "done  " for c in p.done}, **{name: "redo  " for name in p.damaged}}
        for c in p.cells:
            print(f"{state[c.name]} {c.name}  [{c.protocol.describe_cell(c.config)}]"
                  + (f"  ({p.damaged[c.name]})" if c.name in p.damaged else ""))
        print(f"{len(p.cells)} cells ({len(p.done)} complete, {len(p.resume)} to resume, {len(p.todo)} to run) "
              f"-> {out}")
        return EXIT_OK
    # SIGTERM stops the sweep as it stops a run (mibench.protocols.runtime.sigterm_requests_stop)
    report = run_sweep(spec, out, resume=args.resume, overwrite=args.overwrite, backend=args.backend or None,
                       workers=args.workers, threads=args.threads, address=args.address, shared_fs=args.shared_fs,
                       plot=not args.no_plot, command=command_line(), preset=preset)
    paths = None       # the leaderboard and the exit code first: a closed stdout loses neither
    if not args.no_leaderboard and len(report.failed) < len(report.cells):
        from mibench.analysis.leaderboard import build, write_all

        board, col = build([out])
        paths = write_all(board, col, out / "leaderboard.csv", command=f"mibench leaderboard {out} -o "
                                                                       f"{out / 'leaderboard.csv'}")
    code = EXIT_FAILED_ESTIMATES if not report.ok or (args.fail_on_diverged and report.diverged) else EXIT_OK
    with printing_result(code):
        print(f"sweep {spec.name}: {len(report.cells)} cells: {report.ran} ran, {report.skipped} already complete, "
              f"{len(report.failed)} failed, {report.failed_estimates} failed estimate(s), {len(report.diverged)} "
              f"with a diverged estimator ({report.wall_seconds:.0f} s) -> {out}")
        for n in report.failed:
            print(f"  failed: {n}: {report.results[n].error}")
        for n, r in report.results.items():
            for line in r.failed_estimates:
                print(f"  failed estimate in {n}: {line}")
        if paths:
            print(f"wrote {paths[0]} and {paths[1].name}; plots: mibench plot {out}")
    return code
