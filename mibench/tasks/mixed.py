"""Image-text task (Lee & Rhee 2024 §5.1, cross-domain pairs): X from the vision construction, Y from the
text construction, driven by the same ds binary sources (Y's classes through the BSC).

X: the MNIST canvas of classes C (layout/side/nuisance as in :mod:`mibench.tasks.vision`);
Y: the concatenated IMDB embeddings of classes C' = C XOR Bernoulli(beta) (as in
:mod:`mibench.tasks.text`).  Both pools carry an error-free decoder, so I(X;Y) = ds(1 - H_b(beta)).
dim_x = channels * side^2, dim_y = ds * hidden.
"""
from __future__ import annotations

import numpy as np
import torch

from mibench.tasks.base import sources_reach
from mibench.tasks.pools import BSCSources
from mibench.tasks.registry import TASKS
from mibench.tasks.text import DEFAULT_MARGIN, load_imdb_pool
from mibench.tasks.text import check_params as check_text_params
from mibench.tasks.vision import (
    DEFAULT_SIDE,
    RESIZE,
    Renderer,
    check_nuisance,
    check_side,
    load_backgrounds,
    load_mnist_pool,
    parse_layout,
)
from mibench.tasks.vision import check_params as check_vision_params


class MixedTask(BSCSources):
    name = "mixed"

    def __init__(self, ds=None, layout=None, side: int = DEFAULT_SIDE, nuisance: float = 0.0, encoder=None,
                 data_dir=None, n_per_class=None, max_length=None, split=None, margin: float = DEFAULT_MARGIN,
                 standardize: bool = True, device="cpu"):
        self.layout = parse_layout(ds, layout)
        self.ds = int(np.prod(self.layout))
        self.side = check_side(side)
        self.nuisance = check_nuisance(nuisance)
        self.device = torch.device(device)
        self.text_pool, self._text_info = load_imdb_pool(data_dir, encoder, n_per_class, max_length, split, margin,
                                                         self.device, standardize=bool(standardize))
        self.image_pool, self._image_info = load_mnist_pool(data_dir, n_per_class, margin, self.device)
        bgs, self._bg_info = (None, None)
        if self.nuisance > 0:
            bgs, self._bg_info = load_backgrounds(data_dir, self.device)
        self.render = Renderer(self.layout, self.side, self.nuisance, bgs, self.device)
        self.hidden = int(self.text_pool.items.shape[1])
        self.dim_x = self.layout[0] * self.side ** 2
        self.dim_y = self.ds * self.hidden
        self.dr = self.dim_x  # representation size of the image side; the text side is dim_y
        self._beta: dict[float, float] = {}
        self._canvas_check = None
        if self.nuisance > 0:       # backgrounds that could hide a digit are left out before anything is drawn
            self._check_canvas()

    def _truth_identity(self) -> dict:
        return {"image": self._image_info, "text": self._text_info, "layout": self.layout, "side": self.side,
                "nuisance": self.nuisance, "backgrounds": self._bg_info}

    def _check_canvas(self) -> dict:
        from mibench.tasks.truth_check import canvas_truth

        if self._canvas_check is None:
            self._canvas_check = canvas_truth(self.name, self._truth_identity(), self.image_pool, self.render)
        return self._canvas_check

    def sample_with_classes(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        """(x, y, cx, cy): image canvases of classes cx, text blocks of classes cy."""
        cx, cy = self.draw_classes(batch_size, mi_bits, generator)
        ix = self.image_pool.draw_one(cx, generator)
        iy = self.text_pool.draw_one(cy, generator)
        b = cx.shape[0]
        x = self.render(self.image_pool.gather(ix), generator)
        y = self.text_pool.gather(iy).reshape(b, self.dim_y)
        return x, y, cx, cy

    def decodability(self):
        """(probe record, exact-check record, notes): X's canvas checked as in the vision task, Y's
        blocks as in the text task (:mod:`mibench.tasks.truth_check`); probes on both."""
        if getattr(self, "_decodability", None) is None:
            from mibench.tasks.truth_check import check_blocks, rendered_truth

            self._decodability = rendered_truth(
                self, self._truth_identity(), {"x": self._check_canvas(), "y": lambda: check_blocks(self.text_pool)},
                sides=("x", "y"), blocks={"y": self.text_pool})
        return self._decodability

    def info(self) -> dict:
        sources = [self._image_info["data_source"], self._text_info["data_source"]]
        out = {"task": self.name, "ds": self.ds, "dr": self.dr, "dr_x": self.dim_x, "dr_y": self.dim_y,
               "dim_x": self.dim_x, "dim_y": self.dim_y,
               "max_mi_bits": self.max_mi_bits, "true_mi": "ds * (1 - H_b(beta)) bits, BSC per source",
               "layout": "x".join(map(str, self.layout)), "side": self.side, "resize": RESIZE,
               "nuisance": self.nuisance, "encoder": self._text_info["encoder"]["encoder"],
               "data_source": "; ".join(f"{k}: {v}" for k, v in zip(("images", "text"), sources)),
               "pool_sizes": {"mnist": self._image_info["pool_sizes"], "imdb": self._text_info["pool_sizes"]},
               "decoder_accuracy": min(self._image_info["decoder_accuracy"], self._text_info["decoder_accuracy"]),
               "pools": {"mnist": self._image_info, "imdb": self._text_info},
               "pairing": "X's digits and Y's reviews come from different pools (no same-item question)"}
        out["rendered_decoder"], out["truth_check"], out["notes"] = self.decodability()
        out["rendered_decoder_accuracy"] = out["rendered_decoder"]["accuracy"]
        if self._bg_info is not None:
            out["pools"]["backgrounds"] = self._bg_info
            out["nuisance_source"] = self._bg_info["data_source"]
        return out


@TASKS.register("mixed", "image-text pairs: X = MNIST canvas (vision), Y = IMDB embeddings (text), same sources; "
                         "--ds/--layout, --side, --nuisance, --encoder, --data-dir")
def make_mixed(device="cpu", ds=None, layout=None, side: int = DEFAULT_SIDE, nuisance: float = 0.0, encoder=None,
               data_dir=None, n_per_class=None, max_length=None, split=None,
               margin: float = DEFAULT_MARGIN, standardize: bool = True) -> MixedTask:
    return MixedTask(ds=ds, layout=layout, side=side, nuisance=nuisance, encoder=encoder, data_dir=data_dir,
                     n_per_class=n_per_class, max_length=max_length, split=split, margin=margin,
                     standardize=standardize, device=device)


def check_params(ds=None, layout=None, side: int = DEFAULT_SIDE, nuisance: float = 0.0, n_per_class=None,
                 max_length=None, **_) -> None:
    """The mixed task's parameter values (its image and text sides), checked without loading data."""
    check_vision_params(ds=ds, layout=layout, side=side, nuisance=nuisance, n_per_class=n_per_class)
    check_text_params(n_per_class=n_per_class, max_length=max_length)


make_mixed.check_params = check_params
make_mixed.max_mi = lambda ds=None, layout=None, **_: sources_reach(int(np.prod(parse_layout(ds, layout))))
