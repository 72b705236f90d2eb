"""Import paths of modules that moved when the package was laid out by role (0.2.0): the old path
still imports, for one release, as the module at its new path, with a ``DeprecationWarning``
naming the new one (CHANGELOG.md lists every move).

A finder at the end of ``sys.meta_path`` answers only names that no file answers, so nothing of the
current layout goes through it; ``import mibench.leaderboard`` (or ``from mibench import
leaderboard``) gets ``mibench.analysis.leaderboard`` itself, the same module object.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

#: old module path -> new module path
MOVED = {
    "mibench.allocator": "mibench.utils.allocator",
    "mibench.baselines": "mibench.analysis.baselines",
    "mibench.catalogue_presets": "mibench.sweep.presets.catalogues",
    "mibench.checks": "mibench.utils.checks",
    "mibench.commands": "mibench.cli.run",
    "mibench.data.cli": "mibench.cli.data",
    "mibench.device": "mibench.utils.device",
    "mibench.encoders.presets": "mibench.sweep.presets.encoders",
    "mibench.encoders.study": "mibench.analysis.layer_study",
    "mibench.encoders_cli": "mibench.cli.encoders",
    "mibench.estimation.reduce": "mibench.estimators.reduce",
    "mibench.estimators.generative.hybrid": "mibench.estimators.hybrid",
    "mibench.estimators.protocols": "mibench.estimators.kinds",
    "mibench.evaluation": "mibench.analysis.evaluate",
    "mibench.figures": "mibench.analysis.run_figures",
    "mibench.gate": "mibench.analysis.gate",
    "mibench.kernels": "mibench.critics.kernels",
    "mibench.leaderboard": "mibench.analysis.leaderboard",
    "mibench.plugins": "mibench.estimators.plugins",
    "mibench.presets": "mibench.sweep.presets",
    "mibench.protocols.common": "mibench.protocols.setup",
    "mibench.protocols.sample_estimate": "mibench.protocols.sample.job",
    "mibench.protocols.sample_run": "mibench.protocols.sample.run",
    "mibench.protocols.stream_run": "mibench.protocols.stream.run",
    "mibench.protocols.stream_training": "mibench.protocols.stream.training",
    "mibench.registry": "mibench.utils.registry",
    "mibench.report.cli": "mibench.cli.report",
    "mibench.schedule": "mibench.protocols.schedule",
    "mibench.seeding": "mibench.utils.seeding",
    "mibench.sweep_cli": "mibench.cli.sweep",
    "mibench.units": "mibench.utils.units",
    "mibench.validate_cli": "mibench.cli.validate",
    "mibench.workers": "mibench.protocols.workers",
}
#: the release after which the old paths stop importing
UNTIL = "0.3.0"


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        warnings.warn(f"{module.__name__} moved to {self.target}; the old path imports until mibench {UNTIL}",
                      DeprecationWarning, stacklevel=2)
        # the import system hands back whatever sys.modules holds under the old name after this
        sys.modules[module.__name__] = importlib.import_module(self.target)


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old path of a moved module (:data:`MOVED`); every other name is left to the rest."""

    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None or new == fullname:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Put the finder last on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())
