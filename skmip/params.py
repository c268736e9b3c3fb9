"""Parameter adapters: the one place that knows how a fitted estimator stores its parameters.

An adapter turns a fitted estimator into a 1-D float vector and back, puts
permutation-symmetric parameters in a canonical order, projects noised parameters back to
valid ones, and scrubs training diagnostics computed on the private data. Everything else
in skmip asks the adapter; nothing else special-cases ``coef_``.

Projection and scrubbing are post-processing, which keeps eta-MIP (Izzo et al., Theorem 3)
as long as they use only the released parameters and public information.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "ParamAdapter",
    "LinearModelAdapter",
    "get_adapter",
    "register_adapter",
    "DIAGNOSTIC_ATTRIBUTES",
]

#: Fitted attributes that describe the training run on the private data rather than the
#: model. They are removed from everything skmip releases.
DIAGNOSTIC_ATTRIBUTES = (
    "loss_",
    "loss_curve_",
    "best_loss_",
    "validation_scores_",
    "best_validation_score_",
    "n_iter_",
    "t_",
    "history_",
    "lower_bound_",
    "lower_bounds_",
    "converged_",
    "n_steps_",
    "dist_",
    "support_",
    "raw_location_",
    "raw_covariance_",
    "raw_support_",
)


@runtime_checkable
class ParamAdapter(Protocol):
    """What skmip needs to know about a fitted estimator's parameters.

    Every method works in place on a *fitted* estimator and returns it (or the vector).
    """

    def get_vector(self, estimator) -> np.ndarray:
        """The fitted parameters as a 1-D float64 vector (a copy)."""

    def set_vector(self, estimator, vector) -> object:
        """Write ``vector`` (same layout as :meth:`get_vector`) back into ``estimator``."""

    def canonicalize(self, estimator) -> object:
        """Reorder permutation-symmetric parts (mixture components, hidden units)."""

    def project(self, estimator) -> object:
        """Map parameters to valid ones after noise (PSD, simplex) and recompute derived
        attributes (precisions, ...)."""

    def scrub(self, estimator) -> object:
        """Remove training diagnostics computed on the private data."""


def scrub_diagnostics(estimator, names=DIAGNOSTIC_ATTRIBUTES):
    """Delete the listed fitted attributes from ``estimator`` where present."""
    for name in names:
        if name in vars(estimator):
            delattr(estimator, name)
    return estimator


class AttributeAdapter:
    """Adapter over a list of named array attributes, concatenated in the given order.

    Parameters
    ----------
    attributes : sequence of str
        Names of fitted array attributes (``"coef_"``, ``"intercept_"``, ...). Each is
        flattened in C order; shapes are remembered from the estimator at hand.
    """

    def __init__(self, attributes):
        self.attributes = tuple(attributes)

    def _arrays(self, estimator):
        missing = [a for a in self.attributes if not hasattr(estimator, a)]
        if missing:
            raise AttributeError(
                f"{type(self).__name__}: the fitted {type(estimator).__name__} has no "
                f"attribute(s) {missing}; pass params=[...] naming attributes it has."
            )
        return [np.asarray(getattr(estimator, a), dtype=np.float64) for a in self.attributes]

    def get_vector(self, estimator):
        return np.concatenate([a.ravel() for a in self._arrays(estimator)])

    def set_vector(self, estimator, vector):
        vector = np.asarray(vector, dtype=np.float64).ravel()
        arrays = self._arrays(estimator)
        total = sum(a.size for a in arrays)
        if vector.size != total:
            raise ValueError(
                f"{type(self).__name__}: vector has {vector.size} entries but "
                f"{type(estimator).__name__} has {total} parameters in {self.attributes}."
            )
        start = 0
        for name, arr in zip(self.attributes, arrays):
            new = vector[start : start + arr.size].reshape(arr.shape)
            old = getattr(estimator, name)
            if np.isscalar(old) or np.ndim(old) == 0:
                new = type(old)(new) if isinstance(old, float) else new.reshape(())
            setattr(estimator, name, new)
            start += arr.size
        return estimator

    def canonicalize(self, estimator):
        return estimator

    def project(self, estimator):
        return estimator

    def scrub(self, estimator):
        return scrub_diagnostics(estimator)

    def __repr__(self):
        return f"{type(self).__name__}({list(self.attributes)!r})"


class LinearModelAdapter(AttributeAdapter):
    """Every scikit-learn linear model: ``coef_`` and, when fitted with one, ``intercept_``."""

    def __init__(self):
        super().__init__(("coef_", "intercept_"))

    def _arrays(self, estimator):
        self.attributes = ("coef_", "intercept_") if hasattr(estimator, "intercept_") else ("coef_",)
        return super()._arrays(estimator)

    def __repr__(self):
        return f"{type(self).__name__}()"


def _is_linear_model(estimator):
    module = type(estimator).__module__
    return module.startswith("sklearn.linear_model") or module.startswith("sklearn.svm._classes") and type(
        estimator
    ).__name__ in ("LinearSVC", "LinearSVR")


# Registry: (predicate, factory) pairs, most recently registered first.
_REGISTRY: list[tuple[Callable[[object], bool], Callable[[object], ParamAdapter]]] = []


def register_adapter(predicate, factory, *, first=True):
    """Teach skmip how to read an estimator type.

    Parameters
    ----------
    predicate : type or callable
        A class (matched with ``isinstance``) or ``callable(estimator) -> bool``.
    factory : callable
        ``factory(estimator) -> ParamAdapter``.
    first : bool, default=True
        Put the entry ahead of the built-in ones, so users can override them.
    """
    if isinstance(predicate, type):
        cls = predicate
        predicate = lambda est, cls=cls: isinstance(est, cls)  # noqa: E731
    entry = (predicate, factory)
    if first:
        _REGISTRY.insert(0, entry)
    else:
        _REGISTRY.append(entry)
    return factory


register_adapter(_is_linear_model, lambda est: LinearModelAdapter(), first=False)


def _is_skorch_net(estimator):
    return type(estimator).__module__.split(".")[0] == "skorch"


def _skorch_adapter(estimator):
    # Imported lazily: skmip.nn is the optional torch leaf, never imported by the root.
    from skmip.nn.params import SkorchAdapter

    return SkorchAdapter()


register_adapter(_is_skorch_net, _skorch_adapter, first=False)


def get_adapter(estimator, params="auto") -> ParamAdapter:
    """Resolve the ``params`` option of an skmip estimator to a :class:`ParamAdapter`.

    Parameters
    ----------
    estimator : estimator instance
        The (possibly unfitted) estimator whose parameters will be read.
    params : "auto", list of str, or ParamAdapter, default="auto"
        ``"auto"`` looks the estimator up in the registry; a list of attribute names
        builds an :class:`AttributeAdapter`; an adapter instance is used as given.

    Raises
    ------
    TypeError
        If no registered adapter understands the estimator, naming the ways out.
    """
    if isinstance(params, str):
        if params != "auto":
            raise ValueError(
                f"params must be 'auto', a list of attribute names or a ParamAdapter; got {params!r}."
            )
        for predicate, factory in _REGISTRY:
            if predicate(estimator):
                return factory(estimator)
        raise TypeError(
            f"skmip does not know how {type(estimator).__name__} stores its parameters. "
            "Pass params=['attr_', ...] naming its fitted array attributes, or register an "
            "adapter with skmip.params.register_adapter(EstimatorClass, factory)."
        )
    if isinstance(params, (list, tuple)) and all(isinstance(p, str) for p in params) and params:
        return AttributeAdapter(params)
    if all(hasattr(params, m) for m in ("get_vector", "set_vector", "canonicalize", "project", "scrub")):
        return params
    raise TypeError(
        f"params must be 'auto', a non-empty list of attribute names or a ParamAdapter; got {params!r}."
    )
