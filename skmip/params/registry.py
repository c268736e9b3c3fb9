"""Resolution of the ``params`` option: the adapter registry, the built-in entries, the
estimators refused on purpose, and :func:`get_adapter`.

Optional leaves register themselves
-----------------------------------
The torch leaf :mod:`skmip.nn.params` registers :class:`skmip.nn.SkorchAdapter` when it is
imported; this package holds no skorch code and never imports torch or skorch. So that
``get_adapter(net)`` still works for a plain ``skorch.NeuralNet`` when the user has not
imported :mod:`skmip.nn` (skmip's own nets live there, so for them it always is),
``_LEAF_ADAPTERS`` maps the import path of a class a leaf adapts to the leaf module, as
data: the first time :func:`get_adapter` meets an instance of that class it imports the
leaf, which registers its adapter, and resolves as usual. The test costs nothing and
imports nothing, because an instance of a skorch class can only exist once skorch is
imported. Chosen over self-registration alone, which would refuse plain skorch nets unless
:mod:`skmip.nn` happened to be imported, and over what it replaced: a skorch predicate and a
lazy factory here *and* a second registration in the leaf, which imported this package at
its bottom to make it: two entries for one adapter and a two-way dependency between the
root and the leaf.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

from skmip.params._base import AttributeAdapter, ParamAdapter, _is_instance
from skmip.params.covariance import (
    CovarianceAdapter,
    GaussianMixtureAdapter,
    _is_covariance,
    _is_gaussian_mixture,
)
from skmip.params.linear import LinearModelAdapter, _is_linear_model
from skmip.params.neural import MLPAdapter, _is_mlp
from skmip.params.pipeline import PipelineAdapter, _is_pipeline
from skmip.params.preprocessing import StatelessAdapter, _is_stateless_transformer, _scaler_adapter
from skmip.params.statistic import StatisticAdapter, _is_statistic

# Registry: (predicate, factory) pairs, most recently registered first.
_REGISTRY: list[tuple[Callable[[object], bool], Callable[[object], ParamAdapter]]] = []


def register_adapter(predicate, factory, *, first: bool = True):
    """Teach skmip how to read an estimator type.

    Parameters
    ----------
    predicate : type or callable
        A class (matched with ``isinstance``) or ``callable(estimator) -> bool``. It sees
        unfitted estimators too.
    factory : callable
        ``factory(estimator) -> ParamAdapter``.
    first : bool, default=True
        Put the entry ahead of the built-in ones, so users can override them.

    Returns
    -------
    factory : callable
        The factory, unchanged (so ``register_adapter`` can be used as a decorator helper).

    Examples
    --------
    Release only the coefficients of a ``Ridge`` subclass, never its intercept:

    >>> from sklearn.linear_model import Ridge
    >>> class NoInterceptRidge(Ridge):
    ...     pass
    >>> _ = register_adapter(NoInterceptRidge, lambda est: AttributeAdapter(["coef_"]))
    >>> get_adapter(NoInterceptRidge())
    AttributeAdapter(['coef_'])
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


def _pipeline_adapter(pipeline):
    # Here rather than in .pipeline: each step is resolved through get_adapter.
    adapters = []
    for name, step in pipeline.steps:
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        try:
            adapters.append((name, get_adapter(step)))
        except TypeError as exc:
            raise TypeError(
                f"Pipeline step {name!r} ({type(step).__name__}) has no parameter adapter. Every "
                "step is fitted on the private data and released with the pipeline, so its fitted "
                "state must be noised too. Register an adapter for it with "
                "skmip.params.register_adapter, or fit that step on public data outside the "
                f"pipeline. ({exc})"
            ) from exc
    return PipelineAdapter(adapters)


# The built-in adapters, behind every user registration made with first=True.
register_adapter(_is_linear_model, lambda est: LinearModelAdapter(), first=False)
register_adapter(_is_mlp, lambda est: MLPAdapter(), first=False)
register_adapter(_is_covariance, lambda est: CovarianceAdapter(), first=False)
register_adapter(_is_gaussian_mixture, lambda est: GaussianMixtureAdapter(), first=False)
register_adapter(lambda est: _scaler_adapter(est) is not None, _scaler_adapter, first=False)
register_adapter(_is_stateless_transformer, lambda est: StatelessAdapter(), first=False)
register_adapter(_is_pipeline, _pipeline_adapter, first=False)
register_adapter(_is_statistic, lambda est: StatisticAdapter(), first=False)


# Class import path -> the optional leaf module that registers its adapter when imported
# (see the module docstring).
_LEAF_ADAPTERS = {"skorch.NeuralNet": "skmip.nn.params"}


def _import_leaf_adapter(estimator):
    """Import the leaf module that registers the adapter for ``estimator``, if one does."""
    for class_path, module in _LEAF_ADAPTERS.items():
        if module not in sys.modules and _is_instance(estimator, class_path):
            importlib.import_module(module)


# Estimators that skmip refuses on purpose, with the reason the error message gives.
_STORES_TRAINING_DATA = (
    "keeps training records in the fitted model ({}); releasing it releases them, and "
    "params=[...] cannot help because the records are the model"
)
_REFUSED = {
    **{
        n: _STORES_TRAINING_DATA.format("support_vectors_") + ". Use LinearSVC or LinearSVR"
        for n in ("SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM")
    },
    **{
        n: _STORES_TRAINING_DATA.format("_fit_X")
        for n in (
            "KNeighborsClassifier",
            "KNeighborsRegressor",
            "RadiusNeighborsClassifier",
            "RadiusNeighborsRegressor",
            "NearestNeighbors",
            "KernelDensity",
            "LocalOutlierFactor",
        )
    },
    "KernelRidge": _STORES_TRAINING_DATA.format("X_fit_")
    + ". For a kernel model, map X with a feature map fixed given D (RBFSampler(gamma=<number>, "
    "random_state=<seed>), or Nystroem fitted on public data) and privatise "
    "Ridge(fit_intercept=False) on the mapped features: that is kernel ridge with the map's "
    "kernel, calibrated by coupling with exact swaps (docs/coupling.md)",
    "GaussianProcessRegressor": _STORES_TRAINING_DATA.format("X_train_"),
    "GaussianProcessClassifier": _STORES_TRAINING_DATA.format("X_train_"),
    "RANSACRegressor": "keeps one inlier flag per training sample; adapt its estimator_ instead",
    "BayesianGaussianMixture": (
        "predicts from weight_concentration_ and posterior parameters, not weights_; "
        "use GaussianMixture"
    ),
    **{
        n: "splits on thresholds taken between training values; these are not continuous parameters "
        "that noise can protect"
        for n in (
            "DecisionTreeClassifier",
            "DecisionTreeRegressor",
            "ExtraTreeClassifier",
            "ExtraTreeRegressor",
            "RandomForestClassifier",
            "RandomForestRegressor",
            "ExtraTreesClassifier",
            "ExtraTreesRegressor",
            "GradientBoostingClassifier",
            "GradientBoostingRegressor",
            "HistGradientBoostingClassifier",
            "HistGradientBoostingRegressor",
        )
    },
}


def get_adapter(estimator, params="auto") -> ParamAdapter:
    """Resolve the ``params`` option of an skmip estimator to a :class:`ParamAdapter`.

    Parameters
    ----------
    estimator : estimator instance
        The (possibly unfitted) estimator whose parameters will be read.
    params : "auto", list of str, or ParamAdapter, default="auto"
        ``"auto"`` looks the estimator up in the registry (user registrations first,
        then the built-in adapters listed in the module docstring); a list of attribute
        names builds an :class:`AttributeAdapter`; an adapter instance is used as given.

    Returns
    -------
    adapter : ParamAdapter

    Raises
    ------
    TypeError
        If no registered adapter understands the estimator, naming the ways out (and, for
        estimators refused on purpose, why), or if ``params`` has the wrong type.
    ValueError
        If ``params`` is a string other than ``"auto"``.

    Examples
    --------
    >>> from sklearn.mixture import GaussianMixture
    >>> get_adapter(GaussianMixture())
    GaussianMixtureAdapter(min_weight=None)
    >>> get_adapter(GaussianMixture(), ["means_"])
    AttributeAdapter(['means_'])
    """
    if isinstance(params, str):
        if params != "auto":
            raise ValueError(
                f"params must be 'auto', a list of attribute names or a ParamAdapter; got {params!r}."
            )
        _import_leaf_adapter(estimator)
        for predicate, factory in _REGISTRY:
            if predicate(estimator):
                return factory(estimator)
        name = type(estimator).__name__
        reason = _REFUSED.get(name)
        if reason is not None:
            raise TypeError(f"skmip cannot release a noised {name}: it {reason}.")
        raise TypeError(
            f"skmip does not know how {name} stores its parameters. "
            "Pass params=['attr_', ...] naming its fitted array attributes, or register an "
            "adapter with skmip.params.register_adapter(EstimatorClass, factory)."
        )
    if isinstance(params, (list, tuple)) and params and all(isinstance(p, str) for p in params):
        return AttributeAdapter(params)
    if all(
        hasattr(params, m) for m in ("get_vector", "set_vector", "canonicalize", "project", "scrub")
    ):
        return params
    raise TypeError(
        f"params must be 'auto', a non-empty list of attribute names or a ParamAdapter; got {params!r}."
    )
