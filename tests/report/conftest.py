"""The report page of the committed results, written once per test session (tmp dir)."""
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: the committed result sets the page is made for
RESULT_DIRS = ["results/table3", "results/sample_leaderboard"]


@pytest.fixture(scope="session")
def result_dirs():
    """:data:`RESULT_DIRS`, the committed result sets the page is made for."""
    return RESULT_DIRS


@pytest.fixture(scope="session")
def report_site(tmp_path_factory):
    """(site directory, leaderboard DataFrame) for results/table3 + results/sample_leaderboard."""
    from mibench.analysis.leaderboard import build
    from mibench.report import write_site

    dirs = [REPO / d for d in RESULT_DIRS]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        pytest.skip(f"committed results missing: {missing}")
    site = tmp_path_factory.mktemp("site")
    write_site(dirs, site, shown=RESULT_DIRS)
    board, _ = build(dirs)
    return site, board


@pytest.fixture(scope="session")
def committed_board_rows():
    """Rows of the committed leaderboard.csv files of :data:`RESULT_DIRS`, summed."""
    from mibench.analysis.leaderboard import read_leaderboard

    return sum(len(read_leaderboard(REPO / d / "leaderboard.csv")) for d in RESULT_DIRS)
