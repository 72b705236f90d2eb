#!/usr/bin/env python
"""Build the small subset shipped inside the package (mibench/data/embedded/*.npz) from the full data.

Deterministic (seeded selections; zip entries written with a fixed timestamp), so rerunning on the
same data and encoder gives byte-identical files.  Provenance (sources and their md5s, parameters,
encoder identity, the md5 of each .npz) goes to mibench/data/embedded/provenance.json.

    MIBENCH_DATA=/path/to/data python scripts/make_embedded.py [--only mnist cifar10 imdb]

The IMDB part embeds 2 x n reviews (~0.1-0.2 s each on CPU) with the default text encoder, the
fine-tuned minilm-imdb (run ``mibench encoders finetune-text`` first); it reuses mibench's
embedding cache, so a rerun after the first costs nothing.  It uses one torch thread unless --threads says otherwise.
"""
from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

OUT = ROOT / "mibench" / "data" / "embedded"
SEED = 0


def write_npz(path: Path, **arrays) -> str:
    """np.savez_compressed with fixed zip timestamps (byte-reproducible); returns the md5."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name, arr in arrays.items():
            raw = io.BytesIO()
            np.lib.format.write_array(raw, np.asarray(arr), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, raw.getvalue(), compresslevel=9)
    data = buf.getvalue()
    path.write_bytes(data)
    return hashlib.md5(data).hexdigest()


def make_mnist(data_dir, n_per_class: int) -> dict:
    from mibench.data.loaders import load_mnist

    images, labels, rows = load_mnist(data_dir, "train")
    rng = np.random.default_rng([SEED, 1])
    keep = []
    for c in (0, 1):
        idx = np.flatnonzero(labels == c)
        keep.append(np.sort(rng.choice(idx, size=n_per_class, replace=False)))
    keep = np.concatenate(keep)
    path = OUT / "mnist01.npz"
    md5 = write_npz(path, images=images[keep], labels=labels[keep], source_index=keep.astype(np.int32))
    return {"file": path.name, "md5": md5, "bytes": path.stat().st_size, "source": "MNIST train (IDX)",
            "source_files": rows, "n_per_class": n_per_class, "classes": [0, 1], "seed": SEED,
            "dtype": "uint8", "shape": list(images[keep].shape)}


def make_cifar(data_dir, n: int) -> dict:
    from mibench.data.loaders import load_cifar10

    images, labels, batches, rows = load_cifar10(data_dir)
    rng = np.random.default_rng([SEED, 2])
    keep = np.sort(rng.choice(len(images), size=n, replace=False))
    path = OUT / "cifar10_backgrounds.npz"
    md5 = write_npz(path, images=images[keep], labels=labels[keep], source_index=keep.astype(np.int32))
    return {"file": path.name, "md5": md5, "bytes": path.stat().st_size,
            "source": f"CIFAR-10 batches {batches}", "source_files": rows, "n": n, "seed": SEED,
            "dtype": "uint8", "shape": list(images[keep].shape)}


def make_imdb(data_dir, n_per_class: int, max_length: int) -> dict:
    from mibench.data import embeddings as E
    from mibench.data.finetune import cached_checkpoint, missing_message, record
    from mibench.data.loaders import load_imdb

    ckpt = cached_checkpoint()
    if ckpt is None:
        raise SystemExit(missing_message())
    emb, labels, meta = E.imdb_embeddings(data_dir, None, n_per_class=n_per_class, split=E.DEFAULT_SPLIT,
                                          max_length=max_length, seed=E.DEFAULT_SEED, use_shipped=False)
    ft = record(ckpt)
    df, data_md5, rows = load_imdb(data_dir)
    src = np.asarray(meta["rows"], dtype=np.int64)
    ids = df["id"].to_numpy()[src].astype(np.int32) if "id" in df.columns else src.astype(np.int32)
    old = OUT / "imdb_minilm.npz"   # the off-the-shelf encoder's subset, shipped before the fine-tuned default
    if old.exists():
        old.unlink()
    path = OUT / "imdb_minilm_imdb.npz"
    md5 = write_npz(path, embeddings=emb.astype(np.float16), labels=labels.astype(np.uint8),
                    source_row=src.astype(np.int32), review_id=ids)
    return {"file": path.name, "md5": md5, "bytes": path.stat().st_size,
            "source": f"IMDB {E.DEFAULT_SPLIT} split (csv.gz)", "source_files": rows,
            "n_per_class": n_per_class, "dtype": "float16", "shape": list(emb.shape),
            "embedding_key": meta["key"], "embedding_seconds": meta.get("seconds"),
            "seconds_per_text": meta.get("seconds_per_text"), "torch_threads": meta.get("torch_threads"),
            "encoder_finetune": {k: ft[k] for k in ("recipe", "recipe_hash", "n_train", "steps", "train_seconds",
                                                    "torch_threads", "final_loss", "held_out")}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=None, help="full data (default: MIBENCH_DATA / user cache)")
    p.add_argument("--only", nargs="+", choices=["mnist", "cifar10", "imdb"], default=["mnist", "cifar10", "imdb"])
    p.add_argument("--mnist-per-class", type=int, default=2000)
    p.add_argument("--cifar", type=int, default=400)
    p.add_argument("--imdb-per-class", type=int, default=1500)
    p.add_argument("--max-length", type=int, default=None,
                   help="tokens per review (default: the default encoder's, "
                        "mibench.data.embeddings.default_max_length)")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    OUT.mkdir(parents=True, exist_ok=True)
    prov_path = OUT / "provenance.json"
    prov = json.loads(prov_path.read_text()) if prov_path.is_file() else {}
    prov["generator"] = "scripts/make_embedded.py"
    prov["seed"] = SEED
    parts = prov.setdefault("parts", {})
    if "mnist" in args.only:
        parts["mnist"] = make_mnist(args.data_dir, args.mnist_per_class)
        print("mnist:", parts["mnist"]["bytes"], "bytes")
    if "cifar10" in args.only:
        parts["cifar10"] = make_cifar(args.data_dir, args.cifar)
        print("cifar10:", parts["cifar10"]["bytes"], "bytes")
    if "imdb" in args.only:
        from mibench.data.embeddings import default_max_length

        parts["imdb"] = make_imdb(args.data_dir, args.imdb_per_class, default_max_length(None, args.max_length))
        print("imdb:", parts["imdb"]["bytes"], "bytes")
    prov_path.write_text(json.dumps(prov, indent=1, sort_keys=True) + "\n")
    total = sum(p["bytes"] for p in parts.values())
    print(f"total {total / 1e6:.2f} MB in {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
