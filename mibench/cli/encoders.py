"""``mibench encoders``: list the transforms, (re)train the ResNet used by ``--transform resnet``,
fine-tune the default text encoder (``finetune-text``), check invertibility numerically, and
tabulate / plot the ResNet layer study.

Light on purpose (a top-level module, not inside :mod:`mibench.encoders`, whose package imports
torch): building the parser (``mibench encoders --help``, argument errors) imports neither torch
nor numpy; each action imports what it needs when it runs."""
from __future__ import annotations

import json
import sys


def register_cli(sub) -> None:
    p = sub.add_parser("encoders", help="encoders: list, finetune-text (the default text pool's), train-resnet, check",
                       description="Encoders applied to X and Y (--transform on `mibench run`), and the fine-tuned "
                                   "text encoder behind the default text pool (finetune-text).")
    esub = p.add_subparsers(dest="encoders_command", metavar="ACTION")

    lp = esub.add_parser("list", help="transforms, ResNet layers, cached ResNet and fine-tuned text weights")
    lp.set_defaults(func=cmd_list)

    tp = esub.add_parser("train-resnet", help="(re)train the ResNet source classifier for a vision task config",
                         description="Train the ResNet-18-shaped multi-label source classifier on the vision task's "
                                     "canvases and cache its weights (the ones --transform resnet loads).")
    tp.add_argument("--ds", type=int, help="number of sources (default 10)")
    tp.add_argument("--layout", help="CxRxC grid, e.g. 1x2x2")
    tp.add_argument("--side", type=int, help="image side (default 64, the vision task's)")
    tp.add_argument("--nuisance", type=float, help="background strength eta")
    tp.add_argument("--data-dir", help="dataset directory (else $MIBENCH_DATA, else the user cache)")
    tp.add_argument("--steps", type=int, default=None, help="training steps (default 600)")
    tp.add_argument("--width", type=int, default=None, help="base width w (default 8: widths 8,16,32,64)")
    tp.add_argument("--seed", type=int, default=0)
    tp.add_argument("--device", default="auto", help="auto | cpu | cuda[:N] | mps")
    tp.add_argument("--force", action="store_true", help="retrain even when cached weights exist")
    tp.set_defaults(func=cmd_train_resnet)

    fp = esub.add_parser("finetune-text", help="fine-tune all-MiniLM-L6-v2 on IMDB labels: the default text encoder",
                         description="Fine-tune the packaged all-MiniLM-L6-v2 end to end with a linear head on IMDB "
                                     "train labels (paper §4.3-4.4: D_NLP is built from fine-tuned sentence "
                                     "embeddings) and cache the weights; the default text pool (--encoder "
                                     "minilm-imdb) embeds with them.  Needs the full IMDB data and the text extra; "
                                     "the defaults are the recipe of the shipped embeddings.")
    from mibench.data.finetune_recipe import DEFAULT_CONFIG as recipe  # light: no torch, no transformers

    fp.add_argument("--data-dir", help="dataset directory (else $MIBENCH_DATA, else the user cache)")
    fp.add_argument("--n-per-class", type=int, default=None,
                    help=f"IMDB train reviews per class (default {recipe.n_per_class})")
    fp.add_argument("--max-length", type=int, default=None,
                    help=f"tokens per review while training (default {recipe.max_length})")
    fp.add_argument("--epochs", type=int, default=None, help=f"epochs (default {recipe.epochs})")
    fp.add_argument("--batch-size", type=int, default=None, help=f"reviews per step (default {recipe.batch_size})")
    fp.add_argument("--lr", type=float, default=None, help=f"encoder learning rate (default {recipe.lr:g})")
    fp.add_argument("--seed", type=int, default=None, help=f"seed (default {recipe.seed})")
    fp.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    fp.add_argument("--force", action="store_true", help="retrain even when cached weights exist")
    fp.set_defaults(func=cmd_finetune_text)

    cp = esub.add_parser("check", help="measure reconstruction error max|g^-1(g(x)) - x| of the invertible transforms")
    cp.add_argument("--task", default="vision")
    cp.add_argument("--side", type=int, default=None)
    cp.add_argument("--ds", type=int, default=None)
    cp.add_argument("--n", type=int, default=64, help="samples checked")
    cp.set_defaults(func=cmd_check)
    sp = esub.add_parser("layer-study", help="Figure-6-style table and plot of estimated MI per ResNet layer",
                         description="From a resnet-layers sweep (mibench sweep --preset resnet-layers): write "
                                     "resnet_layers.csv (estimate, truth bound, decoder and linear-probe accuracy "
                                     "per layer and estimator) and resnet_layers.png.")
    sp.add_argument("runs", nargs="+", help="sweep or run directories")
    sp.add_argument("-o", "--out", default=".", help="output directory (default .)")
    sp.add_argument("--no-probes", action="store_true", help="skip the per-layer linear probes")
    sp.set_defaults(func=cmd_layer_study)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def cmd_list(args) -> int:
    from mibench.encoders import ENCODERS
    from mibench.encoders.resnet import LAYERS, encoders_dir

    print("transforms (--transform):")
    for e in ENCODERS:
        print(f"  {e.name:<9} {e.description}")
    print(f"resnet layers (--layer): {', '.join(LAYERS)}")
    folder = encoders_dir()
    cached = sorted(folder.glob("resnet*.json"))
    print(f"cached ResNet weights in {folder}: {len(cached) or 'none'}")
    for meta in cached:
        rec = json.loads(meta.read_text())
        acc = rec.get("accuracy", {})
        t = rec.get("task", {})
        print(f"  {meta.stem}: layout {t.get('layout')} side {t.get('side')} eta {t.get('nuisance')} · "
              f"{rec.get('steps')} steps · accuracy {acc.get('source_accuracy')} per source")
    from mibench.data.embeddings import cached_checkpoint
    from mibench.data.finetune_recipe import FINETUNE_COMMAND, record

    path = cached_checkpoint()
    if path is None:
        print(f"fine-tuned text encoder (minilm-imdb, the default text pool's): not cached ({FINETUNE_COMMAND})")
    else:
        rec = record(path)
        print(f"fine-tuned text encoder (minilm-imdb, the default text pool's): {path} · {rec['n_train']} reviews · "
              f"held-out accuracy {rec['held_out']['accuracy']} · {rec['train_seconds']} s")
    return 0


def _vision_params(args) -> dict:
    params = {}
    for k in ("ds", "layout", "side", "nuisance", "data_dir"):
        v = getattr(args, k, None)
        if v is not None:
            params[k] = v
    return params


def _positive(args, *names) -> None:
    """--NAME, when given, must be >= 1 (checked before torch is imported; 0 must not mean "default")."""
    from mibench.errors import MibenchError

    for name in names:
        v = getattr(args, name, None)
        if v is not None and v < 1:
            raise MibenchError(f"--{name.replace('_', '-')} must be >= 1, got {v}")


def cmd_train_resnet(args) -> int:
    _positive(args, "steps", "width")
    from mibench.encoders import resnet
    from mibench.tasks import make_task
    from mibench.utils.device import resolve_device

    device = resolve_device(args.device)
    task = make_task("vision", device=device, **_vision_params(args))
    model, record = resnet.load_or_train(task, width=args.width, steps=args.steps, seed=args.seed,
                                         force=args.force, progress=True)
    acc = record["accuracy"]
    print(f"ResNet ({record['arch']}) for vision layout {record['task']['layout']} side {record['task']['side']} "
          f"eta {record['task']['nuisance']}: accuracy {acc['source_accuracy']:.5f} per source, "
          f"{acc['canvas_accuracy']:.5f} per canvas ({acc['errors']} errors / {acc['decisions']}); "
          f"weights {record['weights']}")
    return 0


def cmd_finetune_text(args) -> int:
    _positive(args, "n_per_class", "max_length", "epochs", "batch_size", "threads")
    from dataclasses import replace

    from mibench.data.finetune import DEFAULT_CONFIG, finetune_text

    changes = {k: getattr(args, k) for k in ("n_per_class", "max_length", "epochs", "batch_size", "lr", "seed")
               if getattr(args, k) is not None}
    cfg = replace(DEFAULT_CONFIG, **changes)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    rec = finetune_text(args.data_dir, cfg, force=args.force)
    held = rec["held_out"]
    default = "the default text encoder" if cfg == DEFAULT_CONFIG else "not the default recipe: not used by --task text"
    print(f"fine-tuned all-MiniLM-L6-v2 ({rec['cache']}): {rec['n_train']} reviews, {rec['steps']} steps in "
          f"{rec['train_seconds']} s on {rec['torch_threads']} threads; held-out accuracy {held['accuracy']} on "
          f"{held['n']} IMDB test reviews; {rec['path']} ({default})")
    return 0


def cmd_check(args) -> int:
    _positive(args, "n")
    import torch

    from mibench.encoders import ENCODERS, make_encoder, reconstruction_error
    from mibench.tasks import make_task
    from mibench.tasks.transformed import sample_shapes

    params = {k: v for k, v in (("side", args.side), ("ds", args.ds)) if v is not None}
    task = make_task(args.task, device="cpu", **params)
    x, y = task.sample(args.n, 1.0, torch.Generator().manual_seed(0))
    shape, _ = sample_shapes(task)
    for e in ENCODERS:
        if e.name == "resnet":
            continue
        enc = make_encoder(e.name, shape)
        err32 = reconstruction_error(enc, x)
        err64 = reconstruction_error(enc.double(), x.double())
        print(f"{e.name:<8} {task.name} {tuple(shape)}: max|g^-1(g(x)) - x| = {err32:.2e} (float32), "
              f"{err64:.2e} (float64)", file=sys.stdout)
    return 0


def cmd_layer_study(args) -> int:
    from mibench.analysis.layer_study import run_layer_study

    for path in run_layer_study(args.runs, args.out, probes=not args.no_probes):
        print(f"wrote {path}")
    return 0
