"""skmip: membership-inference privacy for scikit-learn.

Defend (``MIPNoiseWrapper``, ``SubsampledDPClassifier``), measure (``MIAttackScorer``) and
account (``skmip.bounds``). Importing skmip never imports torch, skorch, opacus,
matplotlib or dask: those live in optional leaf modules (``skmip.nn``, ``skmip.display``).
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Public name -> module that defines it. Resolved on first access so that
# ``import skmip`` stays light; every entry is checked by tests/test_public_api.py.
_EXPORTS = {
    "PrivacyWarning": "skmip.exceptions",
    "MIPNoiseWrapper": "skmip.wrappers",
    "MIPNoiseWrapperCV": "skmip.wrappers",
    "mip_noise_path": "skmip.wrappers",
    "sample_mip_noise": "skmip.mechanisms",
    "mip_noise_logpdf": "skmip.mechanisms",
    "mip_norm": "skmip.mechanisms",
    "exact_mip_advantage": "skmip.attacks.bayes",
    "ExactAuditResult": "skmip.attacks.bayes",
    "estimate_sigma": "skmip.moments",
    "CentralMomentAccumulator": "skmip.moments",
    "get_adapter": "skmip.params",
    "register_adapter": "skmip.params",
    "Statistic": "skmip.statistic",
    "SubsampledDPClassifier": "skmip.subsampled",
    "DPLogisticRegression": "skmip.dp_logistic",
    "MIPGaussianSynthesizer": "skmip.synthetic",
    "MIPMarginalSynthesizer": "skmip.marginals",
    "DPMarginalSynthesizer": "skmip.marginals",
    "MIPTabularSynthesizer": "skmip.tabular",
    "MIAttackScorer": "skmip.scoring",
    "make_mi_scorer": "skmip.scoring",
    "SynthesizerAuditor": "skmip.synth_audit",
    "play_membership_game": "skmip.game",
    "MIAttackDisplay": "skmip.display",
    "PrivacyUtilityDisplay": "skmip.display",
}

_SUBMODULES = ("bounds", "mechanisms", "moments", "params", "exceptions", "wrappers", "statistic",
    "subsampled", "dp_logistic", "datasets", "synthetic", "marginals", "tabular", "domains", "dp_baselines",
    "nn", "game", "attacks", "metrics", "scoring", "display", "cli", "report", "training_check",
)

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"skmip.{name}")
    raise AttributeError(f"module 'skmip' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
