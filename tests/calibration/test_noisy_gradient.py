"""The noisy-gradient engine: per-row gradients, clipping, the noise it needs, and the release."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.linear_model import (
    GammaRegressor,
    LinearRegression,
    LogisticRegression,
    PoissonRegressor,
    Ridge,
    TweedieRegressor,
)
from sklearn.metrics import mean_tweedie_deviance
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

from skmip.bounds import dpsgd_eta
from skmip.calibration.noisy_gradient import (
    RowObjective,
    clip_rows,
    default_clip_norm,
    fit_noisy_gradient,
    noise_multiplier_for_eta,
    release_template,
)


def _data(kind, n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    u = X @ np.array([0.8, -0.5, 0.3][:d]) + 0.2
    if kind == "binary":
        return X, (rng.random(n) < 1 / (1 + np.exp(-u))).astype(int)
    if kind == "multi":
        return X, rng.integers(0, 3, size=n)
    if kind == "positive":
        return X, rng.gamma(2.0, np.exp(0.3 * u) / 2.0) + 0.05
    return X, u + rng.normal(scale=0.5, size=n)


# One row's loss as scikit-learn defines it (its own predictions and metrics), in row units.
def _log_loss(est, x, y):
    p = est.predict_proba(x[None])[0]
    return -np.log(p[list(est.classes_).index(y)])


def _squared_error(est, x, y):
    return float((y - est.predict(x[None])[0]) ** 2)


def _half_deviance(power):
    def loss(est, x, y):
        return 0.5 * mean_tweedie_deviance([y], est.predict(x[None]), power=power)
    return loss


def _squared_hinge(est, x, y):
    t = 1.0 if y == est.classes_[1] else -1.0
    return max(0.0, 1.0 - t * est.decision_function(x[None])[0]) ** 2


CASES = [
    (LogisticRegression(C=0.3), "binary", _log_loss),
    (LogisticRegression(C=np.inf), "binary", _log_loss),
    (LogisticRegression(C=2.0), "multi", _log_loss),
    (Ridge(alpha=2.0), "real", _squared_error),
    (LinearRegression(), "real", _squared_error),
    (PoissonRegressor(alpha=0.1), "positive", _half_deviance(1)),
    (GammaRegressor(alpha=0.1), "positive", _half_deviance(2)),
    (TweedieRegressor(power=1.5, alpha=0.1), "positive", _half_deviance(1.5)),
    (LinearSVC(C=0.5), "binary", _squared_hinge),
]


def _template(est, X, y):
    classes = np.unique(y) if hasattr(est, "predict_proba") or isinstance(est, LinearSVC) else None
    return release_template(est, X.shape[1], classes=classes)


@pytest.mark.parametrize("est, kind, loss", CASES, ids=lambda c: type(c).__name__ if hasattr(c, "fit") else None)
def test_row_gradients_match_finite_differences_of_sklearns_loss(est, kind, loss):
    X, y = _data(kind)
    template = _template(est, X, y)
    objective = RowObjective(template, len(y))
    theta = np.random.default_rng(1).normal(scale=0.3, size=objective.dim)
    G = objective.row_gradients(theta, X[:6], y[:6])
    h = 1e-6
    for i in range(6):
        fd = np.empty(objective.dim)
        for j in range(objective.dim):
            e = np.zeros(objective.dim)
            e[j] = h
            objective.adapter.set_vector(template, theta + e)
            up = loss(template, X[i], y[i])
            objective.adapter.set_vector(template, theta - e)
            fd[j] = (up - loss(template, X[i], y[i])) / (2 * h)
        # Central differences: truncation O(h^2 f''') and round-off O(eps f / h), both < 1e-8.
        np.testing.assert_allclose(G[i], fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("est, kind", [
    (LogisticRegression(C=0.3, tol=1e-12, max_iter=10_000), "binary"),
    (LogisticRegression(C=2.0, tol=1e-12, max_iter=10_000), "multi"),
    (Ridge(alpha=2.0), "real"),
    (PoissonRegressor(alpha=0.1, tol=1e-12, max_iter=10_000), "positive"),
    (TweedieRegressor(power=1.5, alpha=0.1, tol=1e-12, max_iter=10_000), "positive"),
])
def test_the_objective_is_the_estimators_own_at_its_minimiser(est, kind):
    """At scikit-learn's minimiser on k rows, mean row gradient + regulariser term is zero:
    the regulariser's weight is the estimator's, scaled to k rows."""
    X, y = _data(kind, n=60)
    fitted = est.fit(X, y)
    objective = RowObjective(_template(est, X, y), len(y))
    theta = objective.adapter.get_vector(fitted)
    grad = objective.row_gradients(theta, X, y).mean(axis=0) + objective.regularizer_gradient(theta)
    assert np.max(np.abs(grad)) < 1e-6


def test_sample_weights_multiply_row_gradients():
    X, y = _data("binary")
    objective = RowObjective(_template(LogisticRegression(C=0.5), X, y), len(y))
    theta = np.full(objective.dim, 0.2)
    w = np.linspace(0.5, 2.0, 5)
    np.testing.assert_allclose(objective.row_gradients(theta, X[:5], y[:5], w),
                               w[:, None] * objective.row_gradients(theta, X[:5], y[:5]))


def test_clip_rows_bounds_every_norm_and_keeps_short_rows():
    G = np.array([[3.0, 4.0], [0.3, 0.4], [np.inf, 1.0], [0.0, 0.0]])
    C = clip_rows(G, 1.0)
    np.testing.assert_allclose(np.linalg.norm(C, axis=1), [1.0, 0.5, 0.0, 0.0])
    np.testing.assert_array_equal(C[1], G[1])
    np.testing.assert_allclose(C[0], G[0] / 5.0)


def test_noise_multiplier_is_the_smallest_passing_one_and_reports_its_own_eta():
    q, steps = 64 / 350, 50
    sigma, bound = noise_multiplier_for_eta(0.1, q, steps)
    assert bound == dpsgd_eta(sigma, q, steps) <= 0.1
    assert dpsgd_eta(sigma / (1 + 2e-3), q, steps) > 0.1  # within 0.1% of the smallest
    assert noise_multiplier_for_eta(0.5, q, steps)[0] == 0.0


def _fit(est=None, X=None, y=None, **kw):
    X, y = (_data("binary", n=120) if X is None else (X, y))
    kw = {"n_total": 240, "eta": 0.2, "classes": np.unique(y), "random_state": 0, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_noisy_gradient(LogisticRegression(C=0.5) if est is None else est, X, y, **kw)


def test_printed_eta_is_dpsgd_eta_of_the_run_and_within_target():
    clf, det = _fit()
    assert det["mip_bound"] == dpsgd_eta(det["noise_multiplier"], det["sample_rate"], det["n_steps"])
    assert det["mip_bound"] <= det["target_eta"] == 0.2
    assert det["sample_rate"] == 64 / 120 and det["n_steps"] == 10 * 1 and det["n_train"] == 120
    assert set(det) >= {"noise_multiplier", "clip_norm", "learning_rate", "batch_size", "n_epochs", "n_total"}
    # The default clipping norm is a function of the public run settings only.
    assert det["clip_norm"] == default_clip_norm(det["noise_multiplier"], 64, det["learning_rate"])


def test_release_is_the_users_class_fitted_predicts_and_pickles():
    X, y = _data("binary", n=120)
    clf, _ = _fit(X=X, y=y)
    assert type(clf) is LogisticRegression and clf.C == 0.5
    assert clf.coef_.shape == (1, 3) and clf.intercept_.shape == (1,)
    assert clf.n_features_in_ == 3 and list(clf.classes_) == [0, 1]
    assert clf.n_iter_.tolist() == [10]
    assert clf.score(X, y) > 0.6
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))


def test_same_seed_same_release_other_seed_other_noise():
    a, _ = _fit()
    b, _ = _fit()
    c, _ = _fit(random_state=1)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_classes_come_from_d_not_from_d_train():
    X, y = _data("multi", n=90)
    y = np.where(y == 2, 1, y)  # D_train holds labels 0 and 1 only; D also has 2
    clf, _ = _fit(LogisticRegression(), X, y, classes=[0, 1, 2])
    assert list(clf.classes_) == [0, 1, 2] and clf.coef_.shape == (3, 3)


@pytest.mark.parametrize("est, kind", [
    (LogisticRegression(C=1.0), "multi"), (PoissonRegressor(alpha=0.1), "positive"),
    (GammaRegressor(alpha=0.1), "positive"), (LinearSVC(C=0.5), "binary"), (LinearRegression(), "real"),
], ids=lambda c: type(c).__name__ if hasattr(c, "fit") else None)
def test_every_registered_family_releases_its_own_class(est, kind):
    X, y = _data(kind, n=120)
    classes = np.unique(y) if kind in ("binary", "multi") else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release, det = fit_noisy_gradient(est, X, y, n_total=240, eta=0.3, classes=classes, random_state=0)
    assert type(release) is type(est) and release.get_params() == est.get_params()
    assert np.all(np.isfinite(release.predict(X))) and det["mip_bound"] <= 0.3
    again = pickle.loads(pickle.dumps(release))
    np.testing.assert_array_equal(again.predict(X), release.predict(X))


def test_regressor_and_dataframe_names():
    pd = pytest.importorskip("pandas")
    X, y = _data("real", n=100)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg, det = fit_noisy_gradient(Ridge(alpha=1.0), frame, y, n_total=100, eta=0.3, random_state=0)
    assert type(reg) is Ridge and list(reg.feature_names_in_) == ["a", "b", "c"]
    assert np.all(np.isfinite(reg.predict(frame))) and det["mip_bound"] <= 0.3


def test_sparse_input_gives_the_dense_release():
    sparse = pytest.importorskip("scipy.sparse")
    X, y = _data("binary", n=120)
    dense, _ = _fit(X=X, y=y)
    from_sparse, _ = _fit(X=sparse.csr_matrix(X), y=y)
    np.testing.assert_allclose(from_sparse.coef_, dense.coef_, rtol=1e-12)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"eta": 0.7}, ValueError, "eta must be in (0, 0.5]"),
    ({"n_total": 50}, ValueError, "n_total"),
    ({"batch_size": 500}, ValueError, "batch_size"),
    ({"clip_norm": 0.0}, ValueError, "clip_norm"),
    ({"classes": None}, ValueError, "classes is required"),
    ({"classes": [0, 5]}, ValueError, "every label of y_train"),
    ({"secure_mode": True}, ValueError, "secure_mode=True"),
])
def test_bad_settings_are_refused_by_name(kwargs, error, words):
    with pytest.raises(error, match="fit_noisy_gradient") as info:
        _fit(**kwargs)
    assert words in str(info.value)


def test_unregistered_or_off_objective_estimators_are_refused():
    X, y = _data("binary")
    with pytest.raises(TypeError, match="fit_noisy_gradient: no smooth loss is registered for DecisionTreeClassifier"):
        _fit(DecisionTreeClassifier(), X, y)
    with pytest.raises(ValueError, match="fit_noisy_gradient: LogisticRegression as configured leaves .*l1_ratio=0"):
        _fit(LogisticRegression(l1_ratio=1.0, solver="saga", C=1.0), X, y)
    with pytest.raises(ValueError, match="sample_weight is not supported for PoissonRegressor"):
        Xp, yp = _data("positive")
        fit_noisy_gradient(PoissonRegressor(), Xp, yp, n_total=40, eta=0.2, sample_weight=np.ones(40))


def test_a_fixed_seed_warns_that_it_fixes_the_noise():
    from skmip.exceptions import PrivacyWarning

    X, y = _data("binary", n=120)
    with pytest.warns(PrivacyWarning, match="fixes the privacy noise"):
        fit_noisy_gradient(LogisticRegression(), X, y, n_total=240, eta=0.2, classes=[0, 1], random_state=3)


def test_secure_mode_draws_from_the_os():
    X, y = _data("binary", n=120)
    a, _ = _fit(X=X, y=y, random_state=None, secure_mode=True)
    b, _ = _fit(X=X, y=y, random_state=None, secure_mode=True)
    assert not np.array_equal(a.coef_, b.coef_)
