"""A task seen through an encoder g: samples (g(X), g(Y)) of any task (Lee & Rhee 2024 §5.7).

``make_task(name, transform="realnvp" | "maf" | "irevnet" | "resnet", layer=...)`` wraps the built
task in :class:`TransformedTask`.  After the base task samples a batch, the *same* fixed g is
applied to X and to Y (under ``torch.no_grad()``, on the task device, one batched call).  When X
and Y have different shapes (the image-text task), each side gets its own g of the same kind,
seeded independently.

Truth:

* invertible g (RealNVP, MAF, i-RevNet; verified numerically by the tests): I(g(X); g(Y)) = I(X; Y)
  exactly, so the harness's true MI is still the truth;
* non-invertible g (ResNet layer features): I(g(X); g(Y)) <= I(X; Y) (data-processing inequality),
  with equality when the source classes are decoded from g(X) without error; ``info()`` records
  which applies (``truth_kind``: "exact" for an invertible g, "checked" where the classifier decoded every
  source on the decisions it was tested on -- a sample, not every canvas --, else "upper bound") and the
  classifier's accuracy.
"""
from __future__ import annotations

import torch

from mibench.errors import MibenchError


def sample_shapes(task) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """One sample's shape for X and for Y: (C, side, side) for image sides, (D,) otherwise."""
    name = getattr(task, "name", "")
    image = None
    if hasattr(task, "layout") and hasattr(task, "side"):
        image = (int(task.layout[0]), int(task.side), int(task.side))
    if name == "vision" and image is not None:
        return image, image
    if name == "mixed" and image is not None:
        return image, (int(task.dim_y),)
    return (int(task.dim_x),), (int(task.dim_y),)


class TransformedTask:
    """(g(X), g(Y)) for a base task; same ``sample`` / ``info`` protocol as every task."""

    def __init__(self, base, transform: str, layer=None, seed: int = 0):
        from mibench.encoders import ENCODERS, make_encoder

        self.base = base
        entry = ENCODERS.get(transform)
        self.transform = entry.name
        self.device = base.device
        sx, sy = sample_shapes(base)
        self.gx = make_encoder(self.transform, sx, seed=seed, layer=layer, task=base, device=self.device)
        if sx == sy:
            self.gy = self.gx
        else:
            if self.transform == "resnet":
                raise MibenchError(f"the resnet transform needs images on both sides; task {base.name!r} "
                                   "pairs images with text")
            self.gy = make_encoder(self.transform, sy, seed=seed + 1, layer=layer, task=base, device=self.device)
        self.layer = getattr(self.gx, "layer", None)
        suffix = self.transform + (f"-{self.layer}" if self.layer else "")
        self.name = f"{base.name}+{suffix}"
        self.dim_x, self.dim_y = self.gx.out_dim, self.gy.out_dim
        self.invertible = bool(self.gx.invertible and self.gy.invertible)

    @property
    def max_mi_bits(self) -> float:
        return self.base.max_mi_bits

    @torch.no_grad()
    def sample(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        x, y = self.base.sample(batch_size, mi_bits, generator)
        if self.gy is self.gx:
            z = self.gx.encode(torch.cat([x, y]))
            return z[: x.shape[0]], z[x.shape[0]:]
        return self.gx.encode(x), self.gy.encode(y)

    def info(self) -> dict:
        out = dict(self.base.info())
        out["task"] = self.name
        out["base_task"] = self.base.name
        out["base_dim_x"], out["base_dim_y"] = self.base.dim_x, self.base.dim_y
        out["dim_x"], out["dim_y"] = self.dim_x, self.dim_y
        if "dr" in out:
            out["base_dr"] = out["dr"]
            out["dr"] = self.dim_x
        enc = {"x": self.gx.info()} if self.gy is self.gx else {"x": self.gx.info(), "y": self.gy.info()}
        truth_exact = self.invertible or all(e.get("decodes_perfectly") for e in enc.values())
        base_truth = out.get("true_mi", "the base task's true MI")
        out.update({
            "transform": self.transform, "layer": self.layer, "invertible": self.invertible,
            "encoder": enc if self.gy is not self.gx else enc["x"],
            "same_encoder_for_x_and_y": self.gy is self.gx,
            "truth_kind": "exact" if self.invertible else "checked" if truth_exact else "upper bound",
            "true_mi": (f"I(g(X);g(Y)) = I(X;Y) = {base_truth} (g invertible)" if self.invertible else
                        (f"I(g(X);g(Y)) = I(X;Y) = {base_truth} where the source classes are decoded from g(X) "
                         "without error: g is not invertible, and the classifier decoded every source on the "
                         "decisions it was tested on (a sample, recorded; not a proof)" if truth_exact else
                         f"I(g(X);g(Y)) <= I(X;Y) = {base_truth} (data-processing inequality; the harness's "
                         "true_mi column is this upper bound)")),
        })
        return out


def check_transform(transform=None, layer=None) -> None:
    """Refuse unknown transform / layer names (one line) before the base task is built."""
    from mibench.encoders import ENCODERS
    from mibench.encoders.resnet import check_layer

    if transform in (None, "", "none"):
        if layer not in (None, ""):
            raise MibenchError("--layer needs --transform resnet")
        return
    name = ENCODERS.get(str(transform)).name
    if layer not in (None, ""):
        if name != "resnet":
            raise MibenchError(f"--layer applies to the resnet transform only, not {name!r}")
        check_layer(layer)


def wrap(task, transform=None, layer=None, seed: int = 0):
    """``task`` seen through ``transform`` (``layer`` only with resnet); ``task`` itself when neither is set."""
    check_transform(transform, layer)
    if transform in (None, "", "none"):
        return task
    return TransformedTask(task, str(transform), layer=layer, seed=seed)


__all__ = ["TransformedTask", "wrap", "check_transform", "sample_shapes"]
