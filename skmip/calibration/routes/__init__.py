"""Calibration routes: one object per way of turning a target eta into a release.

- :class:`CouplingRoute` -- Gaussian noise scaled by the coupling bound on swap distances.
- :class:`MomentsRoute` -- Izzo et al.'s Corollary 10 noise, scaled by the spread.
- :class:`NoisyGradientRoute` -- a scikit-learn GLM trained by clipped, Poisson-sampled noisy
  gradients (DP-SGD in numpy), promised by the PLD accountant.
- :class:`SyntheticRoute` -- training on records of an eta-MIP synthesizer (post-processing).

``MIPNoiseWrapper(estimator, eta, method=...)`` takes ``"auto"``, a route's name, or one of
these objects (its knobs as parameters: ``method=CouplingRoute(n_rounds=1000)``, tuned in a
grid search as ``method__n_rounds``). :func:`resolve_route` resolves ``method`` in one place;
:func:`register_route` adds a route. docs/design.md, "Calibration routes".
"""

from skmip.calibration.routes.base import CalibrationRoute, Cost, check_cost, n_train_of, warn_if_vacuous
from skmip.calibration.routes.moments import check_n_subsets
from skmip.calibration.routes.coupling import CouplingRoute
from skmip.calibration.routes.moments import MomentsRoute
from skmip.calibration.routes.noisy_gradient import NoisyGradientRoute
from skmip.calibration.routes.registry import (
    ROUTES, auto_route, build_route, calibrated_estimator, register_route, resolve_route,
)
from skmip.calibration.routes.synthetic import SyntheticRoute

__all__ = [
    "CalibrationRoute", "Cost", "CouplingRoute", "MomentsRoute", "NoisyGradientRoute", "SyntheticRoute", "ROUTES",
    "auto_route", "build_route", "calibrated_estimator", "check_cost", "check_n_subsets", "register_route",
    "resolve_route", "n_train_of", "warn_if_vacuous",
]
