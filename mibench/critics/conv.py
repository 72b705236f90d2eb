"""Convolutional critics for image-shaped inputs: the inputs stay flattened, as every task
hands them over, and each side is viewed as a ``C x H x W`` image inside the critic.

Each side has a small CNN encoder (:class:`ConvEncoder`): a 4 x 4, stride-4 patch stem for images of
16 pixels a side or more, then 3 x 3 stride-2 convolutions of :data:`CHANNELS` channels until the
shorter side is at most :data:`MIN_SIDE` pixels, ReLU after each, then one linear layer with ReLU to
``hidden`` features.  No batch normalisation, so a score depends on its own pair only (the score
matrix of a batch is the scores of its pairs).  Two heads:

``conv``        f(x)^T g(y): each encoder followed by a linear layer to ``embed`` dimensions (the
                separable form: the encoders run once per image, K + K images, and the K x K scores
                are one matrix product).
``conv-joint``  the joint head: an MLP on the concatenated features [f(x_i), g(y_j)] for all K^2
                pairs, evaluated as :class:`mibench.critics.mlp.JointCritic` is (first layer split).

``conv`` is the separable form because on vision 64 x 64 it was both faster per step and less biased
than the joint MLP critic, while the joint head cost more and did not pay at a CPU-sized budget
(docs/self-consistency.md, "conv vs the joint MLP on vision 64×64").

The image shape comes from the task (:func:`mibench.tasks.shapes.image_shapes`) where there is one;
otherwise it is read off the dimension (:func:`infer_image_shape`: C x s x s with C = 1, 3, 2, 6 or
4, first that fits, s >= 4), or given in the name: ``conv-1x28x28`` / ``conv-joint-3x32x32``.  A
side without an image shape (the text side of the image-text task) gets an MLP encoder to the same
features.  Shapes, costs and results: docs/self-consistency.md, "The conv critic".
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from mibench.critics.kernels import linear as _linear
from mibench.critics.mlp import Critic, JointCritic
from mibench.errors import MibenchError

#: channels of the stride-2 stages after the stem
CHANNELS = 32
#: most channels of the patch stem
STEM_MAX = 64
#: images whose shorter side has at least this many pixels start with the 4 x 4, stride-4 patch stem
STEM_MIN_SIDE = 16
#: stages halve the image until its shorter side is at most this many pixels
MIN_SIDE = 4
#: the channel counts :func:`infer_image_shape` tries, in this order
INFER_CHANNELS = (1, 3, 2, 6, 4)
#: stages at most (a 1024 x 1024 image ends at 4 x 4 after the stem and 6)
MAX_STAGES = 8


def infer_image_shape(dim: int) -> tuple[int, int, int] | None:
    """``(C, s, s)`` with C * s^2 = ``dim`` for the first C of :data:`INFER_CHANNELS` that gives a
    whole side s >= 4, else None (784 -> 1 x 28 x 28, 3072 -> 3 x 32 x 32, 1568 -> 2 x 28 x 28)."""
    for c in INFER_CHANNELS:
        if dim % c:
            continue
        s = math.isqrt(dim // c)
        if s >= MIN_SIDE and s * s * c == dim:
            return c, s, s
    return None


def parse_shape(text: str) -> tuple[int, int, int]:
    """``"3x32x32"`` -> (3, 32, 32); a bad shape is one line."""
    try:
        c, h, w = (int(p) for p in str(text).lower().split("x"))
    except ValueError:
        raise MibenchError(f"bad image shape {text!r}: use CxHxW, e.g. 1x28x28 or 3x32x32") from None
    if min(c, h, w) < 1:
        raise MibenchError(f"bad image shape {text!r}: every size must be positive")
    return c, h, w


def resolve_shapes(dim_x: int, dim_y: int, shapes=None) -> tuple:
    """The image shape of each side (or None for a side that is not an image).

    Parameters
    ----------
    dim_x, dim_y : the flattened dimensions the critic receives.
    shapes : ``(shape_x, shape_y)`` from the task (either may be None), or None to read them off the
        dimensions (:func:`infer_image_shape`).  A shape must hold exactly its side's dimension.
    """
    if shapes is None:
        shapes = (infer_image_shape(dim_x), infer_image_shape(dim_y))
        if shapes == (None, None):
            raise MibenchError(f"the conv critic needs image-shaped inputs; {dim_x} and {dim_y} columns are not "
                               "C x s x s images (pass the images as (n, C, H, W) arrays or name the shape: "
                               "critic='conv-CxHxW')")
    shapes = tuple(None if s is None else tuple(int(v) for v in s) for s in shapes)
    if shapes == (None, None):
        raise MibenchError("the conv critic needs image inputs, and neither X nor Y of this task is an image; "
                           "use --critic joint (or separable, bilinear, inner)")
    for side, dim, shape in (("x", dim_x, shapes[0]), ("y", dim_y, shapes[1])):
        if shape is not None and (len(shape) != 3 or math.prod(shape) != dim):
            raise MibenchError(f"image shape {'x'.join(map(str, shape))} does not hold {side}'s {dim} values")
    return shapes


def he_init(module: nn.Module) -> None:
    """He (Kaiming) uniform weights for ReLU layers and zero biases: the encoder's activations keep
    their scale through its layers.  (PyTorch's default init shrinks them by about sqrt(3) per layer,
    and with it a conv critic can stay at 0 bits for hundreds of steps: docs/self-consistency.md,
    "The conv critic".)"""
    for m in module.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.kaiming_uniform_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)


def stem_channels(c: int) -> int:
    """Channels of the patch stem for a ``c``-channel image (32 for 1 or 2 channels, 48 for RGB)."""
    return min(STEM_MAX, max(CHANNELS, 16 * c))


class Stage(NamedTuple):
    """One convolution of :class:`ConvEncoder`: channels in and out, kernel, stride, padding, and
    the (C, H, W) shape it outputs."""

    c_in: int
    c_out: int
    kernel: int
    stride: int
    padding: int
    out_shape: tuple[int, int, int]


class EncoderPlan(NamedTuple):
    """:class:`ConvEncoder`'s layout for one image shape: the padding of the input (``F.pad``'s
    order), the convolutions, and the shape the last one outputs."""

    pad: tuple[int, int, int, int]
    stages: tuple[Stage, ...]
    out_shape: tuple[int, int, int]


def encoder_plan(shape: tuple[int, int, int]) -> EncoderPlan:
    """The stages :class:`ConvEncoder` builds for ``shape`` (C, H, W), computed once here so that the
    encoder and its declared sizes (:func:`encoder_parameters`, :func:`encoder_activations`) agree."""
    c, h, w = shape
    stages: list[Stage] = []
    pad = (0, 0, 0, 0)
    if min(h, w) >= STEM_MIN_SIDE:
        ph, pw = -h % 4, -w % 4
        pad = (0, pw, 0, ph)
        c_out = stem_channels(c)
        c, h, w = c_out, (h + ph) // 4, (w + pw) // 4
        stages.append(Stage(shape[0], c_out, 4, 4, 0, (c, h, w)))
    while min(h, w) > MIN_SIDE and len(stages) < MAX_STAGES:
        c_in, c, h, w = c, CHANNELS, (h + 1) // 2, (w + 1) // 2
        stages.append(Stage(c_in, CHANNELS, 3, 2, 1, (c, h, w)))
    return EncoderPlan(pad, tuple(stages), (c, h, w))


def encoder_parameters(shape, dim: int, features: int) -> int:
    """Parameters of :func:`encoder`'s module for one side (an image ``shape`` or None, ``dim`` columns)."""
    if shape is None:
        return dim * features + features
    plan = encoder_plan(tuple(shape))
    convs = sum(s.c_in * s.c_out * s.kernel * s.kernel + s.c_out for s in plan.stages)
    return convs + math.prod(plan.out_shape) * features + features


def encoder_activations(shape, features: int) -> int:
    """Activation values :func:`encoder`'s module holds per input row: the padded image (where the stem
    pads it), each convolution's output and the features."""
    if shape is None:
        return features
    c, h, w = shape
    plan = encoder_plan(tuple(shape))
    padded = c * (h + plan.pad[3]) * (w + plan.pad[1]) if any(plan.pad) else 0
    return padded + sum(math.prod(s.out_shape) for s in plan.stages) + features


class ConvEncoder(nn.Module):
    """Flattened images (N, C*H*W) -> (N, ``features``).

    Images with a shorter side of at least :data:`STEM_MIN_SIDE` pixels start with a patch stem (a
    4 x 4 convolution with stride 4, :func:`stem_channels` channels; the image zero-padded at the
    bottom and right to a multiple of 4, so no pixel is dropped); then 3 x 3 stride-2 convolutions
    (padding 1, ``ceil(n / 2)``) of :data:`CHANNELS` channels until the shorter side is at most
    :data:`MIN_SIDE`; ReLU after each; then linear + ReLU to ``features``.  64 x 64: 16, 8, 4;
    28 x 28: 7, 4; 32 x 32: 8, 4; 16 x 16: 4; 8 x 8: 4."""

    def __init__(self, shape: tuple[int, int, int], features: int):
        super().__init__()
        self.shape = tuple(shape)
        plan = encoder_plan(self.shape)
        self.pad = plan.pad
        self.convs = nn.ModuleList(nn.Conv2d(s.c_in, s.c_out, kernel_size=s.kernel, stride=s.stride, padding=s.padding)
                                   for s in plan.stages)
        self.out_shape = plan.out_shape
        self.proj = nn.Linear(math.prod(plan.out_shape), features)
        he_init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.reshape(x.shape[0], *self.shape)
        if any(self.pad):
            h = F.pad(h, self.pad)
        for conv in self.convs:
            h = torch.relu(conv(h))
        return _linear(h.flatten(1), self.proj.weight, self.proj.bias, relu=True)


class MLPEncoder(nn.Module):
    """A non-image side: one linear layer + ReLU to ``features`` (the conv encoder's last step)."""

    def __init__(self, dim: int, features: int):
        super().__init__()
        self.proj = nn.Linear(dim, features)
        he_init(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _linear(x, self.proj.weight, self.proj.bias, relu=True)


def encoder(shape, dim: int, features: int) -> nn.Module:
    return ConvEncoder(shape, features) if shape is not None else MLPEncoder(dim, features)


class ConvJointCritic(Critic):
    """``conv-joint``: CNN features of each image, then the joint MLP head on every pair of features."""

    takes_shapes = True

    @classmethod
    def build(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return cls(dim_x, dim_y, hidden, layers, resolve_shapes(dim_x, dim_y, shapes))

    @classmethod
    def parameter_count(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        sx, sy = resolve_shapes(dim_x, dim_y, shapes)
        return (encoder_parameters(sx, dim_x, hidden) + encoder_parameters(sy, dim_y, hidden)
                + JointCritic.parameter_count(hidden, hidden, hidden, layers, embed))

    @classmethod
    def activation_count(cls, batch, pairs_per_row, dim_x, dim_y, hidden, layers, embed, shapes=None):
        sx, sy = resolve_shapes(dim_x, dim_y, shapes)
        return (batch * (encoder_activations(sx, hidden) + encoder_activations(sy, hidden))
                + JointCritic.activation_count(batch, pairs_per_row, hidden, hidden, hidden, layers, embed))

    def __init__(self, dim_x: int, dim_y: int, hidden: int, layers: int, shapes):
        super().__init__()
        self.shapes = shapes
        self.f = encoder(shapes[0], dim_x, hidden)
        self.g = encoder(shapes[1], dim_y, hidden)
        self.head = JointCritic(hidden, hidden, hidden, layers)

    def forward(self, x, y):
        return self.head(self.f(x), self.g(y))

    def block_scores(self, xb, yb):
        """All G blocks: the G * B images of each side through its encoder at once, then the head's
        batched pass over every block's pairs."""
        g, b = xb.shape[0], xb.shape[1]
        fx = self.f(xb.reshape(g * b, -1)).view(g, b, -1)
        fy = self.g(yb.reshape(g * b, -1)).view(g, b, -1)
        return self.head.block_scores(fx, fy)


class ConvSeparableCritic(Critic):
    """``conv``: f(x)^T g(y) with f, g a CNN encoder and a linear layer to ``embed``."""

    takes_shapes = True

    @classmethod
    def build(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        return cls(dim_x, dim_y, hidden, embed, resolve_shapes(dim_x, dim_y, shapes))

    @classmethod
    def parameter_count(cls, dim_x, dim_y, hidden, layers, embed, shapes=None):
        sx, sy = resolve_shapes(dim_x, dim_y, shapes)
        return encoder_parameters(sx, dim_x, hidden) + encoder_parameters(sy, dim_y, hidden) + 2 * (hidden + 1) * embed

    @classmethod
    def activation_count(cls, batch, pairs_per_row, dim_x, dim_y, hidden, layers, embed, shapes=None):
        sx, sy = resolve_shapes(dim_x, dim_y, shapes)
        return batch * (encoder_activations(sx, hidden) + encoder_activations(sy, hidden) + 2 * embed)

    def __init__(self, dim_x: int, dim_y: int, hidden: int, embed: int, shapes):
        super().__init__()
        self.shapes = shapes
        self.f = encoder(shapes[0], dim_x, hidden)
        self.g = encoder(shapes[1], dim_y, hidden)
        self.fx_out = nn.Linear(hidden, embed)
        self.gy_out = nn.Linear(hidden, embed)

    def embed_x(self, x):
        return _linear(self.f(x), self.fx_out.weight, self.fx_out.bias)

    def embed_y(self, y):
        return _linear(self.g(y), self.gy_out.weight, self.gy_out.bias)

    def forward(self, x, y):
        return self.embed_x(x) @ self.embed_y(y).T

    def block_scores(self, xb, yb):
        g, b = xb.shape[0], xb.shape[1]
        ex = self.embed_x(xb.reshape(g * b, -1)).view(g, b, -1)
        ey = self.embed_y(yb.reshape(g * b, -1)).view(g, b, -1)
        return torch.bmm(ex, ey.transpose(1, 2))
