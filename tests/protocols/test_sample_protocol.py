"""The sample-based protocol (issue 12): fixed datasets per (seed, level), metrics over seeds,
every task, the CLI / sweep / leaderboard / compare / plot path, mibench.evaluate."""
import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from mibench.cli import main
from mibench.errors import MibenchError
from mibench.protocols.sample.run import SampleConfig, draw_dataset, run_sample

LN2 = math.log(2.0)


def _csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def seed_valued():
    """A black-box estimator whose answer is (seed + 1) bits whatever the data: known metrics."""
    import mibench

    return mibench.register_estimator("seed-valued-test", lambda x, y, seed=0: (seed + 1) * LN2, replace=True)


def test_metrics_are_over_seeds_in_bits(tmp_path, seed_valued):
    res = run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=[seed_valued], mi=2,
                                  n=100, seeds=[0, 1, 2], timeout=None), out_dir=tmp_path / "run", plot=False)
    (row,) = res.summary
    # estimates 1, 2, 3 bits against a true 2 bits
    assert row["mean_estimate"] == pytest.approx(2.0) and row["bias"] == pytest.approx(0.0)
    assert row["variance"] == pytest.approx(2 / 3) and row["mse"] == pytest.approx(2 / 3)
    assert row["steps"] == 3 and row["failed"] == 0 and row["kind"] == "black-box" and row["n"] == 100
    from mibench.analysis.leaderboard import build

    board, _ = build([tmp_path])
    (b,) = board.to_dict("records")
    assert b["protocol"] == "sample" and b["n_seeds"] == 3 and b["seeds"] == "0;1;2"
    assert b["bias"] == pytest.approx(0.0, abs=1e-6) and b["variance"] == pytest.approx(2 / 3, abs=1e-5)
    assert b["mse"] == pytest.approx(2 / 3, abs=1e-5) and b["diverged_seeds"] == 0


def test_one_fixed_dataset_per_seed_and_level():
    from mibench.tasks import make_task

    task = make_task("gaussian", dim=3)
    x1, y1 = draw_dataset(task, 500, 2.0, seed=4)
    x2, y2 = draw_dataset(task, 500, 2.0, seed=4)
    x3, _ = draw_dataset(task, 500, 2.0, seed=5)
    x4, _ = draw_dataset(task, 500, 3.0, seed=4)
    assert x1.dtype == np.float64 and x1.shape == (500, 3) and y1.shape == (500, 3)
    assert np.array_equal(x1, x2) and np.array_equal(y1, y2)
    assert not np.array_equal(x1, x3) and not np.array_equal(x1, x4)


def test_every_estimator_of_a_run_sees_the_same_pairs():
    import mibench

    a = mibench.register_estimator("sum-a-test", lambda x, y: float(x.sum() + 2 * y.sum()), replace=True)
    b = mibench.register_estimator("sum-b-test", lambda x, y: float(x.sum() + 2 * y.sum()), replace=True)
    res = run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=[a, b], mi="1,2", n=64,
                                  seeds=[0, 1], timeout=None))
    by = {}
    for r in res.rows:
        by.setdefault((r["seed"], r["true_mi"]), set()).add(round(r["estimate"], 9))
    assert len(by) == 4 and all(len(v) == 1 for v in by.values())
    assert len({next(iter(v)) for v in by.values()}) == 4      # different datasets per seed and level


def test_critic_bound_estimators_run_through_mibench_estimate():
    res = run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["infonce", "gaussian"],
                                  mi=1, n=400, seeds=[0], timeout=None, device="cpu",
                                  estimate_kwargs={"steps": 40, "hidden": 16}))
    rows = {r["estimator"]: r for r in res.rows}
    assert rows["infonce"]["kind"] == "critic" and rows["infonce"]["status"] == "ok"
    assert rows["infonce"]["n_parameters"] > 0 and rows["infonce"]["critic"] == "joint"
    assert math.isfinite(rows["infonce"]["estimate"]) and rows["gaussian"]["critic"] == ""


def test_estimate_status_and_stderr_reach_csv_summary_and_leaderboard(tmp_path):
    """Issue 13: mibench.estimate's status / mi_stderr / clipped in sample_estimates.csv (bits),
    counted in summary.csv and the leaderboard; empty for a bare-float estimator."""
    from mibench.analysis.leaderboard import build
    from mibench.estimation import STATUSES

    out = tmp_path / "run"
    run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["infonce", "gaussian"], mi=1,
                            n=400, seeds=[0, 1], timeout=None, device="cpu",
                            estimate_kwargs={"steps": 40, "hidden": 16}), out_dir=out, plot=False)
    rows = _csv(out / "sample_estimates.csv")
    assert "flag" not in rows[0] and {"status", "mi_status", "mi_stderr", "clipped"} <= set(rows[0])
    crit = [r for r in rows if r["estimator"] == "infonce"]
    assert all(r["status"] == "ok" and r["mi_status"] in STATUSES for r in crit)
    assert all(math.isfinite(float(r["mi_stderr"])) and float(r["mi_stderr"]) >= 0 for r in crit)
    assert all(r["clipped"] in ("True", "False") for r in crit)
    box = [r for r in rows if r["estimator"] == "gaussian"]
    # a black-box value is recorded as mibench.estimate reports it: not_assessed, no standard error
    assert all(r["mi_status"] == "not_assessed" and r["mi_stderr"] == "" and r["clipped"] == "False" for r in box)
    summ = {r["estimator"]: r for r in _csv(out / "summary.csv")}
    counts = dict(kv.split(":") for kv in summ["infonce"]["mi_status"].split(";"))
    assert sum(map(int, counts.values())) == 2 and set(counts) <= set(STATUSES)
    assert summ["gaussian"]["mi_status"] == "not_assessed:2" and summ["gaussian"]["mi_stderr"] == ""
    board, _ = build([out])
    b = {r["estimator"]: r for r in board.to_dict("records")}
    assert b["infonce"]["mi_status"] == summ["infonce"]["mi_status"]
    assert b["infonce"]["mi_stderr"] == pytest.approx(float(summ["infonce"]["mi_stderr"]), rel=1e-4)
    assert b["gaussian"]["mi_status"] == "not_assessed:2" and not math.isfinite(b["gaussian"]["mi_stderr"])


def test_sample_files_without_status_columns_still_load(tmp_path, seed_valued):
    """A run written before mi_status / mi_stderr / clipped existed (a ``flag`` column) still
    loads into the leaderboard and plots."""
    from mibench.analysis.leaderboard import build
    from mibench.analysis.run_figures import plot_results
    from mibench.records import read_sample_estimates

    out = tmp_path / "old"
    run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=[seed_valued], mi=2, n=100,
                            seeds=[0, 1], timeout=None), out_dir=out, plot=False)
    rows = _csv(out / "sample_estimates.csv")
    old_cols = ["run_id", "task", "estimator", "kind", "critic", "seed", "n", "true_mi", "estimate", "seconds",
                "n_parameters", "status", "flag", "error"]
    with open(out / "sample_estimates.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, old_cols)
        w.writeheader()
        for r in rows:
            w.writerow({**{k: r.get(k, "") for k in old_cols}, "flag": "converged"})
    conf = json.loads((out / "config.json").read_text())
    del conf["files"]                    # as old runs: no checksums recorded
    (out / "config.json").write_text(json.dumps(conf))
    back = read_sample_estimates(out / "sample_estimates.csv")
    assert [r["mi_status"] for r in back] == ["converged", "converged"] and math.isnan(back[0]["mi_stderr"])
    board, _ = build([out])
    (b,) = board.to_dict("records")
    assert b["mi_status"] == "converged:2" and b["mean_estimate"] == pytest.approx(1.5)
    assert plot_results(out)


def test_a_black_box_value_recorded_without_a_status_reads_not_assessed(tmp_path):
    """Files written before black-box values got mibench.estimate's status (blank) read ``not_assessed``
    for an ok black-box row; a failed row and a critic row keep what they hold."""
    from mibench.records import read_sample_estimates

    out = tmp_path / "run"
    run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["gaussian"], mi=1, n=400,
                            seeds=[0, 1], timeout=None, device="cpu"), out_dir=out, plot=False)
    rows = _csv(out / "sample_estimates.csv")
    rows[0]["mi_status"] = ""
    rows[1].update(mi_status="", status="error", error="boom")
    rows.append({**rows[0], "estimator": "infonce", "kind": "critic", "mi_status": ""})
    with open(out / "sample_estimates.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    back = read_sample_estimates(out / "sample_estimates.csv")
    assert [r["mi_status"] for r in back] == ["not_assessed", "", ""]


@pytest.mark.parametrize("task,params", [("gaussian", {"dim": 2}), ("gauss-dense-3x2", {}),
                                         ("gaussian", {"dim": 4, "transform": "realnvp"})])
def test_synthetic_tasks_under_the_sample_protocol(task, params):
    res = run_sample(SampleConfig(task=task, task_params=params, estimators=["gaussian"], mi=1, n=2000,
                                  seeds=[0], timeout=None))
    (row,) = res.rows
    assert row["status"] == "ok" and math.isfinite(row["estimate"])


@pytest.mark.slow
@pytest.mark.parametrize("task,params", [("vision", {"ds": 2, "side": 8}), ("text", {"ds": 2}),
                                         ("mixed", {})])
def test_real_data_tasks_under_the_sample_protocol(task, params):
    res = run_sample(SampleConfig(task=task, task_params=params, estimators=["gaussian"], mi=1, n=300,
                                  seeds=[0], timeout=None))
    (row,) = res.rows
    assert row["status"] in ("ok", "non_finite") and row["n"] == 300


def test_cli_sample_run_plot_leaderboard_compare(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "gaussian,ksg", "--mi", "1,2",
                 "--n", "800", "--seeds", "0,1", "--timeout", "0", "--out", str(out), "--quiet"]) == 0
    for f in ("config.json", "sample_estimates.csv", "summary.csv", "estimates.png"):
        assert (out / f).is_file(), f
    rows = _csv(out / "sample_estimates.csv")
    assert len(rows) == 8 and {r["status"] for r in rows} == {"ok"}
    assert set(rows[0]) >= {"seed", "estimator", "kind", "true_mi", "estimate", "seconds", "n_parameters", "status",
                            "error"}
    assert main(["plot", str(out)]) == 0
    assert (out / "metrics.png").is_file()
    assert main(["leaderboard", str(out), "-o", str(tmp_path / "lb.csv")]) == 0
    lb = _csv(tmp_path / "lb.csv")
    assert {r["estimator"] for r in lb} == {"gaussian", "ksg"} and {r["protocol"] for r in lb} == {"sample"}
    assert all(float(r["seconds"]) >= 0 for r in lb) and "s / estimate" in (tmp_path / "lb.md").read_text()
    capsys.readouterr()
    assert main(["compare", str(out), str(tmp_path / "lb.csv")]) == 0


def test_bad_sample_settings_are_one_line(capsys):
    for args in (["--n", "5"], ["--n", "100", "--timeout", "-1"], ["--n", "100", "--seeds", "a,b"],
                 ["--n", "100", "--task", "vision", "--ds", "2", "--mi", "3"],
                 ["--n", "100", "--seed", "3", "--seeds", "0,1"]):         # --seed was ignored
        assert main(["run", "--estimator", "gaussian", *args, "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Traceback" not in err[0], (args, err)


def test_sample_sweep_cells_hold_all_seeds(tmp_path):
    from mibench.sweep import SweepSpec

    spec = SweepSpec.from_dict({"tasks": ["gaussian"], "estimators": ["gaussian", "ksg", "infonce"], "n": 1000,
                                "seeds": "0-2", "mi": [2, 4], "critics": "separable", "steps": 50,
                                "split_estimators": True})
    cells = spec.cells()
    assert len(cells) == 6 and all(c.config["seeds"] == [0, 1, 2] for c in cells)
    assert all(c.config["protocol"] == "sample" and c.config["critic"] == "separable" for c in cells)
    assert cells[0].config["estimate_kwargs"] == {"steps": 50}
    assert len({c.name for c in cells}) == 6
    with pytest.raises(MibenchError, match="burn_in"):
        SweepSpec.from_dict({"tasks": ["gaussian"], "estimators": ["gaussian"], "n": 100, "burn_in": 5})
    with pytest.raises(MibenchError, match="sample protocol"):
        SweepSpec.from_dict({"tasks": ["gaussian"], "estimators": ["ksg"], "steps": 10})


def test_evaluate_ranks_next_to_baselines(tmp_path, capsys):
    """evaluate() on the quick suite against a baseline directory made here with the same setup
    (the committed results/sample_leaderboard has the same setups; a test must not depend on it)."""
    import mibench
    from mibench.analysis.evaluate import COMMON, SETUPS

    s = SETUPS["gaussian"]
    base = tmp_path / "baselines"
    run_sample(SampleConfig(task=s["task"], task_params=s["task_params"], estimators=["gaussian"], mi=s["mi"][0],
                            n=COMMON["n"], seeds=COMMON["seeds"], critic=COMMON["critic"],
                            estimate_kwargs=COMMON["estimate_kwargs"], timeout=None), out_dir=base / "g", plot=False)

    def zero(x, y):
        return 0.0

    board = mibench.evaluate(zero, "quick", baselines=base, out=tmp_path / "mine", timeout=None, progress=False)
    text = capsys.readouterr().out
    me = f"{zero.__module__}.zero"          # a user's function is named by its module (never a built-in's name)
    assert f"{me} ranks 2 of 2" in text
    ranks = dict(zip(board["estimator"], board["rank"]))
    assert ranks == {"gaussian": 1, me: 2}
    assert "kept" not in text
    mibench.evaluate(zero, "quick", baselines=base, out=tmp_path / "mine", timeout=None, progress=False)
    assert "kept 1 complete run(s) already in" in capsys.readouterr().out     # was: old numbers, silently

    def crash(x, y):
        raise RuntimeError("out of ideas")

    # a failed estimate and fewer seeds than the baselines are said in the ranking (it showed 'MSE inf' alone)
    mibench.evaluate(crash, "quick", baselines=base, out=tmp_path / "crash", timeout=None, progress=False, seeds=[0])
    text = capsys.readouterr().out
    assert "s per estimate; 1 seed(s), the baselines 3; 1 failed estimate(s), below)" in text, text
    assert "! failed:" in text and "RuntimeError: out of ideas" in text, text
    with pytest.raises(MibenchError, match="unknown suite"):
        mibench.evaluate(zero, "nope")
    # a registered name: its rows are the fresh run's only, on the suite's setups (the baselines' own rows of
    # that estimator, other seeds and another setup here, were pooled with them and ranked as the user's)
    run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["gaussian"], mi=2.0, n=200,
                            seeds=[0], timeout=None), out_dir=base / "off-suite", plot=False)
    board = mibench.evaluate("gaussian", "quick", baselines=base, out=tmp_path / "named", timeout=None,
                             progress=False, seeds=[5], show=False)
    mine = board[board["estimator"] == "gaussian"]
    assert set(mine["seeds"]) == {"5"} and len(mine) == 1, mine
    assert set(board["task_params"]) == {""}             # the quick suite's Gaussian setup only, not dim=2


def test_committed_sample_leaderboard_matches_the_evaluate_suites():
    from mibench.analysis.evaluate import COMMON, SETUPS, baseline_dir
    from mibench.analysis.leaderboard import read_leaderboard

    path = baseline_dir() / "leaderboard.csv"
    if not path.is_file():
        pytest.skip("results/sample_leaderboard/leaderboard.csv not committed yet")
    from mibench.data.embeddings import DEFAULT_ENCODER
    from mibench.protocols.setup import canonical_params

    lb = read_leaderboard(path)
    assert set(lb["protocol"]) == {"sample"} and set(lb["n"]) == {COMMON["n"]}
    assert {s["task"] for s in SETUPS.values()} <= set(lb["task"])
    assert {"black-box", "critic", "generative"} <= set(lb["kind"])
    # every suite setup is in the board with the same task parameters, level, seeds and critic settings,
    # so an evaluate() run lands in the same leaderboard setup as the baselines
    for s in SETUPS.values():
        # a text setup's label names the encoder its pool used: the default one for the suites
        params = {**s["task_params"], **({"encoder": DEFAULT_ENCODER} if s["task"] == "text" else {})}
        rows = lb[(lb["task"] == s["task"]) & (lb["task_params"] == canonical_params(s["task"], params))]
        assert len(rows), s
        assert set(rows["true_mi"]) == set(s["mi"]) and set(rows["critic"]) == {COMMON["critic"]}
        assert set(rows["seeds"]) == {";".join(map(str, COMMON["seeds"]))}
        assert set(rows["steps"]) == {int(COMMON["estimate_kwargs"].get("steps", 0))}
        assert {"black-box", "critic"} <= set(rows["kind"]) and rows["seconds"].notna().all()


def test_readme_snippet_benchmarks_an_estimator(capsys):
    """The README's "Benchmark your own estimator" Python block, run as written (it needs the
    committed baselines in results/sample_leaderboard/)."""
    import re

    from mibench.analysis.evaluate import baseline_dir

    if not (baseline_dir() / "leaderboard.csv").is_file():
        pytest.skip("results/sample_leaderboard not committed yet")
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Benchmark your own estimator", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 10
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert "MyEstimator ranks" in capsys.readouterr().out


def test_worker_starts_from_a_script_read_on_stdin(tmp_path):
    """``python - < script.py`` (__main__.__file__ = "<stdin>"): the killable estimate worker must
    still start (spawn would try to re-run "<stdin>"), and a class defined in the script runs there."""
    import subprocess
    import sys

    script = (
        "import mibench, numpy as np\n"
        "from mibench.protocols.sample.run import SampleConfig, run_sample\n"
        "class Mine:\n"
        "    kind, n_parameters = 'black-box', 0\n"
        "    def estimate(self, x, y, *, seed=0):\n"
        "        return 0.5\n"
        "name = mibench.register_estimator('stdin-est', Mine(), replace=True)\n"
        "res = run_sample(SampleConfig(task='gaussian', task_params={'dim': 2}, estimators=[name], mi=1, n=50,\n"
        "                              seeds=[0], timeout=120))\n"
        "print('STATUS', res.rows[0]['status'], round(res.rows[0]['estimate'] * 0.6931471805599453, 6))\n"
    )
    proc = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert "STATUS ok 0.5" in proc.stdout, proc.stderr[-2000:]


def test_worker_does_not_rerun_a_script_without_a_main_guard(tmp_path):
    """``python script.py`` whose top level calls mibench (README's "Benchmark your own estimator" saved as a
    file, no ``if __name__ == "__main__":``): spawn re-ran the script in the worker, which printed the
    script's first line twice and failed ("the estimate worker process exited before it started")."""
    import subprocess
    import sys

    script = tmp_path / "mine.py"
    script.write_text(
        "print('SCRIPT STARTS')\n"
        "import mibench\n"
        "from mibench.protocols.sample.run import SampleConfig, run_sample\n"
        "class Mine:\n"
        "    kind, n_parameters = 'black-box', 0\n"
        "    def estimate(self, x, y, *, seed=0):\n"
        "        return 0.5\n"
        "name = mibench.register_estimator('script-est', Mine(), replace=True)\n"
        "res = run_sample(SampleConfig(task='gaussian', task_params={'dim': 2}, estimators=[name], mi=1, n=50,\n"
        "                              seeds=[0], timeout=120))\n"
        "print('STATUS', res.rows[0]['status'])\n")
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert "STATUS ok" in proc.stdout, proc.stderr[-2000:]
    assert proc.stdout.count("SCRIPT STARTS") == 1


def test_in_process_estimators_get_their_own_arrays_and_must_return_numbers(tmp_path):
    """A plug-in that zeroed x in place made the next estimator of the run read 0.0 bits, status ok; one
    returning "1.5" or True was recorded as 2.16 / 1.44 bits."""
    import mibench

    class Mutator:
        kind, n_parameters = "black-box", 0

        def estimate(self, x, y, *, seed=0):
            x[:] = 0.0
            return 0.5

    class Text:
        kind, n_parameters = "black-box", 0

        def estimate(self, x, y, *, seed=0):
            return "1.5"

    names = [mibench.register_estimator("mutator-test", Mutator(), replace=True),
             mibench.register_estimator("text-test", Text(), replace=True), "gaussian"]
    res = run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=names, mi=1, n=400,
                                  seeds=[0], timeout=None), out_dir=tmp_path / "r", plot=False)
    rows = {r["estimator"]: r for r in res.rows}
    assert rows["gaussian"]["status"] == "ok" and rows["gaussian"]["estimate"] > 0.5      # the truth is 1 bit
    assert rows["text-test"]["status"] != "ok" and "not a number" in rows["text-test"]["error"]
    with pytest.raises(MibenchError, match="not a number"):
        rng = np.random.default_rng(0)
        mibench.estimate(rng.normal(size=(100, 1)), rng.normal(size=(100, 1)), estimator="text-test")


def test_load_runs_keeps_each_sample_estimates_own_status(tmp_path):
    """load_runs overwrote the sample protocol's per-estimate status with the run's (`complete`), so an
    implausible -7 bits looked like data to average."""
    import mibench

    def broken(x, y):
        return -5.0

    name = mibench.register_estimator("broken-test", broken, replace=True)
    run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=[name, "gaussian"], mi=1, n=400,
                            seeds=[0], timeout=None), out_dir=tmp_path / "r", plot=False)
    df = mibench.load_runs(tmp_path / "r")
    status = dict(zip(df["estimator"], df["status"]))
    assert status == {name: "implausible", "gaussian": "ok"} and set(df["run_status"]) == {"complete"}


def test_a_plausible_negative_sample_estimate_is_recorded_clipped_as_estimate_reports_it(tmp_path):
    """A sample estimator's small negative value (within the plausibility margin) was recorded as read,
    -0.07 bits with status ok, where mibench.estimate reports 0 with clipped and a critic bound's estimate
    is recorded so: the sample protocol now records 0 and clipped too."""
    import mibench

    def slightly_negative(x, y):
        return -0.001

    name = mibench.register_estimator("slightly-negative-test", slightly_negative, replace=True)
    run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=[name, "gaussian"], mi=1,
                            n=400, seeds=[0], timeout=None), out_dir=tmp_path / "r", plot=False)
    rows = {r["estimator"]: r for r in _csv(tmp_path / "r" / "sample_estimates.csv")}
    assert rows[name]["status"] == "ok" and float(rows[name]["estimate"]) == 0.0 and rows[name]["clipped"] == "True"
    assert rows["gaussian"]["clipped"] == "False" and float(rows["gaussian"]["estimate"]) > 0.5
    rng = np.random.default_rng(0)
    direct = mibench.estimate(rng.normal(size=(400, 1)), rng.normal(size=(400, 1)), estimator=name)
    assert direct.mi == 0.0 and direct.clipped


def test_a_level_snapped_to_the_tasks_maximum_is_recorded_as_drawn(tmp_path):
    """A request within the printed precision of a task's maximum is drawn at the maximum (--mi 4.0004 at
    ds = 4 is drawn at 4 bits); the run recorded the request as true_mi and scored the bias against it."""
    import math as _m

    res = run_sample(SampleConfig(task="mutinfo-channel-mnist", estimators=["gaussian"], mi=3.322, n=200, seeds=[0],
                                  timeout=None), out_dir=tmp_path / "r", plot=False)
    assert {r["true_mi"] for r in res.rows} == {_m.log2(10)}         # 3.322 is log2(10) as printed


def test_the_printed_table_keeps_its_columns_apart():
    """A level of six decimals (1 nat in bits) ran into the kind column ('generative0.596323'), and tasks
    without ds / dr printed 'ds=None dr=None'."""
    import math

    from mibench.protocols.sample.protocol import SampleProtocol
    from mibench.protocols.sample.run import SampleConfig, run_sample

    cfg = SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["gaussian", "infonce"], mi=1 / math.log(2),
                       n=300, seeds=[0], timeout=None, estimate_kwargs={"steps": 30})
    text = SampleProtocol().format_result(run_sample(cfg, None, plot=False))
    row = next(line for line in text.splitlines() if line.startswith("gaussian "))
    assert "black-box 1.443 " in " ".join(row.split()) and "None" not in text
    assert any(line.startswith("infonce (joint) ") for line in text.splitlines())     # the critic is named
    task = SampleConfig(task="mutinfo-gaussian2d-4x4", estimators=["gaussian"], mi=1.0, n=300, seeds=[0], timeout=None)
    header = SampleProtocol().format_result(run_sample(task, None, plot=False)).splitlines()[0]
    assert header.startswith("task mutinfo-gaussian2d-4x4 · ")


def test_a_cli_sample_run_without_seeds_is_one_seed_and_says_so(tmp_path, capsys):
    """`mibench run --n` without --seeds draws one dataset per level (--seed): the help says so (it said
    'default 0,1,2'), and the table shows no variance for one seed ('–', where it printed 0.000)."""
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "(default: `mibench run` the one --seed" in " ".join(capsys.readouterr().out.split())
    out = tmp_path / "run"
    assert main(["run", "--task", "gaussian", "--dim", "2", "--estimator", "gaussian", "--mi", "1", "--n", "300",
                 "--timeout", "0", "--no-plot", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "seeds 0 ·" in table
    row = next(line for line in table.splitlines() if line.startswith("gaussian"))
    assert row.split()[5] == "–", row                              # estimator kind true mean bias var


def test_run_n_takes_the_staircase_when_asked_and_four_bits_when_left_out(tmp_path):
    """`run --n 200 --mi stepwise` ran 4 bits only (the config said 4.0), where a sweep's sample cell
    takes the staircase's five levels."""
    import pandas as pd

    from mibench.cli import main

    base = ["run", "--task", "gaussian", "--dim", "2", "--estimator", "gaussian", "--n", "2000", "--seeds", "0",
            "--timeout", "0", "--quiet", "--no-plot"]
    assert main([*base, "--mi", "stepwise", "--out", str(tmp_path / "asked")]) == 0
    assert main([*base, "--out", str(tmp_path / "default")]) == 0
    levels = {d: sorted(pd.read_csv(tmp_path / d / "summary.csv")["true_mi"]) for d in ("asked", "default")}
    assert levels == {"asked": [2.0, 4.0, 6.0, 8.0, 10.0], "default": [4.0]}


@pytest.mark.parametrize("sig,code", [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_stop_signal_to_the_process_group_interrupts_the_run_and_records_no_failure(tmp_path, sig, code):
    """timeout / kill -- -PGID / a scheduler signal the worker too: the estimate in flight was recorded
    'crashed (exit code -15)', and --resume kept that failed seed for good; Ctrl-C (SIGINT to the group) left a
    lone 'Process mibench-estimate-worker:' line on stderr."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "slowest.py").write_text(
        "import time\nimport numpy as np\n\n\ndef est(x, y, seed=0):\n    if seed >= 1:\n        time.sleep(120)\n"
        "    c = np.corrcoef(x[:, 0], y[:, 0])[0, 1]\n    return -0.5 * np.log(1 - c ** 2)\n")
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.Popen([sys.executable, "-m", "mibench.cli", "run", "--task", "gaussian", "--dim", "1",
                          "--estimator", "slowest:est", "--n", "300", "--mi", "1", "--seeds", "0,1", "--quiet",
                          "--out", str(out)], env=env, start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:
            est = out / "sample_estimates.csv"
            if est.is_file() and len(est.read_text().splitlines()) >= 2:      # seed 0 done, seed 1 running
                break
            time.sleep(0.2)
        time.sleep(1.0)
        os.killpg(p.pid, getattr(signal, sig))
        _, err = p.communicate(timeout=60)
    finally:
        p.kill()
    assert p.returncode == code, err
    assert "Process mibench-estimate-worker" not in err and "Traceback" not in err, err
    rows = (out / "sample_estimates.csv").read_text().splitlines()
    assert len(rows) == 2 and "crashed" not in "".join(rows), rows
    assert json.loads((out / "config.json").read_text())["status"] == "interrupted"


def test_a_stacked_cell_past_its_timeout_names_the_flag_as_given(tmp_path):
    """Two seeds of doe-flow train as one cell with one budget of twice --timeout: the message said
    'no estimate within --timeout 1 s' for --timeout 0.5 and each row recorded the whole cell's time."""
    out = tmp_path / "run"
    run_sample(SampleConfig(task="gaussian", task_params={"dim": 2}, estimators=["doe-flow"], mi=1, n=500,
                            seeds=[0, 1], timeout=0.5, device="cpu"), out_dir=out, plot=False)
    rows = _csv(out / "sample_estimates.csv")
    assert [r["status"] for r in rows] == ["timeout", "timeout"]
    assert all("--timeout 0.5 s per estimate (1 s for the 2 trained together)" in r["error"] for r in rows)
    assert all(float(r["seconds"]) == pytest.approx(0.5) for r in rows)
