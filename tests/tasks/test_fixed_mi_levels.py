"""Tasks with one fixed MI and MI bounds, as a user meets them (issue 34): a fixed-MI task runs at its
own MI when none is given, takes its MI at the precision mibench prints it, refuses other levels
without naming internal parameters or a level nobody asked for; an MI beyond a mixture's reach is
one line; a bound printed to a few digits is accepted as that bound."""
import json
import math
import re

import pytest
import torch

from mibench.cli import main
from mibench.errors import MibenchError
from mibench.protocols.sample.config import SampleConfig
from mibench.protocols.sample.run import prepare as prepare_sample
from mibench.protocols.stream.config import StreamConfig
from mibench.protocols.stream.run import prepare as prepare_stream
from mibench.sweep.spec import SweepSpec
from mibench.tasks import TASKS, make_task
from mibench.tasks.base import FIXED_LEVELS, check_mi_request, fixed_level, mi_for_task, printed_tolerance
from mibench.tasks.catalogue import CATALOGUES
from mibench.utils.checks import check_task_params

FIXED = sorted({n for cat in ("bmi-v1", "bmi-v2") for n in CATALOGUES[cat]})
#: an identifier that starts with an underscore (an internal parameter such as ``_t``)
INTERNAL = re.compile(r"(?<![\w.])_[A-Za-z]\w*")


def test_every_catalogue_fixed_task_is_known_before_it_is_built():
    assert len(FIXED) == 40 + 13 and set(FIXED) <= set(FIXED_LEVELS)
    for name in FIXED:
        assert fixed_level(name) == make_task(name).mi_bits, name
        assert fixed_level(name.upper()) == fixed_level(name)
    assert fixed_level("gaussian") is None and fixed_level("mutinfo-channel-mnist") is None


@pytest.mark.parametrize("name", FIXED)
def test_a_fixed_task_runs_at_its_own_level_and_takes_it_as_printed(name):
    level = fixed_level(name)
    assert mi_for_task(name, None) == level                       # nothing given: its own MI
    for digits in (4, 6, 12):                                     # as printed by refusals, tables, `list`
        shown = float(f"{level:.{digits}g}")
        assert check_mi_request(name, shown, level) == level, (name, shown)
        assert mi_for_task(name, shown) == level and mi_for_task(name, str(shown)) == level
        assert mi_for_task(name, [shown]) == [level]
        task = make_task(name)
        x, y = task.sample(8, shown, torch.Generator().manual_seed(0))
        assert x.shape == (8, task.dim_x) and y.shape == (8, task.dim_y)
    far = level + 10 * printed_tolerance(level)
    with pytest.raises(MibenchError) as e:
        check_mi_request(name, far, level)
    msg = str(e.value)
    assert "\n" not in msg and "requested" not in msg and not INTERNAL.search(msg)
    assert f"{far:g} bits" in msg and f"{level:.12g}" in msg and "leave --mi out" in msg
    assert mi_for_task(name, far) == far                          # not taken as the level: the check refuses


@pytest.mark.parametrize("name", FIXED)
def test_both_protocols_prepare_a_fixed_task_without_an_mi(name):
    level = mi_for_task(name, None)
    prepared = prepare_sample(SampleConfig(task=name, mi=level, n=100, estimators=["ksg"], device="cpu"))
    assert prepared.config.levels == [level]
    prepared = prepare_stream(StreamConfig(task=name, mi=level, steps=10, device="cpu"))
    assert prepared.schedule.levels == (level,)


def test_no_task_factory_takes_an_internal_parameter():
    """Refusals list a task's parameters from its factory's signature: none may be internal."""
    names = [e.name for e in TASKS] + ["gauss-dense-2x2", "mix-1x1", "student-t-dof3-2x2",
                                       "mutinfo-gaussian2d-24x24"]
    import inspect

    for name in names:
        params = inspect.signature(TASKS.get(name).obj).parameters
        assert not [p for p in params if p.startswith("_")], name
        with pytest.raises(MibenchError) as e:
            check_task_params(name, TASKS.get(name).obj, {"no_such_parameter": 1})
        assert not INTERNAL.search(str(e.value)), (name, str(e.value))


def test_the_cli_runs_a_bmi_task_at_its_own_mi(tmp_path, capsys):
    level = fixed_level("1v1-normal-0.75")
    out = tmp_path / "stream"
    assert main(["run", "--task", "1v1-normal-0.75", "--steps", "8", "--batch-size", "8", "--hidden", "8",
                 "--layers", "1", "--device", "cpu", "--out", str(out), "--quiet", "--no-plot"]) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["config"]["mi"] == level and cfg["schedule"]["levels_bits"] == [level]
    out = tmp_path / "sample"
    assert main(["run", "--task", "1v1-normal-0.75", "--n", "100", "--estimator", "ksg", "--timeout", "0",
                 "--out", str(out), "--quiet", "--no-plot"]) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["config"]["mi"] == level
    out = tmp_path / "printed"                                   # --mi as `mibench run`'s table prints it
    assert main(["run", "--task", "1v1-normal-0.75", "--n", "100", "--estimator", "ksg", "--timeout", "0",
                 "--mi", f"{level:.4g}", "--out", str(out), "--quiet", "--no-plot"]) == 0
    assert json.loads((out / "config.json").read_text())["config"]["mi"] == level    # recorded exactly
    capsys.readouterr()
    assert main(["run", "--task", "1v1-normal-0.75", "--n", "100", "--estimator", "ksg", "--mi", "0.6",
                 "--out", str(tmp_path / "bad"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "0.6 bits" in err[0] and "requested 4" not in err[0]
    assert main(["run", "--task", "1v1-normal-0.75", "--steps", "5", "--dim", "3", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "does not take 'dim'" in err and not INTERNAL.search(err)


def test_a_sweep_runs_a_fixed_task_at_its_own_mi():
    level = fixed_level("1v1-normal-0.75")
    stream = SweepSpec.from_dict({"tasks": ["1v1-normal-0.75", "gaussian"], "steps": 20}).cells()
    assert [c.config["mi"] for c in stream] == [level, "stepwise"]
    sample = SweepSpec.from_dict({"tasks": ["1v1-normal-0.75"], "n": 100, "estimators": ["ksg"]}).cells()
    assert [c.config["mi"] for c in sample] == [level]
    printed = SweepSpec.from_dict({"tasks": ["1v1-normal-0.75"], "n": 100, "estimators": ["ksg"],
                                   "mi": [f"{level:.4g}"]}).cells()
    assert [c.config["mi"] for c in printed] == [level]
    for other in ({"steps": 20, "mi": 2}, {"steps": 20, "mi": "stepwise"}, {"n": 100, "mi": 4}):
        with pytest.raises(MibenchError, match="cannot run at"):       # refused when planned, not per cell
            SweepSpec.from_dict({"tasks": ["1v1-normal-0.75"], "estimators": ["ksg"] if "n" in other else
                                 ["smile-5"], **other})


@pytest.mark.parametrize("name", ["mix-1x1", "mix-3x2"])
def test_a_mixture_beyond_its_reach_is_one_line(name, tmp_path, capsys):
    task = make_task(name)
    reach = task.max_mi_bits
    assert 10 < reach < math.inf
    for mi in (reach + 1, 1e3, 1e300):
        with pytest.raises(MibenchError, match="holds at most") as e:
            task.sample(4, mi, torch.Generator())
        assert "\n" not in str(e.value)
    for shown in (reach, float(f"{reach:.4g}"), float(f"{reach:.6g}")):     # the reach as printed
        x, _ = task.sample(4, shown, torch.Generator().manual_seed(0))
        assert torch.isfinite(x).all()
    for extra in (["--steps", "5"], ["--n", "100", "--estimator", "ksg"]):
        assert main(["run", "--task", name, "--mi", "1000", *extra, "--out", str(tmp_path / "bad"), "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "holds at most" in err[0] and "binary sources" not in err[0], err


def test_a_bound_is_accepted_as_printed():
    """The label channel's maximum log2 K, printed 3.32193 (or 3.322), is accepted and drawn at log2 K;
    a Student-t task's minimum as its refusal prints it is accepted."""
    from mibench.tasks.label_channel import kary_error

    top = math.log2(10)
    for shown in (top, 3.32193, 3.322):
        assert check_mi_request("mutinfo-channel-mnist", shown, top, "alphabet of 10 classes") == top
        assert kary_error(10, shown) == 0.0
    with pytest.raises(MibenchError, match="holds at most 3.32193 bits"):
        check_mi_request("mutinfo-channel-mnist", 3.33, top)
    task = make_task("student-t-dof3-2x2")
    low = task.min_mi_nats / math.log(2)
    with pytest.raises(MibenchError, match="holds at least") as e:
        task.rho(low / 2)
    shown = float(re.search(r"at least ([0-9.]+) bits", str(e.value)).group(1))
    assert task.rho(shown) < 0.01 and task.rho(float(f"{low:.4g}")) < 0.01


def test_the_label_channel_runs_at_its_maximum(tmp_path):
    try:
        task = make_task("mutinfo-channel-mnist", n_per_class=60)
    except MibenchError as exc:
        pytest.skip(f"full MNIST not available ({exc})")
    _, _, cx, cy = task.sample_with_classes(500, float(f"{task.max_mi_bits:.6g}"), torch.Generator().manual_seed(0))
    assert torch.equal(cx, cy)                                     # error-free channel: log2 K bits


def test_a_stream_level_snapped_to_the_tasks_maximum_is_scored_as_drawn():
    """The streaming protocol drew a request within the printed precision of the task's maximum at the
    maximum (3.322 bits as log2 10) but scored the estimates against the request."""
    try:
        prepared = prepare_stream(StreamConfig(task="mutinfo-channel-mnist", mi="1,3.322", steps=10, device="cpu"))
    except MibenchError as exc:
        pytest.skip(f"full MNIST not available ({exc})")
    assert prepared.schedule.levels == (1.0, math.log2(10)) and prepared.config.mi == [1.0, math.log2(10)]
    assert set(prepared.schedule.true_mi()) == {1.0, math.log2(10)}


@pytest.mark.parametrize("protocol", [{"n": 200, "estimators": ["ksg"]},
                                      {"steps": 20, "estimators": ["smile-5"], "batch_size": 16, "hidden": 8}])
def test_a_sweep_cell_drawn_at_the_tasks_maximum_resumes_as_complete(protocol, tmp_path):
    """A cell whose run recorded the level it drew at the task's maximum (log2 10 for 3.322) while the spec
    keeps the request: --resume refused the sweep ("finished with a different config (mi changed)")."""
    from mibench.sweep import run_sweep

    try:
        make_task("mutinfo-channel-mnist", n_per_class=60)
    except MibenchError as exc:
        pytest.skip(f"full MNIST not available ({exc})")
    spec = SweepSpec.from_dict({"tasks": [{"task": "mutinfo-channel-mnist", "params": {"n_per_class": 60}}],
                                "mi": [3.322], "seeds": [0], "device": "cpu", **protocol})
    out = tmp_path / "sw"
    assert run_sweep(spec, out, workers=1, plot=False, log=lambda line: None).ok
    again = run_sweep(spec, out, workers=1, plot=False, resume=True, log=lambda line: None)
    assert again.ok and again.skipped == 1 and again.ran == 0
