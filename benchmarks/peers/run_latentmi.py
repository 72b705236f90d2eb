"""Latent MI (Gowri et al. 2024, "Approximating mutual information of high-dimensional variables using
learned representations"; PyPI ``latentmi`` 0.1.3), with its stock settings, in the peer's own
environment (never imports mibench):

    python -m venv $PEER_VENV && $PEER_VENV/bin/pip install torch==2.13.0 latentmi==0.1.3
    $PEER_VENV/bin/python benchmarks/peers/run_latentmi.py lmi DATA.npz [DATA.npz ...]

($PEER_VENV: any directory for latentmi's own virtual environment; its ``bin/python`` is what
``bench_accuracy.py --peer latentmi=PYTHON`` takes.)

Stock ``latentmi.lmi.estimate(x, y)``: an autoencoder pair with a cross-prediction regulariser
(``models.AECross``) compresses each side to 8 latent dimensions (batch 512, lr 1e-4, up to 300
epochs, patience 30), trained on its own random half of the data; KSG (k = 3) on the latents of the
other half gives pointwise MI in bits, averaged here and converted to nats.  Its split uses numpy's
global RNG and torch's, both seeded here.  Output: common.py.
"""
import contextlib
import math
import sys

from common import parse, run_all

PEERS = {"lmi": "latentmi.lmi.estimate(x, y) (stock: AECross, N_dims 8, validation_split 0.5); nanmean of pMIs"}


def main() -> int:
    args, names = parse("latentmi", PEERS)
    import numpy as np
    import torch
    from latentmi import lmi

    torch.set_num_threads(args.threads)

    def one(name, x, y, seed):
        np.random.seed(seed)
        torch.manual_seed(seed)
        with contextlib.redirect_stdout(sys.stderr):   # its progress lines would mix with the JSON
            pmis, _, _ = lmi.estimate(x, y, device=args.device)
        return float(np.nanmean(pmis)) * math.log(2)

    run_all("latentmi", args, names, one, PEERS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
