"""The K-ary symmetric label channel (mibench/tasks/label_channel.py): closed form against the joint
pmf by enumeration, the level solver, mutinfo's reroll parametrisation, and the task on MNIST."""
import math

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.tasks import bsc_mi_bits, make_task
from mibench.tasks.label_channel import channel_joint_pmf, kary_error, kary_mi_nats


def _enumerated_mi(p):
    px, py = p.sum(1), p.sum(0)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / np.outer(px, py)[nz])).sum())


def test_closed_form_equals_enumeration_of_the_joint_pmf():
    for k in range(2, 11):
        for eps in (0.0, 1e-6, 0.05, 0.3, 1 - 1 / k, 0.97, 1.0):
            p = channel_joint_pmf(k, eps)
            assert abs(p.sum() - 1) < 1e-12 and np.allclose(p.sum(1), 1 / k)
            assert abs(kary_mi_nats(k, eps) - _enumerated_mi(p)) < 1e-12, (k, eps)
    assert abs(kary_mi_nats(2, 0.11) / math.log(2) - bsc_mi_bits(1, 0.11)) < 1e-12   # K = 2 is the BSC


def test_levels_are_solved_exactly_and_match_mutinfos_reroll_channel():
    for k in (2, 3, 10):
        for bits in (0.0, 0.1, 1.0, math.log2(k) - 1e-9, math.log2(k)):
            eps = kary_error(k, bits)
            assert 0 <= eps <= 1 - 1 / k and abs(kary_mi_nats(k, eps) / math.log(2) - bits) < 1e-9
        r = 0.4                 # mutinfo: with probability r, redraw C' uniformly from all K classes
        reroll = (1 - r) * np.eye(k) / k + r / k / k
        assert np.allclose(reroll, channel_joint_pmf(k, r * (k - 1) / k), atol=1e-15)


def test_bad_channel_parameters_are_one_line():
    for call, match in ((lambda: kary_mi_nats(1, 0.1), "K >= 2"), (lambda: kary_mi_nats(10, 1.5), r"\[0, 1\]"),
                        (lambda: kary_error(4, 2.5), "at most 2 bits"), (lambda: kary_mi_nats(2.5, 0.1), "K >= 2")):
        with pytest.raises(MibenchError, match=match) as e:
            call()
        assert "\n" not in str(e.value)


@pytest.fixture(scope="module")
def mnist_channel():
    from mibench.data.sources import resolve_data_dir

    try:
        return make_task("mutinfo-channel-mnist", n_per_class=60)
    except MibenchError as exc:
        pytest.skip(f"full MNIST not available ({exc}; data dir {resolve_data_dir()})")


def test_mnist_channel_samples_follow_the_pmf(mnist_channel):
    t = mnist_channel
    info = t.info()
    assert info["decoder_accuracy"] == 1.0 and info["pool_sizes"] == [60] * 10 and t.max_mi_bits == math.log2(10)
    g = torch.Generator().manual_seed(5)
    bits = 2.0
    n = 40_000
    x, y, cx, cy = t.sample_with_classes(n, bits, g)
    assert x.shape == y.shape == (n, 784) and float(x.max()) <= 1.0
    counts = np.zeros((10, 10))
    np.add.at(counts, (cx.numpy(), cy.numpy()), 1)
    p = channel_joint_pmf(10, kary_error(10, bits))
    sd = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(counts / n - p) <= 5 * sd + 1e-12)
    # every image drawn for class c is an image of the kept pool of class c
    pool = t.items.reshape(len(t.items), -1).float() / 255
    hit = torch.cdist(x[:200], pool).argmin(1)
    assert torch.equal(t.labels[hit], cx[:200])
    with pytest.raises(MibenchError, match="at most"):
        t.sample(4, 3.5, g)
    with pytest.raises(MibenchError, match="k must be 2..10"):
        make_task("mutinfo-channel-mnist", k=11)
