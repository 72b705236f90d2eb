"""The mibench-vs-reference tables of compare_generative.py and compare_authors.py: writing
one as it runs, reading its per-seed rows back, and the agreement rule of their summaries.

A row is ``case bits seed estimator mibench seconds reference seconds`` (bits; '#' lines are comments).
"""
from __future__ import annotations

import math
import sys
import time
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


def timed_estimate(name: str, estimate) -> tuple[float, float]:
    """(nats, seconds) of ``estimate()``; a failure is a recorded NaN (its error on stderr), not a crash."""
    t0 = time.perf_counter()
    try:
        nats = estimate()
    except Exception as e:  # noqa: BLE001  (a failure is a recorded row)
        print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
        nats = math.nan
    return nats, time.perf_counter() - t0


def add_row(rows: list[dict], emit, case: str, bits: float, seed: int, name: str, mine: tuple[float, float],
            ref: tuple[float, float], widths: tuple[int, int, int]) -> None:
    """Append one per-seed row (the two sides' (nats, seconds), written in bits) to ``rows`` and emit it
    with the table's column ``widths`` (case, estimator, reference value)."""
    (m_nats, secs), (r_nats, r_secs) = mine, ref
    row = {"case": f"{case}@{bits:g}", "truth": bits, "seed": seed, "estimator": name, "mibench": m_nats / math.log(2),
           "seconds": secs, "reference": r_nats / math.log(2), "ref_seconds": r_secs}
    rows.append(row)
    wc, wn, wr = widths
    emit(f"{case:{wc}s} {bits:4g} {seed:4d} {name:{wn}s} {row['mibench']:8.3f} {secs:6.1f} "
         f"{row['reference']:{wr}.3f} {r_secs:6.1f}")


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


def per_case(rows: list[dict], key=None):
    """(case, estimator, rows, mibench values, reference values) for each (case, estimator) of the
    rows, sorted by ``key`` on (case, estimator) (default: plain order)."""
    for case, est in sorted({(r["case"], r["estimator"]) for r in rows}, key=key):
        sel = [r for r in rows if r["case"] == case and r["estimator"] == est]
        yield case, est, sel, np.array([r["mibench"] for r in sel]), np.array([r["reference"] for r in sel])


def exceeds_truth(values, truth: float) -> bool | None:
    """Whether a lower bound's seed mean exceeds the truth by more than its seed spread (None when
    the mean is not finite: every seed failed)."""
    mean, sd = np.nanmean(values), seed_sd(values)
    if not np.isfinite(mean):
        return None
    return bool(mean - truth > (sd if np.isfinite(sd) else 0.0))


def summarize_file(path: Path, summarize, drop: tuple[str, ...] = ()) -> int:
    """Append ``summarize(rows, emit)``'s summary to a table from its own rows, first removing the lines
    that start with any of ``drop`` (an earlier summary)."""
    rows = read_rows(path)
    lines = [ln for ln in path.read_text().splitlines() if not (drop and ln.startswith(drop))]
    summarize(rows, lambda s="": (print(s), lines.append(s)))
    path.write_text("\n".join(lines) + "\n")
    return 0
