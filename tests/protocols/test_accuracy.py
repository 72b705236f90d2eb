"""Accuracy regression: a short training on the Gaussian task (d = 5, 2 bits, joint critic 1x64,
batch 64, lr 1e-3, 800 steps, metrics after a 400-step burn-in) must land where it did when the
suite was calibrated.

Measured on the 2-core CI machine over seeds 0-5 (mean / sd / min-max of the mean estimate, bits):
  nwj 1.888/0.015/1.873-1.917   js 1.865/0.012/1.855-1.891   infonce 1.821/0.015/1.808-1.852
  dv  1.899/0.015/1.887-1.928   mine 1.903/0.015/1.888-1.926 smile-5 1.873/0.015/1.846-1.894
  smile-inf 1.871/0.011/1.859-1.890   tuba 1.899/0.012/1.884-1.917
Band: calibrated mean +- 0.08 bits (> 5 sd, and wider than the whole seed range).
"""
import pytest

from mibench.protocols.stream.run import RunConfig, run

CALIBRATED = {"nwj": 1.888, "js": 1.865, "infonce": 1.821, "dv": 1.899, "mine": 1.903, "smile-5": 1.873,
              "smile-inf": 1.871, "tuba": 1.899}
BAND = 0.08


@pytest.fixture(scope="module")
def short_run():
    cfg = RunConfig(task="gaussian", task_params={"dim": 5}, estimators=list(CALIBRATED), mi=2.0, steps=800,
                    hidden=64, layers=1, batch_size=64, lr=1e-3, seed=0, device="cpu", burn_in=400)
    return {r["estimator"]: r for r in run(cfg).summary}


@pytest.mark.parametrize("name", list(CALIBRATED))
def test_gaussian_2_bits_within_calibrated_band(short_run, name):
    row = short_run[name]
    assert row["steps"] == 400
    assert abs(row["mean_estimate"] - CALIBRATED[name]) < BAND, row
