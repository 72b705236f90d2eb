"""The package's shape: folders import only folders below them in the layer order of
docs/architecture.md (lazy imports included), no import cycles, no module over 600 lines, no
function over 80 lines or with more than 10 parameters, no project history in the code.

The import graph is read from the source with ``ast`` (nothing is imported): every ``import`` /
``from ... import`` anywhere in a module (inside functions too) is an edge; ``from . import x`` is an
edge to the package and to ``x``.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mibench"
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


#: the layer order of docs/architecture.md, bottom to top: a module may import only modules of
#: lower layers (and of its own folder).  A loose top-level module is an area of its own.
LAYERS = [
    ("errors", "_version"),
    ("utils",),
    ("records", "metrics"),
    ("plots",),
    ("data", "critics"),
    ("encoders", "estimators"),
    ("tasks",),
    ("estimation",),
    ("protocols",),
    ("sweep",),
    ("analysis", "disentanglement"),
    ("report",),
    ("cli",),
    ("testing", "__init__"),
]
LAYER = {area: i for i, areas in enumerate(LAYERS) for area in areas}


def area(module: str) -> str:
    """``mibench.tasks.vision`` -> ``tasks``; ``mibench.errors`` -> ``errors``; ``mibench`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer_violations(edges: dict[str, set[str]]) -> list[str]:
    """Every import of a module from its own layer or a higher one (another folder)."""
    out = []
    for mod, targets in sorted(edges.items()):
        for t in sorted(targets):
            a, b = area(mod), area(t)
            if a != b and not LAYER[b] < LAYER[a]:
                out.append(f"{mod} -> {t} ({a}: layer {LAYER[a]}, {b}: layer {LAYER[b]})")
    return out


def test_every_folder_has_a_layer():
    areas = {area(m) for m in import_graph()}
    assert not areas - set(LAYER), f"folders or modules missing from LAYERS (and docs/architecture.md): {areas - set(LAYER)}"


def test_the_layer_check_finds_an_upward_import():
    assert layer_violations({"mibench.records.io": {"mibench.analysis.leaderboard"}})
    assert layer_violations({"mibench.data.cli": {"mibench.tasks.text"}})            # one layer up
    assert layer_violations({"mibench.encoders.x": {"mibench.estimators.y"}})        # same layer, other folder
    assert not layer_violations({"mibench.analysis.gate": {"mibench.records.io", "mibench.analysis.leaderboard"}})


def test_imports_follow_the_layer_order():
    found = layer_violations(import_graph())
    assert not found, "imports against the layer order (docs/architecture.md):\n" + "\n".join(found)


def test_the_architecture_page_states_this_order():
    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    for i, areas in enumerate(LAYERS):
        for a in areas:
            assert f"`{a}`" in page, f"docs/architecture.md does not place `{a}` (layer {i})"


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
