"""The old import paths of modules moved by the layout by role still import, for one release, as
the very module at the new path, with a DeprecationWarning naming it."""
import importlib
import sys
import warnings

import pytest

import mibench
from mibench.utils.moved import MOVED


@pytest.mark.parametrize("old,new", sorted(MOVED.items()))
def test_an_old_path_imports_the_new_module(old, new):
    sys.modules.pop(old, None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert any(issubclass(w.category, DeprecationWarning) and new in str(w.message) for w in caught)


def test_from_import_of_an_old_path_works():
    with pytest.warns(DeprecationWarning, match="mibench.analysis.leaderboard"):
        sys.modules.pop("mibench.leaderboard", None)
        from mibench.leaderboard import build
    from mibench.analysis.leaderboard import build as new_build
    assert build is new_build


def test_no_old_path_shadows_a_module_of_the_layout():
    for old in MOVED:
        parent, _, leaf = old.rpartition(".")
        spec = importlib.machinery.PathFinder.find_spec(leaf, importlib.import_module(parent).__path__)
        assert spec is None, f"{old} is a real module again: drop it from MOVED"


def test_unknown_names_are_still_unknown():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("mibench.no_such_module")
    assert "mibench.no_such_module" not in sys.modules
    assert mibench.__version__
