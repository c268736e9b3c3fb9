"""Symmetric matrices and simplices: the free entries of a symmetric matrix, and the Euclidean
projections that map noised parameters back to valid ones (PSD cone, probability simplex).

Projections use only the released values, so they are post-processing and keep eta-MIP
(Izzo et al., Theorem 3).
"""

from __future__ import annotations

import numpy as np


def _pack_symmetric(matrix):
    """Upper triangle (diagonal included) of a square matrix, row by row."""
    matrix = np.asarray(matrix, dtype=np.float64)
    return matrix[np.triu_indices(matrix.shape[-1])]


def _unpack_symmetric(values, dim):
    """Inverse of :func:`_pack_symmetric`: the symmetric matrix with that upper triangle."""
    out = np.zeros((dim, dim))
    rows, cols = np.triu_indices(dim)
    out[rows, cols] = values
    out[cols, rows] = values
    return out


def _project_psd(matrix, floor):
    """Nearest (Frobenius) symmetric matrix whose eigenvalues are all >= ``floor``.

    For a symmetric matrix the nearest matrix with spectrum in ``[floor, inf)`` keeps the
    eigenvectors and clips the eigenvalues (Higham 1988, Theorem 2.1, shifted by ``floor``).
    """
    sym = 0.5 * (matrix + matrix.T)
    eigval, eigvec = np.linalg.eigh(sym)
    out = (eigvec * np.maximum(eigval, floor)) @ eigvec.T
    return 0.5 * (out + out.T)


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
