"""Real-data tasks (vision, nuisance, text, mixed): shapes, the shared classes, the BSC flip rate,
decoder accuracy 1.0, decodability under nuisance, reproducibility, refusals, embedded fallback,
and short accuracy-regression trainings (SMILE and MINE, joint critic, 2 bits).

Full data via MIBENCH_DATA (CI: ../shared/data); the text task always uses the embedded subset here
so that no test embeds reviews.  Derived caches go to a temporary MIBENCH_CACHE.
"""
from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch

from mibench.data.sources import EMBEDDED, is_present, resolve_data_dir
from mibench.errors import DataNotFoundError, MibenchError
from mibench.tasks import TASKS, make_task
from mibench.tasks.base import bsc_crossover, bsc_mi_bits

ENV_DATA = os.environ.get("MIBENCH_DATA")
FULL = resolve_data_dir(ENV_DATA) if ENV_DATA else None
HAVE_FULL = FULL not in (None, EMBEDDED) and is_present("mnist", FULL) and is_present("cifar10", FULL)
needs_full = pytest.mark.skipif(not HAVE_FULL, reason="set MIBENCH_DATA to the full data (e.g. ../shared/data)")
IMAGES = str(FULL) if HAVE_FULL else "embedded"   # vision tests use the full data when present


# every test here runs with an empty, private mibench cache (see conftest.isolated_cache)
pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.fixture(scope="module")
def vision():
    return make_task("vision", data_dir=IMAGES, side=28)   # the default is the paper's 64; 28 keeps tests fast


@pytest.fixture(scope="module")
def vision_nuisance():
    return make_task("vision", data_dir=IMAGES, nuisance=1.0, layout="3x2x2", side=20)


@pytest.fixture(scope="module")
def text():
    return make_task("text", data_dir="embedded")


@pytest.fixture(scope="module")
def mixed():
    return make_task("mixed", data_dir="embedded", layout="1x2x2", side=56)


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def linear_probe_accuracy(x: torch.Tensor, c: torch.Tensor, n_train: int) -> float:
    """Held-out accuracy of per-source logistic regressions: the library's probe, first n_train
    rows for fitting, the rest held out."""
    from mibench.analysis.layer_study import linear_probe_accuracy as probe

    return probe(x[:n_train].double(), c[:n_train], x[n_train:].double(), c[n_train:])


# ------------------------------------------------------------------------------------- registry/BSC

def test_tasks_registered():
    for name in ("vision", "text", "mixed"):
        assert name in TASKS


@pytest.mark.parametrize("ds", [1, 4, 10, 36])
def test_bsc_inverse_round_trips(ds):
    for mi in np.linspace(0, ds, 23):
        beta = bsc_crossover(ds, float(mi))
        assert 0.0 <= beta <= 0.5
        assert bsc_mi_bits(ds, beta) == pytest.approx(mi, abs=1e-9)


# ------------------------------------------------------------------------------------------ vision

def test_vision_default_side_is_the_papers_64():
    t = make_task("vision", data_dir=IMAGES)      # paper §5.5: 64 x 64, dr = 4096 at ds = 10
    assert (t.side, t.dr, t.layout) == (64, 4096, (1, 2, 5))
    assert t.sample(4, 2.0, gen())[0].shape == (4, 4096)


def test_vision_defaults_shapes_and_info(vision):
    info = vision.info()
    assert (vision.ds, vision.dim_x, vision.dim_y, vision.max_mi_bits) == (10, 784, 784, 10.0)
    assert info["layout"] == "1x2x5" and info["dr"] == 784 and info["ds"] == 10
    assert info["decoder_accuracy"] == 1.0 and min(info["pool_sizes"]) > 1000
    x, y = vision.sample(64, 2.0, gen())
    for t in (x, y):
        assert t.shape == (64, 784) and t.dtype == torch.float32 and t.device.type == "cpu"
        assert float(t.min()) >= 0.0 and float(t.max()) <= 1.0
    import json
    json.dumps(info)


def test_vision_patches_are_pool_images_of_exactly_the_sampled_classes():
    # 1x2x2 on a 56x56 canvas needs no resize: every patch must be a pool image of its class
    task = make_task("vision", data_dir=IMAGES, layout="1x2x2", side=56, exclude_same_item=True)
    x, y, cx, cy = task.sample_with_classes(32, 4.0, gen(1))   # MI = ds: no flips
    assert torch.equal(cx, cy)
    pool = task.pool.items.reshape(len(task.pool), -1).float() / 255.0
    off = int(task.pool.offsets[1])
    for canvas, classes in ((x, cx), (y, cy)):
        patches = canvas.view(-1, 2, 28, 2, 28).permute(0, 1, 3, 2, 4).reshape(-1, 784)
        dist = torch.cdist(patches, pool, compute_mode="donot_use_mm_for_euclid_dist")
        best = dist.argmin(1)
        assert torch.all(dist.min(1).values < 1e-4)                  # exactly a pool image
        assert torch.equal((best >= off).long(), classes.reshape(-1))  # ... of the sampled class
    # with the paper's exclusion, X's and Y's patch for a source are different images of the same class
    px = x.view(-1, 2, 28, 2, 28).permute(0, 1, 3, 2, 4).reshape(-1, 784)
    py = y.view(-1, 2, 28, 2, 28).permute(0, 1, 3, 2, 4).reshape(-1, 784)
    assert torch.all((px - py).abs().amax(1) > 0)


def test_pool_draw_never_repeats_the_item_within_a_class():
    from mibench.tasks.pools import ClassPool

    pool = ClassPool(torch.arange(5).view(5, 1), np.array([0, 0, 1, 1, 1]), "cpu")
    cx = torch.randint(0, 2, (4000,), generator=gen(2))
    cy = cx.clone()
    ix, iy = pool.draw(cx, cy, gen(3), exclude_same_item=True)
    assert torch.all(ix != iy)
    assert torch.equal((ix >= 2).long(), cx) and torch.equal((iy >= 2).long(), cy)
    counts = torch.bincount(iy, minlength=5).double()
    assert counts[2:].std() / counts[2:].mean() < 0.1  # roughly uniform within class


@pytest.mark.parametrize("mi", [2.0, 7.5])
def test_flip_rate_matches_beta(vision, mi):
    beta = vision.crossover(mi)
    _, _, cx, cy = vision.sample_with_classes(500, mi, gen(4))
    flips = (cx != cy).double()
    n = flips.numel()
    assert abs(flips.mean().item() - beta) < 4.5 * math.sqrt(beta * (1 - beta) / n) + 1e-12
    assert abs(cx.double().mean().item() - 0.5) < 4.5 * math.sqrt(0.25 / n)  # fair sources


def test_vision_reproducible_with_seed(vision_nuisance):
    a = vision_nuisance.sample(16, 3.0, gen(7))
    b = vision_nuisance.sample(16, 3.0, gen(7))
    c = vision_nuisance.sample(16, 3.0, gen(8))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_nuisance_shapes_and_class_still_decodable(vision_nuisance):
    t = vision_nuisance
    assert t.dim_x == 3 * 20 * 20 and t.ds == 12
    info = t.info()
    assert info["nuisance"] == 1.0 and info["pools"]["backgrounds"]["pool_size"] >= 400
    x, _, cx, _ = t.sample_with_classes(1700, float(t.ds), gen(9))
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    # η = 1 is the strongest nuisance; a linear probe from 1200 samples still decodes every source
    # (measured 0.982 held-out with the library probe; the truth only needs decodability, which a
    # richer decoder gets)
    assert linear_probe_accuracy(x, cx, 1200) > 0.95


@needs_full
def test_nuisance_grayscale_for_one_channel():
    t = make_task("vision", data_dir=IMAGES, nuisance=0.5, ds=4, side=28)
    x, _ = t.sample(8, 1.0, gen(10))
    assert x.shape == (8, 784) and t.info()["nuisance_source"].startswith("full data")


def test_vision_decoder_accuracy_is_one_and_default_canvas_is_decodable(vision):
    assert vision.info()["pools"]["mnist"]["decoder"]["decoder_accuracy"] == 1.0
    x, _, cx, _ = vision.sample_with_classes(1700, 10.0, gen(11))
    assert linear_probe_accuracy(x, cx, 1200) > 0.97  # measured 0.99 (1x2x5 squeezed to 28x28)


@pytest.mark.parametrize("kw, match", [
    (dict(ds=10, layout="1x2x2"), "ds = 10"),
    (dict(layout="2x"), "bad layout"),
    (dict(layout="0x2x2"), "bad layout"),
    (dict(side=3), "side'? must be"),
    (dict(side=28.5), "side'? must be"),
    (dict(nuisance=1.5), r"\[0, 1\]"),
    (dict(nuisance=-0.1), r"\[0, 1\]"),
    (dict(ds=0), "ds must be"),
])
def test_vision_refuses_bad_settings(kw, match):
    with pytest.raises(MibenchError, match=match):
        make_task("vision", data_dir="embedded", **kw)


def test_mi_above_capacity_is_refused(vision, text):
    for task in (vision, text):
        with pytest.raises(MibenchError, match="at most 10 bits"):
            task.sample(8, 10.5, gen())
    with pytest.raises(MibenchError):
        vision.sample(8, -1.0, gen())


# -------------------------------------------------------------------------------------------- text

def test_text_task_embedded(text, capsys):
    info = text.info()
    assert info["data_source"].startswith("embedded subset") and info["encoder"] == "minilm-imdb"
    assert (text.ds, text.dim_x, text.dim_y) == (10, 3840, 3840)
    assert info["decoder_accuracy"] == 1.0
    dec = info["pools"]["imdb"]["decoder"]
    # fine-tuned on the labels (paper §4.3-4.4): the class is easily decodable before the filter
    assert 0.97 <= dec["accuracy_before"] <= 1.0
    # the decoder filter keeps all 3,000 (~70% with the off-the-shelf encoder)
    assert sum(info["pool_sizes"]) >= 0.9 * sum(dec["candidates_per_class"])
    x, y, cx, cy = text.sample_with_classes(64, 10.0, gen(12))
    assert x.shape == (64, 3840) and x.dtype == torch.float32 and torch.equal(cx, cy)
    # every block is a kept pool embedding of the sampled class; Y's review is drawn independently of
    # X's (default pairing), so it repeats X's only with probability 1/pool size
    pool = text.pool.items
    off = int(text.pool.offsets[1])
    for emb, cls in ((x, cx), (y, cy)):
        d = torch.cdist(emb.view(-1, 384), pool, compute_mode="donot_use_mm_for_euclid_dist")
        assert torch.all(d.min(1).values < 1e-5)
        assert torch.equal((d.argmin(1) >= off).long(), cls.reshape(-1))
    assert float(((x.view(-1, 384) - y.view(-1, 384)).abs().amax(1) == 0).double().mean()) < 0.01


def test_text_decoder_is_error_free_on_kept_pool(text):
    from mibench.tasks.pools import fit_linear_decoder

    pool = text.pool.items.numpy()
    labels = np.repeat([0, 1], text.pool.sizes_list)
    logits = fit_linear_decoder(pool, labels)(pool)  # an independent refit on the kept pool only
    assert np.mean((logits > 0) == (labels == 1)) == 1.0


def test_text_refuses_unknown_encoder_and_foreign_encoder_on_embedded(tmp_path):
    with pytest.raises(MibenchError, match="unknown encoder"):
        make_task("text", data_dir="embedded", encoder=str(tmp_path / "nope"))
    with pytest.raises(MibenchError, match="full IMDB data"):
        make_task("text", data_dir="embedded", max_length=256)
    with pytest.raises(MibenchError, match="full IMDB data"):
        make_task("text", data_dir="embedded", n_per_class=5000)


def test_text_reproducible(text):
    a = text.sample(8, 1.5, gen(5))
    b = text.sample(8, 1.5, gen(5))
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


# ------------------------------------------------------------------------------------------- mixed

def test_mixed_shares_the_sources(mixed):
    assert (mixed.ds, mixed.dim_x, mixed.dim_y) == (4, 56 * 56, 4 * 384)
    info = mixed.info()
    assert info["decoder_accuracy"] == 1.0 and "embedded subset" in info["data_source"]
    x, y, cx, cy = mixed.sample_with_classes(16, 4.0, gen(13))
    assert torch.equal(cx, cy)
    img_pool = mixed.image_pool.items.reshape(len(mixed.image_pool), -1).float() / 255.0
    patches = x.view(-1, 2, 28, 2, 28).permute(0, 1, 3, 2, 4).reshape(-1, 784)
    best = torch.cdist(patches, img_pool, compute_mode="donot_use_mm_for_euclid_dist").argmin(1)
    assert torch.equal((best >= int(mixed.image_pool.offsets[1])).long(), cx.reshape(-1))
    best_t = torch.cdist(y.view(-1, 384), mixed.text_pool.items, compute_mode="donot_use_mm_for_euclid_dist").argmin(1)
    assert torch.equal((best_t >= int(mixed.text_pool.offsets[1])).long(), cy.reshape(-1))
    _, _, cx, cy = mixed.sample_with_classes(400, 2.0, gen(14))
    beta = mixed.crossover(2.0)
    assert abs((cx != cy).double().mean().item() - beta) < 4.5 * math.sqrt(beta * (1 - beta) / cx.numel())


# ------------------------------------------------------------------------------ data source choice

def test_explicit_missing_data_dir_is_an_error(tmp_path):
    with pytest.raises(DataNotFoundError, match="train-images-idx3-ubyte.gz"):
        make_task("vision", data_dir=tmp_path)


def test_embedded_fallback_is_announced_once(monkeypatch, tmp_path, capfd):
    from mibench.data import embedded

    monkeypatch.delenv("MIBENCH_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # an empty user cache
    monkeypatch.setattr(embedded, "_announced", set())
    t = make_task("vision", nuisance=0.3, side=28)
    make_task("vision", side=28)
    err = capfd.readouterr().err
    assert err.count("embedded subset") == 2  # one line for MNIST, one for the CIFAR backgrounds
    assert "MNIST" in err and "CIFAR" in err
    info = t.info()
    assert info["data_source"].startswith("embedded subset") and info["pool_sizes"][0] > 1000
    assert t.sample(4, 1.0, gen())[0].shape == (4, 784)


# -------------------------------------------------------------------------- accuracy regression


# Short CPU trainings (600 steps, constant 2 bits, joint critic with hidden 64, lr 2e-3, batch 64;
# metric: mean estimate over the last 200 steps, bits).  Vision is the paper's ds = 10 (1x2x5,
# BSC beta = 0.243) at side 28 (given explicitly; the default side is 64); text uses ds = 2 (2 bits,
# no flips) on the embedded subset so that 600 steps get near the truth.  Spread measured over
# seeds 0-4 (torch 2.13 CPU, 1 thread):
#   vision smile-5 1.13-1.33 (mean 1.25, sd 0.08)    vision mine 1.31-1.43 (mean 1.39, sd 0.05)
#   text   smile-5 1.97-1.98 (mean 1.98, sd 0.004)   text   mine 1.99-2.00 (mean 1.99, sd 0.004)
#   (text: the shipped fine-tuned subset, 5 epochs at lr 1e-4, embedded at 128 tokens)
# (short runs are still climbing towards 2 bits: these are regression bands, not accuracy claims.)
# Bands: mean +- max(4 sd, 0.15), so a broken task/estimator (near 0, or far above the truth) fails
# while seed/BLAS noise does not.  The test runs seed 0.
REGRESSION_STEPS = 600
REGRESSION_BANDS = {
    ("vision", "smile-5"): (0.90, 1.60),
    ("vision", "mine"): (1.18, 1.60),
    ("text", "smile-5"): (1.83, 2.13),
    ("text", "mine"): (1.84, 2.14),
}


@pytest.mark.parametrize("task_name", ["vision", "text"])
def test_accuracy_regression_smile_mine_at_2_bits(task_name):
    HARNESS = pytest.importorskip("mibench.protocols.stream.run", reason="training harness not available")
    params = {"data_dir": IMAGES, "side": 28} if task_name == "vision" else {"data_dir": "embedded", "ds": 2}
    cfg = HARNESS.RunConfig(task=task_name, task_params=params, estimators=["smile", "mine"], critic="joint",
                            hidden=64, lr=2e-3, steps=REGRESSION_STEPS, batch_size=64, mi=2.0, seed=0,
                            device="cpu", burn_in=REGRESSION_STEPS - 200)
    result = HARNESS.run(cfg, out_dir=None)
    rows = {r["estimator"]: r for r in result.summary}
    assert set(rows) == {"smile-5", "mine"} and not result.diverged
    for est in ("smile-5", "mine"):
        lo, hi = REGRESSION_BANDS[(task_name, est)]
        row = rows[est]
        assert row["true_mi"] == pytest.approx(2.0)
        assert lo <= row["mean_estimate"] <= hi, (task_name, est, row)
