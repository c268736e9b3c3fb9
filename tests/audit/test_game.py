"""The membership game: member sets, recorded outputs, seeding, parallelism, Algorithm 1 inside."""

import pickle
import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.neighbors import KernelDensity
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skmip.audit.game import MembershipGame, play_membership_game


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[:200], y[:200]


def test_exact_sampling_draws_exact_halves_independently(iris):
    X, y = iris
    game = play_membership_game(LogisticRegression(), X, y, n_models=8, random_state=0)
    assert isinstance(game, MembershipGame)
    assert game.membership.shape == game.signal.shape == game.loss.shape == (8, 150)
    assert game.n_models == 8 and game.n_samples == 150 and game.output == "proba"
    np.testing.assert_array_equal(game.membership.sum(axis=1), 75)
    assert len({row.tobytes() for row in game.membership}) == 8


def test_bernoulli_sampling_rate(iris):
    X, y = iris
    game = play_membership_game(LogisticRegression(), X, y, n_models=12, member_rate=0.3,
                                sampling="bernoulli", random_state=1)
    k, n = int(game.membership.sum()), game.membership.size
    # two-sided binomial test of the member rate at level 0.001
    assert stats.binomtest(k, n, 0.3).pvalue > 1e-3
    assert len(set(game.membership.sum(axis=1).tolist())) > 1  # sizes vary


def test_recorded_outputs_are_the_models_outputs(cancer):
    X, y = cancer
    game = play_membership_game(LogisticRegression(), X, y, n_models=3, random_state=2)
    for k in range(3):
        model = LogisticRegression().fit(X[game.membership[k]], y[game.membership[k]])
        p = model.predict_proba(X)[np.arange(len(y)), y]
        np.testing.assert_allclose(game.loss[k], -np.log(p), rtol=1e-6)
        np.testing.assert_allclose(game.signal[k], np.log(p) - np.log(1 - p), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(game.log_likelihood, -game.loss)


class _Confident(ClassifierMixin, BaseEstimator):
    """Puts probability 1 - 1e-20 (== 1.0 in floating point) on the true class of row 0."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        p = np.full((len(X), 2), 0.5)
        p[0] = [1e-20, 1.0]  # row 0 has label 1
        return p


def test_logit_is_computed_from_the_other_classes_not_from_one_minus_p():
    X = np.arange(8.0).reshape(-1, 1)
    y = np.array([1, 0, 1, 0, 1, 0, 1, 0])
    game = play_membership_game(_Confident(), X, y, n_models=2, random_state=0)
    # 1 - p_true is exactly 0 here; the sum of the other classes is 1e-20.
    np.testing.assert_allclose(game.signal[:, 0], np.log(1e20))
    assert np.all(np.isfinite(game.signal))


def test_results_do_not_depend_on_n_jobs_and_seeds_unset_random_states(iris):
    X, y = iris
    mlp = MLPClassifier((8,), max_iter=50, random_state=None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings of the tiny MLP
        a = play_membership_game(mlp, X, y, n_models=4, random_state=3, n_jobs=1)
        b = play_membership_game(mlp, X, y, n_models=4, random_state=3, n_jobs=2)
        c = play_membership_game(mlp, X, y, n_models=4, random_state=4, n_jobs=1)
    np.testing.assert_array_equal(a.membership, b.membership)
    np.testing.assert_array_equal(a.signal, b.signal)
    assert not np.array_equal(a.signal, c.signal)
    assert mlp.random_state is None  # the caller's estimator is never modified


def test_regressor_density_and_callable_outputs(iris):
    X, y = iris
    reg = play_membership_game(Ridge(), X, X[:, 0], n_models=2, random_state=0)
    assert reg.output == "neg_squared_error" and reg.log_likelihood is None
    np.testing.assert_allclose(reg.signal, -reg.loss)
    assert np.all(reg.loss >= 0)

    dens = play_membership_game(KernelDensity(bandwidth=0.5), X, n_models=2, random_state=0)
    assert dens.output == "score_samples"
    model = KernelDensity(bandwidth=0.5).fit(X[dens.membership[0]])
    np.testing.assert_allclose(dens.signal[0], model.score_samples(X))

    custom = play_membership_game(
        LogisticRegression(), X, y, n_models=2, random_state=0,
        output=lambda est, X_, y_: est.decision_function(X_)[np.arange(len(y_)), y_],
    )
    assert custom.output == "callable" and custom.log_likelihood is None


def test_inspect_runs_on_each_fitted_model(iris):
    X, y = iris
    game = play_membership_game(LogisticRegression(), X, y, n_models=3, random_state=0,
                                inspect=lambda m: m.coef_.shape)
    assert game.inspected == [(3, 4)] * 3


def test_game_keeps_per_row_outputs_only(cancer):
    X, y = cancer
    game = play_membership_game(LogisticRegression(), X, y, n_models=4, random_state=0)
    blob = pickle.dumps(game)
    # three (K, n) arrays (membership as bool) plus a small overhead: no model, no X.
    assert len(blob) < 4 * 200 * (8 + 8 + 1) + 2000
    assert X.nbytes > 40000


def test_errors_are_clear(iris):
    X, y = iris
    with pytest.raises(TypeError, match="predict_proba"):
        play_membership_game(LinearSVC(), X, y, n_models=2)
    with pytest.raises(ValueError, match="n_models"):
        play_membership_game(LogisticRegression(), X, y, n_models=1)
    with pytest.raises(ValueError, match="member_rate"):
        play_membership_game(LogisticRegression(), X, y, member_rate=1.0)
    with pytest.raises(ValueError, match="sampling"):
        play_membership_game(LogisticRegression(), X, y, sampling="poisson")
    with pytest.raises(ValueError, match="requires y to be passed"):
        play_membership_game(LogisticRegression(), X, n_models=2)
    # one row of class 2: each half misses it with probability 1/2, some of 16 surely do
    Xs = np.vstack([X[:13], X[50:63], X[100:101]])
    ys = np.r_[y[:13], y[50:63], y[100:101]]
    with pytest.raises(ValueError, match=r"has no row of class\(es\) \[2\]"):
        play_membership_game(LogisticRegression(), Xs, ys, n_models=16, random_state=0)


def test_mip_wrapper_with_train_size_one_is_algorithm_1_on_the_member_set(cancer):
    """Model k of the game is exactly MIPNoiseWrapper(train_size=1.0) fitted on member set k
    with the seed the game gave it: D_train is the game's random half (Izzo Algorithm 1)."""
    from skmip import MIPNoiseWrapper

    X, y = cancer
    wrapper = MIPNoiseWrapper(LogisticRegression(C=0.1), method="moments", eta=0.3, n_subsets=4, train_size=1.0)

    def inspect(model):
        released = np.r_[model.estimator_.coef_.ravel(), model.estimator_.intercept_]
        return model.n_train_, model.random_state, released

    game = play_membership_game(wrapper, X, y, n_models=3, random_state=5, inspect=inspect)
    for k, (n_train, seed, released) in enumerate(game.inspected):
        rows = game.membership[k]
        assert n_train == rows.sum() == 100
        again = clone(wrapper).set_params(random_state=seed, estimator__random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            again.fit(X[rows], y[rows])
        np.testing.assert_array_equal(np.r_[again.estimator_.coef_.ravel(), again.estimator_.intercept_], released)
    assert wrapper.random_state is None


def test_dask_backend_gives_the_sequential_game(iris):
    distributed = pytest.importorskip("distributed")
    from joblib import parallel_config

    X, y = iris
    expected = play_membership_game(LogisticRegression(), X, y, n_models=4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            with distributed.get_task_stream(client) as tasks, parallel_config(backend="dask"):
                got = play_membership_game(LogisticRegression(), X, y, n_models=4, random_state=0, n_jobs=-1)
    assert len(tasks.data) > 0, "the fits did not run on the dask cluster"
    np.testing.assert_array_equal(got.membership, expected.membership)
    np.testing.assert_array_equal(got.signal, expected.signal)
