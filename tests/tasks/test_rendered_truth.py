"""The exact check that each source's class is a function of the rendered input (paper §4.3;
mibench.tasks.truth_check): interior pixels, exact equality, the nuisance bound, refusal."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.tasks import make_task
from mibench.tasks import truth_check as T
from mibench.tasks.pools import ClassPool


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MIBENCH_CACHE", str(tmp_path / "cache"))


def test_interior_pixels_are_bitwise_functions_of_their_patch():
    """Every interior pixel of a real canvas equals, bit for bit, the value render_interiors computes
    from its own patch alone (whatever the neighbours), at several sides and layouts."""
    from mibench.tasks.vision import Renderer

    g = torch.Generator().manual_seed(0)
    for layout, side in (((1, 2, 5), 64), ((1, 2, 5), 28), ((1, 3, 3), 60), ((3, 1, 2), 40), ((1, 1, 1), 28)):
        r = Renderer(layout, side, 0.0, None, "cpu")
        p = int(np.prod(layout))
        patches = torch.randint(0, 256, (6, p, 28, 28), generator=g, dtype=torch.uint8)
        canvas = r(patches, g)                                           # (6, c*side*side), clamped
        masks = T.interior_masks(r)
        assert masks.sum(1).min() > 0
        for q in range(p):
            alone = T.render_interiors(r, patches[:, q], masks)[q].clamp(0, 1)
            assert torch.equal(canvas[:, masks[q]], alone), (layout, side, q)


def test_default_vision_holds_prints_nothing_and_records(capfd):
    info = make_task("vision", data_dir="embedded").info()
    rec = info["truth_check"]
    assert rec["status"] == "holds" and rec["colliding_items"] == 0 and min(rec["interior_pixels"]) > 300
    assert info["notes"] == []
    err = capfd.readouterr().err
    assert "probe" not in err and "decod" not in err
    assert info["rendered_decoder"]["role"].startswith("difficulty")


def test_crafted_colliding_pool_is_refused(capfd):
    """A class-1 item identical to a class-0 item: C is not a function of X -> one-line refusal."""
    task = make_task("vision", data_dir="embedded", layout="1x1x2", side=28)
    items, n0 = task.pool.items.clone(), task.pool.sizes_list[0]
    items[n0 + 3] = items[5]                                             # a "1" that is pixel-for-pixel a "0"
    labels = np.r_[np.zeros(n0, int), np.ones(len(items) - n0, int)]
    rec = T.check_canvas(ClassPool(items, labels, "cpu"), task.render)
    assert rec["status"] == "fails" and rec["colliding_items"] == 2          # once per position
    task.pool = ClassPool(items, labels, "cpu")
    task._pool_info = {**task._pool_info, "crafted": "collision"}     # another pool: another cache entry
    with pytest.raises(MibenchError) as e:
        task.info()
    assert "\n" not in str(e.value) and "refusing" in str(e.value) and "paper §4.3" in str(e.value)


def test_nuisance_bound_holds_or_is_not_established(capfd):
    """eta 0.2: every cross-class pair differs by more than 0.2 somewhere -> holds for any
    background; eta 1 at 1x2x5, 28 x 28: no bound separates values in [0, 1], and some cross-class pair
    has no pixel where one digit is blank and the other inked (the saturation argument's witness) ->
    not established, one note line."""
    weak = make_task("vision", data_dir="embedded", layout="1x1x2", side=28, nuisance=0.2).info()
    assert weak["truth_check"]["status"] == "holds" and weak["notes"] == []
    assert weak["truth_check"]["threshold"] == pytest.approx(0.2 * weak["truth_check"]["background_max"] + 1e-5)
    capfd.readouterr()
    strong = make_task("vision", data_dir="embedded", side=28, nuisance=1.0).info()
    assert strong["truth_check"]["status"] == "not established"
    assert strong["truth_check"]["saturation"]["status"] == "not established"
    assert len(strong["notes"]) == 1 and "not established" in strong["notes"][0]
    assert capfd.readouterr().err.count("not established") == 1


def test_strong_nuisance_holds_by_leaving_out_backgrounds_that_white_out_a_digit(capfd):
    """The default 64 x 64 canvas at eta 0.9 holds by the saturation argument with every background (no
    background reaches 1); at eta 1 it holds with the backgrounds that saturate too many of a position's
    witness pixels left out, which the renderer then never draws, and one note says so."""
    mid = make_task("vision", data_dir="embedded", nuisance=0.9).info()
    assert mid["truth_check"]["status"] == "holds" and mid["truth_check"]["backgrounds_excluded"] == 0
    assert mid["truth_check"]["saturation"]["background_max"] < 1 and mid["notes"] == []
    capfd.readouterr()
    task = make_task("vision", data_dir="embedded", nuisance=1.0)
    rec = task.info()["truth_check"]
    left_out = rec["backgrounds_excluded"]
    assert rec["status"] == "holds" and 0 < left_out < 40 and "excluded_backgrounds" not in rec
    assert rec["saturation"]["saturating_backgrounds"] == left_out
    assert task.render.backgrounds.shape[0] == 400 - left_out
    assert "400 nuisance backgrounds left out" in capfd.readouterr().err


def _use_backgrounds(renderer, ready: torch.Tensor) -> None:
    """Make ``ready`` (float (k, 1, side, side), already resized) the renderer's whole background pool."""
    renderer._whole_pool = (torch.zeros(ready.shape[0], 3, 32, 32, dtype=torch.uint8), ready)
    renderer.leave_out_backgrounds([])


def _all_canvases(renderer, pool, ready):
    """Every canvas the renderer draws from ``pool`` (one item of either class per position) over each
    background of ``ready`` in turn, with the classes behind each: brute force."""
    import itertools

    g = torch.Generator().manual_seed(0)
    p = renderer.channels * renderer.rows * renderer.cols
    combos = torch.tensor(list(itertools.product(range(len(pool)), repeat=p)))
    out, classes = [], []
    for b in ready:
        _use_backgrounds(renderer, b[None])          # the renderer's own blend, with only this background
        out.append(renderer.from_pool(pool, combos, g))
        classes.append((combos >= pool.sizes_list[0]).long())      # class 0 first in a pool
    return torch.cat(out), torch.cat(classes)


def test_saturation_argument_is_sound_on_an_exhaustive_small_case():
    """Three digits per class, two positions, eight backgrounds (a white one, a duplicate, one white
    behind both digits' middles): the backgrounds the argument keeps never give two canvases with
    different classes at a position (every canvas enumerated), and the white one it leaves out does."""
    from mibench.tasks.vision import Renderer

    task = make_task("vision", data_dir="embedded", layout="1x1x2", side=28)
    n0 = task.pool.sizes_list[0]
    items = torch.cat([task.pool.items[:3], task.pool.items[n0:n0 + 3]])
    pool = ClassPool(items, np.r_[np.zeros(3, int), np.ones(3, int)], "cpu")
    g = torch.Generator().manual_seed(1)
    ready = torch.rand(8, 1, 28, 28, generator=g) * 0.5
    ready[1] = 1.0                                   # white: erases every digit at eta 1
    ready[2] = ready[0]                              # the same image twice
    ready[3, :, 6:22, 4:24] = 1.0                    # white behind both digits' middles
    ready[4, :, 0, 0] = 1.0                          # one white pixel: harmless
    renderer = Renderer((1, 1, 2), 28, 1.0, None, "cpu")
    _use_backgrounds(renderer, ready)
    rec = T.check_canvas(pool, renderer)
    assert rec["status"] == "holds" and rec["method"].startswith("saturation argument")
    excluded = set(rec["excluded_backgrounds"])
    assert {1, 2, 3} <= excluded and not {0, 4} & excluded
    kept = [i for i in range(8) if i not in excluded]
    canvases, classes = _all_canvases(renderer, pool, ready[kept])
    for q in range(2):
        zero = {r.numpy().tobytes() for r in canvases[classes[:, q] == 0]}
        one = {r.numpy().tobytes() for r in canvases[classes[:, q] == 1]}
        assert not zero & one, q
    white, white_classes = _all_canvases(renderer, pool, ready[1:2])
    assert torch.equal(white[0], white[-1]) and white_classes[0, 0] != white_classes[-1, 0]


def test_witness_counts_and_open_pairs_on_small_cases():
    a = torch.tensor([[0.0, 0.5, 0.0], [0.2, 0.2, 0.2]])
    b = torch.tensor([[0.3, 0.0, 0.0], [0.2, 0.2, 0.9]])
    # one blank, the other inked: (0,0) at pixels 0 and 1 -> 2; (0,1) pixels 0, 1 -> 2 (pixel 2: both 0 vs 0.9
    # -> also, 3); (1,0) pixel 1, 2 -> 2 ... rows of a with no zero pair only where b is blank
    assert T._fewest_witnesses(a, b) == 0          # a[1] vs b[1]: no pixel blank in exactly one of them
    assert T._fewest_witnesses(a[:1], b) == 2
    # a witness needs a difference above INK where the smaller value is at most `low`
    assert T._without_witness(a, b, 0.1) == 1      # a[1] vs b[1]: they differ only at 0.2 vs 0.9 (> 0.1)
    assert T._without_witness(a, b, 0.25) == 0


def test_separation_bound_is_exact_on_small_cases():
    a = torch.tensor([[0.0, 0.5], [1.0, 1.0]])
    b = torch.tensor([[0.3, 0.5], [0.0, 0.9]])
    # pairs: (0,0) max diff 0.3; (0,1) 0.4; (1,0) 0.7; (1,1) 1.0
    assert T._separated(a, b, 0.35) == 1
    assert T._separated(a, b, 0.69) == 2
    assert T._separated(a, b, 0.0) == 0
    assert T._separated(a, b, 1.0) == 4


def test_tiny_side_not_established_and_noted():
    """1x2x5 at 8 x 8: the middle columns' pixels all mix two digits (no interior), so the exact
    check cannot be made: recorded and noted, not refused."""
    info = make_task("vision", data_dir="embedded", side=8).info()
    assert info["truth_check"]["status"] == "not established" and 0 in info["truth_check"]["interior_pixels"]
    assert len(info["notes"]) == 1


def test_text_blocks_exact_check_and_crafted_collision():
    task = make_task("text", data_dir="embedded", ds=2)
    info = task.info()
    assert info["truth_check"]["status"] == "holds" and info["notes"] == []
    items, n0 = task.pool.items.clone(), task.pool.sizes_list[0]
    items[n0] = items[0]
    labels = np.r_[np.zeros(n0, int), np.ones(len(items) - n0, int)]
    assert T.check_blocks(ClassPool(items, labels, "cpu"))["status"] == "fails"
    task.pool = ClassPool(items, labels, "cpu")
    task._pool_info = {**task._pool_info, "crafted": "collision"}
    task._decodability = None
    with pytest.raises(MibenchError, match="refusing"):
        task.info()


def test_mixed_checks_both_sides():
    info = make_task("mixed", data_dir="embedded", layout="1x1x2", side=28).info()
    assert info["truth_check"]["status"] == "holds"
    assert set(info["truth_check"]["sides"]) == {"x", "y"} and info["notes"] == []


def test_run_config_records_the_check(tmp_path, capfd):
    from mibench.protocols.stream.run import RunConfig, run

    cfg = RunConfig(task="vision", task_params={"data_dir": "embedded", "layout": "1x1x2", "side": 28},
                    estimators=["nwj"], hidden=8, layers=1, steps=4, batch_size=8, mi=1.0, device="cpu")
    run(cfg, out_dir=tmp_path / "r", plot=False)
    conf = json.loads((tmp_path / "r" / "config.json").read_text())
    assert conf["task_info"]["truth_check"]["status"] == "holds"
    assert not any("decod" in n for n in conf["notes"])
    assert "decod" not in capfd.readouterr().err
