"""The self-consistency tasks (issue 33, Song & Ermon 2020 §5): masking, the data-processing pair, the
independence of the additivity pairs, shapes, parameters and the known truths."""
import math

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.tasks import make_task
from mibench.tasks.consistency import PLACEHOLDER_LEVEL, prefix_entropy_bits
from mibench.tasks.shapes import image_shapes

EMB = {"data_dir": "embedded"}      # the shipped subset: fast, and present everywhere


def _images(task, n=64, seed=0):
    x, y = task.sample(n, PLACEHOLDER_LEVEL, torch.Generator().manual_seed(seed))
    c, h, w = task.image_shapes[0]
    return x.view(n, c, h, w), y.view(n, c, h, w)


@pytest.mark.parametrize("data,shape", [("mnist", (1, 28, 28)), ("cifar10", (3, 32, 32))])
def test_baseline_keeps_the_top_rows_and_masks_the_rest(data, shape):
    task = make_task(f"consistency-baseline-{data}", rows=5, **EMB)
    assert task.image_shapes == (shape, shape) and image_shapes(task) == (shape, shape)
    assert task.dim_x == task.dim_y == math.prod(shape)
    x, y = _images(task)
    assert torch.equal(y[:, :, :5], x[:, :, :5])
    assert (y[:, :, 5:] == 0).all() and (x[:, :, 5:] != 0).any()
    assert 0.0 <= float(x.min()) and float(x.max()) <= 1.0
    x0, y0 = _images(make_task(f"consistency-baseline-{data}", rows=0, **EMB))
    assert (y0 == 0).all()                      # t = 0: Y says nothing
    xh, yh = _images(make_task(f"consistency-baseline-{data}", rows=shape[1], **EMB))
    assert torch.equal(xh, yh)                  # t = H: Y is X


def test_data_processing_pair():
    task = make_task("consistency-dp-mnist", rows=10, **EMB)
    assert task.rows_h == 7 and task.image_shapes == ((2, 28, 28), (2, 28, 28))
    x, y = _images(task)
    assert torch.equal(x[:, 0], x[:, 1])                                  # X~ = [X, X]
    assert torch.equal(y[:, 0, :10], x[:, 0, :10]) and (y[:, 0, 10:] == 0).all()
    assert torch.equal(y[:, 1, :7], y[:, 0, :7]) and (y[:, 1, 7:] == 0).all()   # h(Y): Y masked further
    assert make_task("consistency-dp-mnist", rows=10, rows_h=2, **EMB).rows_h == 2
    assert make_task("consistency-dp-mnist", rows=2, **EMB).rows_h == 0


def test_additivity_pairs_are_independent_copies():
    task = make_task("consistency-additivity-mnist", rows=12, **EMB)
    assert task.image_shapes == ((2, 28, 28), (2, 28, 28))
    x, y = _images(task, n=2000, seed=1)
    for k in (0, 1):       # each Y_k is X_k masked
        assert torch.equal(y[:, k, :12], x[:, k, :12]) and (y[:, k, 12:] == 0).all()
    # X1 and X2 are independent draws: the two halves' pixel sums are uncorrelated, and they differ
    a, b = x[:, 0].sum((1, 2)).numpy(), x[:, 1].sum((1, 2)).numpy()
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.08
    assert (x[:, 0] != x[:, 1]).flatten(1).any(1).float().mean() > 0.99
    # and the same marginal: a half is as likely to be any pool image (mean brightness agrees)
    assert abs(a.mean() - b.mean()) < 0.05 * a.mean()


def test_noise_is_added_after_masking_and_before_h():
    task = make_task("consistency-dp-mnist", rows=6, noise=0.5, **EMB)
    x, y = _images(task, n=256)
    assert y[:, 0, 6:].std() > 0.4                          # masked rows of Y are noise, not a constant
    assert torch.equal(y[:, 1, :3], y[:, 0, :3])           # h is a function of the noisy Y
    assert (y[:, 1, 3:] == 0).all()


def test_gaussian_analogue_and_its_closed_form():
    task = make_task("consistency-baseline-gaussian", rows=3)
    assert task.noise == 2.0 and task.image_shapes == ((1, 8, 8),) * 2
    per_pixel = 0.5 * math.log2(1 + 1 / 4)
    assert task.truth_bits()["exact_mi_bits"] == pytest.approx(3 * 8 * per_pixel)
    add = make_task("consistency-additivity-gaussian", rows=3)
    assert add.truth_bits()["exact_mi_bits"] == pytest.approx(2 * 3 * 8 * per_pixel)
    assert make_task("consistency-dp-gaussian", rows=3).truth_bits()["exact_mi_bits"] == pytest.approx(
        task.truth_bits()["exact_mi_bits"])


def test_pool_truth_is_the_entropy_of_the_masked_image():
    pool = np.zeros((8, 1, 4, 2), dtype=np.uint8)
    pool[:, 0, 0, 0] = [0, 0, 0, 0, 1, 1, 2, 3]        # top row: 4 values, p = 1/2, 1/4, 1/8, 1/8
    pool[:, 0, 1, 0] = np.arange(8)                    # two rows: all 8 distinct
    assert prefix_entropy_bits(pool, 0) == 0.0
    assert prefix_entropy_bits(pool, 1) == pytest.approx(1.75)
    assert prefix_entropy_bits(pool, 2) == pytest.approx(3.0)
    base = make_task("consistency-baseline-mnist", rows=0, **EMB)
    assert base.truth_bits()["pool_mi_bits"] == 0.0
    full = make_task("consistency-baseline-mnist", rows=28, **EMB).truth_bits()["pool_mi_bits"]
    assert full <= math.log2(len(base.pool)) + 1e-9 and full > 10
    half = make_task("consistency-additivity-mnist", rows=14, **EMB).truth_bits()["pool_mi_bits"]
    assert half == pytest.approx(2 * make_task("consistency-baseline-mnist", rows=14, **EMB)
                                 .truth_bits()["pool_mi_bits"])


def test_parameters_and_the_placeholder_level():
    with pytest.raises(MibenchError, match=r"rows must be an integer in \[0, 28\]"):
        make_task("consistency-baseline-mnist", rows=29, **EMB)
    with pytest.raises(MibenchError, match=r"rows_h must be an integer in \[0, 5\]"):
        make_task("consistency-dp-mnist", rows=5, rows_h=6, **EMB)
    with pytest.raises(MibenchError, match="belongs to the data-processing task"):
        make_task("consistency-baseline-mnist", rows=5, rows_h=2, **EMB)
    with pytest.raises(MibenchError, match="needs noise > 0"):
        make_task("consistency-baseline-gaussian", noise=0.0)
    task = make_task("consistency-baseline-gaussian")
    assert task.rows == 4 and task.max_mi_bits == PLACEHOLDER_LEVEL
    with pytest.raises(MibenchError, match="one fixed true MI"):
        task.sample(4, 2.0, torch.Generator())
    info = task.info()
    assert info["test"] == "baseline" and "placeholder" in info["true_mi"]


def test_runs_from_mibench_run_without_an_mi(tmp_path):
    import json

    from mibench.cli import main

    out = tmp_path / "run"
    assert main(["run", "--task", "consistency-additivity-gaussian", "--rows", "2", "--estimator", "infonce",
                 "--critic", "conv", "--steps", "4", "--hidden", "8", "--layers", "0", "--out", str(out), "--quiet",
                 "--no-plot"]) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["config"]["mi"] == 0.0 and cfg["task_info"]["rows"] == 2
    assert cfg["task_info"]["image_shape"] == [2, 8, 8]
