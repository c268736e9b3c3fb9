"""A small parameter validator of our own (scikit-learn's is private API).

Every message names the owner, the parameter, what is allowed, the value received and,
where there is one, the fix.
"""

from __future__ import annotations

import contextlib
import numbers

import numpy as np

__all__ = [
    "check_interval", "check_option", "check_int", "check_eta", "check_moment", "ETA_WHY",
    "check_n_jobs", "check_sample_weight", "check_magnitude", "check_n_features", "check_cv_folds",
    "input_errors", "check_class_labels", "check_predict_input", "refuse_dp_sample_weight",
]


def _describe(low, high, closed):
    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    return f"{left}{lo}, {hi}{right}"


def check_interval(owner, name, value, low=None, high=None, *, closed="both", why=""):
    """Return ``float(value)`` if it is a real number within the interval, else raise.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is NaN or outside the interval; the message says ``why`` the range matters.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{owner}: {name} must be a real number in {_describe(low, high, closed)}; "
            f"got {value!r} of type {type(value).__name__}."
        )
    v = float(value)
    ok = not np.isnan(v)
    if ok and low is not None:
        ok = v >= low if closed in ("both", "left") else v > low
    if ok and high is not None:
        ok = v <= high if closed in ("both", "right") else v < high
    if not ok:
        msg = f"{owner}: {name} must be in {_describe(low, high, closed)}; got {value!r}."
        if why:
            msg += " " + why
        raise ValueError(msg)
    return v


def check_int(owner, name, value, low=None, high=None, *, why=""):
    """Return ``int(value)`` for an integral value within ``[low, high]``, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{owner}: {name} must be an integer in {_describe(low, high, 'both')}; "
            f"got {value!r} of type {type(value).__name__}."
        )
    check_interval(owner, name, int(value), low, high, closed="both", why=why)
    return int(value)


def check_option(owner, name, value, options, *, why=""):
    """Return ``value`` if it is one of ``options`` (strings), else raise ``ValueError``."""
    if value not in options:
        allowed = ", ".join(repr(o) for o in options)
        msg = f"{owner}: {name} must be one of {allowed}; got {value!r}."
        if why:
            msg += " " + why
        raise ValueError(msg)
    return value


#: Why a MIP promise eta must lie in (0, 0.5] (Izzo et al., Definition 1): every check says it.
ETA_WHY = (
    "eta is the attacker's accuracy advantage over 1/2, so values above 0.5 promise nothing "
    "and 0 would need infinite noise."
)


def check_eta(owner, eta, name="eta"):
    """Return ``float(eta)`` for a MIP promise in (0, 0.5], else raise with :data:`ETA_WHY`."""
    return check_interval(owner, name, eta, 0, 0.5, closed="right", why=ETA_WHY)


def check_moment(owner, moment):
    """Validate the order M of a central moment: a finite real number >= 2.

    Theorem 9 / Corollary 10 of Izzo et al. need M >= 2 (Corollary 14's constant 6.16 is
    proved for M >= 2).
    """
    m = check_interval(
        owner, "moment", moment, 2, None, closed="left",
        why="Izzo et al.'s Theorem 9 and Corollary 10 need a central moment of order M >= 2; "
        "use moment=2 (variance) if unsure.",
    )
    if not np.isfinite(m):
        raise ValueError(f"{owner}: moment must be a finite real number >= 2; got {moment!r}.")
    return m


def check_n_jobs(owner, n_jobs):
    """Return ``n_jobs`` if it is ``None`` or a non-zero integer (joblib's convention), else raise."""
    if n_jobs is None:
        return None
    why = ("n_jobs is the number of parallel workers: None or 1 runs serially, -1 uses every "
           "core, -2 all but one.")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(
            f"{owner}: n_jobs must be None or a non-zero integer; got {n_jobs!r} of type "
            f"{type(n_jobs).__name__}. {why}"
        )
    if n_jobs == 0:
        raise ValueError(f"{owner}: n_jobs must be None or a non-zero integer; got 0. {why}")
    return int(n_jobs)


def check_sample_weight(owner, fit_params, n, classes_of=None):
    """Check ``fit_params["sample_weight"]`` (if given) against the ``n`` rows of X.

    Checked once on the whole data, before anything subsets it: a wrong length would
    otherwise surface as a mismatch with some subset's size, far from its cause. With
    ``classes_of`` (a classifier's ``y``), every class needs a positive total weight: one
    weighted 0 is a class the fit cannot learn (its objective is then flat in that class's
    parameters, and the solver's Hessian is singular).
    """
    weights = fit_params.get("sample_weight")
    if weights is None:
        return
    arr = np.asarray(weights)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(
            f"{owner}: sample_weight must hold one weight per row of X, shape ({n},); got shape "
            f"{arr.shape}. Pass a 1-D sample_weight of length n_samples={n}; the rows of every "
            "subset fit are taken from it."
        )
    bad = arr.size if not np.issubdtype(arr.dtype, np.number) else int(np.sum(~np.isfinite(arr)))
    if bad:
        raise ValueError(
            f"{owner}: sample_weight must hold finite numbers; got {bad} of {arr.size} entries "
            f"that are not (dtype {arr.dtype}). Replace or drop them."
        )
    if classes_of is not None and np.ndim(classes_of) == 1:
        labels, codes = np.unique(np.asarray(classes_of), return_inverse=True)
        totals = np.bincount(codes, weights=arr.astype(np.float64), minlength=labels.size)
        empty = np.flatnonzero(~(totals > 0))
        if empty.size:
            first = int(empty[0])
            raise ValueError(
                f"{owner}: class {labels.tolist()[first]!r} has a total sample_weight of {totals[first]:g} "
                f"({int(np.sum(codes == first))} rows): a class with no "
                "positive weight cannot be learnt (the fit's objective does not depend on it). Give "
                "its rows positive weights, or drop its rows and label before fit."
            )


def refuse_dp_sample_weight(owner, fit_params):
    """Refuse fit parameters of a DP learner whose epsilon is accounted for unit weights.

    ``fit`` takes ``**fit_params`` only to answer ``sample_weight`` in words: its signature
    does not name it, so ``has_fit_parameter(est, "sample_weight")`` stays False and
    meta-estimators (bagging, boosting) see that weights are not supported. A row of weight
    ``w`` moves a weighted objective (or gradient sum) ``w`` times as far as a row of
    weight 1, so the sensitivity the noise was calibrated to -- and with it epsilon and every
    bound derived from it -- would be ``max(w)`` times too small; ignoring the weights
    would fit another model than the one asked for.

    Raises
    ------
    ValueError
        If ``fit_params`` holds ``sample_weight`` (not None).
    TypeError
        For any other fit parameter (Python's message for an unknown keyword).
    """
    if fit_params.get("sample_weight") is not None:
        raise ValueError(
            f"{owner}: sample_weight is not supported: a row's weight scales its influence on "
            "the DP learner, so the sensitivity its noise is calibrated to (and epsilon, and the "
            "bounds derived from it) would not hold for weighted rows. Drop sample_weight; to "
            "weight by frequency, repeat rows (each copy is then a record the promise covers), "
            "or use MIPNoiseWrapper, whose calibration accounts the weights."
        )
    unknown = sorted(k for k in fit_params if k != "sample_weight")
    if unknown:
        raise TypeError(f"{owner}.fit() got an unexpected keyword argument {unknown[0]!r}")


def check_magnitude(owner, X):
    """Raise where sums of squares of ``X`` overflow float64 (dense or sparse, numeric).

    Losses, Hessians, covariances and second moments all sum products of two feature values
    over the rows; once ``n_samples * n_features * max|X|**2`` exceeds float64's range they
    are infinite and every fit, spread or statistic computed from them is meaningless (a
    solver stops at its start, a decomposition fails). ``X`` itself may still be finite.
    """
    values = X.data if hasattr(X, "tocsr") else np.asarray(X)
    if values.size == 0 or not np.issubdtype(values.dtype, np.number):
        return
    largest = float(np.max(np.abs(values)))
    n_cells = max(1, int(X.shape[0]) * int(X.shape[1] if len(X.shape) > 1 else 1))
    limit = float(np.sqrt(np.finfo(np.float64).max / n_cells))
    if largest > limit:
        raise ValueError(
            f"{owner}: X has values of magnitude up to {largest:.3g}; sums of their squares over "
            f"{X.shape[0]} rows overflow float64 (the limit here is {limit:.3g}), so the loss, its "
            "Hessian and the spread of the fit cannot be computed. Standardize X (e.g. "
            "sklearn.preprocessing.StandardScaler fitted on D) or rescale it to a bounded range."
        )


def check_n_features(owner, X, n_features_in):
    """Raise if ``X`` does not have the ``n_features_in`` columns seen in ``fit``."""
    shape = getattr(X, "shape", None)
    if shape is None and isinstance(X, (list, tuple)):
        try:
            shape = np.shape(X)
        except ValueError:  # ragged rows: the estimator's own validation reports them
            return
    if shape is None:  # other array-likes: the released estimator's own validation checks them
        return
    if len(shape) == 2 and shape[1] != n_features_in:
        raise ValueError(
            f"{owner}: X has {shape[1]} features, but {owner} is expecting {n_features_in} "
            "features as input (the columns it was fitted on). Pass those columns, in the same "
            "order."
        )


def check_predict_input(estimator, X):
    """``X`` for the inner model a fitted meta-estimator holds, checked against its ``fit``.

    The width and the column names are checked here, as scikit-learn checks them
    (``validate_data(reset=False)``: reordered, renamed or missing columns are an error), so
    that errors name ``estimator``. An inner model fitted on the validated array, without
    column names, is handed a DataFrame as its values; one fitted on the DataFrame itself (a
    pipeline whose ``ColumnTransformer`` picks columns by name) gets the DataFrame.
    """
    from sklearn.utils.validation import check_is_fitted, validate_data

    check_is_fitted(estimator)
    owner = type(estimator).__name__
    check_n_features(owner, X, estimator.n_features_in_)
    if len(getattr(X, "shape", ())) == 2:  # column names (other shapes: the inner model's error)
        with input_errors(owner):
            validate_data(estimator, X, reset=False, skip_check_array=True)
    # A model trained on a DataFrame (the synthetic route of MIPNoiseWrapper, a pipeline
    # fitted on column names) gets one.
    if hasattr(X, "columns") and not hasattr(getattr(estimator, "estimator_", None), "feature_names_in_"):
        return X.to_numpy()
    return X


def check_cv_folds(owner, cv, y, n, classifier):
    """Check an integer ``cv`` against the data before a splitter sees it.

    An integer gives stratified folds for a classifier: each class needs at least ``cv`` rows
    (so every fold holds every class); otherwise ``n`` needs at least ``cv`` rows. Splitters
    and iterables are left to :func:`sklearn.model_selection.check_cv`.
    """
    if not isinstance(cv, numbers.Integral) or isinstance(cv, bool):
        return
    check_int(owner, "cv", cv, 2, None, why="cv is the number of folds; 5 is the default.")
    if classifier and y is not None:
        labels, counts = np.unique(np.asarray(y), return_counts=True)
        smallest = int(np.argmin(counts))
        if counts[smallest] < cv:
            raise ValueError(
                f"{owner}: cv={cv} stratified folds need at least {cv} rows of every class; class "
                f"{labels[smallest]!r} has {counts[smallest]} (n_samples={n}). Pass a smaller cv "
                f"(at least 2) or more rows of each class."
            )
    elif n < cv:
        raise ValueError(
            f"{owner}: cv={cv} folds need at least {cv} rows; got n_samples={n}. Pass a smaller "
            "cv (at least 2) or more rows."
        )


def check_class_labels(owner, y):
    """A classifier's targets: valid class labels, at least two of them. Returns the classes."""
    from sklearn.utils.multiclass import check_classification_targets

    check_classification_targets(y)
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError(
            f"{owner}: y has only one class ({classes[0]!r}); a classifier needs at least 2 "
            "classes to train. Pass rows of at least two classes."
        )
    return classes


#: Fixes for the input errors scikit-learn's validation raises without one.
_INPUT_FIXES = {
    "infinity": "Replace or drop the rows holding +-inf (e.g. keep np.isfinite(X).all(axis=1)).",
    "0 sample(s)": "Pass a non-empty X.",
    "0 feature(s)": "Pass X with at least one column.",
}


@contextlib.contextmanager
def input_errors(owner):
    """Re-raise scikit-learn's input-validation errors with ``owner`` named, and a fix.

    scikit-learn's messages name the problem (NaN, inf, sparse input, an empty array) but some
    name neither the estimator that refused the data nor what to do.
    """
    try:
        yield
    except (ValueError, TypeError) as err:
        message = str(err)
        if message.startswith(f"{owner}:"):
            raise
        fixes = [fix for key, fix in _INPUT_FIXES.items() if key in message]
        raise type(err)(" ".join([f"{owner}: {message}", *fixes])) from err

