"""SubsampledDPClassifier: Poisson sampling, budget from a target bound, hygiene, sklearn API."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip.bounds import epsilon_for_positive_accuracy, negative_accuracy_bound, positive_accuracy_bound
from skmip.defend.dp_logistic import DPLogisticRegression
from skmip.exceptions import PrivacyWarning
from skmip.defend.subsampled import SubsampledDPClassifier
from skmip.promise import stated_promise


class _SpyDP(ClassifierMixin, BaseEstimator):
    """A test double with (epsilon, delta) parameters that records the rows it was fit on.

    Recording rows is exactly what a real estimator must not do; here it lets the test see
    the subsample. Predicts the majority class.
    """

    def __init__(self, epsilon=1.0, delta=0.0, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state

    def fit(self, X, y):
        self.seen_ids_ = np.asarray(X)[:, 0].astype(int)
        self.classes_, counts = np.unique(y, return_counts=True)
        self.majority_ = self.classes_[np.argmax(counts)]
        return self

    def predict(self, X):
        return np.full(len(X), self.majority_)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    # Fitted on the whole pool, which Theorem 3.3 conditions on: allowed (see class Notes).
    return StandardScaler().fit_transform(X), y


@parametrize_with_checks([SubsampledDPClassifier(random_state=0)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        check(estimator)


def test_rows_are_kept_independently_with_probability_T():
    # Lemma 3.2 needs Poisson (Bernoulli per row) sampling, not a fixed-size subset.
    n, T, fits = 40, 0.3, 400
    X = np.column_stack([np.arange(n), np.zeros(n)])
    y = np.zeros(n, int)  # one label, so that no subsample can miss a class
    counts = np.zeros(n)
    sizes = []
    rng = np.random.default_rng(0)
    for _ in range(fits):
        clf = SubsampledDPClassifier(_SpyDP(), train_size=T, epsilon=1.0, random_state=rng).fit(X, y)
        counts[clf.estimator_.seen_ids_] += 1
        sizes.append(clf.n_train_)
        assert clf.n_train_ == len(clf.estimator_.seen_ids_)
    # Each row's inclusion count ~ Binomial(fits, T): chi-square goodness of fit of the counts.
    expected = fits * T
    chi2 = np.sum((counts - expected) ** 2 / (expected * (1 - T)))
    assert stats.chi2(df=n).sf(chi2) > 1e-3
    # |D| ~ Binomial(n, T): its variance is n T (1 - T) (a fixed-size draw would have 0).
    var = np.var(sizes, ddof=1)
    lo, hi = stats.chi2(fits - 1).ppf([5e-4, 1 - 5e-4]) / (fits - 1) * n * T * (1 - T)
    assert lo < var < hi


def test_target_bound_sets_epsilon_and_the_bound_equals_the_target(cancer):
    X, y = cancer
    for T in (0.1, 0.3, 0.5):
        clf = SubsampledDPClassifier(target_bound=0.881, train_size=T, random_state=0).fit(X, y)
        # DPLogisticRegression is pure epsilon-DP: delta_ = 0 and the bound is exact.
        assert clf.delta_ == 0.0
        assert clf.epsilon_ == pytest.approx(epsilon_for_positive_accuracy(0.881, sampling_rate=T))
        assert clf.positive_accuracy_bound_ == pytest.approx(0.881, rel=1e-12)
        assert clf.estimator_.epsilon == pytest.approx(clf.epsilon_)
        assert clf.negative_accuracy_bound_ == pytest.approx(negative_accuracy_bound(clf.epsilon_, sampling_rate=T))
        assert clf.estimator_.epsilon_per_model_ == pytest.approx(clf.epsilon_)


def test_delta_is_passed_to_an_approximate_dp_learner_and_enters_the_bound():
    X = np.column_stack([np.arange(200), np.zeros(200)])
    y = np.arange(200) % 2
    clf = SubsampledDPClassifier(_SpyDP(), train_size=0.5, target_bound=0.881, delta=1e-5,
                                 min_tpr=0.01, random_state=0).fit(X, y)
    assert clf.delta_ == 1e-5 and clf.estimator_.delta == 1e-5
    expected = epsilon_for_positive_accuracy(0.881, sampling_rate=0.5, delta=1e-5, min_tpr=0.01)
    assert clf.epsilon_ == pytest.approx(expected)
    assert clf.positive_accuracy_bound_ == pytest.approx(0.881)
    # Fixed epsilon: the bound is Theorem 3.3 at (eps, delta, min_tpr), corrected delta-term.
    clf = SubsampledDPClassifier(_SpyDP(), train_size=0.5, epsilon=3.0, random_state=0).fit(X, y)
    assert clf.positive_accuracy_bound_ == pytest.approx(
        positive_accuracy_bound(3.0, sampling_rate=0.5, delta=1e-5, min_tpr=0.01)
    )
    assert round(clf.positive_accuracy_bound_, 3) == 0.953  # Section 4.3


def test_the_inner_estimators_own_epsilon_is_used_when_none_is_given(cancer):
    X, y = cancer
    clf = SubsampledDPClassifier(DPLogisticRegression(epsilon=0.7), random_state=0).fit(X, y)
    assert clf.epsilon_ == 0.7
    assert clf.positive_accuracy_bound_ == pytest.approx(positive_accuracy_bound(0.7, sampling_rate=0.5))


def test_no_record_of_kept_rows_and_the_pool_label_set_reaches_the_inner_model(cancer):
    X, y = cancer
    clf = SubsampledDPClassifier(train_size=0.2, epsilon=1.0, random_state=0).fit(X, y)
    for obj in (clf, clf.estimator_):
        for name, value in vars(obj).items():
            arr = np.asarray(value) if isinstance(value, (np.ndarray, list)) else None
            assert arr is None or arr.ndim == 0 or arr.shape[0] not in (len(y), clf.n_train_), name
    np.testing.assert_array_equal(clf.estimator_.classes, [0, 1])
    np.testing.assert_array_equal(clf.classes_, [0, 1])


def test_missing_class_without_a_classes_parameter_is_an_error():
    X = np.column_stack([np.arange(30), np.zeros(30)])
    y = np.zeros(30, int)
    y[0] = 1  # one rare label: a subsample will often miss it
    with pytest.raises(ValueError, match="misses class"):
        for seed in range(20):
            SubsampledDPClassifier(_SpyDP(), train_size=0.2, epsilon=1.0, random_state=seed).fit(X, y)


def test_errors_are_clear_and_leave_the_earlier_fit_intact(cancer):
    X, y = cancer
    clf = SubsampledDPClassifier(train_size=0.3, target_bound=0.881, random_state=0).fit(X, y)
    before = {k: v for k, v in vars(clf).items() if k.endswith("_")}
    clf.set_params(train_size=0.9, target_bound=0.731)  # eps = 0 gives 0.9 > 0.731
    with pytest.raises(ValueError, match="even epsilon = 0 only guarantees 0.9"):
        clf.fit(X, y)
    after = {k: v for k, v in vars(clf).items() if k.endswith("_")}
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)
    with pytest.raises(ValueError, match="not both"):
        SubsampledDPClassifier(epsilon=1.0, target_bound=0.9).fit(X, y)
    with pytest.raises(TypeError, match="must be DP-capable.*DPLogisticRegression"):
        SubsampledDPClassifier(LogisticRegression()).fit(X, y)
    with pytest.raises(TypeError, match="A Pipeline does not qualify"):
        SubsampledDPClassifier(make_pipeline(StandardScaler(), DPLogisticRegression())).fit(X, y)
    with pytest.raises(ValueError, match="train_size must be in"):
        SubsampledDPClassifier(train_size=0.0).fit(X, y)
    with pytest.raises(ValueError, match="target_bound must be in"):
        SubsampledDPClassifier(target_bound=1.0).fit(X, y)


@pytest.mark.os_entropy
def test_randomness_fixed_seed_reproduces_and_warns_fresh_entropy_does_not(cancer):
    X, y = cancer
    with pytest.warns(PrivacyWarning, match="fixes the privacy noise"):
        a = SubsampledDPClassifier(epsilon=1.0, random_state=7).fit(X, y)
    b = SubsampledDPClassifier(epsilon=1.0, random_state=7).fit(X, y)
    np.testing.assert_array_equal(a.estimator_.coef_, b.estimator_.coef_)
    assert a.estimator_.random_state == b.estimator_.random_state is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        c = SubsampledDPClassifier(epsilon=1.0).fit(X, y)
        d = SubsampledDPClassifier(epsilon=1.0).fit(X, y)
    assert c.estimator_.random_state is None  # the inner noise also comes from fresh entropy
    assert not np.array_equal(c.estimator_.coef_, d.estimator_.coef_)


def test_delegation_follows_the_inner_estimator(cancer):
    X, y = cancer
    clf = SubsampledDPClassifier(epsilon=1.0, random_state=0)
    assert hasattr(clf, "predict_proba") and hasattr(clf, "decision_function")
    spy = SubsampledDPClassifier(_SpyDP(), epsilon=1.0)
    assert not hasattr(spy, "predict_proba") and hasattr(spy, "predict")
    clf.fit(X, y)
    np.testing.assert_allclose(clf.predict_proba(X), clf.estimator_.predict_proba(X))
    assert clf.score(X, y) == pytest.approx(np.mean(clf.predict(X) == y))


def test_grid_search_over_train_size_at_a_fixed_bound(cancer):
    # Thudi Figure 5 as a one-liner: every candidate has the same MI bound; the search picks
    # the sampling rate whose (sampling rate, epsilon) pair gives the best accuracy.
    X, y = cancer
    rates = [0.05, 0.1, 0.3, 0.5, 0.7]
    search = GridSearchCV(
        SubsampledDPClassifier(target_bound=0.881, random_state=0), {"train_size": rates}, cv=4
    ).fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    best = search.best_estimator_
    assert best.train_size == rates[int(np.argmax(scores))]
    assert best.positive_accuracy_bound_ == pytest.approx(0.881, rel=1e-12)
    assert best.epsilon_ == pytest.approx(epsilon_for_positive_accuracy(0.881, sampling_rate=best.train_size))
    # The trade-off is real on this data: neither extreme of the grid is the best choice.
    assert best.train_size not in (rates[0], rates[-1])


def test_sampling_rate_is_a_deprecated_alias_of_train_size(cancer):
    X, y = cancer
    old = SubsampledDPClassifier(_SpyDP(), sampling_rate=0.3, epsilon=1.0, random_state=0)
    assert clone(old).get_params()["sampling_rate"] == 0.3  # clone and get_params keep it
    with pytest.warns(FutureWarning, match="sampling_rate was renamed train_size"):
        old.fit(X, y)
    new = SubsampledDPClassifier(_SpyDP(), train_size=0.3, epsilon=1.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the new name does not warn
        new.fit(X, y)
    # The alias is used when set: the same subsample and the same bound as train_size=0.3.
    np.testing.assert_array_equal(old.estimator_.seen_ids_, new.estimator_.seen_ids_)
    assert old.positive_accuracy_bound_ == new.positive_accuracy_bound_
    assert old.stated_promise() == new.stated_promise()


def test_the_stated_promise_is_the_fitted_bound(cancer):
    X, y = cancer
    clf = SubsampledDPClassifier(_SpyDP(), train_size=0.4, epsilon=2.0, random_state=0)
    with pytest.raises(NotFittedError):
        clf.stated_promise()
    clf.fit(X, y)
    promise = stated_promise(clf)
    assert promise.kind == "positive_accuracy" and promise.value == clf.positive_accuracy_bound_
    assert promise.details == {"n_train": clf.n_train_, "epsilon": 2.0, "delta": clf.delta_,
                               "sampling_rate": 0.4, "min_tpr": 0.01}


def test_cross_validation_with_the_default_estimator(cancer):
    X, y = cancer
    scores = cross_val_score(SubsampledDPClassifier(epsilon=5.0, random_state=0), X, y, cv=3)
    assert scores.mean() > 0.85


def test_lira_audit_respects_the_stated_bound(cancer):
    # Issue item 4 in miniature (the full grid is benchmarks/bench_subsampling.py): online LiRA
    # against the DP learner on Poisson subsamples -- game membership at rate T is exactly the
    # subsample SubsampledDPClassifier draws -- must not refute Theorem 3.3 at 95% confidence.
    game_mod = pytest.importorskip("skmip.audit.game")
    lira = pytest.importorskip("skmip.audit.attacks.lira")
    metrics = pytest.importorskip("skmip.audit.metrics")
    X, y = cancer
    for T, eps in ((0.3, 2.0), (0.5, 1.0)):
        learner = DPLogisticRegression(eps, data_norm=5.0, classes=[0, 1])
        game = game_mod.play_membership_game(learner, X, y, n_models=24, member_rate=T,
                                             sampling="bernoulli", random_state=1)
        scores = lira.lira_scores(game.signal, game.membership)
        bound = SubsampledDPClassifier(epsilon=eps, train_size=T, random_state=0).fit(X, y).positive_accuracy_bound_
        assert bound < 0.8  # an informative bound, not the trivial 1
        check = metrics.check_positive_accuracy_bound(game.membership, scores, bound)
        assert check.holds, check


@pytest.mark.parametrize("make", [lambda: SubsampledDPClassifier(DPLogisticRegression(), epsilon=1.0),
                                  lambda: DPLogisticRegression()])
def test_sample_weight_is_refused_saying_why(make):
    # Issue 31: Python's TypeError while MIPNoiseWrapper uses weights. A weight scales a row's
    # influence, so the DP noise (calibrated for unit weights) would not cover it: refused in
    # words, and the signature does not claim the parameter (boosting and bagging read it).
    from sklearn.utils.validation import has_fit_parameter

    X = np.random.default_rng(0).normal(size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    est = make()
    with pytest.raises(ValueError, match=r"sample_weight is not supported: .* sensitivity"):
        est.fit(X, y, sample_weight=np.ones(40))
    with pytest.raises(TypeError, match="unexpected keyword argument 'weights'"):
        est.fit(X, y, weights=np.ones(40))
    assert not has_fit_parameter(est, "sample_weight")
