"""The reference table's views (mibench.analysis.reference): families, the per-family ranking, outliers,
how often each status was right and the heatmap, on a small leaderboard built by hand."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from mibench.analysis import reference as R


@pytest.mark.parametrize("task, families", [
    ("multinormal-dense-5-5-0.5", (R.GAUSSIAN,)), ("multinormal-dense-50-50-0.5", (R.GAUSSIAN, R.HIGH_DIM)),
    ("student-identity-3-3-2", (R.HEAVY,)), ("asinh-student-identity-5-5-2", (R.HEAVY,)),
    ("half_cube-multinormal-sparse-25-25-2-2.0", (R.MARGINS, R.HIGH_DIM)), ("1v1-bimodal-0.75", (R.MARGINS,)),
    ("spiral-normal_cdf-multinormal-sparse-3-3-2-2.0", (R.NONLINEAR,)), ("1v1-additive-0.1", (R.NONLINEAR,)),
    ("swissroll_x-normal_cdf-1v1-normal-0.75", (R.NONLINEAR,)), ("mutinfo-gaussian2d-32x32", (R.IMAGES,)),
    ("vision", (R.IMAGES,)), ("text", (R.TEXT,)), ("gaussian", (R.GAUSSIAN,)),
])
def test_families(task, families):
    assert R.family_of(task) == families


def board(rows):
    base = {"task_params": "", "kind": "critic", "bound": "estimate", "bound_check": "", "n_seeds": 3,
            "diverged_seeds": 0, "seconds": 1.0}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_the_ranking_puts_failures_last_and_finds_outliers():
    rows = []
    for task in ("multinormal-dense-2-2-0.5", "multinormal-dense-3-3-0.5"):
        rows += [{"task": task, "true_mi": 1.0, "estimator": "good", "mean_estimate": 1.02},
                 {"task": task, "true_mi": 1.0, "estimator": "fair", "mean_estimate": 0.9},
                 {"task": task, "true_mi": 1.0, "estimator": "mid", "mean_estimate": 0.85},
                 {"task": task, "true_mi": 1.0, "estimator": "wild", "mean_estimate": 3.0},
                 {"task": task, "true_mi": 1.0, "estimator": "broken", "mean_estimate": 1.0, "diverged_seeds": 1},
                 {"task": task, "true_mi": 1.0, "estimator": "lb", "mean_estimate": 1.5, "bound": "lower bound",
                  "bound_check": "above truth"}]
    b = board(rows)
    table = R.family_table(b)
    order = table.sort_values("rank")["estimator"].tolist()
    assert order[0] == "good" and order[-1] == "broken"
    assert table.set_index("estimator").loc["good", "mae_bits"] == pytest.approx(0.02)
    out = R.outliers(b)
    whats = set(zip(out["estimator"], out["what"]))
    assert ("wild", "far from its peers") in whats and ("broken", "failed") in whats
    assert ("lb", "lower bound above truth") in whats and ("good", "far from its peers") not in whats
    md = R.family_markdown(table)
    assert md.startswith("### Gaussian") and "| 1 | good |" in md


def test_status_accuracy_counts_right_and_wrong_claims():
    rows = [{"status": "ok", "mi_status": "converged", "estimate": 1.01, "true_mi": 1.0},
            {"status": "ok", "mi_status": "converged", "estimate": 2.0, "true_mi": 1.0},
            {"status": "ok", "mi_status": "still_improving", "estimate": 0.5, "true_mi": 1.0},
            {"status": "implausible", "mi_status": "failed_fit", "estimate": -30.0, "true_mi": 1.0},
            {"status": "error", "mi_status": "", "estimate": math.nan, "true_mi": 1.0}]
    t = R.status_accuracy(rows).set_index("status")
    assert t.loc["converged", "estimates"] == 2 and t.loc["converged", "right"] == 1
    assert t.loc["still_improving", "right"] == 1 and t.loc["failed_fit", "right"] == 1
    assert "error" not in t.index          # no estimate, no status to judge (was: a "right" warning)
    rows = [{**r, "estimator": e} for r, e in zip(rows, ("a", "b", "a", "a", "a"))]
    per = R.status_accuracy(rows, by=("estimator",)).set_index(["estimator", "status"])
    assert per.loc[("a", "converged"), "right"] == 1 and per.loc[("b", "converged"), "right"] == 0


def test_an_estimator_missing_a_task_of_the_family_ranks_after_those_with_all():
    """A mean error over fewer tasks is not comparable: nwj led the Gaussian family on 4 of its 5 tasks,
    without the 50 x 50 where every estimator was about 0.23 bits off."""
    rows = []
    for task, off in (("multinormal-dense-2-2-0.5", 0.01), ("multinormal-dense-3-3-0.5", 0.01),
                      ("multinormal-dense-50-50-0.5", 0.3)):
        rows += [{"task": task, "true_mi": 1.0, "estimator": "all", "mean_estimate": 1.0 + off}]
        if off < 0.1:
            rows += [{"task": task, "true_mi": 1.0, "estimator": "easy-only", "mean_estimate": 1.02}]
    table = R.family_table(board(rows))
    table = table[table["family"] == R.GAUSSIAN].set_index("estimator")
    assert table.loc["easy-only", "mae_bits"] < table.loc["all", "mae_bits"]
    assert table.loc["all", "rank"] == 1 and table.loc["easy-only", "rank"] == 2
    assert table.loc["easy-only", "family_cells"] == 3 and table.loc["easy-only", "cells"] == 2


def test_the_views_are_written(tmp_path):
    rows = [{"task": t, "true_mi": 1.0, "estimator": e, "mean_estimate": v}
            for t in ("multinormal-dense-2-2-0.5", "student-identity-2-2-1") for e, v in (("a", 1.0), ("b", 0.7))]
    paths = R.write_views(board(rows), tmp_path, rows=[])
    names = {p.name for p in paths}
    assert {"families.csv", "families.md", "outliers.csv", "heatmap.png", "statuses.csv"} <= names
    assert (tmp_path / "heatmap.png").read_bytes()[:4] == b"\x89PNG"


def test_readme_which_estimator_table_follows_the_committed_results():
    """README's and docs/estimators.md's "Which estimator?" rows are what scripts/which_estimator.py writes
    from results/reference/families.csv: a result that changes a leader, an
    error or a far-off estimator makes the docs stale, and this test says so."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "which_estimator.py"
    spec = importlib.util.spec_from_file_location("which_estimator", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--check"]) == 0
    import csv

    table = path.parents[1] / "results" / "reference" / "families.csv"
    families = {r["family"] for r in csv.DictReader(table.open())}
    readme = (path.parents[1] / "README.md").read_text()
    assert families and all(f"| {family} (" in readme for family in families)     # every family has its row


def _coverage_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "reference_coverage.py"
    spec = importlib.util.spec_from_file_location("reference_coverage", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_coverage_forecasts_a_remaining_cell_from_the_same_estimators_seconds(tmp_path):
    """A queued BMI cell is forecast at its estimator's median seconds per estimate on the complete BMI
    cells, times its estimates (seeds x MI levels); a cell marked complete in sweep.json whose record is
    missing is still to run (as the sweep's plan decides), not complete and not forgotten."""
    import json

    def cell(d, task, status, mi=0.5):
        return {"dir": d, "status": status,
                "config": {"task": task, "estimators": ["nwj"], "seeds": [0, 1, 2], "mi": mi}}
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text(json.dumps({"status": "complete", "wall_seconds": 30.0}))
    cells = [cell("a", "multinormal-dense-2-2-0.5", "complete"), cell("b", "student-identity-1-1-1", "complete"),
             cell("c", "multinormal-dense-3-3-0.5", "queued", mi=[0.1, 0.2])]
    (tmp_path / "sweep.json").write_text(json.dumps({"cells": cells, "invocations": []}))
    c = _coverage_module().coverage(tmp_path)
    assert c["complete"] == 1 and c["compute_hours"] == 30.0 / 3600
    assert c["remaining_cells"] == {"BMI": 2}
    assert abs(c["remaining_hours"]["BMI"] * 3600 - (3 + 6) * 10.0) < 1e-9


def test_reference_readme_coverage_is_the_committed_cells():
    """results/reference/README.md's "Coverage" count is the committed cells' (the packaged copy,
    re-exported with every slice, holds exactly them; the sweep directory may hold more while a slice runs):
    a slice committed without updating README fails here."""
    import json
    import re
    from pathlib import Path

    from mibench.analysis.baselines import REFERENCE, load_packaged

    root = Path(__file__).resolve().parents[2]
    committed = len(load_packaged(REFERENCE.packaged)["runs"])
    cells = len(json.loads((root / "results" / "reference" / "sweep" / "sweep.json").read_text())["cells"])
    text = (root / "results" / "reference" / "README.md").read_text()
    m = re.search(r"\*\*Coverage[^*]*\*\*[^:]*: ([\d,]+) of the ([\d,]+) cells", text)
    assert m, "results/reference/README.md has no 'Coverage' line"
    assert (int(m[1].replace(",", "")), int(m[2].replace(",", ""))) == (committed, cells)


def test_views_of_two_leaderboards_in_one_directory_do_not_overwrite_each_other(tmp_path, capsys):
    """`mibench leaderboard RUNS -o DIR/a.csv --families` wrote DIR/families.csv etc. whatever the CSV's name,
    so a second board in DIR replaced the first one's views."""
    import shutil
    from pathlib import Path

    from mibench.cli import main

    sweep = Path(__file__).resolve().parents[2] / "results" / "reference" / "sweep"
    cells = sorted(p.parent for p in sweep.glob("student-identity-5-5-2_*/summary.csv"))[:3]
    for c in cells:
        shutil.copytree(c, tmp_path / "runs" / c.name)
    assert main(["leaderboard", str(tmp_path / "runs"), "-o", str(tmp_path / "out" / "leaderboard.csv"),
                 "--families"]) == 0
    assert main(["leaderboard", str(tmp_path / "runs" / cells[0].name), "-o", str(tmp_path / "out" / "one.csv"),
                 "--families"]) == 0
    out = tmp_path / "out"
    assert (out / "one_families.csv").is_file() and (out / "one_heatmap.png").is_file()
    assert len(pd.read_csv(out / "families.csv")) == 3 and len(pd.read_csv(out / "one_families.csv")) == 1
