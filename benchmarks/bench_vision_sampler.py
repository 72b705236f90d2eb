#!/usr/bin/env python
"""Batches/s of the vectorised vision sampler vs a straightforward per-sample implementation.

Both build the same construction (Lee & Rhee 2024 §4.4-4.5, §5.6): ds = 10 fair binary sources as a
1x2x5 grid of MNIST 0/1 digits, Y's classes through a BSC at the requested MI, Y's digits
different images of their class, canvas resized to 28x28 (bilinear, antialias), optional
CIFAR-10 nuisance clip(canvas + eta * background, 0, 1), batch 64.

* vectorised: ``mibench.tasks.vision`` -- one index gather per batch, one interpolate call.
* per-sample: a Python loop over samples and sources (numpy draws), the canvas assembled per
  sample and resized per image (one interpolate call per canvas and per background).

    MIBENCH_DATA=/path/to/data python benchmarks/bench_vision_sampler.py [--seconds 3] [--threads 1]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mibench.tasks import make_task  # noqa: E402

LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


class PerSampleSampler:
    """The same construction written the obvious way: loops, per-image resize."""

    def __init__(self, task):
        items = task.pool.items.cpu().numpy()
        off = int(task.pool.offsets[1])
        self.by_class = [items[:off], items[off:]]
        self.ds = task.ds
        self.rows, self.cols = task.layout[1], task.layout[2]
        self.side = task.side
        self.eta = task.nuisance
        self.bgs = task.render.backgrounds.cpu().numpy() if task.render.backgrounds is not None else None
        self.task = task
        self.rng = np.random.default_rng(0)

    def _resize(self, img: np.ndarray) -> np.ndarray:
        t = torch.from_numpy(img)[None, None]
        return F.interpolate(t, size=(self.side, self.side), mode="bilinear", align_corners=False,
                             antialias=True)[0, 0].numpy()

    def _canvas(self, digits) -> np.ndarray:
        canvas = np.zeros((self.rows * 28, self.cols * 28), dtype=np.float32)
        for k, img in enumerate(digits):
            r, c = divmod(k, self.cols)
            canvas[r * 28:(r + 1) * 28, c * 28:(c + 1) * 28] = img / 255.0
        out = self._resize(canvas)
        if self.eta > 0:
            bg = self.bgs[self.rng.integers(len(self.bgs))].astype(np.float32) / 255.0
            gray = np.tensordot(LUMA, bg, axes=1)
            out = out + self.eta * self._resize(np.ascontiguousarray(gray))
        return np.clip(out, 0.0, 1.0).reshape(-1)

    def sample(self, batch_size: int, mi_bits: float):
        beta = self.task.crossover(mi_bits)
        xs, ys = [], []
        for _ in range(batch_size):
            dx, dy = draw_sources(self.rng, self.by_class, self.ds, beta)
            xs.append(self._canvas(dx))
            ys.append(self._canvas(dy))
        return torch.from_numpy(np.stack(xs)), torch.from_numpy(np.stack(ys))


def draw_sources(rng, by_class, ds: int, beta: float):
    """One sample's items, the obvious way: per source a fair class, its BSC flip for Y, and
    two different items (X's and Y's)."""
    dx, dy = [], []
    for _ in range(ds):
        c = int(rng.random() < 0.5)
        c2 = c ^ int(rng.random() < beta)
        pool = by_class[c]
        i = int(rng.integers(len(pool)))
        j = int(rng.integers(len(by_class[c2])))
        while c2 == c and j == i:
            j = int(rng.integers(len(pool)))
        dx.append(pool[i])
        dy.append(by_class[c2][j])
    return dx, dy


def rate(fn, seconds: float) -> tuple[float, int]:
    fn()  # warm-up
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        el = time.perf_counter() - t0
        if el >= seconds:
            return n / el, n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", default=None)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--mi", type=float, default=2.0)
    p.add_argument("--nuisance", type=float, default=0.5, help="eta for the 'with nuisance' rows")
    p.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: fair on a shared box)")
    p.add_argument("--device", default="cpu", help="device of the vectorised sampler")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)

    print(f"vision sampler, ds 10 (1x2x5), side 28, batch {args.batch_size}, MI {args.mi:g} bits, "
          f"torch threads {torch.get_num_threads()}, device {args.device}")
    print(f"{'setting':22s} {'vectorised b/s':>15s} {'per-sample b/s':>15s} {'ratio':>8s}")
    for eta in (0.0, args.nuisance):
        task = make_task("vision", device=args.device, data_dir=args.data_dir, nuisance=eta)
        gen = torch.Generator(device=args.device).manual_seed(0)
        sync = torch.cuda.synchronize if task.device.type == "cuda" else (lambda: None)

        def vec():
            task.sample(args.batch_size, args.mi, gen)
            sync()

        naive = PerSampleSampler(make_task("vision", data_dir=args.data_dir, nuisance=eta)) \
            if task.device.type != "cpu" else PerSampleSampler(task)
        x, y = naive.sample(4, args.mi)
        assert x.shape == (4, task.dim_x) and float(x.max()) <= 1.0
        v, _ = rate(vec, args.seconds)
        s, _ = rate(lambda: naive.sample(args.batch_size, args.mi), args.seconds)
        label = "no nuisance" if eta == 0 else f"nuisance eta={eta:g}"
        print(f"{label:22s} {v:15.1f} {s:15.2f} {v / s:7.0f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
