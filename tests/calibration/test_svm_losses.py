"""LinearSVC(loss="squared_hinge") as a smooth loss (skmip.calibration.losses.svm)."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skmip import MIPNoiseWrapper
from skmip.bounds import coupling_noise_scale
from skmip.calibration.swap import estimate_swap_deltas, get_smooth_loss, polish_to_minimiser


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def _svc(C, **kw):
    return LinearSVC(C=C, dual=False, tol=1e-12, max_iter=10000, **kw)


@pytest.mark.parametrize(
    "kw, binary",
    [({}, False), ({"intercept_scaling": 3.0}, False), ({"class_weight": {0: 2.0}}, False),
     ({"class_weight": {1: 0.5, 2: 3.0}}, False), ({}, True), ({"class_weight": {1: 0.5, 2: 3.0}}, True)],
)
def test_the_registered_objective_is_liblinears(iris, kw, binary):
    # liblinear's fit at tol=1e-12 is the minimiser of the declared objective (penalised
    # intercept through intercept_scaling, C_i = C * class weight): a Newton step on it
    # stays at solver precision, far below the O(1e-2) a wrong penalty would cause.
    X, y = iris
    if binary:
        X, y = X[y > 0], y[y > 0]
    m = _svc(0.1, **kw).fit(X, y)
    coef, intercept = m.coef_.copy(), m.intercept_.copy()
    polish_to_minimiser(m, X, y)
    assert np.abs(m.coef_ - coef).max() < 1e-6 and np.abs(m.intercept_ - intercept).max() < 1e-6


def test_newton_engine_is_exact_where_every_row_is_inside_the_margin(iris):
    # C = 1e-3: every row has t u < 1 at every fit, so the objective is quadratic where the
    # swaps move it and the target-exact model is the objective itself. Tolerance: each
    # liblinear fit is within ~3e-9 of the minimiser (measured by polishing), whitened by
    # w = 0.05 over 15 coordinates: |d_newton - d_refit| <= 2 * 3e-9 * sqrt(15) / 0.05 < 1e-6.
    X, y = iris
    m = _svc(1e-3).fit(X, y)
    assert (np.where(y[:, None] == m.classes_, 1, -1) * m.decision_function(X)).max() < 1
    kw = dict(scale=np.full(15, 0.05), n_rounds=2, pairs_per_target=2, random_state=3, polish=True)
    refit = estimate_swap_deltas(_svc(1e-3), X, y, engine="refit", **kw).distances
    # The engine's estimates (certify=False): the certified bounds add the releases' allowance.
    newton = estimate_swap_deltas(_svc(1e-3), X, y, certify=False, **kw)
    assert newton.engine == "newton"
    np.testing.assert_allclose(newton.distances, refit, rtol=0, atol=1e-6)


def test_rows_crossing_the_kink_are_approximated_and_the_calibration_tracks_refits(iris):
    X, y = iris
    kw = dict(scale=np.full(15, 0.05), n_rounds=2, pairs_per_target=1, random_state=1, polish=True)
    refit = estimate_swap_deltas(_svc(0.1), X, y, engine="refit", **kw).distances
    newton = estimate_swap_deltas(_svc(0.1), X, y, certify=False, **kw).distances  # the estimates
    first = estimate_swap_deltas(_svc(0.1), X, y, engine="influence", **kw).distances
    s = {name: coupling_noise_scale(d, 0.1, confidence=None).noise_scale for name, d in
         (("refit", refit), ("newton", newton), ("first", first))}
    assert abs(s["newton"] / s["refit"] - 1) < abs(s["first"] / s["refit"] - 1)
    assert np.median(np.abs(newton - refit)) < 0.1 * np.median(np.abs(first - refit))


@pytest.mark.parametrize(
    "model, match",
    [
        (LinearSVC(loss="hinge"), "not smooth"),
        (LinearSVC(penalty="l1", dual=False), "not smooth"),
        (LinearSVC(multi_class="crammer_singer"), "joint"),
        (LinearSVC(class_weight="balanced"), "class_weight"),
    ],
)
def test_settings_outside_the_model_are_refused(iris, model, match):
    X, y = iris
    with pytest.raises(ValueError, match=match):
        estimate_swap_deltas(model, X, y, scale=np.ones(15), n_rounds=1, engine="newton", random_state=0)


def test_the_coupling_route_calibrates_it_and_auto_takes_the_route_that_promises(iris):
    X, y = iris
    assert get_smooth_loss(LinearSVC()) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning
        w = MIPNoiseWrapper(LinearSVC(C=0.1), eta=0.3, method="coupling", n_rounds=60, random_state=0).fit(X, y)
        auto = MIPNoiseWrapper(LinearSVC(C=0.1), eta=0.3, random_state=0).fit(X, y)
    assert auto.method_ == "noisy_gradient" and auto.mip_bound_ <= 0.3
    assert (w.method_, w.sensitivity_engine_) == ("coupling", "newton")
    assert w.estimator_.coef_.shape == (3, 4)
    # One block per class, each strongly convex: the stack is certified (docs/coupling.md,
    # "Certified distances", *One against the rest*), and eta is promised.
    assert w.coupling_certified_
    assert w.mip_bound_ == 0.3 and w.coupling_eta_upper_ <= 0.3


def test_uncertified_distances_warn_that_no_eta_is_promised(iris):
    # Multi-output Ridge (one least-squares block per output) has no certificate of its stack.
    from sklearn.linear_model import Ridge

    from skmip import PrivacyWarning
    from skmip.calibration.routes import CouplingRoute

    X, y = iris
    Y = np.c_[X[:, 0] + 0.1 * y, y]
    with pytest.warns(PrivacyWarning, match="estimates, not proven upper bounds"):
        w = MIPNoiseWrapper(Ridge(), eta=0.3, method=CouplingRoute(n_rounds=30), random_state=0).fit(X[:, 1:], Y)
    assert not w.coupling_certified_ and w.mip_bound_ is None and w.coupling_eta_upper_ is None
