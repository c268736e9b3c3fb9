"""The noisy descent in D's top principal directions (issue 32, German credit): the same accounting,
coefficients in the span of D's directions with the r-dimensional model's predictions, refusals."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression, Ridge

from skmip import MIPNoiseWrapper
from skmip.calibration.noisy_gradient import fit_noisy_gradient
from skmip.calibration.noisy_gradient.subspace import MAX_FEATURES, principal_directions, subspace_rank
from skmip.calibration.routes import NoisyGradientRoute
from skmip.exceptions import PrivacyWarning


def _data(n=200, d=12, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.linspace(3.0, 0.2, d)  # distinct variances: distinct directions
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    return X, y


def _fit(X, y, rows, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return fit_noisy_gradient(LogisticRegression(C=0.1), X[rows], y[rows], n_total=len(y), eta=0.1,
                                  classes=[0, 1], y_pool=y, random_state=3, **kw)


def test_the_rank_is_k_times_the_squared_signal_to_noise_rounded_up():
    q, T, sigma = 64 / 350, 50, 5.091
    assert subspace_rank(350, q, T, sigma) == math.ceil(350 * (q * math.sqrt(T) / sigma) ** 2) == 23
    assert subspace_rank(5, 0.01, 1, 100.0) == 1  # at least one direction
    assert subspace_rank(10, 0.5, 4, 0.0) > 10**9  # no noise: nothing dropped


def test_directions_are_the_top_eigenvectors_of_ds_covariance_dense_or_sparse():
    X, _ = _data()
    V = principal_directions(X, 3)
    cov = np.cov(X, rowvar=False, bias=True)
    values = np.sort(np.linalg.eigvalsh(cov))[::-1]
    np.testing.assert_allclose(V.T @ V, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(np.diag(V.T @ cov @ V), values[:3], rtol=1e-10)
    np.testing.assert_allclose(np.abs(principal_directions(sp.csr_matrix(X), 3)), np.abs(V), atol=1e-10)
    assert principal_directions(X, X.shape[1]) is None  # nothing to drop
    assert principal_directions(np.zeros((3, MAX_FEATURES + 1)), 2) is None  # too wide: all the columns


def test_the_accounting_is_unchanged_and_the_release_lives_in_the_span():
    X, y = _data()
    rows = np.random.default_rng(1).permutation(len(y))[:100]
    full, d_full = _fit(X, y, rows, subspace=None, X_pool=X)
    sub, d_sub = _fit(X, y, rows, subspace=4, X_pool=X)
    auto, d_auto = _fit(X, y, rows, X_pool=X)
    for key in ("mip_bound", "noise_multiplier", "sample_rate", "n_steps", "clip_norm"):
        assert d_sub[key] == d_full[key] == d_auto[key]
    assert d_full["subspace_rank"] is None and d_sub["subspace_rank"] == 4
    assert d_auto["subspace_rank"] == subspace_rank(100, d_auto["sample_rate"], d_auto["n_steps"],
                                                    d_auto["noise_multiplier"])
    V = principal_directions(X, 4)
    w = sub.coef_.ravel()
    np.testing.assert_allclose(V @ (V.T @ w), w, atol=1e-12)  # coef = V w
    assert sub.coef_.shape == (1, 12) and sub.n_features_in_ == 12 and type(sub) is LogisticRegression
    # the release predicts as the r-dimensional model the engine trained on the projected rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        small, _ = fit_noisy_gradient(LogisticRegression(C=0.1), X[rows] @ V, y[rows], n_total=len(y), eta=0.1,
                                      classes=[0, 1], y_pool=y, random_state=3)
    np.testing.assert_allclose(sub.decision_function(X), small.decision_function(X @ V), atol=1e-10)


def test_without_x_pool_auto_trains_in_every_column_as_before():
    X, y = _data()
    rows = np.arange(100)
    a, da = _fit(X, y, rows)
    b, db = _fit(X, y, rows, subspace=None, X_pool=X)
    assert da["subspace_rank"] is None
    np.testing.assert_array_equal(a.coef_, b.coef_)


def test_a_regressor_and_multiclass_keep_their_shapes():
    X, _ = _data()
    rng = np.random.default_rng(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        reg, d = fit_noisy_gradient(Ridge(alpha=1.0), X[:100], X[:100, 0], n_total=200, eta=0.1, X_pool=X,
                                    subspace=3, random_state=0)
        y3 = rng.integers(0, 3, 200)
        clf, _ = fit_noisy_gradient(LogisticRegression(), X[:100], y3[:100], n_total=200, eta=0.1, classes=[0, 1, 2],
                                    X_pool=X, subspace=3, random_state=0)
    assert np.shape(reg.coef_) == (12,) and np.ndim(reg.intercept_) == 0 and d["subspace_rank"] == 3
    assert clf.coef_.shape == (3, 12) and clf.intercept_.shape == (3,)
    V = principal_directions(X, 3)
    np.testing.assert_allclose(clf.coef_ @ V @ V.T, clf.coef_, atol=1e-12)


@pytest.mark.parametrize("kw, match", [
    (dict(subspace=0, X_pool="X"), r"fit_noisy_gradient: subspace must be 'auto'.*got 0"),
    (dict(subspace="pca", X_pool="X"), r"subspace must be 'auto'.*got 'pca'"),
    (dict(subspace=True, X_pool="X"), r"subspace must be 'auto'.*got True"),
    (dict(subspace=3), r"subspace=3 needs X_pool, the features of D.*pass X_pool or subspace=None"),
    (dict(X_pool="X_train"), r"X_pool must hold the 200 rows of D with the 12 columns.*got shape \(100, 12\)"),
])
def test_bad_subspace_settings_are_refused_by_name(kw, match):
    X, y = _data()
    pools = {"X": X, "X_train": X[:100]}
    kw = {k: pools.get(v, v) if k == "X_pool" else v for k, v in kw.items()}
    with pytest.raises(ValueError, match=match):
        _fit(X, y, np.arange(100), **kw)


def test_the_route_validates_the_knob_and_the_wrapper_keeps_its_bound():
    with pytest.raises(ValueError, match=r"MIPNoiseWrapper: subspace must be 'auto'.*got -2"):
        NoisyGradientRoute(subspace=-2).validate("MIPNoiseWrapper")
    X, y = _data(n=400, d=30)
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for subspace in ("auto", None):
            w = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.1, method=NoisyGradientRoute(subspace=subspace),
                                random_state=0).fit(X, y)
            fits[subspace] = w
    assert fits["auto"].mip_bound_ == fits[None].mip_bound_ <= 0.1
    assert fits["auto"].noise_multiplier_ == fits[None].noise_multiplier_
    V = principal_directions(X, subspace_rank(200, fits["auto"].sample_rate_, fits["auto"].n_steps_,
                                              fits["auto"].noise_multiplier_))
    assert V is not None and V.shape[1] < 30  # the rule dropped directions here (k = 200: r = 13)
    coef = fits["auto"].estimator_.coef_.ravel()
    np.testing.assert_allclose(V @ (V.T @ coef), coef, atol=1e-10)


def test_the_cost_counts_ds_covariance_only_where_the_run_may_project():
    wide, narrow = NoisyGradientRoute(), NoisyGradientRoute(subspace=None)
    a, b = wide.cost(100_000, 2_000, 50_000, None), narrow.cost(100_000, 2_000, 50_000, None)
    assert a.seconds - b.seconds == pytest.approx(2.0 * 100_000 * 2_000**2 / 1e9)
    assert a.bytes == 8.0 * 2_000**2 and a.bytes_driver == "subspace='auto'"
    assert wide.cost(100, MAX_FEATURES + 1, 50, None) == narrow.cost(100, MAX_FEATURES + 1, 50, None)
