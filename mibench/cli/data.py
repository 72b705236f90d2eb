"""``mibench data``: what data is present where (with checksums), and ``--prepare`` / ``--download``."""
from __future__ import annotations

import json
import sys
import time


def register_cli(subparsers) -> None:
    p = subparsers.add_parser(
        "data", help="show which datasets are present (and verified), prepare caches, download",
        description="Show the data directory in use (--data-dir > MIBENCH_DATA > user cache), which datasets are "
                    "present with their md5 status, the embedded subset shipped with mibench, and the caches. "
                    "--prepare computes the IMDB embeddings and filtered pools; --download fetches missing data.")
    p.add_argument("--data-dir", default=None, help="data directory (default: MIBENCH_DATA, then ~/.cache/mibench)")
    p.add_argument("--prepare", action="store_true", help="build caches: IMDB embeddings, decoder-filtered pools")
    p.add_argument("--download", nargs="*", metavar="DATASET", default=None,
                   help="download missing datasets (mnist cifar10 imdb; none named = all) into the data directory")
    p.add_argument("--encoder", default=None, help="text encoder for --prepare (default: minilm-imdb, all-MiniLM-L6-v2 "
                   "fine-tuned on IMDB labels; all-MiniLM-L6-v2: off the shelf; or a checkpoint)")
    p.add_argument("--n-per-class", type=int, default=None, help="IMDB reviews per class to embed (default 1500)")
    p.add_argument("--max-length", type=int, default=None,
                   help="encoder max tokens per review (default: 128 for the fine-tuned default encoder, its training "
                        "length; 256 for the others)")
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(func=cmd_data)


def status(data_dir=None) -> dict:
    from mibench.data import embedded
    from mibench.data.sources import (
        DATASETS,
        FORMATS,
        cache_dir,
        data_dir_origin,
        dataset_status,
        resolve_data_dir,
    )

    root = resolve_data_dir(data_dir)
    prov = embedded.provenance().get("parts", {})
    out = {"data_dir": str(root), "origin": data_dir_origin(data_dir), "cache_dir": str(cache_dir()),
           "datasets": [dataset_status(n, data_dir) for n in DATASETS],
           "embedded": {n: {"file": embedded.FILES[n], "present": (embedded.EMBEDDED_DIR / embedded.FILES[n]).is_file(),
                            "shape": prov.get(n, {}).get("shape"), "bytes": prov.get(n, {}).get("bytes"),
                            "md5": prov.get(n, {}).get("md5")} for n in embedded.FILES}}
    emb_dir = cache_dir() / "embeddings"
    out["embedding_caches"] = sorted(p.name for p in emb_dir.glob("imdb-*.npy")) if emb_dir.is_dir() else []
    out["layout"] = {n: {"format": FORMATS[n], "files": [f.relpath for f in s.files], "needs": s.required}
                     for n, s in DATASETS.items()}
    return out


def cmd_data(args) -> int:
    from mibench.data.sources import DATASETS, ensure_dataset, layout_lines

    if args.download is not None:
        names = args.download or list(DATASETS)
        for name in names:
            root, rows = ensure_dataset(name, args.data_dir, download=True)
            print(f"{name}: present in {root} ({', '.join(r['status'] for r in rows)})")
    if args.prepare:
        prepare(args)
    st = status(args.data_dir)
    if args.json:
        print(json.dumps(st, indent=1))
        return 0
    print(f"data directory: {st['data_dir']}  (from {st['origin']})")
    print(f"cache directory: {st['cache_dir']}")
    damaged = []
    for ds in st["datasets"]:
        bad = [f["file"] for f in ds["files"] if str(f.get("status", "")).startswith("MISMATCH")]
        mark = "MISSING" if not ds["present"] else "present, but a file does not match its md5" if bad else "present"
        damaged += bad
        print(f"  {ds['dataset']:8s} {mark}")
        for f in ds["files"]:
            if f["present"]:
                print(f"      {f['file']:45s} {f['bytes']:>10d} B  md5 {f.get('md5', '?')}  {f.get('status', '')}")
            elif ds["dataset"] != "cifar10":
                print(f"      {f['file']:45s} missing")
    print("embedded subset (used when the full data is absent):")
    for name, e in st["embedded"].items():
        size = f"{e['bytes'] / 1e6:.2f} MB" if e["bytes"] else "?"
        print(f"  {name:8s} {e['file']:26s} {'present' if e['present'] else 'MISSING':8s} shape {e['shape']}  {size}")
    print(f"cached IMDB embeddings: {', '.join(st['embedding_caches']) or 'none'}")
    print("the layout mibench reads under a data directory (--data-dir, else MIBENCH_DATA):")
    print("\n".join(layout_lines()))
    if damaged:
        from mibench.errors import EXIT_BAD_INPUT

        print(f"mibench data: {len(damaged)} file(s) do not match their md5 (truncated or modified): "
              f"{', '.join(damaged)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return 0


def prepare(args) -> None:
    """Build the caches a run would otherwise build on first use."""
    from mibench.data.embedded import choose_source
    from mibench.tasks.text import load_imdb_pool
    from mibench.tasks.vision import load_mnist_pool
    from mibench.utils.checks import check_positive_int

    # checked before the MNIST pool is built, so a mistyped flag is not reported as missing data
    if args.n_per_class is not None:
        check_positive_int(args.n_per_class, "--n-per-class", minimum=2)
    if args.max_length is not None:
        check_positive_int(args.max_length, "--max-length", minimum=2)
    t0 = time.perf_counter()
    _, info = load_mnist_pool(args.data_dir)
    print(f"MNIST 0/1 pool: {info['pool_sizes']} kept, decoder accuracy {info['decoder_accuracy']} "
          f"({info['data_source']})", file=sys.stderr)
    kind, _, _ = choose_source("imdb", args.data_dir)
    _, info = load_imdb_pool(args.data_dir, args.encoder, args.n_per_class, args.max_length)
    print(f"IMDB pool: {info['pool_sizes']} kept of {info['decoder']['candidates_per_class']}, decoder accuracy "
          f"{info['decoder_accuracy']} (before filtering {info['decoder']['accuracy_before']:.4f}; "
          f"{info['data_source']})", file=sys.stderr)
    print(f"prepared in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
