"""``mibench consistency`` and its table (issue 33): an exact estimator on a case with a known answer
passes each self-consistency test, deliberately broken ones fail them; the plan, resuming, the
Markdown / CSV table and the report's section."""
import csv
import math

import pytest
import torch

from mibench.analysis.consistency import summarize, summarize_group, violations
from mibench.analysis.consistency_run import DEFAULT_ESTIMATORS, ConsistencySpec, _row, plan, run_consistency
from mibench.errors import MibenchError
from mibench.tasks import make_task

SMALL = dict(datasets=["gaussian"], seeds=[0, 1, 2], rows=[0, 2, 4, 6, 8], ratio_rows=[2, 4])


def _fake_runner(value_of):
    """A cell runner whose estimators return ``value_of(name, task, seed)`` on the cell's task."""
    def runner(spec, cell):
        task = make_task(f"consistency-{cell.test}-{cell.dataset}", **cell.task_params(spec))
        return [_row(cell, spec, name, value_of(name, task, cell.seed), 0.1) for name in spec.estimators]

    return runner


def exact(name, task, seed):
    """The closed-form MI of the Gaussian analogue, with a little seed-to-seed noise."""
    from mibench.utils.seeding import derived_seed

    gen = torch.Generator().manual_seed(derived_seed(seed, task.test, task.rows))
    return task.truth_bits()["exact_mi_bits"] * (1 + 0.01 * torch.randn(1, generator=gen).item())


def broken(name, task, seed):
    if name == "constant":                          # says 3 bits whatever it sees
        return 3.0
    if name == "saturating":                        # InfoNCE-like: the truth, capped at log2(64)
        return min(task.truth_bits()["exact_mi_bits"], 6.0)
    if name == "wobbly":                            # falls as t grows past half the image
        t = task.rows
        return float(t if t <= 4 else 8 - t) * (2 if task.test == "additivity" else 1)
    raise AssertionError(name)


def _table(value_of, estimators):
    """The table of fake estimators (any names: summarize does not look them up) on the SMALL plan."""
    spec = ConsistencySpec(estimators=["nwj"], **SMALL)
    rows = []
    for cell in plan(spec.resolved()):
        for name in estimators:
            task = make_task(f"consistency-{cell.test}-{cell.dataset}", **cell.task_params(spec))
            rows.append(_row(cell, spec, name, value_of(name, task, cell.seed), 1.0))
    grids = {"gaussian": spec.grid("gaussian")}
    return {r["estimator"]: r for r in summarize(rows, grids, SMALL["seeds"])}


def test_an_exact_estimator_passes_every_test():
    r = _table(exact, ["exact-on-samples"])["exact-on-samples"]
    assert r["pass_baseline"] and r["pass_dp"] and r["pass_additivity"], r
    assert r["violations"] == 0 and abs(r["zero"]) < 1e-12
    assert r["dp_ratio"] == pytest.approx(1.0, abs=0.05) and r["add_ratio"] == pytest.approx(2.0, abs=0.05)
    assert r["dp_ratio_ci95"] > 0 and r["n_seeds"] == 3


def test_broken_estimators_fail():
    table = _table(broken, ["constant", "saturating", "wobbly"])
    const = table["constant"]
    assert not const["pass_baseline"] and const["zero"] == 3.0            # not 0 when Y says nothing
    assert not const["pass_additivity"] and const["add_ratio"] == pytest.approx(1.0)
    assert const["pass_dp"]                                                # a constant cannot see the duplicate
    sat = table["saturating"]
    assert sat["pass_baseline"] and not sat["pass_additivity"]             # the cap breaks additivity
    wob = table["wobbly"]
    assert wob["violations"] == 2 and not wob["pass_baseline"]


def test_violations_tolerate_small_noise():
    assert violations([(0, 0.0), (2, 1.0), (4, 0.99), (6, 2.0)]) == 0        # 0.01 bits: noise
    assert violations([(0, 0.0), (2, 1.0), (4, 0.9), (6, 2.0), (8, 1.0)]) == 2
    assert violations([(0, 0.0), (2, 10.0), (4, 9.9)]) == 0                   # within 2% of 10 bits


def test_a_ratio_over_a_zero_baseline_is_left_out():
    values = {("baseline", 2, 0): 0.0, ("dp", 2, 0): 1.0, ("additivity", 2, 0): 2.0,
              ("baseline", 2, 1): 1.0, ("dp", 2, 1): 1.0, ("additivity", 2, 1): 2.0}
    r = summarize_group(values, [2], [2], [0, 1])
    assert r["dp_ratio"] == 1.0 and math.isnan(r["dp_ratio_ci95"])


def test_plan_covers_each_test_per_critic_and_seed():
    spec = ConsistencySpec(datasets=["mnist"], critics=["joint", "conv"], seeds=[0, 1]).resolved()
    cells = plan(spec)
    rows, ratio = spec.grid("mnist")
    assert rows == [0, 4, 8, 12, 16, 20, 28] and ratio == [8, 16]
    assert len(cells) == 2 * 2 * (len(rows) + 2 * len(ratio))
    assert [c.seed for c in cells[:11]] == [0] * 11 and cells[0].critic == "joint"    # seed-major
    dp = [c for c in cells if c.test == "dp"]
    assert {(c.rows, c.rows_h) for c in dp} == {(8, 5), (16, 13)}
    with pytest.raises(MibenchError, match="ratio-rows must be > 0"):
        ConsistencySpec(datasets=["mnist"], ratio_rows=[0]).resolved().grid("mnist")
    with pytest.raises(MibenchError, match="sample protocol"):
        ConsistencySpec(estimators=["ksg"]).resolved()           # black-box: the sample route only
    assert ConsistencySpec(estimators=["ksg"], protocol="sample").resolved().estimators == ["ksg"]


def test_run_writes_the_table_and_resumes(tmp_path):
    out = tmp_path / "sc"
    calls = []

    def counting(spec, cell):
        calls.append(cell)
        return _fake_runner(lambda n, t, s: exact(n, t, s) if n == "nwj" else broken("constant", t, s))(spec, cell)

    spec = ConsistencySpec(estimators=["nwj", "infonce"], **SMALL)
    table = run_consistency(spec, out, command="mibench consistency ...", progress=False, runner=counting)
    n_cells = len(plan(spec.resolved()))
    assert len(calls) == n_cells
    by = {r["estimator"]: r for r in table}
    assert set(by) == {"exact", "nwj", "infonce"}
    assert by["exact"]["passes"] == "baseline, dp, additivity" and by["nwj"]["passes"] == "baseline, dp, additivity"
    assert by["infonce"]["passes"] == "dp"
    md = (out / "consistency.md").read_text()
    assert "| nwj | joint |" in md and "Baseline curves" in md and "Song & Ermon" in md
    with open(out / "consistency.csv") as f:
        assert {r["estimator"] for r in csv.DictReader(f)} == {"exact", "nwj", "infonce"}
    # the same command again: nothing left to run; another setting is refused
    run_consistency(spec, out, progress=False, runner=counting)
    assert len(calls) == n_cells
    with pytest.raises(MibenchError, match="other settings"):
        run_consistency(ConsistencySpec(estimators=["nwj"], steps=700, **SMALL), out, progress=False, runner=counting)
    # a run's or a sweep's directory is refused: its --overwrite would delete the tables written into it
    for marker in ("config.json", "sweep.json"):
        other = tmp_path / marker.split(".")[0]
        other.mkdir()
        (other / marker).write_text("{}")
        with pytest.raises(MibenchError, match="is a run or sweep directory"):
            run_consistency(spec, other, progress=False, runner=counting)
        assert sorted(p.name for p in other.iterdir()) == [marker]


def test_the_report_shows_the_table(tmp_path):
    from mibench.report import write_site

    out = tmp_path / "sc"
    run_consistency(ConsistencySpec(estimators=["nwj"], **SMALL), out, progress=False,
                    runner=_fake_runner(exact))
    index = write_site([out], tmp_path / "site", figures=False)
    html = index.read_text()
    assert 'id="self-consistency"' in html and "additivity ratio" in html and ">nwj<" in html


def test_cli_defaults_match_the_library():
    from mibench.cli import consistency

    assert list(consistency.DEFAULT_ESTIMATORS) == DEFAULT_ESTIMATORS
    assert len(DEFAULT_ESTIMATORS) >= 10


def test_one_command_end_to_end(tmp_path, capsys):
    """The real streaming route, tiny: every cell trains and the table is written."""
    from mibench.cli import main

    out = tmp_path / "sc"
    assert main(["consistency", "--dataset", "gaussian", "--estimators", "infonce,smile-5", "--seeds", "0",
                 "--rows", "0,4", "--ratio-rows", "4", "--steps", "3", "--tail", "2", "--batch-size", "8",
                 "--out", str(out), "--quiet"]) == 0
    with open(out / "consistency_estimates.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 4 and {r["test"] for r in rows} == {"baseline", "dp", "additivity"}
    assert "wrote" in capsys.readouterr().out


def test_steps_0_blames_steps_not_tail(tmp_path, capsys):
    from mibench.cli import main

    assert main(["consistency", "--steps", "0", "--out", str(tmp_path / "sc")]) == 2
    assert capsys.readouterr().err.strip() == "mibench: error: --steps must be an integer >= 1, got 0"


@pytest.mark.parametrize("flags,needle", [
    (["--steps", "-5"], "--steps must be an integer >= 1, got -5"),
    (["--tail", "0"], "--tail must be an integer >= 1, got 0"),
    (["--batch-size", "1"], "--batch-size must be an integer >= 2, got 1"),
    (["--lr", "nan"], "--lr must be a positive number, got nan"),
    (["--noise", "nan"], "--noise must be a finite number >= 0, got nan"),
    (["--protocol", "sample", "--noise", "1", "--n", "0"], "--n must be an integer >= 1, got 0"),
    (["--protocol", "sample", "--noise", "1", "--estimators", "ksg", "--n", "5"], "--n must be at least 20 pairs"),
    (["--protocol", "sample", "--noise", "-1", "--estimators", "ksg"], "--noise must be a finite number >= 0"),
    (["--rows", "99,3"], "rows must be in [0, 8] for gaussian, got 99"),
    (["--ratio-rows", "0"], "--ratio-rows must be > 0"),
])
def test_every_number_blames_its_own_flag_before_anything_is_written(tmp_path, capsys, flags, needle):
    """The class: each number is checked on its own, before the bound between two and before
    consistency.json is written (a refused value left in it would make the corrected command refuse
    --out as holding other settings)."""
    from mibench.cli import main

    out = tmp_path / "sc"
    assert main(["consistency", "--dataset", "gaussian", "--seeds", "0", *flags, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mibench: error: ") and needle in err and "\n" not in err, err
    assert not out.exists()


def test_the_default_tail_is_at_most_the_steps(tmp_path, capsys):
    """--tail left out: the last 100 steps, or all of them where --steps is fewer (a default never
    blames a flag the user did not give); a --tail above --steps is still refused."""
    from mibench.cli import main

    assert ConsistencySpec(steps=20, **SMALL).resolved().tail == 20
    assert ConsistencySpec(**SMALL).resolved().tail == 100
    assert ConsistencySpec(steps=20, tail=5, **SMALL).resolved().tail == 5
    assert main(["consistency", "--dataset", "gaussian", "--steps", "20", "--tail", "30",
                 "--out", str(tmp_path / "sc"), "--quiet"]) == 2
    assert "--tail must be in [1, --steps], got 30 with 20 steps" in capsys.readouterr().err


@pytest.mark.slow
def test_the_gaussian_estimator_passes_on_the_gaussian_analogue(tmp_path):
    """A real estimator that is exact for Gaussians (CCA on the sample covariance), on enough pairs."""
    spec = ConsistencySpec(estimators=["gaussian"], protocol="sample", n=60_000, datasets=["gaussian"],
                           seeds=[0, 1, 2], rows=[0, 4, 8], ratio_rows=[4])
    r = {row["estimator"]: row for row in run_consistency(spec, tmp_path / "g", progress=False)}["gaussian"]
    assert r["pass_baseline"] and r["pass_dp"] and r["pass_additivity"], r


def test_failed_grid_points_fail_the_baseline_and_black_box_estimators_run(tmp_path):
    """With the sample protocol, ksg failed every cell past t = 0 ("trains nothing: batch_size, lr, steps do
    not apply to it") and the table still said `passes: baseline`, from the t = 0 value alone."""
    from mibench.cli import main

    values = {("baseline", 0, 0): 0.0, ("baseline", 2, 0): float("nan"), ("baseline", 4, 0): float("nan")}
    assert not summarize_group(values, [0, 2, 4], [4], [0])["pass_baseline"]
    out = tmp_path / "sc"
    assert main(["consistency", "--dataset", "gaussian", "--protocol", "sample", "--n", "300", "--estimators",
                 "ksg", "--seeds", "0", "--rows", "0,4", "--ratio-rows", "4", "--out", str(out), "--quiet"]) == 0
    with open(out / "consistency_estimates.csv") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["status"] != "error" and math.isfinite(float(r["estimate"])) for r in rows)


def test_an_interrupted_consistency_run_names_how_to_continue_it(tmp_path, capsys, monkeypatch):
    """It said '--resume continues it', a flag consistency does not have; the same command continues it."""
    import mibench.analysis.consistency_run as CR
    from mibench.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(CR, "run_consistency", interrupted)
    assert main(["consistency", "--dataset", "gaussian", "--estimators", "infonce", "--seeds", "0", "--steps", "3",
                 "--out", str(tmp_path / "sc"), "--quiet"]) == 130
    assert capsys.readouterr().err.strip() == ("mibench: interrupted; what ran is marked interrupted "
                                               "(the same command again continues it)")
