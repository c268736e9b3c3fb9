"""Whitening parameter changes into the noise's coordinates (vector or matrix noise shape)."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from skmip.bounds.rounding import UNIT_ROUNDOFF as _U, relative_error, round_up
from skmip.calibration.swap._common import _OWNER

#: Largest bound on the whitening's relative rounding accepted (the distances then grow by at
#: most 1 + 2 * _MAX_DEFECT): beyond it the scale is refused as ill-conditioned.
_MAX_DEFECT = 1e-6


class _Whitener:
    r"""Maps parameter changes to the noise's whitened coordinates.

    A vector ``scale`` :math:`w` means noise :math:`s\,w \odot z` and whitening
    :math:`\Delta / w`; a coordinate with :math:`w_j = 0` gets no noise, so a change there is
    seen exactly (distance ``inf``). A square matrix :math:`L` means noise :math:`s L z`
    (covariance :math:`s^2 LL^\top`) and whitening :math:`L^{-1}\Delta`.

    The whitening is computed in floating point (``inv`` :math:`= \mathrm{fl}(1/w)`, ``linv``
    :math:`= X \approx L^{-1}`); ``defect`` :math:`\delta` bounds its rounding,
    :math:`\|L^{-1}v\| \le \|Xv\| / (1 - \delta)` for every :math:`v`, and
    :meth:`outward` turns distances computed with :math:`X` into upper bounds on those of
    :math:`L^{-1}` (docs/coupling.md, "Certified distances", *The whitening in floating point*).
    """

    def __init__(self, scale):
        arr = np.asarray(scale, dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{_OWNER}: scale must be finite; got {int((~np.isfinite(arr)).sum())} non-finite entries.")
        if arr.ndim == 1:
            if (arr < 0).any():
                raise ValueError(f"{_OWNER}: a vector scale (the noise shape w) must be >= 0; got {arr.min()!r}.")
            self.diagonal = True
            self.zero = arr == 0
            self.inv = np.where(self.zero, 0.0, 1.0 / np.where(self.zero, 1.0, arr))
            self.size = arr.size
            self.defect = _U  # fl(1/w) = (1 + e)/w with |e| <= u
        elif arr.ndim == 2 and arr.shape[0] == arr.shape[1]:
            self.diagonal = False
            self.size = arr.shape[0]
            self.zero = np.zeros(self.size, dtype=bool)
            try:
                # Exactly lower-triangular only: a tolerance (np.allclose's atol=1e-8) would
                # drop upper entries of a factor whose own scale is that small and understate
                # every whitened distance.
                if np.array_equal(arr, np.tril(arr)):
                    self.linv = linalg.solve_triangular(arr, np.eye(self.size), lower=True)
                else:
                    self.linv = linalg.inv(arr)
            except (linalg.LinAlgError, ValueError):
                self.linv = None
            # Conditioning is judged with the rows scaled to a unit diagonal: coordinates whose
            # spreads differ by many orders of magnitude (a coefficient of a one-hot column
            # that a few rows hold) are no numerical problem for the triangular solve, only
            # near-collinear rows are.
            diag = np.abs(np.diag(arr))
            scaled = arr / np.where(diag > 0, diag, 1.0)[:, None]
            ok = self.linv is not None and np.all(np.isfinite(self.linv)) and np.all(diag > 0)
            self.defect = _inverse_defect(arr, self.linv) if ok else np.inf
            if not ok or np.linalg.cond(scaled) > 1e12 or not self.defect <= _MAX_DEFECT:
                raise ValueError(
                    f"{_OWNER}: a matrix scale L (noise s L z) must be invertible; got a singular "
                    "or ill-conditioned one. A coordinate that never changes (e.g. an intercept "
                    "fitted with fit_intercept=False) can be given any positive scale."
                )
        else:
            raise ValueError(
                f"{_OWNER}: scale must be a vector w of shape (n_params,) or a square matrix L of "
                f"shape (n_params, n_params); got shape {arr.shape}."
            )

    def norms(self, diff):
        r"""Whitened norms of the rows of ``diff`` (shape (..., D)): upper bounds on
        :math:`\|L^{-1}d\|` (or :math:`\|d/w\|`) for the rows as given, covering the rounding
        of the product (:meth:`images`), of the norm (relative :math:`(D + 2)u`, doubled) and
        of the whitening itself (:meth:`outward`); ``inf`` where a zero-scale coordinate
        changed."""
        diff = np.asarray(diff, dtype=np.float64)
        W, err = self.images(diff.reshape(-1, self.size))
        out = np.linalg.norm(W, axis=-1) * (1.0 + relative_error(2 * (self.size + 2))) + err
        out = out.reshape(diff.shape[:-1])
        if self.diagonal and self.zero.any():
            out = np.where((diff[..., self.zero] != 0).any(axis=-1), np.inf, out)
        return self.outward(out)

    def outward(self, distances):
        r"""Upper bounds on distances in the exact whitening (:math:`L^{-1}`, :math:`1/w`) from
        ``distances`` computed with the rounded one: :math:`d\,(1 + 2\delta + 4u)`, rounded
        up (:func:`skmip.bounds.rounding.round_up`; :math:`1/(1 - \delta) \le 1 + 2\delta` for
        :math:`\delta \le 1/2`, and the pad's own rounding is covered by :math:`4u` and the step
        up). Zeros and ``inf`` stay as they are.

        Examples
        --------
        >>> w = _Whitener(np.ones(3))
        >>> float(w.outward(np.array([1.0]))[0]) > 1.0, float(w.outward(np.array([0.0]))[0])
        (True, 0.0)
        """
        return np.asarray(round_up(distances, rel_err=2.0 * self.defect + 4.0 * _U))

    def images(self, F):
        r"""``(W, err)``: the whitened rows ``W = fl(X f_i)`` of ``F`` (n, D) and per row an upper
        bound ``err`` on :math:`\|\mathrm{fl}(Xf_i) - Xf_i\|`: :math:`\gamma_D\,\||X||f_i|\|`
        (each entry of a product of length :math:`D` rounds by at most :math:`\gamma_D` times
        the product of the absolute values; one rounding :math:`u|f_i/w|` for a vector scale),
        doubled to cover its own rounding. Zero-scale coordinates whiten to 0 (:meth:`raw`
        keeps them)."""
        F = np.asarray(F, dtype=np.float64)
        if self.diagonal:
            W = F * self.inv
            return W, 2.0 * _U * np.linalg.norm(W, axis=-1)
        W = F @ self.linv.T
        return W, 2.0 * relative_error(self.size) * np.linalg.norm(np.abs(F) @ np.abs(self.linv).T, axis=-1)

    def apply(self, V, index, out=None):
        """Whiten rows of ``V`` given in the coordinates ``index`` of one block; a vector scale
        writes them into ``out`` where given (which may be ``V``), a matrix scale into a new array."""
        if self.diagonal:
            return np.multiply(V, self.inv[index], out=out)  # blocks stay in their own (disjoint) coordinates
        return V @ self.linv[:, index].T  # the full whitened space couples the blocks

    def raw(self, V, index):
        """The rows' values on zero-scale coordinates (none for a matrix scale)."""
        return V[..., self.zero[index]] if self.diagonal else V[..., :0]


def _inverse_defect(L, X):
    r"""An upper bound :math:`\delta` on :math:`\|I - XL\|_2` for ``X``, a computed inverse of
    ``L`` (D x D): then :math:`L^{-1} = (I - E)^{-1}X` with :math:`E = I - XL`, so
    :math:`\|L^{-1}v\| \le \|Xv\| / (1 - \delta)`.

    The residual is formed in the platform's extended precision where it has one
    (``np.longdouble``, unit roundoff :math:`u_e`; else :math:`u_e = u`): entrywise
    :math:`|\mathrm{fl}(XL) - XL| \le \gamma_D |X||L|` (:math:`\gamma_D = Du_e/(1 - Du_e)`) and
    the subtraction from :math:`I` rounds each entry by a factor :math:`1 + \epsilon`,
    :math:`|\epsilon| \le u_e`, so :math:`\|E\|_2 \le \|E\|_F \le \|\mathrm{fl}(I - XL)\|_F/(1 - u_e)
    + \gamma_D \||X||L|\|_F` (and :math:`1/(1 - u_e) \le 1 + 2u_e`); the first norm and the sum
    are rounded in the wide type, which the factor :math:`1 + 4(D^2 + D + 4)u_e` covers (a sum of
    at most :math:`D^2` non-negative terms, relative error below :math:`(D^2 + 1)u_e`). The
    non-negative :math:`|X||L|` needs no extended precision: it and its norm are formed in float64
    (BLAS), at least :math:`1 - \gamma^{(64)}_D` and :math:`1 - \gamma^{(64)}_{D^2 + 1}` times
    their exact values, so they are divided by both. The result is rounded up to float64.

    Examples
    --------
    >>> L = np.array([[2.0, 0.0], [1.0, 4.0]])
    >>> X = np.linalg.inv(L)
    >>> 0.0 <= _inverse_defect(L, X) < 1e-14
    True
    """
    wide = np.longdouble if np.finfo(np.longdouble).eps < np.finfo(np.float64).eps else np.float64
    u = np.finfo(wide).eps / 2
    D = L.shape[0]
    Lw, Xw = np.asarray(L, dtype=wide), np.asarray(X, dtype=wide)  # exact conversions
    gamma = D * u / (1 - D * u)
    residual = np.eye(D, dtype=wide) - Xw @ Lw
    size = np.linalg.norm(np.abs(X) @ np.abs(L)) / ((1.0 - relative_error(D)) * (1.0 - relative_error(D * D + 1)))
    bound = (1 + 2 * u) * np.sqrt((residual * residual).sum()) + gamma * wide(size) / (1 - gamma)
    bound = bound * (1 + 4 * (D * D + D + 4) * u)
    return float(np.nextafter(np.float64(bound), np.inf))
