r"""Maurer & Pontil's empirical Bernstein bound on the coupling bound's per-target means.

For :math:`m \ge 2` i.i.d. values in :math:`[0, c]`, with probability at least
:math:`1 - \delta`, :math:`\mathbb{E}Y \le \bar Y + \sqrt{2V\ln(2/\delta)/m} +
7c\ln(2/\delta)/(3(m-1))` (:func:`skmip.bounds.coupling_eta_upper`, ``bound="maurer-pontil"``).

References
----------
Maurer, A., Pontil, M. (2009). "Empirical Bernstein Bounds and Sample Variance
Penalization", COLT 2009, Theorem 4.
"""

from __future__ import annotations

import numpy as np

from skmip.bounds.coupling_draws import _draw_values
from skmip.bounds.rounding import relative_error, round_up

__all__: list[str] = []


def _bernstein_terms(y, weight, log_term, var_pad=0.0):
    """Mean, variance penalty and range term of Maurer & Pontil's Theorem 4 per target.

    ``y`` has shape (n_targets, m) with values in [0, weight]; ``log_term`` is
    ln(2 / delta), one per target. Returns (mean, var_term,
    second_moment_term, range_term): the bound is mean + var_term + range_term; replacing
    the sample variance by the raw second moment (second_moment_term) gives a bound that
    is no smaller and is non-increasing in the noise scale. ``var_pad`` is added to both
    moments before the square root (their round-off bound).
    """
    m = y.shape[1]
    mean = y.mean(axis=1)
    # Unbiased sample variance: Maurer & Pontil's V_n = sum_{i<j} (Z_i - Z_j)^2 / (n (n-1)).
    var = ((y - mean[:, None]) ** 2).sum(axis=1) / (m - 1)
    second = (y**2).sum(axis=1) / (m - 1)
    # var_pad: a bound on the round-off of the second moments (_ucb_per_target).
    var_term = np.sqrt(2.0 * (var + var_pad) * log_term / m)
    second_term = np.sqrt(2.0 * (second + var_pad) * log_term / m)
    range_term = 7.0 * weight * log_term / (3.0 * (m - 1))
    return mean, var_term, second_term, range_term


def _log_terms(shares, alpha):
    # Theorem 4 at delta = alpha * share for each target (union bound over the targets).
    return np.log(2.0 / (alpha * shares))


def _ucb_per_target(arr, s, weight, alpha, shares, monotone=False):
    y = _draw_values(arr, s, weight)
    m = y.shape[1]
    # Round-off (skmip.bounds.rounding): the values are in [0, c] with relative error
    # gamma_(n_pairs + 12) and rounded up, which a variance is not monotone in, so a (raw or
    # centred) second moment of m of them is off by at most 4 c^2 gamma_(m + n_pairs + 16):
    # added inside the square root. The sum of the three terms is then rounded up.
    var_pad = 4.0 * weight**2 * relative_error(m + arr.shape[2] + 16)
    mean, var_term, second_term, range_term = _bernstein_terms(y, weight, _log_terms(shares, alpha), var_pad)
    ucb = mean + (second_term if monotone else var_term) + range_term
    return round_up(ucb, rel_err=relative_error(m + 16), upper=weight), mean
