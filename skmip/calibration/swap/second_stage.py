r"""The second certification stage for the loose pairs of a stack of fits at once.

Stage 2 of docs/coupling.md, "Certified distances": from each pair's estimate a few chord
steps over the rows of its fit, then the ball lemma with the exact gradient at the last
point and the directional bound (D) on the whitened error. :class:`PairCertifier`
(one fit) and :class:`~.stacked_certifier.StackCertifier` (the fits of a batch of rounds)
both run it here: a fit is a stack of one.

On small problems (breast cancer: 213 rows per fit, 75 loose pairs) the fixed cost of a
numpy call, not the arithmetic, is the time of a stage run fit by fit; here the pairs of
all fits go through each step together, laid out (fits, pairs) and padded to the largest
count. Every matrix product per fit is the BLAS call of one fit alone: a fit with a single
pair in a chunk is put in a stack of its own width 1, where numpy calls the
matrix-vector product (as it does for one fit's single column), and columns of a
matrix-matrix product do not depend on the columns beside them. The bounds are then those
of the fit-by-fit stage, to every digit (measured: docs/benchmarks.md).
"""

from __future__ import annotations

import numpy as np

from skmip.calibration.swap.certify import RELEASE_TOL, ball_radius

#: Elements of one (rows x pairs) array of the second stage (per fit and chunk of its pairs).
_ROW_ELEMENTS = 2**21
#: Elements (rows x pairs) of one stack of fits run together (cache-sized).
_GROUP_ELEMENTS = 2**17
#: A fit joins a stack of fits whose largest count of pairs is at most 1/_PADDING of its own.
_PADDING = 0.6


def _mv(A, v):
    """Stacked matrix-vector products ``A (..., m, D) @ v (..., D)`` (BLAS gemv per matrix)."""
    return (A @ v[..., None])[..., 0]


def _mv_at(X, theta, width):
    """:func:`_mv` on a padded stack of pairs (fits, M, D): each fit's product at its own
    ``width`` (its pairs), the padding repeating its last value; ``None``: no padding."""
    if width is None:
        return _mv(X, theta)
    out = np.empty(X.shape[:-1])
    for i, w in enumerate(width):
        out[i, :w] = X[i, :w] @ theta[i]
        out[i, w:] = out[i, w - 1]
    return out


def _mm_at(S, E, width):
    """``S (fits, r, k) @ E (fits, k, M)`` on a padded stack, each fit at its own ``width``
    (as :func:`_mv_at`)."""
    if width is None:
        return S @ E
    out = np.empty(S.shape[:-1] + E.shape[-1:])
    for i, w in enumerate(width):
        out[i, :, :w] = S[i] @ E[i, :, :w]
        out[i, :, w:] = out[i, :, w - 1:w]
    return out


def _vm(v, A):
    """Stacked vector-matrix products ``v (..., D) @ A (..., D, D)`` (BLAS gemv per matrix)."""
    return (v[..., None, :] @ A)[..., 0, :]


def _groups(c, k):
    """The fits (indices) with pairs, ``c`` of them each, in stacks run together: the fits
    with one pair apart (a stack of width 1: matrix-vector products, as for one fit's single
    column); the others by decreasing count, a new stack where the padding would pass
    ``_PADDING`` of the count or the stack ``_GROUP_ELEMENTS`` (rows x pairs) elements."""
    one = np.flatnonzero(c == 1)
    per = max(1, _GROUP_ELEMENTS // max(k, 1))
    for g in range(0, one.size, per):
        yield one[g:g + per]
    more = np.flatnonzero(c >= 2)
    more = more[np.argsort(-c[more], kind="stable")]
    start = 0
    for i in range(1, more.size + 1):
        if i == more.size or c[more[i]] < _PADDING * c[more[start]] or (i - start + 1) * k * c[more[start]] > _GROUP_ELEMENTS:
            yield np.sort(more[start:i])
            start = i


class FitRows:
    r"""The rows of :math:`H` as the second stage reads them, for a stack of fits (any leading
    axes; none for one fit), computed once.

    ``F`` (..., k, D) the rows :math:`x_i`, ``r0`` the fit's own residual gradient
    :math:`\nabla F_H(\theta_0)`, and the per-row weights of the second-order part of (D)
    (docs/coupling.md, stage 2): :math:`\ell_i''\sqrt{h_{ii}}\,u_i` and
    :math:`\ell_i''\sqrt{h_{ii}}` for the sum of single terms, :math:`\ell_i'' u_i^2` and
    :math:`\ell_i''` for the sum of squares. The sums over the rows are matrix products
    (one per form) and the elementwise work is done in place, in one (k, m) array per fit.
    """

    def __init__(self, glm, H, theta0, reg_const, P, curv, lev, unorm, at_H=None):
        # ``at_H``: the rows x_i and margins x_i' theta0 (the _mv products here) where the caller has them.
        self.F, self.mH = (glm.features[H], None) if at_H is None else at_H  # (..., k, D)
        self.H, self.R = H, float(glm.gsc)
        if self.mH is None:
            self.mH = _mv(self.F, theta0)
        self.d1 = glm.dloss(self.mH, H)
        # The fit's own residual gradient.
        self.r0 = _mv(np.swapaxes(self.F, -1, -2), self.d1) + reg_const + _vm(theta0, P)
        self.root = np.sqrt(lev)
        c1 = curv * self.root
        self.single = np.stack([c1 * unorm, c1], axis=-2)
        self.squares = np.stack([curv * unorm**2, curv], axis=-2)
        self.d1_sum = np.abs(self.d1).sum(-1)
        self._inv = np.full(H.shape[:-1] + (glm.features.shape[0],), -1, dtype=np.intp)
        np.put_along_axis(self._inv, H, np.broadcast_to(np.arange(H.shape[-1]), H.shape), axis=-1)

    def part(self, fits):
        """The rows of the fits ``fits`` (indices on the leading axis) as a stack of their own."""
        out = object.__new__(FitRows)
        out.R = self.R
        for key in ("F", "H", "mH", "d1", "r0", "root", "single", "squares", "d1_sum", "_inv"):
            setattr(out, key, getattr(self, key)[fits])
        return out

    def position(self, rows):
        """Positions in ``H`` of the data rows ``rows`` (..., m) (each pair's e is a row of H)."""
        return np.take_along_axis(self._inv, rows, axis=-1)

    def moves(self, dloss, delta, e_pos, slack=True):
        r"""The gradient's row weights :math:`\ell_i'(m_i + \delta_i) - \ell_i'(m_i)` at margin
        moves ``delta`` (..., k, m), 0 at each pair's own row ``e_pos`` (..., m) (:math:`H - e`),
        and, with ``slack``, their rounding allowance per pair (the sum of :math:`|\ell_i'|`
        at both ends; chord steps that only steer need none)."""
        moved = dloss(self.mH[..., None] + delta, self.H[..., None])
        slack = np.abs(moved).sum(axis=-2) + self.d1_sum[..., None] if slack else None
        moved -= self.d1[..., None]
        np.put_along_axis(moved, e_pos[..., None, :], 0.0, axis=-2)
        return moved, slack

    def curvature_moves(self, delta):
        r"""``(T, |delta|)``: :math:`T = \max_i |\delta_i|` per pair, and :math:`|\delta_i|`
        (a new (..., k, m) array that :meth:`second_order` overwrites)."""
        moves = np.abs(delta)
        return moves.max(axis=-2), moves

    def second_order(self, moves, reach, shrink, v_e, width=None):
        r"""Bound on :math:`\|W A^{-1}(B - A)e\| / \rho` from the rows (docs/coupling.md, stage 2):
        with :math:`E_i = \operatorname{expm1}(R(|\delta_i| + \sqrt{h_{ii}}\,`\ ``reach``\ :math:`))`,
        the smaller of :math:`s(\sum_i \ell_i''\sqrt{h_{ii}} E_i u_i + v_e \sum_i \ell_i''\sqrt{h_{ii}} E_i)`
        and :math:`(\sum_i \ell_i'' E_i^2 u_i^2)^{1/2} + v_e (\sum_i \ell_i'' E_i^2)^{1/2}`
        (``reach`` = :math:`s\rho`, :math:`s` = ``shrink``). Overwrites ``moves``. ``width``:
        each fit's pairs in a padded stack (:func:`_mm_at`)."""
        E = moves
        E += self.root[..., :, None] * reach[..., None, :]
        E *= self.R
        np.expm1(E, out=E)
        single = _mm_at(self.single, E, width)
        np.multiply(E, E, out=E)
        squares = np.sqrt(_mm_at(self.squares, E, width))
        return np.minimum(shrink * (single[..., 0, :] + v_e * single[..., 1, :]),
                          squares[..., 0, :] + v_e * squares[..., 1, :])


class SecondStage:
    r"""Stage 2 for the pairs of a stack of B fits: :meth:`bounds`.

    Per fit (leading axis B): ``H`` (B, k) its rows, ``theta0`` (B, D), ``reg_const`` (B, D)
    the regulariser's gradient less :math:`\theta_0 P` (the same function for every fit),
    ``hinv`` (B, D, D) :math:`K^{-1}`, ``curv``, ``lev``, ``unorm`` (B, k) the rows'
    :math:`\ell_i''`, :math:`h_{ii}` and :math:`\|W K^{-1}x_i\|`, ``lam``, ``nu``,
    ``out_error`` (B,) the fit's :class:`~.certify.FitCertificate` constants and ``reach``
    (B, n) its row sums' :math:`M_j`; ``whiten`` maps parameter changes to the noise's
    whitened coordinates; ``at_H`` optionally the rows of each H and their margins
    (:class:`FitRows`).
    """

    def __init__(self, glm, H, theta0, reg_const, P, hinv, curv, lev, unorm, consts, reach, whiten, at_H=None):
        self.glm, self.P, self.hinv, self.theta0, self.whiten = glm, P, hinv, theta0, whiten
        self.lam, self.nu, self.out_error = (np.asarray(c, dtype=np.float64) for c in consts)
        self.reach = reach
        self.rows = FitRows(glm, H, theta0, reg_const, P, curv, lev, unorm, at_H)

    def bounds(self, fit, x, e, c_e, c_x, steps=0, start=None):
        r"""Certified bounds for pairs (1-D arrays, ``fit`` non-decreasing: the pairs of each fit
        together): ``(bound, point)``, the point the next chord steps start from.

        From the estimate :math:`\Delta = c_e\xi_e - c_x\xi_x` (or ``start``; :math:`\theta_0`
        where it is not finite), ``steps`` chord steps :math:`\Delta \leftarrow \Delta -
        A^{-1}\nabla F_{\rm in}(\theta_0 + \Delta)` with :math:`A = K - \ell_e'' x_e x_e^\top`
        (Sherman-Morrison on :math:`K^{-1}`); the gradient is evaluated over the rows from
        differences :math:`\ell_i'(m_i + \delta_i) - \ell_i'(m_i)` (little cancellation), with
        a rounding allowance. The ball lemma at the last point uses the exact
        :math:`\|\cdot\|_{A^{-1}}` of that gradient and :math:`T = \max_i |\delta_i|`.
        """
        m, k = fit.size, self.rows.H.shape[-1]
        out, moved = np.empty(m), np.empty((m, self.theta0.shape[-1]))
        counts = np.bincount(fit, minlength=self.theta0.shape[0])
        offsets = np.cumsum(counts) - counts
        width = max(1, _ROW_ELEMENTS // max(k, 1))  # pairs of one fit per chunk
        for a in range(0, int(counts.max(initial=0)), width):
            c = np.clip(counts - a, 0, width)  # each fit's pairs in this chunk
            for fits in _groups(c, k):
                M = int(c[fits].max())
                # (fits, M) pair indices; short rows repeat their last pair (dropped below).
                idx = offsets[fits, None] + a + np.minimum(np.arange(M), c[fits, None] - 1)
                valid = np.arange(M) < c[fits, None]
                own = None if valid.all() else c[fits]
                got, to = self._chord(fits, own, x[idx], e[idx], c_e[idx], c_x[idx], steps,
                                      None if start is None else start[idx])
                out[idx[valid]], moved[idx[valid]] = got[valid], to[valid]
        return out, moved

    def _chord(self, fits, width, x, e, c_e, c_x, steps, start):
        """:meth:`bounds` for the pairs (fits, M) of the fits ``fits``, each fit's first
        ``width`` of them its own (``None``: all): ``(bound, point)``."""
        glm, P = self.glm, self.P
        rows = self.rows.part(fits)
        hinv, theta0 = self.hinv[fits], self.theta0[fits]
        F, r0 = rows.F, rows.r0
        xe, xx = glm.features[e], glm.features[x]
        xi_e, xi_x = xe @ hinv, xx @ hinv
        m_e = _mv_at(xe, theta0, width)
        kap = glm.d2loss(m_e, e)
        den = 1.0 - kap * (xe * xi_e).sum(-1)
        good = den > 0
        den = np.where(good, den, 1.0)
        ge = r0[:, None, :] - glm.dloss(m_e, e)[..., None] * xe  # grad G(theta0) = r0 - l'_e x_e
        mx = _mv_at(xx, theta0, width)
        e_pos = rows.position(e)

        def gradient(Delta, slack=False):
            delta = F @ np.swapaxes(Delta, -1, -2)  # (fits, k, M)
            W, slack = rows.moves(glm.dloss, delta, e_pos, slack)
            g = (np.swapaxes(W, -1, -2) @ F + ge + Delta @ P
                 + glm.dloss(mx + (xx * Delta).sum(-1), x)[..., None] * xx)
            return g, delta, slack

        def a_inv(v):
            return v @ hinv + (kap * (xi_e * v).sum(-1) / den)[..., None] * xi_e

        Delta = (c_e[..., None] * xi_e - c_x[..., None] * xi_x) if start is None else start
        Delta = np.where(np.isfinite(Delta).all(axis=-1, keepdims=True), Delta, 0.0)
        for _ in range(steps):
            Delta = Delta - a_inv(gradient(Delta)[0])
        g, delta, slack = gradient(Delta, slack=True)  # the certified point's: with its allowance
        ctx = (fits, width, rows, xi_x, xx, x, e, xi_e, kap, den, mx, ge)
        return self._certify_point(Delta, g, a_inv(g), delta, slack, ctx, good)

    def _certify_point(self, Delta, g, step, delta, slack, ctx, good):
        """The certified bound at the chord point ``Delta - step`` (docs/coupling.md, stage 2),
        and the point the next chord steps start from."""
        fits, width, rows, xi_x, xx, xj, ej, xi_e, kap, den, mx, ge = ctx
        glm, R = self.glm, rows.R
        shrink = 1.0 / np.sqrt(den)
        kappa = np.sqrt(self.lam[fits, None]) * shrink
        sqnu = np.sqrt(self.nu[fits, None]) * shrink
        with np.errstate(invalid="ignore", over="ignore"):
            v_e = (kap * np.take_along_axis(self.reach[fits], ej, axis=-1)
                   * np.linalg.norm(self.whiten(xi_e), axis=-1) / den)
            slack = 1e-15 * slack + 1e-15 * np.abs(ge).sum(-1)
            gnorm = np.sqrt(np.maximum((step * g).sum(-1), 0.0)) + kappa * slack
            T, moves = rows.curvature_moves(delta)
            rho = ball_radius(gnorm, R * T, R * kappa)
            err = sqnu * rho
            # Directional: ||W (theta* - theta0)|| <= ||W (Delta - A^-1 g)|| + ||W A^-1 (B - A) e||
            # (docs/coupling.md, stage 2); the rows' curvature moves by expm1(R |move_i|).
            row_terms = rows.second_order(moves, shrink * rho, shrink, v_e, width)
            to_x = xi_x + (kap * (xi_e * xx).sum(-1) / den)[..., None] * xi_e  # A^-1 x_x
            root_a = np.sqrt(np.maximum((to_x * xx).sum(-1), 0.0))
            curv_x = glm.d2loss(mx + (xx * Delta).sum(-1), xj)
            target = curv_x * np.exp(R * root_a * rho) * root_a * rho * np.linalg.norm(self.whiten(to_x), axis=-1)
            second = rho * row_terms + target + sqnu * kappa * slack
            chord = np.linalg.norm(self.whiten(Delta - step), axis=-1) * (1.0 + 1e-12)
        dist = np.linalg.norm(self.whiten(Delta), axis=-1) * (1.0 + 1e-12)
        ok = good & np.isfinite(err) & np.isfinite(dist)
        bound = np.minimum(dist + err, np.where(np.isfinite(second) & np.isfinite(chord), chord + second, np.inf))
        out = np.where(ok, bound + self.out_error[fits, None] + 2 * RELEASE_TOL, np.inf)
        return out, np.where(ok[..., None] & np.isfinite(chord)[..., None], Delta - step, Delta)
