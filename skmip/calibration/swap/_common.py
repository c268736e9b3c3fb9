"""What every engine shares: the owner name in messages, and fitting a clone on rows."""

from __future__ import annotations

import numpy as np

from skmip.utils.rows import fit_on_rows

_OWNER = "estimate_swap_deltas"


def _fit_vector(estimator, adapter, X, y, rows, fit_params, n):
    """Fit a clone on ``rows`` (sorted) and return (fitted, parameter vector)."""
    fitted = fit_on_rows(estimator, X, y, rows, fit_params)
    adapter.canonicalize(fitted)
    return fitted, np.asarray(adapter.get_vector(fitted), dtype=np.float64).ravel()


def _fit_only_vector(estimator, adapter, X, y, rows, fit_params, n):
    return _fit_vector(estimator, adapter, X, y, rows, fit_params, n)[1]
