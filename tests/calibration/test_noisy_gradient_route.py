"""The noisy-gradient route as an object (issue 32, item 2) and the rule of ``method="auto"`` between
coupling and noisy gradients (item 3): from the shape of D and eta, never from D_train."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression, PoissonRegressor, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from skmip import MIPNoiseWrapper
from skmip.calibration.routes import CouplingRoute, NoisyGradientRoute, auto_route
from skmip.calibration.routes.auto import AUTO_BUDGET_SECONDS, COUPLING_MAX_TRAIN, DataShape, coupling_certifies
from skmip.exceptions import PrivacyWarning


# ----------------------------------------------------------------------------- the route
@pytest.mark.parametrize("knob, value, error, match", [
    ("learning_rate", 0, ValueError, "learning_rate must be .*got 0"),
    ("clip_norm", -1.0, ValueError, "clip_norm must be .*got -1.0"),
    ("batch_size", 0, ValueError, "batch_size must be .*got 0"),
    ("n_epochs", 2.5, TypeError, "n_epochs must be an integer"),
    ("average", 1.5, ValueError, "average must be .*got 1.5"),
    ("secure_mode", "yes", TypeError, "secure_mode must be True or False; got 'yes'"),
])
def test_each_knob_is_checked_naming_the_owner(knob, value, error, match):
    with pytest.raises(error, match=f"Owner: {match}"):
        NoisyGradientRoute(**{knob: value}).validate("Owner")


def test_it_applies_to_the_registered_smooth_losses_bare_or_last_in_a_pipeline():
    route = NoisyGradientRoute()
    for est in (LogisticRegression(), Ridge(), PoissonRegressor(), LinearSVC(),
                make_pipeline(StandardScaler(), LogisticRegression())):
        assert route.applies(est, "auto") is None
    assert "no smooth loss is registered for DecisionTreeClassifier" in route.applies(DecisionTreeClassifier(), "auto")
    assert "as configured" in route.applies(LinearSVC(loss="hinge"), "auto")
    assert "params names the parameters" in route.applies(LogisticRegression(), ["coef_"])


def test_the_cost_reads_the_shape_and_grows_with_the_epochs():
    small, large = NoisyGradientRoute(n_epochs=10), NoisyGradientRoute(n_epochs=100)
    a, b = (r.cost(22_792, 108, 11_396, LogisticRegression()) for r in (small, large))
    assert a.seconds < b.seconds and b.seconds_driver == "n_epochs=100"
    assert NoisyGradientRoute(batch_size=10**6).batch_for(500) == 500 and NoisyGradientRoute().batch_for(50) == 50


# ----------------------------------------------------------------------------- the rule of "auto"
def _shape(n=2_000, d=10, classes=(0, 1), eta=0.1, k=None):
    return DataShape(n, d, n // 2 if k is None else k, None if classes is None else np.asarray(classes), eta)


def test_coupling_certifies_the_glms_multinomial_and_the_squared_hinge_binary_and_one_against_the_rest():
    assert coupling_certifies(LogisticRegression(), 5, [0, 1])
    assert coupling_certifies(Ridge(), 5) and coupling_certifies(PoissonRegressor(), 5)
    # issue 33, item 2: the several-margins and the squared-hinge certificates
    assert coupling_certifies(LogisticRegression(), 5, [0, 1, 2])
    assert coupling_certifies(LinearSVC(), 5, [0, 1])
    assert coupling_certifies(LinearSVC(), 5, [0, 1, 2])  # one block per class (hinge_certify.py)
    assert coupling_certifies(LinearSVC(), 5, [0, 1, 2, 3])
    assert not coupling_certifies(LinearSVC(multi_class="crammer_singer"), 5, [0, 1, 2])  # no smooth loss


@pytest.mark.parametrize("estimator, shape, route, words", [
    (LogisticRegression(), _shape(n=400), "coupling", f"<= {COUPLING_MAX_TRAIN} rows"),
    (LogisticRegression(), _shape(n=2_000), "noisy_gradient", f"> {COUPLING_MAX_TRAIN} rows"),
    (LogisticRegression(), _shape(n=400, classes=(0, 1, 2)), "noisy_gradient", "certificate for several margins"),
    (LinearSVC(), _shape(n=400), "noisy_gradient", "certificate for the squared hinge"),
    (LinearSVC(), _shape(n=400, classes=(0, 1, 2)), "noisy_gradient", "certificate for the squared hinge"),
    (LogisticRegression(), _shape(n=500, d=3_000), "noisy_gradient", f"{AUTO_BUDGET_SECONDS:.0f} s budget"),
    (make_pipeline(StandardScaler(), LogisticRegression()), _shape(n=400), "coupling", "<= 300 rows"),
    (Ridge(), _shape(n=100_000, classes=None), "coupling", "is a regressor"),
    (LogisticRegression(penalty="l1", solver="saga"), _shape(n=2_000), "synthetic", "neither coupling"),
])
def test_auto_chooses_from_the_shape_of_d_and_says_why(estimator, shape, route, words):
    chosen, reason = auto_route(estimator, "auto", shape)
    assert chosen.name == route and words in reason


def test_without_the_shape_auto_resolves_as_before_the_data_is_read():
    route, reason = auto_route(LogisticRegression(), "auto")
    assert isinstance(route, CouplingRoute) and "registered smooth loss" in reason


def test_the_wrapper_s_choice_is_the_same_for_every_d_train():
    # Its inputs are facts about D and eta: every draw of D_train (every seed) gives the same
    # route and the same reason, and it is made before the draw.
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[:200], y[:200]  # k = 100: the coupling side of the rule
    fitted = []
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            w = MIPNoiseWrapper(make_pipeline(StandardScaler(), LogisticRegression(C=0.1)), eta=0.3,
                                random_state=seed).fit(X, y)
        fitted.append((w.method_, w.method_reason_))
    assert fitted == [fitted[0]] * 3 and fitted[0][0] == "coupling"
