"""Readers for the raw datasets (MNIST IDX .gz, CIFAR-10 python pickles, IMDB csv.gz).

All return numpy arrays; nothing here imports torchvision or PIL.
"""
from __future__ import annotations

import gzip
import pickle
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np

from mibench.data.sources import CIFAR_DIR, DATASETS, IMDB_CSV, ensure_dataset, present_files, unchecked_reason
from mibench.errors import MibenchError, UnreadableInput


def _damaged(path, why) -> UnreadableInput:
    """A data file that cannot be decoded (cut off, corrupted, not what the layout names): one line,
    exit code 4, saying why its checksum did not stop it first (:func:`unchecked_reason`)."""
    if isinstance(why, BaseException):
        why = f"{type(why).__name__}: {why}"
    return UnreadableInput(f"{path} is truncated or damaged ({why}); fetch it again ({unchecked_reason(path)})")


def _read_idx(path: Path) -> np.ndarray:
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (EOFError, OSError, zlib.error) as exc:
        raise _damaged(path, exc) from None
    magic = int.from_bytes(data[0:4], "big")
    if magic >> 8 != 0x08:  # unsigned byte
        raise _damaged(path, f"not an IDX uint8 file: magic {magic:#x}")
    ndim = magic & 0xFF
    if len(data) < 4 + 4 * ndim:    # cut inside the header: the dimensions are not all there
        raise _damaged(path, f"{len(data)} bytes, shorter than the {4 + 4 * ndim}-byte header of a {ndim}-d IDX file")
    shape = tuple(int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(shape)):
        raise _damaged(path, f"the IDX payload has {arr.size} bytes, its header says {shape}")
    return arr.reshape(shape)


@lru_cache(maxsize=4)
def _load_mnist_cached(root: str, split: str):
    prefix = {"train": "train", "test": "t10k"}[split]
    images = _read_idx(Path(root) / "mnist" / f"{prefix}-images-idx3-ubyte.gz")
    labels = _read_idx(Path(root) / "mnist" / f"{prefix}-labels-idx1-ubyte.gz")
    if len(images) != len(labels):
        raise UnreadableInput(f"MNIST {split}: {len(images)} images but {len(labels)} labels")
    images.setflags(write=False)
    labels.setflags(write=False)
    return images, labels


def load_mnist(data_dir=None, split: str = "train", download: bool = False):
    """(images uint8 (N, 28, 28), labels uint8 (N,), verification rows). split: train|test|all."""
    if split not in ("train", "test", "all"):
        raise MibenchError(f"MNIST split must be train, test or all, got {split!r}")
    root, rows = ensure_dataset("mnist", data_dir, download)
    if split == "all":
        a, la = _load_mnist_cached(str(root), "train")
        b, lb = _load_mnist_cached(str(root), "test")
        return np.concatenate([a, b]), np.concatenate([la, lb]), rows
    images, labels = _load_mnist_cached(str(root), split)
    return images, labels, rows


@lru_cache(maxsize=2)
def _load_cifar_cached(root: str, names: tuple[str, ...]):
    images, labels = [], []
    for name in names:
        path = Path(root) / CIFAR_DIR / name
        try:
            with open(path, "rb") as f:
                batch = pickle.load(f, encoding="bytes")
        except (EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError, IndexError,
                KeyError) as exc:   # what pickle raises for bytes that are not a pickle
            raise _damaged(path, exc) from None
        data, lab = _cifar_arrays(path, batch)
        images.append(data.reshape(-1, 3, 32, 32))
        labels.append(lab)
    out = np.concatenate(images), np.concatenate(labels)
    out[0].setflags(write=False)
    return out


def _cifar_arrays(path: Path, batch) -> tuple[np.ndarray, np.ndarray]:
    """(data uint8 (N, 3072), labels (N,)) of one unpickled batch; a pickle that is not a CIFAR-10 batch
    (not a dict, a key missing, no rows, labels that do not match the rows) is a damaged file."""
    if not isinstance(batch, dict):
        raise _damaged(path, f"the pickle holds a {type(batch).__name__}, not a CIFAR-10 batch dict")
    got = {}
    for key in ("data", "labels"):
        value = batch.get(key.encode(), batch.get(key))
        if value is None:
            raise _damaged(path, f"the batch has no {key!r} entry")
        try:
            got[key] = np.asarray(value, dtype=np.uint8)
        except (TypeError, ValueError, OverflowError) as exc:
            raise _damaged(path, f"its {key!r} entry is not uint8 numbers ({type(exc).__name__})") from None
    data, lab = got["data"], got["labels"]
    if data.ndim != 2 or data.shape[1] != 3072:
        raise _damaged(path, f"its data has shape {data.shape}, expected (N, 3072)")
    if len(data) == 0:
        raise _damaged(path, "the batch holds no images")
    if lab.shape != (len(data),):
        raise _damaged(path, f"{len(data)} images but labels of shape {lab.shape}")
    return data, lab


def load_cifar10(data_dir=None, download: bool = False):
    """(images uint8 (N, 3, 32, 32), labels, batches used, verification rows); any subset of batches."""
    root, rows = ensure_dataset("cifar10", data_dir, download)
    names = tuple(f.relpath.rsplit("/", 1)[1] for f in present_files("cifar10", root))
    images, labels = _load_cifar_cached(str(root), names)
    return images, labels, list(names), rows


@lru_cache(maxsize=1)
def _load_imdb_cached(path: str):
    import pandas as pd

    try:
        df = pd.read_csv(path, compression="gzip", dtype={"text": str, "label": "int8", "split": str})
    except (EOFError, OSError, zlib.error, ValueError, pd.errors.ParserError) as exc:
        raise _damaged(path, exc) from None
    missing = {"text", "label", "split"} - set(df.columns)
    if missing:
        raise UnreadableInput(f"{path}: missing columns {sorted(missing)} (expected text,label,split,id,rating)")
    return df


def load_imdb(data_dir=None, download: bool = False):
    """(pandas DataFrame with text,label,split[,id,rating], csv md5, verification rows)."""
    root, rows = ensure_dataset("imdb", data_dir, download)
    df = _load_imdb_cached(str(root / IMDB_CSV))
    return df, rows[0]["md5"], rows


def imdb_subset_indices(labels: np.ndarray, splits: np.ndarray, split: str, n_per_class: int | None,
                        seed: int = 0) -> np.ndarray:
    """Deterministic class-balanced subset: per class, a seeded permutation of that class's rows
    (of ``split``), first ``n_per_class`` taken; class 0 rows then class 1 rows. Prefix-stable: a
    smaller n is a prefix of a larger one within each class."""
    if split not in ("train", "test", "all"):
        raise MibenchError(f"IMDB split must be train, test or all, got {split!r}")
    out = []
    for c in (0, 1):
        mask = labels == c
        if split != "all":
            mask &= splits == split
        rows = np.flatnonzero(mask)
        rng = np.random.default_rng([seed, c])
        perm = rows[rng.permutation(len(rows))]
        if n_per_class is not None:
            if n_per_class < 1:
                raise MibenchError(f"n_per_class must be >= 1, got {n_per_class}")
            if n_per_class > len(perm):
                raise MibenchError(f"IMDB {split} has {len(perm)} reviews of class {c}; n_per_class={n_per_class}")
            perm = perm[:n_per_class]
        out.append(perm)
    return np.concatenate(out)


__all__ = ["load_mnist", "load_cifar10", "load_imdb", "imdb_subset_indices", "DATASETS"]
