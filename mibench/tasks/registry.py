"""The task registry: ``TASKS`` maps names to factories ``f(device=..., **params)``; :func:`make_task`
builds one (task modules register themselves by importing ``TASKS`` from here)."""
from __future__ import annotations

from mibench.utils.checks import check_task_params
from mibench.utils.registry import Registry

TASKS: Registry = Registry("task")


def make_task(name: str, device="cpu", **params):
    """Build a task by registry name; unknown parameters are refused with one line.

    Parameters
    ----------
    name : a registered task name (``mibench list``) or a pattern such as ``features:FILE.npz``.
    device : the torch device the task samples on.
    **params : the task's parameters; ``transform`` / ``layer`` wrap the task in an encoder
        (:mod:`mibench.tasks.transformed`).
    """
    transform, layer = params.pop("transform", None), params.pop("layer", None)
    if transform is not None or layer is not None:
        from mibench.tasks.transformed import check_transform, wrap

        check_transform(transform, layer)  # bad names fail before any data is loaded
    entry = TASKS.get(name)
    params = check_task_params(entry.name, entry.obj, params, passthrough=())
    task = entry.obj(device=device, **params)
    return task if transform is None and layer is None else wrap(task, transform, layer)
