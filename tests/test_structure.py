"""The package's shape: folders import only folders below them in the layer order of
docs/architecture.md (lazy imports included), no import cycles, no module over 600 lines, no
function over 80 lines or with more than 10 parameters, no project history in the code.

The layer order is import-linter's contracts in pyproject.toml (``[tool.importlinter]``), checked
by ``lint-imports`` (here and in .ci/run).  Import cycles are read here from the source with ``ast``
(nothing is imported): every ``import`` / ``from ... import`` anywhere in a module (inside functions
too) is an edge; ``from . import x`` is an edge to the package and to ``x``.
"""
from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "mibench"
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    mods = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        mods[name.removesuffix(".__init__")] = path
    return mods


def _resolve(current: str, is_package: bool, level: int, name: str | None) -> str:
    base = current.split(".") if is_package else current.split(".")[:-1]
    if level:
        base = base[: len(base) - (level - 1)] if level > 1 else base
        return ".".join(base + ([name] if name else []))
    return name or ""


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in its body)."""
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(mod, path.name == "__init__.py", node.level, node.module)
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for t in targets:
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != mod and t.split(".")[0] == "mibench":
                    edges[mod].add(t)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    """No cycle between modules, checked here rather than by import-linter: its cycle contract
    (``acyclic_siblings``) squashes each folder into one node and compares siblings only, so it
    misses a cycle between a package's ``__init__`` and one of its own modules, and it refuses
    folder-level cycles that are no module cycle (``protocols/workers.py`` lazily imports
    ``protocols/sample/job.py`` while ``protocols/sample/`` imports ``workers``), which this
    rule allows."""
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_no_module_over_600_lines():
    long = {m: n for m, p in _modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_project_history_in_the_package():
    hits = [f"{p.relative_to(PACKAGE.parent)}:{i}" for p in PACKAGE.rglob("*.py")
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"issue [0-9]", line, re.IGNORECASE)]
    assert not hits, f"'issue N' references in the package: {hits}"


def _contracts() -> list[dict]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["importlinter"]["contracts"]


def _layers() -> list[tuple[str, ...]]:
    """The layer order of pyproject.toml's layers contract, bottom to top: a module may import only
    modules of lower layers (and of its own folder); folders on one layer are independent (``|``).
    ``__init__`` (mibench/__init__.py) is on the top layer with ``testing`` (its own contracts)."""
    layers = next(c for c in _contracts() if c["type"] == "layers")["layers"]
    order = [tuple(a.strip() for a in layer.split("|")) for layer in reversed(layers)]
    return order[:-1] + [order[-1] + ("__init__",)]


def _lint_imports() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    found = str(exe) if exe.is_file() else shutil.which("lint-imports")
    if found is None:
        pytest.skip("lint-imports is not installed (pip install import-linter, in the test extra)")
    return found


def _run_lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` on the package below ``root`` (it puts its working directory first on the path)."""
    return subprocess.run([_lint_imports(), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=300)


def test_imports_follow_the_layer_order():
    """pyproject.toml's import-linter contracts: the layers (lazy imports included; every folder
    has a layer: ``exhaustive``), and nothing imports mibench/__init__.py."""
    out = _run_lint_imports(REPO)
    assert out.returncode == 0, "imports against the layer order (docs/architecture.md):\n" + out.stdout + out.stderr


def _all_but_python(folder: str, names: list[str]) -> list[str]:
    """``copytree``'s ignore: every file but the ``.py`` modules (no data files, no caches)."""
    return [n for n in names if not n.endswith(".py") and not (Path(folder) / n).is_dir()]


def test_the_layer_contract_finds_an_upward_import(tmp_path):
    """A lazy import of a higher layer (utils -> analysis), in a copy of the package, breaks the
    contract."""
    _lint_imports()
    copy = tmp_path / "mibench"
    shutil.copytree(PACKAGE, copy, ignore=_all_but_python)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    out = _run_lint_imports(tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    with open(copy / "utils" / "units.py", "a") as f:
        f.write("\n\ndef _upward():\n    from mibench.analysis import leaderboard\n\n    return leaderboard\n")
    out = _run_lint_imports(tmp_path)
    assert out.returncode != 0 and "mibench.utils is not allowed to import mibench.analysis" in out.stdout, out.stdout


def test_the_architecture_page_states_this_order():
    """docs/architecture.md's layer table lists the contract's layers, bottom (0) to top."""
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| (.*?) \|", page, re.MULTILINE)
    assert [int(i) for i, _ in rows] == list(range(len(rows)))
    assert [tuple(re.findall(r"`(\w+)`", names)) for _, names in rows] == _layers()


MAX_FUNCTION_LINES, MAX_PARAMETERS = 80, 10
#: public signatures that take more (each argument is a documented user setting)
WIDE_SIGNATURES = {"mibench.estimation.estimate.estimate"}


def _functions():
    for mod, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield mod, node


def _is_task_constructor(mod: str, node) -> bool:
    """Task factories and task classes' ``__init__`` take one argument per task parameter."""
    return mod.startswith("mibench.tasks.") and (node.name == "__init__" or node.name.startswith("make_"))


def test_no_long_functions():
    long = [f"{mod}:{n.lineno} {n.name} ({n.end_lineno - n.lineno + 1} lines)" for mod, n in _functions()
            if n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_no_function_with_too_many_parameters():
    wide = []
    for mod, n in _functions():
        a = n.args
        count = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
        count -= bool(a.args) and a.args[0].arg in ("self", "cls")
        if count > MAX_PARAMETERS and f"{mod}.{n.name}" not in WIDE_SIGNATURES and not _is_task_constructor(mod, n):
            wide.append(f"{mod}:{n.lineno} {n.name} ({count} parameters)")
    assert not wide, f"functions with more than {MAX_PARAMETERS} parameters: {wide}"
