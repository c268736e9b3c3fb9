r"""The MIP noise mechanism of Izzo et al. (Theorem 9, Corollary 10, Algorithm 1).

The released parameters are :math:`\hat\theta = \theta + X` with :math:`X = r U`, where
:math:`U = Y / \|Y\|_{\sigma,M}` is a direction drawn from generalised-normal coordinates
and :math:`r` a radius. Everything here is pure numpy: the functions take a noise scale
vector ``sigma`` and return noise, a norm or a log-density.

Two radius laws are offered (``radius=``):

``"gamma"`` (default)
    :math:`r \sim \mathrm{Gamma}(d, c)`. This is the radial law for which :math:`X` has
    exactly the density :math:`\propto \exp(-\|x\|_{\sigma,M}/c)` that Theorem 9 assumes.
``"laplace"``
    :math:`r \sim \mathrm{Laplace}(0, c)`, Corollary 10 and Algorithm 1 as printed. For
    :math:`d > 1` this is a different law and it does not keep the MIP promise (see
    :func:`sample_mip_noise`, Notes); kept to reproduce the paper.

References
----------
Izzo, Z., Yoon, J., Arik, S. O., Zou, J. "Provable Membership Inference Privacy".
(``shared/papers/izzo-provable-membership-inference-privacy.txt``.)
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.rng import resolve_rng
from skmip.utils.validation import (
    check_eta,
    check_int,
    check_interval,
    check_moment,
    check_option,
)
from skmip.bounds.mip import mip_noise_constant
from skmip.exceptions import PrivacyWarning, check_privacy_seed

__all__ = ["MIPNoiseLaw", "sample_mip_noise", "mip_noise_logpdf", "mip_norm", "sample_gaussian_noise"]

_RADII = ("gamma", "laplace")


# --------------------------------------------------------------------------- validation


def _check_sigma(owner, sigma):
    """``sigma`` as a 1-D float array of finite values >= 0, and the mask of sigma_i > 0."""
    try:
        arr = np.asarray(sigma, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{owner}: sigma must be a 1-D array of real numbers (one noise scale per "
            f"parameter); got {sigma!r}."
        ) from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"{owner}: sigma must be a non-empty 1-D array (one scale per parameter); got "
            f"shape {arr.shape}. Flatten the parameters first (skmip.params.get_adapter) or "
            "wrap a single scale as [sigma]."
        )
    bad = ~np.isfinite(arr) | (arr < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{owner}: sigma must be finite and >= 0 in every coordinate; got sigma[{i}]="
            f"{arr[i]!r} ({int(bad.sum())} bad coordinate(s)). sigma_i is the M-th root of the "
            "M-th central moment of parameter i over random training subsets."
        )
    return arr, arr > 0


def _laplace_warning(owner, d):
    warnings.warn(
        f"{owner}: radius='laplace' draws r ~ Laplace(0, c) as printed in Izzo et al., "
        f"Corollary 10 / Algorithm 1. In d={d} > 1 dimensions the noise then does NOT have "
        "the density exp(-||x||/c) that Theorem 9 assumes (its density is proportional to "
        "exp(-||x||/c) / ||x||^(d-1), concentrated near 0), and the exact Bayes-optimal "
        "attacker on mean estimation exceeds the promised eta (M=6 from d=1,000 for every "
        "eta tried; M=4 at d=10,000 for every eta tried, and at d=1,000 for eta=0.1 and "
        "0.2; see docs/exact_audits.md). Use radius='gamma' for anything you release.",
        PrivacyWarning,
        stacklevel=3,
    )


# --------------------------------------------------------------------------- norm


def _norm_active(z, moment):
    r"""Rows' :math:`(\frac1d \sum_i |z_i|^M)^{1/M}` for already standardised ``z`` (m, d).

    Scaled by the row maximum first so that large noise (``|z| ~ d c``) raised to the M-th
    power cannot overflow.
    """
    a = np.abs(z)
    scale = a.max(axis=-1, keepdims=True)
    safe = np.where(scale > 0, scale, 1.0)
    a /= safe
    if moment == 2:
        s = np.einsum("...i,...i->...", a, a)
    else:
        s = np.sum(a**moment, axis=-1)
    return scale[..., 0] * (s / z.shape[-1]) ** (1.0 / moment)


def _norm_rows(x, sigma, active, moment):
    """Norm of each row of ``x`` (m, D); ``inf`` where a zero-sigma coordinate is non-zero."""
    z = x[:, active] / sigma[active]
    out = _norm_active(z, moment)
    if not active.all():
        off = np.any(x[:, ~active] != 0, axis=1)
        out = np.where(off, np.inf, out)
    return out


def _as_rows(owner, x, dim):
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim not in (1, 2) or arr.shape[-1] != dim:
        raise ValueError(
            f"{owner}: x must have shape ({dim},) or (n, {dim}) to match sigma; got shape "
            f"{arr.shape}."
        )
    return np.atleast_2d(arr), arr.ndim == 1


def mip_norm(x: ArrayLike, sigma: ArrayLike, moment: float = 2) -> float | np.ndarray:
    r"""The normalised norm :math:`\|x\|_{\sigma,M} = (\sum_i |x_i|^M / (d\,\sigma_i^M))^{1/M}`.

    Parameters
    ----------
    x : array_like of shape (d,) or (n, d)
        Vector(s); rows are treated independently.
    sigma : array_like of shape (d,)
        Per-coordinate scales, finite and >= 0.
    moment : float, default=2
        The order :math:`M \ge 2`.

    Returns
    -------
    float or ndarray of shape (n,)
        The norm of ``x`` or of each row.

    Raises
    ------
    TypeError, ValueError
        If ``sigma`` is not a finite non-negative 1-D array, ``moment < 2`` or ``x`` does
        not match ``sigma``.

    Notes
    -----
    Corollary 10. In this norm the M-th central moment of the parameters is at most 1 when
    :math:`\sigma_i^M \ge \mathbb{E}|\theta_i - \mathbb{E}\theta_i|^M`. Coordinates with
    :math:`\sigma_i = 0` are left out of the sum *and* of :math:`d` (they receive no noise,
    see :func:`sample_mip_noise`); a vector that is non-zero on such a coordinate has norm
    ``inf``, which is the norm's value on the limit :math:`\sigma_i \to 0`. Computed after
    scaling each row by its largest entry so that :math:`|x_i|^M` cannot overflow.

    References
    ----------
    Izzo et al., Corollary 10 (definition of :math:`\|\cdot\|_{\sigma,M}`).

    Examples
    --------
    >>> mip_norm([3.0, 4.0], [1.0, 1.0], moment=2)  # sqrt((9 + 16) / 2)
    3.5355339059327378
    >>> mip_norm([[2.0, 0.0], [2.0, 1.0]], [1.0, 0.0]).tolist()
    [2.0, inf]
    """
    owner = "mip_norm"
    sigma, active = _check_sigma(owner, sigma)
    moment = check_moment(owner, moment)
    rows, single = _as_rows(owner, x, sigma.size)
    if not active.any():
        out = np.where(np.any(rows != 0, axis=1), np.inf, 0.0)
    else:
        out = _norm_rows(rows, sigma, active, moment)
    return float(out[0]) if single else out


# --------------------------------------------------------------------------- sampling


def _sample_direction(d, moment, rng, n):
    r"""Standardised directions ``(n, d)``: :math:`Y/\|Y\|_{1,M}` with iid GenNormal(0, 1, M) Y.

    :math:`|Y_i|` has density :math:`\propto e^{-y^M}`; it is drawn as :math:`V\,W^{1/M}` with
    :math:`V \sim U(0, 1)` and :math:`W \sim \mathrm{Gamma}(1 + 1/M)`, because
    :math:`P(V W^{1/M} \in dy) = \int_{y^M}^\infty w^{1/M} e^{-w} w^{-1/M} dw / \Gamma(1+1/M)
    = e^{-y^M}/\Gamma(1+1/M)`. This avoids ``Gamma(1/M)`` draws, whose small shape underflows
    to 0 for large M. The sign is folded into ``V ~ U(-1, 1)``. Multiplying by sigma afterwards
    gives Corollary 10's :math:`Y/\|Y\|_{\sigma,M}`, since the norm is scale-equivariant.
    """
    y = rng.uniform(-1.0, 1.0, size=(n, d))
    y *= rng.standard_gamma(1.0 + 1.0 / moment, size=(n, d)) ** (1.0 / moment)
    y /= _norm_active(y, moment)[:, None]
    return y


def _draw_radius(radius, d, c, rng, n):
    if radius == "gamma":
        # ||X|| ~ Gamma(d, c) is the radial part of the density exp(-||x||/c) (polar
        # coordinates: dx ~ s^(d-1) ds x cone measure).
        return rng.gamma(shape=d, scale=c, size=n)
    return rng.laplace(0.0, c, size=n)  # Corollary 10 as printed


def _draw_mip_noise(sigma, active, eta, moment, radius, rng, n):
    """Noise rows ``(n, D)`` for validated inputs; no warnings."""
    out = np.zeros((n, sigma.size))
    d = int(active.sum())
    if d == 0:
        return out
    c = mip_noise_constant(eta, moment)
    u = _sample_direction(d, moment, rng, n)
    r = _draw_radius(radius, d, c, rng, n)
    u *= r[:, None]
    u *= sigma[active]
    if d == sigma.size:
        return u
    out[:, active] = u
    return out


def sample_mip_noise(
    sigma: ArrayLike,
    *,
    eta: float,
    moment: float = 2,
    radius: str = "gamma",
    random_state=None,
    n_samples: int | None = None,
) -> np.ndarray:
    r"""Draw the MIP noise :math:`X = r\,U` of Theorem 9 / Corollary 10.

    :math:`U = Y / \|Y\|_{\sigma,M}` with independent
    :math:`Y_i \sim \mathrm{GenNormal}(0, \sigma_i, M)` (density
    :math:`\propto \exp(-|y/\sigma_i|^M)`), and :math:`c` =
    :func:`skmip.bounds.mip_noise_constant` ``(eta, M)`` :math:`= (6.16/\eta)^{1+2/M}`.
    Adding the result to parameters whose M-th central moments (over random training
    halves) are bounded by ``sigma**M`` is the release step of Algorithm 1.

    Parameters
    ----------
    sigma : array_like of shape (D,)
        Per-parameter scales :math:`\sigma_i \ge (\mathbb{E}|\theta_i - \mathbb{E}\theta_i|^M)^{1/M}`,
        finite and >= 0. Coordinates with ``sigma_i == 0`` receive no noise (see Notes).
    eta : float
        Target MIP level in (0, 0.5].
    moment : float, default=2
        The order :math:`M \ge 2` of the central moment that ``sigma`` bounds.
    radius : {"gamma", "laplace"}, default="gamma"
        Law of :math:`r`. ``"gamma"``: :math:`|r| \sim \mathrm{Gamma}(\text{shape}=d,
        \text{scale}=c)`, which gives the density Theorem 9 assumes. ``"laplace"``:
        :math:`r \sim \mathrm{Laplace}(0, c)` as Corollary 10 prints it; emits a
        :class:`~skmip.exceptions.PrivacyWarning` when :math:`d > 1`.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Source of the noise. ``None`` (fresh OS entropy) is the only setting for a release;
        an int (or ``SeedSequence``) emits a :class:`~skmip.exceptions.PrivacyWarning`
        because anyone who knows it can subtract the noise. A ``Generator`` is used as is,
        without a warning: its seeding is the caller's responsibility.
    n_samples : int or None, default=None
        ``None`` returns one draw of shape ``(D,)``; an int returns ``(n_samples, D)``.

    Returns
    -------
    ndarray of shape (D,) or (n_samples, D)
        The noise, zero on coordinates with ``sigma_i == 0``.

    Raises
    ------
    TypeError, ValueError
        If ``sigma`` is not a finite non-negative 1-D array, ``eta`` is outside (0, 0.5],
        ``moment < 2``, ``radius`` is unknown or ``n_samples < 1``.

    Warns
    -----
    PrivacyWarning
        With ``radius="laplace"`` in more than one dimension, and with an integer seed.

    Notes
    -----
    **Density (Theorem 9).** The density of :math:`Y` is
    :math:`\prod_i e^{-|y_i/\sigma_i|^M} = e^{-d\|y\|_{\sigma,M}^M}`, a function of the norm
    only, so :math:`U` follows the cone measure of the unit ball of
    :math:`\|\cdot\|_{\sigma,M}` (the argument of the appendix proof of Corollary 10). In
    polar coordinates :math:`x = s u`, Lebesgue measure is :math:`\propto s^{d-1} ds` times
    the cone measure. Hence :math:`X = rU` has density :math:`\propto e^{-\|x\|_{\sigma,M}/c}`
    iff :math:`\|X\| = |r|` has density :math:`\propto s^{d-1} e^{-s/c}`, i.e.
    :math:`|r| \sim \mathrm{Gamma}(d, c)`. With ``radius="gamma"`` the noise has exactly
    Theorem 9's density. Expect :math:`\|X\|_{\sigma,M} \approx d c`: the noise grows
    linearly with the number of noised parameters.

    **The printed radius.** With :math:`r \sim \mathrm{Laplace}(0, c)` (Corollary 10,
    Algorithm 1) the density of :math:`X` is :math:`\propto e^{-\|x\|/c} / \|x\|^{d-1}`, which
    equals Theorem 9's only for :math:`d = 1` and otherwise piles up near 0. Measured with
    the exact Bayes-optimal attacker (:func:`skmip.audit.attacks.bayes.exact_mip_advantage`) on
    mean estimation with one outlying record, the optimal advantage exceeds eta for
    :math:`M = 6` from :math:`d = 1{,}000` and :math:`M = 4` at :math:`d = 10{,}000` (every
    eta in {0.05, 0.1, 0.2, 0.3}; for :math:`M = 4` already at :math:`d = 1{,}000` when
    eta is 0.1 or 0.2), while the gamma radius stays orders of magnitude below eta (at
    most :math:`\tanh(1/c)/2` there). ``"laplace"`` is kept to reproduce the paper.

    **A gap in Theorem 9's proof.** The proof bounds
    :math:`P(\|X\| \le \gamma\sigma c\log c - \|\mathcal{A}(D)\|)` with the tail
    :math:`\tfrac12 e^{-t/(c\sigma)}` of a *one-dimensional* Laplace variable. For
    :math:`d > 1`, :math:`\|X\| \sim \mathrm{Gamma}(d, c\sigma)` has mean :math:`d c\sigma`,
    far beyond :math:`\gamma\sigma c\log c` once :math:`d > \gamma\log c`, so that step fails:
    for :math:`d > 1` the theorem's proof has a gap even for the gamma radius. What does hold
    in any dimension is that the log-likelihood ratio between two training sets is at most
    :math:`\|\mathcal{A}(S) - \mathcal{A}(S')\|_{\sigma,M}/c` (triangle inequality). The
    exact audits (``docs/exact_audits.md``) measure the true advantage instead of relying on
    the proof.

    **Zero scales.** A coordinate with :math:`\sigma_i = 0` did not vary over the subsets
    used to estimate sigma; it gets no noise and is excluded from :math:`d` (so the norm and
    the radius law are those of the remaining coordinates). This is exactly right when
    :math:`\sigma_i = 0` is the true moment: the parameter is then the same for every
    training half and reveals nothing about membership. It is only as safe as the sigma
    estimate: a parameter that moves for rare subsets the estimate missed (an outlier's
    own coefficient, a sparse feature) is released un-noised. The wrapper warns about it.

    **Sampling.** Vectorised over coordinates and draws; :math:`|Y_i/\sigma_i|` is drawn as
    :math:`V W^{1/M}`, :math:`V \sim U(-1,1)`, :math:`W \sim \mathrm{Gamma}(1+1/M)`, which
    has the generalised-normal law and does not underflow for large M. One draw in
    :math:`d = 10^6` takes well under a second.

    References
    ----------
    Izzo et al., Theorem 9 (density of X), Corollary 10 and its appendix proof (direction
    U), Corollary 14 (constant 6.16), Algorithm 1 (release step).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = sample_mip_noise([1.0, 2.0, 0.0], eta=0.1, random_state=rng)
    >>> x.shape, float(x[2])
    ((3,), 0.0)
    >>> xs = sample_mip_noise([1.0, 2.0], eta=0.1, random_state=rng, n_samples=20000)
    >>> c = 3794.56  # (6.16 / 0.1) ** 2; ||X|| ~ Gamma(2, c) has mean 2c
    >>> bool(abs(mip_norm(xs, [1.0, 2.0]).mean() / (2 * c) - 1) < 0.02)
    True
    """
    owner = "sample_mip_noise"
    law = MIPNoiseLaw(sigma, eta=eta, moment=moment, radius=radius, owner=owner)
    n = 1 if n_samples is None else check_int(owner, "n_samples", n_samples, 1, None)
    if isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        check_privacy_seed(owner, random_state)
    rng = resolve_rng(random_state)
    if law.radius == "laplace" and law.dim > 1:
        _laplace_warning(owner, law.dim)
    out = law.sample(n, rng)
    return out[0] if n_samples is None else out


# --------------------------------------------------------------------------- density


def _logpdf_rows(x, sigma, active, eta, moment, radius):
    """Unnormalised log-density of rows ``x`` (m, D) for validated inputs."""
    d = int(active.sum())
    if d == 0:
        return np.where(np.any(x != 0, axis=1), -np.inf, 0.0)
    c = mip_noise_constant(eta, moment)
    s = _norm_rows(x, sigma, active, moment)
    out = -s / c
    if radius == "laplace" and d > 1:
        # Density of r*U with |r| ~ Exp(c): p_|r|(s) / (Jacobian s^(d-1)).
        with np.errstate(divide="ignore"):
            out = out - (d - 1) * np.log(s)
    return out


def mip_noise_logpdf(
    x: ArrayLike,
    sigma: ArrayLike,
    *,
    eta: float,
    moment: float = 2,
    radius: str = "gamma",
) -> float | np.ndarray:
    r"""Unnormalised log-density of the noise drawn by :func:`sample_mip_noise`.

    Parameters
    ----------
    x : array_like of shape (D,) or (n, D)
        Noise value(s); rows are evaluated independently.
    sigma : array_like of shape (D,)
        The scales the noise was drawn with.
    eta : float
        MIP level in (0, 0.5].
    moment : float, default=2
        The order :math:`M \ge 2`.
    radius : {"gamma", "laplace"}, default="gamma"
        The radius law the noise was drawn with.

    Returns
    -------
    float or ndarray of shape (n,)
        ``radius="gamma"``: :math:`-\|x\|_{\sigma,M}/c`. ``radius="laplace"``:
        :math:`-\|x\|_{\sigma,M}/c - (d-1)\log\|x\|_{\sigma,M}` (``+inf`` at 0 when
        :math:`d > 1`). ``-inf`` where ``x`` is non-zero on a coordinate with
        :math:`\sigma_i = 0`.

    Raises
    ------
    TypeError, ValueError
        As :func:`sample_mip_noise`, or if ``x`` does not match ``sigma``.

    Notes
    -----
    Densities are with respect to Lebesgue measure on the coordinates with
    :math:`\sigma_i > 0` (times a point mass at 0 on the others), up to an additive
    constant that depends on ``sigma``, ``eta``, ``moment`` and ``radius`` but not on ``x``
    — what a likelihood ratio or posterior needs. The Laplace-radius density follows from
    polar coordinates: :math:`|r| = \|X\|` has density :math:`e^{-s/c}/c` and the volume
    element is :math:`\propto s^{d-1} ds` times the cone measure that :math:`U` follows.
    No warning is emitted here: evaluating a density releases nothing.

    References
    ----------
    Izzo et al., Theorem 9 (density :math:`\propto \exp(-\|x\|/(c\sigma))`), Corollary 10.

    Examples
    --------
    >>> round(mip_noise_logpdf([2.0, 0.0], [1.0, 1.0], eta=0.1), 7)  # -sqrt(2) / 3794.56
    -0.0003727
    >>> float(mip_noise_logpdf([0.0, 1.0], [1.0, 0.0], eta=0.1))
    -inf
    """
    owner = "mip_noise_logpdf"
    law = MIPNoiseLaw(sigma, eta=eta, moment=moment, radius=radius, owner=owner)
    rows, single = _as_rows(owner, x, law.sigma.size)
    out = law.logpdf(rows)
    return float(out[0]) if single else out


# --------------------------------------------------------------------------- the law


class MIPNoiseLaw:
    r"""The MIP noise law of Theorem 9 / Corollary 10 for fixed parameters: sampler and density.

    The validated law behind :func:`sample_mip_noise` and :func:`mip_noise_logpdf`, for code
    that draws or evaluates it many times -- the exact Bayes-optimal attacker
    (:func:`skmip.audit.attacks.bayes.exact_mip_advantage`) audits the noise through it.

    Parameters
    ----------
    sigma : array_like of shape (D,)
        Per-parameter scales, finite and >= 0; coordinates with ``sigma_i == 0`` get no noise.
    eta : float
        MIP level in (0, 0.5].
    moment : float, default=2
        The order :math:`M \ge 2`.
    radius : {"gamma", "laplace"}, default="gamma"
        The radius law (see :func:`sample_mip_noise`).
    owner : str, default="MIPNoiseLaw"
        The name error messages start with (the public function the caller was given).

    Attributes
    ----------
    sigma, active : ndarray of shape (D,)
        The validated scales, and ``sigma > 0`` (the coordinates that receive noise).
    eta, moment, radius
        The validated parameters.
    dim : int
        :math:`d`, the number of noised coordinates.

    Raises
    ------
    TypeError, ValueError
        As :func:`sample_mip_noise`.

    Notes
    -----
    Unlike :func:`sample_mip_noise`, :meth:`sample` emits no warning (neither for the printed
    Laplace radius nor for a seeded generator): it is meant for audits and simulations, where
    the generator is the caller's, not for a release. Izzo et al., Theorem 9, Corollary 10.

    Examples
    --------
    >>> law = MIPNoiseLaw([1.0, 0.0], eta=0.1)
    >>> x = law.sample(3, np.random.default_rng(0))
    >>> x.shape, law.dim, bool(np.all(x[:, 1] == 0))
    ((3, 2), 1, True)
    >>> np.allclose(law.logpdf(x), mip_noise_logpdf(x, [1.0, 0.0], eta=0.1))
    True
    """

    def __init__(self, sigma: ArrayLike, *, eta: float, moment: float = 2, radius: str = "gamma",
                 owner: str = "MIPNoiseLaw"):
        self.sigma, self.active = _check_sigma(owner, sigma)
        self.eta = check_eta(owner, eta)
        self.moment = check_moment(owner, moment)
        self.radius = check_option(
            owner, "radius", radius, _RADII,
            why="'gamma' gives Theorem 9's density; 'laplace' is Corollary 10 as printed.",
        )
        self.dim = int(self.active.sum())

    def __repr__(self):
        return (f"MIPNoiseLaw(D={self.sigma.size}, d={self.dim}, eta={self.eta:g}, "
                f"moment={self.moment:g}, radius={self.radius!r})")

    def sample(self, n_samples: int, rng: np.random.Generator) -> np.ndarray:
        """``n_samples`` noise rows of shape ``(n_samples, D)`` drawn with ``rng``; no warnings.

        Parameters
        ----------
        n_samples : int
            Number of rows.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of shape (n_samples, D)
        """
        return _draw_mip_noise(self.sigma, self.active, self.eta, self.moment, self.radius, rng, n_samples)

    def logpdf(self, x: ArrayLike) -> np.ndarray:
        """Unnormalised log-density of each row of ``x`` (see :func:`mip_noise_logpdf`).

        Parameters
        ----------
        x : ndarray of shape (m, D)

        Returns
        -------
        ndarray of shape (m,)
        """
        return _logpdf_rows(np.asarray(x, dtype=np.float64), self.sigma, self.active, self.eta,
                            self.moment, self.radius)


# --------------------------------------------------------------------------- Gaussian noise


def sample_gaussian_noise(
    scale: ArrayLike, noise_scale: float, *, random_state=None, n_samples: int | None = None
) -> np.ndarray:
    r"""Draw the Gaussian noise of the coupling calibration: :math:`s\,w \odot z` or :math:`s\,Lz`.

    Parameters
    ----------
    scale : array_like of shape (d,) or (d, d)
        The noise shape, fixed given the dataset: a vector :math:`w` (noise
        :math:`\mathcal{N}(0, s^2 \operatorname{diag}(w)^2)`; coordinates with
        :math:`w_i = 0` get no noise) or a square factor :math:`L` (noise
        :math:`\mathcal{N}(0, s^2 LL^\top)`).
    noise_scale : float
        :math:`s \ge 0`, e.g. from :func:`skmip.bounds.coupling_noise_scale`.
    random_state : None, int or Generator, default=None
        ``None`` draws fresh OS entropy; an int or ``SeedSequence`` warns with
        :class:`~skmip.exceptions.PrivacyWarning`.
    n_samples : int, default=None
        Number of draws; ``None`` returns one vector of shape (d,).

    Returns
    -------
    ndarray of shape (d,) or (n_samples, d)

    Notes
    -----
    The coupling bound (``docs/coupling.md``) holds for any shape fixed given the dataset
    D; the scale :math:`s` is calibrated to it from whitened swap distances.

    Examples
    --------
    >>> x = sample_gaussian_noise([1.0, 0.0], 2.0, random_state=np.random.default_rng(0),
    ...                           n_samples=50000)
    >>> bool(abs(x[:, 0].std() - 2.0) < 0.03), float(np.abs(x[:, 1]).max())
    (True, 0.0)
    """
    owner = "sample_gaussian_noise"
    s = check_interval(owner, "noise_scale", noise_scale, 0, None, closed="left")
    shape = np.asarray(scale, dtype=np.float64)
    if shape.ndim == 1:
        shape, _ = _check_sigma(owner, shape)
    elif not (shape.ndim == 2 and shape.shape[0] == shape.shape[1] and np.isfinite(shape).all()):
        raise ValueError(
            f"{owner}: scale must be a 1-D vector or a finite square matrix; got shape {shape.shape}."
        )
    n = 1 if n_samples is None else check_int(owner, "n_samples", n_samples, 1, None)
    if isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        check_privacy_seed(owner, random_state)
    z = resolve_rng(random_state).standard_normal((n, shape.shape[0]))
    out = s * (z * shape if shape.ndim == 1 else z @ shape.T)
    return out[0] if n_samples is None else out
