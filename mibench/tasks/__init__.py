"""Tasks with known ground-truth MI; ``TASKS`` maps names to factories ``f(device=..., **params)``."""
from mibench.tasks.registry import TASKS, make_task
from mibench.tasks.base import Task, bsc_crossover, bsc_mi_bits, gaussian_rho, gaussian_mi_bits
from mibench.tasks import gaussian  # noqa: F401  (registers itself)
from mibench.tasks import distributions  # noqa: F401  (the distributions family, registers itself)
from mibench.tasks import vision, text, mixed  # noqa: F401  (real-data tasks, register themselves)
from mibench.tasks import features  # noqa: F401  (features:FILE.npz, the user's own data)
from mibench.tasks import bmi_v1, bmi_v2, mutinfo_images, label_channel  # noqa: F401  (catalogues: BMI v1 / v2, mutinfo; register themselves)
from mibench.tasks import consistency  # noqa: F401  (the self-consistency tests on real images, register themselves)

__all__ = ["TASKS", "Task", "bsc_crossover", "bsc_mi_bits", "gaussian_rho", "gaussian_mi_bits", "make_task"]
