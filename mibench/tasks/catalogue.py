"""Task catalogues: named collections of tasks taken over from other benchmarks, and the fixed-MI
task type most of them use.

Catalogues (:data:`CATALOGUES`, :func:`catalogues_of`, :func:`catalogue_tasks`):

``bmi-v1``          the 40 tasks of BMI's "Beyond Normal" benchmark (Czyż et al., NeurIPS 2023)
                    (:mod:`mibench.tasks.bmi_v1`)
``bmi-v2``          BMI's second list: its Bend-and-Mix mixture tasks next to the v1 tasks it keeps
                    (:mod:`mibench.tasks.bmi_v2`)
``mutinfo-images``  Butakov et al.'s ``mutinfo`` image tasks and the K-ary symmetric channel on class
                    labels (:mod:`mibench.tasks.mutinfo_images`, :mod:`mibench.tasks.label_channel`)
``lee-rhee``        the tasks of Lee & Rhee's suite (NeurIPS 2024 D&B), mibench's own: gaussian,
                    vision, text, mixed

A task's catalogue is in its ``info()["catalogue"]`` (the catalogue that defines it) and
``info()["catalogues"]`` (every catalogue that lists it); :func:`catalogues_of` answers the same
for any task name, including the Lee & Rhee tasks.

Fixed-MI tasks.  A BMI task is one distribution with one mutual information, while mibench's task
protocol samples at a requested level; so such a task holds exactly its level (``max_mi_bits``), which
runs use when no MI is given, and refuses every other in one line before a run starts (the protocols'
MI check consults :data:`mibench.tasks.base.FIXED_LEVELS`; ``sample`` checks again).  How a level is
given (``--mi 0.5963``, 4 significant digits or more): docs/tasks.md, "Catalogues".
"""
from __future__ import annotations

import torch

from mibench.errors import MibenchError
from mibench.tasks.base import FIXED_LEVELS, batch_count, check_fixed_level
from mibench.utils.units import LN2

LEE_RHEE_TASKS = ("gaussian", "vision", "text", "mixed")

#: catalogue -> task names, filled by the catalogue modules when they register their tasks
CATALOGUES: dict[str, list[str]] = {"bmi-v1": [], "bmi-v2": [], "mutinfo-images": [],
                                    "lee-rhee": list(LEE_RHEE_TASKS)}

CATALOGUE_DESCRIPTIONS = {
    "bmi-v1": "BMI v1, Czyż et al. NeurIPS 2023 'Beyond Normal' (40 low-dimensional tasks, BMI's ids)",
    "bmi-v2": "BMI v2 workflow: Bend-and-Mix mixture tasks plus the v1 tasks it keeps",
    "mutinfo-images": "mutinfo (Butakov et al.): images rendered from correlated latents; label channels",
    "lee-rhee": "Lee & Rhee, NeurIPS 2024 D&B: Gaussian, MNIST, IMDB, image-text",
}


def add_to_catalogue(catalogue: str, name: str) -> None:
    """Record ``name`` as a member of ``catalogue`` (once)."""
    if catalogue not in CATALOGUES:
        raise MibenchError(f"unknown catalogue {catalogue!r}; choose from: {', '.join(CATALOGUES)}")
    if name not in CATALOGUES[catalogue]:
        CATALOGUES[catalogue].append(name)


def catalogues_of(task_name: str) -> list[str]:
    """Every catalogue that lists ``task_name`` (exact registry name, case-insensitive), in the
    order of :data:`CATALOGUES`; ``[]`` for a task that belongs to none.

    Parameters
    ----------
    task_name : a task name as given to ``mibench run --task`` (pattern names such as
        ``mutinfo-gaussian2d-24x24`` belong to the catalogue of their family).
    """
    key = str(task_name).strip().lower()
    out = [c for c, names in CATALOGUES.items() if key in (n.lower() for n in names)]
    if not out:
        for prefix, cat in (("mutinfo-", "mutinfo-images"),):
            if key.startswith(prefix):
                out.append(cat)
    return out


def catalogue_tasks(catalogue: str) -> list[str]:
    """The task names of ``catalogue``, in the catalogue's own order.

    Parameters
    ----------
    catalogue : one of :data:`CATALOGUES` (``bmi-v1``, ``bmi-v2``, ``mutinfo-images``, ``lee-rhee``).
        (Importing this module imports :mod:`mibench.tasks` first, which registers every catalogue.)
    """
    key = str(catalogue).strip().lower()
    if key not in CATALOGUES:
        raise MibenchError(f"unknown catalogue {catalogue!r}; choose from: {', '.join(CATALOGUES)}")
    return list(CATALOGUES[key])


def fixed_mi_bits_text(mi_bits: float) -> str:
    """A fixed task's MI as ``--mi`` takes it (12 significant digits)."""
    return f"{mi_bits:.12g}"


class FixedMITask:
    """A task with one fixed distribution and so one true MI (see the module docstring).

    ``draw(n, generator) -> (x, y)`` returns float64 tensors (n, dim_x), (n, dim_y) on ``device``;
    samples are returned as float32.  ``mi_nats`` is the truth; ``truth`` says how it is known
    (closed form / Monte-Carlo) and ``mi_stderr_nats`` is the Monte-Carlo standard error (None for
    closed forms).
    """

    def __init__(self, name: str, dim_x: int, dim_y: int, mi_nats: float, draw, *, catalogue: str,
                 description: str, truth: str = "closed form", mi_stderr_nats: float | None = None,
                 params: dict | None = None, device="cpu"):
        self.name, self.dim_x, self.dim_y = name, int(dim_x), int(dim_y)
        self.mi_nats = float(mi_nats)
        self.mi_bits = self.mi_nats / LN2
        self._draw = draw
        self.catalogue, self.description, self.truth = catalogue, description, truth
        self.mi_stderr_nats = mi_stderr_nats
        self.params = dict(params or {})
        self.device = torch.device(device)
        FIXED_LEVELS[name] = self.mi_bits     # both protocols refuse other levels before a run starts

    @property
    def max_mi_bits(self) -> float:
        return self.mi_bits

    def check_level(self, mi_bits: float) -> float:
        """The task's own MI for a request that is it at the printed precision; any other level is
        refused in one line."""
        return check_fixed_level(self.name, float(mi_bits))

    def sample(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        self.check_level(float(mi_bits))
        n = batch_count(batch_size)
        x, y = self._draw(n, generator)
        return x.to(torch.float32), y.to(torch.float32)

    def info(self) -> dict:
        out = {"task": self.name, "family": "catalogue", "catalogue": self.catalogue,
               "catalogues": catalogues_of(self.name) or [self.catalogue], "dim_x": self.dim_x,
               "dim_y": self.dim_y, "description": self.description, "true_mi_nats": self.mi_nats,
               "true_mi_bits": self.mi_bits, "mi_truth": self.truth, "fixed_mi": True}
        if self.mi_stderr_nats is not None:
            out["mi_mc_stderr_nats"] = self.mi_stderr_nats
        if self.params:
            out["params"] = self.params
        return out


def task_list_lines() -> list[str]:
    """``mibench list``'s task section: tasks outside any catalogue and the name patterns first (as
    before), then one block per catalogue with its tasks' one-line descriptions."""
    from mibench.tasks.registry import TASKS

    members = {n.lower() for names in CATALOGUES.values() for n in names if n not in LEE_RHEE_TASKS}
    entries = {e.name.lower(): e for e in TASKS}
    lines = [f"  {e.name:<12} {e.description}" for e in TASKS if e.name.lower() not in members]
    lines += [f"  {h}" for h in TASKS.patterns_help()]
    for cat, names in CATALOGUES.items():
        lines.append(f"catalogue {cat}: {CATALOGUE_DESCRIPTIONS[cat]} ({len(names)} tasks; "
                     f"mibench sweep --preset {cat})")
        width = max(len(n) for n in names) + 1
        for n in names:
            e = entries.get(n.lower())
            lines.append(f"  {n:<{width}} {e.description if e and cat != 'lee-rhee' else '(listed above)'}")
    return lines
