"""`mibench report`: the page's structure without a browser (tests/report/test_report_browser.py
opens it in Chromium): one sortable table per leaderboard setup with its rows, every figure and
asset present and linked relatively (self-contained, no network), the recorded spec re-loadable,
one-line errors, and results/site built by the documented command, not committed."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from mibench.cli import main
from mibench.report.reading import SETUP_COLUMNS

REPO = Path(__file__).resolve().parents[2]


class Page(HTMLParser):
    """Tables (id -> {"rows": n, "headers": [...]}), img srcs, link / script targets."""

    def __init__(self):
        super().__init__()
        self.tables, self.imgs, self.links, self._table, self._in_body = {}, [], [], None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id")
            self.tables[self._table] = {"rows": 0, "headers": [], "class": a.get("class", ""),
                                        "setup": a.get("data-setup")}
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body and self._table:
            self.tables[self._table]["rows"] += 1
        elif tag == "th" and self._table and not self._in_body:
            self.tables[self._table]["headers"].append(a.get("data-key"))
        elif tag == "img":
            self.imgs.append(a["src"])
        elif tag in ("a", "link") and a.get("href"):
            self.links.append(a["href"])
        elif tag == "script" and a.get("src"):
            self.links.append(a["src"])

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        elif tag == "table":
            self._table = None


def parse(index: Path) -> Page:
    p = Page()
    p.feed(index.read_text(encoding="utf-8"))
    return p


def setup_sizes(board) -> list[int]:
    cols = [c for c in SETUP_COLUMNS if c in board.columns]
    return sorted(board.groupby(cols, sort=False, dropna=False).size().tolist())


def test_one_table_per_setup_with_its_rows(report_site, committed_board_rows):
    site, board = report_site
    page = parse(site / "index.html")
    tables = {k: v for k, v in page.tables.items() if "leaderboard" in v["class"]}
    assert sorted(t["rows"] for t in tables.values()) == setup_sizes(board)
    assert len(tables) == len(setup_sizes(board)) >= 6
    assert sum(t["rows"] for t in tables.values()) == len(board) == committed_board_rows
    for t in tables.values():
        assert {"estimator", "kind", "mean_estimate", "bias", "variance", "mse", "status"} <= set(t["headers"])
    sample = [t for t in tables.values() if "sample" in t["setup"]]
    n_sample = board[board["protocol"] == "sample"].groupby(["task", "task_params"], dropna=False).ngroups
    assert len(sample) == n_sample >= 3 and all({"seconds", "n_parameters"} <= set(t["headers"]) for t in sample)
    html = (site / "index.html").read_text()
    assert "± " in html and "sample protocol, n = 10000" in html and "joint critic 2×256" in html
    # every estimator of the board is described, with its kind
    est = page.tables["table-estimators"]
    assert est["rows"] == board["estimator"].nunique()
    assert "Kraskov" in html and "Donsker-Varadhan" in html


def test_self_contained_every_figure_and_asset_on_disk(report_site):
    site, _ = report_site
    page = parse(site / "index.html")
    assert len(page.imgs) >= 6 + 6 + 15          # a metrics figure per setup, 6 staircases, 15 estimate plots
    for ref in page.imgs + page.links:
        if ref.startswith("#") or ref == "data:,":          # anchors; the empty favicon (no request)
            continue
        assert "://" not in ref and not ref.startswith("/"), ref     # relative: opens from disk, publishable
        assert (site / ref).is_file(), ref
    for asset in ("assets/vendor/tablesort.min.js", "assets/vendor/tablesort.LICENCE", "assets/site.js",
                  "assets/site.css", "leaderboard.csv"):
        assert (site / asset).is_file(), asset
    assert "Licensed MIT" in (site / "assets/vendor/tablesort.min.js").read_text()
    html = (site / "index.html").read_text()
    assert str(REPO) not in html         # the result directories as given (relative), not resolved


def test_reproduce_commands_and_recorded_specs(report_site):
    """The sample leaderboard's recorded commands are on the page; each sweep's spec is written as
    YAML that mibench sweep loads back to the recorded spec (table3: with vision side = 28 set,
    the side its runs used before the default became 64)."""
    from mibench.sweep import SweepSpec, load_spec

    site, _ = report_site
    html = (site / "index.html").read_text()
    assert ("mibench sweep results/sample_leaderboard/sweep.toml --workers 2 --no-leaderboard "
            "--out results/sample_leaderboard/sweep") in html
    assert "mibench leaderboard results/sample_leaderboard/sweep -o results/sample_leaderboard/leaderboard.csv" in html
    assert "mibench sweep repro/table3-full.yaml --out rerun/table3-full --workers 2 --threads 1" in html
    assert "mibench report results/table3 results/sample_leaderboard -o" in html
    sample = json.loads((REPO / "results/sample_leaderboard/sweep/sweep.json").read_text())["spec"]
    assert load_spec(site / "repro/sample-leaderboard.yaml").to_dict() == SweepSpec.from_dict(sample).to_dict()
    table3 = load_spec(site / "repro/table3-full.yaml").to_dict()
    vision = [t for t in table3["tasks"] if t["task"] == "vision"]
    assert vision and vision[0]["params"] == {"side": 28}
    assert "vision side = 28" in html


def test_cli_writes_the_page_and_errors_are_one_line(tmp_path, capsys):
    run = next((REPO / "results/sample_leaderboard/sweep").glob("gaussian_ksg_*"))
    assert main(["report", str(run), "-o", str(tmp_path / "site"), "--no-figures", "--title", "one run"]) == 0
    page = parse(tmp_path / "site" / "index.html")
    assert [t["rows"] for t in page.tables.values() if "leaderboard" in t["class"]] == [1] and not page.imgs
    assert "<title>one run</title>" in (tmp_path / "site" / "index.html").read_text()
    capsys.readouterr()
    assert main(["report", str(tmp_path / "nope"), "-o", str(tmp_path / "s2")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no such run or sweep directory" in err[0]
    assert main(["report", str(run), "-o", str(run)]) == 2
    assert "is one of the result directories" in capsys.readouterr().err
    # the same site again is fine; another run's or sweep's directory, or any other non-empty one, is not
    # (it overwrote a sweep's leaderboard.csv, and a re-run deletes its figures/ repro/ assets/)
    assert main(["report", str(run), "-o", str(tmp_path / "site"), "--no-figures"]) == 0
    other = tmp_path / "other_run"
    import shutil

    shutil.copytree(next((REPO / "results/sample_leaderboard/sweep").glob("gaussian_infonce_*")), other)
    capsys.readouterr()
    assert main(["report", str(run), "-o", str(other), "--no-figures"]) == 2
    assert "is a run or sweep directory" in capsys.readouterr().err
    mine = tmp_path / "mine"
    (mine / "figures").mkdir(parents=True)
    assert main(["report", str(run), "-o", str(mine), "--no-figures"]) == 2
    assert "holds no mibench report" in capsys.readouterr().err and (mine / "figures").is_dir()


def test_the_page_is_built_not_committed_and_its_command_is_the_tested_one(result_dirs):
    """results/site is generated output, ignored by git: README.md, docs/sweeps.md and results/README.md
    say to build it with `mibench report results/table3 results/sample_leaderboard -o results/site`,
    from the result directories that ``report_site`` (conftest.py) builds the page of for the tests
    above, in a temporary folder."""
    import subprocess

    command = f"mibench report {' '.join(result_dirs)} -o results/site"
    for page in ("README.md", "docs/sweeps.md", "results/README.md"):
        assert command in (REPO / page).read_text(encoding="utf-8"), f"{page} does not say `{command}`"
    if (REPO / ".git").exists():
        tracked = subprocess.run(["git", "ls-files", "results/site"], cwd=REPO, capture_output=True, text=True)
        assert tracked.returncode == 0 and not tracked.stdout.strip(), "results/site is committed"
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", "results/site/index.html"], cwd=REPO)
        assert ignored.returncode == 0, "results/site is not in .gitignore"


def test_a_damaged_run_is_refused_and_no_half_site_is_left(tmp_path, capsys):
    """A run whose estimates.csv no longer matches its checksum: exit 4 as for plot and leaderboard
    (the page was written without its staircase, exit 0), and ``-o`` is left as it was."""
    run = tmp_path / "run"
    assert main(["run", "--task", "gaussian", "--estimator", "smile", "--steps", "20", "--hidden", "16", "--layers",
                 "1", "--quiet", "--no-plot", "--out", str(run)]) == 0      # no figures: the report draws them
    assert main(["report", str(run), "-o", str(tmp_path / "site"), "--no-figures"]) == 0
    before = (tmp_path / "site" / "index.html").read_bytes()
    est = run / "estimates.csv"
    est.write_bytes(est.read_bytes()[: len(est.read_bytes()) // 2])
    capsys.readouterr()
    for site in (tmp_path / "site", tmp_path / "new"):
        assert main(["report", str(run), "-o", str(site)]) == 4
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "does not match the checksum" in err[0]
    assert (tmp_path / "site" / "index.html").read_bytes() == before and not (tmp_path / "new").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".mibench-report-")]
