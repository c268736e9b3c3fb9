"""MIPNoiseWrapper: Algorithm 1 end to end, hygiene, errors and scikit-learn integration."""

import pickle
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.mixture import GaussianMixture
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip import MIPNoiseWrapper, PrivacyWarning, mip_noise_path
from skmip.bounds import mip_noise_constant
from skmip.calibration.noise_laws import mip_norm


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def test_fit_sets_documented_attributes(cancer):
    X, y = cancer
    w = MIPNoiseWrapper(LogisticRegression(C=0.1), method="moments", eta=0.2, n_subsets=8, random_state=0).fit(X, y)
    d = X.shape[1] + 1
    assert w.sigma_.shape == (d,) and np.all(w.sigma_ > 0)
    assert w.noise_constant_ == pytest.approx(mip_noise_constant(0.2, 2))
    assert w.n_train_ == round(0.5 * len(X))
    assert w.mip_bound_ == 0.2
    assert w.n_features_in_ == X.shape[1]
    np.testing.assert_array_equal(w.classes_, [0, 1])
    assert w.predict(X).shape == (len(X),)
    assert w.predict_proba(X).shape == (len(X), 2)


def test_released_model_holds_no_unnoised_parameters(cancer):
    """With train_size=1.0 and a deterministic learner the un-noised model is known exactly:
    none of its parameters may appear anywhere in the pickled wrapper or estimator_."""
    X, y = cancer
    X, y = X[:200], y[:200]
    w = MIPNoiseWrapper(LogisticRegression(), method="moments", eta=0.3, n_subsets=8, train_size=1.0, random_state=1)
    w.fit(X, y)
    clean = LogisticRegression(random_state=None).fit(X, y)
    # the wrapper fixed the inner seed; lbfgs ignores it, so the fits agree
    theta = np.concatenate([clean.coef_.ravel(), clean.intercept_])
    for blob in (pickle.dumps(w), pickle.dumps(w.estimator_)):
        for value in theta:
            assert np.float64(value).tobytes() not in blob
    released = np.concatenate([w.estimator_.coef_.ravel(), w.estimator_.intercept_])
    assert not np.any(np.isclose(released, theta, rtol=0, atol=0))
    # nothing row-indexed is kept: no array of length n_train or n in the wrapper's state
    for value in vars(w).values():
        assert not (isinstance(value, np.ndarray) and value.shape[:1] in {(len(X),), (w.n_train_,)})


def test_noise_radius_follows_gamma_law():
    """||released - theta||_{sigma,M} / c ~ Gamma(d, 1) (radius="gamma"), by a KS test."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.normal(size=40)
    theta = np.append(LinearRegression().fit(X, y).coef_, LinearRegression().fit(X, y).intercept_)
    radii = []
    for seed in range(300):
        w = MIPNoiseWrapper(LinearRegression(), method="moments", eta=0.3, moment=4, n_subsets=4, train_size=1.0,
                            random_state=seed).fit(X, y)
        released = np.append(w.estimator_.coef_, w.estimator_.intercept_)
        radii.append(mip_norm(released - theta, w.sigma_, 4) / w.noise_constant_)
    pvalue = stats.kstest(radii, stats.gamma(a=4).cdf).pvalue
    assert pvalue > 0.001


@pytest.mark.os_entropy
def test_fixed_seed_warns_and_none_draws_fresh_noise(cancer):
    X, y = cancer
    with pytest.warns(PrivacyWarning, match="subtract"):
        MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        a = MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4).fit(X, y)
        b = MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4).fit(X, y)
    assert not np.allclose(a.estimator_.coef_, b.estimator_.coef_)



# A short message that points to the docs section holding the measured figures and the
# better routes (test_fallback_docs_section_holds_the_figures checks that section).
_MOMENTS_FALLBACK = (
    r"method='auto' releases this (MLPClassifier|GaussianMixture) with Corollary 10's noise.*"
    r"near coin-flip utility; docs/mip_noise\.md \('Two calibrations, and the default'\).*"
    r"Pass method='moments' to choose it knowingly"
)


@pytest.mark.parametrize(
    "estimator, supervised",
    [(MLPClassifier((3,), max_iter=30), True), (GaussianMixture(2, covariance_type="diag"), False)],
    ids=["MLPClassifier", "GaussianMixture"],
)
def test_auto_falling_back_to_moments_says_so(cancer, estimator, supervised):
    X, y = cancer
    X, y = X[:120, :4], y[:120]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ConvergenceWarning of the MLP
        with pytest.warns(PrivacyWarning, match=_MOMENTS_FALLBACK):
            w = MIPNoiseWrapper(estimator, n_subsets=4, random_state=0).fit(X, y if supervised else None)
    assert w.method_ == "moments"


def test_no_fallback_warning_where_auto_couples_or_moments_is_chosen(cancer):
    X, y = cancer
    X, y = StandardScaler().fit_transform(X[:120, :4]), y[:120]
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        # the fits are seeded (an unseeded 3-unit MLP on raw features sometimes has dead
        # units, sigma = 0, which warns); the seed's own warning is not the one tested here
        warnings.filterwarnings("ignore", message=".*fixes the privacy noise", category=PrivacyWarning)
        auto = MIPNoiseWrapper(
            LogisticRegression(), eta=0.3, n_subsets=4, n_rounds=100, random_state=0
        ).fit(X, y)
        mlp = MLPClassifier((3,), max_iter=30, random_state=0)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Stochastic Optimizer")  # ConvergenceWarning
            chosen = MIPNoiseWrapper(mlp, method="moments", n_subsets=4, random_state=0).fit(X, y)
    assert (auto.method_, chosen.method_) == ("coupling", "moments")


def test_same_seed_reproduces_and_inner_learner_is_made_deterministic(cancer):
    X, y = cancer
    X, y = X[:120], y[:120]
    mlp = MLPClassifier(hidden_layer_sizes=(3,), max_iter=30, random_state=None)
    kwargs = dict(eta=0.3, n_subsets=4, random_state=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning
        a = MIPNoiseWrapper(mlp, **kwargs).fit(X, y)
        b = MIPNoiseWrapper(mlp, **kwargs).fit(X, y)
    np.testing.assert_array_equal(a.sigma_, b.sigma_)
    for ca, cb in zip(a.estimator_.coefs_, b.estimator_.coefs_):
        np.testing.assert_array_equal(ca, cb)
    # training diagnostics computed on the private data are gone
    for name in ("loss_curve_", "best_loss_", "n_iter_", "loss_", "t_"):
        assert not hasattr(a.estimator_, name)


def test_sigma_from_dataset_matches_theorem_9_subsets(cancer):
    """sigma_from="dataset" measures the spread over subsets of D of the training size;
    "train" over halves of D_train (Algorithm 1 as printed), which are half as large, so
    for a mean-like learner its spread is larger by about sqrt(2)."""
    from skmip.calibration.spread.moments import estimate_sigma

    X, y = cancer
    est = Ridge(alpha=1.0)
    w = MIPNoiseWrapper(est, method="moments", n_subsets=64, random_state=3).fit(X, y)
    w_alg1 = MIPNoiseWrapper(est, method="moments", n_subsets=64, sigma_from="train", random_state=3).fit(X, y)
    ratio = np.median(w_alg1.sigma_ / w.sigma_)
    assert 1.2 < ratio < 1.7
    direct = estimate_sigma(est, X, y, n_subsets=64, train_size=w.n_train_, random_state=0)
    assert np.median(direct / w.sigma_) == pytest.approx(1.0, abs=0.25)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"eta": 0.7}, r"eta must be in \(0, 0.5\]; got 0.7"),
        ({"eta": 0}, r"eta must be in \(0, 0.5\]"),
        ({"moment": 1.5}, r"moment must be in \[2"),
        ({"n_subsets": 1}, r"n_subsets must be .*got 1"),
        ({"train_size": 0.0}, r"train_size must be in \(0"),
        ({"train_size": 1.5}, r"train_size must be in \(0"),
        ({"radius": "normal"}, r"radius must be one of 'gamma', 'laplace'; got 'normal'"),
        ({"sigma_from": "x"}, r"sigma_from must be one of"),
    ],
)
def test_bad_hyperparameters_name_the_parameter(cancer, params, match):
    X, y = cancer
    w = MIPNoiseWrapper(LogisticRegression(), method="moments", **{"n_subsets": 4, **params})
    with pytest.raises(ValueError, match=match):
        w.fit(X, y)
    assert not hasattr(w, "estimator_") and not hasattr(w, "n_features_in_")


def test_bad_data_errors(cancer):
    X, y = cancer
    Xn = X.copy()
    Xn[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4).fit(Xn, y)
    with pytest.raises(ValueError, match="at least 4 training rows"):
        MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4).fit(X[:5], y[:5])
    # method="auto" trains k-NN on synthetic data (tests/defend/test_any_estimator.py); noising it
    # is refused with the ways out.
    with pytest.raises(TypeError, match="params=\\["):
        MIPNoiseWrapper(KNeighborsClassifier(), method="moments", n_subsets=4, random_state=0).fit(X, y)
    y_rare = np.zeros(len(y), dtype=int)
    y_rare[0] = 1
    with pytest.raises(ValueError, match="class"):
        MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=8, train_size=0.5, random_state=0).fit(X, y_rare)


def test_failed_refit_keeps_previous_state(cancer):
    X, y = cancer
    w = MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4, random_state=0).fit(X, y)
    before = w.estimator_
    w.set_params(n_subsets=1)
    with pytest.raises(ValueError):
        w.fit(X, y)
    assert w.estimator_ is before


def test_delegation_follows_the_inner_estimator(cancer):
    X, y = cancer
    assert hasattr(MIPNoiseWrapper(LogisticRegression()), "predict_proba")
    assert not hasattr(MIPNoiseWrapper(LinearRegression()), "predict_proba")
    assert not hasattr(MIPNoiseWrapper(LogisticRegression()), "sample")
    gm = MIPNoiseWrapper(GaussianMixture(n_components=2), n_subsets=4, eta=0.5, random_state=0)
    gm.fit(X[:, :2])
    samples, labels = gm.sample(10)
    assert samples.shape == (10, 2)
    assert np.isfinite(gm.score_samples(X[:5, :2])).all()


def test_clone_pickle_pipeline_and_cross_validate(cancer):
    X, y = cancer
    w = MIPNoiseWrapper(LogisticRegression(C=0.1), method="moments", eta=0.3, n_subsets=4, random_state=0)
    assert clone(w).get_params()["eta"] == 0.3
    w.fit(X, y)
    again = pickle.loads(pickle.dumps(w))
    np.testing.assert_array_equal(again.predict(X), w.predict(X))
    pipe = make_pipeline(StandardScaler(), MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4, random_state=0))
    pipe.fit(X, y)
    assert pipe.score(X, y) >= 0
    res = cross_validate(MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4, random_state=0), X, y, cv=3)
    assert len(res["test_score"]) == 3


def test_grid_search_over_privacy_and_inner_parameters(cancer):
    X, y = cancer
    grid = GridSearchCV(
        MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4, random_state=0),
        {"eta": [0.1, 0.5], "moment": [2, 4], "estimator__C": [0.1, 1.0]},
        cv=2,
    ).fit(X, y)
    assert len(grid.cv_results_["params"]) == 8
    assert grid.best_estimator_.mip_bound_ in (0.1, 0.5)


def test_mip_noise_path_shares_sigma_and_draws_independent_noise(cancer):
    X, y = cancer
    path = mip_noise_path(LogisticRegression(), X, y, method="moments", etas=[0.1, 0.3, 0.5], n_subsets=8, random_state=0)
    assert [w.mip_bound_ for w in path] == [0.1, 0.3, 0.5]
    assert all(w.sigma_ is path[0].sigma_ for w in path)
    coefs = [w.estimator_.coef_ for w in path]
    assert not np.allclose(coefs[0], coefs[1])
    single = MIPNoiseWrapper(LogisticRegression(), method="moments", eta=0.3, n_subsets=8, random_state=0).fit(X, y)
    np.testing.assert_array_equal(single.sigma_, path[0].sigma_)
    with pytest.raises(ValueError, match="eta"):
        mip_noise_path(LogisticRegression(), X, y, method="moments", etas=[0.1, 0.9], n_subsets=4)


def test_laplace_radius_warns(cancer):
    X, y = cancer
    with pytest.warns(PrivacyWarning, match="[Ll]aplace"):
        MIPNoiseWrapper(LogisticRegression(), method="moments", radius="laplace", n_subsets=4, random_state=0).fit(X, y)


def _check_instances():
    kw = dict(n_subsets=4, eta=0.5, random_state=0)
    return [
        MIPNoiseWrapper(LogisticRegression(), method="moments", **kw),
        MIPNoiseWrapper(Ridge(), method="moments", **kw),
        # eta = 0.45 < 1/2 needs real noise; few rounds keep the checks fast.
        MIPNoiseWrapper(Ridge(), eta=0.45, random_state=0, method="coupling", n_rounds=40),
        # Issue 31's configuration (coupling, certified), with fewer rounds to keep the checks fast.
        MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.2, random_state=0, n_rounds=100),
    ]


# Checks that cannot pass by design with the moments calibration, each with its reason:
# Corollary 10's noise is set by the promise, not by the data's signal, so accuracy-based
# checks fail on the checks' tiny datasets (that loss of utility is why the coupling
# calibration exists); everything about API conformance must pass.
EXPECTED_FAILED = {
    "check_classifiers_train": "noise calibrated to eta=0.5 still swamps the signal of 30-row toy data",
    "check_regressors_train": "same: the privacy noise, not the fit, dominates on toy data",
}


# Issue 31, item 9: a calibration subset lacking a class no longer stops the fit (it scores 0,
# docs/coupling.md, "Subsets that lack a class"), so the 13 checks that failed for that cause
# pass. One check fails for another reason, declared here: check_fit2d_1feature fits 10 rows
# of three classes (3-4 rows each) on one feature; a D_train of 5 rows lacks a class so often
# that the noise is calibrated to eta - delta = 0.033, and the designed shape leaves a coordinate
# of zero scale that some swaps move, which alone costs more than 0.033: coupling_noise_scale
# refuses with that reason, and the check wanted the words "1 feature(s)" in any error.
COUPLING_CLASSIFIER_FAILED = {
    "check_fit2d_1feature": "10 rows of 3 classes: the promise left after paying for a D_train that lacks a "
                            "class (eta - delta = 0.033) is refused with its own reason, not '1 feature(s)'",
}


def _expected_failed(est):
    if est.method == "moments":
        return EXPECTED_FAILED
    # The coupling calibration keeps enough signal to pass the accuracy checks.
    return COUPLING_CLASSIFIER_FAILED if isinstance(est.estimator, LogisticRegression) else {}


@parametrize_with_checks(_check_instances(), expected_failed_checks=_expected_failed)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_sample_weight_follows_the_rows(cancer):
    """Per-row fit parameters are subset to D_train (and to each split) like the rows."""
    X, y = cancer
    w = np.ones(len(X))
    w[y == 1] = 5.0
    kw = dict(eta=0.5, n_subsets=4, random_state=0, train_size=1.0)
    a = MIPNoiseWrapper(LogisticRegression(), method="moments", **kw).fit(X, y, sample_weight=w)
    b = MIPNoiseWrapper(LogisticRegression(), method="moments", **kw).fit(X, y)
    assert not np.allclose(a.sigma_, b.sigma_)
    a = MIPNoiseWrapper(LogisticRegression(), method="moments", **{**kw, "train_size": 0.5}).fit(X, y, sample_weight=w)
    assert a.n_train_ == round(len(X) / 2)


@pytest.mark.parametrize("method, shape", [("moments", "auto"), ("coupling", "full"), ("coupling", "auto")])
def test_a_calibration_subset_missing_a_class_does_not_stop_the_fit(method, shape):
    """A rare class (3 of 40 rows): a random D_train of 20 rows lacks it with probability 0.115,
    which the promise pays for (skmip.defend._coverage: the noise is calibrated to eta - 0.23),
    and many random calibration subsets of 20 rows lack it. Such a subset no longer stops the
    fit (issue 31, item 9): the swap distances score its pairs 0, the spread and the noise shape
    redraw it (docs/coupling.md, "Subsets that lack a class"); the fit states eta."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.zeros(40, dtype=int)
    y[:3] = 1
    X += y[:, None]
    w = MIPNoiseWrapper(LogisticRegression(), eta=0.5, method=method, noise_shape=shape, n_subsets=16,
                        n_rounds=60, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert w.fit(X, y).mip_bound_ == 0.5
    # With train_size=1.0 the subsets are halves of the given data (no promise: the data given
    # are D_train): a class of 1 in 30 rows, which half of the halves lack, fits too; with
    # train_size=0.5 the same data are refused before the draw (a D_train of 15 rows lacks the
    # class with probability 1/2: delta = 1).
    X, y = X[:30] - y[:30, None], np.zeros(30, dtype=int)
    y[:1] = 1
    X += y[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert clone(w).set_params(train_size=1.0).fit(X, y).n_train_ == 30
        with pytest.raises(ValueError, match="before D_train is drawn"):
            w.fit(X, y)
