"""Peer estimators from torch-mist (Federici et al., PyPI ``torch-mist`` 0.2.17), with their stock
settings, in the peer's own environment (never imports mibench):

    python -m venv /work/peers/torch-mist && /work/peers/torch-mist/bin/pip install torch==2.13.0 torch-mist==0.2.17 pandas "numpy<2"
    /work/peers/torch-mist/bin/python benchmarks/peers/run_torch_mist.py smile,infonce DATA.npz [DATA.npz ...]

Settings (``torch_mist.estimate_mi``): ``data`` = the training 80 % (common.split: the same seeded
split as mibench.estimate), ``test_data`` = the held-out 20 % (the reported value),
``hidden_dims=[256, 256]``, ``batch_size=64``, ``max_iterations=5000``, everything else stock
(Adam lr 5e-4, early stopping on a 10 % validation split of the training data, each estimator's
stock critic: joint for smile / nwj / js / mine, separable for infonce, one negative per positive
for the joint ones; the generative ones' stock densities: conditional / marginal transformed normals,
an affine autoregressive joint for gm; ba's entropy_y is the Gaussian entropy of the training y).  Output: common.py.
"""
import sys

from common import parse, run_all, split

STOCK = {"hidden_dims": [256, 256], "batch_size": 64, "max_iterations": 5000}
PEERS = {name: f"torch_mist.estimate_mi(estimator={name!r}, {STOCK}, test_data=held-out 20 %)"
         for name in ("smile", "infonce", "nwj", "js", "mine", "doe", "gm", "club", "l1out", "flo")}
PEERS["ba"] = (f"torch_mist.estimate_mi(estimator='ba', entropy_y=the Gaussian entropy of the training y's covariance, "
               f"{STOCK}, test_data=held-out 20 %)")


def gaussian_entropy(y) -> float:
    """Entropy (nats) of the Gaussian with the sample covariance of y's rows: BA's H(Y), the same rule
    as mibench's ``ba`` (exact for Gaussian Y)."""
    import numpy as np

    cov = np.atleast_2d(np.cov(y.T))
    return 0.5 * (cov.shape[0] * np.log(2 * np.pi * np.e) + np.linalg.slogdet(cov)[1])


def main() -> int:
    args, names = parse("torch-mist", PEERS)
    import torch
    from torch_mist import estimate_mi

    torch.set_num_threads(args.threads)

    def one(name, x, y, seed):
        torch.manual_seed(seed)
        tr, te = split(len(x), seed)
        extra = {"entropy_y": float(gaussian_entropy(y[tr]))} if name == "ba" else {}
        out = estimate_mi(data=(x[tr], y[tr]), test_data=(x[te], y[te]), estimator=name, verbose=False,
                          **STOCK, **extra)
        return out[0] if isinstance(out, tuple) else out     # (value, training log) in this version

    run_all("torch-mist", args, names, one, PEERS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
