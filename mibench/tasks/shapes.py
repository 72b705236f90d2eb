"""Which sides of a task are images, and their shape: what an image critic (``--critic conv``,
:mod:`mibench.critics.conv`) needs to view the flattened samples as ``C x H x W`` images.

Every task samples flattened rows (the task protocol, :mod:`mibench.tasks.base`); a task says that a
side is an image by an ``image_shapes`` attribute, ``(shape_x, shape_y)`` with each shape a
``(C, H, W)`` tuple or None (the self-consistency tasks, :mod:`mibench.tasks.consistency`, do), or
is one of the image tasks known here: vision (``layout`` channels x ``side`` x ``side``, nuisance
included), the image side of the image-text task, mutinfo's images (1 x s x s) and the label
channel (MNIST 1 x 28 x 28, CIFAR-10 3 x 32 x 32).  Every other task (Gaussian, text, catalogue
tasks, a task seen through an encoder) has no image side.
"""
from __future__ import annotations

import math

from mibench.errors import MibenchError


def _checked(task, shapes) -> tuple:
    out = []
    for shape, dim in zip(shapes, (task.dim_x, task.dim_y)):
        if shape is not None:
            shape = tuple(int(v) for v in shape)
            if len(shape) != 3 or math.prod(shape) != int(dim):
                raise MibenchError(f"task {task.name!r} declares image shape {shape} for {dim} values")
        out.append(shape)
    return tuple(out)


def image_shapes(task) -> tuple:
    """``(shape_x, shape_y)``: each side's image shape ``(C, H, W)``, or None for a side that is not
    an image (module docstring)."""
    from mibench.tasks.label_channel import LabelChannelTask
    from mibench.tasks.mutinfo_images import MutinfoImageTask

    declared = getattr(task, "image_shapes", None)
    if declared is not None:
        return _checked(task, declared)
    name = getattr(task, "name", "")
    if name in ("vision", "mixed") and hasattr(task, "layout") and hasattr(task, "side"):
        image = (int(task.layout[0]), int(task.side), int(task.side))
        return _checked(task, (image, image if name == "vision" else None))
    if isinstance(task, MutinfoImageTask):
        return _checked(task, ((1, task.side, task.side),) * 2)
    if isinstance(task, LabelChannelTask):
        item = tuple(int(v) for v in task.items.shape[1:])
        image = item if len(item) == 3 else (1, *item)
        return _checked(task, (image, image))
    return None, None


def is_image_task(task) -> bool:
    """Whether X or Y of ``task`` is an image (:func:`image_shapes`)."""
    return image_shapes(task) != (None, None)


def check_critic_for_task(critic: str, task) -> tuple | None:
    """The image shapes an image critic (``conv``) gets from ``task``; refused in one line for a task
    with no image side.  None for the other critics (they take the flattened rows)."""
    from mibench.critics import takes_shapes

    if not takes_shapes(critic):
        return None
    shapes = image_shapes(task)
    if shapes == (None, None):
        raise MibenchError(f"--critic {critic} reads images, and task {task.name!r} has none (image tasks: vision, "
                           "mixed's image side, mutinfo images, the label channels, the self-consistency tasks); "
                           "use --critic joint")
    return shapes
