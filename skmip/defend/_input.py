"""What MIPNoiseWrapper and MIPNoiseWrapperCV accept as data: one validation for both.

``X``, ``y`` and ``sample_weight`` are checked as the wrapped estimator accepts them (its
input tags), with values whose squares sum without overflow; a pipeline calibrated by
coupling gets ``X`` as the user passed it (:mod:`skmip.defend.preprocessing`).
"""

from __future__ import annotations

import copy

from sklearn.base import is_classifier
from sklearn.utils import get_tags
from sklearn.utils.validation import check_array, check_consistent_length, column_or_1d, validate_data

from skmip.utils.rows import n_rows
from skmip.utils.validation import check_class_labels, check_magnitude, check_sample_weight, input_errors
from skmip.defend.preprocessing import preprocessing_route

__all__ = ["validate_input", "check_classes"]


def validate_input(wrapper, X, y, fit_params=None):
    """Validate ``X`` (and ``y``, and ``fit_params["sample_weight"]``) as the wrapped estimator
    accepts them, with values whose squares sum without overflow (:func:`check_magnitude`).

    Returns ``(X, y, probe)``: ``probe`` is a shallow copy of ``wrapper`` on which
    ``validate_data`` recorded ``n_features_in_`` (and ``feature_names_in_``), because nothing
    may be recorded on the wrapper itself before the whole fit succeeded.

    A pipeline on the route of :func:`~skmip.defend.preprocessing.preprocessing_route`
    gets ``X`` as the user passed it (a DataFrame with string or categorical columns for its
    own ``ColumnTransformer``, say): only its width and column names are recorded here, and
    the transformed rows are validated as numbers once its transformers have made them.
    """
    owner = type(wrapper).__name__
    route = preprocessing_route(wrapper.estimator, wrapper.method, wrapper.params)
    if route is None:
        return _validate_arrays(owner, wrapper.estimator, copy.copy(wrapper), X, y, fit_params)
    probe = copy.copy(wrapper)
    with input_errors(owner):
        if hasattr(X, "columns"):  # a DataFrame goes to the pipeline as it is (columns by name)
            validate_data(probe, X, reset=True, skip_check_array=True)
        else:  # other array-likes become arrays of any dtype; the transformed rows are checked
            X = validate_data(probe, X, reset=True, dtype=None, ensure_all_finite=False,
                              accept_sparse=["csr", "csc"])
        if y is not None:
            y = check_array(y, ensure_2d=False, dtype=None, ensure_all_finite=True)
            check_consistent_length(X, y)
    _, last_params = route.split_fit_params(owner, fit_params or {})
    check_sample_weight(owner, last_params, n_rows(X))
    return X, y, probe


def _validate_arrays(owner, estimator, probe, X, y, fit_params):
    """``validate_data`` with the input tags of ``estimator``; see :func:`validate_input`."""
    inner_tags = get_tags(estimator)
    supervised = inner_tags.target_tags.required or y is not None
    accept_sparse = ["csr", "csc"] if inner_tags.input_tags.sparse else False
    dtype = None if (inner_tags.input_tags.string or inner_tags.input_tags.categorical) else "numeric"
    with input_errors(owner):
        if supervised:
            X, y = validate_data(
                probe, X, y, reset=True, accept_sparse=accept_sparse, ensure_all_finite=True,
                dtype=dtype, multi_output=True,
            )
            if getattr(y, "ndim", 1) == 2 and y.shape[1] == 1 and not inner_tags.target_tags.multi_output:
                # A column vector for a single-output learner: raveled with scikit-learn's
                # DataConversionWarning, as the learner itself would (the calibration's losses
                # read one label per row).
                y = column_or_1d(y, warn=True)
        else:
            X = validate_data(
                probe, X, reset=True, accept_sparse=accept_sparse, ensure_all_finite=True,
                dtype=dtype,
            )
    check_magnitude(owner, X)
    check_sample_weight(owner, fit_params or {}, X.shape[0], y if is_classifier(estimator) else None)
    return X, y, probe


def check_classes(wrapper, y):
    """A classifier wrapper's targets: valid class labels, at least two of them."""
    if is_classifier(wrapper):
        check_class_labels(type(wrapper).__name__, y)
