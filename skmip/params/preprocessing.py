"""Preprocessing steps fitted on the private data: the statistics the scalers keep (means,
scales, minima, maxima, medians), and transformers with no data-dependent state."""

from __future__ import annotations

import numpy as np

from skmip.params._base import _BlockAdapter, _like, _require
from skmip.params.scrub import scrub_diagnostics


def _handle_zeros_in_scale(scale):
    """scikit-learn's rule for near-zero scales: below ``10 * eps`` means "do not scale".

    Re-implemented because ``sklearn.preprocessing._data._handle_zeros_in_scale`` is private.
    Noise can push a released scale to zero or below; the same rule maps it to 1.0.
    """
    scale = np.array(scale, dtype=np.float64, copy=True)
    scale[scale < 10 * np.finfo(np.float64).eps] = 1.0
    return scale


class _NamedArraysAdapter(_BlockAdapter):
    """A fitted preprocessing step whose free parameters are named arrays (``_FIELDS``).

    Fields that the estimator leaves ``None`` (``with_mean=False``, ...) are skipped;
    ``_refresh`` recomputes the derived attributes after every write.
    """

    _FIELDS: tuple = ()

    def _names(self, estimator):
        return [n for n in self._FIELDS if getattr(estimator, n, None) is not None]

    def _read(self, estimator):
        _require(type(self).__name__, estimator, self._FIELDS)
        return [
            np.asarray(getattr(estimator, n), dtype=np.float64).ravel() for n in self._names(estimator)
        ]

    def _write(self, estimator, blocks):
        for name, block in zip(self._names(estimator), blocks, strict=True):
            setattr(estimator, name, _like(getattr(estimator, name), block))
        self._refresh(estimator)

    @staticmethod
    def _refresh(estimator):
        """Recompute attributes derived from the free parameters (none by default)."""


class StandardScalerAdapter(_NamedArraysAdapter):
    """``StandardScaler``: ``mean_`` and ``scale_`` (either absent when switched off).

    Notes
    -----
    ``scale_`` is the free parameter because ``transform`` divides by it; ``var_`` is
    derived, ``var_ = scale_ ** 2``, after :meth:`set_vector`. :meth:`project` applies
    scikit-learn's own rule for near-zero scales to the noised ones: a scale below
    ``10 * eps`` (noise can make it zero or negative) becomes 1.0, "do not scale". For a
    feature that was constant in the training data scikit-learn reports ``var_ = 0`` and
    ``scale_ = 1``; the released scaler reports ``var_ = scale_ ** 2``. :meth:`scrub` removes
    ``n_samples_seen_`` (not needed to transform).

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.datasets import load_wine
    >>> X, _ = load_wine(return_X_y=True)
    >>> adapter = StandardScalerAdapter()
    >>> adapter.get_vector(StandardScaler().fit(X)).shape
    (26,)
    """

    _FIELDS = ("mean_", "scale_")

    @staticmethod
    def _refresh(estimator):
        if getattr(estimator, "var_", None) is not None:
            estimator.var_ = _like(estimator.var_, np.asarray(estimator.scale_, dtype=np.float64) ** 2)

    def project(self, estimator):
        """Scales below ``10 * eps`` become 1.0 (scikit-learn's rule); ``var_`` refreshed."""
        if getattr(estimator, "scale_", None) is not None:
            estimator.scale_ = _like(estimator.scale_, _handle_zeros_in_scale(estimator.scale_))
            self._refresh(estimator)
        return estimator

    def _released(self, estimator):
        return {"mean_", "scale_", "var_"}


class MinMaxScalerAdapter(_NamedArraysAdapter):
    """``MinMaxScaler``: ``data_min_`` and ``data_max_`` (minima and maxima of the data!).

    Notes
    -----
    ``data_range_``, ``scale_`` and ``min_`` are recomputed from the two free parameters
    with scikit-learn's formulas. :meth:`project` orders each (min, max) pair, and a
    range below ``10 * eps`` means "do not scale", as in scikit-learn.

    Examples
    --------
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> MinMaxScalerAdapter().get_vector(MinMaxScaler().fit(X)).shape
    (8,)
    """

    _FIELDS = ("data_min_", "data_max_")

    @staticmethod
    def _refresh(estimator):
        lo, hi = estimator.feature_range
        data_min = np.asarray(estimator.data_min_, dtype=np.float64)
        data_range = np.asarray(estimator.data_max_, dtype=np.float64) - data_min
        scale = (hi - lo) / _handle_zeros_in_scale(data_range)
        estimator.data_range_ = _like(estimator.data_min_, data_range)
        estimator.scale_ = _like(estimator.data_min_, scale)
        estimator.min_ = _like(estimator.data_min_, lo - data_min * scale)

    def project(self, estimator):
        """Each feature's (min, max) in increasing order; derived attributes refreshed."""
        a = np.asarray(estimator.data_min_, dtype=np.float64)
        b = np.asarray(estimator.data_max_, dtype=np.float64)
        estimator.data_min_ = _like(estimator.data_min_, np.minimum(a, b))
        estimator.data_max_ = _like(estimator.data_max_, np.maximum(a, b))
        self._refresh(estimator)
        return estimator

    def _released(self, estimator):
        return {"data_min_", "data_max_", "data_range_", "scale_", "min_"}


class MaxAbsScalerAdapter(_NamedArraysAdapter):
    """``MaxAbsScaler``: ``max_abs_``; ``scale_`` is derived.

    Notes
    -----
    :meth:`project` clips ``max_abs_`` at zero (the Euclidean projection onto its valid
    set); a value below ``10 * eps`` gives ``scale_ = 1``, as in scikit-learn.

    Examples
    --------
    >>> from sklearn.preprocessing import MaxAbsScaler
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> MaxAbsScalerAdapter().get_vector(MaxAbsScaler().fit(X)).shape
    (4,)
    """

    _FIELDS = ("max_abs_",)

    @staticmethod
    def _refresh(estimator):
        estimator.scale_ = _like(estimator.max_abs_, _handle_zeros_in_scale(estimator.max_abs_))

    def project(self, estimator):
        """``max_abs_`` clipped at zero; ``scale_`` refreshed."""
        self._write(estimator, [np.maximum(np.asarray(estimator.max_abs_, dtype=np.float64), 0.0)])
        return estimator

    def _released(self, estimator):
        return {"max_abs_", "scale_"}


class RobustScalerAdapter(_NamedArraysAdapter):
    """``RobustScaler``: ``center_`` (medians) and ``scale_`` (quantile ranges), where used.

    Notes
    -----
    :meth:`project` applies scikit-learn's near-zero rule to the noised ``scale_``.

    Examples
    --------
    >>> from sklearn.preprocessing import RobustScaler
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> RobustScalerAdapter().get_vector(RobustScaler().fit(X)).shape
    (8,)
    """

    _FIELDS = ("center_", "scale_")

    def project(self, estimator):
        """Scales below ``10 * eps`` become 1.0 (scikit-learn's rule)."""
        if getattr(estimator, "scale_", None) is not None:
            estimator.scale_ = _like(estimator.scale_, _handle_zeros_in_scale(estimator.scale_))
        return estimator

    def _released(self, estimator):
        return {"center_", "scale_"}


class StatelessAdapter(_BlockAdapter):
    """Transformers whose fitted state is a function of hyper-parameters and input width.

    ``FunctionTransformer``, ``Normalizer``, ``Binarizer``, ``PolynomialFeatures``: no free
    parameter (an empty vector); :meth:`scrub` removes only :data:`DIAGNOSTIC_ATTRIBUTES`.

    Examples
    --------
    >>> from sklearn.preprocessing import Normalizer
    >>> StatelessAdapter().get_vector(Normalizer().fit([[1.0, 2.0]])).shape
    (0,)
    """

    def _read(self, estimator):
        return []

    def _write(self, estimator, blocks):
        pass

    def scrub(self, estimator):
        """Remove the known diagnostics; the rest is not computed from data values."""
        return scrub_diagnostics(estimator)


def _is_stateless_transformer(estimator):
    from sklearn.preprocessing import (
        Binarizer,
        FunctionTransformer,
        Normalizer,
        PolynomialFeatures,
    )

    return isinstance(estimator, (FunctionTransformer, Normalizer, Binarizer, PolynomialFeatures))


def _scaler_adapter(estimator):
    from sklearn.preprocessing import (
        MaxAbsScaler,
        MinMaxScaler,
        RobustScaler,
        StandardScaler,
    )

    for cls, adapter in (
        (StandardScaler, StandardScalerAdapter),
        (MinMaxScaler, MinMaxScalerAdapter),
        (MaxAbsScaler, MaxAbsScalerAdapter),
        (RobustScaler, RobustScalerAdapter),
    ):
        if isinstance(estimator, cls):
            return adapter()
    return None
