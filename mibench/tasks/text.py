"""Text task (Lee & Rhee 2024 §4.4): IMDB review embeddings with known shared information.

Per sample and source i = 1..ds: C_i ~ fair coin (0 = negative, 1 = positive review), X's block i is
the sentence embedding of a random review of class C_i, Y's block i that of a random review of class
C'_i = C_i XOR Bernoulli(beta) (BSC; beta solves ds * (1 - H_b(beta)) = MI), drawn independently of
X's review given the classes, so I(X;Y) = ds * (1 - H_b(beta)) exactly; ``exclude_same_item=True`` is
the paper's variant (§4.4: a *different* review of the same class), which adds a small excess
(:meth:`mibench.tasks.pools.ClassPool.draw`).  X and Y are the concatenations of the ds blocks:
dr = ds * hidden (3840 for ds = 10 with all-MiniLM-L6-v2's 384-d embeddings).

The default encoder is ``minilm-imdb``, all-MiniLM-L6-v2 fine-tuned on IMDB train labels
(:mod:`mibench.data.finetune`), because the paper builds D_NLP from embeddings fine-tuned with the
class label (§4.3-4.4), so that the class is easily decodable and dominates the representation;
``encoder="all-MiniLM-L6-v2"`` is the off-the-shelf model, and any Hugging Face checkpoint works
(:mod:`mibench.data.embeddings`).  Embeddings are standardised per coordinate by default (an
invertible affine map, MI unchanged; :func:`load_imdb_pool`).

Why the truth holds: each class pool keeps only the reviews a logistic-regression decoder classifies
correctly with logit margin >= ``margin``, and :func:`mibench.tasks.truth_check.check_blocks` checks
exactly that no two kept reviews of different classes have identical embeddings, so the class of
every block is a function of X (see :mod:`mibench.tasks.pools`).

The pool, its fallbacks and the filter in full: docs/tasks.md, "How each task is built".
"""
from __future__ import annotations

import numpy as np
import torch

from mibench.data.sources import shown_path
from mibench.errors import MibenchError
from mibench.tasks.base import sources_reach
from mibench.tasks.pools import BSCSources, ClassPool, cached_filter, check_kept_pool, pool_info
from mibench.tasks.registry import TASKS
from mibench.tasks.vision import pairing_info, parse_layout
from mibench.utils.checks import check_positive_int

DEFAULT_MARGIN = 1.0


def check_ds(ds) -> int:
    return int(np.prod(parse_layout(ds, None))) if ds is not None else 10


def check_params(ds=10, n_per_class=None, max_length=None, **_) -> None:
    """The text task's parameter values (and the text side of the mixed task's), checked without loading data."""
    check_ds(ds)
    if n_per_class is not None:
        check_positive_int(n_per_class, "n_per_class", 2)
    if max_length is not None:
        check_positive_int(max_length, "max_length", 2)


def load_imdb_pool(data_dir=None, encoder=None, n_per_class=None, max_length=None, split=None,
                   margin: float = DEFAULT_MARGIN, device="cpu", progress: bool = True, standardize: bool = True):
    """(ClassPool of float32 embeddings (N, hidden), info dict) after the decoder filter.

    ``standardize``: z-score every embedding coordinate with the kept pool's mean and standard
    deviation (a coordinate that is constant on the pool is only centred).  This is one fixed
    invertible affine map applied to every block of X and Y, so the true MI is unchanged; it puts
    the text inputs on the scale of the image inputs (raw MiniLM coordinates have std ~0.05, and
    critics then barely move in short trainings).
    """
    from mibench.data import embedded
    from mibench.data import embeddings as E

    n_per_class = E.DEFAULT_N_PER_CLASS if n_per_class is None else check_positive_int(n_per_class, "n_per_class", 2)
    max_length = check_positive_int(E.default_max_length(encoder, max_length), "max_length", 2)
    split = E.DEFAULT_SPLIT if split is None else str(split)
    ident = E.encoder_identity(encoder)  # refuses unknown encoders before any data work
    kind, where, rows = embedded.choose_source("imdb", data_dir)
    if kind == "full":
        emb, labels, meta = E.imdb_embeddings(where, encoder, n_per_class, split, max_length, progress=progress)
        cache = shown_path(meta["cache"]) if meta.get("cache") else ""
        source = f"full data ({shown_path(where)}/imdb, {split} split, md5 verified); embeddings {cache}".rstrip()
        pool_ident = {"source": "full", "embedding_key": meta["key"]}
    else:
        part = embedded.provenance().get("parts", {}).get("imdb", {})
        shipped = part.get("embedding_key", {})
        if E.is_default_encoder(encoder) and E.shipped_default_identity() is not None:
            ident = E.shipped_default_identity()  # the shipped copy *is* the default pool, whatever is cached
        wanted = {"encoder": ident, "max_length": max_length, "split": split}
        have = {key: shipped.get(key) for key in ("encoder", "max_length", "split")}
        if wanted != have:
            raise MibenchError(
                f"the embedded IMDB subset holds {have['encoder'] and have['encoder'].get('encoder')} embeddings "
                f"(max_length {have['max_length']}, {have['split']} split) only; encoder "
                f"{ident['encoder']!r} / max_length {max_length} / split {split} needs the full IMDB data "
                "(--data-dir or MIBENCH_DATA)")
        z = embedded.load("imdb")
        emb_all, lab_all = z["embeddings"].astype(np.float32), z["labels"].astype(np.int64)
        per = part.get("n_per_class") or int((lab_all == 0).sum())
        if n_per_class > per:
            raise MibenchError(f"the embedded IMDB subset has {per} reviews per class; n_per_class = {n_per_class} "
                               "needs the full IMDB data (--data-dir or MIBENCH_DATA)")
        # the shipped subset is prefix-stable per class (see imdb_subset_indices): take each class's prefix
        sel = np.concatenate([np.flatnonzero(lab_all == c)[:n_per_class] for c in (0, 1)])
        emb, labels = emb_all[sel], lab_all[sel]
        embedded.announce("imdb", where)
        source = embedded.describe("imdb")
        pool_ident = {"source": "embedded", "md5": part.get("md5"), "n_per_class": n_per_class}
    rec = cached_filter("imdb", pool_ident, lambda: emb, labels, margin)
    check_kept_pool(rec, "IMDB embedding pool")
    keep = rec["keep"]
    kept = np.ascontiguousarray(emb[keep], dtype=np.float32)
    if standardize:
        mean = kept.mean(0, dtype=np.float64)
        std = kept.std(0, dtype=np.float64)
        std[std < 1e-6] = 1.0  # constant coordinate: centre only (keeps the map invertible)
        kept = ((kept - mean) / std).astype(np.float32)
    pool = ClassPool(torch.from_numpy(kept), labels[keep], device)
    info = {"data_source": source, "dataset": f"IMDB reviews ({split}), {n_per_class} per class",
            "encoder": ident, "max_length": max_length,
            "standardized": "per-coordinate z-score on the kept pool (invertible affine; MI unchanged)"
            if standardize else False, "pool_sizes": pool.sizes_list,
            "decoder_accuracy": rec["decoder_accuracy"], "decoder": pool_info(rec)}
    if rows:
        info["checksums"] = rows
    return pool, info


class TextTask(BSCSources):
    name = "text"

    def __init__(self, ds=10, encoder=None, data_dir=None, n_per_class=None, max_length=None, split=None,
                 margin: float = DEFAULT_MARGIN, standardize: bool = True, exclude_same_item: bool = False,
                 device="cpu"):
        self.ds = check_ds(ds)
        self.exclude_same_item = bool(exclude_same_item)
        self.device = torch.device(device)
        self.pool, self._pool_info = load_imdb_pool(data_dir, encoder, n_per_class, max_length, split, margin,
                                                    self.device, standardize=bool(standardize))
        self.check_pairing()
        self.hidden = int(self.pool.items.shape[1])
        self.dr = self.dim_x = self.dim_y = self.ds * self.hidden
        self._beta: dict[float, float] = {}

    def sample_with_classes(self, batch_size: int, mi_bits: float, generator: torch.Generator):
        """(x, y, cx, cy): the batch and the per-source classes behind X and Y."""
        cx, cy = self.draw_classes(batch_size, mi_bits, generator)
        ix, iy = self.pool.draw(cx, cy, generator, self.exclude_same_item)
        b = cx.shape[0]
        return self.pool.gather(ix).reshape(b, self.dr), self.pool.gather(iy).reshape(b, self.dr), cx, cy

    def decodability(self):
        """(block-wise decoder record, exact-check record, notes): X's blocks are kept pool embeddings
        unchanged, so the class of each block is a function of X iff no two kept items of different
        classes are identical (:func:`mibench.tasks.truth_check.check_blocks`)."""
        if getattr(self, "_decodability", None) is None:
            from mibench.tasks.truth_check import check_blocks, rendered_truth

            ident = {"pool": self._pool_info, "ds": self.ds}
            self._decodability = rendered_truth(self, ident, {"x": lambda: check_blocks(self.pool)},
                                                blocks={"x": self.pool})
        return self._decodability

    def info(self) -> dict:
        p = self._pool_info
        rec, truth, notes = self.decodability()
        return {"task": self.name, "ds": self.ds, "dr": self.dr, "dim_x": self.dim_x, "dim_y": self.dim_y,
                "max_mi_bits": self.max_mi_bits, "true_mi": "ds * (1 - H_b(beta)) bits, BSC per source",
                "embedding_dim": self.hidden, "encoder": p["encoder"]["encoder"], "standardized": p["standardized"],
                "data_source": p["data_source"],
                "pool_sizes": p["pool_sizes"], "decoder_accuracy": p["decoder_accuracy"], "pools": {"imdb": p},
                "pairing": pairing_info(self.exclude_same_item), "exclude_same_item": self.exclude_same_item,
                "rendered_decoder": rec, "rendered_decoder_accuracy": rec["accuracy"], "truth_check": truth,
                "notes": notes}


@TASKS.register("text", "IMDB review embeddings (all-MiniLM-L6-v2 fine-tuned on IMDB labels by default; "
                        "--encoder all-MiniLM-L6-v2 off the shelf), ds concatenated, BSC for non-integer MI; --ds, "
                        "--encoder, --n-per-class, --exclude-same-item, --data-dir")
def make_text(device="cpu", ds=10, encoder=None, data_dir=None, n_per_class=None, max_length=None, split=None,
              margin: float = DEFAULT_MARGIN, standardize: bool = True, exclude_same_item: bool = False) -> TextTask:
    return TextTask(ds=ds, encoder=encoder, data_dir=data_dir, n_per_class=n_per_class, max_length=max_length,
                    split=split, margin=margin, standardize=standardize, exclude_same_item=exclude_same_item,
                    device=device)


make_text.check_params = check_params
make_text.max_mi = lambda ds=10, **_: sources_reach(check_ds(ds))
