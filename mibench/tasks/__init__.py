"""Tasks with known ground-truth MI; ``TASKS`` maps names to factories ``f(device=..., **params)``."""
from mibench.tasks import (  # noqa: F401  (real-data tasks, register themselves)  # noqa: F401  (catalogues: BMI v1 / v2, mutinfo; register themselves)
    bmi_v1,
    bmi_v2,
    consistency,  # noqa: F401  (the self-consistency tests on real images, register themselves)
    distributions,  # noqa: F401  (the distributions family, registers itself)
    features,  # noqa: F401  (features:FILE.npz, the user's own data)
    gaussian,  # noqa: F401  (registers itself)
    label_channel,
    mixed,
    mutinfo_images,
    text,
    vision,
)
from mibench.tasks.base import Task, bsc_crossover, bsc_mi_bits, gaussian_mi_bits, gaussian_rho
from mibench.tasks.registry import TASKS, make_task

__all__ = ["TASKS", "Task", "bsc_crossover", "bsc_mi_bits", "gaussian_rho", "gaussian_mi_bits", "make_task"]
