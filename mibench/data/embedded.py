"""The small subset shipped inside the package, used only when the full data is absent.

Files (built by ``scripts/make_embedded.py`` from the full data; provenance and md5s in
``provenance.json``):

* ``mnist01.npz``            -- MNIST train digits of classes 0 and 1 (uint8, 28x28)
* ``cifar10_backgrounds.npz`` -- CIFAR-10 images used as nuisance backgrounds (uint8, 3x32x32)
* ``imdb_minilm_imdb.npz``   -- IMDB train-review embeddings from the default encoder, minilm-imdb
                                (all-MiniLM-L6-v2 fine-tuned on IMDB labels, :mod:`mibench.data.finetune`;
                                mean pooling + L2 norm, max_length 128 as it was fine-tuned; float16)

Whenever a task falls back to these, it says so once on stderr and records
``"data_source": "embedded subset (...)"`` in its ``info()``.
"""
from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path

import numpy as np

from mibench.errors import DataNotFoundError

EMBEDDED_DIR = Path(__file__).resolve().parent / "embedded"
FILES = {"mnist": "mnist01.npz", "cifar10": "cifar10_backgrounds.npz", "imdb": "imdb_minilm_imdb.npz"}
_announced: set[str] = set()


@lru_cache(maxsize=1)
def provenance() -> dict:
    path = EMBEDDED_DIR / "provenance.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


@lru_cache(maxsize=3)
def load(name: str) -> dict:
    path = EMBEDDED_DIR / FILES[name]
    if not path.is_file():
        raise DataNotFoundError(f"embedded {name} subset missing ({path}); reinstall mibench or point MIBENCH_DATA "
                                "at the full data")
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def describe(name: str) -> str:
    part = provenance().get("parts", {}).get(name, {})
    shape = part.get("shape")
    n = shape[0] if shape else "?"
    what = {"mnist": f"{n} MNIST 0/1 train digits", "cifar10": f"{n} CIFAR-10 backgrounds",
            "imdb": f"{n} IMDB train-review embeddings, all-MiniLM-L6-v2 fine-tuned on IMDB labels (minilm-imdb), "
                    "float16"}[name]
    return f"embedded subset ({what}, shipped in mibench/data/embedded)"


def announce(name: str, reason: str) -> None:
    """One stderr line per dataset and process."""
    if name in _announced:
        return
    _announced.add(name)
    print(f"mibench: note: using the {describe(name)}: {reason}; set MIBENCH_DATA or --data-dir for the full data",
          file=sys.stderr)


def choose_source(name: str, data_dir=None):
    """Decide between the full data and the embedded subset for dataset ``name``.

    Returns ("full", root, verification rows) or ("embedded", reason, None).  The embedded subset
    is used when the data directory is the literal ``embedded``, or when no directory was chosen
    (no argument, no MIBENCH_DATA) and the user cache lacks the data.  A directory the user chose
    explicitly that lacks the data is an error (DataNotFoundError naming the files), not a fallback.
    """
    from mibench.data.sources import EMBEDDED, data_dir_origin, ensure_dataset, is_present, resolve_data_dir

    root = resolve_data_dir(data_dir)
    if root == EMBEDDED:
        return "embedded", "data directory set to 'embedded'", None
    if is_present(name, root):
        root, rows = ensure_dataset(name, root)
        return "full", root, rows
    if data_dir_origin(data_dir) == "user cache":
        return "embedded", f"full {name} data not found in {root}", None
    ensure_dataset(name, root)  # raises DataNotFoundError with the expected files
    raise AssertionError("unreachable")
