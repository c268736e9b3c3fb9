r"""Certified swap distances: a-posteriori bounds on the engines' approximation error.

The ``"newton"`` engine approximates the minimiser of the swapped objective
:math:`F_{\rm in} = F_H - \ell_e + \ell_x` by one target-exact step from the fit
:math:`\theta_0` on :math:`H = D_{\rm out}`. Its distance is an estimate; the printed bound
needs an *upper bound* on the exact one. This module turns each estimate into one, for
generalised-linear losses that are *generalised self-concordant* (Bach 2010):
:math:`|\ell_i'''(u)| \le R\,\ell_i''(u)` for every margin :math:`u` and row :math:`i`
(logistic: :math:`R = 1`; Poisson, Gamma and Tweedie with the log link and
:math:`1 \le p \le 2`: :math:`R = \max(2 - p, p - 1)`; least squares: :math:`R = 0`).
The derivation, with every inequality, is in docs/coupling.md, "Certified distances".

Three facts carry it (all for a convex objective :math:`F` whose data part is
:math:`\sum_i \ell_i(x_i^\top\theta)` and whose regulariser is quadratic):

1. **Curvature moves slowly**: :math:`\ell''(u + t) \ge e^{-R|t|}\ell''(u)` (Gronwall on
   :math:`|(\log \ell'')'| \le R`), so :math:`\nabla^2 F(\theta') \succeq e^{-R \max_i
   |x_i^\top(\theta' - \theta)|}\,\nabla^2 F(\theta)`.
2. **Gradient remainder**: :math:`|\ell'(u + t) - \ell'(u) - \ell''(u) t| \le \ell''(u)\,
   \psi_R(|t|)` with :math:`\psi_R(t) = (e^{Rt} - 1 - Rt)/R`, and :math:`\psi_R(t)/t` grows
   with :math:`t`.
3. **Ball lemma**: if :math:`\|\nabla F(\tilde\theta)\|_{A^{-1}} \le g` and
   :math:`\nabla^2 F \succeq \mu A` on :math:`\{\|\theta - \tilde\theta\|_A \le \rho\}` with
   :math:`g < \mu\rho`, the minimiser lies within :math:`g/\mu \le \rho` of
   :math:`\tilde\theta` in the :math:`A`-norm (along every ray from :math:`\tilde\theta`
   the slope is :math:`\ge -g + \mu t > 0` for :math:`g/\mu < t \le \rho`).

This module holds the certificate of one fit (:class:`FitCertificate`; the release check is
in :mod:`skmip.calibration.swap.release`); the sums over a fit's rows are in
:mod:`skmip.calibration.swap.row_sums`, the certification of the pairs of one fit in
:mod:`skmip.calibration.swap.pair_certifier`, and the exact solves of its loose pairs in
:mod:`skmip.calibration.swap.exact_stack`.
"""

from __future__ import annotations

import numpy as np
from scipy.special import lambertw

from skmip.calibration.swap.stacks import _largest_eigenvalues

#: Relative slack on the radius found by the ball lemma (its root is computed in floating point).
_ROOT_SLACK = 1e-6
#: Relative rounding allowance of a distance assembled from squared norms (cancellation).
_ASSEMBLY_RTOL = 1e-7


#: Whitened distance allowed between a released fit and the exact minimiser (checked at release
#: by :func:`check_release`; float32 parameters stall near 1e-7 relative); every certified
#: distance carries twice it (both fits of a pair).
RELEASE_TOL = 1e-5


def remainder_ratio(x):
    r""":math:`\psi_R(T)/T = (e^{x} - 1 - x)/x` at :math:`x = RT \ge 0` (0 at 0), elementwise.

    It is :math:`x` times :func:`remainder_quotient` (whose series below 1e-3 bounds it from
    above).

    Examples
    --------
    >>> round(float(remainder_ratio(1.0)), 12) == round(float(np.e - 2.0), 12)
    True
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(x == 0, 0.0, x * remainder_quotient(x))


def remainder_quotient(x):
    r""":math:`(e^{x} - 1 - x)/x^2` at :math:`x \ge 0` (1/2 at 0), elementwise: with
    :math:`x = RT`, :math:`R` times it is :math:`\psi_R(T)/T^2`, which bounds
    :math:`\psi_R(t)/t^2` for every :math:`t \le T` (it increases).

    Below 1e-3 a series that bounds it from above (its neglected tail is below
    :math:`x^3/100` there) avoids the cancellation of ``expm1(x) - x``.

    Examples
    --------
    >>> float(remainder_quotient(0.0))
    0.5
    >>> round(float(remainder_quotient(1.0)), 12) == round(float(np.e - 2.0), 12)
    True
    """
    x = np.asarray(x, dtype=np.float64)
    small = x < 1e-3
    xs = np.where(small, 1.0, x)
    with np.errstate(over="ignore", invalid="ignore"):
        big = np.where(np.isinf(xs), np.inf, (np.expm1(xs) - xs) / xs**2)
    series = 0.5 + x / 6 + x**2 / 24 + x**3 / 100
    return np.where(small, series, big)


def ball_radius(g, c, b):
    r"""Radius that the ball lemma certifies, or ``inf`` where it certifies none.

    For a gradient norm ``g`` at the approximate point and a strong-convexity factor
    :math:`\mu(\rho) = e^{-(c + b\rho)}` on the ball of radius :math:`\rho` (all in one
    norm), returns a :math:`\rho` with :math:`g\,e^{c + b\rho} < \rho`: the minimiser is
    then within :math:`\rho`. The smallest such :math:`\rho` solves
    :math:`\rho = g e^{c + b\rho}`, i.e. :math:`\rho = g\,e^{c - W_0(-z)}` with
    :math:`z = b g e^{c}` (Lambert's :math:`W`); there is none when :math:`z \ge 1/e`.

    Examples
    --------
    >>> float(ball_radius(1e-3, 0.0, 0.0)) > 1e-3
    True
    >>> float(ball_radius(1.0, 0.0, 1.0))
    inf
    """
    g, c, b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (g, c, b)))
    with np.errstate(over="ignore", invalid="ignore"):
        z = b * g * np.exp(c)
    ok = np.isfinite(z) & (z < np.exp(-1.0) * (1.0 - 1e-9)) & np.isfinite(g)
    w = _lambertw0_negative(np.where(ok, z, 0.0))
    rho = g * np.exp(c - w) * (1.0 + _ROOT_SLACK) + 1e-300
    # The fixed point was found in floating point: check the lemma's strict inequality.
    with np.errstate(over="ignore", invalid="ignore"):
        ok &= g * np.exp(c + b * rho) < rho
    return np.where(ok, rho, np.inf)


def _lambertw0_negative(z):
    r""":math:`W_0(-z)` for :math:`0 \le z < 1/e`, elementwise.

    Below ``z = 1/4`` three Halley steps from the series :math:`-z - z^2` (error below
    :math:`2z^3`: cubic convergence reaches rounding level), in real arithmetic; above it
    SciPy's complex :func:`~scipy.special.lambertw`. Only speed rests on the accuracy:
    :func:`ball_radius` checks the lemma's inequality at the radius it returns.
    """
    z = np.asarray(z, dtype=np.float64)
    small = z < 0.25
    w = np.where(small, -z - z * z, 0.0)
    for _ in range(3):
        ew = np.exp(w)
        f = w * ew + np.where(small, z, 0.0)
        w = w - f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
    if not small.all():
        w = np.where(small, w, np.real(lambertw(-np.where(small, 0.0, z), 0)))
    return w


def fit_constants(hinv, residual, whiten, gsc, leverage, nu="eigen", slack=0.0):
    r"""The constants of :class:`FitCertificate` for a stack of fits: ``(nu, lam, g0,
    out_error, leverage)``, arrays over the fits (``leverage`` clipped at 0, (B, k)).

    ``hinv`` (B, D, D), ``residual`` (B, D), ``leverage`` (B, k): each fit's :math:`K^{-1}`,
    :math:`\nabla F_H(\theta_0)` and :math:`x_i^\top K^{-1} x_i`. The products are those of
    one fit (BLAS per matrix), so a fit's constants do not depend on the fits beside it.
    ``slack`` is a rounding allowance added to :math:`\|\nabla F_H(\theta_0)\|_{K^{-1}}`.
    """
    W = whiten(np.eye(hinv.shape[-1]))  # rows: whitened images of the unit vectors
    M = W.T @ hinv @ W
    # The largest eigenvalue, or (nu="trace", cheaper) the trace, which bounds it.
    top = (np.array([np.trace(m) for m in M]) if nu == "trace"
           else _largest_eigenvalues(0.5 * (M + np.swapaxes(M, -1, -2))))
    nu_ = np.maximum(top, 0.0)
    lam = leverage.max(axis=-1) if leverage.shape[-1] else np.zeros(leverage.shape[:-1])
    g2 = ((residual[:, None, :] @ hinv) @ residual[:, :, None])[:, 0, 0]
    g0 = np.sqrt(np.maximum(g2, 0.0)) + float(slack)
    r_out = ball_radius(g0, 0.0, float(gsc) * np.sqrt(lam))
    return nu_, lam, g0, np.sqrt(nu_) * r_out, np.maximum(leverage, 0.0)


class FitCertificate:
    r"""What one fit on :math:`H` contributes to every pair's certificate.

    Parameters
    ----------
    hinv : ndarray (D, D)
        :math:`K^{-1}`, the inverse of :math:`K = \nabla^2 F_H(\theta_0)`.
    features : ndarray (k, D)
        The rows :math:`x_i` of :math:`H` (their leverages :math:`x_i^\top K^{-1} x_i` bound the
        margins' moves).
    residual : ndarray (D,)
        :math:`\nabla F_H(\theta_0)` (the solver's residual; the engine takes it as 0).
    whiten : callable
        Maps rows of parameter changes (block coordinates) to the noise's whitened
        coordinates (zero-scale coordinates excluded: see docs/coupling.md).
    gsc : float
        The loss's constant :math:`R`.
    nu : {"eigen", "trace"}
        How :math:`\nu` is computed (below).
    leverage : ndarray (k,), optional
        :math:`x_i^\top K^{-1} x_i` for the rows of ``features``, when the engine has them
        (``features`` is then not used); for rows of several margins, their range leverages
        (:func:`~.multi_certify.range_leverage`).
    slack : float, default=0.0
        A rounding allowance added to :math:`\|\nabla F_H(\theta_0)\|_{K^{-1}}`.

    Attributes
    ----------
    nu : float
        :math:`\lambda_{\max}(W K^{-1} W^\top)` for the whitening :math:`W`: whitened norm
        per unit of :math:`K`-norm is at most :math:`\sqrt{\nu}`.
    g0 : float
        :math:`\|\nabla F_H(\theta_0)\|_{K^{-1}}`.
    out_error : float
        Whitened distance from :math:`\theta_0` to the exact minimiser of :math:`F_H`.
    """

    def __init__(self, hinv, features, residual, whiten, gsc, nu="eigen", leverage=None, slack=0.0):
        if leverage is None:
            leverage = ((features @ hinv) * features).sum(axis=1)  # x_i' K^-1 x_i
        consts = fit_constants(hinv[None], residual[None], whiten, gsc, np.asarray(leverage)[None], nu,
                               slack=slack)
        self.nu, self.lam, self.g0, self.out_error = (float(c[0]) for c in consts[:4])
        self.leverage, self.gsc = consts[4][0], float(gsc)

    def pair_bound(self, dist, bound, det, c_e, c_x, norms_e, norms_x, e_rows, x_rows, sums):
        r"""Certified upper bounds on the exact distances of pairs, from the engine's
        (the closed form of docs/coupling.md, "Certified distances", stage 1).

        Parameters
        ----------
        dist : ndarray
            The engine's whitened distances :math:`\|W\Delta\|`.
        bound : ndarray
            A triangle-inequality bound on them (:math:`|c_e|\|W\xi_e\| + |c_x|\|W\xi_x\|`),
            which sizes the rounding of the squared-norm assembly.
        det : dict
            The pairs' details from the engine (``_pair_coefficients(..., details=True)``):
            ``dK2`` = :math:`\|\Delta\|_K^2` (an upper bound on :math:`\|\Delta\|_A^2`,
            :math:`A = K - \ell_e'' x_e x_e^\top`), ``lev_e`` = :math:`\ell_e'' x_e^\top
            K^{-1} x_e < 1` (so :math:`A \succeq (1 - \text{lev}_e) K`), ``res_x`` (the
            :math:`A^{-1}`-norm of the gradient the target's scalar equation leaves), the
            target's ``a``, ``tau``, ``curv_x`` and ``kappa_e`` = :math:`\ell_e''`.
        c_e, c_x : ndarray
            :math:`\Delta = c_e \xi_e - c_x \xi_x`.
        norms_e, norms_x : ndarray
            :math:`\|W\xi_e\|`, :math:`\|W\xi_x\|`.
        e_rows, x_rows : ndarray of int
            The pairs' rows (indices into ``sums``' arrays).
        sums : RowSums
            The fit's row sums.
        """
        dist = np.minimum(bound, dist + _ASSEMBLY_RTOL * bound)
        lev_e, dK2, res_x = det["lev_e"], det["dK2"], det["res_x"]
        den = np.maximum(1.0 - lev_e, 0.0)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            shrink = 1.0 / np.sqrt(den)  # inf if A is not PD
            dA = np.sqrt(np.maximum(dK2, 0.0))
            kappa = np.sqrt(self.lam) * shrink  # max_i ||x_i||_{A^-1} over the rows of H - e
            R = self.gsc
            ae, ax = np.abs(c_e), np.abs(c_x)
            T = np.minimum(ae * sums.reach[e_rows] + ax * sums.reach[x_rows], kappa * dA)
            q = R * remainder_quotient(R * T)  # psi(t) <= q t^2 for t <= T
            # ||sum_i r_i x_i||_{A^-1} <= sqrt(sum_i r_i^2 / l_i'') <= q (sum_i l_i'' delta_i^4)^(1/2)
            L4 = ae * sums.quartic[e_rows] + ax * sums.quartic[x_rows]
            g_rem = np.minimum(q * L4**2, remainder_ratio(R * T) * dA)
            g = g_rem + self.g0 * shrink + res_x
            rho = ball_radius(g, R * T, R * kappa)
            sqnu = np.sqrt(self.nu) * shrink  # whitened norm per unit of A-norm
            # Directional: W e = -W A^-1 grad - W A^-1 (B - A) e, row by row with
            # ||W A^-1 x_i|| <= ||W xi_i|| + v_e, v_e = l_e'' M_e ||W xi_e|| / (1 - lev_e).
            v_e = det["kappa_e"] * sums.reach[e_rows] * norms_e / den
            to_x = norms_x + np.abs(det["tau"]) * norms_e  # ||W A^-1 x_x||
            root_a = np.sqrt(np.maximum(det["a"], 0.0))
            first = np.minimum(q * ((ae * sums.weighted[e_rows] + ax * sums.weighted[x_rows]) ** 2 + v_e * dK2),
                               sqnu * g_rem)
            fixed = sqnu * self.g0 + np.minimum(sqnu * res_x, np.where(res_x > 0, to_x * res_x / root_a, 0.0))
            # ||W A^-1 (B - A) e|| <= rho (sum_i l_i'' expm1(y_i)^2 ||W A^-1 x_i||^2)^(1/2) with
            # y_i = R(|delta_i| + |x_i' e|) <= X and expm1(y) <= y e^X, then Minkowski.
            X = R * (T + kappa * rho)
            rows = ae * sums.squared[e_rows] + ax * sums.squared[x_rows] + v_e * dA + rho * (sums.top + v_e)
            target = det["curv_x"] * np.exp(R * root_a * rho) * root_a * rho * to_x
            second = rho * R * np.exp(X) * rows + target
            err = np.minimum(sqnu * rho, first + fixed + second)
        ok = np.isfinite(err) & np.isfinite(rho)
        return np.where(ok, dist + err + self.out_error + 2 * RELEASE_TOL, np.inf)


#: A pair whose certificate adds more than this fraction to its estimate is solved exactly.
