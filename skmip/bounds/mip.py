"""Closed-form results of Izzo et al., "Provable Membership Inference Privacy".

References
----------
Izzo, Z., Yoon, J., Arik, S. O., Zou, J. "Provable Membership Inference Privacy".
(``shared/papers/izzo-provable-membership-inference-privacy.txt``.)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from skmip.utils.validation import ETA_WHY

from skmip.bounds._common import scalar_or_array as _out
from skmip.bounds.rounding import format_up, relative_error, round_up

__all__ = [
    "mip_noise_constant",
    "dp_to_mip",
    "profile_to_mip",
    "mip_to_dp_epsilon",
    "mip_tpr_bound",
    "mip_accuracy_bound",
    "mip_prior",
    "mip_promise",
]


def _check_eta(eta, name="eta"):
    eta = np.asarray(eta, dtype=np.float64)
    if np.any(~(eta > 0)) or np.any(eta > 0.5):
        raise ValueError(
            f"{name} must be in (0, 0.5]; got {eta.tolist()!r}. {ETA_WHY}"
        )
    return eta


def mip_noise_constant(eta, moment=2):
    r"""Radius scale of the MIP noise, :math:`c = (6.16/\eta)^{1 + 2/M}`.

    Parameters
    ----------
    eta : float or array_like
        Target MIP level in (0, 0.5].
    moment : float or array_like, default=2
        Order :math:`M \ge 2` of the central moment used to measure the spread of the
        fitted parameters.

    Returns
    -------
    float or ndarray
        The constant :math:`c`: the noise has density proportional to
        :math:`\exp(-\|x\|_{\sigma,M} / c)`.

    Notes
    -----
    Corollary 10 (and Corollary 14 in the appendix, which improves Theorem 9's 7.5 to
    6.16 by a numerical optimisation valid for :math:`M \ge 2`). The constant multiplies
    the normalised norm :math:`\|\cdot\|_{\sigma,M}` in which the M-th central moment of
    the parameters is at most 1.

    References
    ----------
    Izzo et al., Corollary 10 / Corollary 14; Theorem 9 for the form of the density.

    Examples
    --------
    >>> round(mip_noise_constant(0.1, moment=2), 1)  # (61.6)^2
    3794.6
    >>> round(mip_noise_constant(0.1, moment=4), 1)  # (61.6)^1.5
    483.5
    """
    eta = _check_eta(eta)
    moment = np.asarray(moment, dtype=np.float64)
    if np.any(~(moment >= 2)):
        raise ValueError(f"moment must be >= 2 (Corollary 10 assumes M >= 2); got {moment.tolist()!r}.")
    # Rounded up (a larger radius scale is more noise): the quotient, the exponent and pow
    # round, pow to a few ulps, and the exponent's error is magnified by log(6.16 / eta) <= 6.
    return _out(round_up((6.16 / eta) ** (1.0 + 2.0 / moment), rel_err=relative_error(24)))


def dp_to_mip(epsilon, delta=0.0):
    r"""The MIP level implied by (epsilon, delta)-DP: :math:`\delta + (1-\delta)/(1+e^{-\epsilon}) - 1/2`.

    Parameters
    ----------
    epsilon : float or array_like
        DP privacy loss, >= 0.
    delta : float or array_like, default=0.0
        DP failure probability in [0, 1].

    Returns
    -------
    float or ndarray
        eta such that every (epsilon, delta)-DP algorithm is eta-MIP.

    Notes
    -----
    Theorem 4; the bound is tight (the randomized-response mechanism attains it), which is
    why Figure 1 uses it to place DP and MIP on the same axis.

    **Adjacency.** Theorem 4 is proved for *replace-one* neighbours (datasets of the same
    size differing in one record): ``epsilon`` and ``delta`` must be a replace-one guarantee.
    An add/remove epsilon does not suffice: ``M(D) = #{x*} - #{others} + Lap(1)`` is
    add/remove 1-DP (replace-one 2-DP) and reaches eta = 0.316 > ``dp_to_mip(1)`` = 0.231.
    When the whole privacy profile is known (an accountant), :func:`profile_to_mip` of the
    replace-one delta at epsilon = 0 is smaller and exact. Computed with
    ``scipy.special.expit`` so large epsilon saturates at :math:`1/2` without overflow.

    References
    ----------
    Izzo et al., Theorem 4.

    Examples
    --------
    >>> round(dp_to_mip(1.0), 4)
    0.2311
    >>> dp_to_mip(0.0)
    0.0
    """
    from scipy.special import expit

    epsilon = np.asarray(epsilon, dtype=np.float64)
    delta = np.asarray(delta, dtype=np.float64)
    if np.any(~(epsilon >= 0)):
        raise ValueError(f"epsilon must be >= 0; got {epsilon.tolist()!r}.")
    if np.any(~((delta >= 0) & (delta <= 1))):
        raise ValueError(f"delta must be in [0, 1]; got {delta.tolist()!r}.")
    # expit to a few ulps, four roundings, all of magnitude <= 1: rounded up by their bound.
    return _out(round_up(delta + (1.0 - delta) * expit(epsilon) - 0.5, abs_err=relative_error(8), upper=0.5))


def profile_to_mip(tv):
    r"""The MIP level of a mechanism whose replace-one neighbours are within total variation ``tv``.

    :math:`\eta = \mathrm{TV}/2`, where :math:`\mathrm{TV} = \sup_{D \simeq D'} \mathrm{TV}(M(D),
    M(D')) = \delta_{\mathrm{replace}}(0)`, the replace-one privacy profile at epsilon = 0.

    Parameters
    ----------
    tv : float or array_like
        Bound on the total variation between the outputs on any two datasets of the same
        size that differ in one record, in [0, 1].

    Returns
    -------
    float or ndarray
        eta in [0, 0.5] such that the mechanism is eta-MIP (Izzo et al., Definition 1).

    Notes
    -----
    *Proof.* Definition 1 draws D_train uniformly among the k-subsets of D and asks whether
    x* is in it. Couple the two worlds: from a uniform k-subset S containing x*, replace x*
    by a uniform element of D outside S; the result S' is a uniform k-subset not containing
    x*, and (S, S') are replace-one neighbours. The release's law given "in" is the mixture
    of M(S), given "out" the same mixture of M(S'); total variation is jointly convex, so
    the two laws are within :math:`t = \mathrm{TV}`. With prior :math:`p = k/n \ge 1/2` the
    best attacker is right with probability :math:`\int \max(p f_{in}, (1-p) f_{out}) = p +
    \int ((1-p) f_{out} - p f_{in})_+ \le p + (1-p)\,t \le p + t/2` (symmetrically for
    :math:`p < 1/2`), which is Definition 1 with :math:`\eta = t/2`. The bound is attained
    when the worst pair is realised by the data (randomized response on a one-record
    difference). Izzo et al.'s Theorem 4 is the special case :math:`t \le \delta +
    (1-\delta)\tanh(\epsilon/2)` that (epsilon, delta)-DP alone implies, so this is never
    larger than :func:`dp_to_mip` of any point of the same profile.

    References
    ----------
    Izzo et al., Definition 1, Theorem 4 (this bound refines it); Kairouz, Oh & Viswanath,
    "The Composition Theorem for Differential Privacy", ICML 2015 (hockey-stick divergence
    at epsilon = 0 is total variation).

    Examples
    --------
    Randomized response with epsilon = 1 has total variation tanh(1/2): the bound equals
    Theorem 4's, which is tight there.

    >>> import numpy as np
    >>> round(profile_to_mip(np.tanh(0.5)), 4), round(dp_to_mip(1.0), 4)
    (0.2311, 0.2311)
    """
    tv = np.asarray(tv, dtype=np.float64)
    if np.any(~((tv >= 0) & (tv <= 1))):
        raise ValueError(
            f"profile_to_mip: tv must be in [0, 1]; got {tv.tolist()!r}. It is a total variation "
            "distance (the replace-one delta at epsilon = 0)."
        )
    return _out(tv / 2.0)


def mip_to_dp_epsilon(eta, delta=0.0):
    r"""The epsilon at which (epsilon, delta)-DP promises exactly eta-MIP (Theorem 4 inverted).

    The epsilon is a replace-one guarantee, as Theorem 4 needs (see :func:`dp_to_mip`).

    Solves :math:`\eta = \delta + (1-\delta)/(1+e^{-\epsilon}) - 1/2` for epsilon:
    :math:`\epsilon = \log\frac{1+2\eta'}{1-2\eta'}` with
    :math:`\eta' = (\eta - \delta/2)/(1-\delta)`. ``eta = 0.5`` gives ``inf``.

    Parameters
    ----------
    eta : float or array_like
        Target MIP level in (delta/2, 0.5].
    delta : float, default=0.0
        DP failure probability in [0, 1). An eta at or below delta/2 cannot be promised by
        (., delta)-DP for any epsilon.

    Returns
    -------
    float or ndarray
        The epsilon; used for Figure 1 and to compare DP and MIP mechanisms at an equal
        promise.

    References
    ----------
    Izzo et al., Theorem 4 and the discussion of Figure 1.

    Examples
    --------
    >>> round(mip_to_dp_epsilon(0.2311), 3)
    1.0
    >>> round(dp_to_mip(mip_to_dp_epsilon(0.1)), 12)
    0.1
    >>> round(dp_to_mip(mip_to_dp_epsilon(0.1, delta=1e-6), 1e-6), 12)
    0.1
    """
    eta = _check_eta(eta)
    delta = float(delta)
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1); got {delta!r}.")
    if np.any(eta <= delta / 2):
        raise ValueError(
            f"eta must exceed delta/2 = {delta / 2:g}; got {eta.tolist()!r}. "
            f"(epsilon, delta={delta:g})-DP promises no eta below delta/2."
        )
    e = (eta - delta / 2) / (1 - delta)
    with np.errstate(divide="ignore"):
        return _out(np.log1p(2 * e) - np.log1p(-2 * e))


def mip_tpr_bound(fpr, eta):
    r"""Largest true-positive rate an attacker can reach at a given false-positive rate under eta-MIP.

    Returns :math:`\min(1, \mathrm{FPR} + 2\eta)` (clipped to [0, 1]).

    Parameters
    ----------
    fpr : float or array_like
        False-positive rate(s) in [0, 1].
    eta : float or array_like
        MIP level in (0, 0.5].

    Notes
    -----
    **Correction of Theorem 8.** The paper states TPR <= FPR + eta. With the prior of 1/2
    (Definition 1 at k = n/2, where its promise :math:`\max(k/n, 1-k/n) + \eta` reads
    :math:`\tfrac12 + \eta`), an attacker's accuracy is
    :math:`\tfrac12 \mathrm{TPR} + \tfrac12 (1 - \mathrm{FPR}) = \tfrac12 + (\mathrm{TPR} - \mathrm{FPR})/2`,
    so accuracy <= 1/2 + eta gives :math:`\mathrm{TPR} \le \mathrm{FPR} + 2\eta`. This is
    also what the proof of Theorem 8 establishes: its first line rewrites the event
    "TPR > FPR + eta" as a difference of sums weighted by P(D_train = D), and those weights
    carry the factor 1/2 that the statement drops. The printed bound is violated by the
    randomized-response mechanism, which is exactly eta-MIP with TPR - FPR = 2 eta.

    References
    ----------
    Izzo et al., Definition 1 and Theorem 8 (corrected).

    Examples
    --------
    >>> mip_tpr_bound(0.01, 0.1)
    0.21
    >>> mip_tpr_bound([0.0, 0.9], 0.1).tolist()
    [0.2, 1.0]
    """
    eta = _check_eta(eta)
    fpr = np.asarray(fpr, dtype=np.float64)
    if np.any(~((fpr >= 0) & (fpr <= 1))):
        raise ValueError(f"fpr must be in [0, 1]; got {fpr.tolist()!r}.")
    return _out(np.clip(fpr + 2.0 * eta, 0.0, 1.0))


def mip_accuracy_bound(eta, train_fraction=0.5):
    r"""Highest membership-inference accuracy under eta-MIP: :math:`\max(k/n, 1-k/n) + \eta`.

    Parameters
    ----------
    eta : float or array_like
        MIP level in (0, 0.5].
    train_fraction : float or array_like, default=0.5
        :math:`k/n`, the fraction of the dataset drawn into the training set.

    Notes
    -----
    Definition 1: the attacker's accuracy over the random size-k training subset is at most
    the best constant guess plus eta. The result is clipped at 1.

    References
    ----------
    Izzo et al., Definition 1.

    Examples
    --------
    >>> mip_accuracy_bound(0.1)
    0.6
    >>> round(mip_accuracy_bound(0.1, train_fraction=0.2), 10)
    0.9
    """
    eta = _check_eta(eta)
    q = np.asarray(train_fraction, dtype=np.float64)
    if np.any(~((q >= 0) & (q <= 1))):
        raise ValueError(f"train_fraction must be in [0, 1]; got {q.tolist()!r}.")
    return _out(np.minimum(1.0, np.maximum(q, 1.0 - q) + eta))


def mip_prior(n_train, n_samples):
    r"""The best constant guess's accuracy in Definition 1: :math:`\max(k/n, 1 - k/n)`.

    Parameters
    ----------
    n_train : int
        :math:`k`, the size of the random training subset ``D_train``.
    n_samples : int
        :math:`n`, the size of the dataset ``D`` it is drawn from (``1 <= k <= n``).

    Returns
    -------
    float
        The accuracy of always guessing the a priori likelier outcome. An eta-MIP release
        promises accuracy at most this plus eta; for odd ``n`` it exceeds 1/2 even at
        ``k = round(n/2)``.

    Raises
    ------
    ValueError
        If ``k`` or ``n`` is not an integer with ``1 <= k <= n``.

    References
    ----------
    Izzo et al., Definition 1.

    Examples
    --------
    >>> mip_prior(50, 100)
    0.5
    >>> round(mip_prior(4, 9), 4)   # n = 9: the prior alone beats 1/2
    0.5556
    """
    k, n = _check_sizes(n_train, n_samples)
    return max(k / n, 1.0 - k / n)


def mip_promise(eta, n_train, n_samples):
    r"""Definition 1's promise in words, with its number: the one sentence skmip prints.

    Every estimator, the CLI and the docs state an eta-MIP release's guarantee through this
    function, so that the promise is worded (and computed) in one place.

    Parameters
    ----------
    eta : float
        MIP level in (0, 0.5] (``mip_bound_``).
    n_train : int
        :math:`k`, the size of the random training subset ``D_train``.
    n_samples : int
        :math:`n`, the size of the dataset ``D`` it was drawn from.

    Returns
    -------
    str
        "accuracy <= max(k/n, 1-k/n) + eta = ..." with ``k``, ``n`` and the number.

    Notes
    -----
    Definition 1: ``D`` is fixed, ``D_train`` a uniformly random k-subset; for every record
    of ``D`` no attacker guesses whether it is in ``D_train`` with accuracy above
    :math:`\max(k/n, 1-k/n) + \eta` (:func:`mip_accuracy_bound`). This is "1/2 + eta"
    only when ``k = n/2``.

    References
    ----------
    Izzo et al., Definition 1.

    Examples
    --------
    >>> mip_promise(0.1, 50, 100)
    'accuracy <= max(k/n, 1-k/n) + eta = 0.5 + 0.1 = 0.6 (k = 50 of n = 100)'
    >>> mip_promise(0.1, 4, 9)
    'accuracy <= max(k/n, 1-k/n) + eta = 0.556 + 0.1 = 0.656 (k = 4 of n = 9)'
    """
    eta = float(_check_eta(eta))
    mip_prior(n_train, n_samples)  # validates k and n
    k, n = int(n_train), int(n_samples)
    # The bound in exact arithmetic (k/n rational; eta read as the decimal it was typed as, its
    # repr, the convention of format_up), printed rounded up: a bound read off the text is
    # never below the theorem's, and 0.5 + 0.3 prints 0.8, not a float sum's 0.801.
    prior = Fraction(max(k, n - k), n)
    total = min(prior + Fraction(repr(eta)), Fraction(1))
    return (
        f"accuracy <= max(k/n, 1-k/n) + eta = {format_up(prior)} + {eta:g} = {format_up(total)} "
        f"(k = {int(n_train)} of n = {int(n_samples)})"
    )


def _check_sizes(n_train, n_samples):
    ok = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (n_train, n_samples))
    if not ok or not 1 <= n_train <= n_samples:
        raise ValueError(
            f"n_train and n_samples must be integers with 1 <= n_train <= n_samples (k and n of "
            f"Definition 1); got n_train={n_train!r}, n_samples={n_samples!r}."
        )
    return int(n_train), int(n_samples)
