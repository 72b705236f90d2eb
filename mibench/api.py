"""``mibench.estimate``: estimate I(X;Y) on your own paired samples with any registered estimator
and critic, with a held-out readout that cannot collapse (issue 13).

How it works (all of it seeded by ``seed``):

1. The n pairs are split into a training part and a held-out part (``test_fraction``, default 0.2).
   Every column goes through a strictly increasing map fitted on the training part: normal scores
   (``preprocess="normal-scores"``, default: each value to the normal quantile of its training
   mid-rank, so margins are Gaussian whatever their tails), then a z-score.  A fixed strictly
   increasing map per coordinate does not change I(X;Y) (Kraskov et al. 2004, §II), and the
   held-out pairs go through the same fitted map.
2. Where d = dim_x + dim_y <= 256 and there are >= 20 training pairs per dimension
   (``gaussian_critic=None`` decides by that rule), the critic starts as the log density ratio of
   the Gaussian fitted to the training pairs (the optimal critic for jointly Gaussian data, the
   one a CCA estimator implies) plus ``alpha`` times the network, alpha = 0 at the start
   (:class:`GaussianResidualCritic`): the network learns what the Gaussian misses, and the
   starting critic is itself the first held-out candidate (step 0).  The Gaussian part trains at
   a tenth of the learning rate.
3. The critic trains on random minibatches of ``batch_size`` training pairs.  A batch is scored in
   blocks of 32 x 32 pairs: the 32 diagonal pairs of a block are joint samples, its 32 * 31
   off-diagonal pairs stand in for the product of marginals (as in the benchmark harness, where the
   block is the whole batch), so a step sees ``batch_size`` joint pairs at ``batch_size * 32``
   critic evaluations instead of ``batch_size**2``.
4. Every ``eval_every`` steps the estimator's bound is evaluated on the held-out pairs, split into
   blocks of up to 125 pairs (one batched pass); the critic state with the best held-out value is
   kept, and training stops when ``patience`` evaluations in a row did not improve on it, but not
   before ``min_steps`` (default 500) steps, so a network starting at alpha = 0 has time to grow
   (early stopping).  The reported ``mi`` is that best held-out value, read again on reshuffled
   held-out blocks, with ``mi_stderr`` = standard deviation over the held-out blocks / sqrt(number of blocks).
5. ``mi`` is never negative: a held-out value below zero is reported as 0 with ``clipped = True``
   (the raw value stays in ``mi_raw``), and ``status`` says how much to trust the number.

``status`` values:

``converged``               the held-out value rose and then plateaued; training stopped early.
``overfit``                 the held-out value fell clearly (> max(2 stderr, 0.02 nats)) below its best
                            before training stopped: the critic began to overfit, the estimate is the
                            best checkpoint's (before it did); more data or a smaller critic may give more.
``still_increasing``        the step budget ran out while the held-out value was still improving (its
                            best came in the last quarter of the evaluations): the estimate may be low;
                            pass more ``steps``.
``no_dependence_detected``  the held-out value is within 2 standard errors of 0 (or below): no
                            dependence this estimator can detect at this sample size; ``mi`` is
                            max(0, ``mi_raw``).
``diverged``                the training estimate became non-finite; the last finite best checkpoint
                            (if any) is reported.
``train_only``              ``test_fraction=0``: no held-out readout, ``mi`` is the mean of the last 10%
                            of the training curve (inflated by overfitting; not recommended).

Defaults sized to the data (d = dim_x + dim_y, n_train the training pairs); see :func:`default_settings`.
"""
from __future__ import annotations

import copy
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .errors import MibenchError

BLOCK = 32            # training batches are scored in BLOCK x BLOCK pairs
EVAL_BLOCK = 125      # held-out blocks have at most EVAL_BLOCK pairs
MIN_SAMPLES = 100
MIN_STEPS = 500

STATUSES = ("converged", "overfit", "still_increasing", "no_dependence_detected", "diverged", "train_only")


@dataclass
class EstimateResult:
    mi: float                 # held-out estimate at the best checkpoint, >= 0 (see mi_raw), in `units`
    units: str
    estimator: str
    critic: str
    curve: np.ndarray         # per-step training estimates, in `units`
    train_estimate: float     # mean of the last 10% of the training curve, in `units`
    n_train: int
    n_test: int
    diverged_at: int | None   # first step with a non-finite estimate, if any
    status: str = "converged"             # one of STATUSES (module docstring)
    mi_stderr: float = float("nan")       # standard error of mi over held-out blocks, in `units`
    mi_raw: float = float("nan")          # the held-out value before clipping at 0, in `units`
    clipped: bool = False                 # mi_raw < 0 was reported as 0
    seconds: float = 0.0                  # wall time of the call
    n_parameters: int = 0                 # trainable parameters of critic + estimator head
    best_step: int = 0                    # training step of the reported checkpoint
    steps_run: int = 0                    # steps trained before early stopping / the budget
    held_out_curve: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # (step, value) in `units`
    settings: dict = field(default_factory=dict)  # the resolved training settings (defaults filled in)

    def __float__(self) -> float:
        return float(self.mi)


class ArrayTask:
    """Minibatches of the user's training pairs (the 'task' a harness run would train on)."""

    name = "arrays"

    def __init__(self, x: torch.Tensor, y: torch.Tensor):
        self.x, self.y = x, y
        self.dim_x, self.dim_y = x.shape[1], y.shape[1]
        self.device = x.device

    @property
    def max_mi_bits(self) -> float:
        return math.inf

    def sample(self, batch_size, mi_bits, generator):
        idx = torch.randint(0, self.x.shape[0], (batch_size,), generator=generator, device=self.device)
        return self.x[idx], self.y[idx]

    def info(self) -> dict:
        return {"task": self.name, "n": int(self.x.shape[0]), "dim_x": self.dim_x, "dim_y": self.dim_y}


def _as_2d(a, name: str) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().numpy()
    try:
        arr = np.array(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise MibenchError(f"{name} must be a numeric array") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        arr = arr.reshape(arr.shape[0], -1)
    if not np.all(np.isfinite(arr)):
        raise MibenchError(f"{name} contains NaN or infinite values")
    return arr


PREPROCESS = ("normal-scores", "zscore", "none")
GAUSSIAN_MAX_DIM = 256        # d = dim_x + dim_y at most this for the Gaussian part of the critic ...
GAUSSIAN_PAIRS_PER_DIM = 20   # ... and at least this many training pairs per dimension
GAUSSIAN_LR_SCALE = 0.1       # the Gaussian part trains at this fraction of the critic's lr


def _normal_scores(a: np.ndarray, train: np.ndarray) -> None:
    """Map every column of ``a`` in place through a strictly increasing function fitted on the rows
    ``train``: each distinct training value goes to the normal quantile of its mid-rank,
    Phi^-1((rank - 1/2) / n); values between training values are interpolated linearly, values
    beyond them extrapolated with the average slope over the outer 1% of the distinct values (so
    one close pair of extremes cannot blow the slope up).  A fixed strictly increasing map per
    coordinate leaves I(X;Y) unchanged (Kraskov et al. 2004, §II); it gives heavy-tailed, skewed or bounded
    margins Gaussian ones, as in Gaussian-copula MI estimators (Ince et al. 2017, Hum. Brain Mapp.
    38, §2.3), so no coordinate dominates the critic through its tails."""
    from scipy.special import ndtri

    n = len(train)
    for j in range(a.shape[1]):
        u, counts = np.unique(a[train, j], return_counts=True)
        if len(u) < 2:
            a[:, j] = 0.0
            continue
        mid = np.cumsum(counts) - 0.5 * counts
        s = ndtri(mid / n)
        col = a[:, j].copy()
        out = np.interp(col, u, s)
        lo, hi = col < u[0], col > u[-1]
        k = max(1, len(u) // 100)     # end slopes over the outer 1% of the distinct values
        out[lo] = s[0] + (col[lo] - u[0]) * (s[k] - s[0]) / (u[k] - u[0])
        out[hi] = s[-1] + (col[hi] - u[-1]) * (s[-1] - s[-1 - k]) / (u[-1] - u[-1 - k])
        a[:, j] = out


MAX_CANONICAL_CORRELATION = 1 - 1e-6   # keeps the Gaussian critic finite when a column is copied


def gaussian_log_ratio(cov: np.ndarray, dim_x: int):
    """(M_xx, M_xy, M_yy, c) of log N(x, y) / (N(x) N(y)) = c - x'M_xx x / 2 - y'M_yy y / 2 - x'M_xy y
    for zero-mean pairs with covariance ``cov``, built through canonical correlation analysis so
    that rank-deficient blocks (one-hot columns, duplicates) stay finite: whiten X and Y
    separately (dropping directions with variance < 1e-9 of the largest), canonical pairs (a_i, b_i)
    with correlations r_i from the SVD of the whitened cross-covariance; then the ratio is
    sum_i [-log(1 - r_i^2) / 2 - (r_i^2 (a_i^2 + b_i^2) - 2 r_i a_i b_i) / (2 (1 - r_i^2))]
    (bivariate normal density ratio per canonical pair), and c = -sum_i log(1 - r_i^2) / 2 is the
    Gaussian MI of ``cov``."""
    s = np.asarray(cov, dtype=np.float64)

    def whitener(block):
        lam, u = np.linalg.eigh(block)
        keep = lam > 1e-9 * max(lam.max(), 1e-300)
        return (u[:, keep] / np.sqrt(lam[keep])).T            # (rank, dim)

    wx, wy = whitener(s[:dim_x, :dim_x]), whitener(s[dim_x:, dim_x:])
    u, r, vt = np.linalg.svd(wx @ s[:dim_x, dim_x:] @ wy.T, full_matrices=False)
    r = np.clip(r, 0.0, MAX_CANONICAL_CORRELATION)
    a, b = u.T @ wx, vt @ wy                                     # canonical directions (k, dx), (k, dy)
    g = 1.0 - r ** 2
    m_xx = a.T @ ((r ** 2 / g)[:, None] * a)
    m_yy = b.T @ ((r ** 2 / g)[:, None] * b)
    m_xy = -a.T @ ((r / g)[:, None] * b)
    return m_xx, m_xy, m_yy, float(-0.5 * np.log(g).sum())


class GaussianResidualCritic(torch.nn.Module):
    """T(x, y) = log N(x, y) / (N(x) N(y)) + alpha * critic(x, y).

    The first term is the log density ratio of the Gaussian with the training pairs' covariance S
    (the optimal critic if the pairs were jointly Gaussian; its bound is what a CCA / Gaussian
    estimator would report), from :func:`gaussian_log_ratio`.  ``alpha`` starts at 0, so training
    starts from the Gaussian critic and the network learns only what the Gaussian misses; any critic
    gives a valid variational bound, so the held-out readout stays a lower-bound estimate."""

    def __init__(self, base: torch.nn.Module, cov: np.ndarray, dim_x: int):
        super().__init__()
        m_xx, m_xy, m_yy, c = gaussian_log_ratio(cov, dim_x)
        t = lambda a: torch.nn.Parameter(torch.as_tensor(a, dtype=torch.float32))  # noqa: E731
        self.base = base
        self.m_xx, self.m_xy, self.m_yy, self.c = t(m_xx), t(m_xy), t(m_yy), t(c)
        self.alpha = torch.nn.Parameter(torch.zeros(()))

    def gaussian_scores(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """(..., B, dx), (..., B, dy) -> (..., B, B) scores of the Gaussian term alone."""
        qx = ((x @ self.m_xx) * x).sum(-1)
        qy = ((y @ self.m_yy) * y).sum(-1)
        return self.c - 0.5 * (qx.unsqueeze(-1) + qy.unsqueeze(-2)) - (x @ self.m_xy) @ y.transpose(-1, -2)

    def gaussian_parameters(self) -> list[torch.nn.Parameter]:
        return [self.m_xx, self.m_xy, self.m_yy, self.c]

    def forward(self, x, y):
        return self.gaussian_scores(x, y) + self.alpha * self.base(x, y)


def default_settings(n_train: int, dim_x: int, dim_y: int) -> dict:
    """The data-sized defaults (documented rule; README "Python API"), d = dim_x + dim_y:

    * critic width ``hidden`` = 32 for d <= 4, else 64; ``layers`` = 1 (input layer + 1 hidden
      layer + output: two ReLU layers).  Larger critics overfit 8,000 training pairs sooner and
      were not more accurate in development trials (gauss-sparse-25x25, 10,000 pairs: width 128
      0.88, width 64 0.90 nats, truth 1.0, before the Gaussian start);
    * the Gaussian start (module docstring, step 2) where d <= 256 and n_train >= 20 d: without it
      the joint critic reached 0.56 nats on gauss-dense-25x25 (truth 1.0; bilinear 0.78, separable
      0.26, joint + bilinear 0.78), with it 0.91 and 0.94 (seeds 0, 1) during development;
    * ``lr`` (Adam) = 5e-3 for hidden 32, 2e-3 for hidden 64;
    * ``batch_size`` = 256 pairs where n_train >= 2048, else the largest multiple of 32 <= n_train / 8
      (at least 32); each batch is scored in 32 x 32 blocks;
    * ``steps`` (budget) = 3000, ``eval_every`` = 25 steps, ``patience`` = 6 evaluations (150
      steps) without a new best held-out value, never stopping before ``min_steps`` = 500 (mix-5x5
      stopped at step 150 with 0.67 nats when the Gaussian start was its best; 0.82 with the 500
      floor, truth 1.0).
    """
    d = dim_x + dim_y
    hidden = 32 if d <= 4 else 64
    batch = 256 if n_train >= 2048 else max(BLOCK, (n_train // 8) // BLOCK * BLOCK)
    lr = 5e-3 if hidden == 32 else 2e-3
    return {"hidden": hidden, "layers": 1, "batch_size": batch, "lr": lr, "steps": 3000, "eval_every": 25,
            "patience": 6, "min_steps": MIN_STEPS}


def estimate(x, y, estimator: str = "smile", critic: str = "joint", steps: int | None = None,
             batch_size: int | None = None, lr: float | None = None, hidden: int | None = None,
             layers: int | None = None, embed: int = 32, test_fraction: float = 0.2,
             preprocess: str = "normal-scores", gaussian_critic: bool | None = None, device: str = "auto",
             seed: int = 0, units: str = "bits", progress: bool = False,
             eval_every: int | None = None, patience: int | None = None, min_steps: int | None = None,
             threads: int | None = 1) -> EstimateResult:
    """Estimate I(X;Y) from paired samples ``x`` (n, dx) and ``y`` (n, dy); see the module docstring
    for the procedure and the ``status`` values.

    Any argument left ``None`` takes the data-sized default of :func:`default_settings`.
    ``preprocess``: 'normal-scores' (default), 'zscore' or 'none' (module docstring, step 1).
    ``gaussian_critic``: start from the Gaussian critic (True), never (False), or by the size rule
    (None, default; module docstring, step 2).
    ``estimator`` / ``critic``: any registered name (``mibench list``).  ``units``: 'bits' or 'nats'.
    ``test_fraction=0`` trains on everything and reports the training tail (status ``train_only``).
    ``patience=0`` disables early stopping (train the whole budget, still report the best checkpoint).
    ``threads``: torch CPU threads for this call (restored afterwards; ``None`` keeps torch's
    setting).  Default 1: the default critics are small, and on the busy 2-core development machine
    one thread was measured 5x faster per step than two (36 vs 194 ms for a joint critic of width 64
    on 181 x 181 pairs, forward + backward, during development).
    Returns an :class:`EstimateResult` (``mi``, ``status``, ``mi_stderr``, ``seconds``,
    ``n_parameters``, ...).
    """
    t_start = time.perf_counter()
    old_threads = torch.get_num_threads()
    if threads is not None:
        if int(threads) < 1:
            raise MibenchError(f"threads must be >= 1, got {threads}")
        torch.set_num_threads(int(threads))
    try:
        return _estimate(x, y, estimator, critic, steps, batch_size, lr, hidden, layers, embed, test_fraction,
                         preprocess, gaussian_critic, device, seed, units, progress, eval_every, patience, min_steps,
                         t_start)
    finally:
        torch.set_num_threads(old_threads)


def _estimate(x, y, estimator, critic, steps, batch_size, lr, hidden, layers, embed, test_fraction, preprocess,
              gaussian_critic, device, seed, units, progress, eval_every, patience, min_steps,
              t_start) -> EstimateResult:
    from .critics import make_critic
    from .estimators import make_estimator, resolve_estimators
    from .harness import resolve_device
    from .kernels import make_adam

    if units not in ("bits", "nats"):
        raise MibenchError(f"units must be 'bits' or 'nats', got {units!r}")
    xa, ya = _as_2d(x, "x"), _as_2d(y, "y")
    if xa.shape[0] != ya.shape[0]:
        raise MibenchError(f"x and y must have the same number of samples, got {xa.shape[0]} and {ya.shape[0]}")
    if preprocess not in PREPROCESS:
        raise MibenchError(f"preprocess must be one of {', '.join(PREPROCESS)}, got {preprocess!r}")
    if not 0 <= test_fraction < 1:
        raise MibenchError(f"test_fraction must be in [0, 1), got {test_fraction}")
    n = xa.shape[0]
    n_test = int(round(n * test_fraction))
    n_train = n - n_test
    auto = default_settings(n_train, xa.shape[1], ya.shape[1])
    opts = {"hidden": hidden, "layers": layers, "batch_size": batch_size, "lr": lr, "steps": steps,
            "eval_every": eval_every, "patience": patience, "min_steps": min_steps}
    s = {k: (auto[k] if v is None else v) for k, v in opts.items()}
    if n < MIN_SAMPLES or n_train < s["batch_size"] or (test_fraction > 0 and n_test < 16):
        raise MibenchError(f"{n} samples are too few for batch_size {s['batch_size']} with test_fraction {test_fraction} "
                           f"(need >= {MIN_SAMPLES} pairs and >= 16 held out); pass more samples or a smaller batch_size")
    if int(s["batch_size"]) < 2:
        raise MibenchError(f"batch_size must be >= 2, got {s['batch_size']}")
    if not (s["lr"] > 0 and math.isfinite(s["lr"])):
        raise MibenchError(f"lr must be a positive number, got {s['lr']}")
    if int(s["steps"]) < 1 or int(s["eval_every"]) < 1 or int(s["patience"]) < 0:
        raise MibenchError("steps and eval_every must be >= 1 and patience >= 0")
    steps, batch, eval_every, patience = int(s["steps"]), int(s["batch_size"]), int(s["eval_every"]), int(s["patience"])
    est_name = resolve_estimators([estimator])[0]
    dev = resolve_device(device)

    perm = np.random.default_rng(seed).permutation(n)
    tr, te = perm[:n_train], perm[n_train:]
    for arr in (xa, ya):
        if preprocess == "normal-scores":
            _normal_scores(arr, tr)
        if preprocess != "none":
            mu, sd = arr[tr].mean(0), arr[tr].std(0)
            arr -= mu
            arr /= np.where(sd > 0, sd, 1.0)
    d = xa.shape[1] + ya.shape[1]
    if gaussian_critic is None:
        gaussian_critic = d <= GAUSSIAN_MAX_DIM and n_train >= GAUSSIAN_PAIRS_PER_DIM * d
    xt = torch.as_tensor(xa, dtype=torch.float32, device=dev)
    yt = torch.as_tensor(ya, dtype=torch.float32, device=dev)
    x_tr, y_tr, x_te, y_te = xt[tr], yt[tr], xt[te], yt[te]

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = make_critic(critic, xa.shape[1], ya.shape[1], int(s["hidden"]), int(s["layers"]), embed)
    if gaussian_critic:
        z = np.concatenate([xa[tr], ya[tr]], axis=1)
        net = GaussianResidualCritic(net, np.cov(z, rowvar=False).reshape(d, d), xa.shape[1])
    net = net.to(dev)
    head = make_estimator(est_name).to(dev)
    params = [p for m in (net, head) for p in m.parameters() if p.requires_grad]
    n_parameters = int(sum(p.numel() for p in params))
    groups: list = params
    if gaussian_critic:
        slow = {id(p) for p in net.gaussian_parameters()}
        groups = [{"params": [p for p in params if id(p) not in slow]},
                  {"params": net.gaussian_parameters(), "lr": float(s["lr"]) * GAUSSIAN_LR_SCALE}]
    optimizer = make_adam(groups, float(s["lr"])) if params else None
    gen = torch.Generator(device=dev).manual_seed(seed)
    block = min(BLOCK, batch)
    batch = batch // block * block

    curve = np.full(steps, np.nan)
    buf = torch.full((steps,), float("nan"), device=dev)
    held: list[tuple[int, float, float]] = []     # (step, value, stderr) nats
    best = (-math.inf, 0.0, 0, None)               # (value, stderr, step, state)
    diverged_at = None
    since_best = 0
    step = 0
    stop = "budget"
    if n_test and gaussian_critic:
        # the starting critic is a candidate too (it is the Gaussian one, already a good bound)
        v0, se0 = _held_out(net, head, x_te, y_te, seed=None)
        held.append((0, v0, se0))
        if math.isfinite(v0):
            best = (v0, se0, 0, copy.deepcopy(net.state_dict()))
    for step in range(1, steps + 1):
        idx = torch.randint(0, n_train, (batch,), generator=gen, device=dev)
        xb, yb = x_tr[idx].view(-1, block, x_tr.shape[1]), y_tr[idx].view(-1, block, y_tr.shape[1])
        net.train()
        loss, value = _block_loss(head, _block_scores(net, xb, yb))
        buf[step - 1] = value
        if not torch.isfinite(loss):
            diverged_at = step - 1
            stop = "diverged"
            break
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
            if loss.requires_grad:
                loss.backward()
            optimizer.step()
        if n_test and (step % eval_every == 0 or step == steps):
            v, se = _held_out(net, head, x_te, y_te, seed=None)
            held.append((step, v, se))
            if progress:
                print(f"step {step}: held-out {v:.4f} +- {se:.4f} nats", file=sys.stderr)
            if math.isfinite(v) and v > best[0]:
                best = (v, se, step, copy.deepcopy(net.state_dict()))
                since_best = 0
            else:
                since_best += 1
                if patience and since_best >= patience and step >= int(s["min_steps"]):
                    stop = "patience"
                    break
    curve[:step] = buf[:step].double().cpu().numpy()
    bad = np.flatnonzero(~np.isfinite(curve[:step]))
    if bad.size and diverged_at is None:
        diverged_at = int(bad[0])
    tail = curve[max(0, step - max(1, step // 10)):step]
    train_est = float(np.nanmean(tail)) if np.isfinite(tail).any() else float("nan")

    if not n_test:
        raw, se, best_step, status = train_est, float("nan"), step, "train_only"
    else:
        if best[3] is not None:
            net.load_state_dict(best[3])
            # final readout of the chosen checkpoint on reshuffled held-out blocks (different negatives
            # than the ones it was selected on, which damps the max-over-evaluations selection bias)
            raw, se = _held_out(net, head, x_te, y_te, seed=seed + 1)
            best_step = best[2]
        else:
            raw, se, best_step = float("nan"), float("nan"), 0
        status = _status(held, best, stop, diverged_at, raw, se)
    if not math.isfinite(raw):
        raise MibenchError(f"estimator {est_name!r} diverged at step {diverged_at} before any finite held-out "
                           "value; try a smaller lr or another estimator")
    clipped = raw < 0
    scale = 1.0 if units == "nats" else 1.0 / math.log(2.0)
    return EstimateResult(
        mi=max(raw, 0.0) * scale, units=units, estimator=est_name, critic=critic, curve=curve * scale,
        train_estimate=train_est * scale, n_train=n_train, n_test=n_test, diverged_at=diverged_at, status=status,
        mi_stderr=se * scale, mi_raw=raw * scale, clipped=bool(clipped), seconds=time.perf_counter() - t_start,
        n_parameters=n_parameters, best_step=best_step, steps_run=step,
        held_out_curve=np.array([(st, v * scale) for st, v, _ in held]).reshape(-1, 2),
        settings={**s, "block": block, "embed": embed, "test_fraction": test_fraction, "preprocess": preprocess,
                  "gaussian_critic": bool(gaussian_critic)})


def _status(held, best, stop, diverged_at, raw, se) -> str:
    if diverged_at is not None and stop == "diverged":
        return "diverged"
    if stop == "budget" and len(held) >= 4 and best[2] > held[int(0.75 * len(held))][0]:
        return "still_increasing"   # checked first: a value still rising at the budget's end may be low for that reason
    if not math.isfinite(raw) or raw <= 2 * se:
        return "no_dependence_detected"
    last = held[-1][1] if held else raw
    if math.isfinite(last) and best[0] - last > max(2 * best[1], 0.02):
        return "overfit"
    return "converged"


def _block_scores(net, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
    """Scores of G blocks: (G, B, dx), (G, B, dy) -> (G, B, B); the joint critic in one batched pass."""
    from .critics.mlp import JointCritic, run_mlp
    from . import kernels

    if isinstance(net, GaussianResidualCritic):
        return net.gaussian_scores(xb, yb) + net.alpha * _block_scores(net.base, xb, yb)
    if isinstance(net, JointCritic):
        g, b = xb.shape[0], xb.shape[1]
        first = net.net[0]
        hx = kernels.linear(xb.reshape(g * b, -1), first.weight_x, first.bias).view(g, b, 1, -1)
        hy = kernels.linear(yb.reshape(g * b, -1), first.weight_y, None).view(g, 1, b, -1)
        h = (hx + hy).relu_()
        return run_mlp(net.net, h.reshape(g * b * b, -1), start=2).view(g, b, b)
    return torch.stack([net(xb[i], yb[i]) for i in range(xb.shape[0])])


def _block_loss(head, scores: torch.Tensor):
    """(mean training loss, mean reported estimate) over the blocks; stateless bounds take all blocks
    at once (the bound functions reduce over the last two dimensions), others one block at a time."""
    from .estimators import BoundEstimator, JSTrainedEstimator

    if isinstance(head, (BoundEstimator, JSTrainedEstimator)):
        loss, value = head(scores)
        return loss.mean(), value.detach().mean()
    losses, values = zip(*(head(scores[i]) for i in range(scores.shape[0])))
    return torch.stack(losses).mean(), torch.stack([v.detach() for v in values]).mean()


@torch.no_grad()
def _held_out(net, head, x, y, seed=None) -> tuple[float, float]:
    """(mean, standard error) in nats of the estimator's reported bound over held-out blocks of up to
    EVAL_BLOCK pairs (at least 4 blocks where the held-out part allows); ``seed`` reshuffles the
    pairs into blocks first."""
    from .estimators import BoundEstimator, JSTrainedEstimator

    n = x.shape[0]
    b = max(2, min(EVAL_BLOCK, n // 4))
    nb = n // b
    if seed is not None:
        idx = torch.randperm(n, generator=torch.Generator().manual_seed(seed)).to(x.device)
        x, y = x[idx], y[idx]
    xb, yb = x[:nb * b].view(nb, b, -1), y[:nb * b].view(nb, b, -1)
    net.eval()
    vals = []
    chunk = max(1, 4_000_000 // (b * b * 64))   # bound the (G, b, b, hidden) activation memory
    for i in range(0, nb, chunk):
        sc = _block_scores(net, xb[i:i + chunk], yb[i:i + chunk])
        if isinstance(head, (BoundEstimator, JSTrainedEstimator)):
            vals.append(head.value(sc).reshape(-1))
        else:
            vals.append(torch.stack([head.value(sc[j]) for j in range(sc.shape[0])]))
    net.train()
    v = torch.cat(vals).double()
    if not torch.isfinite(v).all():
        return float("nan"), float("nan")
    se = float(v.std() / math.sqrt(v.numel())) if v.numel() > 1 else float("nan")
    return float(v.mean()), se
