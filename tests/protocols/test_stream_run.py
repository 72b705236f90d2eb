import csv
import json

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.protocols.stream.run import RunConfig, run
from mibench.tasks import TASKS
from mibench.tasks.gaussian import GaussianTask

SMALL = dict(task="gaussian", task_params={"dim": 4}, hidden=32, layers=1, batch_size=16, device="cpu")


def test_same_seed_same_numbers_and_estimators_are_independent_of_grouping():
    a = run(RunConfig(estimators="smile,nwj", steps=40, mi="1,2", seed=3, **SMALL))
    b = run(RunConfig(estimators="smile,nwj", steps=40, mi="1,2", seed=3, **SMALL))
    np.testing.assert_array_equal(a.estimates, b.estimates)
    alone = run(RunConfig(estimators="nwj", steps=40, mi="1,2", seed=3, **SMALL))
    np.testing.assert_array_equal(alone.estimates[0], a.estimates[1])
    other = run(RunConfig(estimators="smile,nwj", steps=40, mi="1,2", seed=4, **SMALL))
    assert not np.allclose(other.estimates, a.estimates)


def test_estimators_sharing_a_training_objective_share_one_critic_with_unchanged_numbers():
    kw = dict(SMALL, steps=40, mi="1,2", seed=3)
    together = run(RunConfig(estimators="js,nwj,smile-5,smile-inf", **kw))
    # JS and SMILE-tau train by the same JS f-GAN objective: one critic for the three of them
    assert together.config["critics_trained"] == 2
    assert together.config["shared_critics"] == {"js-fgan": ["js", "smile-5", "smile-inf"]}
    for i, name in enumerate(together.names):
        alone = run(RunConfig(estimators=name, **kw))
        assert alone.config["critics_trained"] == 1
        np.testing.assert_array_equal(alone.estimates[0], together.estimates[i])
    # the estimates really are different read-outs of the shared critic
    assert not np.allclose(together.estimates[0], together.estimates[2])
    assert run(RunConfig(estimators="all", **dict(kw, steps=2))).config["critics_trained"] == 5


def test_a_diverged_reader_of_a_shared_critic_leaves_the_others_training():
    from mibench.estimators import ESTIMATORS, JSTrainedEstimator

    # reads the shared JS-trained critic, but its estimate is non-finite from the first step
    ESTIMATORS.add("test-js-inf", "test only", lambda: JSTrainedEstimator(lambda s: s.sum() * float("inf")))
    try:
        kw = dict(SMALL, steps=30, mi="1,2", seed=1, log_every=10)
        res = run(RunConfig(estimators="test-js-inf,smile-5", **kw))
        assert res.config["critics_trained"] == 1 and res.diverged == {"test-js-inf": 0}
        alone = run(RunConfig(estimators="smile-5", **kw))
        np.testing.assert_array_equal(alone.estimates[0], res.estimates[1])
    finally:
        ESTIMATORS._entries.pop("test-js-inf")


class _NaNAfter(GaussianTask):
    """Gaussian task whose batches turn non-finite after a given number of samples."""

    def __init__(self, device="cpu", after=25):
        super().__init__(dim=4, device=device)
        self.calls, self.after = 0, after

    def sample(self, batch_size, mi_bits, generator):
        x, y = super().sample(batch_size, mi_bits, generator)
        self.calls += 1
        if self.calls > self.after:
            x = x * float("inf")
        return x, y


@pytest.fixture
def nan_task():
    TASKS.add("test-nan-after", "test only", lambda device="cpu": _NaNAfter(device))
    yield "test-nan-after"
    TASKS._entries.pop("test-nan-after")


def test_divergence_is_recorded_and_the_run_finishes(nan_task, tmp_path):
    cfg = RunConfig(task=nan_task, estimators="nwj,infonce", steps=60, mi=1.0, hidden=16, layers=1,
                    batch_size=8, device="cpu", log_every=10)
    res = run(cfg, out_dir=tmp_path / "r", plot=False)
    assert set(res.diverged) == {"nwj", "infonce"}
    assert all(step == 25 for step in res.diverged.values())
    assert np.isfinite(res.estimates[:, :25]).all() and np.isnan(res.estimates[:, 25:]).all()
    conf = json.loads((tmp_path / "r" / "config.json").read_text())
    assert conf["status"] == "complete" and conf["diverged"] == {"nwj": 25, "infonce": 25}
    rows = list(csv.DictReader(open(tmp_path / "r" / "summary.csv")))
    assert all(int(r["steps"]) == 25 for r in rows)


def test_run_directory_contents(tmp_path):
    out = tmp_path / "run"
    res = run(RunConfig(estimators="smile,infonce", steps=30, mi="stepwise", **SMALL), out_dir=out)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "estimates.csv", "staircase.png", "summary.csv"]
    conf = json.loads((out / "config.json").read_text())
    assert conf["status"] == "complete"
    assert conf["config"]["estimators"] == ["smile-5", "infonce"]
    assert conf["environment"]["torch"] == torch.__version__ and conf["config"]["seed"] == 0
    assert conf["environment"]["allocator"] != "" and conf["peak_memory"]["process_max_rss_mb"] > 0
    assert conf["config"]["precision"] == "fp32"
    assert conf["ceilings_bits"]["infonce"] == pytest.approx(4.0)        # log2(16)
    assert any("infonce cannot exceed" in n for n in conf["notes"])
    est = list(csv.DictReader(open(out / "estimates.csv")))
    assert list(est[0]) == ["step", "estimator", "critic", "true_mi", "estimate", "run_id", "seed"]
    assert {(r["run_id"], r["seed"]) for r in est} == {("run", "0")} and conf["run_id"] == "run"
    assert len(est) == 60 and {r["estimator"] for r in est} == {"smile-5", "infonce"}
    summ = list(csv.DictReader(open(out / "summary.csv")))
    assert list(summ[0]) == ["task", "estimator", "critic", "true_mi", "mean_estimate", "bias", "variance", "mse",
                             "steps"]
    assert [float(r["true_mi"]) for r in summ] == [2, 2, 4, 4, 6, 6, 8, 8, 10, 10]
    for r in summ:
        assert float(r["mse"]) == pytest.approx(float(r["bias"]) ** 2 + float(r["variance"]), rel=1e-4, abs=1e-6)
    assert (out / "staircase.png").read_bytes()[:4] == b"\x89PNG"
    assert not list(out.glob(".*tmp"))
    assert res.summary[0]["steps"] == 6


def test_burn_in_window():
    res = run(RunConfig(estimators="nwj", steps=20, mi="1,2", burn_in=4, **SMALL))
    assert [r["steps"] for r in res.summary] == [6, 6]
    mean = np.mean(res.estimates[0, 4:10])
    assert res.summary[0]["mean_estimate"] == pytest.approx(mean)


@pytest.mark.parametrize("kwargs,match", [
    (dict(estimators="nope"), "unknown estimator"),
    (dict(critic="nope"), "unknown critic"),
    (dict(batch_size=1), "batch-size"),
    (dict(lr=-1.0), "--lr"),
    (dict(mi="-3"), ">= 0"),
    (dict(device="tpu"), "device must be"),
    (dict(precision="fp16"), "--precision"),
    (dict(precision="tf32", device="cpu"), "tf32 needs a CUDA device"),
])
def test_bad_configs(kwargs, match):
    base = dict(SMALL, steps=10)
    base.update(kwargs)
    with pytest.raises(MibenchError, match=match):
        run(RunConfig(**base))


def test_stacked_engine_reproduces_sequential_training():
    kw = dict(SMALL, estimators="smile,nwj,mine,js", steps=30, mi="1,2", seed=5)
    seq = run(RunConfig(engine="sequential", **kw))
    stk = run(RunConfig(engine="stacked", **kw))
    assert seq.config["engine"] == "sequential" and stk.config["engine"] == "stacked"
    # same initialisation and batches; only float summation order differs (bmm vs per-critic GEMMs)
    np.testing.assert_allclose(stk.estimates, seq.estimates, atol=2e-3)
    with pytest.raises(MibenchError, match="joint critic only"):
        run(RunConfig(engine="stacked", **dict(kw, critic="separable")))


def test_bf16_precision_is_opt_in_close_to_fp32_and_recorded():
    kw = dict(SMALL, estimators="smile,nwj", steps=40, mi="1,2", seed=2)
    ref = run(RunConfig(**kw))
    bf = run(RunConfig(precision="bf16", **kw))
    assert ref.config["config"]["precision"] == "fp32" and bf.config["config"]["precision"] == "bf16"
    assert np.isfinite(bf.estimates).all()
    # really computed in bf16 (not silently fp32), and still the same training to bf16 accuracy
    assert not np.array_equal(bf.estimates, ref.estimates)
    np.testing.assert_allclose(bf.estimates, ref.estimates, atol=0.1)
    assert bf.config["peak_memory"]["process_max_rss_mb"] > 0


def test_linear_follows_autocast():
    from mibench.critics import kernels

    x, w = torch.randn(8, 5), torch.randn(3, 5)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert kernels.linear(x, w, None, relu=True).dtype == torch.bfloat16
    assert kernels.linear(x, w, None, relu=True).dtype == torch.float32


class _Broken(GaussianTask):
    def sample(self, batch_size, mi_bits, generator):
        raise RuntimeError("sampler exploded")


def test_a_crash_marks_the_run_failed_and_keeps_the_cause(tmp_path):
    TASKS.add("test-broken", "test only", lambda device="cpu": _Broken(dim=2, device=device))
    try:
        with pytest.raises(RuntimeError, match="sampler exploded"):
            run(RunConfig(task="test-broken", estimators="nwj", steps=5, hidden=8, layers=0, batch_size=4,
                          device="cpu"), out_dir=tmp_path / "r")
        assert json.loads((tmp_path / "r" / "config.json").read_text())["status"] == "failed"
    finally:
        TASKS._entries.pop("test-broken")


def test_the_run_table_keeps_wide_numbers_apart():
    """A diverging bound's mean of -25559.643 and MSE of 6.6e8 ran into each other in the printed table
    ('10-25559.643-25569.64355991221024.59...')."""
    from types import SimpleNamespace

    from mibench.protocols import get_protocol

    row = {"estimator": "dv", "true_mi": 10.0, "mean_estimate": -25559.643, "bias": -25569.643,
           "variance": 5.599e9, "mse": 6.567e8, "steps": 300}
    result = SimpleNamespace(config={"task_info": {"task": "gaussian", "ds": 1, "dr": 1},
                                     "environment": {"device": "cpu"}, "steps_per_second": 1.0},
                             summary=[row], diverged={})
    line = get_protocol("stream").format_result(result).splitlines()[-1]
    assert line.split() == ["dv", "10", "-2.556e+04", "-2.557e+04", "5.599e+09", "6.567e+08", "300"]
