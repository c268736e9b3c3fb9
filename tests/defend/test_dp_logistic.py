"""DPLogisticRegression: Algorithm 2's constants, the noise law end to end, utility, sklearn API."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip.defend.dp_logistic import (
    DPLogisticRegression,
    _calibrate,
    _draw_noise,
    _perturbed_objective,
    _prepare_rows,
)
from skmip.exceptions import PrivacyWarning

EXPECTED_FAILED = {
    "check_non_transformer_estimators_n_iter": (
        "n_iter_ is not stored on purpose: the number of optimiser iterations is a function "
        "of the private data that the DP guarantee does not cover (skmip.params lists it in "
        "DIAGNOSTIC_ATTRIBUTES)."
    ),
}


@parametrize_with_checks([DPLogisticRegression(random_state=0)], expected_failed_checks=lambda est: EXPECTED_FAILED)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        check(estimator)


# ---------------------------------------------------------------- Algorithm 2's constants
@pytest.mark.parametrize("eps,C,n", [(1.0, 1.0, 100), (0.1, 1.0, 100), (0.5, 10.0, 7), (5.0, 0.01, 10000)])
def test_calibration_matches_algorithm_2_in_the_papers_parameterisation(eps, C, n):
    # Chaudhuri et al. (2011), Algorithm 2 with c = 1/4 and Lambda = 1/(C n).
    c, Lam = 0.25, 1.0 / (C * n)
    eps_p = eps - np.log(1 + 2 * c / (n * Lam) + c**2 / (n**2 * Lam**2))
    if eps_p > 0:
        Delta = 0.0
    else:
        Delta = c / (n * (np.exp(eps / 4) - 1)) - Lam
        eps_p = eps / 2
    got_eps, got_extra = _calibrate(eps, C)
    assert got_eps == pytest.approx(eps_p, rel=1e-12)
    # Our objective is n times the paper's: the extra regulariser is n * Delta.
    assert got_extra == pytest.approx(n * Delta, rel=1e-12, abs=1e-15)
    assert got_extra >= 0


def test_extra_regulariser_caps_the_jacobian_term_at_eps_over_4():
    # In the Delta branch, log(1 + c/(1/C + n Delta)) = eps/4, so eps' = eps/2 is all that remains.
    eps, C = 0.2, 3.0
    eps_p, extra = _calibrate(eps, C)
    assert extra > 0 and eps_p == eps / 2
    assert np.log1p(0.25 / (1 / C + extra)) == pytest.approx(eps / 4, rel=1e-12)


# ---------------------------------------------------------------- the noise law
def test_noise_radius_is_gamma_and_direction_uniform():
    rng = np.random.default_rng(1)
    d, eps_p = 5, 0.8
    b = np.array([_draw_noise(d, eps_p, rng) for _ in range(4000)])
    r = np.linalg.norm(b, axis=1)
    assert stats.kstest(r, stats.gamma(a=d, scale=2 / eps_p).cdf).pvalue > 1e-3
    # A coordinate of a uniform unit vector in R^d: (u + 1)/2 ~ Beta((d-1)/2, (d-1)/2).
    u = b[:, 2] / r
    assert stats.kstest((u + 1) / 2, stats.beta((d - 1) / 2, (d - 1) / 2).cdf).pvalue > 1e-3


def _recover_noise(model, X, y):
    """b from the released coefficients via the stationarity condition (Algorithm 2, step 4)."""
    scale = 1 / np.sqrt(2)
    w = np.r_[model.coef_[0] * model.data_norm / scale, model.intercept_[0] / scale]
    Z = _prepare_rows(X, model.data_norm, True)
    s = np.where(y == model.classes_[1], 1.0, -1.0)
    reg = 1 / model.C + model.extra_regularization_
    return -_perturbed_objective(w, Z, s, reg, np.zeros_like(w))[1], w, Z, s, reg


@pytest.mark.parametrize("eps,C", [(1.0, 1.0), (0.2, 1.0)])  # the second takes the Delta branch
def test_fitted_model_carries_exactly_the_mechanism_noise(eps, C):
    # End to end: b recovered from each fitted model must follow ||b|| ~ Gamma(d, 2/eps').
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2)) * 1.5
    y = (X[:, 0] + 0.5 * rng.normal(size=40) > 0).astype(int)
    radii = []
    for seed in range(250):
        model = DPLogisticRegression(eps, data_norm=2.0, C=C, classes=[0, 1], random_state=seed).fit(X, y)
        b, *_ = _recover_noise(model, X, y)
        radii.append(np.linalg.norm(b))
    assert (model.extra_regularization_ > 0) == (eps == 0.2)
    law = stats.gamma(a=3, scale=2 / model.noise_epsilon_)
    assert stats.kstest(radii, law.cdf).pvalue > 1e-3


def test_the_same_seed_reproduces_the_noise_exactly():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 3))
    y = (X[:, 1] > 0).astype(int)
    model = DPLogisticRegression(0.7, data_norm=2.0, classes=[0, 1], random_state=42).fit(X, y)
    b, *_ = _recover_noise(model, X, y)
    # The estimator draws b first from Generator(42): the released model is its exact minimiser.
    expected = _draw_noise(4, model.noise_epsilon_, np.random.default_rng(42))
    np.testing.assert_allclose(b, expected, rtol=1e-7, atol=1e-9)


def test_distance_to_the_non_private_solution_is_at_most_noise_over_regularisation():
    # Strong convexity (modulus 1/C): ||w_b - w_0|| <= ||b|| * C. Checks we solve the right problem.
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    for eps in (0.5, 5.0):
        model = DPLogisticRegression(eps, data_norm=5.0, C=1.0, classes=[0, 1], random_state=0).fit(X, y)
        b, w, Z, s, reg = _recover_noise(model, X, y)
        ref = DPLogisticRegression(1e12, data_norm=5.0, C=1.0, classes=[0, 1], random_state=0).fit(X, y)
        _, w0, *_ = _recover_noise(ref, X, y)
        assert np.linalg.norm(w - w0) <= np.linalg.norm(b) / reg * (1 + 1e-6) + 1e-9


def test_accuracy_approaches_the_non_private_model_as_epsilon_grows():
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    mu, sd = X_tr.mean(0), X_tr.std(0)  # stands in for public feature scales
    X_tr, X_te = (X_tr - mu) / sd, (X_te - mu) / sd
    norm, C = 5.0, 1.0
    # The non-private model with the same objective: liblinear also regularises the intercept,
    # whose synthetic feature is intercept_scaling = 1/sqrt(2) on rows scaled by 1/(norm sqrt 2).
    Z_tr = _prepare_rows(X_tr, norm, False) / np.sqrt(2)
    ref = LogisticRegression(
        C=C, solver="liblinear", intercept_scaling=1 / np.sqrt(2), tol=1e-12, max_iter=100_000
    ).fit(Z_tr, y_tr)
    ref_coef = ref.coef_ / (norm * np.sqrt(2))
    ref_pred = ref.predict(_prepare_rows(X_te, norm, False) / np.sqrt(2))
    # eps -> inf: the noise vanishes and the released model is the non-private one.
    limit = DPLogisticRegression(1e9, data_norm=norm, C=C, classes=[0, 1], random_state=0).fit(X_tr, y_tr)
    np.testing.assert_allclose(limit.coef_, ref_coef, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(limit.intercept_, ref.intercept_, rtol=1e-5)
    # Finite eps: agreement with the non-private predictions rises with eps, each step by
    # more than two standard errors of the difference of means over 20 noise draws.
    agree, acc = [], []
    for eps in (0.05, 5.0, 50.0, 500.0):
        preds = [
            DPLogisticRegression(eps, data_norm=norm, C=C, classes=[0, 1], random_state=s)
            .fit(X_tr, y_tr)
            .predict(X_te)
            for s in range(20)
        ]
        agree.append([np.mean(p == ref_pred) for p in preds])
        acc.append(np.mean([np.mean(p == y_te) for p in preds]))
    for lo, hi in zip(agree, agree[1:]):
        se = np.sqrt(np.var(lo, ddof=1) / len(lo) + np.var(hi, ddof=1) / len(hi))
        assert np.mean(hi) - np.mean(lo) > 2 * se
    assert acc[0] < 0.75 < acc[1] < acc[-1] + 0.02  # eps = 0.05 on 398 rows is mostly noise


def test_multiclass_splits_the_budget_one_vs_rest():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 2))
    y = np.repeat(["a", "b", "c"], 30)
    X[y == "b"] += 3
    X[y == "c"] -= 3
    model = DPLogisticRegression(3.0, data_norm=5.0, classes=["a", "b", "c"], random_state=0).fit(X, y)
    assert model.coef_.shape == (3, 2) and model.intercept_.shape == (3,)
    assert model.epsilon_per_model_ == pytest.approx(1.0)
    assert model.noise_epsilon_ == pytest.approx(_calibrate(1.0, 1.0)[0])
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1)
    assert set(model.predict(X)) <= {"a", "b", "c"}


def test_rows_beyond_data_norm_are_clipped_not_rescaled_globally():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int)
    far = X.copy()
    far[0] *= 1000  # a row far outside the ball of radius 2
    clipped = X.copy()
    clipped[0] *= 2.0 / np.linalg.norm(X[0])
    kw = dict(data_norm=2.0, classes=[0, 1], random_state=5)
    a = DPLogisticRegression(1.0, **kw).fit(far, y)
    b = DPLogisticRegression(1.0, **kw).fit(clipped, y)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-8)
    assert np.all(np.linalg.norm(_prepare_rows(far, 2.0, True), axis=1) <= 1 + 1e-12)


def test_fit_intercept_false_and_predictions_are_a_plain_linear_model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = (X @ [1.0, -1.0, 0.5] > 0).astype(int)
    model = DPLogisticRegression(2.0, data_norm=3.0, fit_intercept=False, classes=[0, 1], random_state=0).fit(X, y)
    assert np.all(model.intercept_ == 0)
    np.testing.assert_allclose(model.decision_function(X), X @ model.coef_[0])
    np.testing.assert_allclose(model.predict_proba(X)[:, 1], 1 / (1 + np.exp(-X @ model.coef_[0])))


@pytest.mark.os_entropy
def test_privacy_warnings():
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(PrivacyWarning, match="label set"):
        DPLogisticRegression(classes=None).fit(X, y)
    with pytest.warns(PrivacyWarning, match="random_state=0 fixes the privacy noise"):
        DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = DPLogisticRegression(classes=[0, 1]).fit(X, y)
        b = DPLogisticRegression(classes=[0, 1]).fit(X, y)
    assert not np.allclose(a.coef_, b.coef_)  # fresh entropy on every fit


def test_errors_name_the_parameter_and_the_fix():
    X = np.random.default_rng(0).normal(size=(20, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="epsilon must be in"):
        DPLogisticRegression(epsilon=0).fit(X, y)
    with pytest.raises(ValueError, match="C must be in"):
        DPLogisticRegression(C=np.inf).fit(X, y)
    with pytest.raises(ValueError, match="data_norm must be in"):
        DPLogisticRegression(data_norm=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="not in classes"):
        DPLogisticRegression(classes=[0, 2]).fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        DPLogisticRegression(classes=[0]).fit(X, np.zeros(20, int))
    # A class absent from this sample but declared in classes is fine (Poisson subsamples).
    model = DPLogisticRegression(classes=[0, 1, 2], random_state=0).fit(X, y)
    assert model.coef_.shape == (3, 2)


def test_convergence_warning_when_the_minimiser_is_not_reached():
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    est = DPLogisticRegression(data_norm=5.0, classes=[0, 1], max_iter=1, tol=1e-300, random_state=0)
    with pytest.warns(ConvergenceWarning, match="assumes the exact"):
        est.fit(X, y)
