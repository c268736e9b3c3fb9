"""Row bookkeeping shared by everything that fits on subsets of the data."""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils import _safe_indexing

__all__ = ["n_rows", "subset_fit_params", "fit_on_rows", "stack_rows"]


def n_rows(data) -> int:
    """Number of rows of an array, sparse matrix, DataFrame or list."""
    return data.shape[0] if hasattr(data, "shape") else len(data)


def subset_fit_params(fit_params, rows, n):
    """Subset per-row fit parameters (e.g. ``sample_weight``) to ``rows``; pass others through.

    A parameter is per-row when it is array-like with ``n`` rows.
    """
    out = {}
    for key, value in fit_params.items():
        if (hasattr(value, "shape") or isinstance(value, (list, tuple))) and n_rows(value) == n:
            out[key] = _safe_indexing(value, rows)
        else:
            out[key] = value
    return out


def fit_on_rows(estimator, X, y, rows, fit_params):
    """Fit a clone of ``estimator`` on ``rows`` of ``(X, y)`` (``rows=None``: all rows)."""
    fitted = clone(estimator)
    if rows is None:
        Xs, ys, params = X, y, dict(fit_params)
    else:
        Xs = _safe_indexing(X, rows)
        ys = None if y is None else _safe_indexing(y, rows)
        params = subset_fit_params(fit_params, rows, n_rows(X))
    if ys is None:
        return fitted.fit(Xs, **params)
    return fitted.fit(Xs, ys, **params)


def stack_rows(a, b):
    """Rows of ``a`` then rows of ``b`` (arrays, sparse matrices, DataFrames or Series)."""
    if hasattr(a, "iloc"):
        import pandas as pd

        return pd.concat([a, b], ignore_index=True)
    import scipy.sparse as sp

    if sp.issparse(a) or sp.issparse(b):
        return sp.vstack([sp.csr_matrix(a), sp.csr_matrix(b)], format="csr")
    return np.concatenate([np.asarray(a), np.asarray(b)])
