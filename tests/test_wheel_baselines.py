"""The baselines shipped in the package (mibench/analysis/packaged/sample_leaderboard.json): they match
the committed results/sample_leaderboard exactly (regenerate with
`python scripts/export_sample_baselines.py` after re-running it), give the same leaderboard, and
mibench.evaluate uses them when there is no checkout (a wheel install)."""
import json
from pathlib import Path

import pytest

from mibench.analysis import baselines

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "results" / "sample_leaderboard"


@pytest.fixture
def no_checkout(monkeypatch, tmp_path):
    """mibench as installed from a wheel: no results/sample_leaderboard next to the package."""
    monkeypatch.setattr(baselines, "CHECKOUT", tmp_path / "no-checkout" / "results" / "sample_leaderboard")
    monkeypatch.delenv("MIBENCH_SAMPLE_BASELINES", raising=False)
    monkeypatch.setattr(baselines, "_materialized", {})


def test_packaged_baselines_match_the_committed_leaderboard():
    if not RESULTS.is_dir():
        pytest.skip("results/sample_leaderboard not committed")
    packaged = json.loads(baselines.PACKAGED.read_text())
    assert packaged == json.loads(baselines.dumps(baselines.export(RESULTS))), \
        "stale: run `python scripts/export_sample_baselines.py` after re-running results/sample_leaderboard"
    # compact: config and file listing only, no figures (measured 4.4-4.7 KB a run)
    assert baselines.PACKAGED.stat().st_size < 6_000 * len(packaged["runs"])


def test_packaged_baselines_give_the_same_leaderboard(tmp_path):
    import pandas as pd

    from mibench.analysis.leaderboard import build

    if not RESULTS.is_dir():
        pytest.skip("results/sample_leaderboard not committed")
    ours, _ = build([baselines.materialize(tmp_path / "b")])
    theirs, _ = build([RESULTS])
    pd.testing.assert_frame_equal(ours, theirs)


def test_evaluate_without_a_checkout_uses_the_packaged_copy(no_checkout, capsys, packaged_baseline_estimators):
    import mibench
    from mibench.analysis.evaluate import baseline_dir

    base = baseline_dir()
    assert base != RESULTS and (base / "sweep").is_dir() and list(base.rglob("sample_estimates.csv"))
    assert baseline_dir() == base                               # materialised once per process

    def zero(x, y):
        return 0.0

    board = mibench.evaluate(zero, "quick", timeout=None, progress=False, seeds=[0])
    me = f"{zero.__module__}.zero"
    n = len(packaged_baseline_estimators["gaussian"]) + 1         # the packaged gaussian baselines and ours
    assert me in set(board["estimator"]) and len(set(board["estimator"])) == n
    # 4 bits of MSE 16: behind every baseline but those worse than that (CLUB, an upper bound far above)
    others = board[board["estimator"] != me].groupby("estimator")["rank_score"].first()
    assert (others > 16).sum() >= 1
    assert f"{me} ranks {n - int((others > 16).sum())} of {n}" in capsys.readouterr().out


def test_env_and_explicit_baselines_still_override(no_checkout, monkeypatch, tmp_path):
    import mibench
    from mibench.errors import MibenchError

    monkeypatch.setenv("MIBENCH_SAMPLE_BASELINES", str(tmp_path / "mine"))
    assert baselines.baseline_dir() == tmp_path / "mine"
    with pytest.raises(MibenchError, match="no baseline runs found"):
        mibench.evaluate(lambda x, y: 0.0, "quick", baselines=tmp_path / "empty", progress=False)


REFERENCE_RUNS = REPO / "results" / "reference" / "sweep"


def test_packaged_reference_matches_the_committed_reference_runs():
    """The reference table's packaged copy (the bmi and reference suites' baselines from a wheel) holds
    exactly its committed complete cells (regenerate with `python scripts/export_sample_baselines.py --set
    reference` after committing cells)."""
    import gzip

    if not REFERENCE_RUNS.is_dir() or not any(REFERENCE_RUNS.rglob("config.json")):
        pytest.skip("results/reference/sweep not committed")
    packaged = json.loads(gzip.decompress(baselines.REFERENCE.packaged.read_bytes()))
    assert packaged == json.loads(baselines.dumps(baselines.export(REFERENCE_RUNS))), \
        "stale: run `python scripts/export_sample_baselines.py --set reference`"


def test_the_bmi_suite_ranks_against_the_packaged_reference_without_a_checkout(monkeypatch, tmp_path, capsys):
    import mibench
    from mibench.analysis.evaluate import baseline_dir, suite_setups

    monkeypatch.setattr(baselines, "REFERENCE", baselines.BaselineSet(
        "reference", tmp_path / "no-checkout", baselines.REFERENCE.packaged, "MIBENCH_REFERENCE_BASELINES"))
    monkeypatch.delenv("MIBENCH_REFERENCE_BASELINES", raising=False)
    monkeypatch.setattr(baselines, "_materialized", {})
    base = baseline_dir("bmi")
    assert base.name == "reference" and list(base.rglob("sample_estimates.csv"))
    assert len(suite_setups("bmi")) == 40

    def correlation(x, y):                          # the Gaussian closed form of the first coordinates
        import numpy as np

        c = np.corrcoef(x[:, 0], y[:, 0])[0, 1]
        return -0.5 * np.log(1 - c ** 2)

    board = mibench.evaluate(correlation, "bmi", timeout=None, progress=False, seeds=[0])
    me = f"{correlation.__module__}.correlation"
    assert board[board["estimator"] == me]["task"].nunique() == 40
    ranked = set(board[board["estimator"] != me]["task"])     # the tasks the committed cells cover
    assert ranked and ranked <= set(board["task"])
    out = capsys.readouterr().out
    assert f"{me} ranks" in out
    # a task no committed cell covers yet says so: it printed "ranks 1 of 1"
    assert "ranks 1 of 1 " not in out
    if set(board["task"]) - ranked:
        assert f"{me} has no baselines to rank against here" in out
