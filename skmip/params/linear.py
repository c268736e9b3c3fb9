"""Linear models: every scikit-learn linear model and ``LinearSVC``/``LinearSVR`` release
``coef_`` and the fitted intercept."""

from __future__ import annotations

import functools

from skmip.params._base import AttributeAdapter


class LinearModelAdapter(AttributeAdapter):
    """Every scikit-learn linear model: ``coef_``, the fitted intercept, ``offset_``.

    Covers the classes of ``sklearn.linear_model`` that have ``coef_`` (all but
    ``RANSACRegressor``) and ``sklearn.svm.LinearSVC`` / ``LinearSVR``.

    Notes
    -----
    * With ``fit_intercept=False`` the intercept is a constant (``0.0`` or zeros), not a
      parameter computed on the data: it is left out of the vector and stays exactly as
      it is, so no noise turns a model through the origin into one with an intercept.
    * Scalar intercepts keep their type: a Python ``float`` stays a ``float``, a numpy
      scalar (single-target regressors) stays a numpy scalar, float32 stays float32.
    * ``SGDOneClassSVM`` stores its intercept as ``offset_``; it is a parameter.
    * A sparsified ``coef_`` (``SGDClassifier.sparsify()``) is read densely and written
      back dense: noise makes every entry non-zero.
    * :meth:`scrub` keeps ``coef_``, the intercept, :data:`PUBLIC_ATTRIBUTES` and the loss
      object that ``PoissonRegressor``/``GammaRegressor``/``TweedieRegressor`` rebuild from
      their hyper-parameters; it removes everything else fitted, e.g. ``n_iter_``,
      ``LinearRegression.singular_`` (singular values of X), ``HuberRegressor.outliers_``
      (one flag per training sample), ``alpha_`` selected by cross-validation, the SGD
      averaging state, and ``BayesianRidge``'s posterior (``sigma_``, ``X_offset_``), so
      ``predict(return_std=True)`` is not available on a released Bayesian model.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LogisticRegression(max_iter=1000).fit(X, y)
    >>> adapter = LinearModelAdapter()
    >>> adapter.get_vector(clf).shape  # 3 classes x 4 features + 3 intercepts
    (15,)
    >>> sorted(vars(adapter.scrub(clf)).keys() & {"coef_", "intercept_", "n_iter_"})
    ['coef_', 'intercept_']
    """

    # Fitted helpers that prediction needs and that are functions of hyper-parameters
    # (GLM link/loss objects) or of the public label set (RidgeClassifier's binarizer).
    _HELPERS = ("_base_loss", "_label_binarizer")

    def __init__(self):
        super().__init__(("coef_", "intercept_"), keep=self._HELPERS)

    def _names(self, estimator):
        names = ["coef_"]
        fitted_intercept = getattr(estimator, "fit_intercept", True) is not False
        if fitted_intercept and "intercept_" in vars(estimator):
            names.append("intercept_")
        if fitted_intercept and "offset_" in vars(estimator):
            names.append("offset_")
        return tuple(names)

    def _released(self, estimator):
        # A constant intercept (fit_intercept=False) is not in the vector but is kept.
        return {"coef_", "intercept_", "offset_"} | set(self._HELPERS)

    def __repr__(self):
        return f"{type(self).__name__}()"


@functools.lru_cache(maxsize=None)
def _linear_model_classes():
    import sklearn.linear_model as lm
    from sklearn.svm import LinearSVC, LinearSVR

    classes = [getattr(lm, n) for n in lm.__all__ if isinstance(getattr(lm, n), type)]
    # RANSACRegressor has no coef_: it wraps a fitted estimator_ and keeps one inlier flag
    # per training sample.
    classes = [c for c in classes if c.__name__ != "RANSACRegressor" and hasattr(c, "fit")]
    return tuple(classes) + (LinearSVC, LinearSVR)


def _is_linear_model(estimator):
    return isinstance(estimator, _linear_model_classes())
