"""Whitening parameter changes into the noise's coordinates (vector or matrix noise shape)."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from skmip.calibration.swap._common import _OWNER


class _Whitener:
    r"""Maps parameter changes to the noise's whitened coordinates.

    A vector ``scale`` :math:`w` means noise :math:`s\,w \odot z` and whitening
    :math:`\Delta / w`; a coordinate with :math:`w_j = 0` gets no noise, so a change there is
    seen exactly (distance ``inf``). A square matrix :math:`L` means noise :math:`s L z`
    (covariance :math:`s^2 LL^\top`) and whitening :math:`L^{-1}\Delta`.
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
            if (self.linv is None or not np.all(np.isfinite(self.linv)) or not np.all(diag > 0)
                    or np.linalg.cond(scaled) > 1e12):
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
        """Whitened norms of the rows of ``diff`` (shape (..., D)); ``inf`` where a zero-scale
        coordinate changed."""
        if not self.diagonal:
            return np.linalg.norm(diff @ self.linv.T, axis=-1)
        out = np.linalg.norm(diff * self.inv, axis=-1)
        if self.zero.any():
            out = np.where((diff[..., self.zero] != 0).any(axis=-1), np.inf, out)
        return out

    def apply(self, V, index):
        """Whiten rows of ``V`` given in the coordinates ``index`` of one block."""
        if self.diagonal:
            return V * self.inv[index]  # blocks stay in their own (disjoint) coordinates
        return V @ self.linv[:, index].T  # the full whitened space couples the blocks

    def raw(self, V, index):
        """The rows' values on zero-scale coordinates (none for a matrix scale)."""
        return V[..., self.zero[index]] if self.diagonal else V[..., :0]
