"""Closed-form results of Thudi et al., "Bounding Membership Inference".

Membership-inference (MI) *positive accuracy* -- the probability that a record really was
in the training set given that an attacker says it was -- of an (epsilon, delta)-DP
training algorithm whose training set is drawn by independent (Poisson) sampling at rate
``T``: Theorem 3.3, its inverse in epsilon (Section 4.3), and the machine-unlearning
consequences of Section 5.1 (Definition 5.1, Corollary 5.2).

Notation: ``T = P_x*(1)`` is the probability that the target record ``x*`` is sampled into
the training set D (``sampling_rate``), ``P_x*(0) = 1 - T``, ``S`` is the set of models on
which the attacker answers "member", and ``P(S | x*)`` the probability, *conditional on*
``x* in D``, that the trained model lands in ``S`` (the attacker's true-positive rate).

References
----------
Thudi, A., Shumailov, I., Boenisch, F., Papernot, N. "Bounding Membership Inference".
TMLR 03/2024 (``shared/papers/thudi-bounding-membership-inference-tmlr.txt``); the arXiv
version beside it numbers Theorem 3.3 as Theorems 1 and 2 and Lemma 3.2 as Lemma 1.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit

from skmip.utils.validation import check_option
from skmip.exceptions import PrivacyWarning

from skmip.bounds._common import scalar_or_array as _out
from skmip.bounds.rounding import relative_error, round_up
from skmip.bounds.amplification import poisson_amplification  # noqa: F401 (exported here too)

__all__ = [
    "positive_accuracy_bound",
    "negative_accuracy_bound",
    "epsilon_for_positive_accuracy",
    "unlearning_guarantee",
    "deletion_capacity",
    "poisson_amplification",
]

_FORMS = ("corrected", "paper")


def _as_array(owner, name, value, low, high, *, low_open=False, why=""):
    """Float64 array of ``value`` with every entry in [low, high] (or (low, high])."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: {name} must be a real number or an array of them; got {value!r}.") from None
    ok = ~np.isnan(arr) & (arr <= high) & ((arr > low) if low_open else (arr >= low))
    if not np.all(ok):
        left = "(" if low_open else "["
        msg = f"{owner}: {name} must be in {left}{low}, {high}]; got {arr.tolist()!r}."
        if why:
            msg += " " + why
        raise ValueError(msg)
    return arr


def _validate(owner, epsilon, sampling_rate, delta, floor, floor_name, form):
    """Validated, broadcast float arrays (epsilon, T, delta, floor)."""
    check_option(owner, "form", form, _FORMS, why="'corrected' is Theorem 3.3 with P(S | x*) read as a "
                 "conditional probability (the default); 'paper' is the formula as printed.")
    epsilon = _as_array(owner, "epsilon", epsilon, 0.0, np.inf,
                        why="epsilon is a DP privacy loss; np.inf means no DP guarantee.")
    t = _as_array(owner, "sampling_rate", sampling_rate, 0.0, 1.0, low_open=True,
                  why="it is the probability P_x*(1) that a record is drawn into the training set.")
    delta = _as_array(owner, "delta", delta, 0.0, 1.0)
    if floor is None:
        if np.any(delta > 0):
            raise ValueError(
                f"{owner}: with delta > 0 the bound needs {floor_name}, a floor on the attacker's "
                f"rate P(S | x*) (Theorem 3.3 is unbounded as it goes to 0; Appendix A.1); got "
                f"{floor_name}=None. Pass e.g. {floor_name}=0.01, the paper's choice in Section 4.3."
            )
        floor = np.ones_like(delta)
    else:
        floor = _as_array(owner, floor_name, floor, 0.0, 1.0, low_open=True,
                          why="it is a probability; the bound covers attackers whose rate is at least it.")
    return np.broadcast_arrays(epsilon, t, delta, floor)


def _delta_factor(delta, floor, prior_of_event, form):
    """``g`` in ``bracket = 1 + e^-eps * odds * g``; see Notes of positive_accuracy_bound."""
    if form == "corrected":
        return 1.0 - delta / floor
    return 1.0 - delta * prior_of_event / floor


def _log_odds(p):
    """``log(p / (1 - p))`` as ``log p - log1p(-p)``: exact at both ends (``+-inf`` at 1, 0)."""
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def _posterior_bound(epsilon, prior_log_odds, g):
    """Theorem 3.3's bound ``1 / (1 + e^-eps * odds^-1 * g^-1) = expit(eps + log-odds - log g)``,
    1 where ``g <= 0`` (vacuous). Stable for large epsilon and priors near 0 or 1."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = epsilon + prior_log_odds - np.log(np.where(g > 0, g, 1.0))
        return np.where(g > 0, expit(z), 1.0)


def _round_up_posterior(bound, epsilon, t, g):
    """Theorem 3.3's value rounded up by its round-off bound (:mod:`skmip.bounds.rounding`).

    ``z = eps + log-odds(T) - log g``: each log a few ulps of itself, ``g = 1 - r`` two
    roundings, so ``log g`` is off by a few ulps of ``(1 + r) / g``; then ``expit'(z) =
    b (1 - b) <= b`` turns an absolute error of ``z`` into that error relative to the bound
    ``b``, and expit adds a few ulps of its own.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        gs = np.where(g > 0, g, 1.0)
        size = np.abs(epsilon) + np.abs(_log_odds(t)) + np.abs(np.log(gs)) + (2.0 - gs) / gs
    rel = np.where(np.isfinite(size), relative_error(8) * size, 0.0) + relative_error(4)
    return round_up(bound, rel_err=rel, upper=1.0)


def _warn_vacuous(owner, g, floor_name):
    if np.any(g <= 0):
        warnings.warn(
            f"{owner}: the bound is vacuous (returned as 1.0) where delta >= {floor_name} "
            "(corrected form) or delta * P >= floor (paper form): the delta-term then cancels "
            "the whole e^-epsilon term of Theorem 3.3, whose right-hand side is then not a "
            f"probability below 1. Raise {floor_name} or lower delta.",
            PrivacyWarning,
            stacklevel=3,
        )


def positive_accuracy_bound(
    epsilon: ArrayLike,
    *,
    sampling_rate: ArrayLike,
    delta: ArrayLike = 0.0,
    min_tpr: ArrayLike | None = None,
    form: str = "corrected",
):
    r"""Upper bound on MI positive accuracy ``P(x* in D | S)`` under Poisson sampling and DP.

    Parameters
    ----------
    epsilon : float or array_like
        The training algorithm's DP epsilon (add/remove-one neighbours), >= 0; ``np.inf``
        allowed (the bound is then 1).
    sampling_rate : float or array_like
        ``T = P_x*(1)``, the probability that the record is drawn into the training set,
        independently of the other records, in (0, 1].
    delta : float or array_like, default=0.0
        The DP delta, in [0, 1].
    min_tpr : float or array_like, optional
        Floor on ``P(S | x*)``, the probability (given that ``x*`` was trained on) that the
        attacker says "member". Required when ``delta > 0``; ignored when ``delta == 0``. The
        bound covers only attackers at or above this rate. Section 4.3 uses 0.01.
    form : {"corrected", "paper"}, default="corrected"
        How the delta-term is computed; see Notes. Identical when ``delta == 0``.

    Returns
    -------
    float or ndarray
        The bound, in [T, 1] (broadcast over the inputs).

    Raises
    ------
    ValueError
        For a value outside its range, an unknown ``form``, or ``delta > 0`` without ``min_tpr``.

    Warns
    -----
    PrivacyWarning
        Where the bound is vacuous (see Notes); 1.0 is returned there.

    Notes
    -----
    **Theorem 3.3** (TMLR; Theorems 1 and 2 of the arXiv version). If the training algorithm
    H is (epsilon, delta)-DP with respect to adding or removing one record (Lemma 3.2 pairs
    each D containing ``x*`` with ``D \ {x*}``) and every record of a finite pool is drawn
    into D independently (record ``x*`` with probability ``T``), then for every attack S

    .. math::
        P(x^* \in D \mid S) \le \Bigl(1 + e^{-\varepsilon}\tfrac{1-T}{T}
        - \delta e^{-\varepsilon}\tfrac{1-T}{T\,P(S\mid x^*)}\Bigr)^{-1}
        = \Bigl(1 + e^{-\varepsilon}\tfrac{1-T}{T}\bigl(1 - \tfrac{\delta}{P(S\mid x^*)}\bigr)\Bigr)^{-1}.

    The right-hand side decreases in ``P(S | x*)``, so ``min_tpr`` may replace it.

    **The delta-term (corrected vs printed).** The proof bounds the denominator below by
    ``(1 + e^-eps (1-T)/T) A - delta e^-eps sum_{D'} P(D')`` with
    ``A = sum_{D containing x*} P(H(D) in S) P(D)`` and ``sum_{D'} P(D') = 1 - T``, then writes
    ``A = P(S | x*)``. But the sum over D carries the probability ``P(D)`` of the whole
    dataset, so ``A`` is the *joint* probability ``P(S, x* in D) = T P(S | x*)``. With
    ``P(S | x*)`` read as the conditional -- as the Remark on P(S|x*) and Section 4.3 do
    ("predict positively at least 1% of the time when actually training with x*") -- the
    delta-term is ``delta e^-eps (1-T) / (T P(S | x*))``: the printed one divided by ``T``.
    ``form="corrected"`` (default) implements that; ``form="paper"`` the printed
    ``delta e^-eps (1-T) / P(S | x*)``, which is valid only if ``min_tpr`` floors the joint
    probability ``P(S, x* in D)``. Since ``T <= 1`` the corrected bound is never smaller.

    **Vacuity.** In the corrected form the bracket exceeds 1 exactly when
    ``min_tpr > delta``, whatever epsilon and T: an attacker who says "member" less often
    than delta can be explained by the delta-slack alone. Otherwise (paper form: when
    ``delta T >= min_tpr``) the right-hand side is not a probability below 1 and 1.0 is
    returned, with a :class:`~skmip.exceptions.PrivacyWarning`. The theorem holds "so long
    as the right-hand side is positive"; we also return 1.0 where it exceeds 1.

    Computed as ``expit(eps + log(T/(1-T)) - log g)`` so that large epsilon and ``T -> 1``
    saturate at 1 without overflow.

    References
    ----------
    Thudi et al., "Bounding Membership Inference", TMLR 2024: Lemma 3.2, Theorem 3.3 and
    its proof, Remark on P(S|x*), Section 4.3.

    Examples
    --------
    The fixed targets of Section 4.3 (T = 0.5, delta = 1e-5, P(S | x*) >= 1%, epsilon = 3, 2, 1):

    >>> [round(positive_accuracy_bound(e, sampling_rate=0.5, delta=1e-5, min_tpr=0.01), 3)
    ...  for e in (3, 2, 1)]
    [0.953, 0.881, 0.731]

    Figure 1 (delta = 0): as epsilon shrinks the bound falls only to T, so only sampling drives it to 0:

    >>> positive_accuracy_bound([0.1, 5.0], sampling_rate=0.05).round(3).tolist()
    [0.055, 0.887]
    """
    owner = "positive_accuracy_bound"
    epsilon, t, delta, floor = _validate(owner, epsilon, sampling_rate, delta, min_tpr, "min_tpr", form)
    g = _delta_factor(delta, floor, t, form)
    _warn_vacuous(owner, g, "min_tpr")
    # T = 1 gives log-odds inf -> expit(inf) = 1.
    return _out(_round_up_posterior(_posterior_bound(epsilon, _log_odds(t), g), epsilon, t, g))


def negative_accuracy_bound(
    epsilon: ArrayLike,
    *,
    sampling_rate: ArrayLike,
    delta: ArrayLike = 0.0,
    min_tnr: ArrayLike | None = None,
    form: str = "corrected",
):
    r"""Upper bound on MI negative accuracy ``P(x* not in D | S)`` under Poisson sampling and DP.

    Here S is the set of models on which the attacker says "not a member", and the floor
    is on ``P(S | x* not in D)``, the attacker's true-negative rate.

    Parameters
    ----------
    epsilon : float or array_like
        DP epsilon (add/remove-one neighbours), >= 0.
    sampling_rate : float or array_like
        ``T = P_x*(1)`` in (0, 1]. At ``T = 1`` the negative accuracy, and the bound, is 0.
    delta : float or array_like, default=0.0
        DP delta in [0, 1].
    min_tnr : float or array_like, optional
        Floor on ``P(S | x* not in D)``; required when ``delta > 0``.
    form : {"corrected", "paper"}, default="corrected"
        Delta-term with the conditional read of the floor (divided by ``1 - T``) or as printed.

    Returns
    -------
    float or ndarray
        The bound, in [1 - T, 1].

    Raises
    ------
    ValueError
        For a value outside its range, or ``delta > 0`` without ``min_tnr``.

    Warns
    -----
    PrivacyWarning
        Where the bound is vacuous (``delta >= min_tnr``, corrected form); 1.0 is returned.

    Notes
    -----
    Second half of Theorem 3.3 ("a completely analogous proof"), with the roles of
    ``P_x*(1)`` and ``P_x*(0)`` exchanged:

    .. math::
        P(x^* \notin D \mid S) \le \Bigl(1 + e^{-\varepsilon}\tfrac{T}{1-T}
        \bigl(1 - \tfrac{\delta}{P(S\mid x^*\notin D)}\bigr)\Bigr)^{-1}.

    The printed statement has ``delta e^-eps P_x*(1) / P(S | x* not in D)``; the same
    joint-versus-conditional slip as in :func:`positive_accuracy_bound` puts a factor
    ``1/(1-T)`` in the corrected form. With delta = 0 this equals one minus the lower
    bound on positive accuracy of the arXiv version's Theorem 1 (its Corollary 1).

    References
    ----------
    Thudi et al., TMLR 2024, Theorem 3.3 (negative accuracy); arXiv version, Corollary 1.

    Examples
    --------
    At T = 1/2 the two bounds coincide (the MI-accuracy bound of Humphries et al.):

    >>> round(negative_accuracy_bound(1.0, sampling_rate=0.5), 4)
    0.7311
    >>> round(positive_accuracy_bound(1.0, sampling_rate=0.5), 4)
    0.7311
    """
    owner = "negative_accuracy_bound"
    epsilon, t, delta, floor = _validate(owner, epsilon, sampling_rate, delta, min_tnr, "min_tnr", form)
    g = _delta_factor(delta, floor, 1.0 - t, form)
    _warn_vacuous(owner, g, "min_tnr")
    bound = _posterior_bound(epsilon, -_log_odds(t), g)
    # T = 1: x* is always in D, so no "non-member" answer is ever right (and eps = inf
    # would give inf - inf above).
    bound = np.where(t == 1.0, 0.0, bound)
    return _out(bound)


def epsilon_for_positive_accuracy(
    target: ArrayLike,
    *,
    sampling_rate: ArrayLike,
    delta: ArrayLike = 0.0,
    min_tpr: ArrayLike | None = None,
    form: str = "corrected",
):
    r"""Largest epsilon whose Theorem 3.3 bound on positive accuracy is at most ``target``.

    Parameters
    ----------
    target : float or array_like
        Desired bound on ``P(x* in D | S)``, in (0, 1]; ``1`` gives ``inf``.
    sampling_rate : float or array_like
        ``T = P_x*(1)`` in (0, 1].
    delta : float or array_like, default=0.0
        DP delta of the training algorithm, in [0, 1].
    min_tpr : float or array_like, optional
        Floor on ``P(S | x*)``; required when ``delta > 0``.
    form : {"corrected", "paper"}, default="corrected"
        Which delta-term; see :func:`positive_accuracy_bound`.

    Returns
    -------
    float or ndarray
        ``epsilon >= 0`` (``inf`` where ``target == 1``).

    Raises
    ------
    ValueError
        If a target is unreachable: below the epsilon = 0 bound
        ``1 / (1 + g (1-T)/T)`` (only a lower sampling rate helps), or any target < 1
        where the bound is vacuous (``delta >= min_tpr`` in the corrected form).

    Notes
    -----
    With ``g = 1 - delta/min_tpr`` (corrected) or ``1 - delta T / min_tpr`` (paper), the bound
    is ``expit(eps + log(T/(1-T)) - log g)``, strictly increasing in epsilon when ``g > 0``;
    solving ``bound = target`` gives the closed form

    .. math:: \varepsilon = \log\tfrac{\text{target}}{1-\text{target}} + \log\tfrac{1-T}{T} + \log g .

    This is how Section 4.3 and Figures 5-6 "interpolate across the values of P_x*(1) and
    epsilon achieving the bound".

    References
    ----------
    Thudi et al., TMLR 2024, Theorem 3.3 and Section 4.3.

    Examples
    --------
    Inverting the Section 4.3 target 0.881 (epsilon = 2 at T = 0.5) at other sampling rates:

    >>> t = positive_accuracy_bound(2.0, sampling_rate=0.5)
    >>> round(epsilon_for_positive_accuracy(t, sampling_rate=0.5), 6)
    2.0
    >>> epsilon_for_positive_accuracy(t, sampling_rate=[0.1, 0.3]).round(3).tolist()
    [4.197, 2.847]
    """
    owner = "epsilon_for_positive_accuracy"
    target = _as_array(owner, "target", target, 0.0, 1.0, low_open=True,
                       why="it is a bound on a probability; 1 puts no constraint on epsilon.")
    _, t, delta, floor = _validate(owner, 0.0, sampling_rate, delta, min_tpr, "min_tpr", form)
    target, t, delta, floor = np.broadcast_arrays(target, t, delta, floor)
    g = _delta_factor(delta, floor, t, form)
    bad = (g <= 0) & (target < 1)
    if np.any(bad):
        raise ValueError(
            f"{owner}: no epsilon reaches target {target[bad].tolist()!r}: with delta >= min_tpr "
            "(corrected form) the bound of Theorem 3.3 is vacuous for every epsilon. Raise "
            "min_tpr or lower delta."
        )
    with np.errstate(invalid="ignore"):
        # The inverse of _posterior_bound: eps = logit(target) - log-odds(T) + log g.
        eps = _log_odds(target) - _log_odds(t) + np.log(np.where(g > 0, g, 1.0))
    eps = np.where(target == 1.0, np.inf, eps)
    # Round-off when the target equals the epsilon = 0 bound exactly: each log-odds carries a
    # few ulps of its argument, magnified by 1 / (p (1 - p)) near 0 and 1.
    with np.errstate(divide="ignore"):
        slack = 1e-12 + 4 * np.finfo(np.float64).eps * (1 / (target * (1 - target)) + 1 / (t * (1 - t)))
    eps = np.where((eps < 0) & (eps > -slack), 0.0, eps)
    if np.any(eps < 0):
        low = 1.0 / (1.0 + g * (1.0 - t) / t)
        idx = np.flatnonzero((eps < 0).ravel())[0]
        raise ValueError(
            f"{owner}: target {target.ravel()[idx]!r} is below what any epsilon gives at "
            f"sampling_rate={t.ravel()[idx]!r}: even epsilon = 0 only guarantees "
            f"{low.ravel()[idx]:.6g} (the bound tends to T as epsilon -> 0, Section 3.4). "
            "Lower the sampling rate or raise the target."
        )
    return _out(eps)


def unlearning_guarantee(
    epsilon: ArrayLike,
    *,
    sampling_rate: ArrayLike,
    delta: ArrayLike = 0.0,
    min_tpr: ArrayLike | None = None,
    form: str = "corrected",
):
    r"""The level B of the B-MI unlearning guarantee (Definition 5.1) that Theorem 3.3 gives.

    Returns ``L``, a lower bound on ``P(x* not in D | S)`` for every attack S: the model is
    ``B``-MI unlearnt for ``x*`` for every ``B <= L`` without retraining.

    Parameters
    ----------
    epsilon : float or array_like
        DP epsilon of the training algorithm, >= 0.
    sampling_rate : float or array_like
        ``T = P_x*(1)`` in (0, 1] (``c/N`` in Corollary 5.2).
    delta : float or array_like, default=0.0
        DP delta; ``form="paper"`` requires 0, as the printed Corollary does.
    min_tpr : float or array_like, optional
        Floor on ``P(S | x*)``; required when ``delta > 0`` (corrected form).
    form : {"corrected", "paper"}, default="corrected"
        ``"corrected"``: ``L = 1 - positive_accuracy_bound`` (footnote 5), which with
        delta = 0 is ``(1 + e^{+eps} T/(1-T))^-1``. ``"paper"``: Corollary 5.2 as printed,
        ``(1 + e^{-eps} T/(1-T))^-1``.

    Returns
    -------
    float or ndarray
        ``L``; in [0, 1 - T] for the corrected form (the printed form exceeds ``1 - T``).

    Raises
    ------
    ValueError
        For values out of range, or ``delta > 0`` with ``form="paper"``.

    Notes
    -----
    Definition 5.1: an algorithm is B-MI unlearnt for ``x*`` if ``P(x* not in D | S) >= B``.
    Any upper bound U on positive accuracy gives the lower bound ``1 - U`` on
    ``P(x* not in D | S)`` (footnote 5: "This L is given by 1 minus the upper bound on
    positive accuracy"), so ``L = 1 - (1 + e^-eps (1-T)/T)^-1 = (1 + e^{eps} T/(1-T))^-1``.

    The printed Corollary 5.2 has ``e^{-eps}`` instead: that expression is the *upper* bound
    on negative accuracy (Theorem 3.3, second half), not a lower bound on
    ``P(x* not in D | S)``, so it does not imply B-MI unlearning. It also behaves wrongly in
    the limits: as epsilon -> inf (no privacy) it tends to 1 -- perfect deniability -- where
    the true ``L`` tends to 0. The printed form overstates the deletion capacity by a factor
    about ``e^{2 eps}`` for small T. ``form="paper"`` reproduces it (and Figure 7).

    References
    ----------
    Thudi et al., TMLR 2024, Definition 5.1, footnote 5, Corollary 5.2, Figure 7.

    Examples
    --------
    >>> round(unlearning_guarantee(1.0, sampling_rate=0.01), 6)  # 1 - bound
    0.973276
    >>> round(1 - positive_accuracy_bound(1.0, sampling_rate=0.01), 6)
    0.973276
    >>> round(unlearning_guarantee(1.0, sampling_rate=0.01, form="paper"), 6)
    0.996298
    """
    owner = "unlearning_guarantee"
    if form == "paper":
        epsilon, t, delta, _ = _validate(owner, epsilon, sampling_rate, delta, min_tpr, "min_tpr", form)
        if np.any(delta > 0):
            raise ValueError(
                f"{owner}: form='paper' is Corollary 5.2 as printed, which takes delta = 0; got "
                f"delta={delta.tolist()!r}. Use form='corrected' for delta > 0."
            )
        # (1 + e^-eps T/(1-T))^-1 = expit(eps + log(1-T) - log T): the negative-accuracy
        # form with g = 1 (delta = 0).
        return _out(np.where(t == 1.0, 0.0, _posterior_bound(epsilon, -_log_odds(t), np.ones_like(t))))
    bound = positive_accuracy_bound(epsilon, sampling_rate=sampling_rate, delta=delta,
                                    min_tpr=min_tpr, form=form)
    return _out(1.0 - np.asarray(bound))


def deletion_capacity(
    B: ArrayLike,
    epsilon: ArrayLike,
    *,
    sampling_rate: ArrayLike,
    delta: ArrayLike = 0.0,
    min_tpr: ArrayLike | None = None,
    form: str = "corrected",
):
    r"""How many deletion requests can be declined while keeping B-MI unlearning (Corollary 5.2).

    Parameters
    ----------
    B : float or array_like
        Required level of Definition 5.1, in (0, 1].
    epsilon : float or array_like
        DP epsilon of the training algorithm, >= 0.
    sampling_rate : float or array_like
        ``T = c/N``: every record of the pool of N is drawn independently with this
        probability (c is the expected training-set size).
    delta : float or array_like, default=0.0
        DP delta (``form="paper"`` requires 0).
    min_tpr : float or array_like, optional
        Floor on ``P(S | x*)`` for every deleted record, required when ``delta > 0``.
    form : {"corrected", "paper"}, default="corrected"
        Which ``L``; see :func:`unlearning_guarantee`.

    Returns
    -------
    float or ndarray
        ``m = floor(ln B / ln L)`` (an integral value): any m or fewer records can be
        declined deletion with ``P(none of them in D | S) >= L^m >= B``. 0 where ``L = 0``;
        ``inf`` where ``L = 1`` (only the printed form, at epsilon = inf).

    Raises
    ------
    ValueError
        For values out of range (see :func:`unlearning_guarantee`).

    Notes
    -----
    Section 5.1: for deletion requests ``x_1, ..., x_m``,
    ``P(all not in D | S) = prod_i P(x_i not in D | S, x_1..x_{i-1} not in D) >= L^m``, because
    conditioning on other records being absent changes the pool but not the product form
    of the sampling, to which Theorem 3.3 is agnostic (footnote 6). ``L^m >= B`` iff
    ``m <= ln B / ln L``. The corrected ``L`` uses ``e^{+eps}`` (see
    :func:`unlearning_guarantee`); the printed Corollary's ``e^{-eps}`` overstates the capacity.

    References
    ----------
    Thudi et al., TMLR 2024, Definition 5.1, Section 5.1, Corollary 5.2, Figure 7.

    Examples
    --------
    Figure 7's setting (B = 0.8, N = 10000, epsilon = 1) at expected size c = 100:

    >>> deletion_capacity(0.8, 1.0, sampling_rate=100 / 10000)
    8.0
    >>> deletion_capacity(0.8, 1.0, sampling_rate=100 / 10000, form="paper")
    60.0
    """
    owner = "deletion_capacity"
    B = _as_array(owner, "B", B, 0.0, 1.0, low_open=True,
                  why="B is a probability level of Definition 5.1.")
    L = np.asarray(unlearning_guarantee(epsilon, sampling_rate=sampling_rate, delta=delta,
                                        min_tpr=min_tpr, form=form))
    B, L = np.broadcast_arrays(B, L)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(B) / np.log(L)
    # B = 1 asks for certainty: nothing can be declined. L = 0: no deniability at all.
    ratio = np.where((B == 1.0) | (L == 0.0), 0.0, np.where(L == 1.0, np.inf, ratio))
    # A relative 1e-12 guards floor() against round-off at exact integers.
    return _out(np.floor(ratio * (1 + 1e-12)))
