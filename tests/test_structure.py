"""The package's shape: no import cycles (lazy imports included), no module over 600 lines, no
protocol branches outside the protocol implementations, no project history in the code.

The import graph is read from the source with ``ast`` (nothing is imported), the same way
``../shared/tools/structure_report.py`` reads it: every ``import`` / ``from ... import`` anywhere in a
module (inside functions too) is an edge; ``from . import x`` is an edge to the package and to
``x``.
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


#: a comparison with a protocol's name, or a test of which protocol a run is
PROTOCOL_BRANCH = re.compile(r"""protocol["']?\]?\s*(==|!=)|(==|!=)\s*["'](sample|stream|streaming)["']"""
                             r"""|["'](sample|stream|streaming)["']\s*(==|!=)|is_sample_run|sample_estimates\.csv["']\)""")


def test_the_branch_pattern_finds_branches():
    for line in ('if c.get("protocol") == "sample":', "if cfg['protocol'] != 'stream':", 'if "sample" == p:',
                 "is_sample_run(cfg)", 'if (d / "sample_estimates.csv").is_file():'):
        assert PROTOCOL_BRANCH.search(line), line
    assert not PROTOCOL_BRANCH.search('protocol = protocol_of(cfg)')


def test_no_protocol_branches_outside_the_protocols():
    """Code above the records layer asks a run's protocol object; only mibench/protocols/ (and the
    records layer, which defines the files) name the protocols."""
    hits = [f"{p.relative_to(PACKAGE.parent)}:{i}: {line.strip()}" for p in PACKAGE.rglob("*.py")
            if PACKAGE / "protocols" not in p.parents and PACKAGE / "records" not in p.parents
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if PROTOCOL_BRANCH.search(line)]
    assert not hits, "protocol branches: " + "; ".join(hits)
