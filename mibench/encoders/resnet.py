"""Non-invertible deep representations: a ResNet-18-shaped network trained on the vision task.

Architecture (torch only; He et al. 2016's ResNet-18 block layout, adapted to small images): a
3x3 conv stem (no max-pool), four stages of two BasicBlocks with widths w, 2w, 4w, 8w and strides
1, 2, 2, 2, global average pooling, and a linear head with one logit per information source.
The default width is w = 8 (ResNet-18 uses 64): a *narrow* ResNet-18 so it trains in a few
minutes on a CPU.  The paper (002 §5.7) uses a ResNet-50 trained on MNIST; we say so wherever
results are reported.

Training ("decodes perfectly" made checkable): multi-label classification of the ds source classes
C_1..C_ds of a canvas from the canvas itself (binary cross-entropy, one logit per source), on
canvases drawn from the vision task's own pool and layout; Adam with a cosine learning-rate decay
to 0, ``steps`` steps (default 600) of ``batch`` X and ``batch`` Y canvases.  Its accuracy is then
evaluated on ``eval_n`` fresh canvases (every source of every canvas) and recorded.

Why that matters (data-processing inequality): for features g_k(X) of any layer k,
I(g_k(X); g_k(Y)) <= I(X; Y).  The rest of the network plus the head maps g_k(X) to the decoded
classes; where they equal C for every canvas (accuracy 1), C is a function of g_k(X), so
I(g_k(X); g_k(Y)) >= I(C; C') = I(X; Y) and the truth is *exactly* I(X; Y) at every layer.  With
accuracy < 1 only the upper bound is certain.

Weights are cached in ``<user cache>/mibench/encoders`` (``$MIBENCH_CACHE/encoders`` when set;
``$MIBENCH_ENCODER_CACHE`` overrides both),
keyed by the task configuration and the training settings; ``mibench encoders train-resnet``
(re)trains them with one command, and ``--transform resnet`` trains them on first use.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from mibench.data.sources import encoders_dir
from mibench.encoders.base import ENCODERS, Encoder
from mibench.errors import MibenchError

LAYERS = ("stem", "layer1", "layer2", "layer3", "layer4", "pool")
DEFAULT_LAYER = "pool"
DEFAULT_WIDTH = 8
DEFAULT_STEPS = 600
DEFAULT_BATCH = 64
DEFAULT_LR = 2e-3
DEFAULT_EVAL_N = 4096
VERSION = 2


def check_layer(layer) -> str:
    name = DEFAULT_LAYER if layer in (None, "") else str(layer).strip().lower()
    if name not in LAYERS:
        raise MibenchError(f"unknown ResNet layer {layer!r}; choose from: {', '.join(LAYERS)}")
    return name


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.short = None
        if stride != 1 or c_in != c_out:
            self.short = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (x if self.short is None else self.short(x)))


class ResNet18(nn.Module):
    """ResNet-18 block layout (2, 2, 2, 2), width ``w`` (w, 2w, 4w, 8w), 3x3 stem, no max-pool."""

    def __init__(self, in_channels: int, n_out: int, width: int = DEFAULT_WIDTH, blocks=(2, 2, 2, 2)):
        super().__init__()
        self.in_channels, self.n_out, self.width, self.blocks = in_channels, n_out, width, tuple(blocks)
        self.stem = nn.Sequential(nn.Conv2d(in_channels, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        stages, c = [], width
        for i, n in enumerate(self.blocks):
            c_out = width * 2 ** i
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(*[BasicBlock(c if j == 0 else c_out, c_out, stride if j == 0 else 1)
                                          for j in range(n)]))
            c = c_out
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.head = nn.Linear(c, n_out)

    def features(self, x: torch.Tensor, upto: str = "pool") -> torch.Tensor:
        h = self.stem(x)
        if upto == "stem":
            return h
        for name in ("layer1", "layer2", "layer3", "layer4"):
            h = getattr(self, name)(h)
            if upto == name:
                return h
        return h.mean(dim=(2, 3))

    def forward(self, x):
        return self.head(self.features(x, "pool"))


# ---------------------------------------------------------------------------------------------
# Training, evaluation, cache
# ---------------------------------------------------------------------------------------------

def _vision_base(task):
    """The vision task under ``task`` (refuses other tasks with one line)."""
    base = getattr(task, "base", task)
    if not (hasattr(base, "sample_with_classes") and hasattr(base, "layout") and hasattr(base, "side")
            and getattr(base, "name", "") == "vision"):
        raise MibenchError(f"the resnet transform needs the vision task (MNIST canvases), "
                           f"not {getattr(base, 'name', base)!r}")
    return base


def task_key(task) -> dict:
    base = _vision_base(task)
    info = base.info()
    return {"task": "vision", "layout": info["layout"], "side": info["side"], "nuisance": info["nuisance"],
            "data_source": info["data_source"], "pool_sizes": info["pool_sizes"]}


def cache_path(task, width=None, steps=None, batch=None, lr=None, seed=0) -> Path:
    width, steps, batch, lr = _settings(width, steps, batch, lr)
    key = {"version": VERSION, "arch": f"resnet18-w{width}", **task_key(task), "steps": int(steps),
           "batch": int(batch), "lr": float(lr), "seed": int(seed)}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    k = task_key(task)
    name = f"resnet18-w{width}-{k['layout']}-side{k['side']}-eta{k['nuisance']:g}-{digest}"
    return encoders_dir() / f"{name}.pt"


@torch.no_grad()
def evaluate(model: ResNet18, task, n: int = DEFAULT_EVAL_N, seed: int = 12345, batch: int = 512) -> dict:
    """Accuracy of the source classes decoded from fresh canvases (X and Y of each pair)."""
    base = _vision_base(task)
    model.eval()
    g = torch.Generator(device=base.device).manual_seed(seed)
    shape = (base.layout[0], base.side, base.side)
    correct = total = exact = canvases = 0
    for start in range(0, n, batch):
        b = min(batch, n - start)
        x, y, cx, cy = base.sample_with_classes(b, float(base.ds), g)
        imgs = torch.cat([x, y]).reshape(-1, *shape)
        labels = torch.cat([cx, cy])
        pred = (model(imgs) > 0).long()
        ok = pred == labels
        correct += int(ok.sum())
        total += ok.numel()
        exact += int(ok.all(dim=1).sum())
        canvases += ok.shape[0]
    return {"source_accuracy": correct / total, "canvas_accuracy": exact / canvases, "errors": total - correct,
            "decisions": total, "canvases": canvases, "eval_seed": seed,
            "eval": "fresh canvases from the task's kept MNIST pool (X and Y of each pair), every source"}


def _settings(width=None, steps=None, batch=None, lr=None):
    """Training settings with the module defaults (read at call time) filled in."""
    return (int(width or DEFAULT_WIDTH), int(steps or DEFAULT_STEPS), int(batch or DEFAULT_BATCH),
            float(lr or DEFAULT_LR))


def train_resnet(task, width=None, steps=None, batch=None, lr=None, seed: int = 0, eval_n=None,
                 progress: bool = True, path: Path | None = None) -> tuple[ResNet18, dict]:
    """Train the multi-label source classifier on the vision task's canvases; save weights + record."""
    base = _vision_base(task)
    width, steps, batch, lr = _settings(width, steps, batch, lr)
    eval_n = int(eval_n or DEFAULT_EVAL_N)
    if steps < 1 or batch < 2 or width < 1:
        raise MibenchError(f"ResNet training needs steps >= 1, batch >= 2, width >= 1 (got {steps}, {batch}, {width})")
    device = base.device
    shape = (base.layout[0], base.side, base.side)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ResNet18(shape[0], base.ds, width).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)   # decays to 0: no late noisy steps
    g = torch.Generator(device=device).manual_seed(seed)
    model.train()
    t0 = time.perf_counter()
    losses = []
    for step in range(steps):
        x, y, cx, cy = base.sample_with_classes(batch, float(base.ds), g)
        imgs = torch.cat([x, y]).reshape(-1, *shape)
        target = torch.cat([cx, cy]).float()
        loss = F.binary_cross_entropy_with_logits(model(imgs), target)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if progress and (step + 1) % 50 == 0:
            recent = sum(losses[-50:]) / len(losses[-50:])
            print(f"  resnet step {step + 1}/{steps}  loss {recent:.4f}", file=sys.stderr)
    train_s = time.perf_counter() - t0
    acc = evaluate(model, base, eval_n)
    record = {"version": VERSION, "arch": f"ResNet-18 block layout (2,2,2,2), width {width} "
              f"({width},{2 * width},{4 * width},{8 * width}), 3x3 stem, no max-pool, {base.ds} logits",
              "width": width, "in_shape": list(shape), "ds": base.ds, "task": task_key(base), "steps": steps,
              "batch": batch, "lr": lr, "lr_schedule": "Adam, cosine decay to 0", "seed": seed,
              "objective": "multi-label BCE on the ds source classes of each canvas (X and Y canvases)",
              "final_loss": sum(losses[-20:]) / len(losses[-20:]),
              "train_seconds": round(train_s, 1), "device": str(device), "accuracy": acc,
              "trained": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    path = path or cache_path(base, width, steps, batch, lr, seed)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(model.state_dict(), tmp)
    os.replace(tmp, path)
    record["weights"] = str(path)
    path.with_suffix(".json").write_text(json.dumps(record, indent=2) + "\n")
    return model, record


def load_or_train(task, width=None, steps=None, batch=None, lr=None, seed: int = 0, force: bool = False,
                  progress: bool = True):
    """Cached weights for this task config if present (else train them, announced on stderr)."""
    base = _vision_base(task)
    width, steps, batch, lr = _settings(width, steps, batch, lr)
    path = cache_path(base, width, steps, batch, lr, seed)
    meta = path.with_suffix(".json")
    if not force and path.is_file() and meta.is_file():
        record = json.loads(meta.read_text())
        model = ResNet18(record["in_shape"][0], record["ds"], record["width"])
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        return model.to(base.device).eval(), record
    if progress:
        print(f"mibench: training the ResNet-18 (width {width}) source classifier for this vision task "
              f"({steps} steps; cached at {path})", file=sys.stderr)
    model, record = train_resnet(base, width, steps, batch, lr, seed, progress=progress, path=path)
    if progress:
        a = record["accuracy"]
        print(f"mibench: ResNet accuracy {a['source_accuracy']:.5f} per source, {a['canvas_accuracy']:.5f} per canvas "
              f"({a['errors']} errors in {a['decisions']}) in {record['train_seconds']} s", file=sys.stderr)
    return model.eval(), record


class ResNetFeatures(Encoder):
    """g(x) = flattened features of ``layer`` of a trained :class:`ResNet18`."""

    name = "resnet"
    invertible = False

    def __init__(self, shape, model: ResNet18, layer: str, record: dict):
        super().__init__(shape)
        if len(self.shape) != 3:
            raise MibenchError(f"the resnet transform takes images (C, H, W), got shape {self.shape}")
        self.model = model
        self.layer = check_layer(layer)
        self.record = record
        with torch.no_grad():
            p = next(model.parameters())
            probe = model.features(torch.zeros(1, *self.shape, device=p.device, dtype=p.dtype), self.layer)
        self.feature_shape = tuple(probe.shape[1:])
        self.out_dim = int(probe[0].numel())

    def forward(self, x):
        return self.model.features(x.reshape(x.shape[0], *self.shape), self.layer).reshape(x.shape[0], -1)

    def info(self):
        acc = self.record.get("accuracy", {})
        exact = acc.get("source_accuracy") == 1.0
        return {**super().info(), "layer": self.layer, "feature_shape": list(self.feature_shape),
                "architecture": self.record.get("arch"), "weights": self.record.get("weights"),
                "training": {k: self.record.get(k) for k in ("objective", "steps", "batch", "lr", "seed",
                                                             "final_loss", "train_seconds", "device")},
                "classifier_accuracy": acc,
                "decodes_perfectly": exact,
                "truth": ("I(g(X);g(Y)) = I(X;Y) where C is recoverable from every layer (DPI both ways): the "
                          f"classifier decoded every source without error on {acc.get('decisions')} decisions "
                          "(a sample of the canvases, not all of them)"
                          if exact else
                          "I(g(X);g(Y)) <= I(X;Y) (data-processing inequality); equality is not established "
                          f"(classifier accuracy {acc.get('source_accuracy')})")}


@ENCODERS.register("resnet", "features of one layer (--layer stem|layer1..4|pool) of a ResNet-18-shaped source "
                             "classifier trained on the vision task (non-invertible; DPI bound)")
def _resnet(shape, *, seed=0, layer=None, task=None, device="cpu"):
    layer = check_layer(layer)
    if task is None:
        raise MibenchError("the resnet transform needs the vision task it was trained on")
    model, record = load_or_train(task, seed=seed)
    return ResNetFeatures(shape, model.to(device), layer, record)


__all__ = ["LAYERS", "ResNet18", "ResNetFeatures", "train_resnet", "load_or_train", "evaluate", "cache_path",
           "check_layer", "encoders_dir"]
