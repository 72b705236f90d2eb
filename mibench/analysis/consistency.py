"""The self-consistency table (Song & Ermon, ICLR 2020, §5): what each estimator's own values say
about the three properties any correct MI estimate has (:mod:`mibench.tasks.consistency`), from the
estimates ``mibench consistency`` recorded (:mod:`mibench.analysis.consistency_run`).

Per dataset, critic and estimator, over seeds:

* **baseline**: the mean estimate at every t of the grid; ``zero`` = the value at t = 0 (must be 0:
  passes within :data:`ZERO_TOL`); ``violations`` = how many times the curve of means falls from one
  t to the next by more than max(:data:`MONOTONE_ABS`, :data:`MONOTONE_REL` x the value before);
  the baseline test passes with ``zero`` within tolerance and no violation.
* **data processing**: per seed, the ratio I([X, X]; [Y, h(Y)]) / I(X; Y) at each t of the ratio
  rows, averaged over them; the table gives its mean over seeds and the half-width of the 95%
  Student-t interval; passes when the mean is within :data:`DP_TOL` of 1.
* **additivity**: the same with I([X1, X2]; [Y1, Y2]) / I(X1; Y1); passes within :data:`ADD_TOL` of 2.

An estimate that diverged (NaN) leaves its seed out of that mean; a ratio over a baseline of 0 is
left out too.  The ``exact`` row is the truth where it is known (the pool entropy of the masked
images for noise 0, the closed form for the Gaussian analogue; :meth:`SelfConsistencyTask.truth_bits`):
it passes every test by construction and shows the scale the estimators are judged against.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

ZERO_TOL = 0.1          # bits: |I(t = 0)| within this passes
MONOTONE_ABS = 0.05     # bits: a fall of the baseline curve up to this is not a violation ...
MONOTONE_REL = 0.02     # ... nor up to this share of the value before it
DP_TOL = 0.1            # |ratio - 1| within this passes
ADD_TOL = 0.2           # |ratio - 2| within this passes
EXACT = "exact"

SUMMARY_COLUMNS = ["dataset", "estimator", "critic", "zero", "zero_ci95", "top", "violations", "baseline_curve",
                   "dp_ratio", "dp_ratio_ci95", "dp_by_rows", "add_ratio", "add_ratio_ci95", "add_by_rows",
                   "pass_baseline", "pass_dp", "pass_additivity", "passes", "n_seeds", "wall_seconds"]


def ci95(values) -> float:
    """Half-width of the 95% Student-t interval of the mean (NaN with fewer than two values)."""
    v = np.asarray([x for x in values if math.isfinite(x)], dtype=float)
    if v.size < 2:
        return float("nan")
    from scipy import stats

    return float(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / math.sqrt(v.size))


def _mean(values) -> float:
    v = [x for x in values if math.isfinite(x)]
    return float(np.mean(v)) if v else float("nan")


def violations(curve: list[tuple[int, float]]) -> int:
    """Falls of the curve ``[(t, mean estimate), ...]`` (sorted by t) beyond the tolerance (module docstring)."""
    out = 0
    for (_, a), (_, b) in zip(curve, curve[1:]):
        if math.isfinite(a) and math.isfinite(b) and a - b > max(MONOTONE_ABS, MONOTONE_REL * abs(a)):
            out += 1
    return out


def _ratios(values: dict, test: str, ratio_rows: list[int], seeds: list[int]) -> tuple[list[float], dict]:
    """Per seed, the mean over ``ratio_rows`` of test / baseline; and per t, the mean ratio over seeds."""
    per_seed, by_rows = [], {}
    for t in ratio_rows:
        by_rows[t] = []
    for s in seeds:
        rs = []
        for t in ratio_rows:
            num, den = values.get((test, t, s), float("nan")), values.get(("baseline", t, s), float("nan"))
            r = num / den if math.isfinite(num) and math.isfinite(den) and den > 0 else float("nan")
            by_rows[t].append(r)
            rs.append(r)
        per_seed.append(_mean(rs))
    return per_seed, {t: _mean(v) for t, v in by_rows.items()}


def summarize_group(values: dict, rows: list[int], ratio_rows: list[int], seeds: list[int]) -> dict:
    """One table row from ``values[(test, t, seed)] = bits`` (module docstring)."""
    curve = [(t, _mean([values.get(("baseline", t, s), float("nan")) for s in seeds])) for t in rows]
    zeros = [values.get(("baseline", 0, s), float("nan")) for s in seeds] if 0 in rows else []
    dp, dp_rows = _ratios(values, "dp", ratio_rows, seeds)
    add, add_rows = _ratios(values, "additivity", ratio_rows, seeds)
    out = {"zero": _mean(zeros), "zero_ci95": ci95(zeros), "top": curve[-1][1] if curve else float("nan"),
           "violations": violations(curve), "baseline_curve": " ".join(f"{t}:{_num(v)}" for t, v in curve),
           "dp_ratio": _mean(dp), "dp_ratio_ci95": ci95(dp),
           "dp_by_rows": " ".join(f"{t}:{_num(v)}" for t, v in dp_rows.items()),
           "add_ratio": _mean(add), "add_ratio_ci95": ci95(add),
           "add_by_rows": " ".join(f"{t}:{_num(v)}" for t, v in add_rows.items()),
           "n_seeds": sum(1 for s in seeds if any(math.isfinite(values.get(("baseline", t, s), float("nan")))
                                                  for t in rows))}
    # a grid point without a finite mean (every seed failed there) is a failure, not a point to skip
    complete = all(math.isfinite(v) for _, v in curve)
    out["pass_baseline"] = bool(zeros and abs(out["zero"]) <= ZERO_TOL and out["violations"] == 0 and complete)
    out["pass_dp"] = bool(abs(out["dp_ratio"] - 1.0) <= DP_TOL)
    out["pass_additivity"] = bool(abs(out["add_ratio"] - 2.0) <= ADD_TOL)
    passed = [n for n, k in (("baseline", "pass_baseline"), ("dp", "pass_dp"), ("additivity", "pass_additivity"))
              if out[k]]
    out["passes"] = ", ".join(passed) or "none"
    return out


def summarize(estimates: list[dict], grids: dict, seeds: list[int]) -> list[dict]:
    """Table rows from ``consistency_estimates.csv``'s rows; ``grids``: dataset -> (rows, ratio_rows)."""
    groups: dict = {}
    walls: dict = {}
    for r in estimates:
        key = (r["dataset"], r["estimator"], r["critic"])
        groups.setdefault(key, {})[(r["test"], int(r["rows"]), int(r["seed"]))] = float(r["estimate"])
        run = (r["dataset"], r["critic"], r["test"], int(r["rows"]), int(r["seed"]))
        walls.setdefault(key, {})[run] = float(r.get("seconds") or 0.0)
    out = []
    for (dataset, estimator, critic), values in groups.items():
        if dataset not in grids:
            continue
        rows, ratio = grids[dataset]
        row = {"dataset": dataset, "estimator": estimator, "critic": critic,
               **summarize_group(values, rows, ratio, seeds)}
        row["wall_seconds"] = round(sum(v for v in walls[(dataset, estimator, critic)].values() if math.isfinite(v)), 1)
        out.append(row)
    order = {d: i for i, d in enumerate(grids)}
    return sorted(out, key=lambda r: (order[r["dataset"]], r["estimator"] != EXACT, r["critic"], r["estimator"]))


def _num(v: float, digits: int = 3) -> str:
    """``v`` with ``digits`` decimals, or in scientific notation from 10^4 on (a diverging readout)."""
    return f"{v:.{digits}f}" if abs(v) < 1e4 or not math.isfinite(v) else f"{v:.2e}"


def _cell(v, ci=None, digits: int = 2) -> str:
    if not isinstance(v, (int, float)) or not math.isfinite(v):
        return "—"
    s = _num(v, digits)
    if ci is not None and isinstance(ci, float) and math.isfinite(ci):
        s += f" ± {_num(ci, digits)}"
    return s


def markdown(table: list[dict], meta: dict | None = None) -> str:
    """The table as Markdown: one block per dataset, then the baseline curves."""
    lines = []
    for dataset in dict.fromkeys(r["dataset"] for r in table):
        rows = [r for r in table if r["dataset"] == dataset]
        lines += [f"### {dataset}", "",
                  "| estimator | critic | I(t=0) | I(t=H) | violations | DP ratio (≈ 1) | additivity ratio (≈ 2) "
                  "| passes | seeds | wall (s) |", "|---|---|---:|---:|---:|---:|---:|---|---:|---:|"]
        for r in rows:
            lines.append(f"| {r['estimator']} | {r['critic'] or '—'} | {_cell(r['zero'], r['zero_ci95'])} | "
                         f"{_cell(r['top'])} | {r['violations']} | {_cell(r['dp_ratio'], r['dp_ratio_ci95'])} | "
                         f"{_cell(r['add_ratio'], r['add_ratio_ci95'])} | {r['passes']} | {r['n_seeds']} | "
                         f"{r['wall_seconds']:,.0f} |")
        lines += ["", f"Baseline curves (mean estimate in bits at each t, {dataset}):", "",
                  "| estimator | critic | "
                  + " | ".join(f"t={p.split(':')[0]}" for p in rows[0]["baseline_curve"].split())
                  + " |", "|---|---|" + "---:|" * len(rows[0]["baseline_curve"].split())]
        for r in rows:
            lines.append(f"| {r['estimator']} | {r['critic'] or '—'} | "
                         + " | ".join(p.split(":")[1] for p in r["baseline_curve"].split()) + " |")
        lines.append("")
    return "\n".join(lines)


def header_lines(meta: dict, run_seconds: float | None = None) -> list[str]:
    """What the table was run with, from consistency.json; ``run_seconds``: the cells' runs summed
    (else the invocations' wall times, which an interrupted invocation lacks)."""
    s = meta.get("settings", {})
    inv = meta.get("invocations") or [{}]
    spec = inv[-1].get("spec", {})
    env = inv[-1].get("environment", {})
    how = (f"streaming protocol, {s.get('steps')} steps of batch {spec.get('batch_size')} (lr {s.get('lr')}), the "
           f"estimate = the mean of the last {s.get('tail')} steps" if s.get("protocol") == "stream" else
           f"sample protocol, n = {s.get('n')} pairs through mibench.estimate")
    walls = [i.get("wall_seconds") for i in inv if isinstance(i.get("wall_seconds"), (int, float))]
    wall = (f"{run_seconds:,.0f} s of runs" if run_seconds is not None else f"{sum(walls):,.0f} s") \
        + f" over {len(inv)} invocation(s)"
    noise = "the task's default (0 for images, 2 for the Gaussian analogue)" if s.get("noise") is None else s["noise"]
    return [f"Self-consistency tests (Song & Ermon, ICLR 2020, §5): {how}; noise {noise}; "
            f"seeds {', '.join(map(str, spec.get('seeds', [])))}; mibench {env.get('mibench')}, torch "
            f"{env.get('torch')}, {env.get('torch_threads')} thread(s) on {env.get('device')}; wall time {wall}.",
            f"Passes: |I(t=0)| <= {ZERO_TOL} bits and no fall of the baseline curve beyond "
            f"max({MONOTONE_ABS} bits, {MONOTONE_REL:.0%}); |DP ratio - 1| <= {DP_TOL}; |additivity ratio - 2| <= "
            f"{ADD_TOL}. ± is the 95% Student-t half-width over seeds. Wall: the seconds of the runs the estimator "
            "trained in (shared with the estimators of the same run)."]


def read_estimates(path: Path) -> list[dict]:
    """The rows of ``consistency_estimates.csv`` (numbers as floats / ints)."""
    import csv

    if not path.is_file():
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["rows"], r["seed"] = int(r["rows"]), int(r["seed"])
        r["estimate"] = float(r["estimate"]) if r["estimate"] not in ("", "nan") else float("nan")
        r["seconds"] = float(r["seconds"] or "nan")
    return rows


def write_tables(out, estimates: list[dict], grids: dict, seeds: list[int]) -> list[dict]:
    """``consistency.csv`` and ``consistency.md`` in ``out`` from ``estimates`` (:func:`summarize`), headed
    by what ``out/consistency.json`` records."""
    import csv

    from mibench.records.io import read_json, write_json, write_text

    out = Path(out)
    table = summarize(estimates, grids, seeds)
    meta = read_json(out / "consistency.json", "consistency.json")
    with open(out / "consistency.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows([{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in table])
    runs = {(r["dataset"], r["critic"], r["test"], r["rows"], r["seed"]): float(r["seconds"]) for r in estimates
            if r["estimator"] != EXACT and math.isfinite(float(r["seconds"]))}
    meta["run_seconds"] = round(sum(runs.values()), 1)
    write_json(out / "consistency.json", meta)
    write_text(out / "consistency.md", "\n\n".join(header_lines(meta, meta["run_seconds"])) + "\n\n"
               + markdown(table) + "\n")
    return table


def read_tables(paths) -> list[dict]:
    """Every self-consistency table under ``paths`` (for the report): ``{"dir", "source" (the path given it
    was found under), "header", "rows", "commands"}``."""
    import csv

    found = []
    for p in map(Path, paths):
        metas = [p / "consistency.json"] if (p / "consistency.json").is_file() else sorted(p.rglob("consistency.json"))
        for meta_path in metas:
            table = meta_path.with_name("consistency.csv")
            if not table.is_file():
                continue
            try:
                meta = json.loads(meta_path.read_text())
                with open(table, newline="") as f:
                    rows = list(csv.DictReader(f))
            except (OSError, ValueError):
                continue
            commands = list(dict.fromkeys(i["command"] for i in meta.get("invocations", []) if i.get("command")))
            found.append({"dir": meta_path.parent, "source": p, "header": header_lines(meta, meta.get("run_seconds")),
                          "rows": rows,
                          "commands": commands})
    return found
