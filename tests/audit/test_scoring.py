"""MIAttackScorer: the audit as a meta-estimator and as a scorer, stated bounds, real data."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip.audit.attacks import get_attack
from skmip.bounds import positive_accuracy_bound
from skmip.audit.metrics import mi_roc_auc, tpr_at_fpr
from skmip.audit.scoring import MIAttackScorer, StatedBound, make_mi_scorer
from skmip.promise import Promise, stated_promise


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rows = np.random.default_rng(0).permutation(len(y))[:240]
    return X[rows], y[rows]


@pytest.fixture(scope="module")
def digits400():
    X, y = load_digits(return_X_y=True)
    rows = np.random.default_rng(0).permutation(len(y))[:400]
    return X[rows] / 16.0, y[rows]


class _Overclaiming(ClassifierMixin, BaseEstimator):
    """A 1-nearest-neighbour classifier that is sure of its training rows, claiming privacy."""

    def __init__(self, claim="mip", sampling_rate=1.0, min_tpr=0.01):
        self.claim = claim
        self.sampling_rate = sampling_rate
        self.min_tpr = min_tpr

    def fit(self, X, y):
        self.model_ = KNeighborsClassifier(1).fit(X, y)
        self.classes_ = self.model_.classes_
        self.n_train_ = len(y)
        if self.claim == "mip":
            self.mip_bound_ = 0.02
        else:
            self.epsilon_, self.delta_ = 0.1, 0.0
            self.positive_accuracy_bound_ = float(positive_accuracy_bound(0.1, sampling_rate=self.sampling_rate))
        return self

    def stated_promise(self):
        # A defence written outside skmip is audited through the contract of skmip.promise.
        if self.claim == "mip":
            return Promise.mip(self.mip_bound_, n_train=self.n_train_)
        return Promise.positive_accuracy(
            self.positive_accuracy_bound_, epsilon=self.epsilon_, delta=self.delta_,
            sampling_rate=self.sampling_rate, min_tpr=self.min_tpr, n_train=self.n_train_,
        )

    def predict_proba(self, X):
        # 0.99 on the neighbour's class for a training row (distance 0), 0.6 otherwise
        dist, _ = self.model_.kneighbors(X, 1)
        confidence = np.where(dist[:, 0] == 0, 0.99, 0.6)[:, None]
        onehot = self.model_.predict_proba(X)
        return onehot * confidence + (1 - onehot) * (1 - confidence)


def test_fit_sets_every_documented_attribute(cancer):
    X, y = cancer
    audit = MIAttackScorer(LogisticRegression(C=10), n_models=8, random_state=0).fit(X, y)
    assert audit.scores_.shape == audit.membership_.shape == (8, len(y))
    assert audit.membership_.dtype == bool
    for name in ("roc_auc_", "tpr_at_fpr_", "advantage_", "positive_accuracy_", "empirical_epsilon_"):
        assert isinstance(getattr(audit, name), float), name
    assert 0 <= audit.tpr_at_fpr_ <= 1 and 0 <= audit.advantage_ <= 1
    assert audit.roc_auc_ == pytest.approx(mi_roc_auc(audit.membership_, audit.scores_))
    assert audit.bound_ is None and audit.bound_holds_ is None and audit.bound_check_ is None
    # attack="auto" (the default): every attack that applies, the strongest reported
    assert list(audit.attack_results_) == ["rmia", "rmia_offline", "lira", "lira_offline", "loss"]
    best = audit.best_attack_
    assert audit.roc_auc_ == audit.attack_results_[best]["roc_auc"] == max(
        r["roc_auc"] for r in audit.attack_results_.values())
    assert audit.attack_ == get_attack(best)
    assert audit.empirical_epsilon_ == max(r["empirical_epsilon"] for r in audit.attack_results_.values())
    assert audit.attack_confidence_ == pytest.approx(1 - 0.05 / 5)
    assert audit.training_issues_ == []


def test_scorer_call_is_the_negated_metric_of_the_same_game(cancer):
    X, y = cancer
    kwargs = dict(attack="loss", n_models=4, random_state=3)
    fitted = MIAttackScorer(LogisticRegression(), **kwargs).fit(X, y)
    for metric, attr in [("auc", "roc_auc_"), ("neg_advantage", "advantage_"),
                         ("tpr_at_fpr", "tpr_at_fpr_"), ("positive_accuracy", "positive_accuracy_"),
                         ("empirical_epsilon", "empirical_epsilon_")]:
        value = make_mi_scorer(metric=metric, **kwargs)(LogisticRegression(), X, y)
        assert value == pytest.approx(-getattr(fitted, attr)), metric


def test_scorer_clones_a_fitted_estimator_and_leaves_it_alone(cancer):
    X, y = cancer
    est = LogisticRegression().fit(X, y)
    coef = est.coef_.copy()
    make_mi_scorer("loss", n_models=3, random_state=0)(est, X, y)
    np.testing.assert_array_equal(est.coef_, coef)


def test_real_data_lira_online_beats_loss_at_one_percent_fpr(digits400):
    """Carlini et al.'s headline on a bundled dataset: against an overfitting model (weakly
    regularised multinomial logistic regression, 64 features, 10 classes, 200 training rows)
    online LiRA with 16 models finds members at 1% FPR where LOSS finds almost none."""
    X, y = digits400
    model = LogisticRegression(C=10, max_iter=1000)
    lira = MIAttackScorer(model, attack="lira", n_models=16, random_state=0).fit(X, y)
    loss = MIAttackScorer(model, attack="loss", n_models=16, random_state=0).fit(X, y)
    np.testing.assert_array_equal(lira.membership_, loss.membership_)  # one game, two attacks
    t_lira = tpr_at_fpr(lira.membership_, lira.scores_, 0.01)
    t_loss = tpr_at_fpr(loss.membership_, loss.scores_, 0.01)
    # 3200 member trials: a TPR of 0.05 is 160 of them; LOSS is at the 1% of chance.
    assert t_lira > 0.05 > 0.02 > t_loss
    assert lira.roc_auc_ > loss.roc_auc_


def test_mip_wrapper_states_its_bound_and_the_audit_checks_it(cancer):
    from skmip import MIPNoiseWrapper

    X, y = cancer
    wrapper = MIPNoiseWrapper(LogisticRegression(), method="moments", eta=0.1, n_subsets=4, train_size=1.0)
    audit = MIAttackScorer(wrapper, attack="lira", n_models=6, random_state=0).fit(X, y)
    assert audit.bound_ == 0.1
    assert audit.bound_holds_ is True
    assert audit.bound_check_.kind == "mip" and audit.bound_check_.margin < 0
    assert audit.advantage_ <= 2 * 0.1 + 0.1  # far inside: the MIP noise is large


def test_mip_audit_warns_when_the_game_is_not_definition_1(cancer):
    from skmip import MIPNoiseWrapper

    X, y = cancer
    sub = MIPNoiseWrapper(LogisticRegression(), method="moments", eta=0.2, n_subsets=4, train_size=0.5)
    with pytest.warns(UserWarning, match="train_size=1.0"):
        MIAttackScorer(sub, attack="loss", n_models=3, random_state=0).fit(X, y)
    full = MIPNoiseWrapper(LogisticRegression(), method="moments", eta=0.2, n_subsets=4, train_size=1.0)
    with pytest.warns(UserWarning, match="member_rate=0.5"):
        audit = MIAttackScorer(full, attack="loss", n_models=3, member_rate=0.4, random_state=0).fit(X, y)
    assert audit.bound_ == 0.2 and audit.bound_holds_ is None


def test_an_overclaimed_mip_bound_is_refuted(cancer):
    X, y = cancer
    audit = MIAttackScorer(_Overclaiming("mip"), attack="loss", n_models=4, random_state=0).fit(X, y)
    assert audit.bound_ == 0.02
    assert audit.bound_holds_ is False and audit.bound_check_.margin > 0


def test_positive_accuracy_bound_is_translated_to_the_game(cancer):
    X, y = cancer
    audit = MIAttackScorer(_Overclaiming("pa"), attack="loss", n_models=4, sampling="bernoulli",
                           random_state=0).fit(X, y)
    # T = 1: the member set is the training set, eps' = eps = 0.1, prior 0.5.
    assert audit.bound_ == pytest.approx(1 / (1 + np.exp(-0.1)))
    assert audit.bound_holds_ is False


def test_subsampled_dp_classifier_bound_holds(cancer):
    from skmip.defend.dp_logistic import DPLogisticRegression
    from skmip.defend.subsampled import SubsampledDPClassifier

    X, y = cancer
    clf = SubsampledDPClassifier(DPLogisticRegression(data_norm=5.0), train_size=0.5, epsilon=1.0)
    audit = MIAttackScorer(clf, attack="lira", n_models=8, sampling="bernoulli", random_state=0).fit(X, y)
    eps_game = np.log1p(0.5 * np.expm1(1.0))  # amplification by Poisson subsampling at T = 0.5
    assert audit.bound_ == pytest.approx(positive_accuracy_bound(eps_game, sampling_rate=0.5))
    assert audit.bound_holds_ is True


def test_the_scorer_reads_the_promise_through_stated_promise_only():
    class AttributesOnly:
        mip_bound_ = 0.02  # no stated_promise(): the audit does not sniff attributes

    assert stated_promise(AttributesOnly()) is None
    est = _Overclaiming("mip").fit(np.eye(4), [0, 1, 0, 1])
    assert stated_promise(est) == StatedBound("mip", 0.02, {"n_train": 4, "promised": True})
    assert StatedBound is Promise  # the 0.1 name


def test_gridsearch_reads_accuracy_and_mi_columns(cancer):
    from skmip import MIPNoiseWrapper

    X, y = cancer
    scorer = make_mi_scorer("lira_offline", n_models=4, random_state=0)
    search = GridSearchCV(
        MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4, random_state=0), {"eta": [0.1, 0.4]},
        scoring={"accuracy": "accuracy", "mi": scorer}, refit="accuracy", cv=2,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    mi = search.cv_results_["mean_test_mi"]
    acc = search.cv_results_["mean_test_accuracy"]
    assert mi.shape == acc.shape == (2,)
    assert np.all((mi <= -0.3) & (mi >= -1.0))  # negated AUCs
    assert hasattr(search, "best_estimator_")


def test_errors_name_the_fix(cancer):
    X, y = cancer
    with pytest.raises(ValueError, match="estimator is None"):
        MIAttackScorer().fit(X, y)
    with pytest.raises(TypeError, match="predict_proba"):
        MIAttackScorer(LinearSVC()).fit(X, y)
    with pytest.raises(ValueError, match="n_models >= 5"):
        MIAttackScorer(LogisticRegression(), attack="lira_local", n_models=4).fit(X, y)
    with pytest.raises(ValueError, match="metric must be one of"):
        MIAttackScorer(LogisticRegression(), metric="accuracy").fit(X, y)
    with pytest.raises(ValueError, match="unknown attack"):
        MIAttackScorer(LogisticRegression(), attack="shokri").fit(X, y)
    y3 = y.copy()
    y3[0] = 2  # a class with one row: some member set misses it
    with pytest.raises(ValueError, match="has no row of class"):
        MIAttackScorer(LogisticRegression(), n_models=8, random_state=0).fit(X, y3)


def test_verbose_reports_progress(cancer, capsys):
    X, y = cancer
    MIAttackScorer(LogisticRegression(), attack="loss", n_models=2, verbose=1, random_state=0).fit(X, y)
    out = capsys.readouterr().out
    assert "membership game: 2 models" in out and "fitting 2 models" in out


def test_scorer_is_a_well_behaved_estimator(cancer):
    X, y = cancer
    scorer = make_mi_scorer("rmia", metric="neg_tpr_at_fpr", n_models=5)
    assert repr(scorer) == "MIAttackScorer(attack='rmia', metric='neg_tpr_at_fpr', n_models=5)"
    assert scorer.name == "neg_mi_tpr_at_fpr"
    assert clone(scorer).get_params() == scorer.get_params()
    fitted = MIAttackScorer(LogisticRegression(), attack="loss", n_models=2, random_state=0).fit(X, y)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.scores_, fitted.scores_)
    # refit replaces every fitted attribute
    fitted.set_params(n_models=3).fit(X, y)
    assert fitted.scores_.shape[0] == 3
    assert fitted.n_features_in_ == X.shape[1]


@parametrize_with_checks([MIAttackScorer(LogisticRegression(), attack="loss", n_models=3, random_state=0)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence warnings on the checks' toy data
        check(estimator)
