"""Running a peer's runner (``run_peer``: the peer's own python on one .npz, its JSON lines read back;
used by compare_generative.py, compare_authors.py and ../bench_accuracy.py) and the mibench-vs-reference
tables of the two compare scripts: writing one as it runs, reading its per-seed rows back, and the
agreement rule of their summaries.  Needs numpy only (mibench is imported by the callers, not here).

A row is ``case bits seed estimator mibench seconds reference seconds`` (bits; '#' lines are comments).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def run_peer(python: str, runner: str, names: list[str], path: str, *, timeout: float, options=(),
             env: dict | None = None, settings: dict | None = None) -> dict:
    """{name: (nats, seconds)} from ``benchmarks/peers/<runner>`` run by a peer environment's ``python``
    on the .npz at ``path``: one JSON line per name (peers/common.py), NaN for a name without one (the
    runner failed, or had not reached it within ``timeout`` seconds: the lines written by then are kept).
    ``options``: more runner arguments (``--seed S``, ``--matched``); ``env``: added to this process's
    environment; ``settings``, when given, receives each name's settings line.  Failures are reported on
    stderr, never raised."""
    out = {n: (math.nan, math.nan) for n in names}
    cmd = [python, str(Path(__file__).with_name(runner)), ",".join(names), path, *options]
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **(env or {})})
        last = (proc.stderr.strip().splitlines() or [""])[-1]
        stdout, failed = proc.stdout, proc.returncode and f"exited {proc.returncode} ({last})"
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        failed = f"timed out after {timeout:.0f} s"
    for line in stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            out[r["estimator"]] = (r["mi_nats"], r["seconds"])
            if settings is not None:
                settings.setdefault(r["estimator"], r.get("settings", ""))
            if r.get("error"):
                print(f"# {runner} {r['estimator']}: {r['error']}", file=sys.stderr)
    if failed:
        print(f"# {runner} {failed} on {path}", file=sys.stderr)
    return out


def compare_parser(names: list[str], cases_help: str, out: Path, peer_timeout: float) -> argparse.ArgumentParser:
    """The flags of both compare scripts: which estimators, cases, n, seeds and output; the reference's
    timeout; ``--summarize`` a stopped run's table; either side's column taken from earlier tables."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--estimators", default=",".join(names))
    ap.add_argument("--cases", default=None, help=f"comma-separated CASE@BITS (default: {cases_help})")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--peer-timeout", type=float, default=peer_timeout,
                    help="seconds per reference call (all its estimators on one dataset); NaN past it")
    ap.add_argument("--out", default=str(out))
    ap.add_argument("--summarize", default=None, metavar="FILE", help="append the summary to a stopped run's table")
    for side, instead in (("mibench", "estimating again"), ("reference", "running the reference again")):
        ap.add_argument(f"--{side}-from", default=None, metavar="TABLE[,TABLE]",
                        help=f"take the {side} column (value and seconds) of a (case, seed, estimator) from earlier "
                             f"tables of this script (the same data and settings) instead of {instead}")
    return ap


def parse_cases(text: str | None, default: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """``--cases CASE@BITS,...`` as [(case, bits)]; ``default`` when not given."""
    if text is None:
        return default
    return [(c.split("@")[0], float(c.split("@")[1])) for c in text.split(",")]


def draw_case(case: str, bits: float, n: int, seed: int):
    """``n`` pairs of ``case``: a distributions-family case at ``bits`` (``mibench.tasks.distributions.draw``),
    or a fixed-MI catalogue task (BMI's ``multinormal-dense-50-50-0.5``; ``bits`` is then its own level)
    drawn as the sample protocol draws it, so the pairs are the reference table's."""
    from mibench.protocols.sample.run import draw_dataset
    from mibench.tasks import make_task
    from mibench.tasks.distributions import draw

    task = make_task(case)
    if getattr(task, "mi_nats", None) is not None:          # a catalogue task at its one fixed level
        return draw_dataset(task, n, task.mi_bits, seed)
    x, y, _ = draw(case, n, mi_bits=bits, seed=seed)
    return x, y


def npz_cases(cases: list[tuple[str, float]], seeds, n: int, folder):
    """(case, bits, seed, x, y, path) for each seed (outer loop) and case: ``n`` pairs (:func:`draw_case`),
    also saved as a float32 .npz (with the seed) under ``folder`` for the reference side."""
    for seed in seeds:
        for case, bits in cases:
            x, y = draw_case(case, bits, n, seed)
            path = str(Path(folder) / f"{case}_{bits:g}_{seed}.npz")
            np.savez(path, x=np.asarray(x, np.float32), y=np.asarray(y, np.float32), seed=seed)
            yield case, bits, seed, x, y, path


def earlier_values(tables: str | None, side: str) -> dict:
    """{(case@bits, seed, mibench estimator): (nats, seconds)} of one side (``"mibench"`` or
    ``"reference"``) in earlier tables of a compare script (comma-separated paths; none: {})."""
    secs = "seconds" if side == "mibench" else "ref_seconds"
    return {(r["case"], r["seed"], r["estimator"]): (r[side] * math.log(2), r[secs])
            for t in (tables.split(",") if tables else []) for r in read_rows(Path(t))}


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
