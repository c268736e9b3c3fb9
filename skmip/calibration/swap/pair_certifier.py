r"""Certified distances of the pairs of one fit: :class:`PairCertifier`.

The closed-form certificate of :mod:`skmip.calibration.swap.certify` first; the pairs it
leaves loose get chord steps over the rows and the ball lemma, then, where still loose, an
exact solve certified by its own gradient (docs/coupling.md, "Certified distances").
"""

from __future__ import annotations

import numpy as np

from skmip.calibration.swap.certify import RELEASE_TOL, FitCertificate, ball_radius, exact_minimiser
from skmip.calibration.swap.row_sums import RowSums, _column_sums, fit_row_scalars

#: A pair whose certificate adds more than this fraction to its estimate is solved exactly.
FALLBACK_RTOL = 0.1
#: ... or more than this fraction of the median distance of its fit.
_FALLBACK_ATOL = 0.01
#: Exact minimisers kept per job (keyed by training set).
_CACHE_SIZE = 20000
#: Elements of one (rows x pairs) array of the second stage.
_ROW_ELEMENTS = 2**21
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
