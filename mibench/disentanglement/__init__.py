"""Disentanglement metrics with pluggable MI back-ends, validated against an analytic toy model.

* MI-based metrics (:mod:`.metrics`): MIG, UniBound and the PID bounds of Tokui & Sato (eqs. 3-7),
  DCIMIG (Sepliarskaia et al.), minimality / sufficiency with MI (Almudévar et al., ICLR eqs. 5-8),
  Ridgeway & Mozer's modularity — each with an MI back-end from ``MI_BACKENDS``
  (:mod:`.backends`: histogram, ksg, gaussian, posterior, neural:<estimator>).
* Regressor-based metrics (:mod:`.predictive`): Almudévar's minimality / sufficiency (ICLR
  Algorithms 1-2), modularity / compactness / explicitness (NeurIPS Algorithms 1-2) and minimality /
  sufficiency (NeurIPS Appendix B, Algorithms 3-4), DCI, SAP, Ridgeway explicitness, FactorVAE,
  BetaVAE.
* The analytic Gaussian toy model and entanglement attacks (:mod:`.toy`), the papers' synthetic
  scenarios (:mod:`.scenarios`) and the validation harness (:mod:`.validate`, ``mibench validate``).
"""
from mibench.disentanglement.backends import MI_BACKENDS, BackendUnsupported, MIBackend, get_backend, neural_backend
from mibench.disentanglement.metrics import (
    MI_METRICS,
    DisentanglementWarning,
    EntropyCapWarning,
    InfoTable,
    dcimig,
    info_table,
    mi_metrics,
    mig,
    minimality_mi,
    pid_bounds,
    ridgeway_modularity,
    sufficiency_mi,
    unibound,
)
from mibench.disentanglement.posterior import GaussianPosterior
from mibench.disentanglement.predictive import (
    almudevar_neurips,
    betavae_score,
    dci,
    dci_from_importance,
    factorvae_score,
    minimality,
    minimality_sufficiency_neurips,
    modularity_compactness_explicitness,
    ridgeway_explicitness,
    sap,
    sufficiency,
)
from mibench.disentanglement.toy import (
    analytic_table,
    attack_posterior,
    attack_samples,
    sample_toy,
    table1_closed_forms,
    toy_process,
)

__all__ = [
    "MI_BACKENDS", "BackendUnsupported", "MIBackend", "get_backend", "neural_backend",
    "MI_METRICS", "DisentanglementWarning", "EntropyCapWarning",
    "InfoTable", "info_table", "mi_metrics", "mig", "unibound", "pid_bounds", "dcimig",
    "minimality_mi", "sufficiency_mi", "ridgeway_modularity", "GaussianPosterior",
    "dci", "dci_from_importance", "factorvae_score", "betavae_score", "minimality", "sufficiency",
    "modularity_compactness_explicitness", "minimality_sufficiency_neurips", "almudevar_neurips",
    "ridgeway_explicitness", "sap",
    "analytic_table", "attack_posterior", "attack_samples", "sample_toy", "table1_closed_forms", "toy_process",
]
