"""Linear algebra on stacks of small problems (skmip.calibration.swap.stacks)."""

import numpy as np
import pytest
from scipy import linalg

from skmip.calibration.swap.stacks import _largest_eigenvalues


@pytest.mark.parametrize("D", [1, 5, 31, 70])
def test_largest_eigenvalues_are_scipys_to_every_bit(D):
    # fit_constants' nu: the direct LAPACK calls must give SciPy's eigvalsh, not a value
    # close to it (the printed bounds are compared digit for digit across versions).
    rng = np.random.default_rng(D)
    A = rng.standard_normal((6, D, D))
    M = A @ np.swapaxes(A, -1, -2) / D
    M[0] = np.eye(D)  # repeated eigenvalues
    M[1] *= -1.0  # negative definite
    top = _largest_eigenvalues(M)
    assert top.shape == (6,)
    np.testing.assert_array_equal(top, linalg.eigvalsh(M)[..., -1])
    # Any stack shape; one matrix alone.
    np.testing.assert_array_equal(_largest_eigenvalues(M.reshape(2, 3, D, D)), top.reshape(2, 3))
    assert _largest_eigenvalues(M[2]) == linalg.eigvalsh(M[2])[-1]


def test_largest_eigenvalues_refuse_what_scipy_refuses():
    M = np.tile(np.eye(3), (2, 1, 1))
    M[1, 0, 0] = np.nan
    with pytest.raises(ValueError):
        _largest_eigenvalues(M)
