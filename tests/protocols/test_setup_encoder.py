"""A text run's setup names the encoder its pool was embedded with, so runs on different embeddings
(the off-the-shelf MiniLM, the fine-tuned default) are never pooled into one leaderboard row."""
from __future__ import annotations

import csv
import json

from fake_runs import write_fake_run

from mibench.cli import main
from mibench.protocols.setup import setup_params

ROWS = [{"estimator": "smile-5", "true_mi": 2.0, "bias": b, "variance": 0.01, "mse": b * b + 0.01} for b in (-0.2,)]


def _with_encoder(run_dir, name):
    cfg = json.loads((run_dir / "config.json").read_text())
    cfg["task_info"]["pools"] = {"imdb": {"encoder": {"encoder": name, "fingerprint": "x"}}}
    (run_dir / "config.json").write_text(json.dumps(cfg))
    return run_dir


def test_setup_params_take_the_encoder_from_the_pool_unless_given():
    info = {"pools": {"imdb": {"encoder": {"encoder": "minilm-imdb"}}}}
    assert setup_params("text", {"ds": 2}, info) == "ds=2;encoder=minilm-imdb"
    assert setup_params("text", {"ds": 2, "encoder": "all-MiniLM-L6-v2"}, info) == "ds=2;encoder=all-MiniLM-L6-v2"
    assert setup_params("gaussian", {"dim": 4}, {"ds": 4}) == "dim=4"          # tasks without a text pool: unchanged


def test_runs_on_two_encoders_are_two_setups(tmp_path):
    for name, enc in (("a", "all-MiniLM-L6-v2"), ("b", "minilm-imdb")):
        _with_encoder(write_fake_run(tmp_path / "runs" / name, ROWS, task="text", task_params={"ds": 2},
                                     levels=(2.0,)), enc)
    assert main(["leaderboard", str(tmp_path / "runs"), "-o", str(tmp_path / "lb.csv")]) == 0
    with open(tmp_path / "lb.csv") as fh:
        labels = sorted(r["task_params"] for r in csv.DictReader(fh))
    assert labels == ["ds=2;encoder=all-MiniLM-L6-v2", "ds=2;encoder=minilm-imdb"]
