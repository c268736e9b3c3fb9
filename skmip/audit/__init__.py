"""Audit: the membership game played with real attacks against any fitted estimator.

- :mod:`skmip.audit.game` — the game (shadow models on random halves, Carlini et al.'s
  protocol) and :func:`~skmip.audit.game.play_membership_game`.
- :mod:`skmip.audit.attacks` — LOSS, LiRA, RMIA, GLiR, the synthetic-data attacks, and the
  exact Bayes-optimal attacker of small enumerable problems with its adversarial suite.
- :mod:`skmip.audit.metrics` — AUC, TPR at low FPR, advantage, empirical epsilon, with
  confidence intervals; :mod:`skmip.audit.scoring` — :class:`MIAttackScorer`, a scorer for
  ``GridSearchCV`` that holds the result against the defence's stated
  :class:`~skmip.promise.Promise`.
- :mod:`skmip.audit.synth_audit` — the membership game on synthetic-data releases.
- :mod:`skmip.audit.fitted` — :func:`audit_fitted`, the audit of a model that is already trained.
- :mod:`skmip.audit.one_run` — :func:`one_run_epsilon`, the epsilon lower bound of one training run.
- :mod:`skmip.audit.display` — matplotlib displays (imported only when used).

The audit reads a defence only through its public interface: it never imports the internals
of :mod:`skmip.defend` (tests/test_layers.py).
"""

import importlib

# Public names of the audit, resolved on first access so that ``import skmip.audit`` stays light.
_EXPORTS = {
    "audit_fitted": "skmip.audit.fitted",
    "FittedAudit": "skmip.audit.fitted",
    "one_run_epsilon": "skmip.audit.one_run",
    "one_run_audit": "skmip.audit.one_run",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'skmip.audit' has no attribute {name!r}")
