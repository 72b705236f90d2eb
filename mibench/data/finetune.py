"""The default text encoder: all-MiniLM-L6-v2 fine-tuned end to end on IMDB sentiment labels.

Why (Lee & Rhee 2024 §4.3-4.4): D_NLP is built from "BERT fine-tuned sentence embeddings of the IMDB
dataset", fine-tuned with the class label so that the class C is *easily decodable* from every
embedding -- the error-free-decoder assumption behind I(X;Y) = H(C) (Lee et al. 2023, Thm 3.2) --
and dominates the representation.  Off-the-shelf MiniLM embeddings carry sentiment only weakly, so
the off-the-shelf text task is a harder task than the paper's; ``--encoder all-MiniLM-L6-v2`` keeps
it available.

Fine-tuning (:func:`finetune_text`): the packaged all-MiniLM-L6-v2 plus a linear head on its own
sentence embedding, trained end to end with binary cross-entropy on a class-balanced subset of the
IMDB **train** split -- the default pool's own reviews, so the pool is embedded by an encoder that
has learnt their labels, as the paper's D_NLP is -- and checked on held-out reviews of the IMDB
**test** split.  The recipe is :mod:`mibench.data.finetune_recipe`.

Determinism: every random draw comes from ``seed`` under a forked RNG, so on one machine with one
thread count the weights are bit-identical run to run; float reductions may differ across CPUs and
thread counts, which is why the encoder identity (:func:`mibench.data.embeddings.encoder_identity`)
hashes the resulting weights, not only the recipe, and why every embedding cache key contains it.

Cache: ``<encoders dir>/minilm-imdb-<recipe hash>/``, a Hugging Face checkpoint plus
``finetune.json``.  The procedure, the cache and the recipe comparison in full: docs/encoders.md,
"The fine-tuned text encoder".
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mibench.data.embeddings import (  # noqa: F401
    base_identity,
    cached_checkpoint,
    encoder_fingerprint,
    load_encoder,
    packaged_minilm_dir,
    pool_hidden_states,
    pooling_config,
    require_transformers,
)
from mibench.data.finetune_recipe import (  # noqa: F401
    DEFAULT_CONFIG,
    EVAL_PER_CLASS,
    FINETUNE_COMMAND,
    FINETUNED_NAME,
    FinetuneConfig,
    checkpoint_dir,
    missing_message,
    recipe_key,
    record,
    sha256_json,
)


class _Data(NamedTuple):
    """The reviews a recipe trains and is checked on, and what identifies them."""
    texts: list
    labels: np.ndarray
    held_texts: list
    held_labels: np.ndarray
    data_md5: object
    rows_hash: str


class _Encoder(NamedTuple):
    """The encoder being fine-tuned: tokenizer, transformer, linear head and the embedding's scale."""
    tok: object
    model: object
    head: object
    scale: float


def _texts(data_dir, cfg: FinetuneConfig) -> _Data:
    from mibench.data.loaders import imdb_subset_indices, load_imdb

    df, data_md5, _ = load_imdb(data_dir)
    labels = df["label"].to_numpy().astype(np.int64)
    splits = df["split"].to_numpy()
    rows = imdb_subset_indices(labels, splits, cfg.split, cfg.n_per_class, seed=0)
    held = imdb_subset_indices(labels, splits, "test", min(EVAL_PER_CLASS, cfg.n_per_class), seed=1)
    text = df["text"].to_numpy()
    return _Data([str(t) for t in text[rows]], labels[rows], [str(t) for t in text[held]], labels[held], data_md5,
                 sha256_json(rows.tolist())[:16])


def _embed(model, tok, texts, max_length, pooling, batch_size=32):
    """Pooled sentence embeddings (no grad, eval mode), float32 tensor."""
    import torch

    model.eval()
    out = []
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            enc = tok(texts[s:s + batch_size], padding=True, truncation=True, max_length=max_length,
                      return_tensors="pt")
            out.append(pool_hidden_states(model(**enc).last_hidden_state, enc["attention_mask"], pooling).float())
    return torch.cat(out) if out else torch.zeros(0)


def finetune_text(data_dir=None, cfg: FinetuneConfig = DEFAULT_CONFIG, force: bool = False, progress: bool = True,
                  out_dir: Path | None = None) -> dict:
    """Fine-tune the packaged MiniLM on IMDB labels (recipe ``cfg``) and cache the checkpoint.

    Returns the record written to ``finetune.json`` (with ``"path"``).  A cached checkpoint of the
    same recipe is reused unless ``force``.  ``out_dir`` overrides the cache location (tests)."""
    cfg = cfg.check()
    require_transformers(f"`{FINETUNE_COMMAND}`")
    base_dir = packaged_minilm_dir()
    base = base_identity()
    path = Path(out_dir) if out_dir is not None else checkpoint_dir(cfg, base["fingerprint"])
    if not force and (path / "finetune.json").is_file():
        rec = record(path)
        rec["path"] = str(path)
        rec["cache"] = "hit"
        return rec
    import torch
    import transformers

    data = _texts(data_dir, cfg)
    transformers.logging.set_verbosity_error()
    pooling = pooling_config(base_dir)
    total = -(-len(data.texts) // cfg.batch_size) * cfg.epochs
    if progress:
        print(f"mibench: fine-tuning all-MiniLM-L6-v2 on {len(data.texts)} IMDB {cfg.split} reviews ({cfg.epochs} "
              f"epoch(s), {total} steps of {cfg.batch_size}, max_length {cfg.max_length}, {torch.get_num_threads()} "
              f"threads); cached in {path}", file=sys.stderr)
    t0 = time.perf_counter()
    with torch.random.fork_rng(devices=[]):    # every random draw (head init, dropout) from cfg.seed
        torch.manual_seed(cfg.seed)
        enc = _load_base(base_dir, pooling)
        losses = _train(enc, data, cfg, pooling, total, progress, t0)
    train_s = time.perf_counter() - t0
    held_acc, eval_s = _held_out_accuracy(enc, data, cfg, pooling)
    rec = {"encoder": FINETUNED_NAME, "base": base, "recipe": recipe_key(cfg, base["fingerprint"]),
           "recipe_hash": sha256_json(recipe_key(cfg, base["fingerprint"]))[:12], "data_md5": data.data_md5,
           "train_rows_sha": data.rows_hash, "n_train": len(data.texts), "steps": total, "objective":
           "binary cross-entropy of a linear head on the pooled (mean + L2 norm) embedding x sqrt(hidden)",
           "train_seconds": round(train_s, 1), "eval_seconds": round(eval_s, 1),
           "torch_threads": torch.get_num_threads(),
           "final_loss": float(np.mean(losses[-25:])) if losses else None,
           "loss_curve": [round(float(np.mean(losses[i:i + 25])), 4) for i in range(0, len(losses), 25)],
           "held_out": {"split": "test", "n": len(data.held_texts), "accuracy": held_acc,
                        "how": "the trained head on the fine-tuned embedding, max_length as in training"}}
    _save_checkpoint(path, base_dir, enc, rec)
    if progress:
        print(f"mibench: fine-tuned in {train_s:.0f} s; held-out accuracy {held_acc} on {len(data.held_texts)} IMDB "
              f"test reviews; weights in {path}", file=sys.stderr)
    rec["path"] = str(path)
    rec["cache"] = "trained"
    return rec


def _load_base(base_dir: Path, pooling: dict) -> _Encoder:
    """The packaged checkpoint and a new linear head on its pooled embedding (draws from torch's RNG)."""
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(str(base_dir))
    model = transformers.AutoModel.from_pretrained(str(base_dir))
    hidden = int(model.config.hidden_size) * len(pooling["modes"])
    head = torch.nn.Linear(hidden, 1)
    scale = float(np.sqrt(hidden)) if pooling["normalize"] else 1.0
    return _Encoder(tok, model, head, scale)


def _train(enc: _Encoder, data: _Data, cfg: FinetuneConfig, pooling: dict, total: int, progress: bool,
           t0: float) -> list[float]:
    """The training loop: AdamW (encoder at ``cfg.lr``, head at ``cfg.head_lr``) with a linear warm-up
    and linear decay to 0 over ``total`` steps, reviews in a seeded order per epoch.  Returns the
    per-step losses; progress lines every 25 steps (time since ``t0``)."""
    import torch

    tok, model, head, scale = enc
    n = len(data.texts)
    warm = int(round(cfg.warmup * total))
    opt = torch.optim.AdamW([{"params": list(model.parameters()), "lr": cfg.lr},
                             {"params": list(head.parameters()), "lr": cfg.head_lr}],
                            weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / max(warm, 1) if s < warm else max(0.0, (total - s) / max(total - warm, 1)))
    rng = np.random.default_rng([cfg.seed, 7])
    y_all = torch.as_tensor(data.labels, dtype=torch.float32)
    model.train()
    step = 0
    losses = []
    for _ in range(cfg.epochs):
        order = rng.permutation(n)
        for s in range(0, n, cfg.batch_size):
            idx = order[s:s + cfg.batch_size]
            batch = tok([data.texts[i] for i in idx], padding=True, truncation=True, max_length=cfg.max_length,
                        return_tensors="pt")
            emb = pool_hidden_states(model(**batch).last_hidden_state, batch["attention_mask"], pooling)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(head(emb * scale).squeeze(1),
                                                                        y_all[torch.as_tensor(idx)])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            losses.append(float(loss.detach()))
            if progress and (step % 25 == 0 or step == total):
                el = time.perf_counter() - t0
                print(f"  step {step}/{total}  loss {np.mean(losses[-25:]):.4f}  {el:.0f} s "
                      f"(~{el / step * (total - step):.0f} s left)", file=sys.stderr)
    return losses


def _held_out_accuracy(enc: _Encoder, data: _Data, cfg: FinetuneConfig, pooling: dict) -> tuple[float | None, float]:
    """(accuracy of the trained head on the held-out reviews or None without any, seconds taken)."""
    import torch

    t1 = time.perf_counter()
    with torch.inference_mode():
        held_emb = _embed(enc.model, enc.tok, data.held_texts, cfg.max_length, pooling)
        held_pred = (enc.head(held_emb * enc.scale).squeeze(1) > 0).long().numpy() if len(data.held_texts) \
            else np.zeros(0)
    eval_s = time.perf_counter() - t1
    held_acc = float(np.mean(held_pred == data.held_labels)) if len(data.held_texts) else None
    return held_acc, eval_s


def _save_checkpoint(path: Path, base_dir: Path, enc: _Encoder, rec: dict) -> None:
    """Write the checkpoint (weights, tokenizer, the base's sentence-transformers files, the head and
    ``finetune.json`` = ``rec`` stamped ``trained``) to ``path``, replacing what was there."""
    import torch

    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    enc.model.save_pretrained(str(tmp), safe_serialization=True)
    enc.tok.save_pretrained(str(tmp))
    for extra in ("modules.json", "1_Pooling", "sentence_bert_config.json", "config_sentence_transformers.json"):
        src = base_dir / extra
        if src.is_dir():
            shutil.copytree(src, tmp / extra)
        elif src.is_file():
            shutil.copy2(src, tmp / extra)
    torch.save(enc.head.state_dict(), tmp / "head.pt")
    rec["trained"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    (tmp / "finetune.json").write_text(json.dumps(rec, indent=1) + "\n")
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)
    encoder_fingerprint.cache_clear()     # a retrained checkpoint at the same path
    load_encoder.cache_clear()
