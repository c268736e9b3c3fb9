"""From attack scores to an audit's verdict: the metrics, the Bonferroni level, the promise check.

One source for what :class:`~skmip.audit.scoring.MIAttackScorer` (the membership game) and
:func:`~skmip.audit.fitted.audit_fitted` (a model that is already trained) report about a set
of attacks: every attack's ROC figures, its confidence statements at the Bonferroni-corrected
level, the strongest attack, and the test of the bound the audited model states through
:func:`skmip.promise.stated_promise`.
"""

from __future__ import annotations

import warnings
from functools import partial

from skmip.audit.attacks.suite import bonferroni_confidence
from skmip.audit.metrics import (
    check_mip_bound,
    check_positive_accuracy_bound,
    empirical_epsilon,
    membership_advantage,
    mi_roc_auc,
    positive_accuracy,
    tpr_at_fpr,
)

__all__ = ["stated_bound", "attack_results", "verdict_attributes", "metric_value"]


def positive_accuracy_game_bound(stated, member_rate):
    """Thudi's Theorem 3.3 for the game: the estimator subsamples the game's member set.

    A record is a game member with probability ``r`` (independently, ``sampling="bernoulli"``);
    the estimator keeps each member with probability ``T`` and trains an (eps, delta)-DP
    learner. As a function of the game's member set that pipeline is
    (log(1 + T(e^eps - 1)), T delta)-DP (amplification by Poisson subsampling), so Theorem 3.3
    with prior ``r`` bounds ``P(game member | attack says member)``.
    """
    from skmip.bounds import poisson_amplification, positive_accuracy_bound

    d = stated.details
    eps, delta, t = d.get("epsilon"), d.get("delta") or 0.0, d.get("sampling_rate")
    if eps is None or t is None:
        return None
    eps_game, delta_game = poisson_amplification(eps, delta, t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(positive_accuracy_bound(
            eps_game, sampling_rate=member_rate, delta=delta_game,
            min_tpr=d.get("min_tpr") if delta > 0 else None,
        ))


def _warn(message, stacklevel):
    warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


def stated_bound(inspected, membership, *, member_rate, sampling, owner, stacklevel=2):
    """The audited models' stated bound translated to the game, as ``(kind, value)``, or None.

    Parameters
    ----------
    inspected : list or None
        ``stated_promise(model)`` of every audited model (None entries for models not audited).
    membership : ndarray of bool, shape (n_models, n_samples)
        The member sets of those models (rows of the pool each trained on).
    member_rate : float
        Share of the pool that is a member.
    sampling : {"exact", "bernoulli", "given"}
        How the member sets were drawn; ``"given"``: by the model's owner (``audit_fitted``),
        whose docs state what the check then assumes.
    owner : str
        First word of the warnings.

    Returns
    -------
    tuple or None
        ``("mip", eta)``, ``("positive_accuracy", bound)``, ``("untestable", eta)`` or None.
    """
    stated = [b for b in (inspected or []) if b is not None]
    if not stated:
        return None
    kinds = {b.kind for b in stated}
    if len(kinds) > 1:  # pragma: no cover - one estimator states one kind
        raise ValueError(f"{owner}: the models state different kinds of bounds: {kinds}.")
    kind = kinds.pop()
    members = membership.sum(axis=1)
    subsampled = any(
        b is not None and b.details.get("n_train") not in (None, k)
        for b, k in zip(inspected, members, strict=True)
    )
    if kind == "mip":
        eta = max(b.value for b in stated)
        if member_rate != 0.5:
            _warn(f"{owner}: eta-MIP (Definition 1 with k = n/2) bounds TPR - FPR by 2 eta only "
                  f"when members are half of the pool; member_rate={member_rate}. "
                  "bound_holds_ is not computed; use member_rate=0.5.", stacklevel)
            return ("untestable", eta)
        if subsampled:
            _warn(f"{owner}: the audited models were trained on a subsample of the game's "
                  "member set (n_train_ differs), so the game's membership is not their "
                  "D_train and the check is not Definition 1. For an exact audit use "
                  "MIPNoiseWrapper(..., train_size=1.0).", stacklevel)
        if sampling == "bernoulli":
            _warn(f"{owner}: Definition 1 draws D_train as an exact half; sampling="
                  f"{sampling!r} makes the check approximate. Use sampling='exact'.", stacklevel)
        return ("mip", eta)
    bounds = [positive_accuracy_game_bound(b, member_rate) for b in stated]
    if any(b is None for b in bounds):
        return None
    if sampling == "exact":
        _warn(f"{owner}: Theorem 3.3 assumes records are sampled independently; "
              f"sampling={sampling!r} makes the positive-accuracy check approximate. "
              "Use sampling='bernoulli'.", stacklevel)
    return ("positive_accuracy", max(bounds))


def check_stated(stated, membership, scores, confidence):
    """``(holds, BoundCheck)`` of one attack's scores against the stated bound."""
    if stated is None or stated[0] == "untestable":
        return None, None
    kind, value = stated
    check = check_mip_bound if kind == "mip" else check_positive_accuracy_bound
    result = check(membership, scores, value, confidence=confidence)
    return result.holds, result


def metric_value(metric, membership, scores, *, fpr, delta, confidence):
    """The leakage measure ``metric`` of one attack's scores (larger = more leakage)."""
    funcs = {
        "auc": mi_roc_auc,
        "tpr_at_fpr": partial(tpr_at_fpr, fpr=fpr),
        "advantage": membership_advantage,
        "positive_accuracy": positive_accuracy,
        "empirical_epsilon": partial(empirical_epsilon, delta=delta, confidence=confidence),
    }
    return float(funcs[metric](membership, scores))


def attack_results(membership, scores, *, metric, fpr, delta, confidence, stated):
    """Every attack's metrics, its confidence statements at the Bonferroni level, and the best.

    Returns ``(results, best, level)``: ``results[name]`` holds ``roc_auc``, ``tpr_at_fpr``,
    ``advantage``, ``positive_accuracy``, ``empirical_epsilon`` (at ``level``),
    ``bound_holds``, ``bound_check`` and ``metric``; ``best`` is the attack with the largest
    ``metric`` (the first of equals); ``level = 1 - (1 - confidence) / n_attacks``.
    """
    m = membership
    level = bonferroni_confidence(confidence, len(scores))
    results = {}
    for name, s in scores.items():
        holds, check = check_stated(stated, m, s, level)
        results[name] = {
            "roc_auc": mi_roc_auc(m, s),
            "tpr_at_fpr": float(tpr_at_fpr(m, s, fpr)),
            "advantage": membership_advantage(m, s),
            "positive_accuracy": positive_accuracy(m, s),
            "empirical_epsilon": empirical_epsilon(m, s, delta=delta, confidence=level),
            "bound_holds": holds,
            "bound_check": check,
        }
        results[name]["metric"] = (
            results[name]["empirical_epsilon"] if metric == "empirical_epsilon"
            else metric_value(metric, m, s, fpr=fpr, delta=delta, confidence=level)
        )
    best = max(results, key=lambda n: results[n]["metric"])
    return results, best, level


def verdict_attributes(scores, membership, attacks, results, best, level, stated, issues):
    """The fitted attributes an audit reports, named as :class:`MIAttackScorer` names them."""
    chosen = results[best]
    checks = [r["bound_check"] for r in results.values() if r["bound_check"] is not None]
    worst = max(checks, key=lambda c: c.margin) if checks else None
    return {
        "scores_": scores[best],
        "membership_": membership,
        "attack_": attacks[best],
        "best_attack_": best,
        "attack_results_": results,
        "attack_confidence_": level,
        "training_issues_": list(issues),
        "roc_auc_": chosen["roc_auc"],
        "tpr_at_fpr_": chosen["tpr_at_fpr"],
        "advantage_": chosen["advantage"],
        "positive_accuracy_": chosen["positive_accuracy"],
        # Each attack's lower bound holds at the Bonferroni level, so their maximum holds
        # at ``confidence`` (union bound; docs/auditing.md).
        "empirical_epsilon_": max(r["empirical_epsilon"] for r in results.values()),
        "bound_": None if stated is None else stated[1],
        "bound_holds_": None if worst is None else all(c.holds for c in checks),
        "bound_check_": worst,
    }
