"""The default text encoder: all-MiniLM-L6-v2 fine-tuned end to end on IMDB sentiment labels.

Why (paper 002 §4.3-4.4): D_NLP is built from "BERT fine-tuned sentence embeddings of the IMDB
dataset", fine-tuned with the class label so that the class C is *easily decodable* from every
embedding -- the error-free-decoder assumption behind I(X;Y) = H(C) (Lee et al. 2023, Thm 3.2) --
and dominates the representation.  Off-the-shelf MiniLM embeddings carry sentiment only weakly
(a linear decoder gets ~0.86 on them), so the off-the-shelf text task is a harder task than the
paper's; ``--encoder all-MiniLM-L6-v2`` keeps it available.

Fine-tuning (:func:`finetune_text`): the packaged all-MiniLM-L6-v2 plus a linear head on its own
sentence embedding (mean pooling + L2 norm, the pooling the checkpoint declares, rescaled by
sqrt(hidden) so the head sees unit-scale coordinates), trained end to end with binary
cross-entropy on the labels of a class-balanced subset of the IMDB **train** split
(:func:`mibench.data.loaders.imdb_subset_indices`, seed 0, the same selection as the text pool's:
the default 1,500 per class are exactly the default pool's reviews, so the pool is embedded by an
encoder that has learnt their labels, as the paper's D_NLP is), AdamW with a linear warm-up and
linear decay to 0, dropout as the checkpoint configures it, reviews in a seeded order per epoch.
The result is checked on held-out reviews of the IMDB **test** split (accuracy of the trained
head); the pool's decodability before the decoder filter is in every text run's ``task_info``
(``pools.imdb.decoder.accuracy_before``).

Determinism: the review order and every random draw (head init, dropout) come from ``seed`` under
a forked RNG; on one machine with one thread count the weights are bit-identical run to run
(float reductions may differ across CPUs and thread counts, which is why the identity below
hashes the resulting weights, not only the recipe).

Cache: ``<encoders dir>/minilm-imdb-<recipe hash>/`` (:mod:`mibench.data.finetune_recipe`)
holds a Hugging Face checkpoint (config, tokenizer, ``model.safetensors``, and the base
checkpoint's sentence-transformers ``modules.json`` / ``1_Pooling`` so it pools the same way) plus
``finetune.json`` (recipe, data md5, subset hash, wall time, held-out accuracy, head).  The recipe
hash covers the fine-tuning version, the base encoder's fingerprint and the training settings;
the encoder identity (:func:`mibench.data.embeddings.encoder_identity`) adds the data and subset
hash and the resulting weights' md5, and it is part of every embedding cache key, so embeddings of
another encoder are never reused.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from .embeddings import (_fingerprint, _load_encoder, _require_transformers, base_identity, cached_checkpoint,  # noqa: F401
                         packaged_minilm_dir, pool_hidden_states, pooling_config)

from .finetune_recipe import (DEFAULT_CONFIG, EVAL_PER_CLASS, FINETUNE_COMMAND, FINETUNED_NAME,  # noqa: F401
                              FinetuneConfig, sha256_json, checkpoint_dir, missing_message, record, recipe_key)


def _texts(data_dir, cfg: FinetuneConfig):
    from .loaders import imdb_subset_indices, load_imdb

    df, data_md5, _ = load_imdb(data_dir)
    labels = df["label"].to_numpy().astype(np.int64)
    splits = df["split"].to_numpy()
    rows = imdb_subset_indices(labels, splits, cfg.split, cfg.n_per_class, seed=0)
    held = imdb_subset_indices(labels, splits, "test", min(EVAL_PER_CLASS, cfg.n_per_class), seed=1)
    text = df["text"].to_numpy()
    return ([str(t) for t in text[rows]], labels[rows], [str(t) for t in text[held]], labels[held], data_md5,
            sha256_json(rows.tolist())[:16])


def _embed(model, tok, texts, max_length, pooling, batch_size=32):
    """Pooled sentence embeddings (no grad, eval mode), float32 tensor."""
    import torch

    model.eval()
    out = []
    with torch.inference_mode():
        for s in range(0, len(texts), batch_size):
            enc = tok(texts[s:s + batch_size], padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            out.append(pool_hidden_states(model(**enc).last_hidden_state, enc["attention_mask"], pooling).float())
    return torch.cat(out) if out else torch.zeros(0)


def finetune_text(data_dir=None, cfg: FinetuneConfig = DEFAULT_CONFIG, force: bool = False, progress: bool = True,
                  out_dir: Path | None = None) -> dict:
    """Fine-tune the packaged MiniLM on IMDB labels (recipe ``cfg``) and cache the checkpoint.

    Returns the record written to ``finetune.json`` (with ``"path"``).  A cached checkpoint of the
    same recipe is reused unless ``force``.  ``out_dir`` overrides the cache location (tests)."""
    cfg = cfg.check()
    _require_transformers(f"`{FINETUNE_COMMAND}`")
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

    texts, labels, held_texts, held_labels, data_md5, rows_hash = _texts(data_dir, cfg)
    transformers.logging.set_verbosity_error()
    pooling = pooling_config(base_dir)
    n = len(texts)
    steps_per_epoch = -(-n // cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    warm = int(round(cfg.warmup * total))
    if progress:
        print(f"mibench: fine-tuning all-MiniLM-L6-v2 on {n} IMDB {cfg.split} reviews ({cfg.epochs} epoch(s), "
              f"{total} steps of {cfg.batch_size}, max_length {cfg.max_length}, {torch.get_num_threads()} threads); "
              f"cached in {path}", file=sys.stderr)
    t0 = time.perf_counter()
    losses = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(cfg.seed)
        tok = transformers.AutoTokenizer.from_pretrained(str(base_dir))
        model = transformers.AutoModel.from_pretrained(str(base_dir))
        hidden = int(model.config.hidden_size) * len(pooling["modes"])
        head = torch.nn.Linear(hidden, 1)
        scale = float(np.sqrt(hidden)) if pooling["normalize"] else 1.0
        opt = torch.optim.AdamW([{"params": list(model.parameters()), "lr": cfg.lr},
                                 {"params": list(head.parameters()), "lr": cfg.head_lr}],
                                weight_decay=cfg.weight_decay)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: (s + 1) / max(warm, 1) if s < warm else max(0.0, (total - s) / max(total - warm, 1)))
        rng = np.random.default_rng([cfg.seed, 7])
        y_all = torch.as_tensor(labels, dtype=torch.float32)
        model.train()
        step = 0
        for _ in range(cfg.epochs):
            order = rng.permutation(n)
            for s in range(0, n, cfg.batch_size):
                idx = order[s:s + cfg.batch_size]
                enc = tok([texts[i] for i in idx], padding=True, truncation=True, max_length=cfg.max_length,
                          return_tensors="pt")
                emb = pool_hidden_states(model(**enc).last_hidden_state, enc["attention_mask"], pooling)
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
    train_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    with torch.inference_mode():
        held_emb = _embed(model, tok, held_texts, cfg.max_length, pooling)
        held_pred = (head(held_emb * scale).squeeze(1) > 0).long().numpy() if len(held_texts) else np.zeros(0)
    eval_s = time.perf_counter() - t1
    held_acc = float(np.mean(held_pred == held_labels)) if len(held_texts) else None
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model.save_pretrained(str(tmp), safe_serialization=True)
    tok.save_pretrained(str(tmp))
    for extra in ("modules.json", "1_Pooling", "sentence_bert_config.json", "config_sentence_transformers.json"):
        src = base_dir / extra
        if src.is_dir():
            shutil.copytree(src, tmp / extra)
        elif src.is_file():
            shutil.copy2(src, tmp / extra)
    torch.save(head.state_dict(), tmp / "head.pt")
    rec = {"encoder": FINETUNED_NAME, "base": base, "recipe": recipe_key(cfg, base["fingerprint"]),
           "recipe_hash": sha256_json(recipe_key(cfg, base["fingerprint"]))[:12], "data_md5": data_md5,
           "train_rows_sha": rows_hash, "n_train": n, "steps": total, "objective":
           "binary cross-entropy of a linear head on the pooled (mean + L2 norm) embedding x sqrt(hidden)",
           "train_seconds": round(train_s, 1), "eval_seconds": round(eval_s, 1), "torch_threads": torch.get_num_threads(),
           "final_loss": float(np.mean(losses[-25:])) if losses else None,
           "loss_curve": [round(float(np.mean(losses[i:i + 25])), 4) for i in range(0, len(losses), 25)],
           "held_out": {"split": "test", "n": len(held_texts), "accuracy": held_acc,
                        "how": "the trained head on the fine-tuned embedding, max_length as in training"},
           "trained": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (tmp / "finetune.json").write_text(json.dumps(rec, indent=1) + "\n")
    if path.exists():
        shutil.rmtree(path)
    os.replace(tmp, path)
    _fingerprint.cache_clear()     # a retrained checkpoint at the same path
    _load_encoder.cache_clear()
    if progress:
        print(f"mibench: fine-tuned in {train_s:.0f} s; held-out accuracy {held_acc} on {len(held_texts)} IMDB test "
              f"reviews; weights in {path}", file=sys.stderr)
    rec["path"] = str(path)
    rec["cache"] = "trained"
    return rec
