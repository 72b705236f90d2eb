"""Leaderboard aggregation on hand-made run directories with known numbers; compare exit codes."""
import json
import math
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from fake_runs import write_fake_run

from mibench.analysis.gate import compare
from mibench.analysis.leaderboard import COLUMNS, build, read_leaderboard, write_all
from mibench.cli import main
from mibench.errors import MibenchError
from mibench.testing import assert_no_regression

T_975_DF2 = 4.302652729911275   # Student t quantile, 97.5%, 2 degrees of freedom

# seed -> (smile-5 rows, nwj rows) at levels 2 and 4 bits
BIAS = {"smile-5": {2.0: [0.1, 0.2, 0.3], 4.0: [-0.2, -0.4, -0.6]},
        "nwj": {2.0: [0.5, 0.5, 0.8], 4.0: [-1.0, -1.5, -2.0]}}
VAR = {"smile-5": {2.0: [0.01, 0.02, 0.03], 4.0: [0.1, 0.1, 0.1]},
       "nwj": {2.0: [0.05, 0.05, 0.05], 4.0: [0.2, 0.4, 0.6]}}


def _rows(seed):
    rows = []
    for est in ("smile-5", "nwj"):
        for lv in (2.0, 4.0):
            b, v = BIAS[est][lv][seed], VAR[est][lv][seed]
            rows.append({"estimator": est, "true_mi": lv, "bias": b, "variance": v, "mse": b * b + v})
    return rows


@pytest.fixture
def sweep_dir(tmp_path):
    root = tmp_path / "sweep"
    for seed in range(3):
        write_fake_run(root / f"gaussian_dim2_s{seed}", _rows(seed), task_params={"dim": 2}, seed=seed,
                       diverged={"nwj": 60} if seed == 2 else None)   # level 4 spans steps 50..99
    # an incomplete run (status running) and a run of another setup
    write_fake_run(root / "partial", _rows(0), task_params={"dim": 2}, seed=7, status="running")
    write_fake_run(root / "nested" / "gaussian_dim4_s0", _rows(0), task_params={"dim": 4}, seed=0, ds=4, dr=4)
    return root


def test_aggregation_matches_hand_computed_numbers(sweep_dir):
    board, col = build([sweep_dir])
    assert list(board.columns) == COLUMNS
    assert len(col.runs) == 4 and [p.name for p in col.incomplete] == ["partial"]
    dim2 = board[board.task_params == "dim=2"]
    assert len(dim2) == 4   # 2 estimators x 2 levels
    r = dim2[(dim2.estimator == "smile-5") & (dim2.true_mi == 2.0)].iloc[0]
    assert r.n_seeds == 3 and r.seeds == "0;1;2"
    assert r.bias == pytest.approx(0.2)
    assert r.bias_ci95 == pytest.approx(T_975_DF2 * 0.1 / math.sqrt(3))
    assert r.variance == pytest.approx(0.02)
    mses = [b * b + v for b, v in zip(BIAS["smile-5"][2.0], VAR["smile-5"][2.0])]
    assert r.mse == pytest.approx(sum(mses) / 3)
    sd = pd.Series(mses).std(ddof=1)
    assert r.mse_ci95 == pytest.approx(T_975_DF2 * sd / math.sqrt(3))
    assert r.mean_estimate == pytest.approx(2.2)
    assert r.abs_bias == pytest.approx(0.2)
    # rank by MSE averaged over levels: smile-5 beats nwj
    ranks = dim2.groupby("estimator")["rank"].first().to_dict()
    assert ranks == {"smile-5": 1, "nwj": 2}
    score = dim2[dim2.estimator == "smile-5"]["rank_score"].iloc[0]
    assert score == pytest.approx(dim2[dim2.estimator == "smile-5"]["mse"].mean())
    # nwj diverged at step 60 in seed 2: counts for level 4 (steps 50-99), not for level 2
    nwj = dim2[dim2.estimator == "nwj"].set_index("true_mi")["diverged_seeds"].to_dict()
    assert nwj == {2.0: 0, 4.0: 1}
    # single seed: no interval
    dim4 = board[board.task_params == "dim=4"]
    assert dim4.n_seeds.eq(1).all() and dim4.bias_ci95.isna().all()
    # stable order: setup, then rank, estimator, level
    assert list(zip(dim2.estimator, dim2.true_mi)) == [("smile-5", 2.0), ("smile-5", 4.0), ("nwj", 2.0), ("nwj", 4.0)]
    assert board.task_params.tolist()[:4] == ["dim=2"] * 4


def test_output_is_stable_and_duplicates_are_skipped(sweep_dir, tmp_path):
    a = write_all(*build([sweep_dir]), tmp_path / "a" / "lb.csv", command="x")
    shutil.copytree(sweep_dir / "gaussian_dim2_s1", sweep_dir / "zz_copy_of_s1")
    board, col = build([sweep_dir, sweep_dir / "nested"])   # overlapping inputs too
    assert len(col.duplicates) == 1 and col.duplicates[0][0].name == "zz_copy_of_s1"
    b = write_all(board, col, tmp_path / "b" / "lb.csv", command="x")
    assert a[0].read_bytes() == b[0].read_bytes()
    md = a[1].read_text()
    assert "| rank | estimator |" in md and "smile-5" in md and "## gaussian (dim=2)" in md
    meta = json.loads(a[2].read_text())
    assert meta["steps"] == [100] and meta["seeds"] == [0, 1, 2] and meta["runs"] == 4
    assert meta["incomplete_runs_skipped"] and meta["devices"] == ["cpu (test)"]
    back = read_leaderboard(a[0])
    assert list(back.columns) == COLUMNS and len(back) == 8


def test_a_seed_counts_once_whatever_runs_hold_it(sweep_dir):
    """Runs of one setup and seed with the estimators in another order, or a subset of them, are the
    same samples (they counted as three replicates with a 95% interval of 0); a run adding an
    estimator to a seed already held adds only that estimator's rows."""
    rows = _rows(1)
    write_fake_run(sweep_dir / "reordered", rows[2:] + rows[:2], task_params={"dim": 2}, seed=1)
    write_fake_run(sweep_dir / "subset", rows[:2], task_params={"dim": 2}, seed=1)
    extra = [{"estimator": "infonce", "true_mi": lv, "bias": 0.0, "variance": 0.1, "mse": 0.1} for lv in (2.0, 4.0)]
    write_fake_run(sweep_dir / "with_infonce", [*rows[:2], *extra], task_params={"dim": 2}, seed=1)
    board, col = build([sweep_dir])
    assert sorted(p.name for p, _ in col.duplicates) == ["reordered", "subset"]
    dim2 = board[board.task_params == "dim=2"].set_index(["estimator", "true_mi"])
    assert dim2.loc[("smile-5", 2.0), "n_seeds"] == 3 and dim2.loc[("smile-5", 2.0), "seeds"] == "0;1;2"
    assert dim2.loc[("nwj", 4.0), "n_seeds"] == 3
    assert dim2.loc[("infonce", 2.0), "n_seeds"] == 1


def test_an_estimator_with_failed_estimates_ranks_after_those_without(tmp_path, capsys):
    """'flaky' fails on seed 1 and is exact on seed 0; 'steady' answers both with an error: flaky's
    MSE over the seed that gave a value is 0, and it ranked first (the 'best on' line named it)."""
    for seed in (0, 1):
        rows = [{"estimator": "steady", "true_mi": 2.0, "bias": 0.5, "variance": 0.0, "mse": 0.25}]
        rows.append({"estimator": "flaky", "true_mi": 2.0, "bias": 0.0, "variance": 0.0, "mse": 0.0}
                    if seed == 0 else {"estimator": "flaky", "true_mi": 2.0, "bias": float("nan"),
                                       "variance": float("nan"), "mse": float("nan")})
        write_fake_run(tmp_path / "runs" / f"s{seed}", rows, seed=seed, levels=(2.0,),
                       diverged={"flaky": 10} if seed == 1 else None)
    board, _ = build([tmp_path / "runs"])
    ranks = dict(zip(board["estimator"], board["rank"]))
    scores = dict(zip(board["estimator"], board["rank_score"]))
    assert ranks == {"steady": 1, "flaky": 2} and scores["flaky"] < scores["steady"]
    assert main(["leaderboard", str(tmp_path / "runs"), "-o", str(tmp_path / "lb.csv")]) == 0
    assert "]: steady (MSE" in capsys.readouterr().out


def test_sample_runs_of_one_setup_with_other_seeds_are_pooled(tmp_path):
    """Two sample-protocol runs, seeds 0,1 and 2,3: one row of four seeds (the second run was skipped
    as 'the same setup and seed'), its variance over the four estimates together."""
    import numpy as np

    for name, seeds in (("a", "0,1"), ("b", "2,3")):
        assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "gaussian", "--mi", "2", "--n", "200",
                     "--seeds", seeds, "--timeout", "0", "--quiet", "--no-plot", "--out", str(tmp_path / name)]) == 0
    board, col = build([tmp_path])
    assert not col.duplicates and len(board) == 1
    row = board.iloc[0]
    assert row.n_seeds == 4 and row.seeds == "0;1;2;3"
    est = pd.concat([pd.read_csv(tmp_path / n / "sample_estimates.csv") for n in "ab"])["estimate"].to_numpy()
    assert row.mean_estimate == pytest.approx(est.mean())
    assert row.variance == pytest.approx(np.var(est))


def test_leaderboard_cli(sweep_dir, tmp_path, capsys):
    out = tmp_path / "res" / "leaderboard.csv"
    assert main(["leaderboard", str(sweep_dir), "-o", str(out)]) == 0
    assert out.is_file() and out.with_suffix(".md").is_file() and (out.parent / "leaderboard.meta.json").is_file()
    assert "best on gaussian (dim=2)" in capsys.readouterr().out
    assert main(["leaderboard", str(tmp_path / "nothing-here")]) == 2
    capsys.readouterr()
    for flag in ("--families", "--no-markdown"):      # without -o they were ignored (Markdown printed, exit 0)
        assert main(["leaderboard", str(sweep_dir), flag]) == 2
        captured = capsys.readouterr()
        assert f"{flag} needs -o/--output" in captured.err and captured.out == ""


def _scaled(tmp_path, name, factor=1.0, bias_add=0.0, drop=None, diverge=None):
    root = tmp_path / name
    for seed in range(3):
        rows = [dict(r, mse=r["mse"] * (factor if (r["estimator"], r["true_mi"]) == ("smile-5", 2.0) else 1.0),
                     bias=r["bias"] + (bias_add if r["estimator"] == "nwj" else 0.0))
                for r in _rows(seed) if (r["estimator"], r["true_mi"]) != drop]
        write_fake_run(root / f"s{seed}", rows, task_params={"dim": 2}, seed=seed,
                       diverged=diverge if seed == 0 else None)
    return root


def test_a_row_over_fewer_seeds_than_the_baselines_is_a_regression(tmp_path, capsys):
    """One seed of three ran (the others never did) and the gate said 'no regressions', exit 0."""
    base_csv = tmp_path / "base.csv"
    write_all(*build([_scaled(tmp_path, "base")]), base_csv)
    one = tmp_path / "one"
    write_fake_run(one / "s0", _rows(0), task_params={"dim": 2}, seed=0)
    assert main(["compare", str(one), str(base_csv)]) == 1
    out = capsys.readouterr().out
    assert "WORSE seeds" in out and "seeds 3 -> 1: fewer than the baseline's" in out
    assert main(["compare", str(_scaled(tmp_path, "same")), str(base_csv)]) == 0


def test_compare_both_ways(tmp_path, capsys):
    base = _scaled(tmp_path, "base")
    base_csv = tmp_path / "base.csv"
    write_all(*build([base]), base_csv)
    # identical and slightly worse (within 25% + floor): pass
    assert main(["compare", str(_scaled(tmp_path, "same")), str(base_csv)]) == 0
    assert main(["compare", str(_scaled(tmp_path, "bit_worse", factor=1.1)), str(base_csv)]) == 0
    assert "no regressions" in capsys.readouterr().out
    # MSE tripled on one row: fail, and the row is named
    worse = _scaled(tmp_path, "worse", factor=3.0)
    assert main(["compare", str(worse), str(base_csv)]) == 1
    text = capsys.readouterr().out
    assert "WORSE mse" in text and "smile-5" in text and "@ 2 bits" in text
    # a looser tolerance lets it through
    assert main(["compare", str(worse), str(base_csv), "--tolerance", "3"]) == 0
    # |bias| grew by 1 bit for nwj: fails unless only MSE is gated ... and MSE is unchanged
    biased = _scaled(tmp_path, "biased", bias_add=1.0)
    assert main(["compare", str(biased), str(base_csv)]) == 1
    assert main(["compare", str(biased), str(base_csv), "--metrics", "mse"]) == 0
    # a missing cell and a new divergence both fail
    assert main(["compare", str(_scaled(tmp_path, "missing", drop=("nwj", 4.0))), str(base_csv)]) == 1
    assert "missing" in capsys.readouterr().out
    assert main(["compare", str(_scaled(tmp_path, "div", diverge={"smile-5": 10})), str(base_csv)]) == 1
    assert "diverged" in capsys.readouterr().out
    # improvements are reported and pass
    assert main(["compare", str(base), str(worse)]) == 0
    assert "improved" in capsys.readouterr().out
    # the real process exit status (CSV inputs: no torch import in the child)
    worse_csv = tmp_path / "worse.csv"
    write_all(*build([worse]), worse_csv)
    p = subprocess.run([sys.executable, "-m", "mibench.cli", "compare", str(worse_csv), str(base_csv)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "WORSE" in p.stdout, p.stdout + p.stderr


def test_compare_tolerance_nan_is_refused_not_a_pass(tmp_path, capsys):
    base_csv = tmp_path / "base.csv"
    write_all(*build([_scaled(tmp_path, "base")]), base_csv)
    worse = _scaled(tmp_path, "worse", factor=3.0)
    assert main(["compare", str(worse), str(base_csv)]) == 1
    capsys.readouterr()
    assert main(["compare", str(worse), str(base_csv), "--tolerance", "nan"]) == 2
    assert capsys.readouterr().err.strip() == "mibench: error: --tolerance must be a finite number >= 0, got nan"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -0.5])
@pytest.mark.parametrize("setting", ["tolerance", "mse_floor", "bias_floor"])
def test_no_gate_setting_can_make_every_row_pass(tmp_path, setting, value):
    """The class: a setting that NaN compares past, or an infinite one (an infinite limit), would let
    any regression through; every setting is refused in one line naming its flag, also from Python."""
    base_csv = tmp_path / "base.csv"
    write_all(*build([_scaled(tmp_path, "base")]), base_csv)
    flag = "--" + setting.replace("_", "-")
    with pytest.raises(MibenchError, match=f"^{flag} must be a finite number >= 0, got "):
        compare(_scaled(tmp_path, "worse", factor=3.0), base_csv, **{setting: value})


def test_the_gate_says_what_differs_and_refuses_impossible_rows(tmp_path):
    """Found by a demanding user: two sweeps differing only in lr printed 'WORSE missing' and 'only in NEW'
    rows with the same label; a DataFrame without the gate's columns raised a bare KeyError; a string
    tolerance was reported as 'got 0.25'; MSE -1 passed as 'better', and an infinite MSE read 'MSE is NaN'."""
    from mibench.errors import UnreadableInput

    base = build([_scaled(tmp_path, "base")])[0]
    other_lr = base.assign(lr=base["lr"] * 100)
    report = compare(other_lr, base)
    missing = [f for f in report.regressions if f.kind == "missing"]
    assert missing and all("NEW has it with lr" in f.detail for f in missing)
    with pytest.raises(UnreadableInput, match="without the columns"):
        compare(base.drop(columns=["task"]), base)
    with pytest.raises(MibenchError, match="got '0.25'"):
        compare(base, base, tolerance="0.25")
    for mse in (-1.0, math.inf):
        with pytest.raises(UnreadableInput, match="not a possible result"):
            compare(base.assign(mse=mse), base)
    with pytest.raises(UnreadableInput, match="not a possible result"):
        compare(base.assign(abs_bias=math.nan), base)
    # an MSE of NaN is a row whose seeds all failed, counted in diverged_seeds; with none counted it is an
    # edited file, where the gate used to skip the row's MSE and pass (either side)
    no_mse = base.assign(mse=math.nan, abs_bias=math.nan)
    for new, old in ((base, no_mse), (no_mse, base)):
        with pytest.raises(UnreadableInput, match="MSE nan, .* and 0 diverged seeds: not a possible result"):
            compare(new, old)
    assert not compare(no_mse.assign(diverged_seeds=2), base).ok           # NEW's seeds all failed: a regression
    # --allow-missing with no row in common compares nothing: refused like an empty baseline
    with pytest.raises(UnreadableInput, match="NEW has none of the baseline's 4 rows .*cannot fail"):
        compare(other_lr, base, allow_missing=True)


def test_precision_is_part_of_the_setup_and_old_csvs_read_as_fp32(tmp_path):
    root = tmp_path / "mixed"
    for seed in range(2):
        write_fake_run(root / f"fp32_s{seed}", _rows(seed), task_params={"dim": 2}, seed=seed)
        write_fake_run(root / f"bf16_s{seed}", _rows(seed + 1), task_params={"dim": 2}, seed=seed, precision="bf16")
    board, _ = build([root])
    assert sorted(board["precision"].unique()) == ["bf16", "fp32"]
    assert (board["n_seeds"] == 2).all()          # bf16 runs are not pooled with fp32 runs as extra seeds
    # a leaderboard written before the precision column existed compares as fp32
    new_csv, old_csv = tmp_path / "new.csv", tmp_path / "old.csv"
    fp32_only = tmp_path / "fp32_only"
    for seed in range(2):
        write_fake_run(fp32_only / f"s{seed}", _rows(seed), task_params={"dim": 2}, seed=seed)
    write_all(*build([fp32_only]), new_csv)
    pd.read_csv(new_csv).drop(columns=["precision"]).to_csv(old_csv, index=False)
    report = compare(new_csv, old_csv)
    assert report.ok and report.matched == len(pd.read_csv(new_csv)) > 0


def test_pytest_helper(tmp_path):
    base = _scaled(tmp_path, "base")
    report = assert_no_regression(base, base)
    assert report.ok and report.matched == 4
    with pytest.raises(AssertionError, match="WORSE mse .*smile-5"):
        assert_no_regression(_scaled(tmp_path, "worse", factor=3.0), base)
    with pytest.raises(AssertionError, match="missing"):
        assert_no_regression(_scaled(tmp_path, "missing", drop=("smile-5", 4.0)), base)
    assert assert_no_regression(_scaled(tmp_path, "m2", drop=("smile-5", 4.0)), base, allow_missing=True).ok
    assert compare(base, base).ok


def test_leaderboard_summary_line_names_the_sample_protocol(tmp_path, capsys):
    """Sample-protocol runs have no critic size or step count: the 'best on' line says so instead of
    printing a meaningless '[joint 0x0, 0 steps]' (reads the committed sample leaderboard's runs)."""
    from pathlib import Path

    runs = Path(__file__).resolve().parents[2] / "results" / "sample_leaderboard" / "sweep"
    assert main(["leaderboard", str(runs), "-o", str(tmp_path / "lb.csv")]) == 0
    out = capsys.readouterr().out
    assert "best on vision [sample protocol, n = 10000]: " in out and "0x0" not in out


def test_the_committed_sample_leaderboard_rebuilds_byte_for_byte(tmp_path):
    """The record layer reads committed runs exactly as they were written: rebuilding the committed
    sample leaderboard from its run directories gives its CSV, byte for byte."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "results" / "sample_leaderboard"
    if not (root / "leaderboard.csv").is_file():
        pytest.skip("no committed sample leaderboard")
    board, col = build([root])
    out = tmp_path / "lb.csv"
    write_all(board, col, out, markdown=False)
    assert out.read_text() == (root / "leaderboard.csv").read_text()


@pytest.mark.parametrize("runs", ["table3", "sample_leaderboard"])
def test_each_protocol_fills_the_declared_setup_columns(runs):
    """A run's setup row has exactly the leaderboard's setup columns, in their order, whichever
    protocol wrote the run (the columns are declared once, by mibench.records.setup.RunSetup)."""
    from pathlib import Path

    from mibench.protocols import protocol_of
    from mibench.records import collect
    from mibench.records.setup import SETUP_COLUMNS

    root = Path(__file__).resolve().parents[2] / "results" / runs
    records = collect([root]).runs
    assert records
    for record in records[:3]:
        assert list(protocol_of(record.config).setup(record.config)) == SETUP_COLUMNS


def test_a_sweep_with_cells_not_run_yet_says_so(tmp_path, capsys):
    """An interrupted sweep's leaderboard read '4 rows from 1 runs' with nothing about its 3 cells that never
    ran (no run directory, so no 'skipping incomplete run' line)."""
    root = tmp_path / "sw"
    write_fake_run(root / "a", _rows(0), task_params={"dim": 2}, seed=0)
    (root / "sweep.json").write_text(json.dumps({"cells": [{"dir": "a", "status": "complete"},
                                                           {"dir": "b", "status": "pending"},
                                                           {"dir": "c", "status": "interrupted"}]}))
    assert main(["leaderboard", str(root), "-o", str(tmp_path / "lb.csv")]) == 0
    assert "2 of the 3 cells of the sweep" in capsys.readouterr().err


def test_a_setup_whose_truth_check_did_not_hold_is_flagged(tmp_path):
    """A run whose task_info.truth_check is 'not established' carries it into its leaderboard rows
    (CSV column truth_check, read back) and a bold line under its Markdown heading; a run whose check
    holds, or that has none, carries nothing; the flag does not split the setup."""
    rows = [{"estimator": "nwj", "true_mi": 2.0, "bias": -0.1, "variance": 0.01, "mse": 0.02}]
    write_fake_run(tmp_path / "runs" / "flagged_s0", rows, task="vision", task_params={"nuisance": 1.0}, seed=0,
                   levels=(2.0,), truth_check="not established")
    write_fake_run(tmp_path / "runs" / "flagged_s1", rows, task="vision", task_params={"nuisance": 1.0}, seed=1,
                   levels=(2.0,), truth_check="not established")
    write_fake_run(tmp_path / "runs" / "exact_s0", rows, task="vision", task_params={"nuisance": 0.5}, seed=0,
                   levels=(2.0,), truth_check="holds")
    board, col = build([tmp_path / "runs"])
    flags = dict(zip(board["task_params"], board["truth_check"]))
    assert flags == {"nuisance=1": "not established", "nuisance=0.5": ""}
    assert int(board.loc[board["task_params"] == "nuisance=1", "n_seeds"].iloc[0]) == 2
    out = tmp_path / "lb.csv"
    write_all(board, col, out)
    back = read_leaderboard(out)
    assert dict(zip(back["task_params"], back["truth_check"])) == flags
    md = out.with_suffix(".md").read_text()
    assert md.count("**truth not established**") == 1
    section = md[md.index("nuisance=1"):]
    assert section.index("**truth not established**") < section.index("| rank |")


def test_gate_labels_tell_rows_apart_and_a_gate_on_no_metric_is_refused(tmp_path):
    """Two baseline rows differing only in their schedule printed one label twice ('WORSE missing ... @ 2
    bits'); metrics=() passed a bias that went from 1.7 to 100 bits."""
    base = build([_scaled(tmp_path, "base")])[0]
    two = pd.concat([base, base.assign(schedule="2,4")], ignore_index=True)
    report = compare(base.iloc[:0].pipe(lambda d: pd.concat([d, base.iloc[:1]])), two, allow_missing=False)
    labels = [f.label() for f in report.regressions if f.kind == "missing"]
    assert len(labels) == len(set(labels)) > 1
    assert any("schedule 2,4 bits" in lb for lb in labels)
    for metrics in ((), "", []):
        with pytest.raises(MibenchError, match="got none"):
            compare(base.assign(bias=100.0, abs_bias=100.0), base, metrics=metrics)


def test_best_on_lines_name_what_tells_their_setups_apart(tmp_path, capsys):
    """Two setups differing only in the MI schedule printed the same 'best on' line twice."""
    rows = [{"estimator": "nwj", "true_mi": 2.0, "bias": -0.1, "variance": 0.01, "mse": 0.02}]
    write_fake_run(tmp_path / "runs" / "one", rows, levels=(2.0,))
    write_fake_run(tmp_path / "runs" / "two", rows + [{**rows[0], "true_mi": 4.0}], levels=(2.0, 4.0))
    assert main(["leaderboard", str(tmp_path / "runs"), "-o", str(tmp_path / "lb.csv")]) == 0
    best = [line for line in capsys.readouterr().out.splitlines() if "best on" in line]
    assert len(best) == 2 and len(set(best)) == 2 and any("schedule 2,4" in line for line in best)
