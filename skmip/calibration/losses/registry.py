r"""The smooth-loss registry: the objective an estimator minimises, for the influence engines.

A :class:`~skmip.calibration.losses.terms.SmoothLoss` turns an estimator fitted on rows
:math:`H` into :class:`~skmip.calibration.losses.terms.LossBlock` objects (the parts are in
:mod:`skmip.calibration.losses.terms`). Built in: scikit-learn's ``LogisticRegression`` (binary
and multinomial), ``Ridge`` and ``LinearRegression`` (:mod:`~skmip.calibration.losses.linear`),
the Tweedie family (:mod:`~skmip.calibration.losses.glm`) and ``LinearSVC`` with the squared
hinge (:mod:`~skmip.calibration.losses.svm`); :func:`register_smooth_loss` adds others.
"""

from __future__ import annotations

from collections.abc import Callable

from skmip.calibration.losses import glm, linear, svm
from skmip.calibration.losses.linear import _LeastSquaresLoss, _LogisticLoss  # noqa: F401  (tests subclass them)
from skmip.calibration.losses.terms import (  # noqa: F401  (importable from here, as before)
    GLMTerms,
    LossBlock,
    MultiMarginTerms,
    RowGradients,
    SmoothLoss,
    augmented_design_cache,
    gradient_sum,
    weighted_gram,
)

__all__ = ["register_smooth_loss", "get_smooth_loss", "SmoothLoss", "LossBlock", "GLMTerms", "MultiMarginTerms"]

# Registry: (predicate, factory) pairs, most recently registered first.
_LOSSES: list[tuple[Callable[[object], bool], Callable[[object], SmoothLoss]]] = [
    *linear.BUILTIN, *glm.BUILTIN, *svm.BUILTIN,
]


def register_smooth_loss(predicate, factory) -> Callable:
    r"""Teach the influence engines the objective of an estimator type.

    Parameters
    ----------
    predicate : type or callable
        A class (matched exactly, since a subclass may change the objective) or
        ``callable(estimator) -> bool``.
    factory : callable
        ``factory(estimator) -> SmoothLoss``.

    Returns
    -------
    callable
        ``factory``, unchanged.

    Raises
    ------
    TypeError
        If ``factory`` is not callable.

    Notes
    -----
    The objective must be the one the estimator minimises *exactly* (scaling included:
    the Hessian and the gradients must use the same one), smooth and strictly convex at
    the fit, with a quadratic regulariser. Each fit is checked against the declared
    objective: the Newton step :math:`\mathbf{H}^{-1}\nabla F_H(\hat\theta_H)`, whitened,
    must be below 1% of half the median swap distance, which catches a wrong scaling and a
    solver stopped early; the blocks' ``index`` and ``theta`` are checked against the
    parameter adapter. Blocks with :class:`GLMTerms` (one margin per row) or a single block
    with :class:`MultiMarginTerms` (one margin per class) enable the ``"newton"`` engine, the
    others get the first-order ``"influence"`` engine. Registered entries take precedence
    over the built-in ones.

    References
    ----------
    Koh & Liang (2017) for the influence function the ``"influence"`` engine uses.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> class MyRidge(Ridge):
    ...     pass
    >>> get_smooth_loss(MyRidge()) is None  # a subclass is not trusted by default
    True
    >>> _ = register_smooth_loss(MyRidge, lambda est: get_smooth_loss(Ridge()))
    >>> get_smooth_loss(MyRidge()) is not None
    True
    >>> _ = _LOSSES.pop(0)  # undo, for the doctest
    """
    if not callable(factory):
        raise TypeError(f"register_smooth_loss: factory must be callable; got {factory!r}.")
    if isinstance(predicate, type):
        cls = predicate
        predicate = lambda est, cls=cls: type(est) is cls  # noqa: E731
    _LOSSES.insert(0, (predicate, factory))
    return factory


def get_smooth_loss(estimator) -> SmoothLoss | None:
    """The registered :class:`SmoothLoss` for ``estimator``, or ``None``.

    Parameters
    ----------
    estimator : estimator instance

    Returns
    -------
    SmoothLoss or None
        Built in: scikit-learn's ``LogisticRegression`` (binary: generalised-linear;
        multinomial: one margin per class), ``Ridge``, ``LinearRegression``,
        ``PoissonRegressor``, ``GammaRegressor``, ``TweedieRegressor`` and ``LinearSVC``
        (squared hinge) (exact classes, not subclasses).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> get_smooth_loss(LogisticRegression()) is not None, get_smooth_loss(DecisionTreeClassifier())
    (True, None)
    """
    for predicate, factory in _LOSSES:
        if predicate(estimator):
            return factory(estimator)
    return None
