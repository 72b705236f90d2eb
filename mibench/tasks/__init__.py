"""Tasks with known ground-truth MI; ``TASKS`` maps names to factories ``f(device=..., **params)``."""
from mibench.tasks.base import Task, bsc_crossover, bsc_mi_bits, gaussian_mi_bits, gaussian_rho
from mibench.tasks.registry import TASKS, make_task

# the task modules register themselves on import, in this order (the order `mibench list` shows)
# isort: off
from mibench.tasks import gaussian  # noqa: F401, E402
from mibench.tasks import distributions  # noqa: F401, E402  (the distributions family)
from mibench.tasks import vision, text, mixed  # noqa: F401, E402  (real-data tasks)
from mibench.tasks import features  # noqa: F401, E402  (features:FILE.npz, the user's own data)
from mibench.tasks import bmi_v1, bmi_v2, mutinfo_images, label_channel  # noqa: F401, E402  (catalogues)
from mibench.tasks import consistency  # noqa: F401, E402  (the self-consistency tests on real images)
# isort: on

__all__ = ["TASKS", "Task", "bsc_crossover", "bsc_mi_bits", "gaussian_rho", "gaussian_mi_bits", "make_task"]
