"""docs/architecture.md's folder tree names every module folder of the package and every module in it,
so the page a newcomer reads first stays true to the tree."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mibench"


def tree_entries() -> dict[str, set[str]]:
    """Folder path (``estimators/generative``) -> the words on its lines of the tree (continuation lines
    included)."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = page[page.index("```\nmibench/\n") + 4:]
    block = block[:block.index("```")]
    out: dict[str, set[str]] = {"": set()}
    stack: list[tuple[int, str]] = []
    current = ""
    for line in block.splitlines()[1:]:
        m = re.match(r"^( *)([A-Za-z_]+)/\s", line + " ")
        if m:
            indent = len(m.group(1))
            while stack and stack[-1][0] >= indent:
                stack.pop()
            current = "/".join([s for _, s in stack] + [m.group(2)])
            stack.append((indent, m.group(2)))
            out.setdefault(current, set())
            line = line[m.end():]
        elif not line.startswith("                "):
            current = ""
        out[current] |= set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", line))
    return out


def module_folders() -> dict[str, list[str]]:
    """Each package folder (relative path, '' for the top) -> its module names."""
    out = {}
    for init in PACKAGE.rglob("__init__.py"):
        folder = init.parent
        rel = folder.relative_to(PACKAGE).as_posix()
        out["" if rel == "." else rel] = sorted(p.stem for p in folder.glob("*.py"))
    return out


def test_the_tree_names_every_module_folder_and_module():
    tree = tree_entries()
    missing = []
    for folder, modules in module_folders().items():
        if folder not in tree:
            missing.append(f"{folder}/")
            continue
        words = tree[folder]
        missing += [f"{folder}/{m}" for m in modules if m not in words and not (folder and m == "__init__")]
    assert not missing, f"docs/architecture.md's tree omits: {missing}"


def test_the_check_finds_an_omission():
    tree = tree_entries()
    assert "trained" in tree["estimators"] and "nets" in tree["estimators/generative"]
    assert "no_such_module" not in tree["estimators"]
