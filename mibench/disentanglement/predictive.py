"""Regressor-based disentanglement metrics (no MI back-end): Almudévar et al.'s estimators and the
classic baselines DCI, SAP, Ridgeway & Mozer's explicitness and the FactorVAE and BetaVAE scores.

All functions take factors y (n × K) and codes z (n × L) as arrays.  Regressors are fitted on one
half of the samples and scored on the other (``test_size``): the papers do not say whether their
errors are in-sample, and an in-sample random forest "predicts" pure noise, which would make every
score look better than it is.

* :func:`minimality`, :func:`sufficiency` — Almudévar et al. (ICLR), Algorithms 1-2.
* :func:`almudevar_neurips` — Almudévar et al. (NeurIPS): modularity, compactness, explicitness,
  minimality and sufficiency (Algorithms 1-4) from one set of fitted forests (the printed ``min(0, ·)``
  clip read as the max(0, ·) the text implies); :func:`modularity_compactness_explicitness` and
  :func:`minimality_sufficiency_neurips` return its parts.  These scores depend on how well the
  forests fit, i.e. on the sample size, so the paper's tables are reproduced with
  :data:`NEURIPS_FOREST` at n = :data:`NEURIPS_N`.
* :func:`dci` — Eastwood & Williams (2018) from a random-forest importance matrix;
  :func:`dci_from_importance` applies the formulas of Sepliarskaia et al. §3.1.3 to a given matrix.
* :func:`sap` — Kumar et al. (2017), as disentanglement_lib.
* :func:`ridgeway_explicitness` — Ridgeway & Mozer (2018).
* :func:`factorvae_score` — Kim & Mnih (2018); :func:`betavae_score` — Higgins et al. (2017) as
  described by Sepliarskaia et al. §3.1.1.

How well each reproduces its paper: docs/disentanglement.md.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from mibench.errors import MibenchError
from mibench.utils.checks import as_2d, as_labels, check_positive_int, check_same_rows, resolve_discrete

# ---------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------


def _prepare(y, z):
    y = as_2d(y, "y (factors)", min_rows=10)
    z = as_2d(z, "z (codes)", min_rows=10)
    check_same_rows(**{"y (factors)": y, "z (codes)": z})
    constant = np.flatnonzero(np.ptp(y, axis=0) == 0)
    if constant.size:       # as the MI-based metrics: a constant factor has nothing to disentangle
        raise MibenchError(f"factor {constant[0]} is constant: it cannot be disentangled; drop it")
    return y, z


#: Random-forest settings of the ICLR minimality / sufficiency estimators (``make_regressor`` default).
DEFAULT_FOREST = {"n_estimators": 30, "min_samples_leaf": 5}


def make_regressor(model="random_forest", seed: int = 0, forest: dict | None = None):
    """A fresh scikit-learn regressor: "random_forest" (the papers' choice; ``forest`` overrides
    :data:`DEFAULT_FOREST`), "linear", or a factory."""
    if callable(model):
        return model()
    if model == "random_forest":
        from sklearn.ensemble import RandomForestRegressor

        settings = {**DEFAULT_FOREST, **(forest or {})}
        try:
            return RandomForestRegressor(**settings, random_state=seed, n_jobs=1)
        except TypeError as exc:
            raise MibenchError(f"bad random-forest settings {forest!r}: {exc}") from None
    if model == "linear":
        from sklearn.linear_model import LinearRegression

        return LinearRegression()
    raise MibenchError(f"unknown model {model!r}; choose 'random_forest', 'linear' or pass a factory")


def _split(n: int, test_size: float, seed: int):
    if not 0.0 < test_size < 1.0:
        raise MibenchError(f"test_size must be in (0, 1), got {test_size}")
    perm = np.random.default_rng(seed).permutation(n)
    n_test = max(1, int(round(n * test_size)))
    return perm[n_test:], perm[:n_test]


class _FitPredict:
    """Fit on the train rows, predict on the test rows (a held-out prediction for each target)."""

    def __init__(self, n: int, model, test_size: float, seed: int, forest: dict | None = None):
        self.train, self.test = _split(n, test_size, seed)
        self.model, self.seed, self.forest = model, seed, forest

    def __call__(self, inputs: np.ndarray, target: np.ndarray) -> np.ndarray:
        inputs = inputs.reshape(len(inputs), -1)
        reg = make_regressor(self.model, self.seed, self.forest)
        reg.fit(inputs[self.train], target[self.train])
        return reg.predict(inputs[self.test])


def _standard_scale(a: np.ndarray) -> np.ndarray:
    sd = a.std(axis=0)
    sd[sd == 0] = 1.0
    return (a - a.mean(axis=0)) / sd


def _minmax_scale(a: np.ndarray) -> np.ndarray:
    lo, hi = a.min(axis=0), a.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return (a - lo) / span


# ---------------------------------------------------------------------------------------------
# Almudévar et al. (ICLR): minimality and sufficiency, Algorithms 1-2
# ---------------------------------------------------------------------------------------------

def minimality_matrix(y, z, *, model="random_forest", test_size=0.5, seed=0) -> np.ndarray:
    """m̂[i, j] = 1 − mean (f_ij(y_i) − z_j)² on standardised data (ICLR Algorithm 1, eq. 29)."""
    y, z = _prepare(y, z)
    ys, zs = _standard_scale(y), _standard_scale(z)
    fp = _FitPredict(len(y), model, test_size, seed)
    m = np.empty((y.shape[1], z.shape[1]))
    for j in range(z.shape[1]):
        for i in range(y.shape[1]):
            m[i, j] = 1.0 - np.mean((fp(ys[:, i], zs[:, j]) - zs[fp.test, j]) ** 2)
    return np.clip(m, 0.0, 1.0)


def sufficiency_matrix(y, z, *, model="random_forest", test_size=0.5, seed=0) -> np.ndarray:
    """ŝ[i, j] = 1 − mean (f_ij(z_j) − y_i)² on standardised data (ICLR Algorithm 2, eq. 48)."""
    y, z = _prepare(y, z)
    ys, zs = _standard_scale(y), _standard_scale(z)
    fp = _FitPredict(len(y), model, test_size, seed)
    s = np.empty((y.shape[1], z.shape[1]))
    for i in range(y.shape[1]):
        for j in range(z.shape[1]):
            s[i, j] = 1.0 - np.mean((fp(zs[:, j], ys[:, i]) - ys[fp.test, i]) ** 2)
    return np.clip(s, 0.0, 1.0)


def minimality(y, z, **kw) -> float:
    """Minimality m̄ = mean_j max_i m̂_ij (Almudévar ICLR eq. 6, Algorithm 1)."""
    return float(minimality_matrix(y, z, **kw).max(axis=0).mean())


def sufficiency(y, z, **kw) -> float:
    """Sufficiency s̄ = mean_i max_j ŝ_ij (Almudévar ICLR eq. 8, Algorithm 2)."""
    return float(sufficiency_matrix(y, z, **kw).max(axis=1).mean())


# ---------------------------------------------------------------------------------------------
# Almudévar et al. (NeurIPS): modularity, compactness, explicitness (Algorithms 1-2) and
# minimality, sufficiency (Appendix B, Algorithms 3-4)
# ---------------------------------------------------------------------------------------------

#: Random-forest settings for the NeurIPS algorithms.  The paper says only "random forest regressors"
#: and "mean absolute error" (§5); the forest and the number of samples are not given.  Its tables pin
#: them down (tests/disentanglement/test_neurips.py; docs/disentanglement.md): the terms that compare
#: two predictions of a target the inputs carry no information about need smooth predictions of pure
#: noise (a leaf of ~20 samples, not sklearn's default of 1), and explicitness needs several thousand
#: training samples (:data:`NEURIPS_N`).
NEURIPS_FOREST = {"n_estimators": 50, "min_samples_leaf": 20}
#: Samples per scenario that reproduce the NeurIPS tables with :data:`NEURIPS_FOREST` and test_size 0.5.
NEURIPS_N = 20000


def _mae(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.abs(a - b)))


def almudevar_neurips(y, z, *, model="random_forest", forest: dict | None = None, test_size=0.5, seed=0) -> dict:
    """All five scores of Almudévar et al. (NeurIPS) from one set of fitted regressors.

    Algorithm 1 (modularity) and Algorithm 3 (minimality) fit the same regressors from the factors
    (f* : y → ε, g*_i : y_i → ε, f_j : y → z_j, g_ij : y_i → z_j); Algorithm 2 (compactness,
    explicitness) and Algorithm 4 (sufficiency) the same ones from the codes (f* : z → ε,
    g*_j : z_j → ε, f_i : z → y_i, g_ij : z_j → y_i).  With E = mean absolute error on held-out
    samples, y and z MinMax-scaled and ε ~ U(0, 1):

    * modularity  m_ij = [1 − E(g_ij(y_i), f_j(y)) / E(g*_i(y_i), ε)]₊ (Alg. 1 l. 10),
      α_j = [1 − E(f_j(y), z_j) / E(f*(y), ε)]₊ (l. 12), m̄ = Σ_j α_j/Σα · max_i m_ij (l. 15);
    * minimality  the same with E(g_ij(y_i), z_j) in the numerator (Alg. 3 l. 9), same α weights;
    * compactness c_ij = [1 − E(g_ij(z_j), f_i(z)) / E(g*_j(z_j), ε)]₊, c̄ = mean_i max_j c_ij (Alg. 2);
    * explicitness e_i = [1 − E(f_i(z), y_i) / E(f*(z), ε)]₊, ē = mean_i e_i (Alg. 2 l. 12);
    * sufficiency s_ij = [1 − E(g_ij(z_j), y_i) / E(g*_j(z_j), ε)]₊, s̄ = mean_i max_j s_ij (Alg. 4 l. 8).

    The printed algorithms clip with ``min(0, ·)``, which would make every score ≤ 0; the text says
    the scores lie in [0, 1], so we clip with max(0, ·) (a typo fix).  The loops over j in Algorithm 2
    l. 7 and Algorithm 4 l. 5 print "to n"; j indexes the m code variables.  The random forests use
    :data:`NEURIPS_FOREST` unless ``forest`` (RandomForestRegressor settings) is given; the scores
    depend on the number of samples (the regressors' accuracy): the paper's tables are reproduced at
    n = :data:`NEURIPS_N`.

    Returns the scores ``modularity``, ``compactness``, ``explicitness``, ``minimality``,
    ``sufficiency`` and the matrices ``m`` (K × L modularity m_ij), ``m_min`` (K × L minimality),
    ``alpha`` (L), ``c`` (K × L), ``e`` (K), ``s`` (K × L).  Per-variable values as in the paper's
    Tables 10-11 are ``m.max(axis=0)`` and ``m_min.max(axis=0)``.
    """
    y, z = _prepare(y, z)
    y, z = _minmax_scale(y), _minmax_scale(z)
    K, L = y.shape[1], z.shape[1]
    eps = np.random.default_rng(seed + 1).uniform(0.0, 1.0, len(y))
    fp = _FitPredict(len(y), model, test_size, seed, forest=NEURIPS_FOREST if forest is None else forest)
    te = fp.test
    # regressors from the factors (Algorithms 1 and 3)
    e_star_y = _mae(fp(y, eps), eps[te])                                     # f*: y -> ε
    e_star_yi = np.array([_mae(fp(y[:, i], eps), eps[te]) for i in range(K)])  # g*_i: y_i -> ε
    m_mod, m_min, alpha = np.empty((K, L)), np.empty((K, L)), np.empty(L)
    for j in range(L):
        f_j = fp(y, z[:, j])
        for i in range(K):
            g_ij = fp(y[:, i], z[:, j])
            m_mod[i, j] = 1.0 - _mae(g_ij, f_j) / e_star_yi[i]
            m_min[i, j] = 1.0 - _mae(g_ij, z[te, j]) / e_star_yi[i]
        alpha[j] = 1.0 - _mae(f_j, z[te, j]) / e_star_y
    m_mod, m_min, alpha = (np.clip(a, 0.0, 1.0) for a in (m_mod, m_min, alpha))
    weights = alpha / alpha.sum() if alpha.sum() > 0 else np.full(L, 1.0 / L)
    # regressors from the codes (Algorithms 2 and 4)
    e_star_z = _mae(fp(z, eps), eps[te])                                     # f*: z -> ε
    e_star_zj = np.array([_mae(fp(z[:, j], eps), eps[te]) for j in range(L)])  # g*_j: z_j -> ε
    c, s, e = np.empty((K, L)), np.empty((K, L)), np.empty(K)
    for i in range(K):
        f_i = fp(z, y[:, i])
        for j in range(L):
            g_ij = fp(z[:, j], y[:, i])
            c[i, j] = 1.0 - _mae(g_ij, f_i) / e_star_zj[j]
            s[i, j] = 1.0 - _mae(g_ij, y[te, i]) / e_star_zj[j]
        e[i] = 1.0 - _mae(f_i, y[te, i]) / e_star_z
    c, s, e = (np.clip(a, 0.0, 1.0) for a in (c, s, e))
    return {
        "modularity": float(np.sum(weights * m_mod.max(axis=0))),
        "compactness": float(np.mean(c.max(axis=1))),
        "explicitness": float(np.mean(e)),
        "minimality": float(np.sum(weights * m_min.max(axis=0))),
        "sufficiency": float(np.mean(s.max(axis=1))),
        "m": m_mod, "m_min": m_min, "alpha": alpha, "c": c, "e": e, "s": s,
    }


def modularity_compactness_explicitness(y, z, **kw) -> dict:
    """Modularity (Algorithm 1), compactness and explicitness (Algorithm 2) for dependent factors.

    Returns ``{"modularity", "compactness", "explicitness"}`` and the per-pair matrices
    ``m`` (K × L, m_ij), ``alpha`` (L, α_j), ``c`` (K × L, c_ij), ``e`` (K, e_i).  See
    :func:`almudevar_neurips` (same keyword arguments) for the formulas and settings.
    """
    out = almudevar_neurips(y, z, **kw)
    return {k: out[k] for k in ("modularity", "compactness", "explicitness", "m", "alpha", "c", "e")}


def minimality_sufficiency_neurips(y, z, **kw) -> dict:
    """Minimality (Algorithm 3) and sufficiency (Algorithm 4) of Almudévar et al. (NeurIPS, App. B).

    Regressor-based, with the noise-normalised mean absolute error of :func:`almudevar_neurips`
    (not the ICLR version's standardised MSE of :func:`minimality` / :func:`sufficiency`).  Returns
    ``{"minimality", "sufficiency"}``, ``m`` (K × L minimality m_ij; Table 11 is ``m.max(axis=0)``),
    ``alpha`` (L) and ``s`` (K × L sufficiency s_ij).
    """
    out = almudevar_neurips(y, z, **kw)
    return {"minimality": out["minimality"], "sufficiency": out["sufficiency"], "m": out["m_min"],
            "alpha": out["alpha"], "s": out["s"]}


# ---------------------------------------------------------------------------------------------
# DCI (Eastwood & Williams 2018)
# ---------------------------------------------------------------------------------------------

def _entropy_rows(p: np.ndarray, base: int) -> np.ndarray:
    """Entropy of each row of a row-stochastic matrix, log base ``base``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(p), 0.0)
    return -terms.sum(axis=1) / np.log(base)


def dci_from_importance(importance) -> dict:
    """Disentanglement and completeness from an importance matrix P (L latents × K factors).

    D_i = 1 − H_K(P_i·/Σ_k P_ik), D = Σ_i ρ_i D_i, ρ_i = Σ_k P_ik / Σ P (Sepliarskaia eq. 3);
    C_k = 1 − H_L(P_·k/Σ_i P_ik), C weighted by factor importance (disentanglement_lib).
    """
    P = np.abs(np.atleast_2d(np.asarray(importance, dtype=float)))
    L, K = P.shape
    if P.sum() <= 0:
        raise MibenchError("importance matrix is all zeros")
    row, col = P.sum(axis=1), P.sum(axis=0)
    d_i = np.zeros(L)
    ok = row > 0
    d_i[ok] = 1.0 - _entropy_rows(P[ok] / row[ok, None], K) if K > 1 else 1.0
    c_k = np.zeros(K)
    okc = col > 0
    c_k[okc] = 1.0 - _entropy_rows((P[:, okc] / col[okc]).T, L) if L > 1 else 1.0
    return {
        "disentanglement": float(np.sum(row / P.sum() * d_i)),
        "completeness": float(np.sum(col / P.sum() * c_k)),
        "per_code": d_i, "per_factor": c_k,
    }


def dci(y, z, *, discrete=None, test_size=0.5, seed=0, n_estimators=50) -> dict:
    """DCI with random-forest importances; informativeness = held-out R² (continuous) or accuracy."""
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    y, z = _prepare(y, z)
    disc = resolve_discrete(y, discrete)
    train, test = _split(len(y), test_size, seed)
    P = np.empty((z.shape[1], y.shape[1]))
    info = np.empty(y.shape[1])
    for k in range(y.shape[1]):
        cls = RandomForestClassifier if disc[k] else RandomForestRegressor
        # every split sees every code dimension (the regressor's default; the classifier's "sqrt" let a
        # split see only an unrelated dimension and credited it, D = 0.62 for a disentangled code)
        model = cls(n_estimators=n_estimators, min_samples_leaf=5, max_features=None, random_state=seed, n_jobs=1)
        target = as_labels(y[:, k]) if disc[k] else y[:, k]
        model.fit(z[train], target[train])
        P[:, k] = model.feature_importances_
        info[k] = max(0.0, model.score(z[test], target[test]))
    out = dci_from_importance(P)
    out["informativeness"] = float(info.mean())
    out["importance"] = P
    return out


# ---------------------------------------------------------------------------------------------
# SAP (Kumar et al. 2017), Ridgeway & Mozer explicitness
# ---------------------------------------------------------------------------------------------

def sap_from_scores(scores) -> float:
    """Mean over factors of the gap between the two most predictive latents (scores: L × K)."""
    s = -np.sort(-np.atleast_2d(np.asarray(scores, dtype=float)), axis=0)
    second = s[1] if s.shape[0] > 1 else 0.0
    return float(np.mean(s[0] - second))


def sap_scores(y, z, *, discrete=None, test_size=0.5, seed=0) -> np.ndarray:
    """S[i, k]: R² of a linear fit of y_k on z_i (continuous) or LinearSVC accuracy (discrete)."""
    y, z = _prepare(y, z)
    disc = resolve_discrete(y, discrete)
    L, K = z.shape[1], y.shape[1]
    S = np.zeros((L, K))
    cont = np.flatnonzero(~disc)
    if cont.size:  # squared correlations, vectorised
        zc, yc = z - z.mean(0), y[:, cont] - y[:, cont].mean(0)
        cov = zc.T @ yc / (len(y) - 1)
        vz, vy = zc.var(0, ddof=1), yc.var(0, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            S[:, cont] = np.where(vz[:, None] > 1e-12, cov**2 / (vz[:, None] * vy[None, :]), 0.0)
    if (~disc).all():
        return S
    from sklearn.svm import LinearSVC

    train, test = _split(len(y), test_size, seed)
    for k in np.flatnonzero(disc):
        labels = as_labels(y[:, k])
        _check_classes(labels, train, k)
        for i in range(L):
            clf = LinearSVC(C=0.01, class_weight="balanced").fit(z[train, i : i + 1], labels[train])
            S[i, k] = np.mean(clf.predict(z[test, i : i + 1]) == labels[test])
    return S


def _check_classes(labels: np.ndarray, train: np.ndarray, k: int) -> np.ndarray:
    """The classes of factor ``k`` in the training half; one line where it holds a single class (a rare
    value drawn wholly into the held-out half), which a classifier cannot be fitted on."""
    classes = np.unique(labels[train])
    if classes.size < 2:
        rare = int(np.min(np.unique(labels, return_counts=True)[1]))
        raise MibenchError(f"factor {k}: the training half holds a single class (its rarest value has {rare} of "
                           f"{labels.size} samples); more samples or another seed / test_size")
    return classes


def sap(y, z, **kw) -> float:
    """SAP score (Kumar et al. 2017; Sepliarskaia §3.2.1)."""
    return sap_from_scores(sap_scores(y, z, **kw))


def ridgeway_explicitness(y, z, *, discrete=None, bins: int = 10, test_size=0.5, seed=0) -> float:
    """Ridgeway & Mozer (2018) explicitness: mean one-vs-rest ROC AUC of a logistic regression from z
    (continuous factors are cut into ``bins`` quantile bins first)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import StandardScaler

    y, z = _prepare(y, z)
    disc = resolve_discrete(y, discrete)
    bins = check_positive_int(bins, "bins", minimum=2)
    train, test = _split(len(y), test_size, seed)
    zs = StandardScaler().fit(z[train]).transform(z)
    aucs = []
    for k in range(y.shape[1]):
        if disc[k]:
            labels = as_labels(y[:, k])
        else:
            edges = np.quantile(y[:, k], np.linspace(0, 1, bins + 1)[1:-1])
            labels = np.searchsorted(edges, y[:, k], side="right")
        classes = _check_classes(labels, train, k)
        clf = LogisticRegression(max_iter=1000).fit(zs[train], labels[train])
        proba = clf.predict_proba(zs[test])
        onehot = (labels[test][:, None] == classes[None, :]).astype(float)
        per_class = [roc_auc_score(onehot[:, c], proba[:, c]) for c in range(len(classes))
                     if 0 < onehot[:, c].sum() < len(onehot)]
        if not per_class:
            raise MibenchError(f"factor {k}: the held-out half holds a single class, so no ROC AUC can be read; "
                               "more samples or another seed / test_size")
        aucs.append(np.mean(per_class))
    return float(np.mean(aucs))


# ---------------------------------------------------------------------------------------------
# FactorVAE score (Kim & Mnih 2018), interventional
# ---------------------------------------------------------------------------------------------

def factorvae_score(sample_factors: Callable, represent: Callable, *, n_train: int = 10000, n_eval: int = 5000,
                    batch_size: int = 64, n_global: int = 10000, seed: int = 0) -> dict:
    """FactorVAE score: fix one factor per batch, vote for the latent of least normalised variance.

    ``sample_factors(n, rng) -> (n, K)`` draws factors; ``represent(y) -> (n, L)`` encodes them.
    Returns ``{"train_accuracy", "eval_accuracy", "votes"}`` (majority-vote classifier fitted on the
    training votes, as Kim & Mnih and disentanglement_lib).  A batch's variances need two points, so
    ``batch_size`` is at least 2.
    """
    n_train = check_positive_int(n_train, "n_train")
    n_eval = check_positive_int(n_eval, "n_eval")
    batch_size = check_positive_int(batch_size, "batch_size", minimum=2)
    n_global = check_positive_int(n_global, "n_global", minimum=2)
    rng = np.random.default_rng(seed)
    y_glob = as_2d(sample_factors(n_global, rng), "sample_factors(...)")
    K = y_glob.shape[1]
    glob = as_2d(represent(y_glob), "represent(...)")
    scale = glob.std(axis=0, ddof=1)
    active = scale > 0
    if not active.any():
        raise MibenchError("factorvae_score: every latent is constant")

    def votes(n_points: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.asarray(sample_factors(n_points * batch_size, rng), dtype=float).reshape(n_points, batch_size, K)
        fixed = rng.integers(0, K, n_points)
        rows = np.arange(n_points)
        y[rows, :, fixed] = y[rows, 0, fixed][:, None]  # one fixed factor value per batch
        z = as_2d(represent(y.reshape(-1, K)), "represent(...)").reshape(n_points, batch_size, -1)
        local = (z[:, :, active] / scale[active]).var(axis=1, ddof=1)
        return np.flatnonzero(active)[np.argmin(local, axis=1)], fixed

    lat_tr, fac_tr = votes(n_train)
    table = np.zeros((glob.shape[1], K))
    np.add.at(table, (lat_tr, fac_tr), 1)
    classifier = table.argmax(axis=1)
    lat_ev, fac_ev = votes(n_eval)
    return {
        "train_accuracy": float(np.mean(classifier[lat_tr] == fac_tr)),
        "eval_accuracy": float(np.mean(classifier[lat_ev] == fac_ev)),
        "votes": table,
    }


# ---------------------------------------------------------------------------------------------
# BetaVAE score (Higgins et al. 2017), interventional
# ---------------------------------------------------------------------------------------------

def betavae_score(sample_factors: Callable, represent: Callable, *, n_train: int = 10000, n_eval: int = 5000,
                  batch_size: int = 64, seed: int = 0, chunk: int = 512) -> dict:
    """BetaVAE score: the accuracy of a linear classifier that predicts which factor a batch of pairs shared.

    Higgins et al. (2017), steps as in Sepliarskaia et al. §3.1.1: choose a factor k; draw
    ``batch_size`` pairs of factor vectors (p_1, p_2) with p_1,k = p_2,k and the other factors drawn
    independently; encode both, c = represent(p); the mean over the batch of |c_1 − c_2| is one
    training point labelled k; the score is the accuracy of a linear classifier (multinomial
    logistic regression, as disentanglement_lib) on ``n_eval`` fresh points.  ``sample_factors(n,
    rng) -> (n, K)`` and ``represent(y) -> (n, L)`` as for :func:`factorvae_score`.  Returns
    ``{"train_accuracy", "eval_accuracy"}``.  Batches are encoded ``chunk`` points at a time.
    """
    from sklearn.linear_model import LogisticRegression

    n_train = check_positive_int(n_train, "n_train", minimum=2)
    n_eval = check_positive_int(n_eval, "n_eval")
    batch_size = check_positive_int(batch_size, "batch_size")
    chunk = check_positive_int(chunk, "chunk")
    rng = np.random.default_rng(seed)
    K = as_2d(sample_factors(2, rng), "sample_factors(...)").shape[1]

    def points(n_points: int) -> tuple[np.ndarray, np.ndarray]:
        fixed = rng.integers(0, K, n_points)
        feats = []
        for start in range(0, n_points, chunk):
            k = fixed[start:start + chunk]
            m, rows = len(k), np.arange(len(k))
            draw = [np.asarray(sample_factors(m * batch_size, rng), dtype=float).reshape(m, batch_size, K)
                    for _ in range(2)]
            draw[1][rows, :, k] = draw[0][rows, :, k]  # each pair shares factor k (its value varies over pairs)
            c1, c2 = (as_2d(represent(d.reshape(-1, K)), "represent(...)") for d in draw)
            if c1.shape != c2.shape:
                raise MibenchError("represent(...) returned different code sizes for two batches")
            feats.append(np.abs(c1 - c2).reshape(m, batch_size, -1).mean(axis=1))
        return np.concatenate(feats), fixed

    x_tr, k_tr = points(n_train)
    if np.unique(k_tr).size < 2:
        raise MibenchError("betavae_score: the training points cover fewer than 2 factors; raise n_train")
    clf = LogisticRegression(max_iter=2000).fit(x_tr, k_tr)
    x_ev, k_ev = points(n_eval)
    return {
        "train_accuracy": float(np.mean(clf.predict(x_tr) == k_tr)),
        "eval_accuracy": float(np.mean(clf.predict(x_ev) == k_ev)),
    }
