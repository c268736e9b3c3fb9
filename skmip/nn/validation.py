"""scikit-learn input validation for the skorch nets: clear errors, never a model trained on junk.

skorch hands whatever it is given to torch: NaN features train a net whose every parameter
is NaN, an empty array a net that never took a step, string labels and DataFrames fail
deep inside torch. These checks run before any state changes, so a failed ``fit`` leaves
an earlier fitted net as it was.
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_consistent_length

__all__ = ["check_net_X", "check_net_y"]


def _is_array_like(X):
    # Datasets, dicts of arrays and other skorch-specific inputs are the user's business.
    return isinstance(X, (np.ndarray, list, tuple)) or hasattr(X, "iloc") or hasattr(X, "__array__") and not isinstance(
        X, torch.Tensor
    )


def check_net_X(owner: str, X, *, n_features: int | None = None, estimator=None):
    """``X`` as a finite, non-empty float array (or tensor), with ``n_features`` columns if given.

    Parameters
    ----------
    owner : str
        Class name for messages.
    X : array-like, DataFrame or torch.Tensor
        Features. Other skorch inputs (a ``Dataset``, a dict) are returned as they are.
    n_features : int or None, default=None
        Columns seen in ``fit``; a different count is an error.
    estimator : object, default=None
        Named in scikit-learn's messages.

    Returns
    -------
    ndarray, torch.Tensor or the input unchanged

    Raises
    ------
    ValueError
        For NaN or infinite values, no rows, non-numeric columns or a wrong feature count.

    Examples
    --------
    >>> check_net_X("Net", [[1.0, 2.0]]).dtype
    dtype('float32')
    >>> check_net_X("Net", [[np.nan, 1.0]])
    Traceback (most recent call last):
    ...
    ValueError: Net: Input X contains NaN.
    """
    if isinstance(X, torch.Tensor):
        if X.shape[0] == 0:
            raise ValueError(f"{owner}: X has 0 rows; a net needs at least one row. Pass a non-empty X.")
        if X.is_floating_point() and not bool(torch.isfinite(X).all()):
            raise ValueError(
                f"{owner}: X contains NaN or infinity; training on it gives a net of NaN parameters. "
                "Impute or drop those values first."
            )
        width = X.shape[1] if X.ndim > 1 else None
    elif _is_array_like(X):
        try:
            X = check_array(X, dtype=(np.float32, np.float64), ensure_all_finite=True, ensure_min_samples=1,
                            allow_nd=True, estimator=estimator, input_name="X")
        except ValueError as exc:
            raise ValueError(f"{owner}: {exc}") from None
        # skmip's modules have float32 weights: scikit-learn's float64 is cast once here.
        X = X.astype(np.float32, copy=False)
        width = X.shape[1]
    else:
        return X
    if n_features is not None and width is not None and width != n_features:
        raise ValueError(
            f"{owner}: X has {width} features, but the net was fitted with {n_features}. Pass "
            f"rows with the {n_features} columns used in fit."
        )
    return X


def check_net_y(owner: str, y, n_rows: int | None, *, classes=None, min_classes: int = 2):
    """Classification targets: consistent length, no NaN, at least two classes (unless ``classes``).

    Parameters
    ----------
    owner : str
        Class name for messages.
    y : array-like or torch.Tensor
        Labels.
    n_rows : int or None
        Rows of ``X`` (``None``: not checked).
    classes : array-like or None, default=None
        The net's ``classes`` parameter; when given, a ``y`` with fewer classes is allowed.
    min_classes : int, default=2
        Distinct labels ``y`` needs when ``classes`` is None (1 for ``partial_fit``, whose
        batches may hold one class).

    Returns
    -------
    labels : ndarray
        The distinct labels of ``y``, sorted.
    codes : ndarray of int64
        ``y`` as indices into ``labels``.

    Raises
    ------
    ValueError
        For continuous or NaN labels, a length mismatch or a single class.

    Examples
    --------
    >>> labels, codes = check_net_y("Net", ["b", "a", "b"], 3)
    >>> labels.tolist(), codes.tolist()
    (['a', 'b'], [1, 0, 1])
    """
    y = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
    if y.ndim != 1:
        y = check_array(y, ensure_2d=False, ensure_all_finite=True).ravel() if y.ndim == 2 and y.shape[1] == 1 else y
    if y.size == 0:
        raise ValueError(f"{owner}: y has 0 labels; a net needs at least one labelled row.")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError(f"{owner}: y contains NaN or infinity. Pass class labels (integers or strings).")
    try:
        check_classification_targets(y)
        if n_rows is not None:
            check_consistent_length(np.empty(n_rows), y)
    except ValueError as exc:
        raise ValueError(f"{owner}: {exc} Pass one class label per row of X.") from None
    labels, codes = np.unique(y, return_inverse=True)
    if classes is None and labels.size < min_classes:
        raise ValueError(
            f"{owner}: y has only one class ({labels.tolist()[0]!r}); a classifier needs at least 2 classes to "
            "train. Pass rows of every class, or the full label set as classes=[...]."
        )
    return labels, codes.astype(np.int64)
