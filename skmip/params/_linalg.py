"""Symmetric matrices and simplices: the free entries of a symmetric matrix, and the Euclidean
projections that map noised parameters back to valid ones (PSD cone, probability simplex).

Projections use only the released values, so they are post-processing and keep eta-MIP
(Izzo et al., Theorem 3). :func:`pack_symmetric`, :func:`unpack_symmetric` and
:func:`nearest_psd` are public, imported from :mod:`skmip.params` (the synthesizers of
:mod:`skmip.release` release covariances with them); the rest serves the adapters.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["pack_symmetric", "unpack_symmetric", "nearest_psd"]


def pack_symmetric(matrix: ArrayLike) -> np.ndarray:
    """Upper triangle (diagonal included) of a square matrix, row by row.

    The free entries of a symmetric matrix, each once: what a parameter vector holds for a
    covariance.

    Parameters
    ----------
    matrix : array_like of shape (d, d)

    Returns
    -------
    ndarray of shape (d (d + 1) / 2,)

    Examples
    --------
    >>> pack_symmetric([[1.0, 2.0], [2.0, 3.0]]).tolist()
    [1.0, 2.0, 3.0]
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    return matrix[np.triu_indices(matrix.shape[-1])]


def unpack_symmetric(values: ArrayLike, dim: int) -> np.ndarray:
    """Inverse of :func:`pack_symmetric`: the symmetric matrix with that upper triangle.

    Parameters
    ----------
    values : array_like of shape (dim (dim + 1) / 2,)
        The upper triangle, row by row.
    dim : int
        The matrix's size.

    Returns
    -------
    ndarray of shape (dim, dim)

    Examples
    --------
    >>> unpack_symmetric([1.0, 2.0, 3.0], 2).tolist()
    [[1.0, 2.0], [2.0, 3.0]]
    """
    out = np.zeros((dim, dim))
    rows, cols = np.triu_indices(dim)
    out[rows, cols] = values
    out[cols, rows] = values
    return out


def nearest_psd(matrix: ArrayLike, floor: float = 0.0) -> np.ndarray:
    """Nearest (Frobenius) symmetric matrix whose eigenvalues are all >= ``floor``.

    Parameters
    ----------
    matrix : array_like of shape (d, d)
        A square matrix (e.g. a noised covariance); its symmetric part is projected.
    floor : float, default=0.0
        The smallest eigenvalue allowed (0: the positive semidefinite cone).

    Returns
    -------
    ndarray of shape (d, d)
        Symmetric, with spectrum in ``[floor, inf)``.

    Notes
    -----
    For a symmetric matrix the nearest matrix with spectrum in ``[floor, inf)`` keeps the
    eigenvectors and clips the eigenvalues (Higham 1988, Theorem 2.1, shifted by ``floor``).
    A function of the released matrix only: post-processing, which keeps eta-MIP (Izzo et
    al., Theorem 3) and DP.

    References
    ----------
    Higham, N. J. "Computing a nearest symmetric positive semidefinite matrix", Linear
    Algebra Appl. 103 (1988), Theorem 2.1.

    Examples
    --------
    >>> nearest_psd([[1.0, 2.0], [2.0, 1.0]]).round(6).tolist()  # eigenvalues 3 and -1
    [[1.5, 1.5], [1.5, 1.5]]
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    sym = 0.5 * (matrix + matrix.T)
    eigval, eigvec = np.linalg.eigh(sym)
    out = (eigvec * np.maximum(eigval, floor)) @ eigvec.T
    return 0.5 * (out + out.T)


# The adapters of this package (covariance, statistic) call them by these names.
_pack_symmetric, _unpack_symmetric, _project_psd = pack_symmetric, unpack_symmetric, nearest_psd


def _project_simplex(values, floor=0.0):
    """Euclidean projection onto ``{w : w_i >= floor, sum(w) = 1}``.

    Shifting by ``floor`` turns the set into a scaled simplex of mass ``1 - k * floor``,
    onto which the sort-based algorithm of Held, Wolfe & Crowder (1974) projects exactly
    (also Duchi et al. 2008, Fig. 1).
    """
    values = np.asarray(values, dtype=np.float64)
    k = values.size
    mass = 1.0 - k * floor
    shifted = values - floor
    u = np.sort(shifted)[::-1]
    css = np.cumsum(u) - mass
    ind = np.arange(1, k + 1)
    rho = ind[u - css / ind > 0][-1]
    theta = css[rho - 1] / rho
    return np.maximum(shifted - theta, 0.0) + floor


def _default_floor(eigval):
    # sqrt(eps) relative to the largest |eigenvalue|: caps the condition number of the
    # released covariance near 7e7, so precision_ is a well-conditioned inverse.
    return np.sqrt(np.finfo(np.float64).eps) * max(float(np.max(np.abs(eigval), initial=0.0)), 1.0e-300)
