"""The final readout of :func:`mibench.estimate`'s critic: the estimator's bound on the held-out score
matrix, every held-out pair (i, j), i != j, a product-of-marginals sample (m (m - 1) of them, not
b (b - 1) per block), so the value does not depend on how the held-out pairs were cut into blocks
(docs/estimators.md, "Procedure"), and InfoNCE's ceiling is log m, not log b.

Cost, for m = min(n_test, :data:`READOUT_MAX_PAIRS`) held-out pairs (the first m of them; the held-out
part is a seeded random draw, so any m of them are a random subset):

* time: m^2 critic evaluations (4096^2 = 1.7e7; seconds per hidden width: docs/estimators.md,
  "Procedure"), whatever n;
* memory: O(chunk x block^2 x hidden) for the critic's activations and O(m) for the row statistics.
  A head with a row form (:meth:`~mibench.estimators.heads.Estimator.row_form`: every built-in bound
  but alpha-InfoNCE) is read tile by tile: its diagonal first, then for each block of rows the
  per-row log-sum-exps (or sums) of the off-diagonal scores, accumulated over the column tiles in
  float64.  A head without one gets the whole m x m matrix, m at most :data:`WHOLE_MATRIX_MAX_PAIRS`
  (16 MB at 2048).

Why a cap: the whole matrix of n_test pairs costs n_test^2 evaluations (40,000 held-out pairs of
200,000: 1.6e9, and 6.4 GB as one float32 matrix).  Beyond a
few thousand pairs the readout gains little: the joint term's standard error is already
~sd(f) / sqrt(m) (0.02 nats at m = 4096 for sd(f) = 1), and InfoNCE's ceiling grows only as log m
(8.3 nats at 4096).  Below the cap (n_test <= 4096, n <= 20,480 at the default test_fraction) the
readout is the whole held-out matrix, as before.
"""
from __future__ import annotations

import torch

READOUT_MAX_PAIRS = 4096        # the readout's matrix has at most this many held-out pairs a side ...
WHOLE_MATRIX_MAX_PAIRS = 2048   # ... and at most this many for a head without a row form (held whole)
READOUT_BLOCK = 128             # tiles of READOUT_BLOCK x READOUT_BLOCK pairs
TILE_ACTIVATIONS = 4_000_000    # critic activations per call: tiles x block^2 x 64 (hidden) at most this


def _blocks(a: torch.Tensor, b: int) -> torch.Tensor:
    """``a`` (n, d) as (ceil(n / b), b, d), the last block padded with copies of row 0."""
    nb = -(-a.shape[0] // b)
    pad = nb * b - a.shape[0]
    if pad:
        a = torch.cat([a, a[:1].expand(pad, -1)])
    return a.view(nb, b, -1)


def _chunk(b: int) -> int:
    return max(1, TILE_ACTIVATIONS // (b * b * 64))


def readout_pairs(head, n_test: int) -> int:
    """How many held-out pairs a side the readout's matrix has for ``head`` (its ceiling's K)."""
    form = head.row_form() if hasattr(head, "row_form") else None
    return min(n_test, READOUT_MAX_PAIRS if form is not None else WHOLE_MATRIX_MAX_PAIRS)


@torch.no_grad()
def full_matrix_value(net, head, x, y, block: int = READOUT_BLOCK, max_pairs: int = READOUT_MAX_PAIRS) -> float:
    """The estimator's bound on the score matrix of the first min(n, ``max_pairs``) pairs of ``x``, ``y``
    (module docstring), read in ``block`` x ``block`` tiles through ``net.block_scores``; with a row
    form the value does not depend on ``block`` beyond float64 rounding, and memory is O(block^2)."""
    form = head.row_form() if hasattr(head, "row_form") else None
    m = min(readout_pairs(head, x.shape[0]), max_pairs)
    x, y = x[:m], y[:m]
    b = max(2, min(block, m))
    net.eval()
    try:
        if form is None:
            value = head.value(_whole_matrix(net, x, y, b))
        else:
            value = _streamed_value(net, form, x, y, b)
    finally:
        net.train()
    return float(value.double())


def _whole_matrix(net, x, y, b: int) -> torch.Tensor:
    """The (m, m) score matrix, tile by tile (x tile i against y tile j), assembled on the device."""
    m = x.shape[0]
    xb, yb = _blocks(x, b), _blocks(y, b)
    nb = xb.shape[0]
    ii, jj = torch.meshgrid(torch.arange(nb), torch.arange(nb), indexing="ij")
    ii, jj = ii.reshape(-1).to(x.device), jj.reshape(-1).to(x.device)
    chunk = _chunk(b)
    tiles = [net.block_scores(xb[ii[k:k + chunk]], yb[jj[k:k + chunk]]) for k in range(0, ii.numel(), chunk)]
    return torch.cat(tiles).view(nb, nb, b, b).permute(0, 2, 1, 3).reshape(nb * b, nb * b)[:m, :m]


def _diagonal(net, xb, yb, m: int, chunk: int) -> torch.Tensor:
    """The (m,) joint scores f(x_i, y_i), float64, from the diagonal tiles."""
    parts = [torch.diagonal(net.block_scores(xb[k:k + chunk], yb[k:k + chunk]), dim1=-2, dim2=-1)
             for k in range(0, xb.shape[0], chunk)]
    return torch.cat(parts).reshape(-1)[:m].double()


def _streamed_value(net, form, x, y, b: int) -> torch.Tensor:
    """``form.finish`` of the diagonal and the row statistics, accumulated over column tiles per row block."""
    m = x.shape[0]
    xb, yb = _blocks(x, b), _blocks(y, b)
    nb, chunk = xb.shape[0], _chunk(b)
    d = _diagonal(net, xb, yb, m, chunk)
    reductions = form.reductions(d)
    if not reductions:
        return form.finish(d, [])
    col = torch.arange(nb * b, device=x.device).view(nb, 1, b)
    stats = [torch.full((nb * b,), float("-inf") if kind == "logsumexp" else 0.0, dtype=torch.float64,
                        device=x.device) for kind, _ in reductions]
    for i in range(nb):
        rows = slice(i * b, (i + 1) * b)
        row = torch.arange(i * b, (i + 1) * b, device=x.device).view(1, b, 1)
        for j in range(0, nb, chunk):
            c = min(chunk, nb - j)
            tiles = net.block_scores(xb[i:i + 1].expand(c, -1, -1), yb[j:j + c]).double()    # (c, b, b)
            cols = col[j:j + c]
            drop = (cols == row) | (cols >= m)            # the diagonal and the padding columns
            for k, (kind, h) in enumerate(reductions):
                mapped = tiles if h is None else h(tiles)
                if kind == "logsumexp":
                    part = torch.logsumexp(mapped.masked_fill(drop, float("-inf")), dim=-1)
                    stats[k][rows] = torch.logaddexp(stats[k][rows], torch.logsumexp(part, dim=0))
                else:
                    stats[k][rows] += mapped.masked_fill(drop, 0.0).sum(dim=(0, 2))
    return form.finish(d, [s[:m] for s in stats])
