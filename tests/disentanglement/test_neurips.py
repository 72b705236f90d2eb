"""Almudévar et al. (NeurIPS): Algorithms 1-4 on the cosine scenarios against the paper's tables and
their analytic limits; the BetaVAE score (Higgins et al. 2017) on processes with a known answer.

Tolerances come from spreads measured over seeds 0-4 (commands and numbers in the comments).  The
paper's tables are single runs with unstated sample size and forest settings; our settings
(``NEURIPS_FOREST``, n = ``NEURIPS_N``) were chosen to reproduce them, and each tolerance is
|mean over seeds − paper| + 4 sd, rounded up.
"""
import numpy as np
import pytest

from mibench.disentanglement import (
    almudevar_neurips,
    betavae_score,
    minimality_sufficiency_neurips,
    modularity_compactness_explicitness,
    toy_process,
)
from mibench.disentanglement.predictive import NEURIPS_N
from mibench.disentanglement.scenarios import cosine_scenario, sepliarskaia_betavae_process
from mibench.errors import MibenchError

# -- the paper's tables ------------------------------------------------------------------------

#: Tables 2-4, "Ind." rows: (modularity, compactness, explicitness).
PAPER_T234 = {"Cos0": (0.9992, 0.9992, 0.9938), "Cos1I": (0.9991, 0.9991, 0.9938),
              "Cos2I": (0.9004, 0.9305, 0.6626), "Cos3I": (0.3456, 0.3452, 0.9104),
              "Cos1D": (0.9991, 0.9991, 0.9943), "Cos2D": (0.9014, 0.8904, 0.9886),
              "Cos3D": (0.7973, 0.8122, 0.9732)}
#: Table 10 (per-variable modularity max_i m_ij, Algorithm 1) and Table 11 (per-variable minimality,
#: Algorithm 3), z_1 … z_4.
PAPER_T10 = {"Cos1I": (0.9993, 0.9991, 0.9988, 0.7792), "CosNuis2I": (0.9992, 0.9993, 0.8628, 0.8060),
             "CosNuis3I": (0.3534, 0.3443, 0.6638, 0.7501), "Cos1D": (0.9992, 0.9991, 0.9987, 0.7955),
             "CosNuis2D": (0.9991, 0.9991, 0.8377, 0.8040), "CosNuis3D": (0.9989, 0.6792, 0.7838, 0.7269)}
PAPER_T11 = {"Cos1I": (0.9947, 0.9947, 0.9947, 0.0), "CosNuis2I": (0.9950, 0.9950, 0.3453, 0.0),
             "CosNuis3I": (0.3330, 0.3376, 0.2447, 0.0), "Cos1D": (0.9949, 0.9948, 0.9944, 0.0338),
             "CosNuis2D": (0.9950, 0.9948, 0.2753, 0.0373), "CosNuis3D": (0.9945, 0.7082, 0.2984, 0.0)}

# Measured at n = NEURIPS_N = 20,000, seeds 0-2, mean − paper (sd) for (modularity, compactness,
# explicitness):  Cos0 +0.001 +0.001 +0.005 (sd <= 0.0005);  Cos1I +0.001 +0.001 +0.005 (<= 0.0005);
# Cos2I +0.001 −0.004 +0.004 (<= 0.0013);  Cos3I −0.013 +0.015 −0.004 (0.0044, 0.0042, 0.0016);
# Cos1D +0.001 +0.001 +0.005 (<= 0.0004);  Cos2D −0.001 +0.010 +0.006 (<= 0.0009);
# Cos3D +0.002 −0.004 +0.011 (<= 0.0016).  Re-measure with ``python tests/disentanglement/test_neurips.py``
# (seeds 0-2, all 11 scenarios, ~25 CPU-minutes).  Tolerance = |mean − paper| + 4 sd, rounded up to 0.01.
T234_TOL = {"Cos0": (0.01, 0.01, 0.01), "Cos1I": (0.01, 0.01, 0.01), "Cos2I": (0.01, 0.01, 0.01),
            "Cos3I": (0.04, 0.04, 0.02), "Cos1D": (0.01, 0.01, 0.01), "Cos2D": (0.01, 0.02, 0.01),
            "Cos3D": (0.01, 0.02, 0.02)}
# Tables 10-11, same runs: per-variable sd <= 0.008; the largest |mean − paper| + 4 sd is 0.073
# (Table 10, CosNuis3D z_4: 0.780 vs 0.727) and 0.059 (Table 11, CosNuis2D z_4: 0.006 vs 0.037), both
# on the pure-noise code z_4, whose value the paper itself reports between 0.727 and 0.806 (Table 10)
# for the same noise variable in every scenario.  Every other entry is within 0.04.
T10_TOL, T11_TOL = 0.08, 0.06


@pytest.fixture(scope="module")
def cos3i():
    y, z = cosine_scenario("Cos3I", n=NEURIPS_N, seed=0)
    return almudevar_neurips(y, z, seed=0)


def test_cos3i_matches_the_paper(cos3i):
    """Cos3I (issue 14): with 1,000 samples and a 30-tree, leaf-5 forest mibench gave compactness
    0.441 (+0.096) and explicitness 0.779 (−0.132): f_i(z), the forest predicting y_i from all of z,
    had 500 training samples for a function of three codes.  Its error lowers explicitness and, since
    compactness compares the one-code fits g_ij(z_j) with f_i(z), pulls f_i towards them and raises
    compactness.  At n = NEURIPS_N both match (tolerances: see T234_TOL)."""
    got = (cos3i["modularity"], cos3i["compactness"], cos3i["explicitness"])
    for value, paper, tol in zip(got, PAPER_T234["Cos3I"], T234_TOL["Cos3I"]):
        assert value == pytest.approx(paper, abs=tol)


def test_cos3i_sufficiency_and_compactness_approach_their_analytic_limit(cos3i):
    """With exact regressors, y_i given z_1 = cos((y_1 + y_2)/2) is uniform around (y_1 + y_2)/2, so
    E|E[y_1|z_1] − y_1| = E|y_1 − y_2|/2 = 1/6 (MinMax units) and the noise reference E|0.5 − ε| = 1/4:
    s_ij = c_ij = 1 − (1/6)/(1/4) = 1/3 for the two codes holding y_i, 0 for the third.  Minimality's
    limit is 0.326 (E|E[z_1|y_1] − z_1| by Monte Carlo, 2·10⁶ samples).  Seeds 0-2 at NEURIPS_N:
    sufficiency 0.335, 0.337, 0.332; minimality 0.331, 0.330, 0.325."""
    assert cos3i["sufficiency"] == pytest.approx(1 / 3, abs=0.02)
    assert cos3i["minimality"] == pytest.approx(0.326, abs=0.02)
    holders = np.array([[1, 1, 0, 0], [1, 0, 1, 0], [0, 1, 1, 0]], bool)  # which z_j hold y_i
    assert np.all(np.abs(cos3i["s"][holders] - 1 / 3) < 0.03)
    assert np.all(cos3i["s"][~holders] < 0.1)
    assert cos3i["alpha"][3] < 0.05  # z_4 is noise: no weight in modularity / minimality


def test_minimality_sees_nuisances_that_modularity_misses():
    """Appendix C (Tables 10-11): in CosNuis2I, z_3 = cos((y_3 + n)/2) holds a nuisance and z_4 is pure
    noise; modularity still rates both high, minimality low.  n = 2000, seeds 0-2: modularity of
    (z_3, z_4) 0.899, 0.800; minimality of z_1, z_2 >= 0.971, of z_3 0.314 / 0.347 / 0.342, of z_4
    <= 0.031 (paper 0.863, 0.806; 0.995; 0.345, 0.000)."""
    y, z = cosine_scenario("CosNuis2I", n=2000, seed=0)
    out = almudevar_neurips(y, z, seed=0)
    mod, mini = out["m"].max(axis=0), out["m_min"].max(axis=0)
    assert mini[0] > 0.95 and mini[1] > 0.95  # z_1, z_2 = cos(y_1), cos(y_2): minimal
    assert mod[2] > 0.8 and mod[3] > 0.7
    assert mini[2] == pytest.approx(0.345, abs=0.08)  # |0.334 - 0.345| + 4 x 0.018
    assert mini[3] < 0.1


def test_sufficiency_counts_a_missing_factor_as_zero():
    """Cos2I: y_1, y_2 are each in one code, y_3 in none, so s̄ = (1 + 1 + 0)/3.  n = 2000, seeds 0-2:
    0.650, 0.668, 0.659 (sd 0.009) -> tol 0.05; max_j s_3j <= 0.041."""
    y, z = cosine_scenario("Cos2I", n=2000, seed=0)
    out = almudevar_neurips(y, z, seed=0)
    assert out["sufficiency"] == pytest.approx(2 / 3, abs=0.05)
    assert out["s"][2].max() < 0.1 and out["s"][:2].max(axis=1).min() > 0.95


def test_public_wrappers_read_one_fit():
    y, z = cosine_scenario("Cos1D", n=300, seed=0)
    small = {"forest": {"n_estimators": 3, "min_samples_leaf": 5}, "seed": 0}
    full = almudevar_neurips(y, z, **small)
    ms = minimality_sufficiency_neurips(y, z, **small)
    assert ms["minimality"] == full["minimality"] and ms["sufficiency"] == full["sufficiency"]
    assert np.array_equal(ms["m"], full["m_min"]) and np.array_equal(ms["s"], full["s"])
    mce = modularity_compactness_explicitness(y, z, **small)
    assert mce["compactness"] == full["compactness"] and np.array_equal(mce["m"], full["m"])
    assert set(mce) == {"modularity", "compactness", "explicitness", "m", "alpha", "c", "e"}


def test_bad_forest_settings_are_one_line_errors():
    y, z = cosine_scenario("Cos1I", n=200, seed=0)
    with pytest.raises(MibenchError, match="random-forest settings"):
        almudevar_neurips(y, z, forest={"n_trees": 10})


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PAPER_T234))
def test_paper_tables_2_to_4(name):
    """Tables 2-4 (Ind. modularity / compactness / explicitness) at NEURIPS_N, seed 0."""
    y, z = cosine_scenario(name, n=NEURIPS_N, seed=0)
    out = almudevar_neurips(y, z, seed=0)
    got = (out["modularity"], out["compactness"], out["explicitness"])
    for value, paper, tol in zip(got, PAPER_T234[name], T234_TOL[name]):
        assert value == pytest.approx(paper, abs=tol)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(PAPER_T10))
def test_paper_tables_10_and_11(name):
    """Per-variable modularity (Table 10, Algorithm 1) and minimality (Table 11, Algorithm 3)."""
    y, z = cosine_scenario(name, n=NEURIPS_N, seed=0)
    out = almudevar_neurips(y, z, seed=0)
    np.testing.assert_allclose(out["m"].max(axis=0), PAPER_T10[name], atol=T10_TOL)
    np.testing.assert_allclose(out["m_min"].max(axis=0), PAPER_T11[name], atol=T11_TOL)


# -- BetaVAE -----------------------------------------------------------------------------------

def test_betavae_sepliarskaia_fact3():
    """Sepliarskaia Fact 3: an entangled code (each latent copies one of two factors at random) scores
    0.9967 with 10,000 training points of batch 128.  Seeds 0-4: 0.9972, 0.9966, 0.9954, 0.9966,
    0.9968 (mean 0.9965, sd 0.0007) -> tol 0.003."""
    sample, represent = sepliarskaia_betavae_process(seed=0)
    out = betavae_score(sample, represent, n_train=10000, n_eval=5000, batch_size=128, seed=0)
    assert out["eval_accuracy"] == pytest.approx(0.9967, abs=0.003)


def test_betavae_disentangled_toy_code_scores_one():
    """Tokui's toy code z = y + 0.1 ε (K = 5): the fixed factor's latent difference is ~0.1 of the
    others', so the classifier is exact (seeds 0-4: 1.0 each)."""
    sample, represent = toy_process(K=5, sigma=0.1, seed=0)
    out = betavae_score(sample, represent, n_train=2000, n_eval=1000, seed=0)
    assert out["eval_accuracy"] >= 0.99 and out["train_accuracy"] >= 0.99


def test_betavae_rotated_pair_is_at_chance_for_the_pair():
    """z = (y_1 + y_2, y_1 − y_2)/√2, y_3: fixing y_1 or y_2 gives the same |c_1 − c_2| distribution
    (each latent loses half its variance), so those two classes are indistinguishable and the score
    is (1/2 + 1/2 + 1)/3 = 2/3.  Seeds 0-4: 0.684, 0.661, 0.676, 0.631, 0.669 (mean 0.664, sd 0.020)
    -> tol 0.09."""
    R = np.array([[1, 1, 0], [1, -1, 0], [0, 0, np.sqrt(2)]]) / np.sqrt(2)
    out = betavae_score(lambda n, rng: rng.standard_normal((n, 3)), lambda y: y @ R.T,
                        n_train=2000, n_eval=1000, seed=0)
    assert out["eval_accuracy"] == pytest.approx(2 / 3, abs=0.09)


def test_betavae_bad_inputs():
    sample, represent = toy_process(K=3, seed=0)
    with pytest.raises(MibenchError, match="batch_size"):
        betavae_score(sample, represent, batch_size=0)
    with pytest.raises(MibenchError, match="NaN"):
        betavae_score(sample, lambda y: np.full((len(y), 2), np.nan), n_train=10, n_eval=5, batch_size=4)
    with pytest.raises(MibenchError, match="fewer than 2 factors"):
        betavae_score(lambda n, rng: rng.standard_normal((n, 1)), lambda y: y, n_train=5, n_eval=5, batch_size=4)


def measure(seeds=(0, 1, 2), n=NEURIPS_N):  # pragma: no cover - developer tool
    """Mean − paper, sd and |mean − paper| + 4 sd for every table entry over ``seeds``."""
    names = list(dict.fromkeys([*PAPER_T234, *PAPER_T10]))
    for name in names:
        runs = []
        for s in seeds:
            y, z = cosine_scenario(name, n=n, seed=s)
            o = almudevar_neurips(y, z, seed=s)
            runs.append([o["modularity"], o["compactness"], o["explicitness"], *o["m"].max(axis=0),
                         *o["m_min"].max(axis=0)])
        v = np.array(runs)
        mean, sd = v.mean(axis=0), v.std(axis=0, ddof=1)
        for label, cols, paper in (("T2-4", slice(0, 3), PAPER_T234.get(name)),
                                   ("T10", slice(3, 3 + z.shape[1]), PAPER_T10.get(name)),
                                   ("T11", slice(3 + z.shape[1], None), PAPER_T11.get(name))):
            if paper is not None:
                d = mean[cols] - np.asarray(paper)
                print(f"{name:10s} {label:5s} mean-paper {np.round(d, 4)} sd {np.round(sd[cols], 4)} "
                      f"need {np.round(np.abs(d) + 4 * sd[cols], 3)}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    measure()
