"""Your own features as a task: ``--task features:FILE.npz``.

The file holds ``features`` (n, d) numbers and integer ``labels`` (n,) with C >= 2 classes.  The
task is the vision / text construction (Lee & Rhee 2024 §4.3-4.5, Lee et al. 2023 Thm 3.2) on your
items:

* **Classes as fair bits.**  C = 2^m classes are m fair binary sources, so classes are drawn
  uniformly (otherwise the 2^m largest classes are kept, recorded in ``info()``); ``ds`` sources
  (default m, a multiple of m) make ds / m items per sample, concatenated into X and likewise Y.
* **BSC for non-integer MI.**  Y's class bits are X's through a binary symmetric channel
  (:class:`~mibench.tasks.pools.BSCSources`), so I(C_X; C_Y) = ds * (1 - H_b(beta)) bits exactly.
* **Truth I(X;Y) = I(C_X; C_Y)** needs the class to be decodable without error from every item
  (then C is a function of X and of Y, and X, Y are independent given the classes): the decoder
  filter of :mod:`~mibench.tasks.pools` keeps only items a linear decoder classifies correctly with
  margin >= ``margin`` (one-vs-rest for C > 2), so the decoder is error-free on the kept pool.
* ``standardize`` (default True): one fixed invertible affine map per feature column, MI unchanged.

Bad files (missing keys, wrong shapes, non-finite values, classes the decoder cannot separate, ...)
raise one-line :class:`~mibench.errors.MibenchError`.  In full: docs/tasks.md, "How each task is
built".
"""
from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
import torch

from mibench.errors import MibenchError
from mibench.tasks.pools import BSCSources, ClassPool, cached_filter, check_kept_pool, fit_linear_decoder, pool_info
from mibench.tasks.registry import TASKS
from mibench.utils.registry import Entry

DEFAULT_MARGIN = 1.0


class MultiClassPool(ClassPool):
    """:class:`ClassPool` for C classes (class 0 first, ..., class C-1 last); the inherited
    vectorised ``draw`` / ``draw_one`` / ``gather`` index by ``sizes`` and ``offsets``."""

    def __init__(self, items: torch.Tensor, labels, n_classes: int, device):
        labels = torch.as_tensor(np.asarray(labels)).long()
        order = torch.argsort(labels, stable=True)
        self.items = items[order].to(device).contiguous()
        counts = torch.bincount(labels, minlength=n_classes)
        if counts.numel() != n_classes or int(counts.min()) < 2:
            raise MibenchError(f"class pool needs >= 2 items of each of {n_classes} classes, got {counts.tolist()}")
        self.device = torch.device(device)
        self.sizes = counts.to(self.device)
        self.offsets = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(counts, 0)[:-1]]).to(self.device)
        self.sizes_list = [int(c) for c in counts]


def filter_one_vs_rest(features: np.ndarray, labels: np.ndarray, n_classes: int, margin: float,
                       l2: float = 1e-3) -> dict:
    """C one-vs-rest logistic regressions; keep items whose every column has the right sign with
    logit margin >= ``margin``: the arg-max decoder is then error-free on the kept items."""
    if margin < 0:
        raise MibenchError(f"decoder margin must be >= 0, got {margin}")
    onehot = np.eye(n_classes)[labels]
    logits = fit_linear_decoder(features, onehot, l2=l2)(features)           # (n, C)
    signed = np.where(onehot == 1, logits, -logits)
    correct = logits.argmax(1) == labels
    keep = np.flatnonzero((signed >= max(margin, 1e-12)).all(1))
    kept_acc = float(np.mean(logits[keep].argmax(1) == labels[keep])) if len(keep) else 0.0
    return {
        "keep": keep,
        "decoder": f"{n_classes} one-vs-rest logistic regressions (standardised features, L2 {l2:g}, L-BFGS), "
                   f"arg-max; every logit on the right side with margin >= {margin:g}",
        "margin": float(margin),
        "accuracy_before": float(np.mean(correct)),
        "decoder_accuracy": kept_acc,
        "candidates_per_class": [int((labels == c).sum()) for c in range(n_classes)],
        "kept_per_class": [int((labels[keep] == c).sum()) for c in range(n_classes)],
    }


def load_features_file(path) -> tuple[np.ndarray, np.ndarray, str]:
    """(features float32 (n, d), labels int64 (n,), sha256) with one-line errors for bad files."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise MibenchError(f"features file {str(path)!r} is a directory; give an .npz file with 'features' and "
                           "'labels'")
    if not p.is_file():
        raise MibenchError(f"features file {str(path)!r} not found")
    if p.read_bytes()[:4] != b"PK\x03\x04":
        raise MibenchError(f"features file {p.name} is not an .npz archive (write one with "
                           "numpy.savez(path, features=..., labels=...))")
    try:
        with np.load(p, allow_pickle=False) as z:
            keys = set(z.files)
            missing = {"features", "labels"} - keys
            if missing:
                raise MibenchError(f"features file {p.name}: needs arrays 'features' (n, d) and 'labels' (n,); "
                                   f"missing {', '.join(sorted(missing))} "
                                   f"(has: {', '.join(sorted(keys)) or 'nothing'})")
            feats, labels = z["features"], z["labels"]
    except MibenchError:
        raise
    except Exception as exc:  # not a zip / npz, pickled objects, truncated file
        raise MibenchError(f"features file {p.name} is not a readable .npz ({type(exc).__name__}: {exc})") from None
    if not (np.issubdtype(labels.dtype, np.integer) and not np.issubdtype(labels.dtype, np.bool_)):
        raise MibenchError(f"features file {p.name}: 'labels' must be integers, got dtype {labels.dtype}")
    if labels.ndim != 1:
        raise MibenchError(f"features file {p.name}: 'labels' must be 1-d (n,), got shape {labels.shape}")
    if not np.issubdtype(feats.dtype, np.number) or np.issubdtype(feats.dtype, np.complexfloating):
        raise MibenchError(f"features file {p.name}: 'features' must be real numbers, got dtype {feats.dtype}")
    if feats.ndim < 1 or feats.shape[0] != labels.shape[0]:
        raise MibenchError(f"features file {p.name}: 'features' has {feats.shape[0] if feats.ndim else 0} rows "
                           f"but 'labels' has {labels.shape[0]}")
    if feats.shape[0] == 0:
        raise MibenchError(f"features file {p.name}: 'features' and 'labels' have no rows")
    feats = feats.reshape(feats.shape[0], -1).astype(np.float32)
    if feats.shape[1] < 1:
        raise MibenchError(f"features file {p.name}: 'features' has no columns")
    if not np.isfinite(feats).all():
        raise MibenchError(f"features file {p.name}: 'features' contains NaN or infinite values")
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    return feats, labels.astype(np.int64), digest


def choose_classes(labels: np.ndarray, name: str) -> tuple[list[int], list[int]]:
    """(classes used, classes dropped): all C classes if C is a power of two, else the 2^floor(log2 C)
    largest (ties by label)."""
    classes, counts = np.unique(labels, return_counts=True)
    if len(classes) < 2:
        raise MibenchError(f"features file {name}: needs at least 2 classes, got {len(classes)}")
    small = classes[counts < 2]
    if len(small):
        raise MibenchError(f"features file {name}: every class needs at least 2 items; class(es) "
                           f"{', '.join(map(str, small[:5].tolist()))} have 1")
    m = int(math.floor(math.log2(len(classes))))
    order = sorted(range(len(classes)), key=lambda i: (-counts[i], classes[i]))
    used = sorted(int(classes[i]) for i in order[:2 ** m])
    dropped = sorted(int(classes[i]) for i in order[2 ** m:])
    return used, dropped


class FeaturesTask(BSCSources):
    """Same-class pairs of the user's items (module docstring)."""

    name = "features"

    def __init__(self, path, ds=None, margin: float = DEFAULT_MARGIN, standardize: bool = True, device="cpu"):
        self.device = torch.device(device)
        self.path = str(path)
        feats, labels, digest = load_features_file(path)
        fname = Path(path).name
        used, dropped = choose_classes(labels, fname)
        self.n_classes = len(used)
        self.bits_per_item = int(round(math.log2(self.n_classes)))
        if ds is None:
            ds = self.bits_per_item
        try:
            ds_i = int(ds)
        except (TypeError, ValueError):
            raise MibenchError(f"ds must be an integer, got {ds!r}") from None
        if ds_i != ds or ds_i < 1 or ds_i % self.bits_per_item:
            raise MibenchError(f"features task with {self.n_classes} classes: ds must be a positive multiple of "
                               f"log2({self.n_classes}) = {self.bits_per_item} binary sources, got {ds}")
        self.ds = ds_i
        self.items_per_sample = ds_i // self.bits_per_item
        sel = np.flatnonzero(np.isin(labels, used))
        feats, labels = feats[sel], np.searchsorted(np.asarray(used), labels[sel])   # labels -> 0..C-1
        if self.n_classes == 2:
            rec = cached_filter("features", {"sha256": digest, "classes": used}, lambda: feats, labels, margin)
        else:
            rec = filter_one_vs_rest(feats, labels, self.n_classes, margin)
        check_kept_pool(rec, f"features file {fname}")
        keep = np.asarray(rec["keep"], dtype=np.int64)
        kept = feats[keep]
        if standardize:      # in float64: float32 squares of values past ~1e19 overflowed, zeroing a column
            kept = kept.astype(np.float64)
            sd = kept.std(0)
            kept = (kept - kept.mean(0)) / np.where(sd > 0, sd, 1.0)
            if not np.isfinite(kept).all():
                raise MibenchError(f"features file {fname}: values too large to standardise (largest |x| "
                                   f"{np.abs(feats).max():.3g}); rescale them")
        self.pool = MultiClassPool(torch.from_numpy(np.ascontiguousarray(kept, dtype=np.float32)), labels[keep],
                                   self.n_classes, self.device)
        self.feature_dim = int(kept.shape[1])
        self.dr = self.items_per_sample * self.feature_dim
        self.dim_x = self.dim_y = self.dr
        self._beta: dict[float, float] = {}
        self._info = {"file": str(Path(path).expanduser().resolve()), "sha256": digest, "classes_used": used,
                      "classes_dropped": dropped, "standardized": bool(standardize), "decoder": pool_info(rec)}
        self._weights = (2 ** torch.arange(self.bits_per_item, device=self.device)).long()

    def _class_index(self, bits: torch.Tensor) -> torch.Tensor:
        """(batch, ds) fair bits -> (batch, items) class indices sum_j b_j 2^j (uniform over C)."""
        b = bits.shape[0]
        return (bits.view(b, self.items_per_sample, self.bits_per_item) * self._weights).sum(-1)

    def sample_with_classes(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        bx, by = self.draw_classes(batch_size, mi_bits, generator)
        cx, cy = self._class_index(bx), self._class_index(by)
        ix, iy = self.pool.draw(cx, cy, generator)
        b = cx.shape[0]
        return self.pool.gather(ix).reshape(b, self.dr), self.pool.gather(iy).reshape(b, self.dr), cx, cy

    def info(self) -> dict:
        d = self._info["decoder"]
        return {"task": self.name, "ds": self.ds, "dr": self.dr, "dim_x": self.dim_x, "dim_y": self.dim_y,
                "max_mi_bits": self.max_mi_bits, "n_classes": self.n_classes,
                "items_per_sample": self.items_per_sample, "feature_dim": self.feature_dim,
                "true_mi": "ds * (1 - H_b(beta)) bits: log2(C) fair bits per item (uniform classes), BSC per bit",
                "data_source": f"user features {self._info['file']} (sha256 {self._info['sha256'][:12]})",
                "pool_sizes": self.pool.sizes_list, "decoder_accuracy": d["decoder_accuracy"],
                "pools": {"features": self._info}}


def _features_entry(match) -> Entry:
    path = match.group(1)

    def make_features(device="cpu", ds=None, margin: float = DEFAULT_MARGIN, standardize: bool = True) -> FeaturesTask:
        return FeaturesTask(path, ds=ds, margin=margin, standardize=standardize, device=device)

    return Entry(f"features:{path}", f"your features + integer labels from {path}", make_features)


TASKS.add_pattern(r"features:(.+)", "features:FILE.npz (your features + integer labels; same-class pairs, BSC)",
                  _features_entry)
