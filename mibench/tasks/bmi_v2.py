"""BMI v2: the Bend-and-Mix (BMM) mixture tasks of BMI's second benchmark list (Czyż et al., "On the
properties and estimation of pointwise mutual information profiles", the ``bmm`` samplers of the
``benchmark-mi`` package), by BMI's task ids, plus the v1 tasks that list keeps.

Each task is a finite mixture of Gaussians in (X, Y), possibly followed by a diffeomorphism of X
(bending).  The MI has no closed form; as BMI does, it is the Monte-Carlo mean of the exact
pointwise MI log p(x, y) - log p(x) - log p(y) over draws from the mixture (the marginals of a
Gaussian mixture are the mixtures of the component marginals), with its standard error
sd / sqrt(N).  The bending maps act on X alone and are invertible, so they leave the MI unchanged.
The tasks (``1v1-X-0.9``, ``1v1-AI``, ``2v1-waves-12-5.0-3.0``, ``2v1-galaxy-0.5-3.0``,
``<d>v1-concentric_gaussians-<k>``, ``mult-sparse-w-inliers-<d>-<d>-2-2.0-<f>``) are built in
:func:`_mixtures`.

Truth: ``mibench/tasks/data/bmi_v2_truth.json`` holds the Monte-Carlo means and standard errors
(:data:`MC_DRAWS` draws, seed :data:`MC_SEED`, computed by :func:`mc_truth`); a task recomputes them
when the file is missing or was made with other settings.  ``tests/tasks/test_bmi_catalogue.py``
checks them against BMI's own estimates (within 3 combined standard errors) and against a fresh
computation (slow test).  Each mixture in words: docs/tasks.md, "BMI v1 and v2".
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from mibench.tasks.bmi_v1 import Dist, register, spiral, two_pair_cov
from mibench.tasks.catalogue import add_to_catalogue

F64 = torch.float64
MC_DRAWS = 200_000
MC_SEED = 20_231
TRUTH_FILE = Path(__file__).with_name("data") / "bmi_v2_truth.json"
TRUTH_VERSION = 1

#: the v1 tasks BMI's v2 list keeps (its workflow ``benchmark/v2/config.py``)
V2_FROM_V1 = ["1v1-additive-0.75", "asinh-student-identity-1-1-1", "swissroll_x-normal_cdf-1v1-normal-0.75",
              "multinormal-dense-5-5-0.5", "multinormal-dense-25-25-0.5", "multinormal-dense-50-50-0.5",
              "multinormal-sparse-5-5-2-2.0", "multinormal-sparse-25-25-2-2.0", "asinh-student-identity-2-2-1",
              "asinh-student-identity-3-3-2", "asinh-student-identity-5-5-2", "spiral-multinormal-sparse-3-3-2-2.0",
              "spiral-multinormal-sparse-5-5-2-2.0"]


class GaussianMixture:
    """sum_k w_k N(mu_k, S_k) on (X, Y) = the first ``dim_x`` and the remaining coordinates."""

    def __init__(self, weights, means, covs, dim_x: int):
        self.w = np.asarray(weights, dtype=np.float64)
        self.w = self.w / self.w.sum()
        self.mu = np.asarray(means, dtype=np.float64)
        self.cov = np.asarray(covs, dtype=np.float64)
        self.dim_x = int(dim_x)
        self.dim = self.mu.shape[1]
        self.dim_y = self.dim - self.dim_x
        self.chol = np.linalg.cholesky(self.cov)

    def draw(self, n: int, g: torch.Generator, device):
        comp = torch.multinomial(torch.as_tensor(self.w, device=device), n, replacement=True, generator=g)
        z = torch.randn(n, self.dim, generator=g, device=device, dtype=F64)
        mu = torch.as_tensor(self.mu, device=device)[comp]
        chol = torch.as_tensor(self.chol, device=device)[comp]
        xy = mu + torch.einsum("nij,nj->ni", chol, z)
        return xy[:, :self.dim_x], xy[:, self.dim_x:]

    @staticmethod
    def _log_mix(v: torch.Tensor, w, mu, cov) -> torch.Tensor:
        """log sum_k w_k N(v; mu_k, cov_k) for rows v (n, d)."""
        terms = []
        for k in range(len(w)):
            c = torch.as_tensor(cov[k])
            chol = torch.linalg.cholesky(c)
            diff = (v - torch.as_tensor(mu[k])).T
            sol = torch.linalg.solve_triangular(chol, diff, upper=False)
            quad = (sol * sol).sum(0)
            logdet = 2.0 * torch.log(torch.diagonal(chol)).sum()
            terms.append(math.log(w[k]) - 0.5 * (quad + logdet + v.shape[1] * math.log(2 * math.pi)))
        return torch.logsumexp(torch.stack(terms), 0)

    def pointwise_mi(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(x, y) - log p(x) - log p(y) (nats), exact, float64 on the CPU."""
        dx = self.dim_x
        joint = self._log_mix(torch.cat([x, y], 1), self.w, self.mu, self.cov)
        px = self._log_mix(x, self.w, self.mu[:, :dx], self.cov[:, :dx, :dx])
        py = self._log_mix(y, self.w, self.mu[:, dx:], self.cov[:, dx:, dx:])
        return joint - px - py


def _mixtures() -> dict:
    """BMI v2 id -> (display name, GaussianMixture, bending of X or None)."""
    out = {}
    covs = [np.array([[1.0, s * 0.9], [s * 0.9, 1.0]]) for s in (-1, 1)]
    out["1v1-X-0.9"] = ("X 1 × 1", GaussianMixture([0.5, 0.5], np.zeros((2, 2)), covs, 1), None)
    vx, r = 0.04, 0.95
    c = math.sqrt(vx * 0.2) * r
    ai = [([1.0, 0.0], np.diag([0.01, 0.2])), ([1.0, 1.0], np.diag([0.05, 0.001])),
          ([1.0, -1.0], np.diag([0.05, 0.001])), ([-0.8, -0.2], np.diag([0.03, 0.001])),
          ([-1.2, 0.0], np.array([[vx, c], [c, 0.2]])), ([-0.4, 0.0], np.array([[vx, -c], [-c, 0.2]]))]
    out["1v1-AI"] = ("AI 1 × 1", GaussianMixture(np.full(6, 1 / 6), [m for m, _ in ai], [s for _, s in ai], 1), None)
    k = 12
    waves = GaussianMixture(np.full(k, 1 / k), [[1.5 * i, 0.0, 1.5 * (i % 4)] for i in range(k)],
                            [np.diag([0.1, 1.0, 0.1])] * k, 2)

    def bend_waves(x):
        x0 = x[:, 0] + 5.0 * torch.sin(3.0 * x[:, 1])
        return torch.stack([0.1 * x0 - 0.8, 0.5 * x[:, 1]], 1)

    out["2v1-waves-12-5.0-3.0"] = ("Waves 2 × 1", waves, bend_waves)
    galaxy = GaussianMixture([0.5, 0.5], [[s * 1.5] * 3 for s in (-1, 1)], [np.eye(3)] * 2, 2)
    out["2v1-galaxy-0.5-3.0"] = ("Galaxy 2 × 1", galaxy, spiral(0, 1, 0.5))
    for d, n in ((3, 5), (5, 5), (3, 10), (5, 10), (25, 5)):
        comps = range(1, n + 1)
        out[f"{d}v1-concentric_gaussians-{n}"] = (
            f"Concentric {d} × 1", GaussianMixture(np.full(n, 1 / n), [[0.0] * d + [float(i)] for i in comps],
                                                   [np.diag([float(i * i)] * d + [1e-4]) for i in comps], d), None)
    for d, f in ((5, 0.2), (25, 0.2), (5, 0.5), (25, 0.5)):
        sig = two_pair_cov(d, d)
        noise = np.eye(2 * d)   # the product of the signal's margins (both identity)
        out[f"mult-sparse-w-inliers-{d}-{d}-2-2.0-{f}"] = (
            f"Multinormal {d} × {d} (sparse, {f:.0%} inliers)",
            GaussianMixture([1 - f, f], np.zeros((2, 2 * d)), [sig, noise], d), None)
    return out


MIXTURES = _mixtures()


def mc_truth(task_id: str, draws: int = MC_DRAWS, seed: int = MC_SEED) -> tuple[float, float]:
    """(MI nats, standard error) of a v2 mixture task by Monte-Carlo of the exact pointwise MI.

    Parameters
    ----------
    task_id : a BMI v2 mixture id (:data:`MIXTURES`).
    draws : Monte-Carlo draws (in blocks of 50,000).
    seed : seed of the draws.
    """
    mix = MIXTURES[task_id][1]
    g = torch.Generator().manual_seed(int(seed))
    vals = []
    for start in range(0, draws, 50_000):
        x, y = mix.draw(min(50_000, draws - start), g, "cpu")
        vals.append(mix.pointwise_mi(x, y))
    v = torch.cat(vals)
    return float(v.mean()), float(v.std() / math.sqrt(draws))


def write_truth_file(path=TRUTH_FILE) -> dict:
    """Compute every mixture's Monte-Carlo truth and write the JSON table (the committed cache)."""
    table = {tid: dict(zip(("mi_nats", "mi_stderr_nats"), mc_truth(tid))) for tid in MIXTURES}
    rec = {"version": TRUTH_VERSION, "draws": MC_DRAWS, "seed": MC_SEED, "tasks": table}
    Path(path).write_text(json.dumps(rec, indent=1) + "\n")
    return rec


@lru_cache(maxsize=1)
def truth_table() -> dict:
    """task id -> {"mi_nats", "mi_stderr_nats"}: the committed table, recomputed if it does not match."""
    try:
        rec = json.loads(TRUTH_FILE.read_text())
        if (rec.get("version"), rec.get("draws"), rec.get("seed")) == (TRUTH_VERSION, MC_DRAWS, MC_SEED) \
                and set(rec["tasks"]) == set(MIXTURES):
            return rec["tasks"]
    except (OSError, ValueError, KeyError):
        pass
    return {tid: dict(zip(("mi_nats", "mi_stderr_nats"), mc_truth(tid))) for tid in MIXTURES}


def _dist(task_id: str) -> Dist:
    shown, mix, bend = MIXTURES[task_id]
    truth = truth_table()[task_id]

    def draw(n, g, device):
        x, y = mix.draw(n, g, device)
        return (bend(x) if bend is not None else x), y

    return Dist(draw, mix.dim_x, mix.dim_y, truth["mi_nats"], f"Gaussian mixture of {len(mix.w)} components"
                + (", X bent by an invertible map" if bend is not None else ""))


register("bmi-v2", [(tid, MIXTURES[tid][0], _dist(tid)) for tid in MIXTURES], truth="Monte-Carlo",
         stderr={tid: truth_table()[tid]["mi_stderr_nats"] for tid in MIXTURES})
for _name in V2_FROM_V1:
    add_to_catalogue("bmi-v2", _name)
