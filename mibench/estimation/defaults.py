"""The data-sized training defaults of :func:`mibench.estimate`."""
from __future__ import annotations

BLOCK = 32            # training batches are scored in BLOCK x BLOCK pairs
MIN_STEPS = 500


def default_settings(n_train: int, dim_x: int, dim_y: int, reduced_dims: tuple[int, int] | None = None) -> dict:
    """The data-sized defaults (documented rule; docs/estimators.md), d = dim_x + dim_y, or, for inputs
    reduced to their canonical directions (:mod:`mibench.estimators.reduce`, where d > 256), d = the
    reduced dimensions' sum:

    * critic width ``hidden`` = 32 for d <= 4, else 64; ``layers`` = 1 (input layer + 1 hidden
      layer + output: two ReLU layers).  Larger critics overfit 8,000 training pairs sooner and
      were not more accurate in development trials (gauss-sparse-25x25, 10,000 pairs: width 128
      0.88, width 64 0.90 nats, truth 1.0, before the Gaussian start; vision 64 x 64 reduced to 16
      principal components a side, seed 0: width 64 3.06 bits, 256 2.96, 2 x 128 2.89, truth 4);
    * the Gaussian start (module docstring, step 2) where d <= 256 and n_train >= 20 d: without it
      the joint critic reached 0.56 nats on gauss-dense-25x25 (truth 1.0; bilinear 0.78, separable
      0.26, joint + bilinear 0.78), with it 0.91 and 0.94 (seeds 0, 1) during development;
    * above d = 256 the critic sees each side's leading ridge-CCA directions (rank by a permutation
      null), not the raw coordinates: on the benchmark's vision task (64 x 64, ds = 10, 4 bits,
      n = 10,000, seed 0) the raw joint critic read 2.15 bits (smile-5), 16-32 principal
      components a side 3.06-3.19, the 10 canonical directions found 3.30 (DV readout); on text
      (ds = 2, 768 a side, 1 bit) raw 0.27, 2-32 principal components <= 0.23 (the sentiment
      direction is not a leading principal one), 2 canonical directions 0.69 (DV readout, seed 0);
    * ``noise`` = 0 (Gaussian noise on the standardised training batches, opt-in): on the 10 vision
      directions, noise 0.3 lifted the unclipped DV readout (``smile-inf``) from 3.30 to 3.41 bits
      (seed 0) but pushed the SMILE-5 (``smile``) readout past the truth, 4.25 / 4.34 / 4.51
      bits over seeds 0-2 vs 3.80 / 3.81 / 4.00 without noise (truth 4), so it is off by default;
    * ``lr`` (Adam) = 5e-3 for hidden 32, 2e-3 for hidden 64;
    * ``batch_size`` = 256 pairs where n_train >= 2048, else the largest multiple of 32 <= n_train / 8
      (at least 32); each batch is scored in 32 x 32 blocks;
    * ``steps`` (budget) = 3000, ``eval_every`` = 25 steps, ``patience`` = 6 evaluations (150
      steps) without a new best held-out value, never stopping before ``min_steps`` = 500 (mix-5x5
      stopped at step 150 with 0.67 nats when the Gaussian start was its best; 0.82 with the 500
      floor, truth 1.0).
    """
    d = sum(reduced_dims) if reduced_dims is not None else dim_x + dim_y
    hidden = 32 if d <= 4 else 64
    batch = 256 if n_train >= 2048 else max(BLOCK, (n_train // 8) // BLOCK * BLOCK)
    lr = 5e-3 if hidden == 32 else 2e-3
    return {"hidden": hidden, "layers": 1, "batch_size": batch, "lr": lr, "steps": 3000, "eval_every": 25,
            "patience": 6, "min_steps": MIN_STEPS, "noise": 0.0}
