"""The mibench-vs-reference tables of compare_generative.py and compare_diffusion_flows.py: writing
one as it runs, reading its per-seed rows back, and the agreement rule of their summaries.

A row is ``case bits seed estimator mibench seconds reference seconds`` (bits; '#' lines are comments).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np


def table_writer(out: Path, lines: list[str]):
    """An ``emit(line)`` that prints the line, appends it to ``lines`` and rewrites ``out`` with them
    all, so a run stopped early still leaves its table."""
    def emit(s: str = "") -> None:
        print(s, flush=True)
        lines.append(s)
        out.write_text("\n".join(lines) + "\n")
    return emit


def read_rows(path: Path) -> list[dict]:
    """The per-seed rows of a table written by a compare script."""
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 8 and not line.startswith(("#", "case")):
            case, bits, seed, est, mine, secs, ref, ref_secs = parts
            rows.append({"case": f"{case}@{bits}", "truth": float(bits), "seed": int(seed), "estimator": est,
                         "mibench": float(mine), "seconds": float(secs), "reference": float(ref),
                         "ref_seconds": float(ref_secs)})
    return rows


def seed_sd(values) -> float:
    """Sample standard deviation over seeds (NaN for one seed)."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")


def agreement(a, b) -> tuple[float, float, str]:
    """(|difference of the means|, combined spread sd_a + sd_b, verdict): ``agree`` when the difference
    is within the spread, ``DISAGREE`` when not, ``one seed`` when there is no spread."""
    diff = abs(np.nanmean(a) - np.nanmean(b))
    spread = seed_sd(a) + seed_sd(b)
    verdict = "agree" if diff <= spread else ("DISAGREE" if np.isfinite(spread) else "one seed")
    return diff, spread, verdict


def summarize_file(path: Path, summarize, drop: tuple[str, ...] = ()) -> int:
    """Append ``summarize(rows, emit)``'s summary to a table from its own rows, first removing the lines
    that start with any of ``drop`` (an earlier summary)."""
    rows = read_rows(path)
    lines = [ln for ln in path.read_text().splitlines() if not (drop and ln.startswith(drop))]
    summarize(rows, lambda s="": (print(s), lines.append(s)))
    path.write_text("\n".join(lines) + "\n")
    return 0
