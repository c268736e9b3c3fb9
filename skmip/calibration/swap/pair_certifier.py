r"""Certified distances of the pairs of one fit: :class:`PairCertifier`.

The closed-form certificate of :mod:`skmip.calibration.swap.certify` first; the pairs it
leaves loose get chord steps over the rows and the ball lemma, then, where still loose, an
exact solve certified by its own gradient (docs/coupling.md, "Certified distances").
"""

from __future__ import annotations

import numpy as np

from skmip.calibration.swap.certify import RELEASE_TOL, FitCertificate, ball_radius, exact_minimiser
from skmip.calibration.swap.hinge_certify import StrongCertifier
from skmip.calibration.swap.row_sums import RowSums, fit_row_scalars

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


def make_certifier(glm, theta0, reg0, P, hinv, H, residual, whitener, index, **kwargs):
    """The certifier of one fit of a generalised-linear block: :class:`PairCertifier` for a
    loss that declares its self-concordance constant, :class:`~.hinge_certify.StrongCertifier`
    for one that declares a Lipschitz, non-decreasing derivative instead (the squared hinge;
    ``residual`` and ``kwargs`` are then not needed)."""
    if glm.gsc is None:
        return StrongCertifier(glm, theta0, P, hinv, H, lambda V: whitener.apply(V, index))
    return PairCertifier(glm, theta0, reg0, P, hinv, H, residual, whitener, index, **kwargs)


class PairCertifier:
    r"""Certified distances of the pairs of one fit (one generalised-linear block).

    The engine's estimates become upper bounds by :meth:`FitCertificate.pair_bound`; a pair
    whose bound is infinite, or exceeds its estimate by more than ``FALLBACK_RTOL``, is
    solved to convergence (:func:`exact_distance_bound`), which is certified by its own
    gradient and Hessian. ``block`` is the fit's :class:`~.losses.LossBlock` on ``H``,
    ``factor`` its Hessian's Cholesky factor, ``P`` the regulariser's Hessian. ``targets``
    (a boolean mask over the rows of D) limits the later stages to the pairs of those
    targets and the pairs the closed form leaves unbounded; the others keep their
    closed-form bound (lazy certification, :mod:`.lazy`).
    """

    def __init__(self, glm, theta0, reg0, P, hinv, H, residual, whitener, index, cache=None, rows=None,
                 targets=None):
        self.targets = targets
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
        self._rows = None  # the second stage's per-row terms (_fit_rows), on first use

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

    def _fit_rows(self):
        """The fit's rows for the second stage, computed once per fit: :class:`_FitRows`."""
        if self._rows is None:
            self._rows = _FitRows(self.glm, self.H, self.theta0, self.reg_const, self.P, self.curv,
                                  self.fit.leverage, self.unorm)
        return self._rows

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
        glm, P, hinv, theta0, fit = self.glm, self.P, self.hinv, self.theta0, self.fit
        rows = self._fit_rows()
        F, r0 = rows.F, rows.r0
        out = np.empty(x.shape)
        moved_to = np.empty((x.size, theta0.size))
        width = max(1, _ROW_ELEMENTS // max(self.H.size, 1))
        steps = _CHORD_STEPS if steps is None else steps
        for a in range(0, x.size, width):
            j = slice(a, a + width)
            xe, xx, ej, xj = glm.features[e[j]], glm.features[x[j]], e[j], x[j]
            xi_e = xe @ hinv
            kap = glm.d2loss(xe @ theta0, ej)
            den = 1.0 - kap * (xe * xi_e).sum(-1)
            good = den > 0
            den = np.where(good, den, 1.0)
            ge = r0 - glm.dloss(xe @ theta0, ej)[:, None] * xe  # grad G(theta0) = r0 - l'_e x_e
            mx = xx @ theta0
            e_pos = rows.position(ej)

            def gradient(Delta, slack=False):
                delta = F @ Delta.T  # (k, m)
                W, slack = rows.moves(glm.dloss, delta, e_pos, slack)
                g = W.T @ F + ge + Delta @ P + glm.dloss(mx + (xx * Delta).sum(-1), xj)[:, None] * xx
                return g, delta, slack

            def a_inv(v):
                return v @ hinv + (kap * (xi_e * v).sum(-1) / den)[:, None] * xi_e

            Delta = (c_e[j, None] * xi_e - c_x[j, None] * (xx @ hinv)) if start is None else start[j]
            Delta = np.where(np.isfinite(Delta).all(axis=-1, keepdims=True), Delta, 0.0)
            for _ in range(steps):
                Delta = Delta - a_inv(gradient(Delta)[0])
            g, delta, slack = gradient(Delta, slack=True)  # the certified point's: with its allowance
            step = a_inv(g)
            ctx = (xx, xj, ej, xi_e, kap, den, mx, ge)
            out[j], moved_to[j] = self._certify_point(rows, Delta, g, step, delta, slack, ctx, good)
        return out, moved_to

    def _certify_point(self, rows, Delta, g, step, delta, slack, ctx, good):
        """The certified bound at the chord point ``Delta - step`` (docs/coupling.md, stage 2),
        and the point the next chord steps start from."""
        xx, xj, ej, xi_e, kap, den, mx, ge = ctx
        glm, fit, R = self.glm, self.fit, self.fit.gsc
        shrink = 1.0 / np.sqrt(den)
        kappa = np.sqrt(fit.lam) * shrink
        sqnu = np.sqrt(fit.nu) * shrink
        with np.errstate(invalid="ignore", over="ignore"):
            v_e = kap * self.sums.reach[ej] * np.linalg.norm(self.whiten(xi_e), axis=-1) / den
            slack = 1e-15 * slack + 1e-15 * np.abs(ge).sum(-1)
            gnorm = np.sqrt(np.maximum((step * g).sum(-1), 0.0)) + kappa * slack
            T, moves = rows.curvature_moves(delta)
            rho = ball_radius(gnorm, R * T, R * kappa)
            err = sqnu * rho
            # Directional: ||W (theta* - theta0)|| <= ||W (Delta - A^-1 g)|| + ||W A^-1 (B - A) e||
            # (docs/coupling.md, stage 2); the rows' curvature moves by expm1(R |move_i|).
            row_terms = rows.second_order(moves, shrink * rho, shrink, v_e)
            to_x = xx @ self.hinv + (kap * (xi_e * xx).sum(-1) / den)[:, None] * xi_e  # A^-1 x_x
            root_a = np.sqrt(np.maximum((to_x * xx).sum(-1), 0.0))
            curv_x = glm.d2loss(mx + (xx * Delta).sum(-1), xj)
            target = curv_x * np.exp(R * root_a * rho) * root_a * rho * np.linalg.norm(self.whiten(to_x), axis=-1)
            second = rho * row_terms + target + sqnu * kappa * slack
            chord = np.linalg.norm(self.whiten(Delta - step), axis=-1) * (1.0 + 1e-12)
        dist = np.linalg.norm(self.whiten(Delta), axis=-1) * (1.0 + 1e-12)
        ok = good & np.isfinite(err) & np.isfinite(dist)
        bound = np.minimum(dist + err, np.where(np.isfinite(second) & np.isfinite(chord), chord + second, np.inf))
        out = np.where(ok, bound + fit.out_error + 2 * RELEASE_TOL, np.inf)
        return out, np.where(ok[:, None] & np.isfinite(chord)[:, None], Delta - step, Delta)

    def tighten(self, dist, certified, x_rows, e_rows, c_e, c_x, det):
        """Tighten the loose entries of ``certified`` (laid out as ``dist``): first by the
        remainder summed over the rows, then by exact solves; returns the array."""
        floor = self._floor(dist)
        loose = self._loose(dist, certified, floor)
        if self.targets is not None:  # lazy: the targets asked for, and every unbounded pair
            loose &= self.targets[x_rows] | ~np.isfinite(certified)
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
        if self.targets is not None:
            loose &= self.targets[x_rows] | ~np.isfinite(out)
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


class _FitRows:
    r"""The rows of :math:`H` as the second stage reads them, computed once per fit.

    ``F`` (k, D) the rows :math:`x_i`, ``r0`` the fit's own residual gradient
    :math:`\nabla F_H(\theta_0)`, and the per-row weights of the second-order part of (D)
    (docs/coupling.md, stage 2): :math:`\ell_i''\sqrt{h_{ii}}\,u_i` and
    :math:`\ell_i''\sqrt{h_{ii}}` for the sum of single terms, :math:`\ell_i'' u_i^2` and
    :math:`\ell_i''` for the sum of squares. The sums over the rows are matrix products
    (one per form) and the elementwise work is done in place, in one (k, m) array per chunk.
    """

    def __init__(self, glm, H, theta0, reg_const, P, curv, lev, unorm):
        self.F = glm.features[H]  # (k, D)
        self.H, self.R = H, float(glm.gsc)
        self.mH = self.F @ theta0
        self.d1 = glm.dloss(self.mH, H)
        self.r0 = self.F.T @ self.d1 + reg_const + theta0 @ P  # the fit's own residual gradient
        self.root = np.sqrt(lev)
        c1 = curv * self.root
        self.single = np.stack([c1 * unorm, c1])
        self.squares = np.stack([curv * unorm**2, curv])
        self.d1_sum = float(np.abs(self.d1).sum())
        self._position = {int(h): i for i, h in enumerate(H)}

    def position(self, rows):
        """Positions in ``H`` of the data rows ``rows`` (each pair's e is a row of H)."""
        return np.array([self._position[int(v)] for v in rows], dtype=np.intp)

    def moves(self, dloss, delta, e_pos, slack=True):
        r"""The gradient's row weights :math:`\ell_i'(m_i + \delta_i) - \ell_i'(m_i)` at margin
        moves ``delta`` (k, m), 0 at each pair's own row ``e_pos`` (:math:`H - e`), and, with
        ``slack``, their rounding allowance per pair (the sum of :math:`|\ell_i'|` at both
        ends; chord steps that only steer need none)."""
        moved = dloss(self.mH[:, None] + delta, self.H[:, None])
        slack = np.abs(moved).sum(axis=0) + self.d1_sum if slack else None
        moved -= self.d1[:, None]
        moved[e_pos, np.arange(delta.shape[1])] = 0.0
        return moved, slack

    def curvature_moves(self, delta):
        r"""``(T, |delta|)``: :math:`T = \max_i |\delta_i|` per pair, and :math:`|\delta_i|`
        (a new (k, m) array that :meth:`second_order` overwrites)."""
        moves = np.abs(delta)
        return moves.max(axis=0), moves

    def second_order(self, moves, reach, shrink, v_e):
        r"""Bound on :math:`\|W A^{-1}(B - A)e\| / \rho` from the rows (docs/coupling.md, stage 2):
        with :math:`E_i = \operatorname{expm1}(R(|\delta_i| + \sqrt{h_{ii}}\,`\ ``reach``\ :math:`))`,
        the smaller of :math:`s(\sum_i \ell_i''\sqrt{h_{ii}} E_i u_i + v_e \sum_i \ell_i''\sqrt{h_{ii}} E_i)`
        and :math:`(\sum_i \ell_i'' E_i^2 u_i^2)^{1/2} + v_e (\sum_i \ell_i'' E_i^2)^{1/2}`
        (``reach`` = :math:`s\rho`, :math:`s` = ``shrink``). Overwrites ``moves``."""
        E = moves
        E += self.root[:, None] * reach
        E *= self.R
        np.expm1(E, out=E)
        single = self.single @ E
        np.multiply(E, E, out=E)
        squares = np.sqrt(self.squares @ E)
        return np.minimum(shrink * (single[0] + v_e * single[1]), squares[0] + v_e * squares[1])
