"""Tasks with known ground-truth MI; ``TASKS`` maps names to factories ``f(device=..., **params)``."""
from ..registry import Registry

TASKS: Registry = Registry("task")

from .base import Task, bsc_crossover, bsc_mi_bits, gaussian_rho, gaussian_mi_bits  # noqa: E402
from . import gaussian  # noqa: E402,F401  (registers itself)
from . import distributions  # noqa: E402,F401  (the distributions family, registers itself)
from . import vision, text, mixed  # noqa: E402,F401  (real-data tasks, register themselves)
from . import features  # noqa: E402,F401  (features:FILE.npz, the user's own data; issue 12)

__all__ = ["TASKS", "Task", "bsc_crossover", "bsc_mi_bits", "gaussian_rho", "gaussian_mi_bits", "make_task"]


def make_task(name: str, device="cpu", **params):
    """Build a task by registry name; unknown parameters are refused with one line."""
    import inspect

    from ..errors import MibenchError

    transform, layer = params.pop("transform", None), params.pop("layer", None)  # encoders (issue 6)
    if transform is not None or layer is not None:
        from .transformed import check_transform, wrap

        check_transform(transform, layer)  # bad names fail before any data is loaded
    entry = TASKS.get(name)
    factory = entry.obj
    accepted = inspect.signature(factory).parameters
    for key in params:
        if key not in accepted:
            ok = sorted(k for k in accepted if k != "device")
            raise MibenchError(f"task {entry.name!r} does not take {key!r}; it takes: {', '.join(ok) or 'nothing'}")
    task = factory(device=device, **params)
    return task if transform is None and layer is None else wrap(task, transform, layer)
