"""``--task features:FILE.npz``: the user's features + integer labels as a task with exact truth."""
import itertools
import math

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.tasks import bsc_crossover, make_task
from mibench.tasks.base import binary_entropy_bits


def write_npz(path, n_classes=4, per_class=40, dim=6, sep=8.0, seed=0, **extra):
    """Well-separated synthetic classes: class c has mean sep * e_c (c < dim)."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(n_classes), per_class)
    feats = rng.standard_normal((len(labels), dim))
    feats[np.arange(len(labels)), labels % dim] += sep
    arrays = {"features": feats, "labels": labels, **extra}
    np.savez(path, **arrays)
    return path


@pytest.fixture
def four_classes(tmp_path):
    d = tmp_path / "MyData"          # upper case: the registry must keep the path's case
    d.mkdir()
    return write_npz(d / "Feats.npz")


def class_of(task, index):
    """Class of pool rows (rows are sorted by class; offsets = class starts)."""
    return torch.searchsorted(task.pool.offsets, index, right=True) - 1


def test_features_task_builds(four_classes):
    task = make_task(f"features:{four_classes}")
    info = task.info()
    assert task.name == "features" and task.n_classes == 4 and task.ds == 2 and task.max_mi_bits == 2.0
    assert task.dim_x == task.dim_y == 6
    assert info["decoder_accuracy"] == 1.0 and info["pools"]["features"]["classes_dropped"] == []
    x, y = task.sample(16, 1.0, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (16, 6) and x.dtype == torch.float32
    two = make_task(f"features:{four_classes}", ds=4)              # 2 items per sample
    assert two.items_per_sample == 2 and two.dim_x == 12 and two.max_mi_bits == 4.0


def test_drawn_items_have_the_drawn_classes_and_classes_are_uniform(four_classes):
    task = make_task(f"features:{four_classes}", ds=4)
    g = torch.Generator().manual_seed(1)
    _, _, cx, cy = task.sample_with_classes(20000, 3.0, g)
    assert cx.shape == (20000, 2) and int(cx.max()) == 3
    freq = torch.bincount(cx.flatten(), minlength=4).double() / cx.numel()
    assert torch.allclose(freq, torch.full((4,), 0.25, dtype=torch.float64), atol=0.01)
    ix, iy = task.pool.draw(cx, cy, g)
    assert torch.equal(class_of(task, ix), cx) and torch.equal(class_of(task, iy), cy)


@pytest.mark.parametrize("ds,mi", [(2, 0.7), (2, 2.0), (4, 1.3), (4, 0.0)])
def test_class_channel_truth_by_enumeration(four_classes, ds, mi):
    """I(C_X; C_Y) computed by enumerating the class channel (C = 4 classes = 2 fair bits per item,
    each bit through the BSC) equals the requested MI; with an error-free decoder this is I(X;Y)."""
    task = make_task(f"features:{four_classes}", ds=ds)
    beta = task.crossover(mi)
    assert beta == bsc_crossover(ds, mi)
    items, m = ds // 2, 2
    classes = list(itertools.product(range(4), repeat=items))
    px = 1.0 / len(classes)
    mi_enum = 0.0
    joint = {}
    for cx in classes:
        for cy in classes:
            flips = sum(bin(a ^ b).count("1") for a, b in zip(cx, cy))
            joint[cx, cy] = px * beta ** flips * (1 - beta) ** (items * m - flips)
    py = {cy: sum(joint[cx, cy] for cx in classes) for cy in classes}
    for (cx, cy), p in joint.items():
        if p > 0:
            mi_enum += p * math.log2(p / (px * py[cy]))
    assert mi_enum == pytest.approx(mi, abs=1e-9)
    assert ds * (1 - binary_entropy_bits(beta)) == pytest.approx(mi, abs=1e-9)


def test_sampled_class_mi_matches(four_classes):
    """Plug-in I(C_X; C_Y) over 200,000 sampled class pairs (C = 4) is the requested 1.2 bits
    (plug-in bias 15/(2n ln 2) ~ 5e-5 bits; sampling sd ~ 0.004 bits)."""
    task = make_task(f"features:{four_classes}")
    _, _, cx, cy = task.sample_with_classes(200_000, 1.2, torch.Generator().manual_seed(2))
    joint = torch.bincount(cx[:, 0] * 4 + cy[:, 0], minlength=16).double().view(4, 4)
    p = joint / joint.sum()
    mi = float((p * torch.log2(p / (p.sum(1, keepdim=True) * p.sum(0, keepdim=True)))).sum())
    assert mi == pytest.approx(1.2, abs=0.02)


def test_two_classes_use_the_mnist_filter(tmp_path):
    path = write_npz(tmp_path / "two.npz", n_classes=2)
    task = make_task(f"features:{path}")
    assert task.n_classes == 2 and task.ds == 1
    assert task.info()["pools"]["features"]["decoder"]["decoder"].startswith("logistic regression")


def test_three_classes_use_the_two_largest(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.array([0] * 30 + [1] * 20 + [2] * 40)
    feats = rng.standard_normal((90, 3))
    feats[np.arange(90), labels] += 8
    path = tmp_path / "three.npz"
    np.savez(path, features=feats, labels=labels)
    info = make_task(f"features:{path}").info()
    assert info["pools"]["features"]["classes_used"] == [0, 2]
    assert info["pools"]["features"]["classes_dropped"] == [1]


def test_undecodable_classes_are_refused(tmp_path):
    """Classes 2 and 3 share identical items: no decoder separates them -> one-line error."""
    rng = np.random.default_rng(0)
    base = rng.standard_normal((20, 4))
    feats = np.vstack([base + [8, 0, 0, 0], base + [0, 8, 0, 0], base, base])
    labels = np.repeat(np.arange(4), 20)
    path = tmp_path / "bad.npz"
    np.savez(path, features=feats, labels=labels)
    with pytest.raises(MibenchError, match="survive the decoder filter"):
        make_task(f"features:{path}")


@pytest.mark.parametrize("case,match", [
    ("missing", "not found"),
    ("keys", "missing labels"),
    ("float_labels", "must be integers"),
    ("one_item", "at least 2 items"),
    ("one_class", "at least 2 classes"),
    ("not_npz", "not an .npz archive"),
    ("rows", "rows"),
    ("nan", "NaN"),
    ("empty", "have no rows"),          # was: numpy's reshape ValueError
])
def test_bad_files_one_line(tmp_path, case, match):
    path = tmp_path / "f.npz"
    feats = np.random.default_rng(0).standard_normal((10, 3))
    if case == "keys":
        np.savez(path, features=feats, y=np.zeros(10, int))
    elif case == "float_labels":
        np.savez(path, features=feats, labels=np.zeros(10))
    elif case == "one_item":
        np.savez(path, features=feats, labels=np.array([0] * 9 + [1]))
    elif case == "one_class":
        np.savez(path, features=feats, labels=np.zeros(10, int))
    elif case == "not_npz":
        path.write_text("hello")
    elif case == "rows":
        np.savez(path, features=feats, labels=np.zeros(9, int))
    elif case == "nan":
        feats[0, 0] = np.nan
        np.savez(path, features=feats, labels=np.array([0, 1] * 5))
    elif case == "empty":
        np.savez(path, features=np.zeros((0, 3)), labels=np.zeros(0, int))
    with pytest.raises(MibenchError, match=match) as exc:
        make_task(f"features:{path}")
    assert "\n" not in str(exc.value)


def test_bad_parameters(four_classes):
    with pytest.raises(MibenchError, match="multiple of"):
        make_task(f"features:{four_classes}", ds=3)
    task = make_task(f"features:{four_classes}")
    with pytest.raises(MibenchError, match="at most 2"):
        task.sample(4, 2.5, torch.Generator())
    with pytest.raises(MibenchError, match="does not take"):
        make_task(f"features:{four_classes}", side=28)


def test_large_finite_features_keep_their_classes_when_standardised(tmp_path):
    """Finite float32 values near 1e20 overflowed in the float32 standardisation: the class column became all
    zeros, so X no longer carried its class, and the run still recorded 1 bit of truth."""
    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1], 200)
    feats = np.stack([labels * 1e20 + rng.normal(size=400) * 1e19, rng.normal(size=400)], 1).astype(np.float32)
    np.savez(tmp_path / "big.npz", features=feats, labels=labels)
    task = make_task(f"features:{tmp_path / 'big.npz'}")
    first = task.pool.items[:, 0]
    assert torch.isfinite(task.pool.items).all() and first.std() > 0.5        # the class column survives
