"""The Nishiyama bound's reference implementation: ``torchfd.loss.NishiyamaLoss`` (github.com/VanessB/pytorch-fd,
commit 51e7b4a) trained by the MINE estimator of the same authors' benchmark package ``mutinfo``
(github.com/VanessB/mutinfo, commit 0a34663, ``mutinfo.estimators.parametric.mine.MINE``), with the
settings of its config ``source/evaluate/config.d/estimator/MINE/MLP/Nishiyama.yaml``; run on .npz
data in its own environment (never imports mibench):

    python -m venv $PEER_VENV && $PEER_VENV/bin/pip install torch==2.13.0 scikit-learn scipy numpy
    git --git-dir=<fetched pytorch-fd repo> archive HEAD | tar -x -C $TORCHFD_SRC
    git --git-dir=<fetched mutinfo repo> archive HEAD | tar -x -C $MUTINFO_SRC
    $PEER_VENV/bin/pip install --no-deps $TORCHFD_SRC $MUTINFO_SRC
    $PEER_VENV/bin/python benchmarks/peers/run_mutinfo.py nishiyama,nwj DATA.npz ...

($PEER_VENV, $TORCHFD_SRC, $MUTINFO_SRC: any directories for the environment and the two source trees;
compare_authors.py takes ``$PEER_VENV/bin/python`` as $MUTINFO_PYTHON.)

Neither package is on PyPI; both are imported unchanged.  The config's settings, kept: x and y each
through sklearn's RobustScaler (``TransformedInformationEstimator`` + ``JointTransform``), a joint
critic MLP on [x, y] (``GenericMLPClassifier``: Linear-LeakyReLU-Linear-LeakyReLU-Linear, hidden 128),
the product of marginals by permuting x within the batch (``PermutationMarginalizer``), Adam lr 1e-3,
10,000 steps at batch 512, the pairs split 50 / 50 by ``train_test_split`` (its own split, seeded
here through numpy's global seed), the estimate the mean over batches of 512 held-out pairs of the
bound on that batch, clipped below at 0.  Changed: ``device="cpu"`` (the config's is "cuda").
``nwj`` is the same estimator with ``torchfd.loss.NWJLoss`` (its config MINE/MLP/NWJ.yaml differs only
in the loss), a control for the training protocol.  Output: common.py.
"""
import os
import sys

from common import parse, run_all

STEPS = int(os.environ.get("MUTINFO_STEPS", "10000"))      # the config's n_train_steps

LOSSES = {"nishiyama": "NishiyamaLoss", "nwj": "NWJLoss"}
SETTINGS = ("mutinfo MINE (0a34663) + torchfd.loss.{loss} (51e7b4a): RobustScaler on x and y, joint MLP hidden 128 "
            "LeakyReLU, permutation marginalizer, Adam lr 1e-3, {steps:,} steps of 512, 50 % held out "
            "(train_test_split), the mean of per-batch bounds over batches of 512, clipped at 0")
PEERS = {name: SETTINGS.format(loss=loss, steps=STEPS) for name, loss in LOSSES.items()}


def main() -> int:
    args, names = parse("mutinfo", PEERS)

    import numpy as np
    import sklearn.preprocessing
    import torch
    import torchfd
    from mutinfo.estimators.base import JointTransform, TransformedInformationEstimator
    from mutinfo.estimators.parametric.mine import MINE, GenericMLPClassifier

    torch.set_num_threads(args.threads)

    def estimate(name, x, y, seed):
        torch.manual_seed(seed)
        np.random.seed(seed)          # train_test_split(random_state=None) draws from numpy's global state
        estimator = TransformedInformationEstimator(
            estimator=MINE(
                backbone_factory=lambda *a, **k: GenericMLPClassifier(*a, hidden_dim=128, **k),
                optimizer_factory=lambda params: torch.optim.Adam(params, lr=1.0e-3),
                loss_factory=getattr(torchfd.loss, LOSSES[name]),
                n_train_steps=STEPS, train_batch_size=512, estimate_batch_size=512, estimate_size=0.5,
                device=args.device),
            transform=JointTransform([sklearn.preprocessing.RobustScaler(), sklearn.preprocessing.RobustScaler()]))
        return estimator(x, y)

    run_all("mutinfo", args, names, estimate, PEERS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
