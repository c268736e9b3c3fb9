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
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.special import lambertw

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
        (``features`` is then not used).

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

    def __init__(self, hinv, features, residual, whiten, gsc, nu="eigen", leverage=None):
        W = whiten(np.eye(hinv.shape[0]))  # rows: whitened images of the unit vectors
        M = W.T @ hinv @ W
        # The largest eigenvalue, or (nu="trace", cheaper) the trace, which bounds it.
        top = np.trace(M) if nu == "trace" else linalg.eigvalsh(0.5 * (M + M.T))[-1]
        self.nu = float(max(top, 0.0))
        if leverage is None:
            leverage = ((features @ hinv) * features).sum(axis=1)  # x_i' K^-1 x_i
        self.leverage = np.maximum(leverage, 0.0)
        self.lam = float(np.max(leverage)) if np.size(leverage) else 0.0
        self.g0 = float(np.sqrt(max(residual @ hinv @ residual, 0.0)))
        self.gsc = float(gsc)
        r_out = ball_radius(self.g0, 0.0, self.gsc * np.sqrt(self.lam))
        self.out_error = float(np.sqrt(self.nu) * r_out)

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


def _column_sums(weights, M):
    """``weights @ M`` summed row after row (the same rounding for any memory layout)."""
    return np.add.reduce(weights[:, None] * M, axis=0)


class RowSums:
    r"""Sums over the rows of :math:`H` that the closed-form certificate needs, per row
    :math:`j` of :math:`\mathcal{D}` (docs/coupling.md, "Certified distances").

    With :math:`h_{ij} = x_i^\top K^{-1} x_j`, :math:`\ell_i''` at the fit,
    :math:`u_i = \|W K^{-1} x_i\|` and :math:`\lambda_i = h_{ii}`, for every row :math:`j`:
    ``reach`` :math:`\ge \max_i |h_{ij}|`, ``quartic`` :math:`\ge (\sum_i \ell_i''
    h_{ij}^4)^{1/4}`, ``weighted`` :math:`\ge (\sum_i \ell_i'' u_i h_{ij}^2)^{1/2}`,
    and ``squared`` :math:`\ge (\sum_i \ell_i'' u_i^2 h_{ij}^2)^{1/2}`; and ``top`` =
    :math:`\max_i u_i`. The sums are
    exact over a set :math:`S` of rows of :math:`H` (all of them where the
    :math:`(|S|, n)` product costs at most ``_SUMS_WORK``, else the rows of largest
    leverage and of largest :math:`u_i`); the rest is bounded by Cauchy-Schwarz with
    :math:`\sum_i \ell_i'' h_{ij}^2 \le h_{jj}` and :math:`h_{ij}^2 \le \lambda_i h_{jj}`.

    ``curv``, ``lev`` and ``unorm`` are :math:`\ell_i''`, :math:`\lambda_i` and :math:`u_i`
    for the rows of ``H`` (in its order). With ``hinv`` every row of ``features`` is summed
    at once; else the rows are summed as the engine reaches them (:meth:`fill`, from the
    :math:`\xi_j = K^{-1}x_j` and :math:`h_{jj}` it computed), and rows not yet filled hold
    NaN (a bound built on them is not finite, so its pair would fall back to an exact
    solve). Either way the sums are taken a chunk of rows at a time: the temporaries stay
    small whatever :math:`n`.
    """

    def __init__(self, features, H, curv, lev, unorm, hinv=None):
        k, (n, D) = H.size, features.shape
        self.top = float(unorm.max()) if unorm.size else 0.0
        if k * n * D <= _SUMS_WORK:
            S = np.arange(k)
        else:
            m = min(k, max(D, int(_SUMS_WORK // (n * D))))
            S = np.union1d(_largest(lev, (m + 1) // 2), _largest(unorm, m // 2))
        rest = np.ones(k, dtype=bool)
        rest[S] = False
        self._split = bool(rest.any())
        if self._split:
            self._lam_c, self._u_c = float(lev[rest].max()), float(unorm[rest].max())
        self._l, self._u, self._xS = curv[S], unorm[S], features[H[S]]
        self.reach, self.quartic, self.weighted, self.squared = (np.full(n, np.nan) for _ in range(4))
        if hinv is not None:
            for rows, xi in _row_images(features, hinv):
                self.fill(rows, xi, (xi * features[rows]).sum(-1))

    def fill(self, rows, xi, h):
        """Sum the rows ``rows`` (any shape; ``xi`` their :math:`K^{-1}x_j`, ``h`` their
        :math:`h_{jj}`) that are not summed yet."""
        rows = np.asarray(rows).ravel()
        xi = xi.reshape(rows.size, -1)
        h = np.asarray(h).ravel()
        todo = np.isnan(self.reach[rows])
        if not todo.all():
            rows, xi, h = rows[todo], xi[todo], h[todo]
        l, u, xS = self._l, self._u, self._xS
        width = max(1, _SUMS_ELEMENTS // max(l.size, 1))  # (|S|, width) temporaries
        for a in range(0, rows.size, width):
            c = slice(a, a + width)
            a_S = np.abs(xS @ xi[c].T)  # (|S|, chunk): |h_ij|, i in S
            reach = a_S.max(axis=0) if l.size else np.zeros(a_S.shape[1])
            h2 = np.multiply(a_S, a_S, out=a_S)
            # Column sums in a fixed order (a BLAS matrix-vector product may round by
            # alignment, and the distances must not depend on how rounds were split).
            weighted = _column_sums(l * u, h2)  # squared for now
            squared = _column_sums(l * u * u, h2)  # squared for now
            quartic = _column_sums(l, np.multiply(h2, h2, out=h2))  # to the 4th power for now
            if self._split:
                hjj = np.maximum(h[c], 0.0)
                lam_c, u_c = self._lam_c, self._u_c
                reach = np.maximum(reach, np.sqrt(lam_c * hjj))
                quartic = quartic + lam_c * hjj**2
                weighted = weighted + u_c * hjj
                squared = squared + u_c**2 * hjj
            r = rows[c]
            self.reach[r] = reach
            self.quartic[r] = quartic**0.25
            self.weighted[r] = np.sqrt(weighted)
            self.squared[r] = np.sqrt(squared)


def fit_row_scalars(glm, theta0, H, hinv, whiten):
    r"""For the rows of ``H`` (in its order): the leverages :math:`x_i^\top K^{-1} x_i`, the
    whitened norms :math:`\|W K^{-1} x_i\|` and the curvatures :math:`\ell_i''` at the
    margins :math:`x_i^\top\theta_0`, a chunk of rows at a time."""
    lev, unorm, curv = np.empty(H.size), np.empty(H.size), np.empty(H.size)
    for a in range(0, H.size, _SUMS_CHUNK):
        rows = H[a:a + _SUMS_CHUNK]
        F = glm.features[rows]
        xi = F @ hinv
        lev[a:a + _SUMS_CHUNK] = (F * xi).sum(-1)
        unorm[a:a + _SUMS_CHUNK] = np.linalg.norm(whiten(xi), axis=-1)
        curv[a:a + _SUMS_CHUNK] = glm.d2loss(F @ theta0, rows)
    return lev, unorm, curv


def _largest(values, m):
    """Indices of the ``m`` largest entries of ``values`` (any order)."""
    if m <= 0:
        return np.zeros(0, dtype=np.intp)
    if m >= values.size:
        return np.arange(values.size)
    return np.argpartition(-values, m - 1)[:m]


def _row_images(features, hinv):
    """``(rows, K^-1 x_j)`` for every row of ``features``, a chunk at a time."""
    n = features.shape[0]
    for a in range(0, n, _SUMS_CHUNK):
        rows = np.arange(a, min(a + _SUMS_CHUNK, n))
        yield rows, features[rows] @ hinv


def exact_minimiser(features, dloss, d2loss, rows, P, reg_at, start, whiten, gsc):
    """Damped Newton to the minimiser of the objective on ``rows``, and the certified
    whitened distance of the result to the exact minimiser (``inf`` on failure)."""
    from skmip.calibration.swap.polish import _damped_step

    F = features[rows]

    def gradient(theta):
        return F.T @ dloss(F @ theta, rows) + reg_at(theta)

    theta = np.array(start, dtype=np.float64)
    grad = gradient(theta)
    previous = np.inf
    for _ in range(100):
        K = (F.T * d2loss(F @ theta, rows)) @ F + P
        try:
            fac = linalg.cho_factor(K, lower=True, check_finite=False)
        except linalg.LinAlgError:
            return theta, np.inf
        step = linalg.cho_solve(fac, grad, check_finite=False)
        decrement = float(step @ grad)
        if not np.isfinite(decrement):
            return theta, np.inf
        # Stop at rounding level, or once Newton's quadratic convergence has stalled there.
        if decrement <= 1e-26 * (1.0 + float(theta @ theta)) or decrement >= 0.25 * previous:
            break
        previous = decrement
        move, grad = _damped_step(gradient, theta, step, grad)
        theta = theta - move
    K = (F.T * d2loss(F @ theta, rows)) @ F + P
    try:
        fac = linalg.cho_factor(K, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return theta, np.inf
    hinv = linalg.cho_solve(fac, np.eye(K.shape[0]), check_finite=False)
    # At a converged solve the residual is at rounding level: the trace bound on nu costs less.
    return theta, FitCertificate(hinv, F, gradient(theta), whiten, gsc, nu="trace").out_error


#: A pair whose certificate adds more than this fraction to its estimate is solved exactly.
FALLBACK_RTOL = 0.1
#: ... or more than this fraction of the median distance of its fit.
_FALLBACK_ATOL = 0.01
#: Exact minimisers kept per job (keyed by training set).
_CACHE_SIZE = 20000
#: Elements of one (rows x pairs) array of the second stage.
_ROW_ELEMENTS = 2**21
#: Largest |S| n D spent on the exact part of :class:`RowSums` per fit (all of H where k n D
#: fits; else the D rows, or more within this budget, that dominate the bounds).
_SUMS_WORK = 3e7
#: Elements of one (|S|, rows) temporary of :class:`RowSums`, and rows per chunk of
#: :func:`_row_images` and :func:`fit_row_scalars`.
_SUMS_ELEMENTS = 2**19
_SUMS_CHUNK = 2**14
#: Chord steps of the second stage before its certificate.
_CHORD_STEPS = 0
#: Further chord steps for the pairs still loose after those.
_MORE_CHORD_STEPS = 6


class PairCertifier:
    r"""Certified distances of the pairs of one fit (one generalised-linear block).

    The engine's estimates become upper bounds by :meth:`FitCertificate.pair_bound`; a pair
    whose bound is infinite, or exceeds its estimate by more than ``FALLBACK_RTOL``, is
    solved to convergence (:func:`exact_distance_bound`), which is certified by its own
    gradient and Hessian. ``block`` is the fit's :class:`~.losses.LossBlock` on ``H``,
    ``factor`` its Hessian's Cholesky factor, ``P`` the regulariser's Hessian.
    """

    def __init__(self, glm, theta0, reg0, P, hinv, H, residual, whitener, index, cache=None, rows=None):
        self.glm, self.theta0, self.reg0, self.P, self.hinv, self.H = glm, theta0, reg0, P, hinv, H
        # Exact minimisers by training set (small n repeats them across rounds); the
        # regulariser is the same function for every k-row set (reg0 - theta0 P is constant).
        self.cache = {} if cache is None else cache
        self.reg_const = reg0 - theta0 @ P
        self.whiten = lambda V: whitener.apply(V, index)
        # ``rows``: the engine's (leverages, whitened norms, curvatures) of the rows of H; the
        # row sums are then filled as it reaches the rows (RowSums.fill). Else all computed here.
        lev, self.unorm, self.curv = fit_row_scalars(glm, theta0, H, hinv, self.whiten) if rows is None else rows
        self.fit = FitCertificate(hinv, None, residual, self.whiten, glm.gsc, leverage=lev)
        self.sums = RowSums(glm.features, H, self.curv, self.fit.leverage, self.unorm,
                            hinv=hinv if rows is None else None)

    def bound(self, dist, norms_e, norms_x, c_e, c_x, det, e_rows, x_rows):
        """Closed-form bounds for pairs laid out as ``dist`` (:meth:`FitCertificate.pair_bound`);
        ``norms_*``: whitened norms of xi_e, xi_x."""
        top = np.abs(c_e) * norms_e + np.abs(c_x) * norms_x
        return self.fit.pair_bound(dist, top, det, c_e, c_x, norms_e, norms_x, e_rows, x_rows, self.sums)

    @staticmethod
    def _floor(dist):
        """Slack that cannot matter: a small fraction of the typical distance of the fit."""
        finite = dist[np.isfinite(dist)]
        return _FALLBACK_ATOL * float(np.median(finite)) if finite.size else 0.0

    @staticmethod
    def _loose(dist, certified, floor):
        return ~np.isfinite(certified) | (certified > dist * (1.0 + FALLBACK_RTOL) + floor + 1e-12)

    def _row_bounds(self, x, e, c_e, c_x, steps=None, start=None):
        r"""Second stage for pairs (1-D arrays): chord steps over the rows, then the lemma.

        From the estimate :math:`\Delta` (or :math:`\theta_0` where it is not finite), a few
        chord steps :math:`\Delta \leftarrow \Delta - A^{-1}\nabla F_{\rm in}(\theta_0 +
        \Delta)` with :math:`A = K - \ell_e'' x_e x_e^\top` (Sherman-Morrison on
        :math:`K^{-1}`); the gradient is evaluated over the rows from differences
        :math:`\ell_i'(m_i + \delta_i) - \ell_i'(m_i)` (little cancellation), with a
        rounding allowance. The ball lemma at the last point uses the exact
        :math:`\|\cdot\|_{A^{-1}}` of that gradient and :math:`T = \max_i |\delta_i|`.
        """
        glm, H, P, hinv, theta0 = self.glm, self.H, self.P, self.hinv, self.theta0
        fit = self.fit
        F = glm.features[H]  # (k, D)
        mH = F @ theta0
        d1 = glm.dloss(mH, H)
        r0 = F.T @ d1 + self.reg_const + theta0 @ P  # the fit's own residual gradient
        out = np.empty(x.shape)
        moved_to = np.empty((x.size, theta0.size))
        width = max(1, _ROW_ELEMENTS // max(H.size, 1))
        R = fit.gsc
        steps = _CHORD_STEPS if steps is None else steps
        for a in range(0, x.size, width):
            j = slice(a, a + width)
            xe, xx, ej, xj = glm.features[e[j]], glm.features[x[j]], e[j], x[j]
            xi_e = xe @ hinv
            kap = glm.d2loss(xe @ theta0, ej)
            den = 1.0 - kap * (xe * xi_e).sum(-1)
            good = den > 0
            den = np.where(good, den, 1.0)
            shrink = 1.0 / np.sqrt(den)
            kappa = np.sqrt(fit.lam) * shrink
            ge = r0 - glm.dloss(xe @ theta0, ej)[:, None] * xe  # grad G(theta0) = r0 - l'_e x_e
            mx = xx @ theta0
            not_e = H[:, None] != ej[None, :]

            def gradient(Delta):
                delta = F @ Delta.T  # (k, m)
                moved = glm.dloss(mH[:, None] + delta, H[:, None])
                diff = np.where(not_e, moved - d1[:, None], 0.0)
                slack = 1e-15 * (np.abs(moved) + np.abs(d1)[:, None]).sum(axis=0) + 1e-15 * np.abs(ge).sum(-1)
                g = diff.T @ F + ge + Delta @ P + glm.dloss(mx + (xx * Delta).sum(-1), xj)[:, None] * xx
                return g, delta, slack

            def a_inv(v):
                return v @ hinv + (kap * (xi_e * v).sum(-1) / den)[:, None] * xi_e

            if start is None:
                Delta = (c_e[j, None] * xi_e - c_x[j, None] * (xx @ hinv))
            else:
                Delta = start[j]
            Delta = np.where(np.isfinite(Delta).all(axis=-1, keepdims=True), Delta, 0.0)
            for _ in range(steps):
                g, _, _ = gradient(Delta)
                Delta = Delta - a_inv(g)
            g, delta, slack = gradient(Delta)
            step = a_inv(g)
            gnorm = np.sqrt(np.maximum((step * g).sum(-1), 0.0)) + kappa * slack
            T = np.abs(delta).max(axis=0)
            rho = ball_radius(gnorm, R * T, R * kappa)
            sqnu = np.sqrt(fit.nu) * shrink
            with np.errstate(invalid="ignore", over="ignore"):
                err = sqnu * rho
                # Directional: ||W (theta* - theta0)|| <= ||W (Delta - A^-1 g)|| + ||W A^-1 (B - A) e||
                # (docs/coupling.md, stage 2); the rows' curvature moves by expm1(R |move_i|).
                v_e = kap * self.sums.reach[ej] * np.linalg.norm(self.whiten(xi_e), axis=-1) / den
                root = np.sqrt(fit.leverage)[:, None]
                E = np.expm1(R * (np.abs(delta) + shrink * root * rho))
                c1 = self.curv * root[:, 0]
                E2 = E * E
                # Each row's |x_i' e| <= ||x_i||_{A^-1} rho, or all rows' sum_i l_i'' (x_i' e)^2 <= rho^2.
                rows = np.minimum(shrink * (_column_sums(c1 * self.unorm, E) + v_e * _column_sums(c1, E)),
                                  np.sqrt(_column_sums(self.curv * self.unorm**2, E2))
                                  + v_e * np.sqrt(_column_sums(self.curv, E2)))
                to_x = xx @ hinv + (kap * (xi_e * xx).sum(-1) / den)[:, None] * xi_e  # A^-1 x_x
                root_a = np.sqrt(np.maximum((to_x * xx).sum(-1), 0.0))
                curv_x = glm.d2loss(mx + (xx * Delta).sum(-1), xj)
                target = curv_x * np.exp(R * root_a * rho) * root_a * rho * np.linalg.norm(self.whiten(to_x), axis=-1)
                second = rho * rows + target + sqnu * kappa * slack
                chord = np.linalg.norm(self.whiten(Delta - step), axis=-1) * (1.0 + 1e-12)
            dist = np.linalg.norm(self.whiten(Delta), axis=-1) * (1.0 + 1e-12)
            ok = good & np.isfinite(err) & np.isfinite(dist)
            bound = np.minimum(dist + err, np.where(np.isfinite(second) & np.isfinite(chord), chord + second, np.inf))
            out[j] = np.where(ok, bound + fit.out_error + 2 * RELEASE_TOL, np.inf)
            moved_to[j] = np.where(ok[:, None] & np.isfinite(chord)[:, None], Delta - step, Delta)
        return out, moved_to

    def tighten(self, dist, certified, x_rows, e_rows, c_e, c_x, det):
        """Tighten the loose entries of ``certified`` (laid out as ``dist``): first by the
        remainder summed over the rows, then by exact solves; returns the array."""
        floor = self._floor(dist)
        loose = self._loose(dist, certified, floor)
        if not loose.any():
            return certified
        shape = dist.shape
        x_rows, e_rows = (np.broadcast_to(v, shape) for v in (x_rows, e_rows))
        c_e, c_x = np.broadcast_to(c_e, shape), np.broadcast_to(c_x, shape)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # diverging steps: inf
            return self._tighten(dist, certified, loose, floor, x_rows, e_rows, c_e, c_x)

    def _tighten(self, dist, certified, loose, floor, x_rows, e_rows, c_e, c_x):
        out = certified.copy()
        idx = np.nonzero(loose)
        bounds, moved = self._row_bounds(x_rows[idx], e_rows[idx], c_e[idx], c_x[idx])
        out[idx] = np.minimum(out[idx], bounds)
        # More chord steps (O(k D) each) where one was not enough, before exact solves.
        again = self._loose(dist[idx], out[idx], floor)
        if again.any():
            sub = tuple(i[again] for i in idx)
            bounds2, moved[again] = self._row_bounds(x_rows[sub], e_rows[sub], c_e[sub], c_x[sub],
                                                     steps=_MORE_CHORD_STEPS, start=moved[again])
            out[sub] = np.minimum(out[sub], bounds2)
        # Exact solves start from the chord point where the chord steps settled (finite bound),
        # else from the engine's estimate (chord steps can diverge far from the minimiser).
        settled = np.isfinite(out[idx])
        start_at = {pair: moved[m] for m, pair in enumerate(zip(*idx)) if settled[m]}
        loose = self._loose(dist, out, floor)
        glm, theta0 = self.glm, self.theta0
        for idx in zip(*np.nonzero(loose)):
            x, e = int(x_rows[idx]), int(e_rows[idx])
            if idx in start_at:
                start = theta0 + start_at[idx]
            else:
                start = theta0 + c_e[idx] * (self.hinv @ glm.features[e]) - c_x[idx] * (self.hinv @ glm.features[x])
            if not np.all(np.isfinite(start)):
                start = theta0
            rows = np.sort(np.r_[self.H[self.H != e], x])
            key = rows.tobytes()
            if key not in self.cache:
                if len(self.cache) >= _CACHE_SIZE:
                    self.cache.clear()
                self.cache[key] = exact_minimiser(
                    glm.features, glm.dloss, glm.d2loss, rows, self.P,
                    lambda th: self.reg_const + th @ self.P, start, self.whiten, glm.gsc)
            theta, own_error = self.cache[key]
            exact = (float(np.linalg.norm(self.whiten((theta - theta0)[None])[0])) + own_error
                     + self.fit.out_error + 2 * RELEASE_TOL)
            out[idx] = min(out[idx], exact)
        return out


def release_error(block, rows, scale):
    r"""Certified whitened distance of a released fit from the exact minimiser of its objective.

    ``block``: the fit's single generalised-linear :class:`~.losses.LossBlock` on ``rows``
    (its gradients, Hessian and regulariser's gradient at the released parameters);
    ``scale``: the noise shape. The certified distances assume at most
    :data:`RELEASE_TOL` (:mod:`.certify`); the wrapper checks it before releasing.
    """
    from skmip.calibration.losses.registry import gradient_sum
    from skmip.calibration.swap.whitening import _Whitener

    whitener = _Whitener(scale)
    K = block.hessian
    hinv = linalg.cho_solve(linalg.cho_factor(K, lower=True, check_finite=False), np.eye(K.shape[0]),
                            check_finite=False)
    F = block.glm.features[rows]
    residual = gradient_sum(block, rows) + block.regularizer_gradient
    cert = FitCertificate(hinv, F, residual, lambda V: whitener.apply(V, block.index), block.glm.gsc)
    return cert.out_error


def check_release(fitted, X, y, sample_weight, scale):
    """Raise unless the polished release is within :data:`RELEASE_TOL` (whitened) of the exact
    minimiser of its objective, the allowance the certified distances carry."""
    from scipy import sparse

    from skmip.calibration.swap._common import _OWNER
    from skmip.calibration.losses.registry import get_smooth_loss

    loss = get_smooth_loss(fitted)
    Xd = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
    rows = np.arange(Xd.shape[0])
    (block,) = loss.blocks(fitted, Xd, None if y is None else np.asarray(y), rows, sample_weight)
    err = release_error(block, rows, scale)
    if not err <= RELEASE_TOL:
        raise ValueError(
            f"{_OWNER}: the released fit is certified only to {err:.3g} (in units of the noise "
            f"shape) from the exact minimiser of its objective, above the {RELEASE_TOL:g} the "
            "certified swap distances allow; the objective is too ill-conditioned for the "
            "released model to be pinned down. Add regularisation (smaller C, larger alpha)."
        )
