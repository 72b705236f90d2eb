"""Critic registry: f(x, y) for all K^2 pairs of a batch -> a K x K score matrix.

Depth convention (as in the paper's public code): an MLP of depth d has an input layer, d hidden
width-w layers and an output layer, so the default joint critic (d = 2, w = 256) applies three
ReLU layers of width 256.  Every factory takes ``(dim_x, dim_y, hidden, layers, embed)``.
"""
from __future__ import annotations

from mibench.errors import MibenchError
from mibench.utils.registry import Registry

CRITICS: Registry = Registry("critic")

from mibench.critics.mlp import BilinearCritic, InnerCritic, JointCritic, SeparableCritic, mlp  # noqa: E402

DEFAULT_HIDDEN = 256
DEFAULT_LAYERS = 2
DEFAULT_EMBED = 32


@CRITICS.register("inner", "x^T y (no parameters; needs dim_x == dim_y)")
def _inner(dim_x, dim_y, hidden=DEFAULT_HIDDEN, layers=DEFAULT_LAYERS, embed=DEFAULT_EMBED):
    if dim_x != dim_y:
        raise MibenchError(f"the inner critic needs equal dimensions, got dim_x={dim_x}, dim_y={dim_y}; use bilinear, separable or joint")
    return InnerCritic()


@CRITICS.register("bilinear", "x^T W y with a trainable dim_x x dim_y matrix W")
def _bilinear(dim_x, dim_y, hidden=DEFAULT_HIDDEN, layers=DEFAULT_LAYERS, embed=DEFAULT_EMBED):
    return BilinearCritic(dim_x, dim_y)


@CRITICS.register("separable", "f(x)^T g(y): two MLPs (input + `layers` hidden of `hidden` + output) to an `embed`-dim space (default 32)")
def _separable(dim_x, dim_y, hidden=DEFAULT_HIDDEN, layers=DEFAULT_LAYERS, embed=DEFAULT_EMBED):
    return SeparableCritic(dim_x, dim_y, hidden, layers, embed)


@CRITICS.register("joint", "MLP on [x, y] for all K^2 pairs (input + `layers` hidden of `hidden` + output; default 3 ReLU layers of 256)", aliases=("concat",))
def _joint(dim_x, dim_y, hidden=DEFAULT_HIDDEN, layers=DEFAULT_LAYERS, embed=DEFAULT_EMBED):
    return JointCritic(dim_x, dim_y, hidden, layers)


def make_critic(name: str, dim_x: int, dim_y: int, hidden: int = DEFAULT_HIDDEN, layers: int = DEFAULT_LAYERS,
                embed: int = DEFAULT_EMBED):
    if hidden < 1 or layers < 0 or embed < 1:
        raise MibenchError(f"critic sizes must be positive (hidden={hidden}, layers={layers}, embed={embed})")
    return CRITICS.get(name).obj(dim_x, dim_y, hidden=hidden, layers=layers, embed=embed)


__all__ = ["CRITICS", "make_critic", "mlp", "InnerCritic", "BilinearCritic", "SeparableCritic", "JointCritic"]
