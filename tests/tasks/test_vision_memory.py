"""The vision task's memory does not grow with ds^2 (issue 34: ds = 4096 tried to allocate 52.6 GB
for the exact check's masks): the masks come from two 1-D profiles, canvases are drawn and resized a
chunk at a time -- with the same values -- and what still cannot fit is refused before allocating."""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.tasks import make_task
from mibench.tasks import truth_check as T
from mibench.tasks import vision as V
from mibench.utils import limits


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MIBENCH_CACHE", str(tmp_path / "cache"))


def _dense_masks(renderer) -> torch.Tensor:
    """The reference: one resized full-size indicator canvas per position (ds^2 x 784 floats)."""
    c, r, k, patch = renderer.channels, renderer.rows, renderer.cols, renderer.patch
    p = c * r * k
    ind = torch.zeros(p, c, r, k)
    ind.view(p, -1)[torch.arange(p), torch.arange(p)] = 1.0
    ind = ind.repeat_interleave(patch, 2).repeat_interleave(patch, 3)
    touched = renderer._resize(ind).reshape(p, -1) > 0
    return touched & (touched.sum(0, keepdim=True) == 1)


@pytest.mark.parametrize("layout,side", [((1, 2, 5), 64), ((3, 2, 2), 28), ((1, 6, 6), 100), ((1, 3, 7), 30),
                                         ((1, 1, 1), 200), ((2, 4, 4), 10), ((1, 1, 3), 28), ((1, 2, 5), 8),
                                         ((1, 8, 8), 64), ((1, 5, 2), 33)])
def test_separable_masks_equal_the_full_canvas_ones(layout, side):
    r = V.Renderer(layout, side, 0.0, None, "cpu")
    assert torch.equal(T.interior_masks(r), _dense_masks(r))


@pytest.mark.parametrize("params", [{}, {"layout": "3x1x2", "side": 28, "nuisance": 0.3}])
def test_chunked_rendering_gives_the_same_canvases(monkeypatch, params):
    task = make_task("vision", data_dir="embedded", **params)
    draws = []
    for chunk_bytes in (V.RENDER_CHUNK_BYTES, 5 * task.render.canvas_pixels * 37):    # one chunk; chunks of 37
        monkeypatch.setattr(V, "RENDER_CHUNK_BYTES", chunk_bytes)
        g = torch.Generator().manual_seed(3)
        cx, cy = task.draw_classes(300, 2.0, g)
        ix, iy = task.pool.draw(cx, cy, g)
        draws.append(task.render.from_pool(task.pool, torch.cat([ix, iy]), g))
    g = torch.Generator().manual_seed(3)
    cx, cy = task.draw_classes(300, 2.0, g)
    ix, iy = task.pool.draw(cx, cy, g)
    whole = task.render(task.pool.gather(torch.cat([ix, iy])), g)
    assert torch.equal(draws[0], whole) and torch.equal(draws[1], whole)


@pytest.mark.parametrize("layout,side", [((1, 2, 5), 28), ((3, 2, 2), 28), ((2, 4, 4), 10), ((1, 1, 1), 28),
                                         ((1, 5, 2), 33)])
def test_canvases_gathered_as_pixel_rows_are_the_patch_canvases(layout, side):
    """from_pool's row gather lays the same pixels where the patch gather + transpose put them."""
    from mibench.tasks.pools import ClassPool

    gen = torch.Generator().manual_seed(0)
    items = torch.randint(0, 256, (40, 28, 28), generator=gen, dtype=torch.uint8)
    pool = ClassPool(items, np.arange(40) % 2, "cpu")
    r = V.Renderer(layout, side, 0.0, None, "cpu")
    index = torch.randint(0, 40, (7, int(np.prod(layout))), generator=gen)
    c, rows, cols = layout
    patches = pool.gather(index).reshape(7, c, rows, cols, 28, 28).permute(0, 1, 2, 4, 3, 5)
    assert torch.equal(r._gather_canvases(pool, index), patches.reshape(7, c, rows * 28, cols * 28))
    assert torch.equal(r.from_pool(pool, index, gen), r(pool.gather(index), gen))


def test_a_vision_task_that_cannot_fit_is_refused_before_allocating(monkeypatch):
    monkeypatch.setattr(limits, "host_available", lambda: 8 * 10**9)
    t0 = time.perf_counter()
    with pytest.raises(MibenchError, match=r"vision task at ds 10, side 1024 needs about .* lower --side"):
        make_task("vision", data_dir="embedded", side=1024)
    assert time.perf_counter() - t0 < 30


def test_the_largest_layout_needs_little_memory_to_build():
    """ds = 4096 (the documented maximum): the estimate of the build stays near the fixed chunk."""
    needs = V.memory_needs((1, 64, 64), 64, 12_660)
    assert sum(n.nbytes for n in needs) < 1.5 * 10**9
    r = V.Renderer((1, 64, 64), 64, 0.0, None, "cpu")
    masks = T.interior_masks(r)                 # 4096 x 4096 booleans, not 4096 x 4096 x 784 floats
    assert masks.shape == (4096, 4096) and masks.dtype == torch.bool
    assert int(np.asarray(masks.sum(1)).min()) == 0      # one pixel per digit: no interior (not established)
