"""A K-ary symmetric noisy channel on class labels of real images (mutinfo's ``SymmetricNoisyChannel``
with ``mixed_by_label``, Butakov et al.), generalising Lee & Rhee's binary symmetric channel.

C ~ uniform on K classes; C' = C with probability 1 - eps, else uniform on the K - 1 other classes
(mutinfo parametrises the same channel by a "reroll" probability r = eps K / (K - 1): with
probability r, C' is redrawn uniformly from all K classes).  X is an image of class C and Y an image
of class C', drawn independently given the classes, so X - C - C' - Y is a Markov chain and, with
the class a function of the image (an error-free decoder), I(X; Y) = I(C; C') =
log K - H(row) = log K + (1 - eps) log(1 - eps) + eps log(eps / (K - 1))  (Cover & Thomas, §7.1.4,
the symmetric channel).  K = 2 is Lee & Rhee's BSC (their Theorem 4.4).  Any level between 0 and
log2 K bits is reached by solving eps in [0, 1 - 1/K] (bisection; the MI falls strictly on it).

Decodability by construction, as :mod:`mibench.tasks.pools` does for two classes: a K-class
linear decoder (softmax regression on standardised pixels, small L2, full-batch L-BFGS) is fitted on
every candidate image and each class pool keeps only the images it classifies correctly with a logit
margin >= ``margin`` over every other class; on the kept pool that decoder is error-free (asserted,
recorded in ``info()``), so the class is a function of the image.  Kept indices are cached under
``<cache>/pools``.

``mutinfo-channel-mnist``    MNIST train split, the first ``k`` digits (default all ten), 28 x 28.
``mutinfo-channel-cifar10``  the shipped CIFAR-10 test batch (lossy JPEG rebuild, 1,000 per class),
                             3 x 32 x 32; the filter keeps the linearly decodable part of each class.
A class with fewer than :data:`MIN_KEPT` images after the filter is refused in one line.
"""
from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np
import torch

from mibench.data.sources import shown_path
from mibench.errors import MibenchError
from mibench.tasks.base import batch_count, check_mi_request, invert_monotone
from mibench.tasks.catalogue import add_to_catalogue
from mibench.tasks.pools import fit_linear_decoder
from mibench.tasks.registry import TASKS
from mibench.utils.units import LN2

FILTER_VERSION = 1
MIN_KEPT = 50
DEFAULT_MARGIN = 1.0


# ------------------------------------------------------------------------------ the channel

def kary_mi_nats(k: int, eps: float) -> float:
    """I(C; C') in nats of the K-ary symmetric channel with error probability ``eps``, uniform input.

    Parameters
    ----------
    k : alphabet size K >= 2.
    eps : probability that C' != C (spread uniformly over the K - 1 other classes), in [0, 1].
    """
    check_channel(k, eps)
    keep = 1.0 - eps
    kept = keep * math.log(keep) if keep > 0 else 0.0
    flipped = eps * math.log(eps / (k - 1)) if eps > 0 else 0.0
    return math.log(k) + kept + flipped


def check_channel(k: int, eps: float) -> None:
    if isinstance(k, bool) or int(k) != k or k < 2:
        raise MibenchError(f"the channel needs an alphabet of K >= 2 classes, got {k}")
    if not (isinstance(eps, (int, float)) and 0.0 <= eps <= 1.0):
        raise MibenchError(f"the channel's error probability must be in [0, 1], got {eps}")


def kary_error(k: int, mi_bits: float) -> float:
    """The error probability eps in [0, 1 - 1/K] with I(C; C') = ``mi_bits`` (bisection, exact root).

    Parameters
    ----------
    k : alphabet size K >= 2.
    mi_bits : requested MI in [0, log2 K] bits.
    """
    check_channel(k, 0.0)
    level = check_mi_request(f"{k}-ary channel", mi_bits, math.log2(k), f"alphabet of {k} classes")
    if level >= math.log2(k):          # the maximum (as printed, too): the error-free channel
        return 0.0
    target = level * LN2
    # MI falls from log K to 0 on [0, 1 - 1/K]
    return invert_monotone(lambda eps: kary_mi_nats(k, eps), target, 0.0, 1.0 - 1.0 / k, increasing=False)


def channel_joint_pmf(k: int, eps: float) -> np.ndarray:
    """The K x K joint pmf p(c, c') of uniform input through the channel."""
    check_channel(k, eps)
    p = np.full((k, k), eps / (k - 1) / k)
    np.fill_diagonal(p, (1.0 - eps) / k)
    return p


# ------------------------------------------------------------------------- K-class decoder pool

#: the K-class decoder's settings (:func:`mibench.tasks.pools.fit_linear_decoder`, softmax loss)
SOFTMAX_DECODER = {"l2": 1e-3, "max_iter": 200, "tolerance_grad": 1e-7, "tolerance_change": 1e-10,
                   "dtype": torch.float32, "std_floor": 1e-3}


def filter_classes(features: np.ndarray, labels: np.ndarray, k: int, margin: float) -> dict:
    """Keep the items the fitted K-class decoder gets right with a logit margin >= ``margin``."""
    if not margin >= 0:
        raise MibenchError(f"decoder margin must be >= 0, got {margin}")
    logit = fit_linear_decoder(features, labels, loss="softmax", k=k, **SOFTMAX_DECODER)(features)
    rows = np.arange(len(labels))
    own = logit[rows, labels]
    other = logit.copy()
    other[rows, labels] = -np.inf
    gap = own - other.max(1)
    keep = np.flatnonzero(gap >= max(margin, 1e-6))
    pred = logit.argmax(1)
    return {"keep": keep, "accuracy_before": float(np.mean(pred == labels)),
            "decoder_accuracy": float(np.mean(pred[keep] == labels[keep])) if len(keep) else 0.0,
            "candidates_per_class": [int((labels == c).sum()) for c in range(k)],
            "kept_per_class": [int((labels[keep] == c).sum()) for c in range(k)], "margin": float(margin),
            "decoder": f"softmax regression (standardised pixels, L2 1e-3, L-BFGS) with logit margin >= {margin:g}"}


def cached_class_filter(identity: dict, features_fn, labels: np.ndarray, k: int, margin: float) -> dict:
    """:func:`filter_classes` cached under ``<cache>/pools`` by data identity and settings."""
    from mibench.data.sources import cache_dir

    key = {"version": FILTER_VERSION, "identity": identity, "k": int(k), "margin": float(margin), "n": int(len(labels))}
    kh = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    folder = cache_dir() / "pools"
    path = folder / f"kclass-{kh}.json"
    if path.is_file():
        try:
            rec = json.loads(path.read_text())
            if rec.get("key") == key:
                rec["keep"] = np.asarray(rec["keep"], dtype=np.int64)
                return rec
        except (OSError, ValueError):
            pass
    rec = filter_classes(features_fn(), labels, k, margin)
    rec["key"] = key
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({**rec, "keep": rec["keep"].tolist()}))
    os.replace(tmp, path)
    return rec


def load_images(dataset: str, data_dir=None):
    """(uint8 images (N, ...), int64 labels, source text, identity) of the full dataset; refused in one
    line when only the embedded subset (two MNIST classes, no CIFAR labels) is present."""
    from mibench.data import embedded

    kind, where, rows = embedded.choose_source(dataset, data_dir)
    if kind != "full":
        raise MibenchError(f"the label channel needs the full {dataset} data (all ten classes); set --data-dir or "
                           "$MIBENCH_DATA (`mibench data` shows what is present)")
    if dataset == "mnist":
        from mibench.data.loaders import load_mnist

        images, labels, _ = load_mnist(where, "train")
        source = f"full data ({shown_path(where)}/mnist, train split, md5 verified)"
    else:
        from mibench.data.loaders import load_cifar10

        images, labels, batches, _ = load_cifar10(where)
        source = f"full data ({shown_path(where)}/cifar10, batches {', '.join(batches)})"
    return images, np.asarray(labels, dtype=np.int64), source, {"dataset": dataset, "md5": [r["md5"] for r in rows]}


class LabelChannelTask:
    """Images of C and of C' = channel(C) (module docstring)."""

    def __init__(self, dataset: str, k: int = 10, margin: float = DEFAULT_MARGIN, n_per_class: int | None = None,
                 data_dir=None, device="cpu"):
        check_channel(k, 0.0)
        if k > 10:
            raise MibenchError(f"{dataset} has 10 classes; k must be 2..10, got {k}")
        if n_per_class is not None and int(n_per_class) < MIN_KEPT:
            raise MibenchError(f"n_per_class must be >= {MIN_KEPT}, got {n_per_class}")
        self.dataset, self.k = dataset, int(k)
        self.name = f"mutinfo-channel-{dataset}"
        self.device = torch.device(device)
        images, labels, source, ident = load_images(dataset, data_dir)
        sel = np.flatnonzero(labels < self.k)
        if n_per_class is not None:
            rng = np.random.default_rng(0)
            sel = np.sort(np.concatenate([rng.permutation(sel[labels[sel] == c])[:int(n_per_class)]
                                          for c in range(self.k)]))
        images, labels = images[sel], labels[sel]
        flat = lambda: images.reshape(len(images), -1).astype(np.float32) / 255.0  # noqa: E731
        rec = cached_class_filter({**ident, "n_per_class": n_per_class}, flat, labels, self.k, margin)
        if rec["decoder_accuracy"] != 1.0:
            raise MibenchError(f"{self.name}: the decoder's accuracy on the kept pool is {rec['decoder_accuracy']}, "
                               "not 1.0")
        if min(rec["kept_per_class"]) < MIN_KEPT:
            raise MibenchError(f"{self.name}: the decodability filter keeps {min(rec['kept_per_class'])} images of "
                               f"some class (< {MIN_KEPT}): {rec['kept_per_class']}; lower the margin")
        keep = rec["keep"]
        order = np.argsort(labels[keep], kind="stable")
        kept = keep[order]
        self.items = torch.from_numpy(np.ascontiguousarray(images[kept])).to(self.device)
        self.labels = torch.as_tensor(labels[kept], device=self.device)
        counts = np.bincount(labels[kept], minlength=self.k)
        self.sizes = torch.as_tensor(counts, device=self.device)
        self.offsets = torch.as_tensor(np.concatenate([[0], np.cumsum(counts)[:-1]]), device=self.device)
        self.dim_x = self.dim_y = int(np.prod(images.shape[1:]))
        self._info = {"data_source": source, "pool_sizes": counts.tolist(), "decoder_accuracy": rec["decoder_accuracy"],
                      "decoder": {k_: rec[k_] for k_ in ("decoder", "margin", "accuracy_before", "decoder_accuracy",
                                                         "candidates_per_class", "kept_per_class")}}
        self._eps: dict = {}

    @property
    def max_mi_bits(self) -> float:
        return math.log2(self.k)

    def error_probability(self, mi_bits: float) -> float:
        eps = self._eps.get(mi_bits)
        if eps is None:
            check_mi_request(self.name, mi_bits, self.max_mi_bits, f"alphabet of {self.k} classes")
            eps = self._eps[mi_bits] = kary_error(self.k, mi_bits)
        return eps

    def draw_classes(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        eps = self.error_probability(float(mi_bits))
        n = batch_count(batch_size)
        cx = torch.randint(0, self.k, (n,), generator=generator, device=self.device)
        flip = torch.rand(n, generator=generator, device=self.device) < eps
        shift = torch.randint(1, self.k, (n,), generator=generator, device=self.device)
        return cx, torch.where(flip, (cx + shift) % self.k, cx)

    def _items(self, c: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        u = torch.rand(c.shape[0], generator=generator, device=self.device, dtype=torch.float64)
        n = self.sizes[c]
        return self.offsets[c] + torch.minimum((u * n).long(), n - 1)

    def sample_with_classes(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        cx, cy = self.draw_classes(batch_size, mi_bits, generator)
        ix, iy = self._items(cx, generator), self._items(cy, generator)
        x = self.items[ix].reshape(len(ix), -1).float() / 255.0
        y = self.items[iy].reshape(len(iy), -1).float() / 255.0
        return x, y, cx, cy

    def sample(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        x, y, _, _ = self.sample_with_classes(batch_size, mi_bits, generator)
        return x, y

    def info(self) -> dict:
        return {"task": self.name, "family": "label channel", "catalogue": "mutinfo-images",
                "catalogues": ["mutinfo-images"], "dataset": self.dataset, "k": self.k, "dim_x": self.dim_x,
                "dim_y": self.dim_y, "max_mi_bits": self.max_mi_bits,
                "true_mi": "log K + (1 - eps) log(1 - eps) + eps log(eps / (K - 1)), K-ary symmetric channel",
                **self._info}


def _factory(dataset: str):
    def factory(device="cpu", k: int = 10, margin: float = DEFAULT_MARGIN, n_per_class: int | None = None,
                data_dir=None):
        return LabelChannelTask(dataset, k=k, margin=margin, n_per_class=n_per_class, data_dir=data_dir, device=device)

    return factory


for _ds, _desc in (("mnist", "MNIST digits, K-ary symmetric channel on the labels (K = 10 default); MI up to log2 K"),
                   ("cifar10", "CIFAR-10 test batch, K-ary symmetric channel on the labels; MI up to log2 K")):
    TASKS.add(f"mutinfo-channel-{_ds}", f"mutinfo: {_desc}", _factory(_ds))
    add_to_catalogue("mutinfo-images", f"mutinfo-channel-{_ds}")
