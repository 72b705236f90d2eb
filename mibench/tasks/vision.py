"""Vision task (paper 002 §4.3-4.5, §5.4-5.6): MNIST 0/1 digits with known shared information.

Per sample and source i = 1..ds: C_i ~ fair coin and X's patch i is a random MNIST digit of class
C_i; Y's patch i is a random digit of class C'_i = C_i XOR Bernoulli(beta) (binary symmetric
channel, beta = bsc_crossover(ds, MI) solves ds * (1 - H_b(beta)) = MI), drawn independently of X's
digit given the classes, so I(X;Y) = ds * (1 - H_b(beta)) bits exactly.  ``exclude_same_item=True``
is the paper's variant (§4.4: a *different* image of the same class), which adds a small excess
(see :meth:`ClassPool.draw`).

The ds patches are laid out in a ``channels x rows x cols`` grid (``layout="1x2x5"``, the paper's
default for ds = 10) and each channel's canvas is resized (bilinear, antialiased) to ``side x side``,
the paper's 64 by default (§5.5): dr = channels * side^2, values in [0, 1].  A nuisance eta (§5.6)
composites every canvas over its own independent CIFAR-10 background, clip(canvas + eta *
background, 0, 1); the backgrounds are independent of everything else, so the MI is unchanged.

Why the truth holds on what the estimator sees (§4.3): the pool filter makes every raw digit
decodable (:mod:`mibench.tasks.pools`), and :mod:`mibench.tasks.truth_check` checks exactly, at
float32, that no two digits of different classes render to the same pixels at any position (the
nuisance included); ``info()`` records that check (``truth_check``; a failure refuses in one line)
and a linear probe's accuracy as a difficulty figure (``rendered_decoder``).  Everything is
vectorised torch on ``device``: a batch is an index gather plus one interpolate call.

The construction in full (layout, resize, backgrounds): docs/tasks.md, "How each task is built".
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch
import torch.nn.functional as F

from mibench.data.sources import shown_path
from mibench.errors import MibenchError
from mibench.tasks.base import sources_reach
from mibench.tasks.pools import BSCSources, ClassPool, cached_filter, check_kept_pool, pool_info
from mibench.tasks.registry import TASKS
from mibench.utils.checks import check_positive_int

PATCH = 28
DEFAULT_SIDE = 64   # paper §5.5 / the authors' default dr = 4096 at ds = 10
MAX_SOURCES = 4096
SIDE_RANGE = (8, 1024)
RESIZE = "bilinear (torch interpolate, align_corners=False, antialias=True)"
LUMA = (0.299, 0.587, 0.114)
PRERENDER_BYTES = 128 << 20  # backgrounds are grey-converted and resized once when they fit in this
RENDER_CHUNK_BYTES = 256 << 20  # canvases are converted to float and resized this many bytes at a time
#: bytes a rendered sample holds per output value (float canvases, the nuisance blend, the copies a
#: batch or the linear probe makes), generously
BYTES_PER_VALUE = 16


def default_layout(ds: int) -> tuple[int, int, int]:
    """1 x r x c with r the largest divisor of ds not above sqrt(ds) (10 -> 1x2x5, 36 -> 1x6x6)."""
    r = max(d for d in range(1, int(math.isqrt(ds)) + 1) if ds % d == 0)
    return 1, r, ds // r


def parse_layout(ds=None, layout=None) -> tuple[int, int, int]:
    if layout is None:
        if ds is None:
            ds = 10
        try:
            ds_i = int(ds)
        except (TypeError, ValueError):
            raise MibenchError(f"ds must be an integer, got {ds!r}") from None
        if ds_i != ds or not 1 <= ds_i <= MAX_SOURCES:
            raise MibenchError(f"ds must be an integer in [1, {MAX_SOURCES}], got {ds}")
        return default_layout(ds_i)
    if isinstance(layout, (tuple, list)):
        parts = [str(p) for p in layout]
    else:
        parts = re.split(r"\s*[x×X*,]\s*", str(layout).strip())
    try:
        dims = [int(p) for p in parts]
    except ValueError:
        raise MibenchError(f"bad layout {layout!r}: use channels x rows x cols, e.g. 1x2x5 or 3x2x2") from None
    if len(dims) == 2:
        dims = [1] + dims
    if len(dims) != 3 or min(dims) < 1:
        raise MibenchError(f"bad layout {layout!r}: use channels x rows x cols with positive integers, e.g. 1x2x5")
    c, r, k = dims
    n = c * r * k
    if n > MAX_SOURCES:
        raise MibenchError(f"layout {layout!r} has {n} sources; at most {MAX_SOURCES}")
    if ds is not None and int(ds) != n:
        raise MibenchError(f"layout {layout!r} holds {n} sources but ds = {ds}; give one or make them agree")
    return c, r, k


def check_side(side) -> int:
    try:
        s = int(side)
    except (TypeError, ValueError):
        raise MibenchError(f"side must be an integer, got {side!r}") from None
    if s != side or not SIDE_RANGE[0] <= s <= SIDE_RANGE[1]:
        raise MibenchError(f"side must be an integer in [{SIDE_RANGE[0]}, {SIDE_RANGE[1]}] pixels, got {side}")
    return s


def check_nuisance(eta) -> float:
    try:
        e = float(eta)
    except (TypeError, ValueError):
        raise MibenchError(f"nuisance (eta) must be a number in [0, 1], got {eta!r}") from None
    if not 0.0 <= e <= 1.0:
        raise MibenchError(f"nuisance (eta) must be in [0, 1], got {eta}")
    return e


def check_params(ds=None, layout=None, side: int = DEFAULT_SIDE, nuisance: float = 0.0, n_per_class=None,
                 **_) -> None:
    """The vision (and image side of the mixed) task's parameter values, checked without loading data."""
    parse_layout(ds, layout)
    check_side(side)
    check_nuisance(nuisance)
    if n_per_class is not None:
        check_positive_int(n_per_class, "n_per_class", 2)


def _subset_per_class(labels: np.ndarray, n_per_class, seed: int = 0) -> np.ndarray:
    """Indices of a seeded class-balanced subset (all items when n_per_class is None)."""
    if n_per_class is None:
        return np.arange(len(labels))
    n = int(n_per_class)
    if n < 2:
        raise MibenchError(f"n_per_class must be >= 2, got {n_per_class}")
    out = []
    for c in (0, 1):
        idx = np.flatnonzero(labels == c)
        if n > len(idx):
            raise MibenchError(f"only {len(idx)} items of class {c} available; n_per_class = {n}")
        out.append(np.sort(idx[np.random.default_rng([0, seed, c]).permutation(len(idx))[:n]]))
    return np.concatenate(out)


def load_mnist_pool(data_dir=None, n_per_class=None, margin: float = 1.0, device="cpu"):
    """(ClassPool of uint8 (N, 28, 28) digits, info dict) after the decoder filter."""
    from mibench.data import embedded
    from mibench.data.loaders import load_mnist

    kind, where, rows = embedded.choose_source("mnist", data_dir)
    if kind == "full":
        images, labels, _ = load_mnist(where, "train")
        sel = np.flatnonzero(labels <= 1)
        images, labels = images[sel], labels[sel].astype(np.int64)
        source = f"full data ({shown_path(where)}/mnist, train split, md5 verified)"
        ident = {"source": "full", "md5": [r["md5"] for r in rows]}
    else:
        z = embedded.load("mnist")
        images, labels = z["images"], z["labels"].astype(np.int64)
        embedded.announce("mnist", where)
        source = embedded.describe("mnist")
        ident = {"source": "embedded", "md5": embedded.provenance().get("parts", {}).get("mnist", {}).get("md5")}
    sub = _subset_per_class(labels, n_per_class)
    images, labels = images[sub], labels[sub]
    ident["n_per_class"] = n_per_class
    rec = cached_filter("mnist01", ident, lambda: images.reshape(len(images), -1).astype(np.float32) / 255.0,
                        labels, margin)
    check_kept_pool(rec, "MNIST 0/1 pool")
    keep = rec["keep"]
    pool = ClassPool(torch.from_numpy(np.ascontiguousarray(images[keep])), labels[keep], device)
    info = {"data_source": source, "dataset": "MNIST digits 0/1", "pool_sizes": pool.sizes_list,
            "decoder_accuracy": rec["decoder_accuracy"], "decoder": pool_info(rec)}
    if rows:
        info["checksums"] = rows
    return pool, info


def load_backgrounds(data_dir=None, device="cpu"):
    """(uint8 (N, 3, 32, 32) tensor on device, info dict) of CIFAR-10 nuisance backgrounds."""
    from mibench.data import embedded
    from mibench.data.loaders import load_cifar10

    kind, where, rows = embedded.choose_source("cifar10", data_dir)
    if kind == "full":
        images, _, batches, _ = load_cifar10(where)
        info = {"data_source": f"full data ({shown_path(where)}/cifar10, batches {', '.join(batches)})",
                "checksums": rows}
    else:
        images = embedded.load("cifar10")["images"]
        embedded.announce("cifar10", where)
        info = {"data_source": embedded.describe("cifar10")}
    info["pool_size"] = int(len(images))
    return torch.from_numpy(np.array(images, dtype=np.uint8, copy=True)).to(device), info


def pairing_info(exclude_same_item: bool) -> str:
    if exclude_same_item:
        return ("paper's exclusion (§4.4): Y's item of a source is never X's item when the classes agree; true MI "
                "above ds (1 - H_b(beta)) by at most 0.02 bits (larger excesses are refused)")
    return "Y's items drawn independently of X's given the classes: I(X;Y) = ds (1 - H_b(beta)) exactly"


class Renderer:
    """Turns gathered uint8 patches (n, ds, 28, 28) into flattened canvases (n, channels*side^2)."""

    def __init__(self, layout, side, nuisance, backgrounds: torch.Tensor | None, device):
        self.channels, self.rows, self.cols = layout
        self.patch = PATCH
        self.side = side
        self.nuisance = nuisance
        self.backgrounds = backgrounds
        self.device = torch.device(device)
        self.luma = torch.tensor(LUMA, device=self.device).view(1, 3, 1, 1)
        self.bg_ready = None  # backgrounds already grey-converted and resized, when small enough
        if backgrounds is not None and nuisance > 0:
            c_bg = 3 if self.channels == 3 else 1
            if backgrounds.shape[0] * c_bg * side * side * 4 <= PRERENDER_BYTES:
                self.bg_ready = torch.cat([self._background(backgrounds[i:i + 1024])
                                           for i in range(0, backgrounds.shape[0], 1024)])
        self._whole_pool = (self.backgrounds, self.bg_ready)

    def leave_out_backgrounds(self, excluded) -> None:
        """Draw backgrounds only from the pool less ``excluded`` (indices into the whole pool, as the exact
        truth check lists them: :func:`mibench.tasks.truth_check.canvas_truth`)."""
        whole, ready = self._whole_pool
        keep = torch.ones(whole.shape[0], dtype=torch.bool, device=whole.device)
        keep[torch.as_tensor(list(excluded), dtype=torch.long, device=whole.device)] = False
        self.backgrounds = whole[keep]
        self.bg_ready = None if ready is None else ready[keep]

    def _background(self, bg_u8: torch.Tensor) -> torch.Tensor:
        """uint8 (n, 3, 32, 32) -> float (n, 1 or 3, side, side) in [0, 1]."""
        bg = bg_u8.float()
        if self.channels != 3:
            bg = (bg * self.luma).sum(1, keepdim=True)
        return self._resize(bg).mul_(1.0 / 255.0)

    def _resize(self, x: torch.Tensor, size: tuple[int, int] | None = None) -> torch.Tensor:
        """The resize of the module doc to ``size`` (default side x side; an exact no-op at that size)."""
        size = tuple(size or (self.side, self.side))
        if tuple(x.shape[-2:]) == size:
            return x
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False, antialias=True)

    @property
    def canvas_pixels(self) -> int:
        """Pixels of one canvas before the resize (all channels)."""
        return self.channels * self.rows * self.cols * PATCH * PATCH

    @property
    def chunk(self) -> int:
        """Canvases rendered at once: :data:`RENDER_CHUNK_BYTES` of uint8 and float canvas pixels."""
        return max(1, RENDER_CHUNK_BYTES // (5 * self.canvas_pixels))

    def _canvases(self, patches: torch.Tensor) -> torch.Tensor:
        """uint8 patches (n, ds, 28, 28) -> float canvases (n, c, side, side) in [0, 1], resized
        :attr:`chunk` at a time (each canvas is resized on its own, so the chunking changes no value)."""
        c, r, k = self.channels, self.rows, self.cols
        out = []
        for i in range(0, patches.shape[0], self.chunk):
            p = patches[i:i + self.chunk]
            x = p.reshape(p.shape[0], c, r, k, PATCH, PATCH).permute(0, 1, 2, 4, 3, 5)
            out.append(self._resized(x.reshape(p.shape[0], c, r * PATCH, k * PATCH)))
        return out[0] if len(out) == 1 else torch.cat(out)

    def from_pool(self, pool, index: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """``self(pool.gather(index), generator)`` with the items gathered a chunk at a time: the
        same canvases without holding every sample's full-size patches at once.  Each chunk's uint8
        canvases come from one gather of pixel rows in canvas order: the same pixels without the
        patch gather and its transposing copy (``benchmarks/bench_step_floor.py``)."""
        parts = [self._resized(self._gather_canvases(pool, index[i:i + self.chunk]))
                 for i in range(0, index.shape[0], self.chunk)]
        return self._finish(parts[0] if len(parts) == 1 else torch.cat(parts), generator)

    def _gather_canvases(self, pool, index: torch.Tensor) -> torch.Tensor:
        """uint8 canvases (n, c, rows*28, cols*28) of the pool items ``index`` (n, ds), gathered as
        rows of 28 pixels: canvas row y of patch-row r, column block k is row y % 28 of item
        index[:, (c, r, k)]."""
        c, r, k = self.channels, self.rows, self.cols
        n = index.shape[0]
        rows = index.view(n, c, r, 1, k) * PATCH + torch.arange(PATCH, device=index.device).view(1, 1, 1, PATCH, 1)
        flat = torch.index_select(pool.items.reshape(-1, PATCH), 0, rows.reshape(-1))
        return flat.view(n, c, r * PATCH, k * PATCH)

    def _resized(self, canvases: torch.Tensor) -> torch.Tensor:
        """uint8 canvases -> float canvases (n, c, side, side) in [0, 1]."""
        return self._resize(canvases.float()).mul_(1.0 / 255.0)

    def __call__(self, patches: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        return self._finish(self._canvases(patches), generator)

    def _finish(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """Resized canvases (n, c, side, side) -> with the nuisance background, clamped, flattened."""
        n, c = x.shape[0], self.channels
        if self.nuisance > 0.0:
            idx = torch.randint(0, self.backgrounds.shape[0], (n,), generator=generator, device=self.device)
            if self.bg_ready is not None:
                bg = torch.index_select(self.bg_ready.view(self.bg_ready.shape[0], -1), 0, idx)
                bg = bg.view(n, -1, self.side, self.side)
            else:
                bg = torch.index_select(self.backgrounds.view(self.backgrounds.shape[0], -1), 0, idx)
                bg = self._background(bg.view(n, 3, 32, 32))
            if bg.shape[1] != c:
                bg = bg.expand(n, c, self.side, self.side)
            x = x.add_(bg, alpha=self.nuisance)
        return x.clamp_(0.0, 1.0).reshape(n, -1)


def memory_needs(layout, side: int, n_items: int) -> list:
    """What building a vision task holds at its peak, before it allocates it
    (:class:`mibench.utils.limits.Need`): the linear probe's rendered samples
    (:func:`mibench.tasks.pools.rendered_decodability`: canvases grow with ds, values with side^2)
    and the exact check's masks and interior values (at most every output value of every pool item)."""
    from mibench.tasks.pools import RENDER_CHECK_ELEMENTS, RENDER_CHECK_N
    from mibench.utils.limits import FLOAT, Need

    c, p = layout[0], int(np.prod(layout))
    dr = c * side * side
    n_probe = max(400, min(RENDER_CHECK_N, RENDER_CHECK_ELEMENTS // dr))
    return [Need("the probe's rendered samples", 2 * n_probe * dr * BYTES_PER_VALUE, "--side"),
            Need("the exact check's interior values", n_items * dr * FLOAT + p * dr, "--side"),
            Need("canvases rendered at once", 2 * RENDER_CHUNK_BYTES, "--ds")]


class VisionTask(BSCSources):
    name = "vision"

    def __init__(self, ds=None, layout=None, side: int = DEFAULT_SIDE, nuisance: float = 0.0, data_dir=None,
                 n_per_class=None, margin: float = 1.0, exclude_same_item: bool = False, device="cpu"):
        self.layout = parse_layout(ds, layout)
        self.exclude_same_item = bool(exclude_same_item)
        self.ds = int(np.prod(self.layout))
        self.side = check_side(side)
        self.nuisance = check_nuisance(nuisance)
        self.device = torch.device(device)
        self.pool, self._pool_info = load_mnist_pool(data_dir, n_per_class, margin, self.device)
        self.check_pairing()
        from mibench.utils.limits import check_fits

        check_fits(memory_needs(self.layout, self.side, len(self.pool)), self.device,
                   f"the vision task at ds {self.ds}, side {self.side}")
        bgs, self._bg_info = (None, None)
        if self.nuisance > 0:
            bgs, self._bg_info = load_backgrounds(data_dir, self.device)
        self.render = Renderer(self.layout, self.side, self.nuisance, bgs, self.device)
        self.dr = self.layout[0] * self.side ** 2
        self.dim_x = self.dim_y = self.dr
        self._beta: dict[float, float] = {}
        self._canvas_check = None
        if self.nuisance > 0:       # backgrounds that could hide a digit are left out before anything is drawn
            self._check_canvas()

    def _truth_identity(self) -> dict:
        return {"pool": self._pool_info, "layout": self.layout, "side": self.side, "nuisance": self.nuisance,
                "backgrounds": self._bg_info}

    def _check_canvas(self) -> dict:
        from mibench.tasks.truth_check import canvas_truth

        if self._canvas_check is None:
            self._canvas_check = canvas_truth(self.name, self._truth_identity(), self.pool, self.render)
        return self._canvas_check

    @property
    def bytes_per_pair(self) -> int:
        """Memory one rendered (x, y) pair holds while a batch is drawn (for the run's estimate; the
        full-size canvases are made a chunk at a time, :attr:`Renderer.chunk`)."""
        return 2 * self.dr * BYTES_PER_VALUE

    def sample_with_classes(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        """(x, y, cx, cy): the batch and the per-source classes behind X and Y."""
        cx, cy = self.draw_classes(batch_size, mi_bits, generator)
        ix, iy = self.pool.draw(cx, cy, generator, self.exclude_same_item)
        canvases = self.render.from_pool(self.pool, torch.cat([ix, iy]), generator)
        b = cx.shape[0]
        return canvases[:b], canvases[b:], cx, cy

    def decodability(self):
        """(linear-probe record, exact-check record, notes) for the rendered canvas of this configuration
        (:func:`mibench.tasks.truth_check.rendered_truth`; X and Y canvases come from the same pool and
        renderer, so one check covers both); computed once (cached on disk)."""
        if getattr(self, "_decodability", None) is None:
            from mibench.tasks.truth_check import rendered_truth

            self._decodability = rendered_truth(self, self._truth_identity(), {"x": self._check_canvas()})
        return self._decodability

    def info(self) -> dict:
        out = {"task": self.name, "ds": self.ds, "dr": self.dr, "dim_x": self.dim_x, "dim_y": self.dim_y,
               "max_mi_bits": self.max_mi_bits, "true_mi": "ds * (1 - H_b(beta)) bits, BSC per source",
               "layout": "x".join(map(str, self.layout)), "side": self.side, "resize": RESIZE,
               "nuisance": self.nuisance, "data_source": self._pool_info["data_source"],
               "pool_sizes": self._pool_info["pool_sizes"], "decoder_accuracy": self._pool_info["decoder_accuracy"],
               "pools": {"mnist": self._pool_info}, "pairing": pairing_info(self.exclude_same_item),
               "exclude_same_item": self.exclude_same_item}
        out["rendered_decoder"], out["truth_check"], out["notes"] = self.decodability()
        out["rendered_decoder_accuracy"] = out["rendered_decoder"]["accuracy"]
        if self._bg_info is not None:
            out["pools"]["backgrounds"] = self._bg_info
            out["nuisance_source"] = self._bg_info["data_source"]
            if "embedded" in self._bg_info["data_source"] and "embedded" not in out["data_source"]:
                out["data_source"] += f"; backgrounds: {self._bg_info['data_source']}"
        return out


@TASKS.register("vision", "MNIST 0/1 digits in a channels x rows x cols grid, BSC for non-integer MI; "
                          "--ds, --layout 1x2x5, --side 64, --nuisance eta, --exclude-same-item, --data-dir")
def make_vision(device="cpu", ds=None, layout=None, side: int = DEFAULT_SIDE, nuisance: float = 0.0, data_dir=None,
                n_per_class=None, margin: float = 1.0, exclude_same_item: bool = False) -> VisionTask:
    return VisionTask(ds=ds, layout=layout, side=side, nuisance=nuisance, data_dir=data_dir,
                      n_per_class=n_per_class, margin=margin, exclude_same_item=exclude_same_item, device=device)


make_vision.check_params = check_params
make_vision.max_mi = lambda ds=None, layout=None, **_: sources_reach(int(np.prod(parse_layout(ds, layout))))
