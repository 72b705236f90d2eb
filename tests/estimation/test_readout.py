"""The final readout of ``mibench.estimate`` (mibench/estimation/readout.py): the bound on the held-out
score matrix read in tiles through each head's row form, equal to the bound on the whole matrix; capped
at READOUT_MAX_PAIRS held-out pairs; memory O(block^2) whatever n_test."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
import torch

from mibench.critics.mlp import Critic, InnerCritic
from mibench.estimation.readout import READOUT_MAX_PAIRS, WHOLE_MATRIX_MAX_PAIRS, full_matrix_value, readout_pairs
from mibench.estimators import make_estimator

HEADS = ["infonce", "dv", "nwj", "js", "js-paper", "mine", "smile-5", "smile-1", "smile-inf", "smile-adaptive",
         "tuba", "f-dime-kl", "f-dime-hd", "f-dime-gan", "alpha-infonce-0.5"]


class MatrixCritic(Critic):
    """Scores looked up in a fixed matrix: x and y are (n, 1) columns of row / column indices."""

    def __init__(self, scores: torch.Tensor):
        super().__init__()
        self.scores = scores

    def forward(self, x, y):
        return self.scores[x[:, 0].long()][:, y[:, 0].long()]


def _scores(n: int, seed: int = 0) -> torch.Tensor:
    """A score matrix with joint pairs scoring higher and a spread wide enough for the clips to bite."""
    g = torch.Generator().manual_seed(seed)
    s = 3.0 * torch.randn(n, n, generator=g, dtype=torch.float64)
    return s + torch.diag(4.0 + 2.0 * torch.randn(n, generator=g, dtype=torch.float64))


def _head(name):
    head = make_estimator(name).double()
    if name == "tuba":
        with torch.no_grad():
            head.log_baseline.fill_(0.7)
    return head


@pytest.mark.parametrize("name", HEADS)
def test_row_form_is_the_bound_on_the_whole_matrix(name):
    head = _head(name)
    form = head.row_form()
    if name.startswith("alpha-infonce"):
        assert form is None
        return
    s = _scores(97)
    with torch.no_grad():
        assert float(form.value(s)) == pytest.approx(float(head.value(s)), abs=1e-10, rel=1e-12)


@pytest.mark.parametrize("name", HEADS)
def test_blocked_readout_equals_the_unblocked_one(name):
    """Any tile size, padding included, gives the bound on the whole matrix (float64 scores)."""
    n = 301
    head, s = _head(name), _scores(n, seed=1)
    net, idx = MatrixCritic(s), torch.arange(n, dtype=torch.float64)[:, None]
    with torch.no_grad():
        direct = float(head.value(s))
    for block in (7, 32, 128, 1000):
        assert full_matrix_value(net, head, idx, idx, block=block) == pytest.approx(direct, abs=1e-9), block


def test_readout_reads_the_first_max_pairs_held_out_pairs():
    n, cap = 500, 130
    head, s = _head("infonce"), _scores(n, seed=2)
    idx = torch.arange(n, dtype=torch.float64)[:, None]
    with torch.no_grad():
        direct = float(head.value(s[:cap, :cap]))
    got = full_matrix_value(MatrixCritic(s), head, idx, idx, block=16, max_pairs=cap)
    assert got == pytest.approx(direct, abs=1e-9)
    assert readout_pairs(head, 40_000) == READOUT_MAX_PAIRS and readout_pairs(head, 1000) == 1000
    assert readout_pairs(_head("alpha-infonce-0.5"), 40_000) == WHOLE_MATRIX_MAX_PAIRS


class _Recording(InnerCritic):
    """x . y, recording the largest score tensor the readout asks for."""

    largest = 0

    def block_scores(self, xb, yb):
        out = super().block_scores(xb, yb)
        self.largest = max(self.largest, out.numel())
        return out


@pytest.mark.parametrize("name", ["infonce", "smile-5"])
def test_large_held_out_part_is_read_in_tiles(name):
    """40,000 held-out pairs (those of 200,000): the readout holds tiles, never the matrix, and a small
    tile size gives the same number as the default one and as the direct matrix of the capped pairs."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(40_000, 2, generator=g)
    y = x + 0.5 * torch.randn(40_000, 2, generator=g)
    head, net = _head(name).float(), _Recording()
    value = full_matrix_value(net, head, x, y)
    assert net.largest <= 4 * 128 ** 2 < READOUT_MAX_PAIRS ** 2 // 100
    small = _Recording()
    assert full_matrix_value(small, head, x, y, block=32) == pytest.approx(value, abs=1e-6)
    assert small.largest <= 64 * 32 ** 2
    m = READOUT_MAX_PAIRS
    with torch.no_grad():
        direct = float(head.value((x[:m] @ y[:m].T).double()))
    assert value == pytest.approx(direct, abs=1e-6)


def test_selection_evaluations_read_a_capped_held_out_part():
    from mibench.estimation.training import SELECTION_MAX_PAIRS, HeldOutData

    z = torch.zeros(SELECTION_MAX_PAIRS + 500, 1)
    data = HeldOutData(x_train=z[:10], y_train=z[:10], x_test=z, y_test=z)
    assert [t.shape[0] for t in data.selection_pairs()] == [SELECTION_MAX_PAIRS] * 2


_SCALING = """
import json, time, numpy as np, mibench
rng = np.random.default_rng(0)
x = rng.standard_normal(200_000)
y = x + 0.577 * rng.standard_normal(200_000)
t0 = time.perf_counter()
r = mibench.estimate(x, y)
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"seconds": time.perf_counter() - t0, "mi": r.mi, "peak_mb": hwm / 1024}))
"""


@pytest.mark.slow
def test_estimate_on_200000_pairs_is_fast_and_small():
    """Issue example: 200,000 x 1 pairs in <= 30 s (here 60, for a loaded machine) and <= 1 GB peak."""
    out = subprocess.run([sys.executable, "-c", _SCALING], capture_output=True, text=True, timeout=300, check=True)
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    assert rec["peak_mb"] <= 1024 and rec["seconds"] <= 60, rec
    assert abs(rec["mi"] - 0.5 * math.log2(1 + 1 / 0.577 ** 2)) < 0.1, rec
