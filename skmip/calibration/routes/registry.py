"""The calibration routes by name, and the one function that turns ``method`` into a route.

``method`` is a string alias (``"auto"`` or a route's ``name``) or a route object, as MAPIE
takes a conformity strategy. :func:`resolve_route` is the one place that resolves it; every
defence and the command line call it. A new route plugs in with :func:`register_route` (and,
to be chosen by ``"auto"``, a line in :func:`auto_route`): docs/design.md, "Calibration routes".
"""

from __future__ import annotations

import warnings

from sklearn.base import clone

from skmip.exceptions import PrivacyWarning

from skmip.calibration.routes.base import CalibrationRoute, calibrated_estimator
from skmip.calibration.routes.coupling import CouplingRoute
from skmip.calibration.routes.moments import MomentsRoute
from skmip.calibration.routes.noisy_gradient import NoisyGradientRoute
from skmip.calibration.routes.synthetic import SyntheticRoute

__all__ = ["ROUTES", "register_route", "resolve_route", "auto_route", "build_route", "calibrated_estimator"]

#: Route name -> class (docs/design.md, "Calibration routes": the interface each implements).
ROUTES = {cls.name: cls for cls in (CouplingRoute, MomentsRoute, NoisyGradientRoute, SyntheticRoute)}


def register_route(cls):
    """Register a :class:`~skmip.calibration.routes.base.CalibrationRoute` subclass under its
    ``name`` (usable as a decorator); ``method=<name>`` then builds it with its defaults."""
    if not (isinstance(cls, type) and issubclass(cls, CalibrationRoute)) or not cls.name:
        raise TypeError(f"register_route: {cls!r} is not a CalibrationRoute subclass with a name.")
    ROUTES[cls.name] = cls
    return cls


def auto_route(estimator, params, shape=None):
    """``(route, reason)``: the route ``method="auto"`` takes for ``estimator``, and why.

    Where no parameter adapter reads the estimator (trees, forests, boosting, k-NN): training
    on MIP synthetic data. Where a smooth loss is registered (bare, or as the last step of a
    pipeline whose transformers are fitted on D) with ``params="auto"``: coupling before the data
    is read (``shape=None``), and, given the shape of D, coupling or noisy gradients by
    :func:`skmip.calibration.routes.auto.choose_smooth_route` (facts about D and eta only, never
    D_train). The moments calibration otherwise.

    Parameters
    ----------
    estimator : estimator instance
        What the defence wraps.
    params : "auto", list of str or ParamAdapter
        The defence's ``params``.
    shape : DataShape or None, default=None
        The shape of D and the target eta (:class:`skmip.calibration.routes.auto.DataShape`).

    Returns
    -------
    route : CalibrationRoute
    reason : str
    """
    from skmip.calibration.routes.auto import choose_smooth_route, outside_objective
    from skmip.calibration.swap import get_smooth_loss

    name = type(estimator).__name__
    last = calibrated_estimator(estimator, params)
    auto = isinstance(params, str) and params == "auto"
    if last is None and auto and get_smooth_loss(estimator) is not None:
        last = estimator
    if last is not None:
        why = "the pipeline's last step has" if last is not estimator else f"{name} has"
        outside = outside_objective(last)
        if outside is not None:  # a fact about the estimator alone: decided before the data
            return SyntheticRoute(), outside
        if shape is None:
            return CouplingRoute(), f"{why} a registered smooth loss"
        return choose_smooth_route(last, shape, CouplingRoute())
    if auto and CouplingRoute().applies(estimator, params) is not None:
        return SyntheticRoute(), f"no parameter adapter reads {name}"
    return MomentsRoute(), (f"{name} has no registered smooth loss" if auto
                            else "params names the parameters, which the coupling engines do not read")


def resolve_route(owner, method, estimator, params, accepted=None, stacklevel=2):
    """A fresh, validated route for ``method`` (never the object passed: it is cloned).

    Parameters
    ----------
    owner : str
        The class named in errors.
    method : str or CalibrationRoute
        ``"auto"``, a registered route's name, or a route object.
    estimator : estimator instance
        What the defence wraps (``"auto"`` reads it).
    params : "auto", list of str or ParamAdapter
        The defence's ``params`` (``"auto"`` reads it).
    accepted : tuple of str, default=None
        The route names ``owner`` takes (``None``: every registered one).
    stacklevel : int, default=2
        Where the warning of ``"auto"`` falling back to the moments route points.

    Returns
    -------
    route : CalibrationRoute
        Unvalidated: the caller forwards deprecated knobs into it first, then validates.

    Raises
    ------
    ValueError
        For an unknown name, or a route ``owner`` does not take.

    Warns
    -----
    PrivacyWarning
        When ``"auto"`` resolves to the moments route, whose noise leaves near coin-flip utility.
    """
    names = tuple(ROUTES) if accepted is None else accepted
    if isinstance(method, CalibrationRoute):
        route = clone(method)
    elif isinstance(method, str) and method == "auto":
        route, why = auto_route(estimator, params)
        if route.name not in names:
            raise ValueError(
                f"{owner}: method='auto' takes the {route.name} route for {type(estimator).__name__} "
                f"({why}), which {owner} does not take; pass one of "
                f"{', '.join(repr(o) for o in names)} or a route object (skmip.calibration.routes)."
            )
        if route.name == "moments":
            _warn_auto_moments(owner, estimator, stacklevel + 1)
    elif isinstance(method, str) and method in ROUTES:
        route = ROUTES[method]()
    else:
        route = None
    if route is None or route.name not in names:
        allowed = ", ".join(repr(o) for o in ("auto",) + names)
        raise ValueError(
            f"{owner}: method must be one of {allowed} or a route object "
            f"(skmip.calibration.routes); got {method!r}."
        )
    return route


def _warn_auto_moments(owner, estimator, stacklevel):
    warnings.warn(
        f"{owner}: method='auto' releases this {type(estimator).__name__} with Corollary "
        "10's noise (method_='moments'), because the coupling calibration needs a smooth loss "
        "registered for the estimator and params='auto'. That noise leaves near coin-flip "
        "utility; docs/mip_noise.md ('Two calibrations, and the default') gives the measured "
        "figures and better routes. Pass method='moments' to choose it knowingly and silence "
        "this warning.",
        PrivacyWarning, stacklevel=stacklevel,
    )


def build_route(method, estimator, params="auto", *, owner="build_route", **knobs):
    """The route ``method`` resolves to for ``estimator``, with those of ``knobs`` it has.

    For a caller that sets knobs for whichever route ``"auto"`` takes (the ``skmip`` command
    passes its ``--n-rounds`` and ``--n-subsets`` to every wrapper): a knob the route has not
    is left out, by design. The route is validated by the defence that receives it; ``owner``
    is the class named in errors and warnings.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> build_route("auto", LogisticRegression(), n_rounds=200, radius="gamma")
    CouplingRoute(n_rounds=200)
    """
    route = resolve_route(owner, method, estimator, params, stacklevel=3)
    own = route.get_params(deep=False)
    return route.set_params(**{name: value for name, value in knobs.items() if name in own})
