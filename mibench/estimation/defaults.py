"""The data-sized training defaults of :func:`mibench.estimate`."""
from __future__ import annotations

BLOCK = 32            # training batches are scored in BLOCK x BLOCK pairs
MIN_STEPS = 500
TEST_FRACTION = 0.2   # the share of the pairs a critic or generative estimator holds out for its readout


def default_settings(n_train: int, dim_x: int, dim_y: int, reduced_dims: tuple[int, int] | None = None) -> dict:
    """The data-sized defaults (documented rule; docs/estimators.md, "Defaults"), d = dim_x + dim_y, or,
    for inputs reduced to their canonical directions (:mod:`mibench.estimators.reduce`, where d > 256),
    d = the reduced dimensions' sum.  The trials behind each choice: docs/estimators.md, "Why the
    defaults are what they are".

    * critic width ``hidden`` = 32 for d <= 4, else 64; ``layers`` = 1 (input layer + 1 hidden
      layer + output: two ReLU layers).  Larger critics overfit 8,000 training pairs sooner and
      were not more accurate;
    * the Gaussian start (:mod:`mibench.estimation.gaussian_start`) where d <= 256 and
      n_train >= 20 d: without it the joint critic falls well short of the truth on dense Gaussians;
    * above d = 256 the critic sees each side's leading ridge-CCA directions (rank by a permutation
      null), not the raw coordinates, which it reads far lower (on text the shared direction is not
      a leading principal one either);
    * ``noise`` = 0 (Gaussian noise on the standardised training batches, opt-in): it lifts the
      unclipped DV readout but pushes the SMILE-5 readout past the truth, so it is off by default;
    * ``lr`` (Adam) = 5e-3 for hidden 32, 2e-3 for hidden 64;
    * ``batch_size`` = 256 pairs where n_train >= 2048, else the largest multiple of 32 <= n_train / 8
      (at least 32); each batch is scored in 32 x 32 blocks;
    * ``steps`` (budget) = 3000, ``eval_every`` = 25 steps, ``patience`` = 6 evaluations (150
      steps) without a new best held-out value, never stopping before ``min_steps`` = 500 (so a
      Gaussian start that is the best early does not end training before the critic has learnt).
    """
    d = sum(reduced_dims) if reduced_dims is not None else dim_x + dim_y
    hidden = 32 if d <= 4 else 64
    batch = 256 if n_train >= 2048 else max(BLOCK, (n_train // 8) // BLOCK * BLOCK)
    lr = 5e-3 if hidden == 32 else 2e-3
    return {"hidden": hidden, "layers": 1, "batch_size": batch, "lr": lr, "steps": 3000, "eval_every": 25,
            "patience": 6, "min_steps": MIN_STEPS, "noise": 0.0}
