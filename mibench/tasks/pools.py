"""Class pools for the same-class-sampling tasks, and the error-free decoder that makes the truth hold.

I(X;Y) = H(C) (Lee & Rhee 2024 §4.3, Lee et al. 2023 Thm 3.2) needs the class to be decodable without
error from each item that can be sampled.  We make that hold *by construction*: a linear
(logistic-regression) decoder is fitted on the whole candidate pool (features standardised,
small L2 penalty, full-batch L-BFGS, deterministic), and each class pool keeps only the items it
classifies correctly with a logit margin >= ``margin``.  On the kept pool that decoder is then
error-free (accuracy asserted to be exactly 1.0 and recorded in ``info()``), so an error-free
decoder exists and the true MI is exactly H(C) per source.  For MNIST 0/1 nearly every digit
passes; for frozen sentence embeddings (not linearly separable by sentiment) this filtering is
what makes the text task's truth exact.

The kept indices are cached (``<cache>/pools``) keyed by the data identity and the decoder
settings.

A :class:`ClassPool` holds both classes concatenated in one tensor on the task's device; a
batch is one index gather (:meth:`ClassPool.draw` is vectorised, no per-sample Python).
"""
from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np
import torch

from mibench.errors import MibenchError
from mibench.tasks.base import batch_count, bsc_crossover, check_mi_request

DECODER_VERSION = 1


def fit_linear_decoder(features, labels, l2: float = 1e-3, max_iter: int = 300,
                       tolerance_grad: float = 1e-9, tolerance_change: float = 1e-12, dtype=torch.float64, *,
                       loss: str = "sigmoid", k: int | None = None, std_floor: float = 1e-6):
    """A linear decoder fitted by full-batch L-BFGS (strong-Wolfe line search, history 20) on
    standardised features, with an L2 penalty ``0.5 * l2 * |W|^2``.

    ``loss="sigmoid"``: logistic regression, class 1 vs 0 for 1-D ``labels``, or one independent
    regression per column for 2-D (n, m) 0/1 ``labels`` (the per-source probes of
    :mod:`mibench.analysis.layer_study`).  ``loss="softmax"``: multinomial logistic regression on
    integer ``labels`` in 0..k-1 (the K-class decoder of :mod:`mibench.tasks.label_channel`).

    Parameters
    ----------
    features : (n, d) array or tensor.
    labels : (n,) or (n, m) 0/1 labels (sigmoid); (n,) class indices (softmax).
    l2 : L2 penalty on the weights.
    max_iter, tolerance_grad, tolerance_change : L-BFGS settings.
    dtype : the dtype the decoder is fitted and applied in.
    loss : ``"sigmoid"`` or ``"softmax"``.
    k : number of classes (softmax only).
    std_floor : smallest feature standard deviation used for standardising.

    Returns
    -------
    A function ``logits(features) -> np.ndarray``: sigmoid, float64 log-odds of class 1, shape (n,)
    or (n, m); softmax, the (n, k) logits in ``dtype``.
    """
    if loss not in ("sigmoid", "softmax"):
        raise ValueError(f"loss must be 'sigmoid' or 'softmax', got {loss!r}")
    if loss == "softmax" and k is None:
        raise ValueError("a softmax decoder needs k, the number of classes")
    x = torch.as_tensor(features).to(dtype)
    if loss == "softmax":
        y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
        out_shape = (k,)
        objective = torch.nn.functional.cross_entropy
    else:
        y = torch.as_tensor(np.asarray(labels)).to(dtype)
        out_shape = tuple(y.shape[1:])
        objective = torch.nn.functional.binary_cross_entropy_with_logits
    mean = x.mean(0)
    std = x.std(0).clamp_min(std_floor)
    z = (x - mean) / std
    w = torch.zeros((z.shape[1], *out_shape), dtype=dtype, requires_grad=True)
    b = torch.zeros(out_shape, dtype=dtype, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], lr=1.0, max_iter=max_iter, tolerance_grad=tolerance_grad,
                            tolerance_change=tolerance_change, history_size=20, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        value = objective(z @ w + b, y) + 0.5 * l2 * (w * w).sum()
        value.backward()
        return value

    opt.step(closure)
    w_, b_ = w.detach(), b.detach()

    def logits(feat) -> np.ndarray:
        f = torch.as_tensor(feat).to(dtype)
        out = ((f - mean) / std) @ w_ + b_
        return (out.double() if loss == "sigmoid" else out).numpy()

    return logits


def filter_by_decoder(features: np.ndarray, labels: np.ndarray, margin: float, l2: float = 1e-3) -> dict:
    """Fit the decoder on all items, keep those it gets right with logit margin >= margin.

    Returns {"keep": int64 indices, "accuracy_before": ..., "decoder_accuracy": accuracy on the kept
    pool (1.0), "kept_per_class", "candidates_per_class", "margin", "decoder"}.
    """
    try:
        ok = math.isfinite(float(margin)) and float(margin) >= 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise MibenchError(f"decoder margin must be a finite number >= 0, got {margin!r}")
    labels = np.asarray(labels).astype(np.int64)
    if set(np.unique(labels)) != {0, 1}:
        raise MibenchError("a class pool needs items of both classes 0 and 1")
    logit = fit_linear_decoder(features, labels, l2=l2)(features)
    signed = np.where(labels == 1, logit, -logit)
    correct = signed > 0
    keep = np.flatnonzero(signed >= max(margin, 1e-12))
    kept_acc = float(np.mean(correct[keep])) if len(keep) else 0.0
    out = {
        "keep": keep,
        "decoder": f"logistic regression (standardised features, L2 {l2:g}, L-BFGS) with logit margin >= {margin:g}",
        "margin": float(margin),
        "accuracy_before": float(np.mean(correct)),
        "decoder_accuracy": kept_acc,
        "candidates_per_class": [int((labels == c).sum()) for c in (0, 1)],
        "kept_per_class": [int((labels[keep] == c).sum()) for c in (0, 1)],
    }
    return out


def cached_filter(kind: str, identity: dict, features_fn, labels: np.ndarray, margin: float, l2: float = 1e-3) -> dict:
    """:func:`filter_by_decoder` with its result cached under ``<cache>/pools`` by identity+settings."""
    from mibench.data.sources import cache_dir

    key = {"version": DECODER_VERSION, "kind": kind, "identity": identity, "margin": float(margin), "l2": float(l2),
           "n": int(len(labels))}
    kh = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_dir() / "pools"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{kind}-{kh}.json"
    if path.is_file():
        try:
            rec = json.loads(path.read_text())
            rec["keep"] = np.asarray(rec["keep"], dtype=np.int64)
            if rec.get("key") == key:
                return rec
        except (OSError, ValueError, KeyError):
            pass
    rec = filter_by_decoder(features_fn(), labels, margin, l2)
    rec["key"] = key
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({**rec, "keep": rec["keep"].tolist()}))
    os.replace(tmp, path)
    return rec


def check_kept_pool(rec: dict, what: str) -> None:
    # an emptied pool first: its accuracy (0 or NaN over no items) is not the decoder's failing
    if min(rec["kept_per_class"]) < 2:
        raise MibenchError(f"{what}: fewer than 2 items per class survive the decoder filter "
                           f"({rec['kept_per_class']}); lower the margin or use more data")
    if rec["decoder_accuracy"] != 1.0:
        raise MibenchError(f"{what}: decoder accuracy on the kept pool is {rec['decoder_accuracy']}, not 1.0")


def pool_info(rec: dict) -> dict:
    return {k: rec[k] for k in ("decoder", "margin", "accuracy_before", "decoder_accuracy",
                                "candidates_per_class", "kept_per_class")}


class ClassPool:
    """Items of classes 0 and 1 in one tensor (class 0 first); vectorised same-class draws."""

    def __init__(self, items: torch.Tensor, labels, device):
        labels = torch.as_tensor(np.asarray(labels)).long()
        order = torch.argsort(labels, stable=True)
        self.items = items[order].to(device).contiguous()
        counts = torch.bincount(labels, minlength=2)
        if counts.numel() != 2 or int(counts.min()) < 2:
            raise MibenchError(f"class pool needs >= 2 items of each class 0/1, got {counts.tolist()}")
        self.device = torch.device(device)
        self.sizes = counts.to(self.device)
        self.offsets = torch.tensor([0, int(counts[0])], device=self.device)
        self.sizes_list = [int(c) for c in counts]

    def __len__(self) -> int:
        return int(self.items.shape[0])

    def gather(self, index: torch.Tensor) -> torch.Tensor:
        """items[index] for an index tensor of any shape (one index_select on a flat view)."""
        flat = torch.index_select(self.items.reshape(self.items.shape[0], -1), 0, index.reshape(-1))
        return flat.view(*index.shape, *self.items.shape[1:])

    def draw(self, cx: torch.Tensor, cy: torch.Tensor, generator: torch.Generator, exclude_same_item: bool = False):
        """Global indices (ix, iy) for class arrays cx, cy (same shape, long in {0,1}).

        ix is uniform within class cx.  By default iy is uniform within class cy *independently of
        ix* given the classes, so X - C - C' - Y is a Markov chain and I(X;Y) = I(C;C') exactly
        (= ds (1 - H_b(beta)) bits with an error-free decoder).  ``exclude_same_item=True`` is the
        paper's construction (§4.4: "a different image or text of same class is drawn"): where
        cy == cx, iy is never the same item as ix.  That couples the item indices and adds a small
        excess over ds (1 - H_b(beta)) that shrinks with the pool size (tests/tasks/test_truth_and_pairing.py
        computes it exactly by enumeration).
        """
        u = torch.rand((2,) + tuple(cx.shape), generator=generator, device=self.device, dtype=torch.float64)
        nx = self.sizes[cx]
        jx = torch.minimum((u[0] * nx).long(), nx - 1)
        if not exclude_same_item:
            ny = self.sizes[cy]
            return self.offsets[cx] + jx, self.offsets[cy] + torch.minimum((u[1] * ny).long(), ny - 1)
        same = (cx == cy).long()
        m = self.sizes[cy] - same
        jy = torch.minimum((u[1] * m).long(), m - 1)
        jy = jy + same * (jy >= jx).long()
        return self.offsets[cx] + jx, self.offsets[cy] + jy

    def draw_one(self, c: torch.Tensor, generator: torch.Generator):
        u = torch.rand(tuple(c.shape), generator=generator, device=self.device, dtype=torch.float64)
        n = self.sizes[c]
        return self.offsets[c] + torch.minimum((u * n).long(), n - 1)


def pairing_mi_bits(sizes, beta: float, exclude_same_item: bool) -> float:
    """Exact I(item of X; item of Y) in bits for ONE source, in closed form.

    One source: C ~ fair coin, X's item uniform in class C (pool sizes ``sizes`` = (n0, n1)),
    C' = C XOR Bernoulli(beta), Y's item uniform in class C' -- independently of X's item, or
    (``exclude_same_item``) never X's item when C' = C.  p(i) = 1 / (2 n_c) for both items, and

    * independent: p(i, j) / (p(i) p(j)) = 2 q with q = 1 - beta (same class) or beta, so
      I = (1 - beta) log2 2(1 - beta) + beta log2 2 beta = 1 - H_b(beta) exactly;
    * exclusion: same-class pairs i != j have ratio 2 (1 - beta) n_c / (n_c - 1), so
      I = 1 - H_b(beta) + (1 - beta) / 2 * sum_c log2(n_c / (n_c - 1))  (the excess).

    ds independent sources add up.  tests/tasks/test_truth_and_pairing.py checks this against brute-force
    enumeration of the joint pmf and against :meth:`ClassPool.draw`.
    """
    b = float(beta)
    h = 0.0 if b in (0.0, 1.0) else -(b * np.log2(b) + (1 - b) * np.log2(1 - b))
    base = 1.0 - h
    if not exclude_same_item:
        return base
    return base + 0.5 * (1.0 - b) * sum(float(np.log2(n / (n - 1.0))) for n in sizes)


#: the most the paper's exclusion (``exclude_same_item``) may add to the reported truth, in bits, over all
#: sources; a pool small enough for more is refused (the truth reported is ds (1 - H_b(beta)))
EXCLUSION_EXCESS_BITS = 0.02


def check_exclusion_excess(sizes, ds: int) -> None:
    """Refuse ``exclude_same_item`` on pools whose coupling of X's and Y's items adds more than
    :data:`EXCLUSION_EXCESS_BITS` to I(X;Y) (at beta = 0, where it is largest; :func:`pairing_mi_bits`):
    two items a class make the true MI twice the reported one."""
    sizes = [int(n) for n in sizes]
    if min(sizes) < 2:
        raise MibenchError("exclude_same_item needs at least 2 items per class in the pool")
    excess = ds * (pairing_mi_bits(sizes, 0.0, True) - 1.0)
    if excess > EXCLUSION_EXCESS_BITS:
        need = int(np.ceil(1.0 / (1.0 - 2.0 ** (-EXCLUSION_EXCESS_BITS / ds))))
        raise MibenchError(f"exclude_same_item on pools of {min(sizes)} items per class adds up to {excess:.3g} "
                           f"bits to I(X;Y) above the reported ds (1 - H_b(beta)): use at least {need} items per "
                           "class (n_per_class), or drop exclude_same_item")


RENDER_CHECK_VERSION = 4
RENDER_CHECK_N = 2000             # rendered samples per check: 3/4 fit, 1/4 held out
RENDER_CHECK_ITER = 50
RENDER_CHECK_ELEMENTS = 1 << 25   # cap on samples x dims (float32, <= 128 MB): fewer samples for huge dr


def rendered_decodability(task, identity: dict, sides=("x",), n: int = RENDER_CHECK_N, seed: int = 0,
                          blocks: dict | None = None) -> dict:
    """Linear-probe decoder accuracy on what the estimator actually sees: a *difficulty* figure (how
    hard the sources are to read linearly from the rendered input), not a condition of the truth,
    which :mod:`mibench.tasks.truth_check` checks exactly.

    The pool filter above makes every *raw* item decodable; the estimator sees the rendered input
    (for vision: the resized, tiled, possibly nuisance-blended canvas; for text: the concatenated
    blocks).  This draws ``n`` rendered samples at MI = ds (beta = 0), fits one logistic-regression
    probe per source (:func:`fit_linear_decoder` with 2-D labels, one batched L-BFGS) on 3/4 of
    them and reports the held-out accuracy on the rest.  ``sides``: which of X / Y to check (X and
    Y have the same marginal in the vision and text tasks; mixed checks both).

    ``blocks`` maps a side to the :class:`ClassPool` its input concatenates unchanged (text: X and Y
    are ds pool embeddings side by side).  There the support of each block is the pool itself, so
    the check is exact rather than a probe: one decoder is fitted on the whole kept pool and applied
    to every block of the rendered samples (a held-out probe on the ds * hidden concatenation would
    mostly gauge its own over-fitting: docs/tasks.md, "text").

    Returns {"accuracy": mean held-out per-source accuracy (min over sides), "all_sources_accuracy":
    fraction of held-out samples with every source decoded, "min_source_accuracy", "fit_accuracy",
    "n_fit", "n_test", "probe"}; cached under ``<cache>/pools`` by ``identity``.
    """
    from mibench.data.sources import cache_dir

    dr = max(int(task.dim_x), int(task.dim_y))
    n = int(max(400, min(n, RENDER_CHECK_ELEMENTS // dr)))
    key = {"version": RENDER_CHECK_VERSION, "identity": identity, "n": n, "seed": seed, "sides": list(sides)}
    kh = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    folder = cache_dir() / "pools"
    path = folder / f"rendered-{task.name}-{kh}.json"
    if path.is_file():
        try:
            rec = json.loads(path.read_text())
            if rec.pop("key", None) == json.loads(json.dumps(key, default=str)):
                return rec
        except (OSError, ValueError):
            pass
    g = torch.Generator(device=task.device).manual_seed(int(seed))
    x, y, cx, cy = task.sample_with_classes(n, float(task.ds), g)
    n_fit = (3 * n) // 4
    per_side = {}
    blocks = blocks or {}
    for side, feats, cls in (("x", x, cx), ("y", y, cy)):
        if side not in sides:
            continue
        if side in blocks:
            pool = blocks[side]
            items = pool.items.reshape(len(pool), -1).float().cpu()
            labels = (torch.arange(len(pool)) >= int(pool.offsets[1])).double().numpy()
            dec = fit_linear_decoder(items, labels, dtype=torch.float32)
            pool_ok = (dec(items) > 0) == (labels > 0.5)
            c = cls.detach().cpu().numpy()
            ok = ((dec(feats.detach().float().cpu().reshape(n * task.ds, -1)) > 0) == (c.reshape(-1) > 0.5))
            ok = ok.reshape(n, task.ds)
            per_side[side] = {"accuracy": float(ok.mean()), "min_source_accuracy": float(ok.mean(0).min()),
                              "all_sources_accuracy": float(ok.all(1).mean()), "fit_accuracy": float(pool_ok.mean()),
                              "method": "block-wise: one decoder fitted on the whole kept pool, applied to each "
                                        f"block of {n} rendered samples"}
            continue
        f = feats.detach().float().cpu()
        c = cls.detach().cpu().numpy().astype(np.float64)
        logits = fit_linear_decoder(f[:n_fit], c[:n_fit], max_iter=RENDER_CHECK_ITER, dtype=torch.float32)
        fit_ok = (logits(f[:n_fit]) > 0) == (c[:n_fit] > 0.5)
        ok = (logits(f[n_fit:]) > 0) == (c[n_fit:] > 0.5)
        per_side[side] = {"accuracy": float(ok.mean()), "min_source_accuracy": float(ok.mean(0).min()),
                          "all_sources_accuracy": float(ok.all(1).mean()), "fit_accuracy": float(fit_ok.mean()),
                          "method": f"held-out probe: one logistic regression per source on {n_fit} rendered samples, "
                                    f"tested on {n - n_fit} more"}
    worst = min(per_side, key=lambda k: per_side[k]["accuracy"])
    rec = {**per_side[worst], "n_fit": int(n_fit), "n_test": int(n - n_fit), "checked": sorted(per_side),
           "per_side": per_side, "role": "difficulty figure (linear readability of the sources); the truth's "
                                         "condition is task_info.truth_check",
           "probe": per_side[worst]["method"] + " (logistic regression on standardised inputs, L2 1e-3, "
                    "float32 L-BFGS; samples at MI = ds)"}
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({**rec, "key": key}, default=str))
    os.replace(tmp, path)
    return rec


class BSCSources:
    """ds fair binary sources; X gets C, Y gets C XOR Bernoulli(beta) (Lee & Rhee 2024, Thm 4.4).

    Subclasses set ``name``, ``ds``, ``device``, ``_beta = {}`` and define ``sample_with_classes``.
    """

    def check_pairing(self) -> None:
        """With the paper's exclusion (``exclude_same_item``), refuse a pool too small for the reported truth
        (:func:`check_exclusion_excess`); call once the pool is loaded."""
        if getattr(self, "exclude_same_item", False):
            check_exclusion_excess(self.pool.sizes.tolist(), self.ds)

    def crossover(self, mi_bits: float) -> float:
        """BSC crossover beta for ``mi_bits`` (exact root, memoised per task)."""
        beta = self._beta.get(mi_bits)
        if beta is None:
            check_mi_request(self.name, mi_bits, self.max_mi_bits, f"ds = {self.ds} binary sources")
            beta = self._beta[mi_bits] = bsc_crossover(self.ds, mi_bits)
        return beta

    @property
    def max_mi_bits(self) -> float:
        return float(self.ds)

    def draw_classes(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        beta = self.crossover(float(mi_bits))
        u = torch.rand(2, batch_count(batch_size), self.ds, generator=generator, device=self.device)
        cx = (u[0] < 0.5).long()
        return cx, cx ^ (u[1] < beta).long()

    def sample(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        x, y, _, _ = self.sample_with_classes(batch_size, mi_bits, generator)
        return x, y
