"""``mibench sweep``, ``mibench leaderboard``, ``mibench compare`` and ``mibench plot``."""
from __future__ import annotations

import argparse
import hashlib
import json
import signal
import sys
from pathlib import Path

from .errors import EXIT_FAILED_ESTIMATES, EXIT_OK, EXIT_REGRESSED, MibenchError


def register_cli(sub) -> None:
    _sweep_parser(sub)
    _leaderboard_parser(sub)
    _compare_parser(sub)
    _plot_parser(sub)


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
    g.add_argument("--preset", help="study preset: critics, depth, estimators, ds, dr, nuisance, smoke, ... (--list-presets)")
    form = g.add_mutually_exclusive_group()
    form.add_argument("--quick", dest="form", action="store_const", const="quick",
                      help="reduced CPU form (default)")
    form.add_argument("--full", dest="form", action="store_const", const="full", help="paper protocol (GPU)")
    g.add_argument("--list-presets", action="store_true", help="list the presets with their sizes and exit")
    s = p.add_argument_group("grid shorthand (also overrides a config or preset)")
    s.add_argument("--task", help="task name(s), comma separated")
    s.add_argument("--estimator", help="estimators trained together in every cell, comma separated, or 'all'")
    s.add_argument("--critic", help="critic axis, comma separated (inner, bilinear, separable, joint)")
    s.add_argument("--seeds", help="seed axis: 0,1,2 or 0-4")
    s.add_argument("--steps", help="training steps (comma list = axis)")
    s.add_argument("--mi", nargs="+", help="MI schedule axis: 'stepwise', 2 (constant), 2,4,6 (one staircase); "
                                           "several values = several cells")
    s.add_argument("--batch-size", help="batch size axis, comma separated")
    s.add_argument("--hidden", help="critic width axis, comma separated")
    s.add_argument("--layers", help="critic depth axis (hidden layers), comma separated")
    s.add_argument("--embed", help="separable critic embedding axis, comma separated")
    s.add_argument("--lr", help="learning-rate axis, comma separated")
    s.add_argument("--burn-in", help="per-level burn-in excluded from the metrics (axis)")
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
    e.add_argument("--workers", type=int, help="parallel cells (local: processes; default min(cells, cores), "
                                               "1 on a GPU; 1 = in this process)")
    e.add_argument("--threads", type=int, help="torch threads per cell (default cores // workers)")
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


def _csv(text, cast=str):
    if text is None:
        return None
    vals = [v.strip() for v in str(text).split(",") if v.strip()]
    if not vals:
        raise MibenchError(f"empty list: {text!r}")
    try:
        out = [cast(v) for v in vals]
    except ValueError:
        raise MibenchError(f"expected {cast.__name__} values, got {text!r}") from None
    return out if len(out) > 1 else out[0]


def _mi_values(items):
    if not items:
        return None
    out = []
    for v in items:
        try:
            out.append(float(v) if "," not in v else v)
        except ValueError:
            out.append(v)
    return out if len(out) > 1 else out[0]


def spec_from_args(args):
    """(SweepSpec, default directory name, preset label) from the parsed arguments."""
    from .checks import parse_seeds
    from .presets import preset_dict
    from .sweep import SweepSpec, load_spec

    over = {
        "tasks": _csv(args.task), "estimators": args.estimator, "critics": _csv(args.critic),
        "seeds": parse_seeds(args.seeds) if args.seeds else None, "steps": _csv(args.steps, int),
        "mi": _mi_values(args.mi), "batch_size": _csv(args.batch_size, int), "hidden": _csv(args.hidden, int),
        "layers": _csv(args.layers, int), "embed": _csv(args.embed, int), "lr": _csv(args.lr, float),
        "burn_in": _csv(args.burn_in, int), "params": parse_set(args.set) or None,
        "split_estimators": args.split_estimators, "device": args.device,
        "n": _csv(getattr(args, "n", None), int), "timeout": getattr(args, "timeout", None),
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
    from .errors import MibenchError, Terminated
    from .leaderboard import command_line
    from .presets import describe_presets
    from .sweep import dump_spec_yaml, plan, run_sweep

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
    if args.dry_run:
        p = plan(spec, out)
        state = {**{c.name: "todo  " for c in p.todo}, **{c.name: "resume" for c in p.resume},
                 **{c.name: "done  " for c in p.done}}
        for c in p.cells:
            print(f"{state[c.name]} {c.name}  [{c.protocol.describe_cell(c.config)}]")
        print(f"{len(p.cells)} cells ({len(p.done)} complete, {len(p.resume)} to resume, {len(p.todo)} to run) -> {out}")
        return EXIT_OK

    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame):   # a polite kill records the interruption in the manifest
        raise Terminated("SIGTERM")

    if previous in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, on_term)
    try:
        report = run_sweep(spec, out, resume=args.resume, overwrite=args.overwrite, backend=args.backend or None,
                           workers=args.workers, threads=args.threads, address=args.address, shared_fs=args.shared_fs,
                           plot=not args.no_plot, command=command_line(), preset=preset)
    finally:
        if previous in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    print(f"sweep {spec.name}: {len(report.cells)} cells: {report.ran} ran, {report.skipped} already complete, "
          f"{len(report.failed)} failed, {report.failed_estimates} failed estimate(s), {len(report.diverged)} with a "
          f"diverged estimator ({report.wall_seconds:.0f} s) -> {out}")
    for n in report.failed:
        print(f"  failed: {n}: {report.results[n].error}")
    for n, r in report.results.items():
        for line in r.failed_estimates:
            print(f"  failed estimate in {n}: {line}")
    if not args.no_leaderboard and len(report.failed) < len(report.cells):
        from .leaderboard import build, write_all

        board, col = build([out])
        paths = write_all(board, col, out / "leaderboard.csv", command=f"mibench leaderboard {out} -o "
                                                                       f"{out / 'leaderboard.csv'}")
        print(f"wrote {paths[0]} and {paths[1].name}; plots: mibench plot {out}")
    if not report.ok or (args.fail_on_diverged and report.diverged):
        return EXIT_FAILED_ESTIMATES
    return EXIT_OK


def shorthand_name(spec_dict: dict) -> str:
    """Deterministic directory name for a CLI-shorthand sweep (same command -> same dir)."""
    tasks = "+".join(t["task"] if isinstance(t, dict) else str(t) for t in spec_dict.get("tasks", []))
    digest = hashlib.sha256(json.dumps(spec_dict, sort_keys=True, default=str).encode()).hexdigest()[:8]
    return f"{tasks}-{digest}"


def parse_set(items: list[str] | None) -> dict:
    """``["dim=2,4", "cubic=true"]`` -> ``{"dim": [2, 4], "cubic": True}`` (values typed)."""
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise MibenchError(f"--set expects KEY=V1,V2,..., got {item!r}")
        vals = [_typed(v.strip()) for v in value.split(",") if v.strip()]
        if not vals:
            raise MibenchError(f"--set {key}= needs at least one value")
        out[key] = vals if len(vals) > 1 else vals[0]
    return out


def _typed(text: str):
    import math

    low = text.lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    for cast in (int, float):
        try:
            v = cast(text)
            if cast is float and not math.isfinite(v):
                return text
            return v
        except ValueError:
            pass
    return text


# ------------------------------------------------------------------------------ leaderboard


def _leaderboard_parser(sub) -> None:
    p = sub.add_parser("leaderboard", help="aggregate runs over seeds into a ranked leaderboard (CSV + Markdown)",
                       description="Aggregate complete run directories (found recursively under RUNS: run dirs, "
                                   "sweep dirs, results/) over seeds: one row per task x estimator x critic x "
                                   "setup x true-MI level with mean bias, variance and MSE and their 95%% "
                                   "t-intervals, ranked per setup by MSE averaged over levels.  Columns are "
                                   "documented in mibench.leaderboard.")
    p.add_argument("runs", nargs="+", metavar="RUNS", help="run or sweep directories")
    p.add_argument("-o", "--output", help="CSV path (also writes <stem>.md and <stem>.meta.json); "
                                          "without it the Markdown table goes to stdout")
    p.add_argument("--no-markdown", action="store_true", help="only the CSV (and the sidecar)")
    p.add_argument("--title", default="MI estimator leaderboard", help="Markdown title")
    p.set_defaults(func=cmd_leaderboard)


def cmd_leaderboard(args) -> int:
    from .leaderboard import build, command_line, provenance, to_markdown, write_all

    board, col = build(args.runs)
    for d in col.incomplete:
        print(f"note: skipping incomplete run {d}", file=sys.stderr)
    for d, first in col.duplicates:
        print(f"note: skipping {d}: same setup and seed as {first}", file=sys.stderr)
    if not args.output:
        print(to_markdown(board, provenance(col, board, command_line()), args.title))
        return EXIT_OK
    paths = write_all(board, col, args.output, command=command_line(), markdown=not args.no_markdown)
    print(f"{len(board)} rows from {len(col.runs)} runs -> " + ", ".join(map(str, paths)))
    top = board[board["rank"] == 1].drop_duplicates(["task", "task_params", "critic", "layers", "hidden",
                                                     "batch_size", "steps", "schedule"])
    for _, r in top.iterrows():
        setup = (f"sample protocol, n = {int(r['n'])}" if r["n"] else
                 f"{r['critic']} {r['layers']}x{r['hidden']}, {r['steps']} steps")
        print(f"  best on {r['task']}{' (' + r['task_params'] + ')' if r['task_params'] else ''} "
              f"[{setup}]: {r['estimator']} (MSE averaged over levels {r['rank_score']:.3f} bits²)")
    return EXIT_OK


# ---------------------------------------------------------------------------------- compare


def _compare_parser(sub) -> None:
    p = sub.add_parser("compare", help="regression gate: exit 1 when NEW is worse than BASELINE",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Compare two leaderboards (CSV files, or run / sweep directories aggregated on "
                                   "the fly) row by row (setup, estimator, true-MI level).  A row regresses when\n"
                                   "  new MSE    > baseline MSE    * (1 + tolerance) + mse-floor, or\n"
                                   "  new |bias| > baseline |bias| * (1 + tolerance) + bias-floor, or\n"
                                   "  it diverged in more seeds than in the baseline, or it is missing from NEW.\n"
                                   "Exit status 0: no regression; 1: regressions (listed); 2: usage error; 4: a "
                                   "leaderboard that is empty, truncated or damaged (an empty baseline is refused: "
                                   "a gate against nothing cannot fail).")
    p.add_argument("new", metavar="NEW", help="leaderboard CSV or run / sweep directory")
    p.add_argument("baseline", metavar="BASELINE", help="leaderboard CSV or run / sweep directory")
    p.add_argument("--tolerance", type=float, default=0.25, help="relative tolerance (default 0.25 = 25%%)")
    p.add_argument("--mse-floor", type=float, default=0.05, help="absolute MSE slack in bits² (default 0.05)")
    p.add_argument("--bias-floor", type=float, default=0.1, help="absolute |bias| slack in bits (default 0.1)")
    p.add_argument("--metrics", default="mse,bias", help="what is gated: mse, bias or mse,bias (default)")
    p.add_argument("--allow-missing", action="store_true", help="rows missing from NEW are not regressions")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from .gate import compare

    report = compare(args.new, args.baseline, tolerance=args.tolerance, mse_floor=args.mse_floor,
                     bias_floor=args.bias_floor, metrics=args.metrics, allow_missing=args.allow_missing)
    print(report.format())
    return EXIT_OK if report.ok else EXIT_REGRESSED


# ------------------------------------------------------------------------------------- plot


def _plot_parser(sub) -> None:
    p = sub.add_parser("plot", help="figures for a run or a sweep (staircase, bias/variance/MSE, sweep curves)",
                       description="Run directory: staircase.png (EWM-smoothed estimates over the true-MI "
                                   "staircase) and metrics.png (bias / variance / MSE per estimator and level).  "
                                   "Sweep directory: metrics_<setup>.png per setup (seeds pooled, 95%% t "
                                   "intervals) and sweep_<axis>_<task>.png for every axis that varies (ds, dr, "
                                   "nuisance, critic depth / width, batch size, critic type), in <dir>/plots.")
    p.add_argument("target", metavar="RUN_OR_SWEEP")
    p.add_argument("-o", "--out", help="output directory (default: the run directory, or <sweep>/plots)")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args) -> int:
    from .figures import plot_results

    paths = plot_results(args.target, args.out)
    for p in paths:
        print(f"wrote {p}")
    return EXIT_OK
