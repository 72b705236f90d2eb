"""What a user reads points inside the repository (issue 34): no message, docstring or page names the
development checkout's ``../shared`` folders, every relative Markdown link resolves to a file of the
repository, and the missing-data error describes the layout itself (``mibench data`` prints it).  No
tracked text file names a path that exists on one machine only (``MACHINE_PATH``: a home, temporary or
work folder); commands and recorded headers write a placeholder (``$MIBENCH_DATA``, ``$TMPDIR``,
``$PEER_VENV``, ...) instead."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from mibench.cli import main

REPO = Path(__file__).resolve().parents[1]
USER_FACING = [REPO / "README.md", REPO / "results" / "README.md", *sorted((REPO / "docs").rglob("*.md")),
               *sorted(p for p in (REPO / "mibench").rglob("*") if p.is_file() and p.suffix in
                       (".py", ".md", ".html", ".txt", ".toml", ".json", ".css", ".js", ".yaml"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_nothing_a_user_reads_names_the_development_checkout():
    hits = [f"{p.relative_to(REPO)}:{i}" for p in USER_FACING
            for i, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            if "../shared" in line or "shared/papers" in line or "shared/reports" in line]
    assert not hits, f"paths outside the repository in user-facing text: {hits}"


def test_every_relative_link_stays_inside_the_repository():
    bad = []
    for page in [p for p in USER_FACING if p.suffix == ".md"] + [REPO / "CONTRIBUTING.md", REPO / "CHANGELOG.md"]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue                                   # a web address or an anchor on the page
            path = (page.parent / target.split("#")[0]).resolve()
            if REPO not in path.parents and path != REPO or not path.exists():
                bad.append(f"{page.relative_to(REPO)}: {target}")
    assert not bad, f"links that leave the repository or lead nowhere: {bad}"


def test_the_missing_data_message_describes_the_layout(tmp_path):
    from mibench.data.sources import DATASETS, missing_message

    for name in DATASETS:
        msg = missing_message(name, tmp_path)
        assert "\n" not in msg and "shared" not in msg and "`mibench data` prints the whole layout" in msg
        assert f"holds {name}/" in msg
    assert "train-images-idx3-ubyte.gz" in missing_message("mnist", tmp_path)
    message = missing_message("cifar10", tmp_path)
    assert "data_batch_1" in message and "test_batch" in message
    assert "imdb_aclImdb_v1.csv.gz" in missing_message("imdb", tmp_path)


def test_mibench_data_prints_the_expected_files_of_every_dataset(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MIBENCH_CACHE", str(tmp_path / "cache"))
    assert main(["data", "--data-dir", str(tmp_path / "empty")]) == 0
    out = capsys.readouterr().out
    layout = out[out.index("the layout mibench reads"):]
    for f in ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz",
              "mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz",
              "cifar10/cifar-10-batches-py/", "data_batch_5", "test_batch", "imdb/imdb_aclImdb_v1.csv.gz",
              "text,label,split,id,rating"):
        assert f in layout, f
    import json

    assert main(["data", "--data-dir", str(tmp_path / "empty"), "--json"]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["layout"]["cifar10"]["needs"] == "any"
    assert "mnist/train-images-idx3-ubyte.gz" in st["layout"]["mnist"]["files"]


@pytest.mark.parametrize("task", ["vision", "mutinfo-channel-cifar10"])
def test_a_run_without_its_data_says_what_to_lay_out(tmp_path, capsys, task, monkeypatch):
    monkeypatch.setenv("MIBENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "empty").mkdir()
    assert main(["run", "--task", task, "--data-dir", str(tmp_path / "empty"), "--steps", "5", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "shared" not in err and "`mibench data`" in err, err


#: top-level folders whose contents belong to one machine: home and work folders, temporary folders
MACHINE_ROOTS = ("home", "root", "Users", "work", "scratch", "mnt", "tmp", "var/folders", "private/var")
#: an absolute path into one of them: the root right at the start of a path (not after a word
#: character, '.', '~', '$', '%', '/', ':', '@' or '-', so a URL's path, a relative ``results/tmp/``,
#: ``./tmp/``, ``~/.cache`` and ``$TMPDIR/...`` pass), then '/' and a name; ``/dev/null``,
#: ``/usr/bin/chromium``, ``/etc/...`` and ``/proc/self/status`` name no machine's own files and pass
MACHINE_PATH = re.compile(r"(?<![\w.~$%/:@-])/(?:" + "|".join(MACHINE_ROOTS) + r")/[\w.$~-]")


def machine_path_lines(text: str) -> list[int]:
    """Line numbers of ``text`` that hold a :data:`MACHINE_PATH`."""
    return [i for i, line in enumerate(text.splitlines(), 1) if MACHINE_PATH.search(line)]


# examples written as (before, root, after) so that this file holds none itself
FLAGGED = [("", "work", "/peers/bmi/bin/python"), ("MINDE_SRC=", "work", "/peers/src/minde"),
           ("mibench report results/table3 -o ", "tmp", "/site"), ('"weights": "', "root", '/.cache/mibench/x.pt"'),
           ("(", "home", "/user/data)"), ("`", "Users", "/me/mibench`"), ("sys.path.insert(0, '", "tmp", "/x')"),
           ("-> ", "tmp", "/tmpiqf4uner/table3"), ("--out ", "scratch", "/t3"), ("", "var/folders", "/x1/T/y")]
PASSES = ["/dev/null", "#!/usr/bin/env python", "chromium at /usr/bin/chromium", "/etc/os-release",
          "/proc/self/status", "https://github.com/home/x", "results/tmp/x", "./tmp/x", "~/.cache/mibench",
          "$TMPDIR/t3_gv.yaml", "$HOME/work/x", "scripts in /tmp, not the repo", "--data-dir /path/to/data",
          "python -m venv $PEER_VENV", "benchmarks/peers/run_bmi.py"]


@pytest.mark.parametrize("before, root, after", FLAGGED)
def test_the_rule_flags_a_machine_path(before, root, after):
    assert machine_path_lines(f"{before}/{root}{after}") == [1]


@pytest.mark.parametrize("text", PASSES)
def test_the_rule_passes_other_paths(text):
    assert machine_path_lines(text) == []


def test_no_tracked_file_names_a_machine_path():
    """Every text file git tracks (binary files, those with a NUL byte or not UTF-8, are skipped)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    hits = []
    for name in filter(None, listed.decode().split("\0")):
        path = REPO / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        hits += [f"{name}:{i}" for i in machine_path_lines(text)]
    assert not hits, ("absolute paths of one machine (write a placeholder: $MIBENCH_DATA, $TMPDIR, $PEER_VENV, a flag "
                      f"or an environment variable): {hits[:20]}{' ...' if len(hits) > 20 else ''}")
