"""``mibench.estimate`` on images with the conv critic (issue 33): image-shaped arrays give the critic
its shape, no canonical reduction, and the sample protocol hands image tasks' samples over as images."""
import pytest
import torch

import mibench
from mibench.errors import MibenchError
from mibench.tasks import make_task

FAST = dict(steps=30, min_steps=10, eval_every=10, hidden=16, layers=0)


@pytest.fixture(scope="module")
def images():
    task = make_task("consistency-baseline-mnist", rows=12, noise=0.3, data_dir="embedded")
    return task.sample_images(400, torch.Generator().manual_seed(0))


def test_image_arrays_reach_the_conv_critic_unreduced(images):
    x, y = images
    res = mibench.estimate(x, y, critic="conv", **FAST)
    assert res.critic == "conv" and res.settings["reduce"] is False and res.n_parameters > 0
    flat = mibench.estimate(x.reshape(400, -1), y.reshape(400, -1), critic="conv", **FAST)
    assert flat.mi == pytest.approx(res.mi)          # 784 columns read as 1 x 28 x 28: the same critic
    assert mibench.estimate(x[:, 0], y[:, 0], critic="conv", **FAST).mi == pytest.approx(res.mi)   # (n, H, W)


def test_reduce_is_refused_for_an_image_critic(images):
    x, y = images
    with pytest.raises(MibenchError, match="reads images"):
        mibench.estimate(x, y, critic="conv", reduce=True, **FAST)
    with pytest.raises(MibenchError, match="image-shaped inputs"):
        mibench.estimate(torch.randn(200, 5), torch.randn(200, 5), critic="conv", **FAST)


def test_sample_protocol_hands_images_to_the_conv_critic():
    from mibench.protocols.sample.config import SampleConfig
    from mibench.protocols.sample.run import prepare, run_sample

    cfg = SampleConfig(task="mutinfo-gaussian2d-16x16", estimators=["infonce", "gaussian"], critic="conv", mi=1.0,
                       n=300, seeds=[0], timeout=None, device="cpu", estimate_kwargs=dict(FAST))
    result = run_sample(prepare(cfg))
    rows = {r["estimator"]: r for r in result.rows}
    assert rows["infonce"]["status"] == "ok", rows
    # the Gaussian closed form on 256 + 256 pixels from 300 pairs cannot be a number: recorded as failed
    assert rows["gaussian"]["status"] in ("implausible", "error") and rows["gaussian"]["error"], rows
    with pytest.raises(MibenchError, match="reads images"):
        from mibench.protocols import get_protocol

        get_protocol("sample").prepare(SampleConfig(task="gaussian", estimators=["infonce"], critic="conv", mi=1.0,
                                                    n=300, seeds=[0]))
