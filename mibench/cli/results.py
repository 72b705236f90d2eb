"""``mibench leaderboard``, ``mibench compare`` and ``mibench plot``: reading what runs recorded."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mibench.cli.args import printing_result
from mibench.errors import EXIT_OK, EXIT_REGRESSED, MibenchError


def register_cli(sub) -> None:
    _leaderboard_parser(sub)
    _compare_parser(sub)
    _plot_parser(sub)


# ------------------------------------------------------------------------------ leaderboard


def _leaderboard_parser(sub) -> None:
    p = sub.add_parser("leaderboard", help="aggregate runs over seeds into a ranked leaderboard (CSV + Markdown)",
                       description="Aggregate complete run directories (found recursively under RUNS: run dirs, "
                                   "sweep dirs, results/) over seeds: one row per task x estimator x critic x "
                                   "setup x true-MI level with mean bias, variance and MSE and their 95% "
                                   "t-intervals, ranked per setup by MSE averaged over levels.  Columns are "
                                   "documented in mibench.analysis.leaderboard.")
    p.add_argument("runs", nargs="+", metavar="RUNS", help="run or sweep directories")
    p.add_argument("-o", "--output", help="CSV path (also writes <stem>.md and <stem>.meta.json); "
                                          "without it the Markdown table goes to stdout")
    p.add_argument("--no-markdown", action="store_true", help="only the CSV (and the sidecar)")
    p.add_argument("--title", default="MI estimator leaderboard", help="Markdown title")
    p.add_argument("--families", action="store_true",
                   help="also write the reference views next to the CSV: the ranking per data family "
                        "(families.csv / .md), the estimator x task heatmap of the error (heatmap.png), the "
                        "outliers (outliers.csv) and how often each status was right (statuses.csv, "
                        "statuses_by_estimator.csv); named after the CSV (NAME_families.csv) unless it is "
                        "leaderboard.csv")
    p.set_defaults(func=cmd_leaderboard)


def _unfinished_sweep_cells(paths) -> list[str]:
    """A note per sweep directory among ``paths`` with cells that are not complete, counted as the report
    counts them (:func:`mibench.sweep.plan.cell_counts`: each cell's own run directory, else the manifest);
    a cell never started has no run directory, so no 'skipping incomplete run' line says it is missing."""
    from mibench.errors import UnreadableInput
    from mibench.records import read_manifest
    from mibench.sweep.plan import cell_counts

    notes = []
    for p in map(Path, paths):
        try:
            manifest = read_manifest(p) if p.is_dir() else None
        except UnreadableInput:
            continue            # a damaged manifest: the leaderboard reads the run directories, not it
        if not manifest:
            continue
        counts = cell_counts(p, manifest)
        total = sum(v for k, v in counts.items() if k != "diverged")
        left = total - counts.get("complete", 0)
        if left:
            notes.append(f"note: {left} of the {total} cells of the sweep {p} are not complete "
                         "(pending, interrupted or failed): the leaderboard holds the complete ones")
    return notes


def cmd_leaderboard(args) -> int:
    from mibench.analysis.leaderboard import SETUP_KEY, build, command_line, provenance, to_markdown, write_all

    if not args.output and (args.families or args.no_markdown):
        raise MibenchError(f"{'--families' if args.families else '--no-markdown'} needs -o/--output "
                           "(without it the leaderboard is printed as Markdown and nothing is written)")
    board, col = build(args.runs)
    for d in col.incomplete:
        print(f"note: skipping incomplete run {d}", file=sys.stderr)
    for note in _unfinished_sweep_cells(args.runs):
        print(note, file=sys.stderr)
    for d, first in col.duplicates:
        print(f"note: skipping {d}: the runs kept already hold each of its (estimator, seed) samples of this "
              f"setup (as {first} does)", file=sys.stderr)
    if not args.output:
        print(to_markdown(board, provenance(col, board, command_line()), args.title))
        return EXIT_OK
    paths = write_all(board, col, args.output, command=command_line(), markdown=not args.no_markdown)
    if args.families:
        from mibench.analysis.reference import estimate_rows, write_views

        stem = Path(args.output).stem         # leaderboard.csv -> families.csv; mine.csv -> mine_families.csv
        paths += write_views(board, Path(args.output).parent, rows=estimate_rows(col.runs),
                             prefix="" if stem == "leaderboard" else f"{stem}_")
    print(f"{len(board)} rows from {len(col.runs)} runs -> " + ", ".join(map(str, paths)))
    failed = board.groupby(SETUP_KEY + ["estimator"], dropna=False)["diverged_seeds"].transform("sum")
    top = board[board["rank"] == 1].drop_duplicates(SETUP_KEY)
    named = ("task", "task_params", "critic", "layers", "hidden", "steps", "n", "protocol")
    # a setup field the line leaves out, where the setups differ in it: named, so no two lines read alike
    alike = top[top.duplicated(list(named), keep=False)].astype(str).groupby(list(named))
    extra = [k for k in SETUP_KEY if k not in named and len(alike) and alike[k].nunique().max() > 1]
    for _, r in top.iterrows():
        setup = (f"sample protocol, n = {int(r['n'])}" if r["n"] else
                 f"{r['critic']} {r['layers']}x{r['hidden']}, {r['steps']} steps")
        setup += "".join(f", {k} {r[k]}" for k in extra)
        print(f"  best on {r['task']}{' (' + r['task_params'] + ')' if r['task_params'] else ''} "
              f"[{setup}]: {r['estimator']} (MSE averaged over levels {r['rank_score']:.3f} bits²"
              + (f"; {int(failed[r.name])} failed estimate(s): every estimator here has some" if failed[r.name] else "")
              + ")")
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
                                   "leaderboard that is empty, truncated or damaged (an empty baseline, or with "
                                   "--allow-missing no row in common, is refused: a gate against nothing cannot "
                                   "fail).")
    p.add_argument("new", metavar="NEW", help="leaderboard CSV or run / sweep directory")
    p.add_argument("baseline", metavar="BASELINE", help="leaderboard CSV or run / sweep directory")
    p.add_argument("--tolerance", type=float, default=0.25, help="relative tolerance (default 0.25 = 25%%)")
    p.add_argument("--mse-floor", type=float, default=0.05, help="absolute MSE slack in bits² (default 0.05)")
    p.add_argument("--bias-floor", type=float, default=0.1, help="absolute |bias| slack in bits (default 0.1)")
    p.add_argument("--metrics", default="mse,bias", help="what is gated: mse, bias or mse,bias (default)")
    p.add_argument("--allow-missing", action="store_true", help="rows missing from NEW are not regressions")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    from mibench.analysis.gate import compare

    report = compare(args.new, args.baseline, tolerance=args.tolerance, mse_floor=args.mse_floor,
                     bias_floor=args.bias_floor, metrics=args.metrics, allow_missing=args.allow_missing)
    code = EXIT_OK if report.ok else EXIT_REGRESSED
    with printing_result(code):
        print(report.format())
    return code


# ------------------------------------------------------------------------------------- plot


def _plot_parser(sub) -> None:
    p = sub.add_parser("plot", help="figures for a run or a sweep (staircase, bias/variance/MSE, sweep curves)",
                       description="Run directory: staircase.png (EWM-smoothed estimates over the true-MI "
                                   "staircase) and metrics.png (bias / variance / MSE per estimator and level).  "
                                   "Sweep directory: metrics_<setup>.png per setup (seeds pooled, 95% t "
                                   "intervals) and sweep_<axis>_<task>.png for every axis that varies (ds, dr, "
                                   "nuisance, critic depth / width, batch size, critic type), in <dir>/plots.")
    p.add_argument("target", metavar="RUN_OR_SWEEP")
    p.add_argument("-o", "--out", help="output directory (default: the run directory, or <sweep>/plots)")
    p.set_defaults(func=cmd_plot)


def cmd_plot(args) -> int:
    from mibench.analysis.run_figures import plot_results

    paths = plot_results(args.target, args.out)
    for p in paths:
        print(f"wrote {p}")
    return EXIT_OK
