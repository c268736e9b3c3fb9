"""attack="auto": every attack on one game, the strongest reported, the confidence corrected."""

import warnings

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from skmip.audit.attacks import MembershipAttack
from skmip.audit.attacks.suite import AUTO_ATTACKS, bonferroni_confidence, resolve_attacks
from skmip.audit.metrics import empirical_epsilon, mi_roc_auc
from skmip.audit.scoring import MIAttackScorer, make_mi_scorer


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rows = np.random.default_rng(0).permutation(len(y))[:240]
    return X[rows], y[rows]


class _Coin(MembershipAttack):
    """An attack that ignores the game: seeded noise, AUC 1/2 in expectation."""

    name = "coin"

    def __init__(self, seed=0):
        self.seed = seed

    def score(self, game):
        return np.random.default_rng(self.seed).normal(size=game.membership.shape)


class _Peek(MembershipAttack):
    """A dominant attack for the test: it reads the membership, blurred by seeded noise."""

    name = "peek"

    def __init__(self):
        pass

    def score(self, game):
        return game.membership + np.random.default_rng(1).normal(size=game.membership.shape)


def test_auto_runs_every_applicable_attack_on_one_game(cancer):
    """Each attack's figures are those it gets alone on the same game (same seed, same models)."""
    X, y = cancer
    est = DecisionTreeClassifier(max_depth=6)
    auto = MIAttackScorer(est, n_models=6, random_state=0).fit(X, y)
    assert list(auto.attack_results_) == list(AUTO_ATTACKS)
    for name in ("rmia", "loss"):
        alone = MIAttackScorer(est, attack=name, n_models=6, random_state=0).fit(X, y)
        np.testing.assert_array_equal(alone.membership_, auto.membership_)
        assert alone.roc_auc_ == auto.attack_results_[name]["roc_auc"]
        assert alone.attack_confidence_ == 0.95  # one attack: no correction
    # the reported attack is the strongest by the metric, and its figures are reported
    best = max(auto.attack_results_, key=lambda n: auto.attack_results_[n]["roc_auc"])
    assert auto.best_attack_ == best
    assert auto.roc_auc_ == auto.attack_results_[best]["roc_auc"] == mi_roc_auc(auto.membership_, auto.scores_)


def test_the_strongest_attack_is_picked_whatever_the_order(cancer):
    """One attack clearly dominates (AUC ~0.76 against ~0.5): it is reported, in any order."""
    X, y = cancer
    for attack in (["loss", _Coin(), _Peek()], [_Peek(), _Coin(), "loss"]):
        audit = MIAttackScorer(LogisticRegression(), attack=attack, n_models=4, random_state=0).fit(X, y)
        assert audit.best_attack_ == "_Peek()"
        results = audit.attack_results_
        assert results["_Peek()"]["roc_auc"] > 0.7
        assert abs(results["_Coin(seed=0)"]["roc_auc"] - 0.5) < 0.05 and results["loss"]["roc_auc"] < 0.6
        assert audit.attack_confidence_ == pytest.approx(1 - 0.05 / 3)
        assert audit.tpr_at_fpr_ == results["_Peek()"]["tpr_at_fpr"]
    # by another metric the scorer call returns minus the strongest value
    scorer = make_mi_scorer(["loss", _Coin(), _Peek()], metric="advantage", n_models=4, random_state=0)
    assert scorer(LogisticRegression(), X, y) == pytest.approx(-results["_Peek()"]["advantage"])


def test_confidence_statements_are_bonferroni_corrected(cancer):
    X, y = cancer
    audit = MIAttackScorer(LogisticRegression(C=10), n_models=6, random_state=0).fit(X, y)
    level = bonferroni_confidence(0.95, 5)
    assert audit.attack_confidence_ == pytest.approx(0.99)
    m = audit.membership_
    # every attack's epsilon lower bound is made at the corrected level ...
    best = audit.attack_results_[audit.best_attack_]
    assert best["empirical_epsilon"] == empirical_epsilon(m, audit.scores_, delta=1e-5, confidence=level)
    # ... which is never larger than at the uncorrected one, and the reported one is their max
    assert best["empirical_epsilon"] <= empirical_epsilon(m, audit.scores_, delta=1e-5, confidence=0.95)
    assert audit.empirical_epsilon_ == max(r["empirical_epsilon"] for r in audit.attack_results_.values())


def test_the_best_of_several_null_attacks_keeps_the_confidence():
    """Soundness of the correction: A = 5 attacks with no signal (true epsilon 0 at delta 0).
    The maximum of their lower bounds, each at 1 - 0.05/5, is positive -- a false claim -- in
    at most 5% of the replications (union bound). 200 replications: the count stays below the
    99.9% quantile of Binomial(200, 0.05)."""
    rng = np.random.default_rng(0)
    level = bonferroni_confidence(0.95, 5)
    false_claims = 0
    for _ in range(200):
        member = rng.random(400) < 0.5
        bounds = [empirical_epsilon(member, rng.normal(size=400), delta=0.0, confidence=level) for _ in range(5)]
        false_claims += max(bounds) > 0
    assert false_claims <= stats.binom.ppf(0.999, 200, 0.05)


def test_resolve_attacks_validates_each_and_names_them():
    with pytest.raises(ValueError, match="empty list"):
        resolve_attacks([], None, n_models=8, member_rate=0.5, owner="X")
    with pytest.raises(ValueError, match="listed twice"):
        resolve_attacks(["loss", "loss"], None, n_models=8, member_rate=0.5, owner="X")
    with pytest.raises(ValueError, match="cannot be mixed"):
        resolve_attacks(["auto", "loss"], None, n_models=8, member_rate=0.5, owner="X")
    with pytest.raises(TypeError, match="RMIA"):
        resolve_attacks(["rmia"], Ridge(), n_models=8, member_rate=0.5, owner="X")
    # too few models for LiRA with per-row variances: auto drops what cannot run
    names = resolve_attacks("auto", LogisticRegression(), n_models=2, member_rate=0.5, owner="X")
    assert "loss" in names and "lira" not in names


def test_regressors_are_audited_on_their_residuals():
    """Documented choice: regressors are supported, by LiRA and LOSS on the squared residual
    (RMIA needs a likelihood). A fully grown regression tree interpolates its training rows
    (residual 0), so LOSS finds them; a ridge regression on 10 features barely leaks."""
    X, y = load_diabetes(return_X_y=True)
    tree = MIAttackScorer(DecisionTreeRegressor(), n_models=6, random_state=0).fit(X, y)
    assert list(tree.attack_results_) == ["lira", "lira_offline", "loss"]
    assert tree.roc_auc_ > 0.75
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a well-trained regressor: no training warning
        ridge = MIAttackScorer(Ridge(), n_models=6, random_state=0).fit(X, y)
    assert ridge.roc_auc_ < tree.roc_auc_ and ridge.training_issues_ == []
    with pytest.raises(TypeError, match="RMIA"):
        MIAttackScorer(Ridge(), attack="rmia", n_models=6).fit(X, y)
