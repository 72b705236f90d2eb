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
    p.add_argument("--rehash", action="store_true",
                   help="compute every data file's md5 afresh instead of trusting the one remembered for its size "
                        "and modification time (a file edited in place can keep both)")
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(func=cmd_data)


def status(data_dir=None, rehash: bool = False) -> dict:
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
    out = {"data_dir": str(root), "origin": data_dir_origin(data_dir), "data_dir_state": _dir_state(root),
           "cache_dir": str(cache_dir()),
           "datasets": [dataset_status(n, data_dir, rehash) for n in DATASETS],
           "embedded": {n: {"file": embedded.FILES[n], "present": (embedded.EMBEDDED_DIR / embedded.FILES[n]).is_file(),
                            "shape": prov.get(n, {}).get("shape"), "bytes": prov.get(n, {}).get("bytes"),
                            "md5": prov.get(n, {}).get("md5")} for n in embedded.FILES}}
    out["embedded_used"] = _embedded_use(root, out["origin"])
    emb_dir = cache_dir() / "embeddings"
    out["embedding_caches"] = sorted(p.name for p in emb_dir.glob("imdb-*.npy")) if emb_dir.is_dir() else []
    out["damaged_embedding_caches"] = _damaged_caches(emb_dir, out["embedding_caches"])
    out["layout"] = {n: {"format": FORMATS[n], "files": [f.relpath for f in s.files], "needs": s.required}
                     for n, s in DATASETS.items()}
    return out


def _dir_state(root) -> str:
    """``ok``, ``embedded``, ``missing`` (no such directory), ``empty``, or ``unreadable: why``."""
    from mibench.data.sources import EMBEDDED

    if root == EMBEDDED:
        return "embedded"
    try:
        if not root.exists():
            return "missing"
        return "ok" if any(root.iterdir()) else "empty"
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def _embedded_use(root, origin: str) -> str:
    """Whether ``mibench run`` reads the embedded subset, as :func:`mibench.data.embedded.choose_source`
    decides: never when the data directory was chosen explicitly (a dataset missing there is an error)."""
    from mibench.data.sources import EMBEDDED

    if root == EMBEDDED:
        return "in use: the data directory is 'embedded', so the full data is not read"
    if origin == "user cache":
        return "used for a dataset missing from the user cache"
    where = "--data-dir" if origin == "argument" else "MIBENCH_DATA"
    return (f"not used: the data directory was chosen with {where}, so a run that needs a dataset missing there "
            "stops and names its files; 'embedded' as the directory selects the subset")


def _damaged_caches(folder, names: list[str]) -> dict:
    """{file name: why} for the cached embeddings that do not load (a text run builds them again)."""
    from mibench.data.embeddings import read_cache
    from mibench.errors import UnreadableInput

    out = {}
    for name in names:
        try:
            read_cache(folder / name, mmap=True)
        except UnreadableInput as exc:
            out[name] = str(exc)
    return out


def cmd_data(args) -> int:
    from mibench.data.sources import DATASETS, UNUSABLE, ensure_dataset, layout_lines
    from mibench.errors import EXIT_BAD_INPUT

    if args.download is not None:
        names = args.download or list(DATASETS)
        for name in names:
            root, rows = ensure_dataset(name, args.data_dir, download=True)
            print(f"{name}: present in {root} ({', '.join(r['status'] for r in rows)})")
    if args.prepare:
        prepare(args)
    st = status(args.data_dir, args.rehash)
    unusable = [f for ds in st["datasets"] for f in ds["files"] if str(f.get("status", "")).startswith(UNUSABLE)]
    if args.json:
        print(json.dumps(st, indent=1))
        return EXIT_BAD_INPUT if unusable else 0
    state = {"missing": "; it does not exist", "empty": "; it is empty"}.get(st["data_dir_state"], "")
    if st["data_dir_state"].startswith("unreadable"):
        state = f"; it cannot be listed: {st['data_dir_state'].split(': ', 1)[1]}"
    print(f"data directory: {st['data_dir']}  (from {st['origin']}{state})")
    print(f"cache directory: {st['cache_dir']}")
    for ds in st["datasets"]:
        bad = [f for f in ds["files"] if str(f.get("status", "")).startswith(UNUSABLE)]
        if st["data_dir_state"] == "embedded":
            mark = "not read (the data directory is 'embedded')"
        elif bad:
            mismatch = any(str(f["status"]).startswith("MISMATCH") for f in bad)
            mark = ("NOT USABLE: a file there cannot be used" if not ds["present"] else
                    "present, but a file does not match its md5" if mismatch else "present, but a file cannot be used")
        else:
            mark = "present" if ds["present"] else "MISSING"
        print(f"  {ds['dataset']:8s} {mark}")
        for f in ds["files"]:
            if f["present"]:
                print(f"      {f['file']:45s} {f['bytes']:>10d} B  md5 {f.get('md5', '?')}  {f.get('status', '')}")
            elif f.get("status"):
                print(f"      {f['file']:45s} {f['status']}")
            elif ds["dataset"] != "cifar10":
                print(f"      {f['file']:45s} missing")
    print(f"embedded subset ({st['embedded_used']}):")
    for name, e in st["embedded"].items():
        size = f"{e['bytes'] / 1e6:.2f} MB" if e["bytes"] else "?"
        print(f"  {name:8s} {e['file']:26s} {'present' if e['present'] else 'MISSING':8s} shape {e['shape']}  {size}")
    caches = [n + (" (cannot be read; the next text run that needs it builds it again)"
                   if n in st["damaged_embedding_caches"] else "") for n in st["embedding_caches"]]
    print(f"cached IMDB embeddings: {', '.join(caches) or 'none'}")
    print("the layout mibench reads under a data directory (--data-dir, else MIBENCH_DATA):")
    print("\n".join(layout_lines()))
    if unusable:
        print(f"mibench data: {len(unusable)} file(s) are there but not as expected (see their status above): "
              f"{', '.join(f['file'] for f in unusable)}", file=sys.stderr)
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
