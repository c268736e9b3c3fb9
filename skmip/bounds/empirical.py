"""Confidence bounds from attack counts: Clopper--Pearson intervals, empirical epsilon, MIP checks.

A membership-inference audit ends with counts: of ``n_pos`` member trials the attack flagged
``tp``, of ``n_neg`` non-member trials it flagged ``fp``. This module turns such counts into
statements that hold with a stated confidence: exact binomial (Clopper--Pearson) intervals, the
lower bound on a DP epsilon that the counts prove (Jagielski et al. 2020; Nasr et al. 2021),
and whether a measured ROC is compatible with an eta-MIP promise (Izzo et al., Theorem 8,
corrected). Pure math: numbers and arrays in, numbers and arrays out.

References
----------
Clopper, C. J., Pearson, E. S. "The use of confidence or fiducial limits illustrated in the
case of the binomial". Biometrika 26(4), 1934.
Kairouz, P., Oh, S., Viswanath, P. "The composition theorem for differential privacy".
ICML 2015 (the hypothesis-testing inequalities, restated in Izzo et al., proof of Theorem 4).
Jagielski, M., Ullman, J., Oprea, A. "Auditing differentially private machine learning:
how private is private SGD?". NeurIPS 2020.
Nasr, M., Song, S., Thakurta, A., Papernot, N., Carlini, N. "Adversary instantiation: lower
bounds for differentially private machine learning". IEEE S&P 2021, Section IV-A
(``shared/papers/nasr-adversary-instantiation-excerpt.txt``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from skmip.bounds._common import scalar_or_array as _out
from skmip.bounds.mip import _check_eta

__all__ = [
    "clopper_pearson_interval",
    "dp_epsilon_lower_bound",
    "mip_roc_violation",
]

_ALTERNATIVES = ("two-sided", "less", "greater")


def _check_confidence(owner, confidence):
    c = np.asarray(confidence, dtype=np.float64)
    if np.any(~((c > 0) & (c < 1))):
        raise ValueError(
            f"{owner}: confidence must be in (0, 1); got {c.tolist()!r}. It is the probability "
            "that the bound holds, e.g. 0.95."
        )
    return c


def _check_counts(owner, k, n, k_name="k", n_name="n"):
    k = np.asarray(k, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    bad = (n < 1) | (k < 0) | (k > n) | (k != np.round(k)) | (n != np.round(n))
    if np.any(bad):
        raise ValueError(
            f"{owner}: {k_name} and {n_name} must be integer counts with 0 <= {k_name} <= "
            f"{n_name} and {n_name} >= 1; got {k_name}={k.tolist()!r}, {n_name}={n.tolist()!r}."
        )
    return k, n


def clopper_pearson_interval(
    k: ArrayLike, n: ArrayLike, *, confidence: float = 0.95, alternative: str = "two-sided"
):
    r"""Exact (Clopper--Pearson) confidence interval for a binomial proportion ``k / n``.

    Parameters
    ----------
    k : int or array_like of int
        Number of successes, ``0 <= k <= n``.
    n : int or array_like of int
        Number of independent trials, ``>= 1``.
    confidence : float, default=0.95
        Coverage probability of the interval, in (0, 1).
    alternative : {"two-sided", "less", "greater"}, default="two-sided"
        ``"two-sided"``: both ends at level ``(1 - confidence) / 2`` each. ``"less"``: a
        one-sided upper bound (the lower end is 0). ``"greater"``: a one-sided lower bound
        (the upper end is 1).

    Returns
    -------
    low, high : float or ndarray
        The interval's ends (broadcast over ``k`` and ``n``).

    Raises
    ------
    ValueError
        For counts outside ``0 <= k <= n``, ``n < 1``, a confidence outside (0, 1) or an
        unknown ``alternative``.

    Notes
    -----
    With :math:`\alpha = 1 - \text{confidence}` the two-sided interval is
    :math:`[B(\alpha/2; k, n-k+1),\; B(1-\alpha/2; k+1, n-k)]` where :math:`B(q; a, b)` is
    the q-quantile of the Beta(a, b) law, and the ends are 0 and 1 when ``k = 0`` and
    ``k = n``. It inverts the two one-sided binomial tests, so its coverage is at least the
    nominal level for every true proportion (it is conservative, never anti-conservative).
    The guarantee assumes the ``n`` trials are independent.

    References
    ----------
    Clopper and Pearson (1934). Nasr et al. (2021), Section IV-A, use it to bound an attack's
    false-positive rate.

    Examples
    --------
    Nasr et al.'s example: 2 false positives in 1000 trials; "there is a 95% probability that
    the attack false positive rate is lower than 0.01":

    >>> low, high = clopper_pearson_interval(2, 1000)
    >>> round(low, 5), round(high, 4)
    (0.00024, 0.0072)
    """
    from scipy.stats import beta

    owner = "clopper_pearson_interval"
    if alternative not in _ALTERNATIVES:
        raise ValueError(
            f"{owner}: alternative must be one of {', '.join(map(repr, _ALTERNATIVES))}; "
            f"got {alternative!r}."
        )
    k, n = _check_counts(owner, k, n)
    alpha = 1.0 - _check_confidence(owner, confidence)
    tail = alpha / 2 if alternative == "two-sided" else alpha
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta.ppf(tail, np.maximum(k, 1), n - k + 1), 0.0)
        high = np.where(k < n, beta.ppf(1 - tail, k + 1, np.maximum(n - k, 1)), 1.0)
    if alternative == "less":
        low = np.zeros_like(low)
    elif alternative == "greater":
        high = np.ones_like(high)
    return _out(low), _out(high)


def dp_epsilon_lower_bound(
    tp: ArrayLike,
    fp: ArrayLike,
    n_pos: ArrayLike,
    n_neg: ArrayLike,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
):
    r"""The smallest DP epsilon compatible, at a confidence level, with an attack's counts.

    Parameters
    ----------
    tp : int or array_like of int
        Member trials the attack flagged as members (true positives), out of ``n_pos``.
    fp : int or array_like of int
        Non-member trials flagged as members (false positives), out of ``n_neg``.
    n_pos, n_neg : int or array_like of int
        Numbers of member and non-member trials, each ``>= 1``.
    delta : float, default=0.0
        The DP delta of the claim being tested, in [0, 1).
    confidence : float, default=0.95
        Probability that the returned value is a valid lower bound, in (0, 1).

    Returns
    -------
    float or ndarray
        An epsilon lower bound, ``>= 0``: with probability at least ``confidence`` the
        training algorithm is *not* (eps', delta)-DP for any eps' below it.

    Raises
    ------
    ValueError
        For invalid counts, delta or confidence.

    Notes
    -----
    **The hypothesis-testing view of DP** (Kairouz et al. 2015; restated in Izzo et al.,
    proof of Theorem 4): an (epsilon, delta)-DP algorithm forces every test between
    neighbouring datasets to satisfy

    .. math::
        \mathrm{FPR} + e^{\varepsilon}\,\mathrm{FNR} \ge 1 - \delta, \qquad
        e^{\varepsilon}\,\mathrm{FPR} + \mathrm{FNR} \ge 1 - \delta,

    hence :math:`\varepsilon \ge \max\{\log\frac{1-\delta-\mathrm{FPR}}{\mathrm{FNR}},
    \log\frac{1-\delta-\mathrm{FNR}}{\mathrm{FPR}}\}`. The rates are replaced by their
    Clopper--Pearson *upper* bounds (larger rates give smaller epsilon, so the bound stays
    valid): each one-sided at level ``1 - (1 - confidence)/2`` so that both hold together
    with probability at least ``confidence`` (union bound). This is the construction of
    Jagielski et al. (2020) and Nasr et al. (2021, "Equations 4 and 5" with
    Clopper--Pearson). The counts must come from one threshold fixed independently of them;
    maximising over thresholds on the same trials makes the confidence nominal only (see
    :func:`skmip.audit.metrics.empirical_epsilon`, which selects the threshold on held-out trials).

    Membership games are not the neighbouring-dataset games of DP: the bound applies to the
    DP guarantee of the whole training pipeline only insofar as the game's member and
    non-member worlds are neighbouring datasets (add/remove one record).

    References
    ----------
    Kairouz et al. (2015), the hypothesis-testing characterisation of DP; Jagielski et al.
    (2020); Nasr et al. (2021), Section IV-A.

    Examples
    --------
    Nasr et al. (Section IV-A): TPR 0.017 and FPR 0.002 over 1000 trials against an
    epsilon = 4 model, "(0.31, 1e-5)". With 17/1000 and 2/1000 and the two-sided 95%
    intervals this construction gives 0.32 (the paper does not print its exact counts):

    >>> round(dp_epsilon_lower_bound(17, 2, 1000, 1000, delta=1e-5), 2)
    0.32
    """
    owner = "dp_epsilon_lower_bound"
    tp, n_pos = _check_counts(owner, tp, n_pos, "tp", "n_pos")
    fp, n_neg = _check_counts(owner, fp, n_neg, "fp", "n_neg")
    delta = np.asarray(delta, dtype=np.float64)
    if np.any(~((delta >= 0) & (delta < 1))):
        raise ValueError(f"{owner}: delta must be in [0, 1); got {delta.tolist()!r}.")
    conf = _check_confidence(owner, confidence)
    # Each one-sided bound at alpha/2: both hold jointly with probability >= confidence.
    one_sided = 1.0 - (1.0 - conf) / 2.0
    _, fpr_hi = clopper_pearson_interval(fp, n_neg, confidence=one_sided, alternative="less")
    _, fnr_hi = clopper_pearson_interval(n_pos - tp, n_pos, confidence=one_sided, alternative="less")
    fpr_hi, fnr_hi = np.asarray(fpr_hi), np.asarray(fnr_hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.log(np.maximum(1.0 - delta - fpr_hi, 0.0)) - np.log(fnr_hi)
        b = np.log(np.maximum(1.0 - delta - fnr_hi, 0.0)) - np.log(fpr_hi)
    eps = np.nan_to_num(np.maximum(np.maximum(a, b), 0.0), nan=0.0, posinf=np.inf)
    return _out(eps)


def mip_roc_violation(
    tp: ArrayLike,
    fp: ArrayLike,
    n_pos: int,
    n_neg: int,
    eta: float,
    *,
    confidence: float = 0.95,
):
    r"""How far, with confidence, a measured ROC goes above the eta-MIP line TPR = FPR + 2 eta.

    Parameters
    ----------
    tp, fp : array_like of int, shape (m,)
        True- and false-positive counts at the ``m`` thresholds of an ROC curve.
    n_pos, n_neg : int
        Numbers of member and non-member trials.
    eta : float
        The promised MIP level, in (0, 0.5].
    confidence : float, default=0.95
        Simultaneous confidence over all ``m`` thresholds.

    Returns
    -------
    margins : ndarray of shape (m,)
        ``TPR_low - FPR_high - 2 eta`` at each threshold, where ``TPR_low`` and ``FPR_high``
        are one-sided Clopper--Pearson bounds at level ``1 - (1 - confidence) / (2 m)``
        (Bonferroni over the ``m`` thresholds and the two rates). A positive entry is a
        violation of the promise that holds with probability at least ``confidence``
        simultaneously over the curve; the promise is refuted iff ``margins.max() > 0``.

    Raises
    ------
    ValueError
        For invalid counts, eta or confidence.

    Notes
    -----
    Under eta-MIP (Definition 1 with k = n/2) every attacker's accuracy is at most
    :math:`1/2 + \eta`; since accuracy is :math:`\tfrac12 + (\mathrm{TPR}-\mathrm{FPR})/2`
    when members and non-members are equally likely, every threshold of every attack
    satisfies :math:`\mathrm{TPR} \le \mathrm{FPR} + 2\eta` (Theorem 8 as corrected in
    :func:`skmip.bounds.mip_tpr_bound`; the paper prints FPR + eta). The test is one-sided
    on the side that would refute the promise, so a promise is declared broken only when
    the data prove it. Bonferroni makes the confidence simultaneous over all thresholds,
    including the one a reader's eye picks from the plot. The binomial model treats the
    trials as independent; in a membership game trials share models and rows, which
    this does not account for.

    References
    ----------
    Izzo et al., Definition 1 and Theorem 8 (corrected, see :func:`skmip.bounds.mip_tpr_bound`);
    Clopper and Pearson (1934).

    Examples
    --------
    The randomized-response mechanism at eta = 0.1 has TPR - FPR = 0.2 exactly; 2000 trials
    cannot refute it:

    >>> bool(mip_roc_violation([600], [400], 1000, 1000, eta=0.1).max() > 0)
    False
    >>> bool(mip_roc_violation([700], [400], 1000, 1000, eta=0.1).max() > 0)
    True
    """
    owner = "mip_roc_violation"
    tp = np.atleast_1d(np.asarray(tp))
    fp = np.atleast_1d(np.asarray(fp))
    if tp.shape != fp.shape or tp.ndim != 1:
        raise ValueError(f"{owner}: tp and fp must be 1-D arrays of equal length; got {tp.shape}, {fp.shape}.")
    eta = float(_check_eta(eta))
    conf = float(_check_confidence(owner, confidence))
    m = tp.size
    level = 1.0 - (1.0 - conf) / (2.0 * m)
    tpr_lo, _ = clopper_pearson_interval(tp, n_pos, confidence=level, alternative="greater")
    _, fpr_hi = clopper_pearson_interval(fp, n_neg, confidence=level, alternative="less")
    return np.atleast_1d(np.asarray(tpr_lo) - np.asarray(fpr_hi) - 2.0 * eta)
