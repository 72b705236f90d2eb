"""The lab notebook stays out of the package: a module docstring says what the module is and why it is
built that way in at most 25 lines (with a pointer to the docs page that explains more), and no package
file quotes a run's measurements -- no ``benchmarks/results`` path and no "measured".  Measurements live
in docs/ and benchmarks/results/ (CONTRIBUTING.md, "Structure rules").
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "mibench"
MAX_DOCSTRING_LINES = 25
MEASUREMENT = re.compile(r"benchmarks/results|\bmeasured\b", re.IGNORECASE)


def docstring_lines(source: str) -> int:
    """Lines of the module docstring of ``source`` (0 without one)."""
    doc = ast.get_docstring(ast.parse(source))
    return len(doc.splitlines()) if doc else 0


def violations(rel: str, source: str) -> list[str]:
    """Every break of the two rules in ``source`` (the file ``rel``), one line each."""
    out = []
    lines = docstring_lines(source)
    if lines > MAX_DOCSTRING_LINES:
        out.append(f"{rel}: module docstring of {lines} lines (at most {MAX_DOCSTRING_LINES}: say what and why, "
                   f"and move the rest to docs/)")
    for number, line in enumerate(source.splitlines(), 1):
        hit = MEASUREMENT.search(line)
        if hit:
            out.append(f"{rel}:{number}: {hit.group(0)!r} (measurements belong in docs/ or benchmarks/results/)")
    return out


def _package_files() -> dict[str, Path]:
    return {path.relative_to(REPO).as_posix(): path for path in sorted(PACKAGE.rglob("*.py"))}


def test_no_lab_notebook_in_the_package():
    found = []
    for rel, path in _package_files().items():
        found += violations(rel, path.read_text(encoding="utf-8"))
    assert not found, "\n".join(found)


def test_the_checker_catches_each_violation():
    short = '"""What.\n\nWhy.\n"""\nx = 1\n'
    assert violations("m.py", short) == []
    assert violations("m.py", '"""' + "\n".join(["line"] * 25) + '"""\n') == []
    long = '"""' + "\n".join(["line"] * 26) + '"""\n'
    assert [v.split(":")[1].strip() for v in violations("m.py", long)] == ["module docstring of 26 lines (at most 25"]
    diary = short + "# Measured: 0.48 bits at 1,000 steps\ny = 2  # see benchmarks/results/ksg.txt\n"
    assert [v.split(":")[1] for v in violations("m.py", diary)] == ["6", "7"]
    assert violations("m.py", short + "z = 'unmeasured; --measure; a measurement'\n") == []

