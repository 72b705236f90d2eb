"""The scripts outside the package (benchmarks/, scripts/, results/studies/) use only what mibench
still has: every ``import mibench...`` / ``from mibench... import NAME`` in them, inside functions
too, names a module that exists and a name that module defines (or a submodule of it), and every
``alias.NAME`` read through a name bound to a mibench module (``from mibench import kernels``,
``import mibench.x as y``) is an attribute of that module.

The scripts are read with ``ast`` (none is run); the mibench modules they name are imported, which
needs no data.  Catches references left stale when the package is restructured.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT_DIRS = ("benchmarks", "scripts", "results/studies")


def _scripts() -> list[Path]:
    out: list[Path] = []
    for d in SCRIPT_DIRS:
        out.extend(sorted((REPO / d).rglob("*.py")))
    return out


def _is_mibench(module: str | None) -> bool:
    return module is not None and (module == "mibench" or module.startswith("mibench."))


def _module_exists(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def _problems(path: Path) -> list[str]:
    """``line: what is missing`` for every stale mibench reference anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    problems: list[tuple[int, str]] = []
    bound: dict[str, str] = {}                   # local name -> the mibench module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if not _is_mibench(a.name):
                    continue
                if not _module_exists(a.name):
                    problems.append((node.lineno, f"no module {a.name}"))
                elif a.asname:
                    bound[a.asname] = a.name
                else:
                    bound["mibench"] = "mibench"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_mibench(node.module):
            if not _module_exists(node.module):
                problems.extend((node.lineno, f"no module {node.module} (importing {a.name})") for a in node.names)
                continue
            mod = importlib.import_module(node.module)
            for a in node.names:
                if a.name == "*":
                    continue
                if _module_exists(f"{node.module}.{a.name}"):
                    bound[a.asname or a.name] = f"{node.module}.{a.name}"
                elif not hasattr(mod, a.name):
                    problems.append((node.lineno, f"{node.module} has no {a.name}"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name) and node.value.id in bound):
            module = bound[node.value.id]
            if not (hasattr(importlib.import_module(module), node.attr) or _module_exists(f"{module}.{node.attr}")):
                problems.append((node.lineno, f"{module} has no {node.attr} (used as {node.value.id}.{node.attr})"))
    rel = path.relative_to(REPO)
    return [f"{rel}:{line}: {what}" for line, what in sorted(set(problems))]


SCRIPTS = _scripts()


def test_scripts_found():
    names = {p.relative_to(REPO).as_posix() for p in SCRIPTS}
    assert {"benchmarks/bench_training.py", "benchmarks/peers/bmi_compare.py", "scripts/make_study_figures.py"} <= names


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_mibench_references_resolve(path: Path):
    problems = _problems(path)
    assert not problems, "stale mibench references:\n" + "\n".join(problems)
