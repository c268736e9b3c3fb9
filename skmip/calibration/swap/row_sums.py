r"""Per-row scalars of a fit and the sums over its rows that the closed-form certificate reads.

:func:`fit_row_scalars` gives, for every row of :math:`\mathcal{D}`, its leverage, whitened
norm and curvature at the fit on :math:`H`; :class:`RowSums` bounds the sums over the rows
of :math:`H` that :meth:`skmip.calibration.swap.certify.FitCertificate.pair_bound` needs
(docs/coupling.md, "Certified distances").
"""

from __future__ import annotations

import numpy as np

#: Largest |S| n D spent on the exact part of :class:`RowSums` per fit (all of H where k n D
#: fits; else the D rows, or more within this budget, that dominate the bounds).
_SUMS_WORK = 3e7
#: Elements of one (|S|, rows) temporary of :class:`RowSums`, and rows per chunk of
#: :func:`_row_images` and :func:`fit_row_scalars`.
_SUMS_ELEMENTS = 2**19
_SUMS_CHUNK = 2**14


def _column_sums(weights, M, out=None):
    """``weights @ M`` summed row after row (the same rounding for any memory layout);
    ``out``: a buffer shaped as ``M`` for the products."""
    return np.add.reduce(np.multiply(weights[:, None], M, out=out), axis=0)


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
            a_S = xS @ xi[c].T
            np.abs(a_S, out=a_S)  # (|S|, chunk): |h_ij|, i in S
            reach = a_S.max(axis=0) if l.size else np.zeros(a_S.shape[1])
            h2 = np.multiply(a_S, a_S, out=a_S)
            # Column sums in a fixed order (a BLAS matrix-vector product may round by
            # alignment, and the distances must not depend on how rounds were split).
            buf = np.empty_like(h2)
            weighted = _column_sums(l * u, h2, buf)  # squared for now
            squared = _column_sums(l * u * u, h2, buf)  # squared for now
            quartic = _column_sums(l, np.multiply(h2, h2, out=h2), buf)  # to the 4th power for now
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
