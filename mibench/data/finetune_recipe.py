"""The recipe and cache location of the fine-tuned default text encoder (light: no torch, no
transformers); the fine-tuning itself is :mod:`mibench.data.finetune`."""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

from mibench.data.sources import encoders_dir
from mibench.errors import MibenchError

FINETUNE_VERSION = 1
FINETUNED_NAME = "minilm-imdb"
FINETUNE_COMMAND = "mibench encoders finetune-text"


@dataclasses.dataclass(frozen=True)
class FinetuneConfig:
    """The recipe (every field enters the cache key)."""
    n_per_class: int = 1500      # IMDB train reviews per class: the default pool's reviews
    max_length: int = 128        # tokens per review while training
    epochs: int = 5              # why: the comment below DEFAULT_CONFIG
    batch_size: int = 16
    lr: float = 1e-4             # encoder
    head_lr: float = 1e-3        # linear head
    weight_decay: float = 0.01
    warmup: float = 0.1          # fraction of the steps
    seed: int = 0
    split: str = "train"

    def check(self) -> "FinetuneConfig":
        if self.n_per_class < 1 or self.epochs < 1 or self.batch_size < 1 or self.max_length < 4:
            raise MibenchError(f"fine-tuning needs n_per_class, epochs, batch_size >= 1 and max_length >= 4, "
                               f"got {self}")
        if not (self.lr > 0 and self.head_lr > 0 and 0 <= self.warmup < 1):
            raise MibenchError("fine-tuning needs lr, head_lr > 0 and warmup in [0, 1)")
        if self.split not in ("train", "all"):
            raise MibenchError(f"fine-tuning split must be train or all (the test split is held out), "
                               f"got {self.split!r}")
        return self


DEFAULT_CONFIG = FinetuneConfig()
# Why this recipe: of the recipes tried, it gives the text task the smallest bias (more epochs separate the
# pool's classes further, and the pool is read at the length the encoder was trained at); the comparison:
# docs/encoders.md, "The fine-tuned text encoder".
EVAL_PER_CLASS = 250             # held-out IMDB test reviews per class


def recipe_key(cfg: FinetuneConfig, base_fingerprint: str) -> dict:
    return {"version": FINETUNE_VERSION, "base": base_fingerprint, "config": dataclasses.asdict(cfg)}


def sha256_json(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def checkpoint_dir(cfg: FinetuneConfig, base_fingerprint: str) -> Path:
    """Where the weights of recipe ``cfg`` on the base encoder ``base_fingerprint`` live (whether or
    not they exist yet)."""
    return encoders_dir() / f"{FINETUNED_NAME}-{sha256_json(recipe_key(cfg, base_fingerprint))[:12]}"


def is_complete(path: Path) -> bool:
    return (Path(path) / "finetune.json").is_file() and (Path(path) / "config.json").is_file()


def missing_message() -> str:
    return (f"the default text encoder ({FINETUNED_NAME}: all-MiniLM-L6-v2 fine-tuned on IMDB labels) is not cached; "
            f"run `{FINETUNE_COMMAND}` once (about 9 min on 2 CPU cores), or pass --encoder all-MiniLM-L6-v2")


def record(path: Path) -> dict:
    return json.loads((Path(path) / "finetune.json").read_text())


