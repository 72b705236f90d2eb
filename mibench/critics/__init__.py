"""Critic registry: f(x, y) for all K^2 pairs of a batch -> a K x K score matrix.

Depth convention (as in the paper's public code): an MLP of depth d has an input layer, d hidden
width-w layers and an output layer, so the default joint critic (d = 2, w = 256) applies three
ReLU layers of width 256.  Every entry is a :class:`CriticSpec` of a critic class, built from
``(dim_x, dim_y, hidden, layers, embed, shapes)`` by the class's ``build``; the class also declares
its parameter count and a training step's activations (:func:`critic_sizes`).
"""
from __future__ import annotations

from dataclasses import dataclass

from mibench.critics.conv import ConvJointCritic, ConvSeparableCritic, parse_shape
from mibench.critics.mlp import BilinearCritic, Critic, InnerCritic, JointCritic, SeparableCritic, mlp
from mibench.errors import MibenchError
from mibench.utils.registry import Entry, Registry

CRITICS: Registry = Registry("critic")

DEFAULT_HIDDEN = 256
DEFAULT_LAYERS = 2
DEFAULT_EMBED = 32


@dataclass(frozen=True)
class CriticSpec:
    """A registry entry's object: the critic class, and for ``conv-CxHxW`` the image shape the name
    gives both sides (it overrides the task's).  Called like a factory, it builds the critic."""

    cls: type[Critic]
    shape: tuple[int, int, int] | None = None

    @property
    def takes_shapes(self) -> bool:
        return self.cls.takes_shapes

    def shapes(self, shapes=None):
        return (self.shape, self.shape) if self.shape is not None else shapes

    def __call__(self, dim_x, dim_y, hidden=DEFAULT_HIDDEN, layers=DEFAULT_LAYERS, embed=DEFAULT_EMBED, shapes=None):
        return self.cls.build(dim_x, dim_y, hidden, layers, embed, self.shapes(shapes))


@dataclass(frozen=True)
class CriticSizes:
    """What a critic of one registered kind will hold on inputs of ``dims`` (and image ``shapes``),
    read off its class without building it; what :func:`mibench.utils.limits.critic_needs` asks."""

    spec: CriticSpec
    dims: tuple[int, int]
    shapes: tuple | None = None

    def parameters(self, hidden: int, layers: int, embed: int) -> int:
        return self.spec.cls.parameter_count(*self.dims, hidden, layers, embed, self.spec.shapes(self.shapes))

    def activations(self, batch: int, pairs_per_row: int, hidden: int, layers: int, embed: int) -> int:
        return self.spec.cls.activation_count(batch, pairs_per_row, *self.dims, hidden, layers, embed,
                                              self.spec.shapes(self.shapes))


CRITICS.add("inner", "x^T y (no parameters; needs dim_x == dim_y)", CriticSpec(InnerCritic))
CRITICS.add("bilinear", "x^T W y with a trainable dim_x x dim_y matrix W", CriticSpec(BilinearCritic))
CRITICS.add("separable", "f(x)^T g(y): two MLPs (input + `layers` hidden of `hidden` + output) to an "
            "`embed`-dim space (default 32)", CriticSpec(SeparableCritic))
CRITICS.add("joint", "MLP on [x, y] for all K^2 pairs (input + `layers` hidden of `hidden` + output; default "
            "3 ReLU layers of 256)", CriticSpec(JointCritic), aliases=("concat",))
CRITICS.add("conv", "images: f(x)^T g(y), CNN encoders (patch stem, stride-2 convolutions) to `hidden` features, "
            "then linear to `embed`; image tasks only", CriticSpec(ConvSeparableCritic))
CRITICS.add("conv-joint", "images: CNN encoders to `hidden` features, joint MLP head on all K^2 feature pairs "
            "(`layers` hidden of `hidden`); image tasks only", CriticSpec(ConvJointCritic))


def _conv_pattern(m):
    joint, shape = bool(m.group(1)), parse_shape(m.group(2))
    name = f"conv{'-joint' if joint else ''}-{'x'.join(map(str, shape))}"
    return Entry(name, f"the {name.rsplit('-', 1)[0]} critic on {m.group(2)} images (both sides)",
                 CriticSpec(ConvJointCritic if joint else ConvSeparableCritic, shape))


CRITICS.add_pattern(r"conv(-joint)?-(\d+x\d+x\d+)", "conv-<C>x<H>x<W>, conv-joint-<C>x<H>x<W>  (the image "
                    "shape named, for flattened inputs)", _conv_pattern)


def takes_shapes(name: str) -> bool:
    """Whether critic ``name`` reads its inputs as images (the conv critics)."""
    return CRITICS.get(name).obj.takes_shapes


def critic_sizes(name: str, dim_x: int, dim_y: int, shapes=None) -> CriticSizes:
    """The declared sizes of critic ``name`` on inputs of ``dim_x`` and ``dim_y`` columns (``shapes``
    as for :func:`make_critic`), for the memory checks before anything is built."""
    return CriticSizes(CRITICS.get(name).obj, (int(dim_x), int(dim_y)), shapes)


def make_critic(name: str, dim_x: int, dim_y: int, hidden: int = DEFAULT_HIDDEN, layers: int = DEFAULT_LAYERS,
                embed: int = DEFAULT_EMBED, shapes=None):
    """A critic for inputs of ``dim_x`` and ``dim_y`` columns.  ``shapes``: ``(shape_x, shape_y)``, each
    side's image shape (C, H, W) or None, for the critics that read images (``conv``; from the task,
    :func:`mibench.tasks.shapes.image_shapes`); None lets them read the shape off the dimensions."""
    if hidden < 1 or layers < 0 or embed < 1:
        raise MibenchError(f"critic sizes must be positive (hidden={hidden}, layers={layers}, embed={embed})")
    return CRITICS.get(name).obj(dim_x, dim_y, hidden=hidden, layers=layers, embed=embed, shapes=shapes)


__all__ = ["CRITICS", "make_critic", "takes_shapes", "critic_sizes", "CriticSpec", "CriticSizes", "mlp", "Critic",
           "InnerCritic", "BilinearCritic", "SeparableCritic", "JointCritic", "ConvJointCritic", "ConvSeparableCritic"]
