import pytest
import torch

from mibench.critics import CRITICS, make_critic
from mibench.errors import MibenchError


@pytest.mark.parametrize("name", ["inner", "bilinear", "separable", "joint"])
def test_score_matrix_shape(name):
    c = make_critic(name, 12, 12, hidden=32, layers=1, embed=8)
    x, y = torch.randn(9, 12), torch.randn(9, 12)
    s = c(x, y)
    assert s.shape == (9, 9)
    # entry (i, j) scores x_i with y_j
    assert torch.allclose(s[2, 5], c(x[2:3], y[5:6])[0, 0], atol=1e-5)


@pytest.mark.parametrize("dx,dy", [(10, 10), (784, 784), (7, 30)])
def test_joint_split_first_layer_equals_concatenation(dx, dy):
    torch.manual_seed(0)
    c = make_critic("joint", dx, dy)
    x, y = torch.randn(64, dx), torch.randn(64, dy)
    assert torch.allclose(c(x, y), c.forward_naive(x, y), atol=1e-4, rtol=1e-4)
    # gradients agree too; in float64, because in float32 a pre-activation within round-off of 0
    # can flip its ReLU between the split and the concatenated sum (seen at d = 784)
    c, x, y = c.double(), x.double(), y.double()
    for p in c.parameters():
        g1 = torch.autograd.grad(c(x, y).sum(), p)[0]
        g2 = torch.autograd.grad(c.forward_naive(x, y).sum(), p)[0]
        assert torch.allclose(g1, g2, atol=1e-9, rtol=1e-9)


def test_depth_convention():
    c = make_critic("joint", 5, 5)  # defaults: 2 hidden layers of 256
    relus = [m for m in c.net if isinstance(m, torch.nn.ReLU)]
    linears = [m for m in c.net if hasattr(m, "weight")]
    assert len(relus) == 3 and len(linears) == 4
    assert all(m.weight.shape[0] == 256 for m in linears[:-1]) and linears[-1].weight.shape[0] == 1
    deeper = make_critic("joint", 5, 5, layers=4, hidden=64)
    assert sum(isinstance(m, torch.nn.ReLU) for m in deeper.net) == 5


def test_separable_embedding_size():
    c = make_critic("separable", 6, 4, hidden=16, layers=1, embed=7)
    assert c.f[-1].out_features == 7 and c.g[-1].out_features == 7


def test_bad_critic_requests():
    with pytest.raises(MibenchError, match="inner critic needs equal dimensions"):
        make_critic("inner", 3, 4)
    with pytest.raises(MibenchError, match="unknown critic"):
        make_critic("mlp", 3, 3)
    with pytest.raises(MibenchError, match="positive"):
        make_critic("joint", 3, 3, hidden=0)
    assert set(CRITICS.names()) == {"inner", "bilinear", "separable", "joint", "conv", "conv-joint"}


def test_split_first_layer_is_the_concatenated_layer():
    # W_x, W_y are the two column blocks of the nn.Linear(dx + dy, h) the MLP would have drawn
    from mibench.critics.mlp import mlp

    torch.manual_seed(3)
    c = make_critic("joint", 5, 7, hidden=16, layers=1)
    torch.manual_seed(3)
    ref = mlp(12, 16, 1, 1)
    first = c.net[0]
    assert first.weight_x.is_contiguous() and first.weight_y.is_contiguous()
    assert torch.equal(first.weight, ref[0].weight) and torch.equal(first.bias, ref[0].bias)
    assert all(torch.equal(a, b) for a, b in zip(list(c.parameters())[3:], list(ref.parameters())[2:]))
