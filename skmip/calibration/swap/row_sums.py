r"""Per-row scalars of a fit and the sums over its rows that the closed-form certificate reads.

:func:`fit_row_scalars` gives, for every row of :math:`\mathcal{D}`, its leverage, whitened
norm and curvature at the fit on :math:`H`; :class:`RowSums` bounds the sums over the rows
of :math:`H` that :meth:`skmip.calibration.swap.certify.FitCertificate.pair_bound` needs
(docs/coupling.md, "Certified distances").
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from scipy import sparse
from scipy.linalg import blas

from skmip.bounds.rounding import UNIT_ROUNDOFF as _U
from skmip.calibration.losses.terms import design_csr

#: Largest |S| n D spent on the exact part of :class:`RowSums` per fit (all of H where k n D
#: fits; else the D rows, or more within this budget, that dominate the bounds).
_SUMS_WORK = 3e7
#: Elements of one (|S|, rows) temporary of :class:`RowSums`, and rows per chunk of
#: :func:`_row_images` and :func:`fit_row_scalars`.
_SUMS_ELEMENTS = 2**19
_SUMS_CHUNK = 2**14
#: Rows of H kept sparse (CSR) by :class:`_Rest` at most this share of non-zero entries.
_SPARSE_DENSITY = 0.3


def _column_sums(weights, M):
    """``weights @ M`` for weight rows ``weights`` (..., r, k) and ``M`` (..., k, m) as
    matrix-matrix products (a single row doubled: BLAS rounds a vector-matrix product by the
    alignment of its operands), so that a column's sums do not depend on the columns beside it
    nor a fit's on the fits stacked beside it."""
    if weights.shape[-2] == 1:
        return (np.repeat(weights, 2, axis=-2) @ M)[..., :1, :]
    return weights @ M


def _exact_sums(xS, l, lu, xi):
    r"""The sums over the rows ``xS`` (..., s, D) of :math:`H` for the rows ``xi`` (..., m, D)
    (their :math:`K^{-1}x_j`): ``(reach, quartic, weighted, squared)`` (..., m), with
    ``reach`` :math:`= \max_i |h_{ij}|` and the other three the sums
    :math:`\sum_i \ell_i'' h_{ij}^4`, :math:`\sum_i \ell_i'' u_i h_{ij}^2` and
    :math:`\sum_i \ell_i'' u_i^2 h_{ij}^2` before their roots; ``l`` (..., s) the
    :math:`\ell_i''` and ``lu`` (..., 2, s) the weights of the last two. For one fit or a
    stack of fits (leading axes): each fit's products are its own BLAS calls."""
    a_S = xS @ np.swapaxes(xi, -1, -2)
    np.abs(a_S, out=a_S)  # (..., s, m): |h_ij|, i in S
    reach = a_S.max(axis=-2) if l.shape[-1] else np.zeros(a_S.shape[:-2] + a_S.shape[-1:])
    h2 = np.multiply(a_S, a_S, out=a_S)
    # Matrix-matrix products: the distances must not depend on how rounds were split.
    two = _column_sums(lu, h2)
    quartic = _column_sums(l[..., None, :], np.multiply(h2, h2, out=h2))[..., 0, :]
    return reach, quartic, two[..., 0, :], two[..., 1, :]


def stacked_row_sums(FH, curv, unorm, xi):
    r""":class:`RowSums`' ``(reach, quartic, weighted, squared)`` (B, n) of a stack of B fits
    whose sums are not split (:attr:`RowSums.split`: every row of :math:`H` summed exactly),
    for every row of :math:`\mathcal{D}`; ``FH`` (B, k, D) the rows of each :math:`H`,
    ``curv``, ``unorm`` (B, k) their :math:`\ell_i''` and :math:`u_i`, ``xi`` (B, n, D) the
    :math:`K^{-1}x_j`. A few fits at a time (``_SUMS_ELEMENTS`` per temporary); each fit's
    arithmetic is :meth:`RowSums.fill`'s."""
    B, k = curv.shape
    lu = np.stack([curv * unorm, curv * unorm * unorm], axis=-2)  # (B, 2, k)
    out = np.empty((4,) + xi.shape[:2])
    width = max(1, _SUMS_ELEMENTS // max(k * xi.shape[1], 1))
    for a in range(0, B, width):
        c = slice(a, a + width)
        out[:, c] = _exact_sums(FH[c], curv[c], lu[c], xi[c])
    reach, quartic, weighted, squared = out
    return reach, quartic**0.25, np.sqrt(weighted), np.sqrt(squared)


def rows_times(A, B):
    """``A @ B`` as a matrix-matrix product whatever the count of rows of ``A`` (a single row
    is doubled: BLAS rounds a matrix-vector product differently), so that a row of the result
    does not depend on the rows beside it."""
    if A.shape[0] == 1:
        return (np.repeat(A, 2, axis=0) @ B)[:1]
    return A @ B


def _products(F, xi):
    """``|F xi'|`` (rows of ``F`` by rows of ``xi``), each column independent of the others:
    a sparse ``F`` sums each entry over its row's non-zeros in order; a dense one is a
    matrix-matrix product whatever the count of rows of ``xi`` (a single row is doubled,
    since BLAS rounds a matrix-vector product differently)."""
    if sparse.issparse(F):
        h = F @ xi.T
    elif xi.shape[0] == 1:
        h = (F @ np.repeat(xi, 2, axis=0).T)[:, :1]
    else:
        h = F @ xi.T
    return np.abs(h, out=h)


def _rest_rows(features, rows):
    """``features[rows]`` as a CSR matrix where at most ``_SPARSE_DENSITY`` of its entries are
    non-zero (one-hot columns: the products with it then cost O(non-zeros)), else dense.

    Where ``features`` is the engines' augmented design kept for the calibration
    (:func:`~skmip.calibration.losses.terms.design_csr`), its one CSR copy is sliced by rows for
    every fit (the same matrix as converting the rows, without scanning them dense every fit),
    and the density test reads the rows' non-zeros from it."""
    csr = design_csr(features, build=False)
    if csr is None:
        F = features[rows]
        if not (F.size and np.count_nonzero(F) <= _SPARSE_DENSITY * F.size):
            return F
        csr = design_csr(features, build=True)
        if csr is None:
            return sparse.csr_matrix(F)
    size = rows.size * features.shape[1]
    if size and int((csr.indptr[rows + 1] - csr.indptr[rows]).sum()) <= _SPARSE_DENSITY * size:
        return csr[rows]
    return features[rows]


class _Rest:
    r"""The rows :math:`R = H \setminus S` that :class:`RowSums` does not sum one by one.

    Three of the four sums are quadratic forms in :math:`\xi_j = K^{-1}x_j`:
    :math:`\sum_{i\in R} w_i h_{ij}^2 = \xi_j^\top G_w \xi_j` with
    :math:`G_w = \sum_{i\in R} w_i x_i x_i^\top` for :math:`w_i = \ell_i''`,
    :math:`\ell_i'' u_i` and :math:`\ell_i'' u_i^2`: exact, for :math:`O(D^2)` a row instead
    of :math:`O(|R| D)`. In floating point each carries
    :math:`2\gamma\,\|\xi_j\|^2 \|\,|F_R|^\top W |F_R|\,\|_\infty` with
    :math:`\gamma = 1.01(|R| + 2D + 4)u`, which bounds the rounding of forming :math:`G_w`
    and of the form (:math:`|v|^\top A |v| \le \lambda_{\max}(A)\|v\|^2 \le \|A\|_\infty \|v\|^2`
    for symmetric :math:`A \ge 0`).
    """

    def __init__(self, features, rows, curv, unorm):
        self.F, self.curv = _rest_rows(features, rows), curv
        F = self.F
        weights = np.stack([curv, curv * unorm, curv * unorm**2])  # (3, |R|)
        if sparse.issparse(F):
            # F' (w F) for each w, F' converted to CSR once: the terms x_ia (x_ib w_i) summed
            # over i in order, as F.T @ F.multiply(w) sums them.
            FT, at = F.T.tocsr(), np.repeat(np.arange(F.shape[0]), np.diff(F.indptr))
            grams = [(FT @ sparse.csr_matrix((F.data * w[at], F.indices, F.indptr), shape=F.shape)).toarray()
                     for w in weights]
        else:
            grams = [(F.T * w) @ F for w in weights]
        # Each form as 2 xi' U xi with U the upper triangle of G_w, its diagonal halved (exact):
        # a triangular product, half a full one's work.
        self.halves = np.triu(np.stack(grams))  # (3, D, D)
        self.halves[:, np.arange(F.shape[1]), np.arange(F.shape[1])] *= 0.5
        A = abs(F)
        norm_inf = np.stack([A.T @ (w * np.asarray(A.sum(axis=1)).ravel()) for w in weights])  # (3, D): row sums of |F|' W |F|
        gamma = 1.01 * (F.shape[0] + 2 * F.shape[1] + 4) * _U
        self.allow = 2.0 * gamma * norm_inf.max(axis=1)  # (3,)
        self.curv_min = float(curv.min())

    def forms(self, xi):
        """Upper bounds ``(3, m)`` on :math:`\\sum_{i\\in R} w_i h_{ij}^2` for the rows ``xi`` (m, D):
        each form :math:`2\\,\\xi_j^\\top U_w \\xi_j` from a triangular product (a single row
        doubled, as in :func:`rows_times`); in whatever order it sums, a form's rounding is
        within the allowance (:class:`_Rest`: at most :math:`2D + 1` terms a chain)."""
        m = xi.shape[0]
        sq = (xi * xi).sum(-1)
        xt = np.repeat(xi, 2, axis=0).T if m == 1 else xi.T  # (D, m'), Fortran order for BLAS
        vals = np.stack([2.0 * np.einsum("dm,dm->m", blas.dtrmm(1.0, U, xt, side=0, lower=0, trans_a=1)[:, :m], xt[:, :m])
                         for U in self.halves])
        return np.maximum(vals + self.allow[:, None] * sq, 0.0)


class RowSums:
    r"""Sums over the rows of :math:`H` that the closed-form certificate needs, per row
    :math:`j` of :math:`\mathcal{D}` (docs/coupling.md, "Certified distances").

    With :math:`h_{ij} = x_i^\top K^{-1} x_j`, :math:`\ell_i''` at the fit,
    :math:`u_i = \|W K^{-1} x_i\|` and :math:`\lambda_i = h_{ii}`, for every row :math:`j`:
    ``reach`` :math:`\ge \max_i |h_{ij}|`, ``quartic`` :math:`\ge (\sum_i \ell_i''
    h_{ij}^4)^{1/4}`, ``weighted`` :math:`\ge (\sum_i \ell_i'' u_i h_{ij}^2)^{1/2}`,
    and ``squared`` :math:`\ge (\sum_i \ell_i'' u_i^2 h_{ij}^2)^{1/2}`; and ``top`` =
    :math:`\max_i u_i`. The sums are exact over a set :math:`S` of rows of :math:`H` (all
    of them where the :math:`(|S|, n)` product costs at most ``_SUMS_WORK``, else the rows
    of largest leverage and of largest :math:`u_i`). Over the rest :math:`R` (``split``),
    ``weighted`` and ``squared`` are quadratic forms (:class:`_Rest`), exact but for a
    rounding allowance; with :math:`g_j \ge \sum_{i\in R}\ell_i'' h_{ij}^2`,
    :math:`\max_{i\in R}|h_{ij}| \le \min(\sqrt{\lambda_R h_{jj}}, \sqrt{g_j/\min_R \ell_i''})`
    (Cauchy-Schwarz, and :math:`\ell_i'' h_{ij}^2 \le g_j`) and
    :math:`\sum_{i\in R}\ell_i'' h_{ij}^4 \le \max_{i\in R} h_{ij}^2\, g_j`.
    :meth:`refine` sums ``reach`` and ``quartic`` over :math:`R` exactly for rows that need
    it (:meth:`refined`).

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
        self.split = bool(rest.any())
        if self.split:
            self._lam_c = float(lev[rest].max())
            self._rest = _Rest(features, H[rest], curv[rest], unorm[rest])
            # The part over S of reach and of quartic^4, and the exact sums of refine().
            self._reach_S, self._quartic_S, self._reach_x, self._quartic_x = (np.full(n, np.nan) for _ in range(4))
        self._l, self._xS = curv[S], features[H[S]]
        self._lu = np.stack([self._l * unorm[S], self._l * unorm[S] * unorm[S]])  # weights of weighted, squared
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
        l, xS = self._l, self._xS
        width = max(1, _SUMS_ELEMENTS // max(l.size, 1))  # (|S|, width) temporaries
        for a in range(0, rows.size, width):
            c = slice(a, a + width)
            reach, quartic, weighted, squared = _exact_sums(xS, l, self._lu, xi[c])  # squared, 4th powers for now
            r = rows[c]
            if self.split:
                self._reach_S[r], self._quartic_S[r] = reach, quartic
                g, g_u, g_uu = self._rest.forms(xi[c])
                reach_R = np.sqrt(self._lam_c * np.maximum(h[c], 0.0))
                if self._rest.curv_min > 0:
                    reach_R = np.minimum(reach_R, np.sqrt(g / self._rest.curv_min))
                reach = np.maximum(reach, reach_R)
                quartic = quartic + reach_R**2 * g
                weighted = weighted + g_u
                squared = squared + g_uu
            self.reach[r] = reach
            self.quartic[r] = quartic**0.25
            self.weighted[r] = np.sqrt(weighted)
            self.squared[r] = np.sqrt(squared)

    def refine(self, rows, xi):
        r"""Sum ``reach`` and ``quartic`` over every row of :math:`H` for the rows ``rows``
        (1-D, filled already; ``xi`` their :math:`K^{-1}x_j`) not refined yet: :math:`O(|R| D)`
        a row (:meth:`refined`). Only where :attr:`split`."""
        todo = np.isnan(self._reach_x[rows])
        rows, xi = rows[todo], xi[todo]
        F, curv = self._rest.F, self._rest.curv
        width = max(1, _SUMS_ELEMENTS // max(curv.size, 1))
        for a in range(0, rows.size, width):
            c = slice(a, a + width)
            r = rows[c]
            h = _products(F, xi[c])  # (|R|, chunk): |h_ij|, i in R
            self._reach_x[r] = np.maximum(self._reach_S[r], h.max(axis=0))
            h *= h
            quartic = _column_sums(curv[None], np.multiply(h, h, out=h))[0]
            self._quartic_x[r] = (self._quartic_S[r] + quartic) ** 0.25

    def refined(self):
        """The sums with ``reach`` and ``quartic`` summed over every row of :math:`H`
        (exact where :meth:`refine` reached the row, NaN elsewhere)."""
        return SimpleNamespace(reach=self._reach_x, quartic=self._quartic_x, weighted=self.weighted,
                               squared=self.squared, top=self.top)


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
