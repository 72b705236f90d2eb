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


from mibench.critics.conv import ConvJointCritic, ConvSeparableCritic, parse_shape, resolve_shapes  # noqa: E402


def _conv_factory(separable: bool, fixed=None):
    """A conv critic factory; ``fixed``: the image shape of both sides, from the name (conv-1x28x28)."""
    def factory(dim_x, dim_y, hidden=DEFAULT_HIDDEN, layers=DEFAULT_LAYERS, embed=DEFAULT_EMBED, shapes=None):
        shapes = resolve_shapes(dim_x, dim_y, (fixed, fixed) if fixed is not None else shapes)
        if separable:
            return ConvSeparableCritic(dim_x, dim_y, hidden, embed, shapes)
        return ConvJointCritic(dim_x, dim_y, hidden, layers, shapes)

    factory.takes_shapes = True     # make_critic hands it the task's image shapes
    return factory


CRITICS.add("conv", "images: f(x)^T g(y), CNN encoders (patch stem, stride-2 convolutions) to `hidden` features, "
            "then linear to `embed`; image tasks only", _conv_factory(True))
CRITICS.add("conv-joint", "images: CNN encoders to `hidden` features, joint MLP head on all K^2 feature pairs "
            "(`layers` hidden of `hidden`); image tasks only", _conv_factory(False))


def _conv_pattern(m):
    from mibench.utils.registry import Entry

    joint, shape = bool(m.group(1)), parse_shape(m.group(2))
    name = f"conv{'-joint' if joint else ''}-{'x'.join(map(str, shape))}"
    return Entry(name, f"the {name.rsplit('-', 1)[0]} critic on {m.group(2)} images (both sides)",
                 _conv_factory(not joint, shape))


CRITICS.add_pattern(r"conv(-joint)?-(\d+x\d+x\d+)", "conv-<C>x<H>x<W>, conv-joint-<C>x<H>x<W>  (the image "
                    "shape named, for flattened inputs)", _conv_pattern)


def takes_shapes(name: str) -> bool:
    """Whether critic ``name`` reads its inputs as images (the conv critics)."""
    return bool(getattr(CRITICS.get(name).obj, "takes_shapes", False))


def make_critic(name: str, dim_x: int, dim_y: int, hidden: int = DEFAULT_HIDDEN, layers: int = DEFAULT_LAYERS,
                embed: int = DEFAULT_EMBED, shapes=None):
    """A critic for inputs of ``dim_x`` and ``dim_y`` columns.  ``shapes``: ``(shape_x, shape_y)``, each
    side's image shape (C, H, W) or None, for the critics that read images (``conv``; from the task,
    :func:`mibench.tasks.shapes.image_shapes`); None lets them read the shape off the dimensions."""
    if hidden < 1 or layers < 0 or embed < 1:
        raise MibenchError(f"critic sizes must be positive (hidden={hidden}, layers={layers}, embed={embed})")
    factory = CRITICS.get(name).obj
    if getattr(factory, "takes_shapes", False):
        return factory(dim_x, dim_y, hidden=hidden, layers=layers, embed=embed, shapes=shapes)
    return factory(dim_x, dim_y, hidden=hidden, layers=layers, embed=embed)


__all__ = ["CRITICS", "make_critic", "takes_shapes", "mlp", "InnerCritic", "BilinearCritic", "SeparableCritic", "JointCritic",
           "ConvJointCritic", "ConvSeparableCritic"]
