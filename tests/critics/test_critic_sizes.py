"""Each critic class declares its own size (parameters, a training step's activations), and the
memory checks read it from there: the declared parameter count is the built critic's, for every
registered critic, and a conv critic's run counts its parameters (they once counted as 0)."""
from __future__ import annotations

import math

import pytest
import torch

from mibench.critics import CRITICS, critic_sizes, make_critic
from mibench.critics.conv import ConvEncoder, encoder_activations, encoder_plan
from mibench.utils import limits

MNIST = (1, 28, 28)
# (dim_x, dim_y, shapes) per critic: equal dims for inner, images for the conv critics
INPUTS = {"inner": [(12, 12, None)],
          "bilinear": [(12, 7, None)],
          "separable": [(12, 7, None)],
          "joint": [(12, 7, None), (784, 3, None)],
          "conv": [(784, 784, (MNIST, MNIST)), (784, 12, (MNIST, None)), (660, 4096, ((1, 30, 22), (1, 64, 64))),
                   (784, 784, None)],
          "conv-joint": [(784, 784, (MNIST, MNIST)), (12, 3072, (None, (3, 32, 32)))]}
SIZES = [dict(hidden=8, layers=0, embed=4), dict(hidden=16, layers=2, embed=5)]


def test_every_registered_critic_has_inputs_here():
    assert set(INPUTS) == set(CRITICS.names())


@pytest.mark.parametrize("name,dims", [(n, d) for n, inputs in INPUTS.items() for d in inputs]
                         + [("conv-joint-2x14x28", (784, 784, None)), ("conv-1x28x28", (784, 784, None))])
@pytest.mark.parametrize("sizes", SIZES)
def test_declared_parameters_are_the_built_critics(name, dims, sizes):
    dim_x, dim_y, shapes = dims
    built = make_critic(name, dim_x, dim_y, shapes=shapes, **sizes)
    declared = critic_sizes(name, dim_x, dim_y, shapes).parameters(sizes["hidden"], sizes["layers"], sizes["embed"])
    assert declared == sum(p.numel() for p in built.parameters())
    if name != "inner":
        assert critic_sizes(name, dim_x, dim_y, shapes).activations(16, 16, **sizes) > 0


@pytest.mark.parametrize("shape", [MNIST, (1, 30, 22), (3, 32, 32), (1, 64, 64), (2, 8, 8)])
def test_the_encoder_plan_is_the_built_encoder(shape):
    """The activations declared per image are the padded image, each convolution's output (as the
    built encoder computes them) and the features."""
    enc = ConvEncoder(shape, 8)
    outputs = []
    for conv in enc.convs:
        conv.register_forward_hook(lambda m, i, o: outputs.append(o[0].numel()))
    enc(torch.zeros(1, math.prod(shape)))
    padded = math.prod(shape[0:1]) * (shape[1] + enc.pad[3]) * (shape[2] + enc.pad[1]) if any(enc.pad) else 0
    assert encoder_activations(shape, 8) == padded + sum(outputs) + 8
    assert encoder_plan(shape).out_shape == enc.out_shape


def _recorded_needs(monkeypatch):
    seen = []
    monkeypatch.setattr(limits, "check_fits", lambda needs, device=None, what="": seen.extend(needs))
    return seen


def _critic_parameter_bytes(needs):
    return [n.nbytes for n in needs if n.label.startswith("critic parameters")]


@pytest.mark.parametrize("critic", ["conv", "conv-joint"])
def test_a_conv_run_counts_its_critics_parameters(monkeypatch, critic):
    from mibench.protocols import get_protocol
    from mibench.protocols.stream.config import StreamConfig

    needs = _recorded_needs(monkeypatch)
    cfg = StreamConfig(task="mutinfo-gaussian2d-16x16", estimators=["infonce"], critic=critic, mi=1.0, steps=6,
                       hidden=16, layers=1, embed=8, device="cpu")
    get_protocol("stream").prepare(cfg)
    built = make_critic(critic, 256, 256, hidden=16, layers=1, embed=8, shapes=((1, 16, 16), (1, 16, 16)))
    expected = sum(p.numel() for p in built.parameters()) * limits.FLOAT * limits.ADAM_COPIES
    assert _critic_parameter_bytes(needs) == [expected] and expected > 0


def test_a_conv_estimate_counts_its_critics_parameters(monkeypatch):
    import mibench

    needs = _recorded_needs(monkeypatch)
    x = torch.rand(200, 1, 28, 28)
    res = mibench.estimate(x, x + 0.1 * torch.rand(200, 1, 28, 28), critic="conv", steps=2, min_steps=1,
                           eval_every=1, hidden=8, layers=0, embed=4)
    assert _critic_parameter_bytes(needs) == [res.n_parameters * limits.FLOAT * limits.ADAM_COPIES]
    assert res.n_parameters > 0
