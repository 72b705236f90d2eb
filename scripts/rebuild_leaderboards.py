"""Rebuild every committed leaderboard from the committed run directories it was made from, and
compare: the CSV byte for byte, the Markdown and the sidecar with the generation time set aside.

    python scripts/rebuild_leaderboards.py          # exit 1 when a rebuild differs
    python scripts/rebuild_leaderboards.py --write  # rewrite them (CSV and Markdown) after a change of
                                                    # the leaderboard's columns, not of the numbers

A leaderboard's inputs are the paths of the ``mibench leaderboard`` command its ``.meta.json``
records; one made from run directories that are not committed (``results/sweeps/...``) is listed
as not rebuildable.  Run it after a change that must not change the numbers.
"""
from __future__ import annotations

import json
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def inputs_of(command: str) -> tuple[list[Path], str] | None:
    """The run paths and the title of a recorded ``mibench leaderboard`` command (None: not one)."""
    words = shlex.split(command)
    if words[:2] != ["mibench", "leaderboard"]:
        return None
    paths, title, skip = [], "MI estimator leaderboard", False
    for i, w in enumerate(words[2:], 2):
        if skip:
            skip = False
            continue
        if w in ("-o", "--output", "--title"):
            skip = True
            if w == "--title":
                title = words[i + 1]
            continue
        if not w.startswith("-"):
            paths.append(REPO / w)
    return paths, title


def without_time(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith("Generated ")
                     and '"generated"' not in line)


def main() -> int:
    from mibench.analysis.leaderboard import build, provenance, to_markdown, write_all, write_csv

    write = "--write" in sys.argv[1:]
    differs = 0
    for meta_path in sorted(REPO.glob("results/**/leaderboard.meta.json")):
        csv = meta_path.with_name("leaderboard.csv")
        meta = json.loads(meta_path.read_text())
        got = inputs_of(meta.get("command") or "")
        rel = csv.relative_to(REPO)
        if got is None or not got[0] or not all(p.exists() for p in got[0]):
            print(f"not rebuildable  {rel} (its runs are not committed: {meta.get('command')})")
            continue
        paths, title = got
        board, col = build(paths)
        if write:
            write_csv(board, csv)
            if csv.with_suffix(".md").is_file():
                csv.with_suffix(".md").write_text(to_markdown(board, provenance(col, board, meta["command"]), title))
            print(f"written     {rel} ({len(col.runs)} runs)")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "leaderboard.csv"
            write_all(board, col, out, command=meta["command"], markdown=False)
            same_csv = out.read_bytes() == csv.read_bytes()
        md = csv.with_suffix(".md")
        same_md = True
        if md.is_file():
            text = to_markdown(board, provenance(col, board, meta["command"]), title)
            same_md = without_time(text) == without_time(md.read_text())
        verdict = "identical" if same_csv and same_md else f"DIFFERS (csv {'same' if same_csv else 'differs'}, " \
                                                              f"md {'same' if same_md else 'differs'})"
        differs += verdict != "identical"
        print(f"{verdict:<10}  {rel} ({len(col.runs)} runs)")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
