r"""The smallest Gaussian noise scale whose coupling bound meets eta: :func:`coupling_noise_scale`.

The search over the scale :math:`s` keeps the confidence statement of
:func:`skmip.bounds.coupling_eta_upper` although :math:`s` is chosen from the same draws (a
fixed grid, searched where the bound is monotone); see the Notes of
:func:`coupling_noise_scale` and :mod:`skmip.bounds.coupling` for the bound itself.

References
----------
Maurer & Pontil (2009), Theorem 4; Izzo et al., Definition 1 and Proposition 2.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.validation import check_eta, check_option

from skmip.bounds.betting import BET_FRACTIONS, betting_passes
from skmip.bounds.rounding import relative_error, round_up
from skmip.bounds.bernstein import _bernstein_terms, _log_terms, _ucb_per_target
from skmip.bounds.coupling_draws import (
    _BOUNDS,
    _JensenBounds,
    _alpha,
    _betting_log_thresholds,
    _check_deltas,
    _check_draws,
    _check_shares,
    _check_weights,
    _prior_weight,
    _smallest_positive,
    _target_blocks,
)

__all__ = ["coupling_noise_scale", "CouplingCalibration"]


class CouplingCalibration(NamedTuple):
    """Result of :func:`coupling_noise_scale`.

    Attributes
    ----------
    noise_scale : float
        The calibrated :math:`s`: add :math:`\\mathcal{N}(0, s^2\\operatorname{diag}(w)^2)`.
    eta_upper : float or None
        The confidence bound on the MIP level at ``noise_scale`` (at most the target eta);
        ``None`` when calibrated to the point estimate (``confidence=None``).
    eta_point : float
        The point estimate :func:`coupling_eta` at ``noise_scale``.
    noise_scale_point : float
        The :math:`s` at which the point estimate alone would meet eta: the ratio
        ``noise_scale / noise_scale_point`` is the price of the confidence statement.
    confidence : float or None
        The confidence level used.
    """

    noise_scale: float
    eta_upper: float | None
    eta_point: float
    noise_scale_point: float
    confidence: float | None


def _point_root(arr, eta, weight, pw=None, bounds=None):
    """The s at which max_x* mean TV equals eta (continuous, non-increasing in s)."""
    from scipy.optimize import brentq

    bounds = _JensenBounds(arr, pw) if bounds is None else bounds

    def excess(log_s):
        return bounds.max_mean(math.exp(log_s), weight) - eta

    floor = weight * float(bounds.inf_share.max())
    if floor >= eta:
        raise ValueError(
            f"coupling_noise_scale: {floor / weight:.3g} of some target's swap distances are "
            f"infinite (a coordinate with zero scale w changes), which alone costs an advantage "
            f"of {floor:.3g} >= eta={eta}: no noise scale can reach eta. Give every coordinate "
            "that varies a positive scale."
        )
    rel = _point_error(arr)
    # As s -> 0 every positive distance counts fully; if even that meets eta, no noise is
    # needed (the point estimate is then met at s = 0).
    if round_up(weight * float(bounds.pos_share.max()), rel_err=rel) <= eta:
        return 0.0
    lo, hi = (math.log(v) for v in bounds.finite_range)
    lo, hi = lo - 2.0, hi + 2.0
    while excess(lo) <= 0:
        lo -= 4.0
    while excess(hi) > 0:
        hi += 4.0
    # Brent's root lands on either side of the exact one; step up from it (the value is
    # non-increasing in s) until the value, rounded up by its round-off bound, meets eta,
    # so the exact value of the formula meets it too (skmip.bounds.rounding).
    s, step = math.exp(brentq(excess, lo, hi, xtol=1e-10, rtol=1e-12)), 2.0**-40
    while round_up(bounds.max_mean(s, weight), rel_err=rel) > eta:
        s, step = s * (1.0 + step), 2.0 * step
    return s


def _point_error(arr):
    """Relative round-off bound of :meth:`_JensenBounds.max_mean` (:mod:`skmip.bounds.rounding`).

    Each TV is ``erf`` (a few ulps) of an argument with three roundings, which moves it by
    at most as many ulps of itself (``x erf'(x) <= erf(x)``); then a (weighted) mean over the
    pairs, the factor ``weight`` and a mean over the draws: sums of non-negative terms. The
    Jensen pruning of the targets costs at most the TV's own error once more.
    """
    return relative_error(int(arr.shape[1]) + int(arr.shape[2]) + 24)


def coupling_noise_scale(
    deltas: ArrayLike,
    eta: float,
    *,
    confidence: float | None = 0.95,
    train_fraction: float = 0.5,
    grid_resolution: int = 128,
    bound: str = "betting",
    weights: ArrayLike | None = None,
    target_shares: ArrayLike | None = None,
) -> CouplingCalibration:
    r"""Smallest Gaussian noise scale whose coupling bound on the MIP level meets ``eta``.

    Parameters
    ----------
    deltas : array_like of shape (n_targets, n_draws) or (n_targets, n_draws, n_pairs)
        Whitened swap distances (module docstring), one row per target :math:`x^*`; every
        row of :math:`\mathcal{D}` must be a target (Definition 1 asks for each of them).
    eta : float
        Target MIP level in (0, 0.5].
    confidence : float or None, default=0.95
        Calibrate so that the simultaneous upper confidence bound of
        :func:`coupling_eta_upper` is at most ``eta``. ``None`` calibrates the point estimate
        :func:`coupling_eta` instead: right only when ``deltas`` enumerates every
        :math:`(D_{out}, e)` (an exact expectation), never silently for random draws.
    train_fraction : float, default=0.5
        :math:`q = k/n`.
    grid_resolution : int, default=128
        With a confidence level, the scale is searched on the fixed grid
        :math:`s \in \{2^{j/G}\}` with :math:`G` = ``grid_resolution`` (steps of about
        0.5% at 128); see Notes for why a fixed grid.
    bound : {"betting", "maurer-pontil"}, default="betting"
        The confidence bound of :func:`coupling_eta_upper`.
    weights : array_like, optional
        Pair weights of exhaustive deltas (:func:`coupling_eta_per_target`); only with
        ``confidence=None``, since weighted values are an enumeration, not random draws.
    target_shares : array_like of shape (n_targets,), optional
        The shares of :math:`\alpha` per target, as in :func:`coupling_eta_upper` (fixed
        before the draws; ``None``: even). Ignored with ``confidence=None``.

    Returns
    -------
    CouplingCalibration
        ``noise_scale`` (the calibrated :math:`s`), ``eta_upper`` (the bound at it, or
        ``None``), ``eta_point``, ``noise_scale_point`` and ``confidence``.

    Raises
    ------
    ValueError
        On invalid arguments; or when no scale can meet ``eta``: with :math:`m` draws and
        :math:`n_t` targets the confidence term alone is
        :math:`7c\ln(2n_t/\alpha)/(3(m-1))`, so ``eta`` below it needs more draws (the
        message says how many).

    Notes
    -----
    *Choosing s from the data it is tested on.* A confidence bound valid at each fixed
    :math:`s` says nothing, by itself, at an :math:`s` chosen after looking at the data. The
    search is built so that it does. The true per-target mean :math:`\mu_x(s)` is
    non-increasing in :math:`s`. The returned :math:`\hat s` is a point of the fixed grid
    such that the bound is at most ``eta`` at *every* grid point :math:`\ge \hat s`. If
    :math:`\mu_x(\hat s) > \eta` for some :math:`x`, let :math:`g_x` be the largest grid
    point with :math:`\mu_x(g_x) > \eta` (a fixed number, not a random one): then
    :math:`g_x \ge \hat s`, so the bound at :math:`g_x` is at most :math:`\eta < \mu_x(g_x)`:
    the fixed-point bound for target :math:`x` failed, which has probability at most
    :math:`\alpha/n_t` (:math:`\alpha\pi_x` with ``target_shares``). Summing over targets,
    :math:`P(\max_x \mu_x(\hat s) > \eta) \le \alpha`.

    To check every grid point above :math:`\hat s` in finitely many steps, the search first
    finds, by bisection, the grid point :math:`s_{top}` where a *monotone* relaxation of the
    bound (the raw second moment :math:`\frac{1}{m-1}\sum Y_r^2 \ge V` in place of the
    sample variance; each :math:`Y_r` is non-increasing in :math:`s`) meets ``eta``; it
    bounds Theorem 4's value at every :math:`s \ge s_{top}`. It then walks down the grid
    from :math:`s_{top}` while Theorem 4's bound stays at most ``eta``.

    With ``bound="betting"`` no relaxation is needed: with its bets fixed, the betting bound
    is non-decreasing in every draw value (:mod:`skmip.bounds.betting`), and every draw value
    is non-increasing in :math:`s`, so the bound is non-increasing in :math:`s` and the
    smallest grid point where it meets ``eta`` is found by bisection.

    With ``confidence=None`` the point estimate is solved by Brent's method (it is
    continuous and non-increasing in :math:`s`), without a grid.

    References
    ----------
    Maurer & Pontil (2009), Theorem 4; Izzo et al., Definition 1 and Proposition 2.

    Examples
    --------
    Exhaustive deltas: the mean of :math:`n = 4` scalars :math:`\{0, 1, 2, 3\}`, :math:`k = 2`,
    whitened by :math:`w = 1`. Swapping :math:`e` for :math:`x^*` moves the mean by
    :math:`|e - x^*|/k`, and :math:`e` is uniform on the other three rows.

    >>> x = np.array([0.0, 1.0, 2.0, 3.0])
    >>> deltas = [[abs(e - t) / 2 for e in x if e != t] for t in x]
    >>> cal = coupling_noise_scale(deltas, 0.1, confidence=None)
    >>> round(cal.noise_scale, 3), round(cal.eta_point, 6)
    (1.963, 0.1)
    """
    owner = "coupling_noise_scale"
    arr = _check_deltas(owner, deltas)
    eta = check_eta(owner, float(eta))
    weight = _prior_weight(owner, train_fraction)
    pw = _check_weights(owner, weights, arr)
    if pw is not None and confidence is not None:
        raise ValueError(
            f"{owner}: weights describe exhaustive deltas, whose weighted mean is the exact "
            f"expectation; pass confidence=None with them (got confidence={confidence!r})."
        )
    if eta >= weight:
        # min(q, 1-q) * TV <= min(q, 1-q): any scale (even no noise) meets such an eta.
        s0 = 0.0
        return CouplingCalibration(s0, None if confidence is None else weight, weight, s0, confidence)
    bounds = _JensenBounds(arr, pw)
    s_point = _point_root(arr, eta, weight, pw, bounds)
    if confidence is None:
        # Rounded up: with exhaustive deltas this is the exact level that mip_bound_ states.
        eta_point = round_up(bounds.max_mean(s_point, weight), rel_err=_point_error(arr), upper=weight)
        return CouplingCalibration(s_point, None, eta_point, s_point, None)

    alpha = _alpha(owner, confidence)
    check_option(owner, "bound", bound, _BOUNDS)
    _check_draws(owner, arr)
    if not (isinstance(grid_resolution, (int, np.integer)) and grid_resolution >= 1):
        raise ValueError(f"{owner}: grid_resolution must be an integer >= 1; got {grid_resolution!r}.")
    G = int(grid_resolution)
    shares = _check_shares(owner, target_shares, arr.shape[0])
    if bound == "betting":
        return _betting_scale(arr, eta, weight, alpha, shares, G, s_point, confidence, bounds)
    return _maurer_pontil_scale(arr, eta, weight, alpha, shares, G, s_point, confidence)


def _no_scale_advice(inf_share, m, need):
    """What to do when no noise scale meets eta: name the cause (issue 31: a refusal advised
    "n_rounds >= 43" after 400 rounds, when infinite distances were the cause)."""
    more = f"n_rounds >= {max(need, m + 1)} is necessary"
    if inf_share > 0:
        return (
            f"Up to {inf_share:.3g} of a target's swap distances are infinite: distances the "
            "certificate could not bound, which count fully at every noise scale, so more rounds "
            "do not remove them. Bound them: scale or clip the features (docs: 'Bound your "
            "features'), or pick an engine that certifies these swaps"
            + (f"; even then {more}." if need > m else ".")
        )
    return f"Estimate more draws: {more}."


def _maurer_pontil_scale(arr, eta, weight, alpha, shares, G, s_point, confidence):
    """coupling_noise_scale with Maurer & Pontil's bound: bisection on the fixed grid with its
    monotone relaxation, then a walk down with Theorem 4's own bound (Notes of
    :func:`coupling_noise_scale`)."""
    owner = "coupling_noise_scale"
    n_t, m = arr.shape[0], arr.shape[1]
    arr = np.asarray(arr, dtype=np.float64)  # Maurer-Pontil reads the whole array
    log_term = _log_terms(shares, alpha)

    # As s -> inf each Y_r tends to weight * (its fraction of infinite distances); the
    # monotone bound there is its infimum. If that already exceeds eta, no s works.
    y_inf = weight * np.isinf(arr).mean(axis=2)
    mean_i, _, second_i, range_term = _bernstein_terms(y_inf, weight, log_term)
    floor = float((mean_i + second_i + range_term).max())
    if floor >= eta:
        need = 1 + math.ceil(7.0 * weight * log_term.max() / (3.0 * eta))
        raise ValueError(
            f"{owner}: with {m} draws per target and {n_t} targets at confidence {confidence}, "
            f"the bound cannot go below {floor:.4g} > eta={eta} at any noise scale (Maurer & "
            f"Pontil's range term is 7 c ln(2 n_t / alpha) / (3 (m - 1)) = {range_term.max():.4g}). "
            + _no_scale_advice(float(np.isinf(arr).mean(axis=(1, 2)).max()), m, need)
        )

    def ucb(j, monotone):
        return float(_ucb_per_target(arr, 2.0 ** (j / G), weight, alpha, shares, monotone)[0].max())

    # Bisection for the first grid point where the monotone bound meets eta. It is at least
    # the point estimate's root, since the bound exceeds the mean.
    if s_point > 0:
        lo = math.floor(G * math.log2(s_point))
    else:  # the point estimate needs no noise; start below every positive distance
        smallest = _smallest_positive(arr)
        lo = math.floor(G * (math.log2(smallest) - 11)) if np.isfinite(smallest) else 0
    hi = lo + G
    while ucb(hi, True) > eta:
        lo, hi = hi, hi + 2 * (hi - lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ucb(mid, True) > eta:
            lo = mid
        else:
            hi = mid
    # Walk down from s_top with Theorem 4's own bound; stop at the first grid point above eta.
    # Below j_floor every finite positive distance exceeds 2**10 s, where erf(. / sqrt 8)
    # is 1.0 in double precision: the bound no longer changes, so reaching j_floor means
    # every smaller grid point passes too, and no noise is needed.
    smallest = _smallest_positive(arr)
    j_floor = math.floor(G * (math.log2(smallest) - 10)) if np.isfinite(smallest) else hi
    j = hi
    while j > j_floor and ucb(j - 1, False) <= eta:
        j -= 1
    s_hat = 0.0 if j <= j_floor else 2.0 ** (j / G)
    upper, means = _ucb_per_target(arr, s_hat, weight, alpha, shares)
    return CouplingCalibration(s_hat, float(upper.max()), float(means.max()), s_point, float(confidence))


def _betting_scale(arr, eta, weight, alpha, shares, G, s_point, confidence, bounds):
    """coupling_noise_scale with the betting bound: bisection on the fixed grid (monotone)."""
    owner = "coupling_noise_scale"
    n_t, m = arr.shape[0], arr.shape[1]
    log_threshold = _betting_log_thresholds(shares, alpha)

    def ok(j):
        return bounds.all_pass(2.0 ** (j / G), weight, eta, log_threshold)

    # As s -> inf each draw value tends to weight * (its fraction of infinite distances),
    # from above: if the bound fails there, it fails at every s.
    if not all(betting_passes(weight * np.isinf(block).mean(axis=2), eta, weight, log_threshold[idx]).all()
               for idx, block in _target_blocks(arr)):
        # With every draw 0 the bound is c (exp(L/m) - 1) / 0.95: below eta iff m exceeds this.
        need = math.floor(log_threshold.max() / math.log1p(BET_FRACTIONS[0] * eta / weight)) + 1
        raise ValueError(
            f"{owner}: with {m} draws per target and {n_t} targets at confidence {confidence}, "
            f"the betting bound cannot reach eta={eta} at any noise scale. "
            + _no_scale_advice(float(bounds.inf_share.max()), m, need)
        )
    smallest = bounds.finite_range[0]
    # Below j_floor every finite positive distance exceeds 2**10 s, where erf(. / sqrt 8) is
    # 1.0 in double precision: the bound no longer changes below it.
    j_floor = math.floor(G * (math.log2(smallest) - 10)) if np.isfinite(smallest) else 0
    lo = math.floor(G * math.log2(s_point)) if s_point > 0 else j_floor
    while lo > j_floor and ok(lo):
        lo -= G
    lo = max(lo, j_floor)
    if ok(lo):  # saturated: no noise is needed
        s_hat = 0.0
    else:
        hi = lo + G
        while not ok(hi):
            lo, hi = hi, hi + 2 * (hi - lo)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid
        s_hat = 2.0 ** (hi / G)
    upper = bounds.max_upper(s_hat, weight, log_threshold)
    return CouplingCalibration(s_hat, min(float(upper), eta), bounds.max_mean(s_hat, weight), s_point,
                               float(confidence))
