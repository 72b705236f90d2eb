"""Can MIST (Gritsai et al. 2025, PyPI ``mist-statinf``, a meta-learned amortized MI estimator) run
offline on the sample leaderboard's datasets?  Run in MIST's own environment (never imports mibench):

    python -m venv $PEER_VENV && $PEER_VENV/bin/pip install torch==2.13.0 mist-statinf==0.1.1
    $PEER_VENV/bin/python benchmarks/peers/check_mist.py > benchmarks/results/mist_offline.txt

($PEER_VENV: any directory for MIST's own virtual environment.)

It checks (1) whether the installed wheel holds any checkpoint file, (2) whether the checkpoint paths
its README uses exist, and (3) what ``MISTQuickEstimator`` does without a checkpoint: if two builds
under different torch seeds give different values on the same data, the network is untrained and its
output is not an estimate.
"""
import importlib.metadata as md
import os
import sys

import numpy as np
import torch


def main() -> int:
    dist = md.distribution("mist-statinf")
    files = [str(f) for f in dist.files or []]
    weights = [f for f in files if f.endswith((".ckpt", ".pt", ".pth", ".safetensors", ".bin"))]
    print(f"# mist-statinf {dist.version}, torch {torch.__version__}; "
          f"HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE')}")
    print(f"files in the wheel: {len(files)}; checkpoint files among them: {len(weights)} {weights}")
    for path in ("checkpoints/mist/weights.ckpt", "checkpoints/mist_qr/weights.ckpt"):
        there = "present" if os.path.exists(path) else "absent"
        print(f"README's checkpoint {path}: {there} (relative to the working directory)")
    from mist_statinf import MISTQuickEstimator

    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 2))
    y = 0.8 * x + 0.6 * rng.standard_normal((500, 2))     # Gaussian, rho 0.8 per pair: 2 * 0.511 = 1.02 nats
    values = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        values.append(float(MISTQuickEstimator(loss="mse", device="cpu").estimate_point(x, y)))
    print(f"MISTQuickEstimator() without a checkpoint, same data (truth 1.02 nats), torch seeds 0 and 1: "
          f"{values[0]:.4f}, {values[1]:.4f}")
    untrained = abs(values[0] - values[1]) > 1e-6
    print("verdict: " + ("no weights offline; without a checkpoint the package builds an untrained network and "
                         "returns its output without a warning, so MIST is not run on the leaderboard"
                         if not weights and untrained else "weights found: MIST can be run"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
