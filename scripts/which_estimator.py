#!/usr/bin/env python
"""Write the "Which estimator?" table of README.md and docs/estimators.md from the committed results:
per data family the leader and the runner-up (error in bits, seconds per estimate) and the estimators
far off there, from results/reference/families.csv (the reference table, every family whole).

    python scripts/which_estimator.py          # rewrite the block between the markers in both files
    python scripts/which_estimator.py --check  # exit 1 when either file's block differs

tests/analysis/test_reference_views.py runs ``--check``, so the README's claims follow the results.
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- which-estimator: begin (scripts/which_estimator.py) -->", "<!-- which-estimator: end -->"
FILES = (ROOT / "README.md", ROOT / "docs" / "estimators.md")
#: an estimator is "far off" where its error (mean |seed mean - truth| over the family's tasks) exceeds this many
#: times the family's median error: the error, not the bias, whose signs can cancel over the tasks
FAR = 3.0
#: far-off estimators named with their numbers; the others beyond FAR are named after them
SHOWN = 3


def _secs(v: str) -> str:
    s = float(v)
    return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"


def _far(rows) -> str:
    """The estimators beyond FAR x the family's median error, furthest first: the first SHOWN with their
    error and mean bias, the rest by name."""
    median = statistics.median(float(r["mae_bits"]) for r in rows)
    far = sorted((r for r in rows if float(r["mae_bits"]) > FAR * max(median, 0.01)),
                 key=lambda r: -float(r["mae_bits"]))
    shown = ", ".join(f"`{r['estimator']}` {float(r['mae_bits']):.2f} ({float(r['mean_bias_bits']):+.2f})"
                      for r in far[:SHOWN])
    rest = ", ".join(f"`{r['estimator']}`" for r in far[SHOWN:])
    return (shown + (f"; also {rest}" if rest else "")) or "none"


def reference_rows(path: Path) -> list[str]:
    rows = list(csv.DictReader(path.open()))
    out = []
    for family in dict.fromkeys(r["family"] for r in rows):
        g = sorted((r for r in rows if r["family"] == family), key=lambda r: int(r["rank"]))
        tasks = max(int(r["cells"]) for r in g)
        ok = [r for r in g if r["mae_bits"] not in ("", "nan")]
        if len(ok) < 2:
            continue

        def cell(r):          # an estimator with fewer tasks than the family's so far says how many
            fewer = f"{r['cells']} of {tasks} tasks, " if int(r["cells"]) < tasks else ""
            return f"`{r['estimator']}` {float(r['mae_bits']):.3f} ({fewer}{_secs(r['seconds'])})"

        lead, second = ok[0], ok[1]
        far = _far(ok)
        failed = [r["estimator"] for r in g if int(r["failed_cells"])]
        if failed:
            far += "; failed or flagged seeds: " + ", ".join(f"`{e}`" for e in failed)
        out.append(f"| {family} ({tasks} task{'s' if tasks > 1 else ''}, {len(g)} estimators) | {cell(lead)} | "
                   f"{cell(second)} | {far} |")
    return out


def block() -> str:
    ref = ROOT / "results" / "reference" / "families.csv"
    lines = [BEGIN, "| data family (tasks) | leader: error in bits (s / estimate) | runner-up | far off there: "
             "error (bias) in bits |", "| --- | --- | --- | --- |", *reference_rows(ref), END]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 where a file's table differs from the results")
    args = p.parse_args(argv)
    new = block()
    stale = []
    for f in FILES:
        text = f.read_text()
        if BEGIN not in text or END not in text:
            print(f"{f.relative_to(ROOT)}: no {BEGIN!r} ... {END!r} block", file=sys.stderr)
            return 1
        head, rest = text.split(BEGIN, 1)
        updated = head + new + rest.split(END, 1)[1]
        if updated != text:
            stale.append(f.relative_to(ROOT))
            if not args.check:
                f.write_text(updated)
    if args.check and stale:
        print(f"stale 'Which estimator?' table in {', '.join(map(str, stale))}: run python scripts/which_estimator.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
