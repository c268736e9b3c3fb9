"""Where the noisy descent starts (issue 32): zero, or the estimator's intercept-only fit to D's
labels, a function of D's label distribution that is the same for every D_train."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.linear_model import GammaRegressor, LogisticRegression, PoissonRegressor, Ridge, TweedieRegressor
from sklearn.svm import LinearSVC

from skmip import MIPNoiseWrapper
from skmip.calibration.noisy_gradient import engine, fit_noisy_gradient
from skmip.calibration.noisy_gradient.start import prior_start
from skmip.calibration.routes import NoisyGradientRoute
from skmip.exceptions import PrivacyWarning


def test_binary_logistic_starts_at_the_log_odds_of_d():
    y = np.r_[np.zeros(30, int), np.ones(70, int)]
    v = prior_start(LogisticRegression(C=0.1), 4, y, classes=[0, 1])
    np.testing.assert_array_equal(v[:4], 0.0)
    assert v[4] == pytest.approx(np.log(70 / 30), abs=1e-3)  # lbfgs' tolerance on the intercept


def test_multinomial_logistic_starts_at_the_log_frequencies_up_to_a_constant():
    y = np.repeat([0, 1, 2], [10, 20, 70])
    est = LogisticRegression()
    v = prior_start(est, 2, y, classes=[0, 1, 2])
    np.testing.assert_array_equal(v[:6], 0.0)
    np.testing.assert_allclose(v[6:] - v[6:].mean(), np.log([0.1, 0.2, 0.7]) - np.log([0.1, 0.2, 0.7]).mean(),
                               atol=1e-3)


@pytest.mark.parametrize("est, link", [
    (Ridge(alpha=3.0), lambda m: m), (PoissonRegressor(alpha=0.5), np.log), (GammaRegressor(alpha=0.5), np.log),
    (TweedieRegressor(power=1.5, alpha=0.5), np.log),
], ids=lambda c: type(c).__name__ if hasattr(c, "fit") else None)
def test_a_regressor_starts_at_its_link_of_the_mean_target(est, link):
    y = np.array([1.0, 2.0, 3.0, 10.0])
    v = prior_start(est, 3, y)
    np.testing.assert_array_equal(v[:3], 0.0)
    assert v[3] == pytest.approx(link(4.0), rel=1e-4)


def test_without_an_intercept_the_start_is_zero_and_a_class_d_lacks_keeps_its_place():
    assert prior_start(LogisticRegression(fit_intercept=False), 2, [0, 1, 1], classes=[0, 1]).tolist() == [0, 0]
    v = prior_start(LogisticRegression(), 1, [0, 0, 1], classes=[0, 1, 2])  # label 2 has no row
    assert v.shape == (6,) and v[5] < v[4] < v[3]  # counts 0, 1, 2
    with pytest.raises(ValueError, match=r"prior_start: y_pool holds labels \[7\] outside classes \[0, 1\]"):
        prior_start(LinearSVC(), 2, [0, 7], classes=[0, 1])


def _fit(**kw):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = (rng.random(120) < 0.2).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return fit_noisy_gradient(LogisticRegression(C=0.5), X, y, n_total=240, eta=0.2, classes=[0, 1],
                                  random_state=0, **kw)


def test_the_start_moves_the_release_not_the_promise():
    pool = np.r_[np.zeros(192, int), np.ones(48, int)]
    zero, dz = _fit()
    prior, dp = _fit(y_pool=pool)
    assert (dz["start"], dp["start"]) == ("zero", "prior")
    # The same run (noise, batches, schedule) from another public constant: the same printed eta.
    for key in ("mip_bound", "noise_multiplier", "sample_rate", "n_steps", "clip_norm"):
        assert dz[key] == dp[key]
    assert prior.intercept_[0] < zero.intercept_[0]  # started at log(48 / 192) < 0
    with pytest.raises(ValueError, match="fit_noisy_gradient: y_pool has 10 rows but n_total is 240"):
        _fit(y_pool=pool[:10])


def test_the_wrapper_starts_from_d_s_labels_whichever_rows_d_train_holds(monkeypatch):
    seen = []

    def spy(estimator, n_features, y_pool, classes=None):
        seen.append(np.asarray(y_pool).copy())
        return prior_start(estimator, n_features, y_pool, classes)

    monkeypatch.setattr(engine, "prior_start", spy)
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(60, 2)), (rng.random(60) < 0.3).astype(int)
    for seed, route in ((0, "noisy_gradient"), (1, "noisy_gradient"), (2, NoisyGradientRoute(start="zero"))):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fixed seeds' and a tiny D's degenerate-release notes
            MIPNoiseWrapper(LogisticRegression(), eta=0.2, method=route, random_state=seed).fit(X, y)
    assert len(seen) == 2  # "zero" never reads the labels
    for labels in seen:
        np.testing.assert_array_equal(labels, y)  # all of D, for every draw of D_train


def test_the_start_knob_is_checked_by_name():
    with pytest.raises(ValueError, match=r"Owner: start must be 'prior' .* or 'zero'; got 'mean'"):
        NoisyGradientRoute(start="mean").validate("Owner")


def test_the_exact_audit_refuses_a_chain_that_would_not_start_at_zero():
    from skmip.audit.attacks.exact_noisy_gradient import audit_noisy_gradient_route

    wrapper = MIPNoiseWrapper(LogisticRegression(), eta=0.2, method=NoisyGradientRoute(), random_state=0)
    with pytest.raises(ValueError, match="audit_noisy_gradient_route: the chain starts at zero"):
        audit_noisy_gradient_route(wrapper, np.zeros((4, 1)), np.array([0, 1, 0, 1]))
    assert not hasattr(wrapper, "estimator_")  # refused before any fit
