"""The convolutional critics (issue 33): score-matrix shapes, pair-by-pair scores, batched blocks, the
image shapes from the task, the name or the dimensions, devices, and the refusal on non-image tasks."""
import pytest
import torch

from mibench.critics import CRITICS, make_critic, takes_shapes
from mibench.critics.conv import ConvEncoder, infer_image_shape, resolve_shapes
from mibench.errors import MibenchError

SHAPES = [(1, 28, 28), (3, 32, 32), (2, 8, 8), (1, 64, 64), (1, 30, 22)]


def _pair(shape, k=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    d = shape[0] * shape[1] * shape[2]
    return torch.rand(k, d, generator=g), torch.rand(k, d, generator=g)


@pytest.mark.parametrize("name", ["conv", "conv-joint"])
@pytest.mark.parametrize("shape", SHAPES)
def test_score_matrix_is_the_scores_of_its_pairs(name, shape):
    torch.manual_seed(0)
    x, y = _pair(shape)
    c = make_critic(name, x.shape[1], y.shape[1], hidden=32, layers=1, embed=8, shapes=(shape, shape))
    s = c(x, y)
    assert s.shape == (6, 6) and torch.isfinite(s).all()
    # entry (i, j) scores x_i with y_j, whatever else is in the batch (no batch statistics)
    for i, j in [(0, 0), (2, 5), (5, 1)]:
        assert torch.allclose(s[i, j], c(x[i:i + 1], y[j:j + 1])[0, 0], atol=1e-5)
    assert torch.allclose(c(x[:3], y[:3]), s[:3, :3], atol=1e-5)


@pytest.mark.parametrize("name", ["conv", "conv-joint"])
def test_block_scores_batch_the_blocks(name):
    torch.manual_seed(1)
    shape = (1, 28, 28)
    c = make_critic(name, 784, 784, hidden=32, layers=1, embed=8, shapes=(shape, shape))
    g = torch.Generator().manual_seed(2)
    xb, yb = torch.rand(3, 5, 784, generator=g), torch.rand(3, 5, 784, generator=g)
    blocks = c.block_scores(xb, yb)
    assert blocks.shape == (3, 5, 5)
    for i in range(3):
        assert torch.allclose(blocks[i], c(xb[i], yb[i]), atol=1e-5)


def test_gradients_reach_every_parameter():
    torch.manual_seed(0)
    x, y = _pair((3, 32, 32), k=8)
    for name in ("conv", "conv-joint"):
        c = make_critic(name, 3072, 3072, hidden=16, layers=1, shapes=((3, 32, 32),) * 2)
        c(x, y).logsumexp(1).mean().backward()
        assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in c.parameters())


def test_encoder_stages_reach_a_small_map():
    assert ConvEncoder((1, 64, 64), 8).out_shape[1:] == (4, 4)      # stem 16, then 8, 4
    assert ConvEncoder((1, 28, 28), 8).out_shape[1:] == (4, 4)      # stem 7, then 4
    assert ConvEncoder((3, 32, 32), 8).out_shape == (32, 4, 4)      # stem 8 (48 channels), then 4
    assert ConvEncoder((1, 8, 8), 8).out_shape[1:] == (4, 4)        # no stem below 16 pixels
    # a side that is not a multiple of 4 is padded, not cropped: every pixel reaches the features
    enc = ConvEncoder((1, 30, 22), 4)
    x = torch.zeros(1, 660, requires_grad=True)
    enc(x).sum().backward()
    assert enc.pad == (0, 2, 0, 2)


def test_shapes_from_the_dimensions_and_the_name():
    assert infer_image_shape(784) == (1, 28, 28)
    assert infer_image_shape(3072) == (3, 32, 32)
    assert infer_image_shape(1568) == (2, 28, 28)
    assert infer_image_shape(6144) == (6, 32, 32)
    assert infer_image_shape(10) is None
    c = make_critic("conv", 784, 784, hidden=8, layers=0)          # mibench.estimate's flattened arrays
    assert c.shapes == ((1, 28, 28), (1, 28, 28))
    named = CRITICS.get("conv-joint-2x14x28")
    assert named.name == "conv-joint-2x14x28" and takes_shapes("conv-2x14x28")
    assert make_critic("conv-2x14x28", 784, 784, hidden=8, layers=0).shapes == ((2, 14, 28),) * 2
    assert not takes_shapes("joint")


def test_one_image_side_gets_an_mlp_encoder():
    c = make_critic("conv", 784, 12, hidden=8, layers=0, shapes=((1, 28, 28), None))
    x, y = torch.rand(4, 784), torch.rand(4, 12)
    assert c(x, y).shape == (4, 4)


def test_bad_shapes_are_one_line():
    with pytest.raises(MibenchError, match="needs image-shaped inputs"):
        make_critic("conv", 10, 10)
    with pytest.raises(MibenchError, match="neither X nor Y"):
        resolve_shapes(10, 10, (None, None))
    with pytest.raises(MibenchError, match="does not hold"):
        make_critic("conv", 784, 784, shapes=((1, 28, 27), (1, 28, 28)))
    with pytest.raises(MibenchError, match="does not hold"):
        make_critic("conv-1x28x28", 100, 100)


def test_same_seed_same_critic_and_device_agnostic():
    x, y = _pair((1, 16, 16), k=4)
    torch.manual_seed(3)
    a = make_critic("conv", 256, 256, hidden=8, layers=1)
    torch.manual_seed(3)
    b = make_critic("conv", 256, 256, hidden=8, layers=1)
    assert torch.equal(a(x, y), b(x, y))
    # the same module in float64 (the aten path instead of oneDNN) gives the same scores
    assert torch.allclose(a.double()(x.double(), y.double()).float(), b(x, y), atol=1e-4)
    if torch.cuda.is_available():
        assert torch.allclose(b.cuda()(x.cuda(), y.cuda()).cpu(), a.float()(x, y), atol=1e-4)


def test_refused_for_a_task_without_images():
    from mibench.tasks import make_task
    from mibench.tasks.shapes import check_critic_for_task, image_shapes

    gauss = make_task("gaussian", dim=16)       # 16 = 4 x 4, but the task says it is no image
    assert image_shapes(gauss) == (None, None)
    with pytest.raises(MibenchError, match="reads images, and task 'gaussian' has none"):
        check_critic_for_task("conv", gauss)
    assert check_critic_for_task("joint", gauss) is None
    assert image_shapes(make_task("mutinfo-gaussian2d-16x16")) == ((1, 16, 16), (1, 16, 16))


def test_mibench_run_refuses_conv_on_a_non_image_task(tmp_path, capsys):
    from mibench.cli import main

    assert main(["run", "--task", "gaussian", "--critic", "conv", "--steps", "5", "--out", str(tmp_path / "r"),
                 "--quiet"]) == 2
    assert "reads images" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_short_streaming_run_with_the_conv_critic():
    from mibench.protocols.stream.run import RunConfig, run

    res = run(RunConfig(task="mutinfo-gaussian2d-16x16", estimators=["infonce"], critic="conv", mi=1.0, steps=6,
                        hidden=16, layers=1, log_every=3, device="cpu"), plot=False)
    assert res.estimates.shape == (1, 6) and res.config["config"]["critic"] == "conv"
