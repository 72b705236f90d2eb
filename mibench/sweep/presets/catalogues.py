"""Sweep presets for the task catalogues (:mod:`mibench.tasks.catalogue`), merged into
:data:`mibench.sweep.presets.PRESETS`.  Each runs one catalogue under the sample protocol (``n`` pairs per
dataset, one estimate per estimator, dataset and seed):

* ``bmi-v1``: the 40 BMI v1 tasks, each at its own MI; full = BMI's protocol (its workflow
  ``benchmark/v1``: n = 5,000, seeds 0-9); quick = 2 seeds.
* ``bmi-v2``: BMI's v2 list (Bend-and-Mix mixtures and the v1 tasks it keeps); full = its workflow
  (n = 5,000, seeds 0-2); quick = the mixtures alone, 2 seeds.
* ``mutinfo-images``: mutinfo's image tasks at its MI grid (0.1, 1, 2.5, 5, 7.5, 10 nats; 16 x 16
  and 32 x 32; n = 10,000; seeds 42-51) and the label channel on MNIST / CIFAR-10 (0.5 - 2 nats);
  quick = the same grid without the CIFAR-10 channel, 2 seeds, the quick estimators.
* ``lee-rhee``: mibench's own Lee & Rhee tasks under the sample protocol (their streaming protocol
  is the ``estimators`` preset): stepwise 2-10 bits, n = 10,000, seeds 0-2; quick = Gaussian and
  MNIST at 2 and 4 bits, n = 2,000, 2 seeds.

Estimators: the classical ``ksg`` and ``gaussian`` and critic-bound ones through
``mibench.estimate``'s defaults (full: infonce, nwj, dv, mine; quick: infonce).  BMI's and mutinfo's
own estimators are not re-implemented here.

The fixed-MI tasks' levels (bits, exact) come from the tasks themselves, so the configs are built
on first use (importing :mod:`mibench.tasks`); reading a preset's section or description does not.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

QUICK_EST = ["ksg", "gaussian", "infonce"]
FULL_EST = ["ksg", "gaussian", "infonce", "nwj", "dv", "mine"]
NATS = 1.0 / math.log(2.0)          # bits per nat
MUTINFO_GRID_NATS = [0.1, 1.0, 2.5, 5.0, 7.5, 10.0]
CHANNEL_GRID_NATS = [0.5, 1.0, 1.5, 2.0]


def _bits(nats) -> list[float]:
    return [v * NATS for v in nats]


def _fixed(names: list[str]) -> list[dict]:
    from mibench.tasks import make_task

    return [{"task": n, "mi": make_task(n).mi_bits} for n in names]


def _bmi_v1(form: str) -> dict:
    from mibench.tasks.catalogue import catalogue_tasks

    seeds = list(range(10)) if form == "full" else [0, 1]
    return {"tasks": _fixed(catalogue_tasks("bmi-v1")), "n": 5000, "seeds": seeds,
            "estimators": FULL_EST if form == "full" else QUICK_EST}


def _bmi_v2(form: str) -> dict:
    from mibench.tasks.bmi_v2 import MIXTURES
    from mibench.tasks.catalogue import catalogue_tasks

    names = catalogue_tasks("bmi-v2") if form == "full" else list(MIXTURES)
    return {"tasks": _fixed(names), "n": 5000, "seeds": [0, 1, 2] if form == "full" else [0, 1],
            "estimators": FULL_EST if form == "full" else QUICK_EST}


def _mutinfo(form: str) -> dict:
    if form == "full":
        images = [f"mutinfo-{k}-{s}x{s}" for k in ("gaussian2d", "rectangles2d") for s in (16, 32)]
        return {"tasks": [{"task": t, "mi": [_bits(MUTINFO_GRID_NATS)]} for t in images]
                + [{"task": f"mutinfo-channel-{d}", "mi": [_bits(CHANNEL_GRID_NATS)]} for d in ("mnist", "cifar10")],
                "n": 10_000, "seeds": list(range(42, 52)), "estimators": FULL_EST}
    images = [f"mutinfo-{k}-{s}x{s}" for k in ("gaussian2d", "rectangles2d") for s in (16, 32)]
    return {"tasks": [{"task": t, "mi": [_bits(MUTINFO_GRID_NATS)]} for t in images]
            + [{"task": "mutinfo-channel-mnist", "mi": [_bits(CHANNEL_GRID_NATS)]}],
            "n": 10_000, "seeds": [42, 43], "estimators": QUICK_EST}


def _lee_rhee(form: str) -> dict:
    if form == "full":
        return {"tasks": ["gaussian", "vision", "text", "mixed"], "mi": [[2.0, 4.0, 6.0, 8.0, 10.0]], "n": 10_000,
                "seeds": [0, 1, 2], "estimators": FULL_EST}
    return {"tasks": ["gaussian", "vision"], "mi": [[2.0, 4.0]], "n": 2000, "seeds": [0, 1], "estimators": QUICK_EST}


#: the reference table's image levels: mutinfo's images at three of its grid's levels (nats), and the
#: MNIST label channel at three of its levels
REFERENCE_IMAGE_NATS = [1.0, 2.5, 5.0]
REFERENCE_CHANNEL_NATS = [0.5, 1.0, 2.0]
#: the four setups of the sample leaderboard (results/sample_leaderboard/sweep.toml; mibench.evaluate's
#: suites): task, task parameters, MI (bits)
SAMPLE_SETUPS = [("gaussian", {}, 4.0), ("vision", {}, 4.0), ("text", {"ds": 2}, 1.0),
                 ("text", {"ds": 2, "encoder": "all-MiniLM-L6-v2"}, 1.0)]


def reference_estimators() -> list[str]:
    """Every registered estimator (each pattern family at its registered default member; plug-ins are
    not registered entries), in the registry's order."""
    from mibench.estimators import ESTIMATORS

    return ESTIMATORS.names()


def _reference(form: str) -> dict:
    """The field's reference table (docs/reference-table.md): every registered estimator on BMI v1's 40
    tasks (BMI's n = 5,000), mutinfo's images and MNIST label channel at three levels each (mutinfo's
    n = 10,000) and the sample leaderboard's four setups (n = 10,000), three seeds each, one cell per
    task and estimator (resumable, run in slices).  ``quick``: three BMI tasks, six estimators, one
    seed, n = 2,000 (a smoke test of the pipeline)."""
    from mibench.tasks.catalogue import catalogue_tasks

    if form == "quick":
        quick = ["1v1-normal-0.75", "student-identity-2-2-1", "multinormal-sparse-3-3-2-2.0"]
        return {"tasks": _fixed(quick), "n": 2000, "seeds": [0], "split_estimators": True,
                "estimators": ["ksg", "gaussian", "infonce", "smile-5", "doe-flow", "minde-c"]}
    seeds = [0, 1, 2]
    tasks = [{**t, "n": 5000} for t in _fixed(_families_first(catalogue_tasks("bmi-v1")))]
    tasks += [{"task": task, **({"params": params} if params else {}), "mi": mi, "n": 10_000}
              for task, params, mi in SAMPLE_SETUPS]
    images = [f"mutinfo-{k}-{s}x{s}" for k in ("gaussian2d", "rectangles2d") for s in (16, 32)]
    tasks += [{"task": t, "mi": [_bits(REFERENCE_IMAGE_NATS)], "n": 10_000} for t in images]
    tasks += [{"task": "mutinfo-channel-mnist", "mi": [_bits(REFERENCE_CHANNEL_NATS)], "n": 10_000}]
    return {"tasks": tasks, "seeds": seeds, "split_estimators": True, "timeout": 900,
            "estimators": reference_estimators()}


def _families_first(names: list[str]) -> list[str]:
    """BMI's tasks in rounds over the data families (heavy tails, non-linear maps, transformed margins,
    Gaussian), the widest first within a family, so that a table computed in slices covers every family
    early; the cells' names do not depend on the order."""
    def family(name: str) -> int:
        if "student" in name:
            return 0
        if name.startswith(("spiral", "swissroll")) or "additive" in name:
            return 1
        if name.startswith(("normal_cdf", "half_cube", "wiggly")) or "bimodal" in name:
            return 2
        return 3

    def width(name: str) -> int:
        import re

        m = re.search(r"-(\d+)-(\d+)-", name)
        return -int(m.group(1)) if m else 0

    groups = [sorted((n for n in names if family(n) == f), key=lambda n: (width(n), names.index(n))) for f in range(4)]
    out = []
    while any(groups):
        out += [g.pop(0) for g in groups if g]
    return out


class CataloguePreset(Mapping):
    """A preset whose ``quick`` / ``full`` configs are built on first access."""

    def __init__(self, description: str, build):
        self._data = {"section": "-", "description": description}
        self._build = build

    def __getitem__(self, key):
        if key in ("quick", "full") and key not in self._data:
            self._data[key] = self._build(key)
        return self._data[key]

    def __iter__(self):
        return iter(("section", "description", "quick", "full"))

    def __len__(self) -> int:
        return 4


PRESETS: dict[str, CataloguePreset] = {
    "bmi-v1": CataloguePreset("catalogue bmi-v1: the 40 BMI v1 tasks at their own MI, sample protocol (BMI: n = 5000, "
                              "seeds 0-9)", _bmi_v1),
    "bmi-v2": CataloguePreset("catalogue bmi-v2: BMI's Bend-and-Mix mixtures (+ the v1 tasks its v2 list keeps), "
                              "sample protocol (BMI: n = 5000, seeds 0-2)", _bmi_v2),
    "mutinfo-images": CataloguePreset("catalogue mutinfo-images: Gaussian-bump / rectangle images 16 and 32 px at "
                                      "0.1-10 nats, label channels on MNIST / CIFAR-10 (mutinfo: n = 10000, seeds "
                                      "42-51)", _mutinfo),
    "reference": CataloguePreset("the reference table: every registered estimator on BMI v1's 40 tasks (n = 5000), "
                                 "mutinfo's images and MNIST channel at 3 levels and the sample leaderboard's 4 "
                                 "setups (n = 10000), seeds 0-2, one cell per task and estimator",
                                 _reference),
    "lee-rhee": CataloguePreset("catalogue lee-rhee: Gaussian / MNIST / IMDB / image-text tasks under the sample "
                                "protocol (stepwise 2-10 bits, n = 10000)", _lee_rhee),
}
