"""Membership-inference metrics over all trials of a membership game.

Every function takes ``membership`` (which trials were members) and ``scores`` (the attack's
scores, larger meaning "more likely a member") of the same shape -- typically the
``(n_models, n_samples)`` matrices of :func:`skmip.audit.game.play_membership_game` -- and treats
every entry as one trial, as Carlini et al. (2022) do: one ROC over all (model, record) pairs.
The argument order follows scikit-learn's ``(y_true, y_score)``.

The confidence statements (:func:`empirical_epsilon`, :func:`check_mip_bound`,
:func:`check_positive_accuracy_bound`) use the exact binomial intervals of
:mod:`skmip.bounds.empirical`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.validation import check_int, check_interval
from skmip.bounds.empirical import (
    clopper_pearson_interval,
    dp_epsilon_lower_bound,
    mip_roc_violation,
)

__all__ = [
    "mi_roc_curve",
    "mi_roc_auc",
    "tpr_at_fpr",
    "membership_advantage",
    "positive_accuracy",
    "empirical_epsilon",
    "check_mip_bound",
    "check_positive_accuracy_bound",
    "BoundCheck",
]


def _trials(owner, membership, scores):
    """Flatten and validate; return (membership bool, scores float) as 1-D arrays."""
    m = np.asarray(membership)
    s = np.asarray(scores, dtype=np.float64)
    if m.shape != s.shape:
        raise ValueError(
            f"{owner}: membership and scores must have the same shape; got {m.shape} and {s.shape}."
        )
    m, s = m.ravel(), s.ravel()
    if m.dtype != bool:
        if not np.all((m == 0) | (m == 1)):
            raise ValueError(f"{owner}: membership must be boolean or 0/1; got values {np.unique(m)[:5]!r}.")
        m = m.astype(bool)
    if not np.all(np.isfinite(s)):
        raise ValueError(
            f"{owner}: scores must be finite; got {int(np.sum(~np.isfinite(s)))} NaN/inf value(s). "
            "An attack that divides by a zero variance produces them; fix the attack's inputs."
        )
    n_pos = int(m.sum())
    if n_pos == 0 or n_pos == m.size:
        raise ValueError(
            f"{owner}: need both member and non-member trials; got {n_pos} members out of {m.size}."
        )
    return m, s


def _roc_counts(membership, scores):
    """Cumulative (tp, fp) at every distinct threshold, scores sorted in decreasing order.

    A trial is flagged as a member when its score is >= the threshold.
    """
    order = np.argsort(-scores, kind="mergesort")
    s, m = scores[order], membership[order]
    last = np.r_[np.flatnonzero(np.diff(s)), s.size - 1]
    tp = np.cumsum(m)[last]
    fp = last + 1 - tp
    return s[last], tp, fp, int(membership.sum()), int((~membership).sum())


def mi_roc_curve(membership: ArrayLike, scores: ArrayLike):
    """ROC curve of an attack over all trials.

    Parameters
    ----------
    membership : array_like of bool, any shape
        True where the trial's record was a member of the model's training set.
    scores : array_like of float, same shape
        Attack scores; larger means "member".

    Returns
    -------
    fpr, tpr : ndarray of shape (m + 1,)
        False- and true-positive rates, increasing, starting at (0, 0).
    thresholds : ndarray of shape (m + 1,)
        ``thresholds[i]`` flags trials with score >= it; ``thresholds[0] = inf``.

    Raises
    ------
    ValueError
        If shapes differ, scores are not finite, or one class is absent.

    Notes
    -----
    Identical to :func:`sklearn.metrics.roc_curve` with ``drop_intermediate=False``; written
    out so that the counts behind each point are available to the confidence statements.

    Examples
    --------
    >>> fpr, tpr, _ = mi_roc_curve([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1])
    >>> fpr.tolist(), tpr.tolist()
    ([0.0, 0.0, 0.5, 0.5, 1.0], [0.0, 0.5, 0.5, 1.0, 1.0])
    """
    m, s = _trials("mi_roc_curve", membership, scores)
    thr, tp, fp, n_pos, n_neg = _roc_counts(m, s)
    return np.r_[0.0, fp / n_neg], np.r_[0.0, tp / n_pos], np.r_[np.inf, thr]


def mi_roc_auc(membership: ArrayLike, scores: ArrayLike) -> float:
    """Area under the attack's ROC curve (0.5 is chance, 1.0 perfect membership inference).

    Equal to :func:`sklearn.metrics.roc_auc_score` (ties count one half).

    Examples
    --------
    >>> mi_roc_auc([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1])
    0.75
    """
    fpr, tpr, _ = mi_roc_curve(membership, scores)
    return float(np.trapezoid(tpr, fpr))


def tpr_at_fpr(membership: ArrayLike, scores: ArrayLike, fpr: float | ArrayLike = 0.001):
    """True-positive rate at a fixed (low) false-positive rate.

    Parameters
    ----------
    membership, scores : array_like
        See :func:`mi_roc_curve`.
    fpr : float or array_like, default=0.001
        Target false-positive rate(s) in [0, 1].

    Returns
    -------
    float or ndarray
        The largest TPR among thresholds whose FPR is at most ``fpr`` (no interpolation, so
        the attack really achieves it). Carlini et al. (2022) report TPR at 0.1% and 1% FPR.

    Notes
    -----
    With ``n_neg`` non-member trials the smallest nonzero FPR is ``1/n_neg``: below it the
    value is the TPR at zero false positives. Report the number of trials alongside.

    References
    ----------
    Carlini et al., "Membership Inference Attacks From First Principles", IEEE S&P 2022,
    Section III (why low-FPR TPR, not accuracy or AUC, measures an attack).

    Examples
    --------
    >>> tpr_at_fpr([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], fpr=[0.0, 0.5])
    array([0.5, 1. ])
    """
    target = np.asarray(fpr, dtype=np.float64)
    if np.any(~((target >= 0) & (target <= 1))):
        raise ValueError(f"tpr_at_fpr: fpr must be in [0, 1]; got {target.tolist()!r}.")
    f, t, _ = mi_roc_curve(membership, scores)
    # f is non-decreasing and t with it: the best point with f <= target is the last one.
    idx = np.searchsorted(f, target, side="right") - 1
    out = t[idx]
    return out.item() if out.ndim == 0 else out


def membership_advantage(membership: ArrayLike, scores: ArrayLike) -> float:
    r"""Best membership advantage over thresholds, :math:`\max_t (\mathrm{TPR}_t - \mathrm{FPR}_t)`.

    Yeom et al. (2018)'s membership advantage of the best threshold. With members and
    non-members equally likely, the attacker's accuracy is ``1/2 + advantage/2``, so eta-MIP
    (Izzo et al., Definition 1) promises ``advantage <= 2 eta``.

    Examples
    --------
    >>> membership_advantage([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1])
    0.5
    """
    f, t, _ = mi_roc_curve(membership, scores)
    return float(np.max(t - f))


def _quantile_counts(m, s, n_quantiles):
    """Thresholds accepting the top i/n_quantiles of the scores; members and trials flagged."""
    thr = np.quantile(s, 1.0 - np.arange(1, n_quantiles + 1) / n_quantiles)
    order = np.argsort(-s, kind="mergesort")
    desc = s[order]
    # number of trials with score >= t: position of t in the decreasing order
    flagged = np.searchsorted(-desc, -thr, side="right")
    members = np.r_[0, np.cumsum(m[order])][flagged]
    return thr, members, flagged


def positive_accuracy(
    membership: ArrayLike, scores: ArrayLike, *, n_quantiles: int = 40, return_all: bool = False
):
    """Best positive accuracy (precision) over the top-``i/n_quantiles`` quantile thresholds.

    Parameters
    ----------
    membership, scores : array_like
        See :func:`mi_roc_curve`.
    n_quantiles : int, default=40
        Thresholds accept the top ``i / n_quantiles`` of the scores, ``i = 1..n_quantiles``;
        the default 40 is Thudi et al.'s ``i * 2.5%`` grid.
    return_all : bool, default=False
        Also return the precision at every threshold.

    Returns
    -------
    best : float
        ``max_i P(member | score >= t_i)``.
    precisions : ndarray of shape (n_quantiles,)
        Only if ``return_all``; ``precisions[i-1]`` accepts the top ``i/n_quantiles``.

    Notes
    -----
    Thudi et al., Section 4.2: "we consider accepting the top i*2.5% quantile of scores for
    every i in [40], and report the best precision (positive accuracy) out of all these
    different thresholds". Positive accuracy is Definition 3.1's ``P(x* in D | S)``; under
    subsampling at rate T and (epsilon, delta)-DP it is bounded by Theorem 3.3
    (:func:`skmip.bounds.positive_accuracy_bound`). The last threshold accepts everything,
    so the result is never below the member rate (the "always say member" baseline).
    Thresholds are ``numpy.quantile`` values; ties at a threshold are all accepted.

    References
    ----------
    Thudi et al., "Bounding Membership Inference", TMLR 2024, Definition 3.1 and Section 4.2.

    Examples
    --------
    >>> positive_accuracy([1, 1, 0, 1, 0, 0, 1, 0], [8, 7, 6, 5, 4, 3, 2, 1], n_quantiles=4)
    1.0
    """
    n_quantiles = check_int("positive_accuracy", "n_quantiles", n_quantiles, 1, None)
    m, s = _trials("positive_accuracy", membership, scores)
    _, k, n = _quantile_counts(m, s, n_quantiles)
    precisions = k / n
    best = float(precisions.max())
    return (best, precisions) if return_all else best


def empirical_epsilon(
    membership: ArrayLike,
    scores: ArrayLike,
    *,
    delta: float = 1e-5,
    confidence: float = 0.95,
    threshold: str | float = "split",
) -> float:
    """Clopper--Pearson lower bound on the DP epsilon that an attack's ROC proves.

    Parameters
    ----------
    membership, scores : array_like
        See :func:`mi_roc_curve`.
    delta : float, default=1e-5
        DP delta of the claim being tested.
    confidence : float, default=0.95
        Probability that the bound is valid (for ``threshold="split"`` or a fixed value).
    threshold : "split", "max" or float, default="split"
        How the decision threshold is chosen:

        * ``"split"``: on the trials with even flat index (of ``np.ravel``) -- the one that
          maximises the bound there -- and the bound is computed from the counts of the
          other half at that threshold. The selection never sees the counts it certifies, so
          the confidence is honest (up to the dependence between trials of one game). Where
          that parity split leaves a half with members only or non-members only (a mask
          that alternates with the index), every other member and every other non-member go
          to the selection half instead: a split that reads the membership, never the scores.
        * ``"max"``: the largest bound over all thresholds on all trials, as the published
          audits report it. Optimistic: the confidence holds per threshold, not for the max.
        * a float: flag trials with ``score >= threshold``; use all trials.

    Returns
    -------
    float
        The epsilon lower bound (>= 0), see :func:`skmip.bounds.dp_epsilon_lower_bound`.

    References
    ----------
    Jagielski et al. (2020); Nasr et al. (2021), Section IV-A.

    Examples
    --------
    Randomized response with epsilon = 1 (answer truthfully with probability
    ``e / (1 + e)``) is exactly 1-DP; 20000 trials prove a bound just below 1:

    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(20000) < 0.5
    >>> truthful = rng.random(20000) < np.e / (1 + np.e)
    >>> guess = np.where(truthful, member, ~member).astype(float)
    >>> round(empirical_epsilon(member, guess, delta=0.0), 2)
    0.97
    """
    owner = "empirical_epsilon"
    check_interval(owner, "delta", delta, 0, 1, closed="left")
    check_interval(owner, "confidence", confidence, 0, 1, closed="neither")
    m, s = _trials(owner, membership, scores)
    if isinstance(threshold, str):
        if threshold == "max":
            _, tp, fp, n_pos, n_neg = _roc_counts(m, s)
            return float(np.max(dp_epsilon_lower_bound(tp, fp, n_pos, n_neg, delta=delta, confidence=confidence)))
        if threshold != "split":
            raise ValueError(f"{owner}: threshold must be 'split', 'max' or a float; got {threshold!r}.")
        sel = _split_halves(m)
        m_sel, s_sel, m_ev, s_ev = m[sel], s[sel], m[~sel], s[~sel]
        for part, name in ((m_sel, "selection"), (m_ev, "evaluation")):
            if part.all() or not part.any():
                raise ValueError(f"{owner}: the {name} half has only one class (fewer than 2 trials of "
                                 "members or of non-members); use threshold='max'.")
        thr, tp, fp, n_pos, n_neg = _roc_counts(m_sel, s_sel)
        bounds = dp_epsilon_lower_bound(tp, fp, n_pos, n_neg, delta=delta, confidence=confidence)
        t = thr[int(np.argmax(bounds))]
    else:
        t = check_interval(owner, "threshold", threshold)
        m_ev, s_ev = m, s
    flagged = s_ev >= t
    tp = int(np.sum(flagged & m_ev))
    fp = int(np.sum(flagged & ~m_ev))
    return float(
        dp_epsilon_lower_bound(tp, fp, int(m_ev.sum()), int((~m_ev).sum()), delta=delta, confidence=confidence)
    )


def _split_halves(membership):
    """The selection half of ``empirical_epsilon(threshold="split")``: the even flat indices,
    or, where they hold one class only (or leave the rest with one), every other trial of each
    class. Either reads the membership alone, never the scores."""
    sel = np.zeros(membership.size, dtype=bool)
    sel[::2] = True
    if all(part.any() and not part.all() for part in (membership[sel], membership[~sel])):
        return sel
    sel[:] = False
    for cls in (True, False):
        sel[np.flatnonzero(membership == cls)[::2]] = True
    return sel


@dataclass(frozen=True)
class BoundCheck:
    """Outcome of testing a measured attack against a stated privacy bound.

    Attributes
    ----------
    holds : bool
        False only when the data refute the bound at the stated confidence.
    margin : float
        Largest confident excess over the bound (negative: by how much it is respected at
        the most dangerous threshold, in the metric's units).
    threshold : float
        Score threshold at which ``margin`` is attained.
    bound : float
        The bound tested (eta for MIP, the positive-accuracy bound otherwise).
    kind : str
        ``"mip"`` or ``"positive_accuracy"``.
    confidence : float
        Simultaneous confidence level of the test.
    """

    holds: bool
    margin: float
    threshold: float
    bound: float
    kind: str
    confidence: float


def check_mip_bound(
    membership: ArrayLike, scores: ArrayLike, eta: float, *, confidence: float = 0.95
) -> BoundCheck:
    """Test whether a measured ROC respects an eta-MIP promise, TPR <= FPR + 2 eta.

    Parameters
    ----------
    membership, scores : array_like
        See :func:`mi_roc_curve`; the game must draw members as in Definition 1 (a uniform
        half of the pool per model).
    eta : float
        The promised MIP level in (0, 0.5].
    confidence : float, default=0.95
        Simultaneous confidence over every threshold of the curve.

    Returns
    -------
    BoundCheck
        ``holds`` is False iff at some threshold the one-sided Clopper--Pearson lower bound
        on TPR minus the upper bound on FPR exceeds ``2 eta`` (Bonferroni over all
        thresholds); see :func:`skmip.bounds.mip_roc_violation`.

    References
    ----------
    Izzo et al., Definition 1 and Theorem 8 (corrected: FPR + 2 eta, see
    :func:`skmip.bounds.mip_tpr_bound`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(4000) < 0.5
    >>> flip = rng.random(4000) < 0.6      # randomized response: exactly 0.1-MIP
    >>> guess = np.where(flip, member, ~member).astype(float)
    >>> check_mip_bound(member, guess, eta=0.1).holds
    True
    >>> check_mip_bound(member, guess, eta=0.02).holds
    False
    """
    m, s = _trials("check_mip_bound", membership, scores)
    thr, tp, fp, n_pos, n_neg = _roc_counts(m, s)
    margins = mip_roc_violation(tp, fp, n_pos, n_neg, eta, confidence=confidence)
    i = int(np.argmax(margins))
    return BoundCheck(
        holds=bool(margins[i] <= 0), margin=float(margins[i]), threshold=float(thr[i]),
        bound=float(eta), kind="mip", confidence=float(confidence),
    )


def check_positive_accuracy_bound(
    membership: ArrayLike,
    scores: ArrayLike,
    bound: float,
    *,
    n_quantiles: int = 40,
    confidence: float = 0.95,
) -> BoundCheck:
    """Test whether the attack's positive accuracy (Thudi's quantile thresholds) respects a bound.

    Parameters
    ----------
    membership, scores : array_like
        See :func:`mi_roc_curve`.
    bound : float
        Upper bound on ``P(member | flagged)`` in (0, 1].
    n_quantiles : int, default=40
        Thresholds as in :func:`positive_accuracy`.
    confidence : float, default=0.95
        Simultaneous confidence over the ``n_quantiles`` thresholds.

    Returns
    -------
    BoundCheck
        ``holds`` is False iff at some threshold the one-sided Clopper--Pearson lower bound
        on the precision (members among the flagged trials), at level
        ``1 - (1 - confidence)/n_quantiles``, exceeds ``bound``.

    Notes
    -----
    The bound must be stated for the game's prior: with members drawn at rate ``r`` the
    baseline positive accuracy is ``r``, and Thudi et al.'s Theorem 3.3 is stated for the
    probability ``T`` that a record enters the training set.

    References
    ----------
    Thudi et al., TMLR 2024, Theorem 3.3 and Section 4.2.

    Examples
    --------
    >>> check_positive_accuracy_bound([1, 0] * 500, [1.0, 0.0] * 500, bound=0.9).holds
    False
    """
    owner = "check_positive_accuracy_bound"
    bound = check_interval(owner, "bound", bound, 0, 1, closed="right")
    n_quantiles = check_int(owner, "n_quantiles", n_quantiles, 1, None)
    check_interval(owner, "confidence", confidence, 0, 1, closed="neither")
    m, s = _trials(owner, membership, scores)
    thr, k, n = _quantile_counts(m, s, n_quantiles)
    level = 1.0 - (1.0 - confidence) / n_quantiles
    low, _ = clopper_pearson_interval(k, n, confidence=level, alternative="greater")
    margins = np.asarray(low) - bound
    i = int(np.argmax(margins))
    return BoundCheck(
        holds=bool(margins[i] <= 0), margin=float(margins[i]), threshold=float(thr[i]),
        bound=float(bound), kind="positive_accuracy", confidence=float(confidence),
    )
