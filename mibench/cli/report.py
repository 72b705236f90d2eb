"""``mibench report``'s parser.  Light on purpose: building it (``mibench report --help``,
argument errors) imports neither torch nor numpy; :mod:`mibench.report.site` is imported when
the command runs."""
from __future__ import annotations

HELP = "a static leaderboard web page (tables, figures, metadata, reproduce commands) for run / sweep directories"


def register_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "report", help=HELP,
        description="Write a self-contained leaderboard page for run, sweep or results directories: SITE/index.html "
                    "with a sortable table per setup (95% intervals, estimator kind, seconds per estimate, status), "
                    "the bias / variance / MSE and staircase figures, per-estimator descriptions, the run metadata "
                    "and the commands that reproduce the results. Opens from disk (no server, no network) and "
                    "can be published as it is.")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="run, sweep or results directories (e.g. results/table3)")
    p.add_argument("-o", "--out", required=True, metavar="SITE", help="directory to write the page into")
    p.add_argument("--title", default="MI estimator leaderboard", help="page title")
    p.add_argument("--no-figures", action="store_true", help="tables and metadata only")
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    import shlex

    from mibench.report.site import write_site

    words = ["mibench", "report", *args.dirs, "-o", args.out]
    if args.title != "MI estimator leaderboard":
        words += ["--title", args.title]
    if args.no_figures:
        words.append("--no-figures")
    index = write_site(args.dirs, args.out, title=args.title, figures=not args.no_figures,
                       command=" ".join(shlex.quote(w) for w in words))
    _note_incomplete(args.dirs)
    print(f"wrote {index} (open it in a browser; the directory {args.out} is self-contained)")
    return 0


def _note_incomplete(dirs) -> None:
    """Like ``mibench leaderboard``: a note per run left out of the ranking (not complete)."""
    import sys

    from mibench.records import find_run_dirs
    from mibench.sweep.plan import cell_status

    for d in find_run_dirs(dirs)[1]:
        print(f"note: skipping incomplete run {d} ({cell_status(d) or 'unreadable'}; listed on the page)",
              file=sys.stderr)
