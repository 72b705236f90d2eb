"""mutinfo's synthetic image tasks (Butakov et al., the ``mutinfo`` library: ``images/field.py``,
``images/geometric.py``): images rendered from low-dimensional correlated latent vectors by an
injective map, so the latents' closed-form MI is the images' MI.

Latents ("CorrelatedUniform" in mutinfo, :func:`correlated_uniform`): d independent standard-normal
pairs with equal correlation rho, I = -(d/2) log(1 - rho^2) nats, each side rotated by a fixed
orthogonal matrix and sent through the normal CDF: latents in (0, 1)^d with the same MI (injective
maps, Kraskov et al. 2004 §II).

``mutinfo-gaussian2d-<s>x<s>``    d = 2: the latent is the centre of a Gaussian bump
                                  (:func:`render_gaussian`).
``mutinfo-rectangles2d-<s>x<s>``  d = 4: two latent pairs become the sides of an anti-aliased
                                  rectangle (:func:`to_rectangle`, :func:`render_rectangles`).

Why the MI statement holds at the stored precision (float32 images): both renderings can be inverted
in closed form (:func:`decode_latents`), and ``tests/tasks/test_mutinfo_images.py`` checks that it
recovers the latents from float32 images to within 1e-5, so distinct latents never share a stored
image (far below the latents' conditional spread at any MI up to :data:`MAX_MI_BITS`).  The tasks hold
any MI level from 0 to :data:`MAX_MI_BITS` (the streaming staircase works).  The renderings and
their inverses in full: docs/tasks.md, "mutinfo's images".
"""
from __future__ import annotations

import math
import re

import numpy as np
import torch

from mibench.errors import MibenchError
from mibench.tasks.base import batch_count, check_mi_request
from mibench.tasks.catalogue import add_to_catalogue
from mibench.tasks.registry import TASKS
from mibench.utils.registry import Entry
from mibench.utils.units import LN2

F64 = torch.float64
SIGMA = 0.2           # mutinfo's symmetric_gaussian_field default
MIN_SIZE = 0.2        # rectangles: minimum side length (fraction of the image), as mutinfo's preset
MAX_MI_BITS = 20.0    # conditional latent spread stays >= 1e-3 (see the module docstring)
MIN_SIDE = {"gaussian2d": 4, "rectangles2d": 15}   # rectangles need >= 3 px per side (docs/tasks.md)
MAX_SIDE = 128
LATENT_DIM = {"gaussian2d": 2, "rectangles2d": 4}
DEFAULT_SIDES = (16, 32)


def _orthogonal(d: int, seed: int) -> np.ndarray:
    q, r = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def correlated_uniform(n: int, d: int, rho: float, qx: torch.Tensor, qy: torch.Tensor, g: torch.Generator, device):
    """(x, y) in (0, 1)^d each: Phi of rotated equal-correlation Gaussian pairs (float64)."""
    z = torch.randn(2, n, d, generator=g, device=device, dtype=F64)
    u = z[0]
    v = rho * z[0] + math.sqrt(max(0.0, 1.0 - rho * rho)) * z[1]
    return torch.special.ndtr(u @ qx.T), torch.special.ndtr(v @ qy.T)


def render_gaussian(p: torch.Tensor, side: int) -> torch.Tensor:
    """(n, 2) bump centres p -> (n, side, side) images (float64): pixel (i, j) =
    exp(-((g_j - p_0)^2 + (g_i - p_1)^2) / (2 sigma^2)) on the grid g = linspace(0, 1, side), sigma = 0.2."""
    grid = torch.linspace(0.0, 1.0, side, dtype=F64, device=p.device)
    gx = (grid[None, :] - p[:, 0:1]) ** 2         # along columns j
    gy = (grid[None, :] - p[:, 1:2]) ** 2         # along rows i
    return torch.exp(-(gy[:, :, None] + gx[:, None, :]) / (2.0 * SIGMA * SIGMA))


def to_rectangle(u: torch.Tensor) -> torch.Tensor:
    """(n, 4) uniforms -> (n, 4) corners (a_x, b_x, a_y, b_y) in [0, 1], each side >= MIN_SIZE: per axis,
    a = 0.8 (1 - sqrt(1 - u_0)), b = a + 0.2 + u_1 (0.8 - a) (0.2 = MIN_SIZE)."""
    out = torch.empty_like(u)
    for k in (0, 2):
        a = (1.0 - MIN_SIZE) * (1.0 - torch.sqrt(1.0 - u[:, k]))
        out[:, k] = a
        out[:, k + 1] = a + MIN_SIZE + u[:, k + 1] * (1.0 - a - MIN_SIZE)
    return out


def from_rectangle(c: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`to_rectangle`."""
    out = torch.empty_like(c)
    for k in (0, 2):
        a, b = c[:, k], c[:, k + 1]
        out[:, k] = 1.0 - (1.0 - a / (1.0 - MIN_SIZE)) ** 2
        out[:, k + 1] = (b - a - MIN_SIZE) / (1.0 - a - MIN_SIZE)
    return out


def render_rectangles(c: torch.Tensor, side: int) -> torch.Tensor:
    """(n, 4) corners -> (n, side, side) anti-aliased rectangles; axis 1 is x, axis 2 is y: per axis the
    pixel value is clip(min(k - A, B - k), 0, 1) (A = a side, B = b side, k = 0..side-1), the image their
    product."""
    k = torch.arange(side, dtype=F64, device=c.device)[None, :]
    c = c * side

    def profile(a, b):
        return torch.clamp(torch.minimum(k - a[:, None], b[:, None] - k), 0.0, 1.0)

    return profile(c[:, 0], c[:, 1])[:, :, None] * profile(c[:, 2], c[:, 3])[:, None, :]


def decode_latents(kind: str, images: torch.Tensor) -> torch.Tensor:
    """Recover the uniform latents from (n, side, side) images (the inverse of the rendering): the bump's
    log-pixels are affine in the grid coordinates with slopes p / sigma^2 (a least-squares fit); the
    rectangle's edges are A = k - v at its first lit pixel k of value v and B = k + v at its last (the
    rectangle is > 2 px wide, so each axis profile is the image's maximum along the other axis).

    Parameters
    ----------
    kind : ``gaussian2d`` or ``rectangles2d``.
    images : rendered images (any float dtype; computed in float64).
    """
    img = images.to(F64)
    n, side = img.shape[0], img.shape[-1]
    if kind == "gaussian2d":
        grid = torch.linspace(0.0, 1.0, side, dtype=F64)
        gi, gj = torch.meshgrid(grid, grid, indexing="ij")
        target = torch.log(img.reshape(n, -1)) + ((gi ** 2 + gj ** 2) / (2 * SIGMA ** 2)).reshape(1, -1)
        design = torch.stack([gj.reshape(-1), gi.reshape(-1), torch.ones(side * side, dtype=F64)], 1)
        coef = torch.linalg.lstsq(design, target.T).solution          # (3, n)
        return (coef[:2].T * SIGMA ** 2)
    k = torch.arange(side, dtype=F64)
    corners = []
    for prof in (img.amax(2), img.amax(1)):                            # x profile, y profile
        lit = prof > 0
        first = lit.to(torch.int64).argmax(1)
        last = side - 1 - lit.flip(1).to(torch.int64).argmax(1)
        rows = torch.arange(n)
        corners += [(k[first] - prof[rows, first]) / side, (k[last] + prof[rows, last]) / side]
    return from_rectangle(torch.stack(corners, 1))


class MutinfoImageTask:
    """mutinfo image pairs at any requested MI (module docstring)."""

    def __init__(self, kind: str, side: int, device="cpu"):
        if kind not in LATENT_DIM:
            raise MibenchError(f"mutinfo image kind must be one of {', '.join(LATENT_DIM)}, got {kind!r}")
        side = int(side)
        if not MIN_SIDE[kind] <= side <= MAX_SIDE:
            why = " (a rectangle must span at least 3 pixels for the rendering to be injective)" \
                if kind == "rectangles2d" and side < MIN_SIDE[kind] else ""
            raise MibenchError(f"{kind} images need {MIN_SIDE[kind]} <= side <= {MAX_SIDE}, got {side}{why}")
        self.kind, self.side, self.d = kind, side, LATENT_DIM[kind]
        self.name = f"mutinfo-{kind}-{side}x{side}"
        self.dim_x = self.dim_y = side * side
        self.device = torch.device(device)
        self._qx = torch.as_tensor(_orthogonal(self.d, 101), device=self.device)
        self._qy = torch.as_tensor(_orthogonal(self.d, 202), device=self.device)

    @property
    def max_mi_bits(self) -> float:
        return MAX_MI_BITS

    def rho(self, mi_bits: float) -> float:
        mi_bits = check_mi_request(self.name, mi_bits, self.max_mi_bits, "latent resolution of the float32 images")
        return math.sqrt(-math.expm1(-2.0 * mi_bits * LN2 / self.d))

    def latents(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        """The uniform latents (n, d) of X and Y (float64)."""
        return correlated_uniform(batch_count(batch_size), self.d, self.rho(float(mi_bits)), self._qx, self._qy,
                                  generator, self.device)

    def render(self, latent: torch.Tensor) -> torch.Tensor:
        """(n, d) latents -> (n, side, side) float32 images."""
        if self.kind == "gaussian2d":
            return render_gaussian(latent, self.side).to(torch.float32)
        return render_rectangles(to_rectangle(latent), self.side).to(torch.float32)

    def sample(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        lx, ly = self.latents(batch_size, mi_bits, generator)
        n = lx.shape[0]
        return self.render(lx).reshape(n, -1), self.render(ly).reshape(n, -1)

    def info(self) -> dict:
        return {"task": self.name, "family": "mutinfo images", "catalogue": "mutinfo-images",
                "catalogues": ["mutinfo-images"], "kind": self.kind, "side": self.side, "dim_x": self.dim_x,
                "dim_y": self.dim_y, "latent_dim": self.d, "max_mi_bits": self.max_mi_bits,
                "true_mi": f"-(d/2) log(1 - rho^2) of the d = {self.d} latent pairs (injective rendering)",
                "rendering": ("Gaussian bump, sigma 0.2" if self.kind == "gaussian2d"
                              else "anti-aliased rectangle, sides >= 0.2 of the image"), "stored_as": "float32"}


_DESC = {"gaussian2d": "mutinfo: Gaussian bump at a 2-d correlated-uniform latent, s x s image; any MI",
         "rectangles2d": "mutinfo: rectangle from a 4-d correlated-uniform latent, s x s image; any MI"}


def _factory(kind: str, side: int):
    def factory(device="cpu"):
        return MutinfoImageTask(kind, side, device=device)

    return factory


def _pattern(m: re.Match) -> Entry:
    kind, a, b = m.group(1).lower(), int(m.group(2)), int(m.group(3))
    if a != b:
        raise MibenchError(f"mutinfo images are square: use {kind}-{a}x{a}, not {a}x{b}")
    return Entry(f"mutinfo-{kind}-{a}x{a}", _DESC[kind].replace("s x s", f"{a} x {a}"), _factory(kind, a))


for _kind in ("gaussian2d", "rectangles2d"):
    for _side in DEFAULT_SIDES:
        _name = f"mutinfo-{_kind}-{_side}x{_side}"
        TASKS.add(_name, _DESC[_kind].replace("s x s", f"{_side} x {_side}"), _factory(_kind, _side))
        add_to_catalogue("mutinfo-images", _name)
TASKS.add_pattern(r"mutinfo-(gaussian2d|rectangles2d)-(\d+)x(\d+)",
                  "mutinfo-gaussian2d-<s>x<s>, mutinfo-rectangles2d-<s>x<s>  (mutinfo images at another side)",
                  _pattern)
