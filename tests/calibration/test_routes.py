"""The calibration routes as objects: scikit-learn parameters, one resolution, the registry, and
the sizes refused before any work (issue 31, item 8)."""

import time
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skmip import MIPNoiseWrapper, MIPNoiseWrapperCV
from skmip.calibration.routes import (
    ROUTES,
    CalibrationRoute,
    CouplingRoute,
    MomentsRoute,
    NoisyGradientRoute,
    SyntheticRoute,
    auto_route,
    build_route,
    check_cost,
    register_route,
    resolve_route,
)
from skmip.calibration.routes.base import MAX_BYTES, MAX_SECONDS
from skmip.calibration.routes.coupling import MAX_FITS_PER_ROUND
from skmip.exceptions import PrivacyWarning


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return (X - X.mean(0)) / X.std(0), y


# ----------------------------------------------------------------------------- objects
@pytest.mark.parametrize("cls", [CouplingRoute, MomentsRoute, NoisyGradientRoute, SyntheticRoute])
def test_a_route_is_a_scikit_learn_parameter_holder(cls):
    route = cls()
    assert ROUTES[route.name] is cls and route.promise
    cloned = clone(route)
    assert type(cloned) is cls and cloned.get_params() == route.get_params()
    name = next(iter(route.get_params()))
    assert route.set_params(**{name: "x"}).get_params()[name] == "x"


def test_the_wrapper_exposes_the_route_s_knobs_to_a_grid_search():
    w = MIPNoiseWrapper(LogisticRegression(), method=CouplingRoute())
    params = w.get_params(deep=True)
    assert params["method__n_rounds"] == 400 and params["method__confidence"] == 0.95
    w.set_params(method__n_rounds=50)
    assert w.method.n_rounds == 50


def test_auto_says_which_route_and_why():
    assert [type(r).__name__ for r, _ in (
        auto_route(LogisticRegression(), "auto"),
        auto_route(make_pipeline(StandardScaler(), LogisticRegression()), "auto"),
        auto_route(RandomForestClassifier(), "auto"),
        auto_route(MLPClassifier(), "auto"),
        auto_route(LogisticRegression(), ["coef_"]),
    )] == ["CouplingRoute", "CouplingRoute", "SyntheticRoute", "MomentsRoute", "MomentsRoute"]
    assert "smooth loss" in auto_route(LogisticRegression(), "auto")[1]
    assert "no parameter adapter" in auto_route(RandomForestClassifier(), "auto")[1]


def test_auto_trains_on_synthetic_records_an_estimator_outside_its_smooth_objective():
    """The plain hinge, an L1 penalty, ``crammer_singer``: neither coupling's influence engines nor
    noisy gradients model them (coupling used to be chosen, then refused the fit)."""
    from sklearn.svm import LinearSVC

    from skmip.calibration.routes.auto import DataShape, choose_smooth_route

    shape = DataShape(n_samples=400, n_features=5, n_train=200, classes=np.array([0, 1] * 200), eta=0.2)
    for est in (LinearSVC(loss="hinge"), LinearSVC(multi_class="crammer_singer"),
                LogisticRegression(penalty="l1", solver="liblinear")):
        route, why = choose_smooth_route(est, shape, CouplingRoute())
        assert isinstance(route, SyntheticRoute), est
        assert "as configured" in why and "synthetic" in why
    assert isinstance(choose_smooth_route(LogisticRegression(), shape, CouplingRoute())[0], CouplingRoute)


def test_the_default_releases_a_plain_hinge_svm_with_a_promise(cancer):
    from sklearn.svm import LinearSVC

    X, y = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = MIPNoiseWrapper(LinearSVC(loss="hinge"), eta=0.2, random_state=0).fit(X, y)
    assert w.method_ == "synthetic" and w.mip_bound_ <= 0.2
    assert "as configured" in w.method_reason_


@pytest.mark.parametrize("make, fix", [
    (lambda: LinearSVC(loss="hinge"), "loss='squared_hinge'"),
    (lambda: LinearSVC(multi_class="crammer_singer"), "multi_class='ovr'"),
    (lambda: LogisticRegression(solver="liblinear"), "solver='lbfgs'"),
    (lambda: LogisticRegression(class_weight="balanced"), "dict of class weights"),
    (lambda: make_pipeline(StandardScaler(), LinearSVC(loss="hinge")), "loss='squared_hinge'"),
    (lambda: Ridge(positive=True), "is a constrained problem"),  # no fix of its own: the routes only
])
def test_coupling_refuses_an_estimator_outside_its_objective_with_the_wrappers_fixes(cancer, make, fix):
    """method='coupling' on an estimator its registered loss does not model is refused before any
    fit, naming the estimator's fix and the wrapper's routes, not the engines' engine='refit',
    which the wrapper does not take (session 12 noticed it); nothing is left half-fitted."""
    X, y = cancer
    est = make()
    wrapper = MIPNoiseWrapper(est, eta=0.2, method="coupling", random_state=0)
    with pytest.raises(ValueError) as err:
        wrapper.fit(X, y.astype(float) if isinstance(est, Ridge) else y)
    message = str(err.value)
    assert message.startswith("MIPNoiseWrapper: method='coupling' cannot calibrate this")
    assert fix in message and "method='auto'" in message and "engine=" not in message
    assert not hasattr(wrapper, "estimator_")


def test_auto_names_the_route_it_took_where_the_owner_does_not_take_it():
    """``"auto"`` resolving to a route the owner refuses says which and why (it said
    "method must be one of 'auto', ...; got 'auto'")."""
    with pytest.raises(ValueError, match=r"Owner: method='auto' takes the synthetic route for "
                                         r"RandomForestClassifier \(no parameter adapter.*does not take"):
        resolve_route("Owner", "auto", RandomForestClassifier(), "auto", accepted=("coupling", "moments"))


def test_coupling_applies_where_the_wrapper_calibrates_a_pipeline_s_last_step():
    """A ColumnTransformer has no parameter adapter, but the wrapper fits it on D and calibrates
    the last step by coupling: ``applies`` says so (it used to say the route did not apply)."""
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder

    pipe = make_pipeline(make_column_transformer((OneHotEncoder(), [0]), remainder="passthrough"),
                         LogisticRegression(C=0.1))
    assert CouplingRoute().applies(pipe, "auto") is None
    assert "no parameter adapter" in CouplingRoute().applies(RandomForestClassifier(), "auto")
    assert CouplingRoute().applies(LogisticRegression(), "auto") is None


def test_resolution_clones_and_refuses_unknown_names():
    given = CouplingRoute(n_rounds=30)
    route = resolve_route("Owner", given, LogisticRegression(), "auto")
    assert route is not given and route.n_rounds == 30
    assert isinstance(resolve_route("Owner", "moments", LogisticRegression(), "auto"), MomentsRoute)
    with pytest.raises(ValueError, match=r"Owner: method must be one of 'auto', 'coupling', 'moments', "
                                         r"'noisy_gradient', 'synthetic' or a route object .*got 'gaussian'"):
        resolve_route("Owner", "gaussian", LogisticRegression(), "auto")
    with pytest.raises(ValueError, match="method must be one of 'auto', 'coupling'"):
        resolve_route("Owner", SyntheticRoute(), LogisticRegression(), "auto", accepted=("coupling",))


def test_build_route_takes_the_knobs_the_route_has():
    route = build_route("auto", LogisticRegression(), n_rounds=60, n_subsets=8, radius="laplace")
    assert route.get_params() == CouplingRoute(n_rounds=60, n_subsets=8).get_params()
    assert build_route("moments", LogisticRegression(), n_rounds=60).get_params() == MomentsRoute().get_params()


def test_a_registered_route_is_a_method_name(monkeypatch):
    monkeypatch.setattr("skmip.calibration.routes.registry.ROUTES", dict(ROUTES))

    @register_route
    class Plain(CalibrationRoute):
        name = "plain"

    assert isinstance(resolve_route("Owner", "plain", LogisticRegression(), "auto"), Plain)
    with pytest.raises(TypeError, match="not a CalibrationRoute subclass"):
        register_route(LogisticRegression)


# ----------------------------------------------------------------------------- refusals
def _refused_fast(wrapper, X, y, match):
    start = time.process_time()
    with pytest.raises(ValueError, match=match):
        wrapper.fit(X, y)
    assert time.process_time() - start < 20  # before any calibration work
    assert not hasattr(wrapper, "estimator_")


def test_a_billion_rounds_is_refused_naming_n_rounds(cancer):
    w = MIPNoiseWrapper(LogisticRegression(C=0.1), method=CouplingRoute(n_rounds=10**9), random_state=0)
    _refused_fast(w, *cancer, r"MIPNoiseWrapper: the 'coupling' calibration on D of 569 rows x 30 "
                              r"columns would hold about .* GiB .* driven by n_rounds=1000000000")
    with pytest.warns(FutureWarning):  # the 0.2 spelling too
        _refused_fast(MIPNoiseWrapper(LogisticRegression(C=0.1), n_rounds=10**9, random_state=0), *cancer, "n_rounds=1000000000")


def test_coupling_on_ten_thousand_columns_and_fifty_rows_is_refused_naming_the_columns():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 10_000))
    y = (X[:, 0] > 0).astype(int)
    # method="auto" takes noisy gradients here (coupling is over its budget): the rule's test.
    _refused_fast(MIPNoiseWrapper(LogisticRegression(C=0.1), method="coupling", random_state=0), X, y,
                  r"projected at about .* days of one core .* with 10000 columns")


def test_a_train_size_whose_rounds_refit_hundreds_of_times_is_refused(cancer):
    X, y = cancer
    # method="auto" takes noisy gradients here (coupling cannot run): the rule's budget.
    w = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.004, train_size=0.995, method="coupling", random_state=0)
    _refused_fast(w, X[:200], y[:200], r"cannot run: train_size \(k = 199 of n = 200: every round .* = 200 times")
    assert MAX_FITS_PER_ROUND == 64


def test_the_projection_reads_only_the_shape_of_D():
    """Same shape, same verdict: a refusal says nothing about the rows (nor which were drawn)."""
    route = CouplingRoute()
    cost = check_cost("Owner", route, 569, 30, 284, LogisticRegression())
    assert cost.seconds < 60 and cost.bytes < 2**30  # breast cancer: well inside the limits
    assert cost == route.cost(569, 30, 284, None)
    assert MAX_SECONDS == 86_400 and MAX_BYTES == 16 * 2**30


# ----------------------------------------------------------------------------- vacuous promises
def test_a_vacuous_promise_warns(cancer):
    X, y = cancer
    with pytest.warns(PrivacyWarning, match=r"'accuracy <= max\(k/n, 1-k/n\) \+ eta = 0.9 \+ 0.3' with k = 512 "
                                            r"of n = 569 is at least 1, so it bounds nothing"):
        MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, train_size=0.9, method=MomentsRoute(n_subsets=4),
                        random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*bounds nothing", category=PrivacyWarning)
        MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.05, train_size=0.9, method=MomentsRoute(n_subsets=4),
                        random_state=0).fit(X, y)


def test_the_search_warns_once_about_a_vacuous_promise(cancer):
    X, y = cancer
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        MIPNoiseWrapperCV(LogisticRegression(C=0.1), etas=[0.3], cv=2, train_size=0.9,
                          method=MomentsRoute(n_subsets=4), random_state=0).fit(X, y)
    assert sum("bounds nothing" in str(r.message) for r in record) == 1


def test_the_synthetic_route_warns_about_a_vacuous_promise_too(cancer):
    from sklearn.tree import DecisionTreeClassifier

    X, y = cancer
    with pytest.warns(PrivacyWarning, match="so it bounds nothing"):
        MIPNoiseWrapper(DecisionTreeClassifier(max_depth=2), eta=0.3, train_size=0.9, random_state=0).fit(X[:, :4], y)
