"""MINDE's reference implementation (Franzese, Bounoua & Michiardi, ICLR 2024: github.com/MustaphaBounoua/minde,
commit 4c09b55, its ``src/libs/minde.py``), run on .npz data in its own environment (never imports mibench):

    python -m venv $PEER_VENV && $PEER_VENV/bin/pip install torch==2.13.0 pytorch_lightning \
        scikit-learn "numpy<2" tensorboardX
    git --git-dir=<fetched minde repo> archive HEAD | tar -x -C $MINDE_SRC
    MINDE_SRC=$MINDE_SRC $PEER_VENV/bin/python benchmarks/peers/run_minde.py minde-c,minde-j DATA.npz ...

($PEER_VENV: any directory for MINDE's own virtual environment, whose ``bin/python`` compare_authors.py
takes as $MINDE_PYTHON; ``MINDE_SRC``, required: the folder holding the authors' source tree, ``src/``.)

The authors' code is imported unchanged (``src.libs.minde.MINDE``, ``src.scripts.config.get_config``,
``src.scripts.helper.SynthetitcDataset``); only its entry script ``src/scripts/run_minde.py`` is replaced
here, because that one imports JAX and the ``bmi`` package to draw bmi's tasks (not needed for .npz data)
and asks for a GPU.  What this runner keeps from that script (its settings for tasks with dim_x <= 5 and
the ``job.sh`` flags): x and y each z-scored over all rows (``preprocessing="rescale"``: sklearn's
StandardScaler on the whole sample, as its ``get_data_loader``), Adam lr 1e-3, batch 128 (drop_last,
shuffled), ``--importance_sampling --use_ema`` (EMA decay 0.999), the automatic width (64 for
dim_x + dim_y <= 10), ``mc_iter = 10`` draws of t per held-out pair in ``compute_mi``, the readout on
the test loader (here the held-out 20 %: common.split, the same seeded split as mibench), the
reported value ``compute_mi()[0]`` (the score difference; ``[1]``, the sigma variant, is printed on
stderr).  Kept too: the script's 300 epochs (here of the 4,000 training pairs: 300 x 31 = 9,300 steps,
about 65 CPU-s per estimate; ``MINDE_HIDDEN`` sets the width instead of the automatic one;
``MINDE_EPOCHS`` changes it -- fewer epochs leave the EMA copy, which starts at the initial weights
and is the one read out, far from the trained net: 0.999^2,000 = 0.14).  Changed for this CPU (the
script's 100,000 training pairs are replaced by the .npz's 80 %): ``accelerator="cpu"``,
``num_workers=0``, per-epoch MI logging off (``test_epoch`` huge, as ``job.sh``'s ``--test_epoch 10000``), and the SDE's
training masks built on the CPU (its ``VP_SDE.__init__`` puts them on "cuda"; a subclass here overrides
``get_masks_training`` only).  Output: common.py.
"""
import contextlib
import os
import sys
import tempfile

from common import parse, run_all, split

EPOCHS = int(os.environ.get("MINDE_EPOCHS", "300"))
HIDDEN = os.environ.get("MINDE_HIDDEN")      # the network's width; unset: the authors' automatic choice
SETTINGS = (f"authors' MINDE (src.libs.minde, 4c09b55): importance sampling, EMA 0.999, Adam lr 1e-3, batch 128, "
            f"{EPOCHS} epochs of the training 80 %, mc_iter 10, StandardScaler on all rows; test = held-out 20 %"
            f"{'; hidden_dim ' + HIDDEN if HIDDEN else ''}")
PEERS = {"minde-c": f"type c; {SETTINGS}", "minde-j": f"type j; {SETTINGS}"}


def main() -> int:
    args, names = parse("minde", PEERS)
    if not os.environ.get("MINDE_SRC"):
        sys.exit("run_minde.py: set MINDE_SRC to the folder holding MINDE's source tree (src/libs/minde.py)")
    sys.path.insert(0, os.environ["MINDE_SRC"])
    import numpy as np
    import pytorch_lightning as pl
    import src.libs.minde as minde_module
    import torch
    from sklearn import preprocessing
    from src.libs.minde import MINDE
    from src.scripts.config import get_config
    from src.scripts.helper import SynthetitcDataset
    from torch.utils.data import DataLoader

    torch.set_num_threads(args.threads)

    class CpuVPSDE(minde_module.VP_SDE):
        """The authors' VP_SDE builds its training masks on "cuda" in __init__ (before Lightning's
        on_fit_start moves them with set_device); on a CPU-only torch that raises, so the masks are
        built on the CPU here.  Nothing else changes."""

        def get_masks_training(self):
            self.device = "cpu"
            return super().get_masks_training()

    minde_module.VP_SDE = CpuVPSDE

    def one(name, x, y, seed):
        cfg = get_config().parse_args([])
        cfg.type = name.split("-")[1]
        cfg.importance_sampling, cfg.use_ema = True, True
        cfg.lr, cfg.bs, cfg.max_epochs = 1e-3, 128, EPOCHS
        cfg.accelerator, cfg.devices, cfg.seed = "cpu", 1, seed
        cfg.test_epoch = 10 ** 9
        if HIDDEN:
            cfg.hidden_dim = int(HIDDEN)
        cfg.benchmark = "npz"
        pl.seed_everything(seed, verbose=False)
        xs = preprocessing.StandardScaler(copy=True).fit_transform(x)
        ys = preprocessing.StandardScaler(copy=True).fit_transform(y)
        tr, te = split(len(x), seed)
        train = DataLoader(SynthetitcDataset([xs[tr], ys[tr]]), batch_size=cfg.bs, shuffle=True, drop_last=True)
        test = DataLoader(SynthetitcDataset([xs[te], ys[te]]), batch_size=1000, shuffle=False)
        # Lightning's progress bars and summaries go to stderr: stdout carries only the JSON lines
        with tempfile.TemporaryDirectory() as out, contextlib.redirect_stdout(sys.stderr):
            cfg.out_dir = out
            model = MINDE(cfg, var_list={"x": x.shape[1], "y": y.shape[1]})
            model.fit(train, test)
            mi, mi_sigma = model.compute_mi()
        print(f"{name}: mi {mi:.4f} mi_sigma {mi_sigma:.4f} nats", file=sys.stderr)
        return float(np.asarray(mi))

    run_all("minde", args, names, one, PEERS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
