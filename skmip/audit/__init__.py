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
- :mod:`skmip.audit.display` — matplotlib displays (imported only when used).

The audit reads a defence only through its public interface: it never imports the internals
of :mod:`skmip.defend` (tests/test_layers.py).
"""
