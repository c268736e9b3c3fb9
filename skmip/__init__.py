"""skmip: membership-inference privacy for scikit-learn.

Defend (``MIPNoiseWrapper``, ``SubsampledDPClassifier``), measure (``MIAttackScorer``) and
account (``skmip.bounds``). Importing skmip never imports torch, skorch, opacus,
matplotlib or dask: those live in optional leaf modules (``skmip.nn``, ``skmip.audit.display``).
"""

from __future__ import annotations

import importlib

from skmip import _moved

__version__ = "0.2.0"

# Public name -> module that defines it. Resolved on first access so that
# ``import skmip`` stays light; every entry is checked by tests/test_public_api.py.
_EXPORTS = {
    "PrivacyWarning": "skmip.exceptions",
    "Promise": "skmip.promise",
    "stated_promise": "skmip.promise",
    "MIPNoiseWrapper": "skmip.defend",
    "MIPNoiseWrapperCV": "skmip.defend",
    "mip_noise_path": "skmip.defend",
    "sample_mip_noise": "skmip.calibration.noise_laws",
    "mip_noise_logpdf": "skmip.calibration.noise_laws",
    "mip_norm": "skmip.calibration.noise_laws",
    "exact_mip_advantage": "skmip.audit.attacks.bayes",
    "ExactAuditResult": "skmip.audit.attacks.bayes",
    "estimate_sigma": "skmip.calibration.spread.moments",
    "CentralMomentAccumulator": "skmip.calibration.spread.moments",
    "get_adapter": "skmip.params",
    "register_adapter": "skmip.params",
    "Statistic": "skmip.release.statistic",
    "SubsampledDPClassifier": "skmip.defend.subsampled",
    "DPLogisticRegression": "skmip.defend.dp_logistic",
    "MIPGaussianSynthesizer": "skmip.release.gaussian",
    "MIPMarginalSynthesizer": "skmip.release.marginals",
    "DPMarginalSynthesizer": "skmip.release.marginals",
    "MIPTabularSynthesizer": "skmip.release.tabular",
    "MIAttackScorer": "skmip.audit.scoring",
    "make_mi_scorer": "skmip.audit.scoring",
    "SynthesizerAuditor": "skmip.audit.synth_audit",
    "play_membership_game": "skmip.audit.game",
    "MIAttackDisplay": "skmip.audit.display",
    "PrivacyUtilityDisplay": "skmip.audit.display",
}

_SUBMODULES = ("exceptions", "utils", "promise", "bounds", "params", "calibration", "defend", "release",
    "audit", "app", "datasets", "nn",
)

__all__ = sorted(_EXPORTS) + ["__version__"]

# skmip 0.1's submodule paths (skmip.moments, skmip.wrappers, ...) still import, with a warning.
_moved.install()


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"skmip.{name}")
    if f"skmip.{name}" in _moved.MOVED:
        return importlib.import_module(f"skmip.{name}")  # the finder warns and redirects
    raise AttributeError(f"module 'skmip' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
