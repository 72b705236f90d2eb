"""mutinfo image tasks (mibench/tasks/mutinfo_images.py): the rendering is injective at the stored
(float32) precision, so the latents' closed-form MI is the images' MI."""
import math

import numpy as np
import pytest
import torch

from mibench.errors import MibenchError
from mibench.tasks import make_task
from mibench.tasks.mutinfo_images import MAX_MI_BITS, decode_latents, from_rectangle

NAMES = ["mutinfo-gaussian2d-16x16", "mutinfo-gaussian2d-32x32", "mutinfo-rectangles2d-16x16",
         "mutinfo-rectangles2d-32x32"]
#: measured decoding error from float32 images: 1e-9 (bumps), 7e-7 (rectangles); 1e-5 leaves room
DECODE_TOL = 1e-5


@pytest.mark.parametrize("name", NAMES)
def test_latents_are_recovered_from_the_stored_images(name):
    t = make_task(name)
    g = torch.Generator().manual_seed(3)
    for bits in (0.0, 3.0, MAX_MI_BITS):
        lx, ly = t.latents(3000, bits, g)
        for lat in (lx, ly):
            img = t.render(lat)
            assert img.dtype == torch.float32 and img.shape == (3000, t.side, t.side)
            assert (decode_latents(t.kind, img) - lat).abs().max() < DECODE_TOL
            flat = img.reshape(len(img), -1).numpy()
            assert len({row.tobytes() for row in flat}) == len(flat)   # distinct latents, distinct images
    x, y = t.sample(5, 1.0, g)
    assert x.shape == y.shape == (5, t.side * t.side)


def test_rectangle_edges_on_pixel_boundaries_decode_exactly():
    t = make_task("mutinfo-rectangles2d-16x16")
    corners = torch.tensor([[0.0, 0.5, 0.25, 1.0], [0.125, 0.375, 0.0, 0.8125], [0.0, 1.0, 0.0, 1.0],
                            [0.8 - 1e-9, 1.0, 0.3, 0.5 + 1e-9]], dtype=torch.float64)
    u = from_rectangle(corners)
    assert (decode_latents("rectangles2d", t.render(u)) - u).abs().max() < DECODE_TOL


@pytest.mark.parametrize("name", ["mutinfo-gaussian2d-16x16", "mutinfo-rectangles2d-16x16"])
def test_latent_mi_is_the_requested_level(name):
    """Gaussianised latents (Phi^-1) of 200,000 pairs: the Gaussian MI of their sample covariance is
    the requested level (closed form -(d/2) log(1 - rho^2)) within 0.01 nats (its sd here is ~0.002)."""
    t = make_task(name)
    for bits in (0.5, 4.0):
        lx, ly = t.latents(200_000, bits, torch.Generator().manual_seed(11))
        z = torch.special.ndtri(torch.cat([lx, ly], 1)).numpy()
        c = np.cov(z.T)
        d = t.d
        ld = lambda m: np.linalg.slogdet(m)[1]  # noqa: E731
        est = 0.5 * (ld(c[:d, :d]) + ld(c[d:, d:]) - ld(c))
        assert abs(est - bits * math.log(2)) < 0.01, (name, bits, est)


def test_bad_parameters_are_refused_in_one_line():
    for name, match in (("mutinfo-rectangles2d-8x8", "injective"), ("mutinfo-rectangles2d-11x11", "injective"),
                        ("mutinfo-gaussian2d-16x20", "square"),
                        ("mutinfo-gaussian2d-2x2", "side")):
        with pytest.raises(MibenchError, match=match) as e:
            make_task(name)
        assert "\n" not in str(e.value)
    t = make_task("mutinfo-gaussian2d-24x24")
    assert t.dim_x == 576 and t.info()["catalogue"] == "mutinfo-images"
    with pytest.raises(MibenchError, match="at most"):
        t.sample(4, MAX_MI_BITS + 1, torch.Generator())
