r"""Gaussian membership-inference privacy (mu-GMIP) of noisy SGD, and mu-GDP for comparison.

Closed forms of Leemann, Pawelczyk & Kasneci, "Gaussian Membership Inference Privacy"
(``shared/papers/leemann-gaussian-membership-inference-privacy.txt``): the trade-off of one
noisy-SGD step (Theorem 5.1, Eq. 8), its Gaussian limit (Corollary 5.1, Eq. 9), the
composition over training (Lemma 5.1, Eq. 10), and the matching mu-GDP accounting of
Dong, Roth & Su, "Gaussian Differential Privacy" (JRSS-B 2022) that Leemann et al. compare
against (§6.2).

Conventions
-----------
*Noise.* Noisy SGD clips each per-sample gradient to norm ``C`` and adds Gaussian noise.
``tau`` is the standard deviation of the noise on the **mean** gradient of a batch (the
paper's :math:`\tau`); ``noise_multiplier`` :math:`\sigma` is Opacus' convention, the
standard deviation of the noise on the **sum** of the clipped gradients divided by ``C``.
So :math:`\tau = \sigma C / n` for batch size :math:`n`, and the paper's effective batch
size :math:`n_{\mathrm{eff}} = n + \tau^2 n^2 / C^2` is :math:`n + \sigma^2`.

*Neighbouring.* f-MIP compares a training set containing the target with one where a
fresh point takes its place (Leemann Eq. 3), i.e. *replace-one* neighbours, the relation
of Dong et al.'s NoisySGD. Replacing one clipped gradient moves the sum by up to
:math:`2C`, so one step is :math:`2/\sigma`-GDP in Opacus units (the authors' code:
``sigma = n*tau/(2*C); mu_step = 1/sigma``).

References
----------
Leemann, T., Pawelczyk, M., Kasneci, G. "Gaussian Membership Inference Privacy".
NeurIPS 2023. Definition 4.3, Theorem 4.2, Theorem 5.1 (Eq. 8), Corollary 5.1 (Eq. 9),
Lemma 5.1 (Eq. 10), §6.2.

Dong, J., Roth, A., Su, W. J. "Gaussian Differential Privacy". JRSS-B 84(1), 2022.
Corollary 2.13 (mu-GDP to (epsilon, delta)-DP), Corollary 3.3 (composition),
Corollary 5.4 (the NoisySGD CLT that Leemann Eq. 10 restates).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from skmip.bounds._common import scalar_or_array as _out
from skmip.bounds.gdp import (
    _check_alpha,
    _check_nonneg,
    _check_positive,
    _solve_sigma,
    dp_to_gdp_mu,
    gaussian_compose,
    gaussian_tradeoff,
    gdp_to_dp,
    mu_to_eta,
)

__all__ = [
    "gaussian_tradeoff",
    "gmip_effective_batch_size",
    "gmip_tradeoff",
    "gmip_mu_step",
    "gmip_compose",
    "gaussian_compose",
    "gmip_mu",
    "gdp_mu",
    "mu_to_eta",
    "gdp_to_dp",
    "dp_to_gdp_mu",
    "gmip_noise_multiplier",
    "gdp_noise_multiplier",
]


def gmip_effective_batch_size(n, tau=0.0, clip_norm=np.inf):
    r"""The effective batch size :math:`n_{\mathrm{eff}} = n + \tau^2 n^2 / C^2` of Theorem 5.1.

    Parameters
    ----------
    n : float or array_like
        Batch size (number of per-sample gradients averaged in one step), :math:`n > 1`.
    tau : float or array_like, default=0.0
        Standard deviation of the Gaussian noise added to the mean gradient.
    clip_norm : float or array_like, default=inf
        Per-sample clipping norm :math:`C`. Without clipping (``inf``) the noise earns
        nothing in this bound: the gradient covariance is then unbounded.

    Returns
    -------
    float or ndarray
        :math:`n_{\mathrm{eff}}`.

    Notes
    -----
    Why noise acts like a larger batch: clipping to norm :math:`C` gives gradient
    covariance :math:`\Sigma \preceq C^2 I`, so the noise :math:`\tau^2 I` dominates
    :math:`s\Sigma` with :math:`s = \tau^2/C^2`; replacing it by :math:`s\Sigma` only helps
    the attacker (the difference is independent noise, post-processing). With noise
    :math:`s\Sigma` the mean of :math:`n` gradients, rescaled by :math:`n/n_{\mathrm{eff}}`,
    has exactly the law of the mean of :math:`n_{\mathrm{eff}}` noiseless gradients under
    both hypotheses (means :math:`\mu` vs :math:`\mu + (\theta' - \mu)/n_{\mathrm{eff}}`,
    covariances :math:`\Sigma/n_{\mathrm{eff}}` vs
    :math:`(n_{\mathrm{eff}} - 1)\Sigma/n_{\mathrm{eff}}^2`). In Opacus units
    (:math:`\tau = \sigma C/n`), :math:`n_{\mathrm{eff}} = n + \sigma^2`.

    References
    ----------
    Leemann et al., Theorem 5.1.

    Examples
    --------
    >>> gmip_effective_batch_size(100, tau=0.01, clip_norm=1.0)  # sigma = 1
    101.0
    """
    n = _check_positive("n", n)
    tau = _check_nonneg("tau", tau)
    clip_norm = _check_positive("clip_norm", clip_norm, allow_inf=True)
    return _out(n + tau**2 * n**2 / clip_norm**2)


def _ncx2_cdf(x, df, nc):
    return np.where(nc > 0, stats.ncx2.cdf(x, df, np.maximum(nc, 1e-300)), stats.chi2.cdf(x, df))


def _ncx2_ppf(q, df, nc):
    return np.where(nc > 0, stats.ncx2.ppf(q, df, np.maximum(nc, 1e-300)), stats.chi2.ppf(q, df))


def gmip_tradeoff(alpha, n, d, K=None, tau=0.0, clip_norm=np.inf):
    r"""Trade-off curve of one noisy-SGD step against the optimal attacker (Eq. 8).

    .. math::

        \beta(\alpha) = 1 - F_{\chi^2_d((n_{\mathrm{eff}} - 1)K)}\Big(
            \tfrac{n_{\mathrm{eff}}}{n_{\mathrm{eff}} - 1}
            F^{-1}_{\chi^2_d(n_{\mathrm{eff}} K)}(\alpha)\Big)

    Parameters
    ----------
    alpha : float or array_like
        False positive rate in [0, 1].
    n : float
        Batch size, :math:`n > 1`.
    d : int
        Number of parameters (gradient dimension).
    K : float, default=None
        Gradient susceptibility bound :math:`K \ge \|\Sigma^{-1/2}(\theta' - \mu)\|^2`;
        ``None`` means :math:`K = d`, its mean when the whitened gradient has independent
        unit-variance coordinates (Remark 5.1; Leemann Fig. 2 uses :math:`K = d`).
    tau, clip_norm : float
        Noise on the mean gradient and clipping norm, see
        :func:`gmip_effective_batch_size`.

    Returns
    -------
    float or ndarray
        False negative rate :math:`\beta(\alpha)` of the likelihood-ratio test.

    Notes
    -----
    Theorem 5.1 assumes the batch mean is Gaussian (CLT: "sufficiently large batch
    sizes"), the attacker knows :math:`\mu` and :math:`\Sigma`, and the target's gradient
    has susceptibility ``K``. The test statistic is
    :math:`T = n_{\mathrm{eff}}\|\Sigma^{-1/2}(m' - \theta')\|^2` with :math:`m'` the
    rescaled mean; :math:`T \sim \chi^2_d(n_{\mathrm{eff}}K)` for non-members and
    :math:`T \cdot n_{\mathrm{eff}}/(n_{\mathrm{eff}} - 1) \sim
    \chi^2_d((n_{\mathrm{eff}} - 1)K)` for members; the likelihood ratio is monotone in
    :math:`T` because the linear terms of the two Gaussian log-densities cancel.
    In the paper's notation the percentile is written with the noncentrality
    :math:`n_{\mathrm{eff}}K`, which the derivation confirms.

    References
    ----------
    Leemann et al., Theorem 5.1, Eq. (8); Figure 1 (convergence to Corollary 5.1).

    Examples
    --------
    Large batches and many parameters: Eq. 8 approaches the Gaussian curve of Eq. 9
    (Leemann Fig. 1).

    >>> mu = gmip_mu_step(n=10_000, d=5_000)
    >>> round(float(gmip_tradeoff(0.1, n=10_000, d=5_000)), 3), round(gaussian_tradeoff(0.1, mu), 3)
    (0.717, 0.717)
    """
    alpha = _check_alpha(alpha)
    d = _check_positive("d", d)
    K = d if K is None else _check_nonneg("K", K)
    n_eff = np.asarray(gmip_effective_batch_size(n, tau, clip_norm))
    if np.any(n_eff <= 1):
        raise ValueError(f"n must be > 1 (one gradient alone is its own mean); got n_eff={n_eff.tolist()!r}.")
    t = _ncx2_ppf(alpha, d, n_eff * K)
    return _out(1.0 - _ncx2_cdf(n_eff / (n_eff - 1.0) * t, d, (n_eff - 1.0) * K))


def gmip_mu_step(n, d, K=None, tau=0.0, clip_norm=np.inf, *, variant="lrt"):
    r"""The GMIP parameter of one noisy-SGD step (Corollary 5.1, Eq. 9).

    .. math::

        \mu_{\mathrm{step}} = \frac{d + (2n_{\mathrm{eff}} - 1)K}
                                   {n_{\mathrm{eff}}\sqrt{2d + 4n_{\mathrm{eff}}K}}

    Parameters
    ----------
    n : float or array_like
        Batch size.
    d : float or array_like
        Number of parameters.
    K : float or array_like, default=None
        Gradient susceptibility; ``None`` means ``K = d`` (see :func:`gmip_tradeoff`).
    tau, clip_norm : float or array_like
        Noise on the mean gradient and clipping norm, see
        :func:`gmip_effective_batch_size`.
    variant : {"lrt", "code"}, default="lrt"
        ``"lrt"``: Eq. 9 as printed, :math:`n_{\mathrm{eff}}` everywhere (the Gaussian
        approximation of the optimal test). ``"code"``: the formula of the authors'
        public code (``gmip/utils.py::calc_privacy_lvl``),
        :math:`(d + (2n - 1)K) / (n_{\mathrm{eff}}\sqrt{2d + 4 (n^2/n_{\mathrm{eff}}) K})`,
        kept for comparison with published numbers; it is *not* a bound on the optimal
        attacker when ``tau > 0`` (see Notes).

    Returns
    -------
    float or ndarray
        :math:`\mu_{\mathrm{step}}`.

    Notes
    -----
    Both variants equal Eq. 9 when ``tau = 0``. They are Gaussian approximations
    (mean difference over null standard deviation) of two different tests:

    * ``"lrt"``: the likelihood-ratio test of Theorem 5.1. By the rescaling in
      :func:`gmip_effective_batch_size`, the noisy problem is the noiseless one with
      :math:`n_{\mathrm{eff}}` in place of :math:`n`, so
      :math:`E_0 - E_1 = (d + (2n_{\mathrm{eff}} - 1)K)/n_{\mathrm{eff}}` and
      :math:`\mathrm{sd}_0 = \sqrt{2d + 4n_{\mathrm{eff}}K}` for :math:`T` of
      :func:`gmip_tradeoff`. This is Eq. 9.
    * ``"code"``: the *noiseless* statistic :math:`\|\Sigma^{-1/2}(m - \theta')\|^2`
      applied to the noisy mean without rescaling. Its null law is
      :math:`a\,\chi^2_d(K/a)` with :math:`a = n_{\mathrm{eff}}/n^2`, its alternative
      mean is smaller by :math:`(d + (2n - 1)K)/n^2` (the noise cancels in the
      difference), and the ratio is exactly the code's formula. That test ignores
      that noise changes the optimal centring, so it is weaker than the LRT; a
      guarantee must bound the strongest attacker, hence skmip uses ``"lrt"``. The
      difference is small in the regime of the paper (:math:`K \approx d`, large
      :math:`n`): both behave as :math:`\sqrt{K/n_{\mathrm{eff}}}`.

    References
    ----------
    Leemann et al., Corollary 5.1, Eq. (9); Remark 5.1. Authors' code:
    github.com/tleemann/gaussian_mip, ``gmip/utils.py``.

    Examples
    --------
    Remark 5.1: without noise :math:`\mu \approx \sqrt{d/n}` for :math:`K = d`,
    :math:`d, n \gg 1`.

    >>> round(gmip_mu_step(n=10_000, d=2_500), 4)  # K = d: exactly 2 sqrt(d / (4n + 2))
    0.5
    >>> round(gmip_mu_step(64, 100, tau=0.1, clip_norm=1.0), 4)  # n_eff = 64.64
    0.9738
    >>> round(gmip_mu_step(64, 100, tau=0.1, clip_norm=1.0, variant="code"), 4)
    0.9699
    """
    if variant not in ("lrt", "code"):
        raise ValueError(f"gmip_mu_step: variant must be 'lrt' or 'code'; got {variant!r}.")
    n = _check_positive("n", n)
    d = _check_positive("d", d)
    K = d if K is None else _check_nonneg("K", K)
    n_eff = np.asarray(gmip_effective_batch_size(n, tau, clip_norm))
    if variant == "lrt":
        mu = (d + (2 * n_eff - 1) * K) / (n_eff * np.sqrt(2 * d + 4 * n_eff * K))
    else:
        mu = (d + (2 * n - 1) * K) / (n_eff * np.sqrt(2 * d + 4 * (n**2 / n_eff) * K))
    return _out(mu)


def gmip_compose(mu_step, batch_size, n_samples, n_steps):
    r"""mu after ``n_steps`` subsampled steps of a mu_step-Gaussian mechanism (Eq. 10).

    .. math::

        \mu = \sqrt{2}\,c\,\sqrt{e^{\mu_{\mathrm{step}}^2}\Phi(1.5\mu_{\mathrm{step}})
              + 3\Phi(-0.5\mu_{\mathrm{step}}) - 2}, \qquad c = \frac{n\sqrt{T}}{N}

    Parameters
    ----------
    mu_step : float or array_like
        Per-step parameter (GMIP from :func:`gmip_mu_step`, or GDP :math:`2/\sigma`).
    batch_size : float or array_like
        :math:`n`, the size of each batch, drawn uniformly without replacement from the
        training set at every step.
    n_samples : float or array_like
        :math:`N`, the training-set size.
    n_steps : float or array_like
        :math:`T`, the number of steps.

    Returns
    -------
    float or ndarray
        The composed :math:`\mu` (``inf`` when ``mu_step`` is infinite).

    Notes
    -----
    A central limit theorem (Dong et al., Theorem 5.2 / Corollary 5.4): exact only as
    :math:`T \to \infty` with :math:`n\sqrt{T}/N \to c`; for finitely many steps it is
    the standard approximation (Leemann: "a (loose) bound" after Lemma 5.1). The same
    formula serves GMIP (Lemma 5.1) and GDP (Dong et al.), which is what makes the
    comparison of Leemann Fig. 3 fair. Batches are fixed-size uniform subsets, not
    Poisson samples.

    References
    ----------
    Leemann et al., Lemma 5.1, Eq. (10); Dong et al., Corollary 5.4.

    Examples
    --------
    >>> round(gmip_compose(1.0, batch_size=256, n_samples=60_000, n_steps=15_000), 4)
    0.8936
    """
    mu_step = _check_nonneg("mu_step", mu_step, allow_inf=True)
    n = _check_positive("batch_size", batch_size)
    N = _check_positive("n_samples", n_samples)
    T = _check_nonneg("n_steps", n_steps)
    if np.any(n > N):
        raise ValueError(f"batch_size must be <= n_samples; got {n.tolist()!r} > {N.tolist()!r}.")
    c = n * np.sqrt(T) / N
    with np.errstate(over="ignore", invalid="ignore"):
        inner = np.exp(mu_step**2) * stats.norm.cdf(1.5 * mu_step) + 3 * stats.norm.cdf(-0.5 * mu_step) - 2
    # The bracket is >= 0 mathematically; clip round-off at mu_step ~ 0.
    mu = np.sqrt(2.0) * c * np.sqrt(np.maximum(np.where(np.isinf(mu_step), np.inf, inner), 0.0))
    return _out(np.where(T == 0, 0.0, mu))


def gmip_mu(noise_multiplier, batch_size, n_samples, n_steps, *, d, K=None, variant="lrt"):
    r"""mu-GMIP of noisy SGD with Opacus' ``noise_multiplier`` (Eqs. 9 and 10).

    Parameters
    ----------
    noise_multiplier : float or array_like
        :math:`\sigma`: noise std on the sum of clipped gradients over the clip norm
        (``tau = sigma * C / batch_size``; then :math:`n_{\mathrm{eff}} = n + \sigma^2`
        and the clip norm drops out).
    batch_size, n_samples, n_steps : float or array_like
        As in :func:`gmip_compose`.
    d : int
        Number of trained parameters.
    K : float, default=None
        Gradient susceptibility, ``None`` for ``K = d``.
    variant : {"lrt", "code"}, default="lrt"
        See :func:`gmip_mu_step`.

    Returns
    -------
    float or ndarray
        The composed mu-GMIP parameter. Without the DP bound: see
        :func:`gmip_noise_multiplier` for the calibration that takes the smaller of the
        GMIP and GDP noise (Theorem 4.2).

    References
    ----------
    Leemann et al., Corollary 5.1 and Lemma 5.1; authors' ``calc_privacy_lvl``.

    Examples
    --------
    >>> round(gmip_mu(0.0, 256, 60_000, 2_000, d=650), 4)  # plain clipped SGD
    0.9006
    """
    sigma = _check_nonneg("noise_multiplier", noise_multiplier, allow_inf=True)
    # tau^2 n^2 / C^2 = sigma^2 for tau = sigma C / n: pass C = 1, tau = sigma / n.
    n = np.asarray(batch_size, dtype=np.float64)
    step = gmip_mu_step(n, d, K, tau=sigma / n, clip_norm=1.0, variant=variant)
    return gmip_compose(step, batch_size, n_samples, n_steps)


def gdp_mu(noise_multiplier, batch_size, n_samples, n_steps):
    r"""mu-GDP of noisy SGD with fixed-size batches (Dong et al. Cor. 5.4, replace-one).

    Parameters
    ----------
    noise_multiplier : float or array_like
        :math:`\sigma` in Opacus units (noise std on the clipped-gradient sum over ``C``).
    batch_size, n_samples, n_steps : float or array_like
        As in :func:`gmip_compose`.

    Returns
    -------
    float or ndarray
        The composed mu-GDP parameter; by Leemann Theorem 4.2 also a mu-GMIP guarantee.

    Notes
    -----
    One step is :math:`(2/\sigma)`-GDP for replace-one neighbours (sensitivity of the
    sum :math:`2C`), the relation under which f-DP implies f-MIP (Leemann Thm 4.2); the
    steps compose by the CLT of :func:`gmip_compose`. Dong et al. write the noise on the
    mean as :math:`\sigma_{\mathrm{DRS}}\cdot 2C/n`, so :math:`\sigma_{\mathrm{DRS}} =
    \sigma/2`. This is an asymptotic accounting used for the GMIP/GDP comparison of
    Leemann §6.2; :class:`skmip.nn.DPNeuralNetClassifier` reports a rigorous
    (epsilon, delta) from Opacus' RDP or PRV accountant for its Poisson-sampled
    ``privacy="dp"`` mode instead.

    References
    ----------
    Dong et al., Corollary 5.4; Leemann et al., §6.2; authors' ``calc_dp_privacy_lvl``.

    Examples
    --------
    >>> round(gdp_mu(2.0, 256, 60_000, 15_000), 4)  # mu_step = 2 / 2 = 1
    0.8936
    """
    sigma = _check_nonneg("noise_multiplier", noise_multiplier, allow_inf=True)
    with np.errstate(divide="ignore"):
        step = np.where(sigma == 0, np.inf, 2.0 / np.where(sigma == 0, 1.0, sigma))
    return gmip_compose(step, batch_size, n_samples, n_steps)


def gdp_noise_multiplier(mu, batch_size, n_samples, n_steps):
    r"""Smallest ``noise_multiplier`` for which :func:`gdp_mu` is at most ``mu``.

    Parameters
    ----------
    mu : float
        Target GDP parameter, > 0.
    batch_size, n_samples, n_steps : int
        As in :func:`gmip_compose`.

    Returns
    -------
    float
        :math:`\sigma` in Opacus units.

    References
    ----------
    Dong et al., Corollary 5.4; Leemann et al., §6.2 (authors' ``compute_tau(dp=True)``).

    Examples
    --------
    >>> s = gdp_noise_multiplier(0.8936, 256, 60_000, 15_000)
    >>> round(s, 3)
    2.0
    """
    mu = float(_check_positive("mu", mu))
    return _solve_sigma(lambda s: float(gdp_mu(s, batch_size, n_samples, n_steps)), mu)


def gmip_noise_multiplier(mu, batch_size, n_samples, n_steps, *, d, K=None, variant="lrt", use_dp_bound=True):
    r"""Smallest ``noise_multiplier`` for mu-GMIP (Eqs. 9-10), optionally capped by GDP.

    Parameters
    ----------
    mu : float
        Target GMIP parameter, > 0.
    batch_size, n_samples, n_steps : int
        As in :func:`gmip_compose`.
    d : int
        Number of trained parameters.
    K : float, default=None
        Gradient susceptibility, ``None`` for ``K = d``.
    variant : {"lrt", "code"}, default="lrt"
        See :func:`gmip_mu_step`.
    use_dp_bound : bool, default=True
        Return ``min(GMIP noise, GDP noise)``: mu-GDP implies mu-GMIP (Leemann Thm 4.2),
        so the DP noise always suffices.

    Returns
    -------
    float
        :math:`\sigma` in Opacus units; 0.0 when plain (clipped) SGD is already mu-GMIP,
        the "no noise needed above a threshold mu" of Leemann Fig. 3.

    Notes
    -----
    The GMIP side assumes the gradient susceptibility of every target is at most ``K``
    (with ``K = d`` the typical, not the worst, target; Remark 5.1) and the CLT of
    Theorem 5.1; the GDP side holds for every target.

    References
    ----------
    Leemann et al., Corollary 5.1, Lemma 5.1, Theorem 4.2, §6.2; authors'
    ``compute_tau(dp=False)``.

    Examples
    --------
    Above the no-noise level (0.9006 here) plain clipped SGD suffices; below it, with
    ``d = 650`` and batches of 256, noise buys GMIP slowly (:math:`n_{\mathrm{eff}} =
    n + \sigma^2`) and the GDP noise is the smaller one:

    >>> gmip_noise_multiplier(1.0, 256, 60_000, 2_000, d=650)
    0.0
    >>> round(gmip_noise_multiplier(0.5, 256, 60_000, 2_000, d=650, use_dp_bound=False), 2)
    12.61
    >>> round(gmip_noise_multiplier(0.5, 256, 60_000, 2_000, d=650), 3)
    1.599
    """
    mu = float(_check_positive("mu", mu))
    sigma = _solve_sigma(
        lambda s: float(gmip_mu(s, batch_size, n_samples, n_steps, d=d, K=K, variant=variant)), mu
    )
    if use_dp_bound and sigma > 0:
        sigma = min(sigma, gdp_noise_multiplier(mu, batch_size, n_samples, n_steps))
    return sigma
