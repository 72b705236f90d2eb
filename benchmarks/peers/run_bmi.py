"""Peer estimators from the BMI package (Czyż et al. 2023, "Beyond normal: on the evaluation of
mutual information estimators", NeurIPS; PyPI ``benchmark-mi``), with their stock defaults, in the
peer's own environment (JAX; never imports mibench):

    python -m venv $PEER_VENV
    $PEER_VENV/bin/pip install benchmark-mi "jax[cpu]==0.4.30" "jaxlib==0.4.30" "equinox<0.11.5"
    $PEER_VENV/bin/python benchmarks/peers/run_bmi.py infonce,ksg DATA.npz [DATA.npz ...]

($PEER_VENV: any directory for BMI's own virtual environment; its ``bin/python`` is what
``bench_accuracy.py --peer bmi=PYTHON`` takes.)

(The pins: benchmark-mi 0.1.3's equinox does not import with jax >= 0.4.34.)  Stock settings: the
neural estimators' defaults of benchmark-mi 0.1.3 (MLP critic 16 x 8, batch 256, 10,000 steps,
lr 0.1 Adam, its own train / test split 50 / 50); KSG ensemble with neighbours 5 / 10, CCA closed
form.  BMI splits the data itself, so the whole dataset is passed.  Output: common.py.
"""
import os
import sys

from common import parse, run_all

PEERS = {
    "infonce": "bmi.estimators.InfoNCEEstimator(verbose=False) (stock)",
    "nwj": "bmi.estimators.NWJEstimator(verbose=False) (stock)",
    "dv": "bmi.estimators.DonskerVaradhanEstimator(verbose=False) (stock)",
    "mine": "bmi.estimators.MINEEstimator(verbose=False) (stock)",
    "ksg": "bmi.estimators.KSGEnsembleFirstEstimator() (stock)",
    "cca": "bmi.estimators.CCAMutualInformationEstimator() (stock)",
}


def main() -> int:
    args, names = parse("bmi", PEERS)
    os.environ.setdefault("XLA_FLAGS",
                          f"--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads={args.threads}")
    import bmi

    make = {
        "infonce": lambda s: bmi.estimators.InfoNCEEstimator(verbose=False, seed=s),
        "nwj": lambda s: bmi.estimators.NWJEstimator(verbose=False, seed=s),
        "dv": lambda s: bmi.estimators.DonskerVaradhanEstimator(verbose=False, seed=s),
        "mine": lambda s: bmi.estimators.MINEEstimator(verbose=False, seed=s),
        "ksg": lambda s: bmi.estimators.KSGEnsembleFirstEstimator(),
        "cca": lambda s: bmi.estimators.CCAMutualInformationEstimator(),
    }
    run_all("bmi", args, names, lambda name, x, y, seed: make[name](seed).estimate(x, y), PEERS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
