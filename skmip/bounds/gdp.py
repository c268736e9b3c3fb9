r"""mu-GDP: the Gaussian trade-off, its composition, and its conversions to eta and to DP.

A mechanism is mu-GDP (Dong, Roth & Su) when telling two neighbouring datasets apart is at
least as hard as telling :math:`\mathcal{N}(0, 1)` from :math:`\mathcal{N}(\mu, 1)`: its
trade-off curve is at least :math:`g_\mu` (:func:`gaussian_tradeoff`). The same curve
defines mu-GMIP (Leemann et al., Definition 4.3), so the conversions below serve both; the
noisy-SGD side (Eqs. 8-10) is :mod:`skmip.bounds.gmip`, whose conventions apply here.

References
----------
Dong, J., Roth, A., Su, W. J. "Gaussian Differential Privacy". JRSS-B 84(1), 2022.
Corollary 2.13 (mu-GDP to (epsilon, delta)-DP), Corollary 3.3 (composition).

Leemann, T., Pawelczyk, M., Kasneci, G. "Gaussian Membership Inference Privacy".
NeurIPS 2023. Definition 4.3, Theorem 4.2.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, stats

from skmip.bounds.rounding import relative_error, round_up

from skmip.bounds._common import scalar_or_array as _out

__all__ = [
    "gaussian_tradeoff",
    "gaussian_compose",
    "mu_to_eta",
    "gdp_to_dp",
    "dp_to_gdp_mu",
]


def _check_nonneg(name, value, allow_inf=False):
    arr = np.asarray(value, dtype=np.float64)
    bad = np.isnan(arr) | (arr < 0)
    if not allow_inf:
        bad |= np.isinf(arr)
    if np.any(bad):
        raise ValueError(f"{name} must be >= 0{'' if allow_inf else ' and finite'}; got {arr.tolist()!r}.")
    return arr


def _check_positive(name, value, allow_inf=False):
    arr = _check_nonneg(name, value, allow_inf=allow_inf)
    if np.any(arr == 0):
        raise ValueError(f"{name} must be > 0; got {arr.tolist()!r}.")
    return arr


def _check_alpha(alpha):
    alpha = np.asarray(alpha, dtype=np.float64)
    if np.any(~((alpha >= 0) & (alpha <= 1))):
        raise ValueError(
            f"alpha must be in [0, 1]; got {alpha.tolist()!r}. alpha is the attacker's false "
            "positive rate."
        )
    return alpha


def gaussian_tradeoff(alpha, mu):
    r"""The Gaussian trade-off :math:`g_\mu(\alpha) = \Phi(\Phi^{-1}(1 - \alpha) - \mu)`.

    Parameters
    ----------
    alpha : float or array_like
        False positive rate of the attacker, in [0, 1].
    mu : float or array_like
        Privacy parameter :math:`\mu \ge 0` (``inf`` allowed: no privacy).

    Returns
    -------
    float or ndarray
        The smallest false negative rate any test achieves at false positive rate
        ``alpha`` when telling :math:`N(0, 1)` from :math:`N(\mu, 1)`; broadcast over
        the inputs. The attacker's best true positive rate is ``1 - g``.

    Raises
    ------
    ValueError
        If ``alpha`` is outside [0, 1] or ``mu`` is negative.

    Notes
    -----
    Definition 4.3 of Leemann et al. (mu-GMIP) and of Dong et al. (mu-GDP): the two
    notions share this curve and differ in the attacker it bounds (Leemann Remark 4.1).

    References
    ----------
    Leemann et al., Definition 4.3; Dong et al., Definition 2.4.

    Examples
    --------
    >>> round(gaussian_tradeoff(0.05, 1.0), 4)  # TPR 0.2595 at FPR 5% for mu = 1
    0.7405
    >>> gaussian_tradeoff([0.0, 1.0], 0.5).tolist()
    [1.0, 0.0]
    """
    alpha = _check_alpha(alpha)
    mu = _check_nonneg("mu", mu, allow_inf=True)
    with np.errstate(invalid="ignore"):
        out = stats.norm.cdf(stats.norm.isf(alpha) - mu)
    # Phi(inf - inf): at alpha = 0 the attacker never says "member", whatever mu is.
    out = np.where(alpha == 0, 1.0, out)
    return _out(out)



def gaussian_compose(mu, n_steps=1):
    r"""Composition of ``n_steps`` mu-Gaussian trade-offs: :math:`\sqrt{T}\mu`.

    Parameters
    ----------
    mu : float or array_like
        Per-step parameter; an array along the last axis is composed as
        :math:`\sqrt{\sum_i \mu_i^2}` when ``n_steps`` is None.
    n_steps : int or None, default=1
        Number of identical steps.

    Returns
    -------
    float or ndarray
        The composed parameter.

    Notes
    -----
    Dong et al., Corollary 3.3: :math:`G_{\mu_1}\otimes\cdots\otimes G_{\mu_T} =
    G_{\sqrt{\sum\mu_i^2}}`. For GMIP this describes an attacker who sees the averaged
    gradients of ``n_steps`` steps that all contain the target, each an independent
    Gaussian test (Leemann Appendix D.3, used for Fig. 2c); without subsampling it is
    the analytic curve of a k-step GLiR audit.

    References
    ----------
    Dong et al., Corollary 3.3; Leemann et al., §5.2, Fig. 2c.

    Examples
    --------
    >>> gaussian_compose(0.5, n_steps=4)
    1.0
    >>> round(gaussian_compose([0.3, 0.4], n_steps=None), 6)
    0.5
    """
    mu = _check_nonneg("mu", mu, allow_inf=True)
    if n_steps is None:
        return _out(np.sqrt(np.sum(mu**2, axis=-1)))
    return _out(np.sqrt(_check_nonneg("n_steps", n_steps)) * mu)


def mu_to_eta(mu):
    r"""Largest membership advantage under a mu-Gaussian trade-off: :math:`\Phi(\mu/2) - 1/2`.

    Parameters
    ----------
    mu : float or array_like
        mu-GMIP (or mu-GDP) parameter.

    Returns
    -------
    float or ndarray
        :math:`\eta`: no attacker guesses membership (balanced prior) with accuracy above
        :math:`1/2 + \eta`, so the algorithm is also eta-MIP in the sense of Izzo et al.

    Notes
    -----
    Accuracy at FPR :math:`\alpha` is :math:`(1 - \alpha + 1 - g_\mu(\alpha))/2`, largest
    at :math:`\alpha = \Phi(-\mu/2)`, the symmetric point of the Gaussian curve.

    References
    ----------
    Leemann et al., Definition 4.3; Izzo et al., Definition 1.

    Examples
    --------
    >>> round(mu_to_eta(1.0), 5)
    0.19146
    """
    mu = _check_nonneg("mu", mu, allow_inf=True)
    # ndtr to a few ulps of a value <= 1, one subtraction: rounded up by that bound.
    return _out(round_up(stats.norm.cdf(mu / 2) - 0.5, abs_err=relative_error(6), upper=0.5))


def _gdp_delta(eps, mu):
    # e^eps * Phi(-eps/mu - mu/2) in log space: for large mu the factors overflow and
    # underflow (inf * 0) long before their product does.
    return stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps + stats.norm.logcdf(-eps / mu - mu / 2))


def gdp_to_dp(mu, delta):
    r"""The epsilon at which mu-GDP gives (epsilon, delta)-DP (Dong et al., Cor. 2.13).

    Solves :math:`\delta = \Phi(-\epsilon/\mu + \mu/2) - e^{\epsilon}\Phi(-\epsilon/\mu - \mu/2)`
    for :math:`\epsilon \ge 0`.

    Parameters
    ----------
    mu : float
        GDP parameter, > 0.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        epsilon (0 when even epsilon = 0 meets ``delta``).

    Raises
    ------
    ValueError
        If ``mu`` is not positive or ``delta`` is not in (0, 1).

    References
    ----------
    Dong et al., Corollary 2.13.

    Examples
    --------
    >>> eps = gdp_to_dp(1.0, 1e-5)
    >>> round(eps, 3)
    4.377
    >>> bool(abs(_gdp_delta(eps, 1.0) - 1e-5) < 1e-12)
    True
    """
    mu = float(_check_positive("mu", mu))
    delta = float(delta)
    if not 0 < delta < 1:
        raise ValueError(f"gdp_to_dp: delta must be in (0, 1); got {delta!r}.")
    if _gdp_delta(0.0, mu) <= delta:
        return 0.0
    hi = 1.0
    while _gdp_delta(hi, mu) > delta:
        hi *= 2.0
    return float(optimize.brentq(lambda e: _gdp_delta(e, mu) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12))


def dp_to_gdp_mu(epsilon, delta):
    r"""The largest mu whose mu-GDP (or Gaussian mechanism with sensitivity/std = mu) is (epsilon, delta)-DP.

    The inverse of :func:`gdp_to_dp` in mu: the root of
    :math:`\Phi(\mu/2 - \epsilon/\mu) - e^{\epsilon}\Phi(-\mu/2 - \epsilon/\mu) = \delta`.

    Parameters
    ----------
    epsilon : float
        Privacy loss, > 0 and finite.
    delta : float
        Failure probability in (0, 1).

    Returns
    -------
    float
        :math:`\mu^*`.

    Raises
    ------
    ValueError
        If ``epsilon`` is not positive and finite or ``delta`` is not in (0, 1).

    Notes
    -----
    A Gaussian mechanism with L2 sensitivity :math:`\Delta` and noise std :math:`s` is
    (epsilon, delta)-DP if and only if the displayed inequality holds with
    :math:`\mu = \Delta/s` (Balle & Wang 2018, Theorem 8, the "analytic Gaussian
    mechanism"); it is the same curve as Dong, Roth & Su's Corollary 2.13, so
    :math:`\mu^*` is also the largest GDP parameter a composition may have. The left side
    increases in :math:`\mu`; the root is bracketed and found by Brent's method.

    References
    ----------
    Balle & Wang (2018), Theorem 8; Dong, Roth & Su (2022), Corollary 2.13.

    Examples
    --------
    >>> round(dp_to_gdp_mu(gdp_to_dp(1.0, 1e-5), 1e-5), 6)
    1.0
    """
    epsilon, delta = float(epsilon), float(delta)
    if not (0 < epsilon < np.inf):
        raise ValueError(f"dp_to_gdp_mu: epsilon must be positive and finite; got {epsilon!r}.")
    if not 0 < delta < 1:
        raise ValueError(f"dp_to_gdp_mu: delta must be in (0, 1); got {delta!r}.")
    hi = 1.0
    while _gdp_delta(epsilon, hi) < delta:
        hi *= 2.0
    return float(optimize.brentq(lambda m: _gdp_delta(epsilon, m) - delta, 1e-12, hi, xtol=1e-14, rtol=1e-12))


def _solve_sigma(mu_of_sigma, mu):
    """Smallest sigma >= 0 with mu_of_sigma(sigma) <= mu (mu_of_sigma decreasing)."""
    if mu_of_sigma(0.0) <= mu:
        return 0.0
    hi = 1.0
    while mu_of_sigma(hi) > mu:
        hi *= 2.0
        if hi > 1e12:
            raise ValueError(f"no finite noise reaches mu={mu!r}.")
    return float(optimize.brentq(lambda s: mu_of_sigma(s) - mu, 0.0, hi, xtol=1e-10, rtol=1e-10))
