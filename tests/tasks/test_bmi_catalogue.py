"""BMI catalogues (mibench/tasks/bmi_v1.py, bmi_v2.py) against BMI's own values and samplers
(mibench/tasks/data/bmi_reference.json, written by benchmarks/peers/bmi_reference.py in BMI's env)."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from mibench.cli import main
from mibench.errors import MibenchError
from mibench.tasks import TASKS, make_task
from mibench.tasks.base import check_mi_request
from mibench.tasks.catalogue import CATALOGUES, catalogue_tasks, catalogues_of

REF = json.loads((Path(__file__).resolve().parents[2] / "mibench" / "tasks" / "data" / "bmi_reference.json")
                 .read_text())
ROWS = {r["id"]: r for r in REF["tasks"]}
V1 = [r["id"] for r in REF["tasks"] if r["catalogue"] == "bmi-v1"]
V2_MIX = [r["id"] for r in REF["tasks"] if r["catalogue"] == "bmi-v2"]
#: BMI evaluates this closed form in JAX float32 (eps - jnp.log(2 eps)); every other v1 value is float64
BMI_FLOAT32 = {"1v1-additive-0.1"}


def test_catalogue_lists_the_40_v1_tasks_by_bmis_ids_in_bmis_order():
    assert len(V1) == 40 and catalogue_tasks("bmi-v1") == V1
    names = {e.name for e in TASKS}
    assert set(V1) <= names and set(V2_MIX) <= names
    assert len(catalogue_tasks("bmi-v2")) == 26 and set(V2_MIX) <= set(catalogue_tasks("bmi-v2"))
    for tid in V1 + V2_MIX:
        t = make_task(tid)
        assert (t.dim_x, t.dim_y) == (ROWS[tid]["dim_x"], ROWS[tid]["dim_y"]), tid


@pytest.mark.parametrize("tid", V1)
def test_closed_form_truth_matches_bmi(tid):
    t = make_task(tid)
    tol = 2 * np.finfo(np.float32).eps * ROWS[tid]["mi_nats"] if tid in BMI_FLOAT32 else 1e-9
    assert ROWS[tid]["truth"] == "closed form" and t.truth == "closed form"
    assert abs(t.mi_nats - ROWS[tid]["mi_nats"]) <= tol


def test_monte_carlo_truth_within_3_standard_errors_of_bmis():
    worst = 0.0
    for tid in V2_MIX:
        t = make_task(tid)
        se = math.hypot(t.mi_stderr_nats, ROWS[tid]["mi_stderr_nats"])
        worst = max(worst, abs(t.mi_nats - ROWS[tid]["mi_nats"]) / se)
        assert t.truth == "Monte-Carlo" and 0 < t.mi_stderr_nats < 0.005
    assert worst <= 3.0


def test_additive_noise_closed_form_by_quadrature():
    """I = h(Y) - log(2 eps) with h(Y) of the trapezoid density of U(0,1) + U(-eps, eps), numerically."""
    from scipy.integrate import quad

    for tid, eps in (("1v1-additive-0.1", 0.1), ("1v1-additive-0.75", 0.75)):
        dens = lambda y: max(0.0, min(y + eps, 1.0) - max(y - eps, 0.0)) / (2 * eps)  # noqa: E731
        pts = sorted({-eps, eps, 1 - eps, 1 + eps})
        h = -sum(quad(lambda y: dens(y) * math.log(dens(y)) if dens(y) > 0 else 0.0, a, b, epsabs=1e-13)[0]
                 for a, b in zip(pts, pts[1:]))
        assert abs(h - math.log(2 * eps) - make_task(tid).mi_nats) < 1e-9


def test_samplers_match_bmis_quantiles():
    """At each of BMI's 10/50/90 % quantiles (20,000 draws of BMI's sampler) the fraction of 20,000 of
    our draws below it is the quantile level within 5 standard errors of the difference of two
    empirical CDFs (sqrt(2 q (1 - q) / n) = 0.003 at q = 0.1)."""
    n = REF["meta"]["quantile_samples"]
    levels = np.array(REF["meta"]["quantiles"])
    tol = 5 * np.sqrt(2 * levels * (1 - levels) / n)
    for tid in V1 + V2_MIX:
        t = make_task(tid)
        x, y = t.sample(n, t.mi_bits, torch.Generator().manual_seed(7))
        for ours, ref in ((x, ROWS[tid]["quantiles_x"]), (y, ROWS[tid]["quantiles_y"])):
            a = ours.double().numpy()
            for j, qs in enumerate(ref):
                frac = (a[:, j:j + 1] <= np.array(qs)[None, :]).mean(0)
                assert np.all(np.abs(frac - levels) <= tol), (tid, j, frac)


def test_a_fixed_task_holds_its_own_level_only():
    t = make_task("1v1-normal-0.75")
    assert t.max_mi_bits == t.mi_bits and abs(t.mi_nats + 0.5 * math.log(1 - 0.75 ** 2)) < 1e-15
    x, y = t.sample(100, float(f"{t.mi_bits:.12g}"), torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (100, 1) and x.dtype == torch.float32
    with pytest.raises(MibenchError, match="one fixed true MI") as e:
        t.sample(10, 0.5, torch.Generator())
    assert "\n" not in str(e.value) and "--mi 0.596322538971" in str(e.value)
    with pytest.raises(MibenchError, match="one fixed true MI"):   # above the level: the same message
        check_mi_request(t.name, 4.0, t.max_mi_bits)
    info = t.info()
    assert info["catalogue"] == "bmi-v1" and info["catalogues"] == ["bmi-v1"] and info["fixed_mi"]
    assert catalogues_of("multinormal-dense-5-5-0.5") == ["bmi-v1", "bmi-v2"]
    assert catalogues_of("vision") == ["lee-rhee"] and catalogues_of("gauss-dense-2x2") == []
    assert catalogues_of("mutinfo-gaussian2d-24x24") == ["mutinfo-images"]
    with pytest.raises(MibenchError, match="unknown catalogue"):
        catalogue_tasks("bmi-v3")
    assert set(CATALOGUES) == {"bmi-v1", "bmi-v2", "mutinfo-images", "lee-rhee"}


def test_both_protocols_and_one_line_refusals(tmp_path, capsys):
    level = f"{make_task('multinormal-sparse-3-3-2-2.0').mi_bits:.12g}"
    out = tmp_path / "sample"
    assert main(["run", "--task", "multinormal-sparse-3-3-2-2.0", "--estimator", "gaussian", "--n", "400",
                 "--seeds", "0,1", "--mi", level, "--timeout", "0", "--out", str(out), "--quiet", "--no-plot"]) == 0
    rows = (out / "sample_estimates.csv").read_text().splitlines()
    assert len(rows) == 3 and json.loads((out / "config.json").read_text())["task_info"]["catalogue"] == "bmi-v1"
    out = tmp_path / "stream"
    assert main(["run", "--task", "multinormal-sparse-3-3-2-2.0", "--estimator", "infonce", "--steps", "20",
                 "--batch-size", "16", "--hidden", "8", "--layers", "1", "--mi", level, "--out", str(out),
                 "--quiet", "--no-plot", "--device", "cpu"]) == 0
    assert (out / "summary.csv").is_file()
    capsys.readouterr()
    for args in (["--task", "1v1-normal-0.75", "--n", "100", "--mi", "4"],
                 ["--task", "1v1-normal-0.75", "--steps", "10", "--mi", "stepwise"],
                 ["--task", "multinormal-dense-2-2-0.5", "--n", "100", "--mi", "0.1", "--timeout", "0"]):
        assert main(["run", "--estimator", "gaussian" if "--n" in args else "infonce", *args, "--quiet",
                     "--no-plot", "--out", str(tmp_path / "bad")]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Traceback" not in err[0], (args, err)
        assert "one fixed true MI" in err[0] and not (tmp_path / "bad").exists()   # refused before the run


def test_list_shows_the_catalogues_with_their_levels(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for tid in V1 + V2_MIX:
        assert f"  {tid} " in out or f"  {tid}\n" in out, tid
    assert "bmi-v1" in out and "MI 0.596322538971 bits" in out


@pytest.mark.slow
def test_committed_monte_carlo_table_is_reproduced():
    from mibench.tasks.bmi_v2 import MIXTURES, mc_truth, truth_table

    table = truth_table()
    for tid in MIXTURES:
        mi, se = mc_truth(tid)
        assert abs(mi - table[tid]["mi_nats"]) < 1e-12 and abs(se - table[tid]["mi_stderr_nats"]) < 1e-12
