"""Parameter adapters: round trips, canonical order, projection, scrubbing, registry."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.covariance import (
    OAS,
    EllipticEnvelope,
    EmpiricalCovariance,
    GraphicalLasso,
    LedoitWolf,
    MinCovDet,
    ShrunkCovariance,
)
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import (
    LinearRegression,
    LogisticRegression,
    Ridge,
    SGDClassifier,
)
from sklearn.mixture import BayesianGaussianMixture, GaussianMixture
from sklearn.neural_network import MLPClassifier, MLPRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MaxAbsScaler,
    MinMaxScaler,
    PolynomialFeatures,
    RobustScaler,
    StandardScaler,
)
from sklearn.svm import SVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip import params as P
from skmip.params import (
    DIAGNOSTIC_ATTRIBUTES,
    AttributeAdapter,
    CovarianceAdapter,
    GaussianMixtureAdapter,
    LinearModelAdapter,
    MLPAdapter,
    PipelineAdapter,
    StandardScalerAdapter,
    StatelessAdapter,
    StatisticAdapter,
    _linalg,
    get_adapter,
    register_adapter,
)
from skmip.params import registry as adapter_registry
from skmip.params.linear import _linear_model_classes
from skmip.release.statistic import Statistic, column_mean, second_moment


def _scaled(X):
    return (X - X.mean(0)) / X.std(0)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return _scaled(X), y


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(return_X_y=True)


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


@pytest.fixture(scope="module")
def wine():
    X, y = load_wine(return_X_y=True)
    return _scaled(X), y


def _released_leaks(estimator, n_samples):
    """Names in vars() that are known diagnostics or have a per-sample dimension."""
    leaks = []
    for name, value in vars(estimator).items():
        if name in DIAGNOSTIC_ATTRIBUTES:
            leaks.append(name)
        elif hasattr(value, "shape") and n_samples in np.shape(value):
            leaks.append(name)
    return leaks


def _outputs(estimator, X):
    out = {}
    for method in ("predict", "decision_function", "predict_proba", "score_samples", "transform"):
        if hasattr(estimator, method):
            out[method] = np.asarray(getattr(estimator, method)(X), dtype=float)
    return out


def _release(adapter, estimator, vector):
    adapter.set_vector(estimator, vector)
    adapter.project(estimator)
    adapter.scrub(estimator)
    return estimator


# --------------------------------------------------------------------------------------
# Linear models: every class the adapter claims.
# --------------------------------------------------------------------------------------


def _linear_data(est, cancer, diabetes):
    Xr, yr = diabetes
    name = type(est).__name__
    if is_classifier(est):
        X, y = cancer
        return X[:200], y[:200]
    if name.startswith("MultiTask"):
        return Xr, np.c_[yr, -yr]
    if name in ("PoissonRegressor", "GammaRegressor", "TweedieRegressor"):
        return Xr, yr / 100
    if name in ("TheilSenRegressor", "HuberRegressor"):
        return Xr[:150], yr[:150]
    return Xr, yr


@pytest.mark.parametrize("cls", _linear_model_classes(), ids=lambda c: c.__name__)
def test_every_linear_model_round_trips_and_scrubs(cls, cancer, diabetes):
    with warnings.catch_warnings():
        # Deprecated classes and changing defaults warn; the adapter must handle them all.
        warnings.simplefilter("ignore", (ConvergenceWarning, FutureWarning))
        est = cls()
        X, y = _linear_data(est, cancer, diabetes)
        est.fit(X, y)
    adapter = get_adapter(est)
    assert isinstance(adapter, LinearModelAdapter)
    before = _outputs(est, X)
    vector = adapter.get_vector(est)
    n_intercept = np.size(getattr(est, "intercept_", getattr(est, "offset_", ())))
    assert vector.shape == (np.size(est.coef_) + n_intercept,)
    _release(adapter, adapter.canonicalize(est), vector.copy())
    after = _outputs(est, X)
    assert after.keys() == before.keys()
    for method in before:
        np.testing.assert_array_equal(after[method], before[method])
    assert _released_leaks(est, len(X)) == []


def test_linear_vector_moves_the_decision_function(cancer):
    X, y = cancer
    clf = LogisticRegression(max_iter=2000).fit(X, y)
    adapter = get_adapter(clf)
    v = adapter.get_vector(clf)
    shift = np.zeros_like(v)
    shift[-1] = 1.5  # the intercept is the last coordinate
    expected = clf.decision_function(X) + 1.5
    adapter.set_vector(clf, v + shift)
    np.testing.assert_allclose(clf.decision_function(X), expected)


def test_intercept_types_round_trip(diabetes):
    X, y = diabetes
    # fit_intercept=False: the constant 0.0 is not a parameter and stays a Python float.
    no_icpt = LinearRegression(fit_intercept=False).fit(X, y)
    adapter = get_adapter(no_icpt)
    v = adapter.get_vector(no_icpt)
    assert v.shape == (X.shape[1],)
    adapter.set_vector(no_icpt, v + 1.0)
    adapter.scrub(no_icpt)
    assert type(no_icpt.intercept_) is float and no_icpt.intercept_ == 0.0
    # Single-target regressor: numpy float64 scalar stays a numpy scalar.
    ridge = Ridge().fit(X, y)
    assert type(ridge.intercept_) is np.float64
    v = adapter.get_vector(ridge)
    adapter.set_vector(ridge, v + 1.0)
    assert type(ridge.intercept_) is np.float64
    assert ridge.intercept_ == pytest.approx(v[-1] + 1.0)
    # float32 fits stay float32.
    ridge32 = Ridge().fit(X.astype(np.float32), y.astype(np.float32))
    adapter.set_vector(ridge32, adapter.get_vector(ridge32))
    assert ridge32.coef_.dtype == np.float32
    assert np.asarray(ridge32.intercept_).dtype == np.float32
    # Classifier without intercept: zeros array kept, not noised.
    clf = LogisticRegression(fit_intercept=False, max_iter=500).fit(X[:, :3], y > y.mean())
    adapter.set_vector(clf, adapter.get_vector(clf) + 1.0)
    np.testing.assert_array_equal(clf.intercept_, 0.0)


def test_sparsified_coef_is_written_dense(cancer):
    X, y = cancer
    sgd = SGDClassifier(random_state=0).fit(X, y)
    dense = sgd.decision_function(X)
    sgd.sparsify()
    adapter = get_adapter(sgd)
    adapter.set_vector(sgd, adapter.get_vector(sgd))
    assert isinstance(sgd.coef_, np.ndarray)
    np.testing.assert_allclose(sgd.decision_function(X), dense)


def test_sgd_averaging_state_is_scrubbed(cancer):
    X, y = cancer
    sgd = SGDClassifier(average=True, random_state=0).fit(X, y)
    private = {"_average_coef", "_average_intercept", "_standard_coef", "_standard_intercept"}
    assert private & set(vars(sgd))  # present after fit in this sklearn version
    get_adapter(sgd).scrub(sgd)
    assert not private & set(vars(sgd))
    assert sgd.predict(X).shape == (len(X),)


# --------------------------------------------------------------------------------------
# MLPs.
# --------------------------------------------------------------------------------------


def _permute_hidden(mlp, rng, flip_signs=False):
    """Apply a random permutation (and sign flips) of hidden units: same function."""
    coefs = [w.copy() for w in mlp.coefs_]
    intercepts = [b.copy() for b in mlp.intercepts_]
    for layer in range(len(coefs) - 1):
        perm = rng.permutation(coefs[layer].shape[1])
        coefs[layer], intercepts[layer] = coefs[layer][:, perm], intercepts[layer][perm]
        coefs[layer + 1] = coefs[layer + 1][perm]
        if flip_signs:
            flip = rng.random(coefs[layer].shape[1]) < 0.5
            coefs[layer][:, flip] *= -1
            intercepts[layer][flip] *= -1
            if mlp.activation == "logistic":
                intercepts[layer + 1] = intercepts[layer + 1] + coefs[layer + 1][flip].sum(axis=0)
            coefs[layer + 1][flip] *= -1
    out = copy.deepcopy(mlp)
    out.coefs_, out.intercepts_ = coefs, intercepts
    return out


@pytest.fixture(scope="module")
def digits_mlp():
    X, y = load_digits(return_X_y=True)
    X = X[:400] / 16.0
    y = y[:400]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier(
            hidden_layer_sizes=(12, 7), activation="tanh", max_iter=60, random_state=0
        ).fit(X, y)
    return X, y, mlp


def test_mlp_round_trip_layout_and_scrub(digits_mlp):
    X, _, mlp = digits_mlp
    mlp = copy.deepcopy(mlp)
    adapter = get_adapter(mlp)
    assert isinstance(adapter, MLPAdapter)
    v = adapter.get_vector(mlp)
    assert v.size == sum(w.size + b.size for w, b in zip(mlp.coefs_, mlp.intercepts_, strict=True))
    # Layout: coefs_[0] then intercepts_[0] then coefs_[1] ...
    np.testing.assert_array_equal(v[: mlp.coefs_[0].size], mlp.coefs_[0].ravel())
    before = mlp.predict_proba(X)
    for name in ("_optimizer", "_best_coefs", "loss_curve_", "_no_improvement_count", "_random_state"):
        assert name in vars(mlp)
    _release(adapter, mlp, v)
    np.testing.assert_array_equal(mlp.predict_proba(X), before)
    assert _released_leaks(mlp, len(X)) == []
    assert not {"_optimizer", "_best_coefs", "_best_intercepts", "_random_state", "t_"} & set(vars(mlp))
    assert mlp.out_activation_ == "softmax" and list(mlp.classes_) == list(range(10))


@pytest.mark.parametrize("activation", ["relu", "tanh", "logistic"])
def test_mlp_canonical_order_is_permutation_invariant(digits_mlp, activation):
    X, y, _ = digits_mlp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = MLPClassifier(
            hidden_layer_sizes=(12, 7), activation=activation, max_iter=20, random_state=0
        ).fit(X, y)
    flips = activation != "relu"
    adapter = MLPAdapter(sort_units=True, fix_signs=flips)
    rng = np.random.default_rng(0)
    shuffled = _permute_hidden(mlp, rng, flip_signs=flips)
    np.testing.assert_allclose(shuffled.predict_proba(X), mlp.predict_proba(X), atol=1e-12)
    assert not np.allclose(adapter.get_vector(shuffled), adapter.get_vector(mlp))
    reference = adapter.get_vector(adapter.canonicalize(copy.deepcopy(mlp)))
    canon = adapter.canonicalize(shuffled)
    np.testing.assert_allclose(adapter.get_vector(canon), reference, atol=1e-12)
    np.testing.assert_allclose(canon.predict_proba(X), mlp.predict_proba(X), atol=1e-12)
    if flips:
        assert all((b >= 0).all() for b in canon.intercepts_[:-1])
    # Sorted by increasing norm of the incoming weights and bias in every hidden layer.
    for w, b in zip(canon.coefs_[:-1], canon.intercepts_[:-1], strict=True):
        norms = np.sqrt((w**2).sum(axis=0) + b**2)
        assert (np.diff(norms) >= 0).all()


def test_mlp_auto_keeps_training_order_under_a_fixed_seed(digits_mlp):
    X, y, mlp = digits_mlp
    fixed = copy.deepcopy(mlp)
    v = MLPAdapter().get_vector(fixed)
    np.testing.assert_array_equal(MLPAdapter().get_vector(MLPAdapter().canonicalize(fixed)), v)
    unseeded = copy.deepcopy(mlp).set_params(random_state=None)
    canon = MLPAdapter().canonicalize(unseeded)
    norms = np.sqrt((canon.coefs_[0] ** 2).sum(axis=0) + canon.intercepts_[0] ** 2)
    assert (np.diff(norms) >= 0).all()
    with pytest.raises(ValueError, match="sort_units must be one of 'auto'"):
        MLPAdapter(sort_units="yes").canonicalize(copy.deepcopy(mlp))


def test_mlp_regressor_perturbed_release_predicts(diabetes):
    X, y = diabetes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reg = MLPRegressor(hidden_layer_sizes=(6,), max_iter=30, random_state=0).fit(X, y)
    adapter = get_adapter(reg)
    noisy = adapter.get_vector(reg) + np.random.default_rng(1).normal(
        0, 0.1, adapter.get_vector(reg).size
    )
    _release(adapter, adapter.canonicalize(reg), noisy)
    np.testing.assert_array_equal(adapter.get_vector(reg), noisy)
    assert np.isfinite(reg.predict(X)).all()


# --------------------------------------------------------------------------------------
# Covariance estimators.
# --------------------------------------------------------------------------------------

COVARIANCE_ESTIMATORS = [
    EmpiricalCovariance(),
    ShrunkCovariance(),
    LedoitWolf(),
    OAS(),
    MinCovDet(random_state=0),
    GraphicalLasso(alpha=0.05),
    EllipticEnvelope(random_state=0),
    EmpiricalCovariance(assume_centered=True),
    LedoitWolf(store_precision=False),
]


@pytest.mark.parametrize("est", COVARIANCE_ESTIMATORS, ids=repr)
def test_covariance_round_trip_project_and_scrub(est, wine):
    X, _ = wine
    est = clone(est).fit(X)
    adapter = get_adapter(est)
    assert isinstance(adapter, CovarianceAdapter)
    d = X.shape[1]
    v = adapter.get_vector(est)
    n_loc = 0 if est.assume_centered else d
    assert v.size == n_loc + d * (d + 1) // 2 + isinstance(est, EllipticEnvelope)
    before = est.mahalanobis(X)
    adapter.set_vector(est, v)
    np.testing.assert_allclose(est.mahalanobis(X), before, rtol=1e-8)

    # Perturb: a symmetric perturbation with a clearly negative eigenvalue.
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 1.0, v.size)
    noisy = v + noise
    adapter.set_vector(est, noisy)
    # set_vector never leaves the un-noised inverse behind.
    if est.store_precision:
        np.testing.assert_allclose(est.precision_ @ est.covariance_, np.eye(d), atol=1e-6)
    assert np.linalg.eigvalsh(est.covariance_).min() < 0
    _release(adapter, est, adapter.get_vector(est))
    eig = np.linalg.eigvalsh(est.covariance_)
    assert eig.min() > 0
    np.testing.assert_array_equal(est.covariance_, est.covariance_.T)
    np.testing.assert_allclose(est.get_precision() @ est.covariance_, np.eye(d), atol=1e-6)
    assert np.isfinite(est.mahalanobis(X)).all()
    assert np.isfinite(EmpiricalCovariance.score(est, X))  # EllipticEnvelope overrides score
    if isinstance(est, EllipticEnvelope):
        assert set(np.unique(est.predict(X))) <= {-1, 1}
    assert _released_leaks(est, len(X)) == []
    assert not {"raw_location_", "raw_covariance_", "shrinkage_", "costs_"} & set(vars(est))


def test_covariance_projection_is_nearest_psd():
    """Clipping eigenvalues is the Frobenius-nearest matrix with spectrum >= floor."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=(5, 5))
    sym = a + a.T
    proj = _linalg._project_psd(sym, 0.0)
    assert np.linalg.eigvalsh(proj).min() >= -1e-12
    best = np.linalg.norm(proj - sym)
    # No random PSD matrix is closer (Higham 1988, Theorem 2.1).
    for _ in range(200):
        b = rng.normal(size=(5, 5))
        cand = proj + 0.1 * (b @ b.T) / 5
        assert np.linalg.norm(cand - sym) >= best - 1e-12
    # A matrix already above the floor is unchanged.
    spd = a @ a.T + np.eye(5)
    np.testing.assert_allclose(_linalg._project_psd(spd, 0.5), spd, atol=1e-12)


# --------------------------------------------------------------------------------------
# Gaussian mixtures.
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["full", "tied", "diag", "spherical"])
def mixture(request, iris):
    X, _ = iris
    gm = GaussianMixture(3, covariance_type=request.param, random_state=0).fit(X)
    return X, gm


def _cov_free(kind, k, d):
    return {"full": k * d * (d + 1) // 2, "tied": d * (d + 1) // 2, "diag": k * d, "spherical": k}[kind]


def test_gmm_round_trip_and_scrub(mixture):
    X, gm = mixture
    gm = copy.deepcopy(gm)
    adapter = get_adapter(gm)
    assert isinstance(adapter, GaussianMixtureAdapter)
    k, d = gm.means_.shape
    v = adapter.get_vector(gm)
    assert v.size == k + k * d + _cov_free(gm.covariance_type, k, d)
    before = _outputs(gm, X)
    _release(adapter, gm, v)
    after = _outputs(gm, X)
    for method in before:
        np.testing.assert_allclose(after[method], before[method], rtol=1e-9, atol=1e-9)
    assert not {"lower_bound_", "lower_bounds_", "n_iter_", "converged_"} & set(vars(gm))
    assert _released_leaks(gm, len(X)) == []


def test_gmm_canonical_order_is_permutation_invariant(mixture):
    X, gm = mixture
    adapter = GaussianMixtureAdapter()
    reference = adapter.get_vector(adapter.canonicalize(copy.deepcopy(gm)))
    perm = np.array([2, 0, 1])
    shuffled = copy.deepcopy(gm)
    shuffled.weights_ = gm.weights_[perm]
    shuffled.means_ = gm.means_[perm]
    if gm.covariance_type != "tied":
        for name in ("covariances_", "precisions_cholesky_", "precisions_"):
            setattr(shuffled, name, getattr(gm, name)[perm])
    canon = adapter.canonicalize(shuffled)
    np.testing.assert_array_equal(adapter.get_vector(canon), reference)
    assert (np.diff(canon.means_[:, 0]) >= 0).all()
    np.testing.assert_allclose(canon.score_samples(X), gm.score_samples(X))


def _precision_identity(gm):
    """precisions_cholesky_ and precisions_ agree with covariances_ (inverse)."""
    kind, cov, pc, prec = gm.covariance_type, gm.covariances_, gm.precisions_cholesky_, gm.precisions_
    if kind in ("full", "tied"):
        covs = cov[None] if kind == "tied" else cov
        pcs = pc[None] if kind == "tied" else pc
        for c, chol in zip(covs, pcs, strict=True):
            np.testing.assert_allclose(chol @ chol.T @ c, np.eye(len(c)), atol=1e-8)
            assert np.allclose(chol, np.triu(chol))  # inv(cholesky).T is upper triangular
        np.testing.assert_allclose(prec, pc @ np.swapaxes(pc, -1, -2) if kind == "full" else pc @ pc.T)
    else:
        np.testing.assert_allclose(pc**2 * cov, 1.0)
        np.testing.assert_allclose(prec, pc**2)


def test_gmm_project_makes_a_perturbed_mixture_usable(mixture):
    X, gm = mixture
    gm = copy.deepcopy(gm)
    adapter = GaussianMixtureAdapter()
    k, d = gm.means_.shape
    v = adapter.get_vector(gm)
    noisy = v + np.random.default_rng(0).normal(0, 0.8, v.size)
    noisy[0] = -0.3  # a negative weight
    adapter.set_vector(gm, noisy)
    # No un-noised precision survives set_vector: recomputed or removed.
    if "precisions_cholesky_" in vars(gm):
        _precision_identity(gm)
    adapter.project(gm)
    assert gm.weights_.min() > 0 and gm.weights_.sum() == pytest.approx(1.0)
    if gm.covariance_type in ("full", "tied"):
        covs = gm.covariances_[None] if gm.covariance_type == "tied" else gm.covariances_
        assert min(np.linalg.eigvalsh(c).min() for c in covs) >= gm.reg_covar * (1 - 1e-9)
    else:
        assert gm.covariances_.min() >= gm.reg_covar
    _precision_identity(gm)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. log(0) of a zero weight
        assert np.isfinite(gm.score_samples(X)).all()
        assert gm.predict(X).shape == (len(X),)
        Xs, labels = gm.sample(20)
    assert Xs.shape == (20, d) and np.isfinite(Xs).all()


def test_gmm_precisions_match_sklearn_fit(iris):
    """Recomputed precisions equal those scikit-learn computed in fit."""
    X, _ = iris
    for kind in ("full", "tied", "diag", "spherical"):
        gm = GaussianMixture(2, covariance_type=kind, random_state=0).fit(X)
        expected = gm.precisions_cholesky_.copy(), gm.precisions_.copy()
        GaussianMixtureAdapter().project(gm)
        np.testing.assert_allclose(gm.precisions_cholesky_, expected[0], rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(gm.precisions_, expected[1], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("floor", [0.0, 0.05])
def test_simplex_projection_kkt(floor):
    """Euclidean projection onto {w >= a, sum w = 1}: w = max(v - theta, a) for one theta."""
    rng = np.random.default_rng(1)
    for _ in range(200):
        v = rng.normal(0, 2, rng.integers(1, 8))
        if floor * v.size >= 1:
            continue
        w = _linalg._project_simplex(v, floor)
        assert w.sum() == pytest.approx(1.0) and (w >= floor - 1e-12).all()
        free = w > floor + 1e-12
        theta = (v - w)[free]
        assert np.ptp(theta) < 1e-9
        assert ((v - floor)[~free] <= theta[0] + 1e-9).all()
    # A point of the simplex is its own projection.
    p = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(_linalg._project_simplex(p), p)


def test_gmm_min_weight_validation(iris):
    X, _ = iris
    gm = GaussianMixture(3, random_state=0).fit(X)
    with pytest.raises(ValueError, match="min_weight must be in"):
        GaussianMixtureAdapter(min_weight=0.5).project(gm)


def test_bayesian_gmm_is_refused():
    with pytest.raises(TypeError, match="weight_concentration_"):
        get_adapter(BayesianGaussianMixture())


# --------------------------------------------------------------------------------------
# Pipelines and preprocessing.
# --------------------------------------------------------------------------------------


def test_pipeline_standard_scaler_logistic(cancer):
    X, y = load_breast_cancer(return_X_y=True)  # unscaled: the scaler matters
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(X, y)
    adapter = get_adapter(pipe)
    assert isinstance(adapter, PipelineAdapter)
    d = X.shape[1]
    v = adapter.get_vector(pipe)
    assert v.size == d + d + d + 1
    np.testing.assert_array_equal(v[:d], pipe[0].mean_)
    np.testing.assert_array_equal(v[d : 2 * d], pipe[0].scale_)
    before = pipe.predict_proba(X)
    _release(adapter, pipe, v)
    np.testing.assert_allclose(pipe.predict_proba(X), before, rtol=1e-12)
    assert "n_samples_seen_" not in vars(pipe[0]) and "n_iter_" not in vars(pipe[1])

    noisy = v.copy()
    noisy[d] = -3.0  # a negative scale
    noisy[d + 1] = 0.0
    adapter.set_vector(pipe, noisy)
    np.testing.assert_allclose(pipe[0].var_, pipe[0].scale_ ** 2)  # refreshed, not stale
    adapter.project(pipe)
    assert (pipe[0].scale_ > 0).all() and pipe[0].scale_[0] == 1.0 and pipe[0].scale_[1] == 1.0
    np.testing.assert_allclose(pipe[0].var_, pipe[0].scale_ ** 2)
    assert np.isfinite(pipe.predict_proba(X)).all()


def test_pipeline_steps_without_state_and_passthrough(iris):
    X, y = iris
    pipe = Pipeline(
        [
            ("poly", PolynomialFeatures(2)),
            ("skip", "passthrough"),
            ("log", FunctionTransformer(np.log1p)),
            ("scale", MinMaxScaler()),
            ("clf", LogisticRegression(max_iter=2000)),
        ]
    ).fit(X, y)
    adapter = get_adapter(pipe)
    assert [name for name, _ in adapter.steps] == ["poly", "log", "scale", "clf"]
    assert isinstance(dict(adapter.steps)["poly"], StatelessAdapter)
    n_poly = pipe["poly"].n_output_features_
    v = adapter.get_vector(pipe)
    assert v.size == 2 * n_poly + pipe["clf"].coef_.size + 3
    before = pipe.predict_proba(X)
    _release(adapter, pipe, v)
    np.testing.assert_allclose(pipe.predict_proba(X), before, rtol=1e-10)


def test_pipeline_refuses_a_step_without_adapter(cancer):
    X, y = cancer
    pipe = make_pipeline(PCA(3), LogisticRegression())
    with pytest.raises(TypeError, match=r"Pipeline step 'pca' \(PCA\) has no parameter adapter"):
        get_adapter(pipe)


@pytest.mark.parametrize(
    "scaler", [MinMaxScaler(), MaxAbsScaler(), RobustScaler(), StandardScaler(with_mean=False)]
)
def test_scalers_round_trip_and_project(scaler, wine):
    X, _ = wine
    X = X + 3.0  # positive data so MaxAbs and MinMax differ from identity
    scaler = clone(scaler).fit(X)
    adapter = get_adapter(scaler)
    v = adapter.get_vector(scaler)
    before = scaler.transform(X)
    _release(adapter, scaler, v)
    np.testing.assert_allclose(scaler.transform(X), before, rtol=1e-12)
    adapter.set_vector(scaler, -np.abs(v) - 1.0)  # everything invalid
    adapter.project(scaler)
    assert np.isfinite(scaler.transform(X)).all()
    assert (np.asarray(scaler.scale_) > 0).all()
    assert _released_leaks(scaler, len(X)) == []


def test_minmax_derived_attributes_follow_the_parameters(iris):
    X, _ = iris
    mm = MinMaxScaler(feature_range=(-1, 2)).fit(X)
    adapter = get_adapter(mm)
    lo, hi = X.min(0) - 1, X.max(0) + 1
    adapter.set_vector(mm, np.r_[hi, lo])  # swapped: project orders them
    adapter.project(mm)
    np.testing.assert_allclose(mm.data_min_, lo)
    np.testing.assert_allclose(mm.transform(np.vstack([lo, hi])), [[-1] * 4, [2] * 4])


# --------------------------------------------------------------------------------------
# Statistic.
# --------------------------------------------------------------------------------------


@parametrize_with_checks([Statistic(), Statistic("second_moment")])
def test_statistic_sklearn_compatible(estimator, check):
    check(estimator)


def test_statistic_values_and_adapter(wine):
    X, _ = wine
    d = X.shape[1]
    mean = Statistic().fit(X)
    np.testing.assert_allclose(mean.statistic_, X.mean(0))
    assert mean.structure_ == "vector" and mean.n_features_in_ == d
    np.testing.assert_array_equal(get_adapter(mean).get_vector(mean), mean.statistic_)

    sm = Statistic("second_moment").fit(X)
    np.testing.assert_allclose(sm.statistic_, np.einsum("ni,nj->ij", X, X) / len(X))
    adapter = get_adapter(sm)
    assert isinstance(adapter, StatisticAdapter)
    v = adapter.get_vector(sm)
    assert v.size == d * (d + 1) // 2
    adapter.set_vector(sm, v)
    np.testing.assert_allclose(sm.statistic_, second_moment(X))
    noisy = v + np.random.default_rng(0).normal(0, 2.0, v.size)
    adapter.set_vector(sm, noisy)
    assert np.linalg.eigvalsh(sm.statistic_).min() < 0
    _release(adapter, sm, adapter.get_vector(sm))
    assert np.linalg.eigvalsh(sm.statistic_).min() >= -1e-10
    np.testing.assert_array_equal(sm.statistic_, sm.statistic_.T)
    assert set(vars(sm)) == {
        "func",
        "kw_args",
        "structure",
        "statistic_",
        "structure_",
        "n_features_in_",
    }


def test_statistic_paper_variant_noises_every_entry(wine):
    X, _ = wine
    full = Statistic("second_moment", structure="vector").fit(X)
    assert get_adapter(full).get_vector(full).size == X.shape[1] ** 2


def test_statistic_callable_clone_and_pickle(iris):
    X, _ = iris
    stat = Statistic(lambda Z: np.quantile(Z, [0.1, 0.9], axis=0))
    fitted = clone(stat).fit(X)
    assert fitted.statistic_.shape == (2, 4)
    assert clone(stat).get_params()["func"] is stat.func
    assert get_adapter(fitted).get_vector(fitted).size == 8
    by_name = pickle.loads(pickle.dumps(Statistic("mean").fit(X)))
    np.testing.assert_allclose(by_name.statistic_, column_mean(X))


def test_statistic_errors(iris):
    X, _ = iris
    with pytest.raises(
        ValueError, match="Statistic: func must be one of 'mean', 'second_moment', 'mean_and_second_moment'; got 'median'"
    ):
        Statistic("median").fit(X)
    with pytest.raises(TypeError, match="func must be one of"):
        Statistic(3).fit(X)
    with pytest.raises(ValueError, match="structure must be one of"):
        Statistic(structure="matrix").fit(X)
    with pytest.raises(ValueError, match="square matrix"):
        Statistic("mean", structure="psd").fit(X)
    with pytest.raises(ValueError, match="asymmetric"):
        Statistic(lambda Z: Z[:4, :4], structure="symmetric").fit(X)
    with pytest.raises(ValueError, match="non-finite"), np.errstate(all="ignore"):
        Statistic(lambda Z: np.log(Z - 5)).fit(X)


# --------------------------------------------------------------------------------------
# Registry, resolution, errors.
# --------------------------------------------------------------------------------------


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(adapter_registry, "_REGISTRY", list(adapter_registry._REGISTRY))
    return adapter_registry._REGISTRY


def test_user_adapter_overrides_builtin(registry, cancer):
    X, y = cancer
    clf = LogisticRegression(max_iter=1000).fit(X, y)
    assert isinstance(get_adapter(clf), LinearModelAdapter)
    mine = AttributeAdapter(["coef_"])
    register_adapter(LogisticRegression, lambda est: mine)
    assert get_adapter(clf) is mine
    assert get_adapter(clf).get_vector(clf).size == X.shape[1]
    # Appended entries do not shadow built-ins.
    register_adapter(lambda est: True, lambda est: StatelessAdapter(), first=False)
    assert isinstance(get_adapter(Ridge()), LinearModelAdapter)


def test_params_option_resolution(cancer):
    X, y = cancer
    clf = LogisticRegression(max_iter=1000).fit(X, y)
    named = get_adapter(clf, ["intercept_"])
    assert isinstance(named, AttributeAdapter) and named.get_vector(clf).size == 1
    custom = StandardScalerAdapter()
    assert get_adapter(clf, custom) is custom
    with pytest.raises(ValueError, match="params must be 'auto'"):
        get_adapter(clf, "coef_")
    with pytest.raises(TypeError, match="non-empty list"):
        get_adapter(clf, [])
    with pytest.raises(TypeError, match="does not know how PCA stores its parameters"):
        get_adapter(PCA())
    with pytest.raises(TypeError, match="support_vectors_.*LinearSVC"):
        get_adapter(SVC())


def test_attribute_adapter_keep_modes(cancer):
    X, y = cancer
    clf = LogisticRegression(max_iter=1000).fit(X, y)
    clf.private_cache_ = X.copy()  # something an unknown estimator might keep
    clf.feature_names_in_ = np.array([f"x{i}" for i in range(X.shape[1])], dtype=object)
    lenient = AttributeAdapter(["coef_", "intercept_"])
    lenient.scrub(clf)
    assert "n_iter_" not in vars(clf) and "private_cache_" in vars(clf)
    strict = AttributeAdapter(["coef_", "intercept_"], keep=[])
    strict.scrub(clf)
    assert "private_cache_" not in vars(clf)
    assert "feature_names_in_" in vars(clf)  # public schema survives the allow-list
    del clf.feature_names_in_  # X below is an array without column names
    assert clf.predict(X).shape == (len(X),)
    assert repr(strict) == "AttributeAdapter(['coef_', 'intercept_'], keep=[])"


def test_errors_name_the_problem(cancer):
    X, y = cancer
    with pytest.raises(
        NotFittedError, match=r"LinearModelAdapter: this LogisticRegression has no fitted"
    ):
        LinearModelAdapter().get_vector(LogisticRegression())
    assert issubclass(NotFittedError, AttributeError)
    clf = LogisticRegression(max_iter=1000).fit(X, y)
    with pytest.raises(ValueError, match="vector has 3 entries but this LogisticRegression has 31"):
        get_adapter(clf).set_vector(clf, np.zeros(3))


def test_protocol_is_satisfied_by_every_builtin():
    for adapter in (
        AttributeAdapter(["coef_"]),
        LinearModelAdapter(),
        MLPAdapter(),
        CovarianceAdapter(),
        GaussianMixtureAdapter(),
        StandardScalerAdapter(),
        StatelessAdapter(),
        PipelineAdapter([]),
        StatisticAdapter(),
    ):
        assert isinstance(adapter, P.ParamAdapter)
