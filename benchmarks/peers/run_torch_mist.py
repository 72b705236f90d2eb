"""Peer estimators from torch-mist (Federici et al., PyPI ``torch-mist`` 0.2.17), with their stock
settings, in the peer's own environment (never imports mibench):

    python -m venv $PEER_VENV && $PEER_VENV/bin/pip install torch==2.13.0 torch-mist==0.2.17 pandas "numpy<2"
    $PEER_VENV/bin/python benchmarks/peers/run_torch_mist.py smile,infonce DATA.npz [DATA.npz ...]

($PEER_VENV: any directory for torch-mist's own virtual environment; its ``bin/python`` is what
``compare_generative.py --peer`` ($TORCH_MIST_PYTHON) and ``bench_accuracy.py --peer torch-mist=PYTHON`` take.)

Settings (``torch_mist.estimate_mi``): ``data`` = the training 80 % (common.split: the same seeded
split as mibench.estimate), ``test_data`` = the held-out 20 % (the reported value),
``hidden_dims=[256, 256]``, ``batch_size=64``, ``max_iterations=5000``, everything else stock
(Adam lr 5e-4, early stopping on a 10 % validation split of the training data, each estimator's
stock critic: joint for smile / nwj / js / mine, separable for infonce, one negative per positive
for the joint ones; the generative ones' stock densities: conditional / marginal transformed normals,
an affine autoregressive joint for gm; ba's entropy_y is the Gaussian entropy of the training y).  Output: common.py.

``--matched``: torch-mist set as close as its API allows to mibench's defaults (TrainedSettings:
2,000 steps, batch 256, Adam lr 1e-3, 10 % validation, the best validation state kept -- torch-mist
keeps one only for the estimators it calls bounds, ba and flo here, with an unbounded patience; flows of 4 layers with
MLPs 128 wide), for the generative pairs and flo.  Where mibench has a flow (ba, doe-flow, gm-flow),
torch-mist gets 4 affine-autoregressive layers (pyro, MADE [128, 128], a random order per
layer) in place of its stock one diagonal-affine layer -- for gm also the marginals q(x), q(y), whose
stock ``linear`` transform is a diagonal Gaussian; club keeps its stock diagonal Gaussian with an MLP
mean and scale (the family of mibench's club, CLUB paper §3.2) at hidden [128, 128], and so does l1out
(with a flow, torch-mist's leave-one-out over a batch of K costs K^2 flow evaluations: 267 s for 20
steps on 600 pairs); flo gets joint
critics [128, 128] and 8 negatives per positive (mibench's flo: two joint MLPs 128 wide, 8 shifts).
What no setting reaches stays: mibench's RealNVP + sinh-arcsinh layers and its per-coordinate
gaussianisation, and torch-mist's readouts (flo reports E[u], its amortised log-ratio, where mibench
reports the bound; l1out's leave-one-out mean runs over the batch's y for each x, see
benchmarks/results/generative_vs_torch_mist.txt).
"""
import sys

from common import parse, run_all, split

STOCK = {"hidden_dims": [256, 256], "batch_size": 64, "max_iterations": 5000}
PEERS = {name: f"torch_mist.estimate_mi(estimator={name!r}, {STOCK}, test_data=held-out 20 %)"
         for name in ("smile", "infonce", "nwj", "js", "mine", "doe", "gm", "club", "l1out", "flo")}
PEERS["hybrid"] = ("ResampledHybridMIEstimator(doe(hidden_dims=[256, 256]), "
                   "nwj(hidden_dims=[256, 256], neg_samples=16)) "
                   f"trained by torch_mist.estimate_mi, {STOCK}, test_data=held-out 20 %")
PEERS["ba"] = (f"torch_mist.estimate_mi(estimator='ba', entropy_y=the Gaussian entropy of the training y's covariance, "
               f"{STOCK}, test_data=held-out 20 %)")

# patience: never stop early, keep the best validation state (mibench: every step runs, the best state on
# the validation part is kept); torch-mist's stock patience is max(1, 2 % of the epochs) = 1 epoch here,
# and its running best starts at 0, so a lower bound whose first validation value is <= 0 stops after one
# epoch (stock flo: 3 s, -25 bits at 4 bits)
MATCHED_TRAIN = {"hidden_dims": [128, 128], "batch_size": 256, "max_iterations": 2000,
                 "optimizer_params": {"lr": 1e-3}, "valid_percentage": 0.1, "patience": 10**9}
FLOW_LAYERS = 4
COND_FLOW = {"transform_name": "conditional_affine_autoregressive", "n_transforms": FLOW_LAYERS}
MATCHED = {
    "ba": COND_FLOW,
    "l1out": {},    # stock diagonal Gaussian: with a flow its K^2 evaluations per batch of K took 267 s for 20 steps
    "club": {},                       # stock family: diagonal Gaussian, MLP mean and scale
    "doe": {"conditional_transform_name": "conditional_affine_autoregressive",
            "n_conditional_transforms": FLOW_LAYERS,
            "marginal_transform_name": "affine_autoregressive", "n_marginal_transforms": FLOW_LAYERS},
    "gm": {"marginal_transform_name": "affine_autoregressive", "n_marginal_transforms": FLOW_LAYERS},  # + q_XY below
    "flo": {"critic_type": "joint", "neg_samples": 8},
    "hybrid": {},     # built by hybrid_estimator: the doe entry's flows, an nwj critic [128, 128], 16 negatives
}
#: draws from q(y|x) per positive for the resampled hybrid's critic (mibench's hybrid-resampled: 16 in training)
HYBRID_NEGATIVES = 16


def hybrid_estimator(x_dim: int, y_dim: int, matched: bool):
    """torch-mist's resampled hybrid with its stock configuration's parts
    (scripts/config/mi_estimator/hybrid_resampled.yaml: DoE + NWJ), trained jointly as torch-mist trains it
    (mibench's hybrid-resampled trains the flows first, then the critic on the frozen flows)."""
    from torch_mist.estimators import doe, nwj
    from torch_mist.estimators.hybrid import ResampledHybridMIEstimator

    hidden = (MATCHED_TRAIN if matched else STOCK)["hidden_dims"]
    return ResampledHybridMIEstimator(
        generative_estimator=doe(x_dim=x_dim, y_dim=y_dim, hidden_dims=hidden, **(MATCHED["doe"] if matched else {})),
        discriminative_estimator=nwj(x_dim=x_dim, y_dim=y_dim, hidden_dims=hidden, neg_samples=HYBRID_NEGATIVES))


def gaussian_entropy(y) -> float:
    """Entropy (nats) of the Gaussian with the sample covariance of y's rows: BA's H(Y), the same rule
    as mibench's ``ba`` (exact for Gaussian Y)."""
    import numpy as np

    cov = np.atleast_2d(np.cov(y.T))
    return 0.5 * (cov.shape[0] * np.log(2 * np.pi * np.e) + np.linalg.slogdet(cov)[1])


def main() -> int:
    matched = "--matched" in sys.argv
    if matched:
        sys.argv.remove("--matched")
    args, names = parse("torch-mist", PEERS)
    if matched and set(names) - set(MATCHED):
        sys.exit(f"--matched covers {', '.join(MATCHED)} only, got {names}")
    import torch
    from torch_mist import estimate_mi

    torch.set_num_threads(args.threads)

    def one(name, x, y, seed):
        torch.manual_seed(seed)
        tr, te = split(len(x), seed)
        extra = {"entropy_y": float(gaussian_entropy(y[tr]))} if name == "ba" else {}
        if matched:
            extra.update(MATCHED[name])
            if name == "gm":     # the factory does not pass hidden_dims to the joint flow: build it here
                from torch_mist.distributions.factories import joint_transformed_normal

                extra["q_XY"] = joint_transformed_normal(
                    input_dims={"x": x.shape[1], "y": y.shape[1]}, transform_name="affine_autoregressive",
                    n_transforms=FLOW_LAYERS, hidden_dims=MATCHED_TRAIN["hidden_dims"])
        estimator = hybrid_estimator(x.shape[1], y.shape[1], matched) if name == "hybrid" else name
        out = estimate_mi(data=(x[tr], y[tr]), test_data=(x[te], y[te]), estimator=estimator, verbose=False,
                          **(MATCHED_TRAIN if matched else STOCK), **extra)
        return out[0] if isinstance(out, tuple) else out     # (value, training log) in this version

    settings = {n: f"--matched: {MATCHED_TRAIN} {MATCHED[n]}" for n in MATCHED} if matched else PEERS
    run_all("torch-mist", args, names, one, settings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
