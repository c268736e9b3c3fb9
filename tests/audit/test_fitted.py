"""audit_fitted: a trained model audited without refitting it, reported as MIAttackScorer reports."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from skmip.audit import FittedAudit, audit_fitted
from skmip.audit.attacks.suite import bonferroni_confidence
from skmip.audit.metrics import empirical_epsilon, membership_advantage, mi_roc_auc, tpr_at_fpr
from skmip.promise import Promise


@pytest.fixture(scope="module")
def split():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rows = np.random.default_rng(0).permutation(len(y))
    pool, ref = rows[:300], rows[300:]
    member = np.random.default_rng(1).permutation(300) < 150  # a uniformly random half
    return X[pool], y[pool], member, X[ref], y[ref]


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    rows = np.random.default_rng(0).permutation(len(y))
    pool, ref = rows[:400], rows[400:1200]
    member = np.random.default_rng(1).permutation(400) < 200
    return X[pool] / 16, y[pool], member, X[ref] / 16, y[ref]


class _FitsOnce(ClassifierMixin, BaseEstimator):
    """A logistic regression whose second fit raises: clones fit once, the target never again."""

    def __init__(self, C=10.0):
        self.C = C

    def fit(self, X, y):
        if hasattr(self, "model_"):
            raise AssertionError("the target was refit")
        self.model_ = LogisticRegression(C=self.C, max_iter=1000).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


def test_the_target_is_never_refit_and_the_figures_are_the_scorers(digits):
    X, y, member, Xr, yr = digits
    target = _FitsOnce().fit(X[member], y[member])
    audit = audit_fitted(target, X, y, member, X_reference=Xr, y_reference=yr, n_reference_models=3,
                         random_state=0)
    assert isinstance(audit, FittedAudit) and audit.n_trainings_ == 3
    assert sorted(audit.attack_results_) == ["lira_offline", "loss", "rmia_offline"]
    assert audit.attack_confidence_ == bonferroni_confidence(0.95, 3)
    m, s = audit.membership_, audit.scores_
    assert m.shape == s.shape == (1, 400) and np.array_equal(m[0], member)
    # The point figures are those of the best attack, by the metric functions themselves.
    assert audit.roc_auc_ == mi_roc_auc(m, s) == audit.attack_results_[audit.best_attack_]["roc_auc"]
    assert audit.tpr_at_fpr_ == float(tpr_at_fpr(m, s, 0.01))
    assert audit.advantage_ == membership_advantage(m, s)
    best_eps = empirical_epsilon(m, s, delta=1e-5, confidence=audit.attack_confidence_)
    assert audit.empirical_epsilon_ >= best_eps
    # Without leakage the AUC of 200 members vs 200 non-members has standard deviation
    # sqrt((n1 + n2 + 1) / (12 n1 n2)) = 0.029 (Mann-Whitney); the best of 3 attacks stays
    # below 0.5 + 3.5 sd with probability > 0.999. This model leaks (measured: 0.66).
    sd = np.sqrt(401 / (12 * 200 * 200))
    assert audit.roc_auc_ > 0.5 + 3.5 * sd
    assert audit.bound_ is None and audit.bound_holds_ is None


class _FitsOnceWeighted(_FitsOnce):
    """_FitsOnce whose fit takes sample_weight, so that the references are distilled."""

    def fit(self, X, y, sample_weight=None):
        if hasattr(self, "model_"):
            raise AssertionError("the target was refit")
        self.model_ = LogisticRegression(C=self.C, max_iter=1000).fit(X, y, sample_weight=sample_weight)
        self.classes_ = self.model_.classes_
        return self


def test_distilled_references_never_refit_the_target(digits):
    X, y, member, Xr, yr = digits
    target = _FitsOnceWeighted().fit(X[member], y[member])
    audit = audit_fitted(target, X, y, member, X_reference=Xr, y_reference=yr, n_reference_models=2,
                         random_state=0)
    assert audit.reference_labels_ == "target" and audit.n_trainings_ == 2
    assert sorted(audit.attack_results_) == ["lira_offline", "loss", "rmia_offline"]


def test_a_pipeline_on_dataframes_and_a_chosen_attack(split):
    X, y, member, Xr, yr = split
    cols = [f"f{j}" for j in range(X.shape[1])]
    Xd, Xrd = pd.DataFrame(X, columns=cols), pd.DataFrame(Xr, columns=cols)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=100, max_iter=2000))
    model.fit(Xd[member], y[member])
    audit = audit_fitted(model, Xd, pd.Series(y), member, X_reference=Xrd, y_reference=pd.Series(yr),
                         n_reference_models=1, attack="loss", random_state=0)
    assert list(audit.attack_results_) == ["loss"] and audit.attack_confidence_ == 0.95
    assert 0.0 <= audit.roc_auc_ <= 1.0


class _Overclaiming(ClassifierMixin, BaseEstimator):
    """1-NN, sure of its training rows, that claims 0.02-MIP."""

    def fit(self, X, y):
        self.model_ = KNeighborsClassifier(1).fit(X, y)
        self.classes_ = self.model_.classes_
        self.n_train_ = len(y)
        return self

    def stated_promise(self):
        return Promise.mip(0.02, n_train=self.n_train_)

    def predict_proba(self, X):
        dist, _ = self.model_.kneighbors(X, 1)
        confidence = np.where(dist[:, 0] == 0, 0.99, 0.6)[:, None]
        onehot = self.model_.predict_proba(X)
        return onehot * confidence + (1 - onehot) * (1 - confidence)


def test_a_stated_promise_is_checked_and_an_overclaim_refuted(split):
    X, y, member, Xr, yr = split
    model = _Overclaiming().fit(X[member], y[member])
    audit = audit_fitted(model, X, y, member, X_reference=Xr, y_reference=yr, n_reference_models=2,
                         random_state=0)
    assert audit.bound_ == 0.02 and audit.bound_check_.kind == "mip"
    assert audit.bound_holds_ is False and audit.bound_check_.margin > 0


def test_a_fitted_mip_wrapper_is_checked_against_its_eta(split):
    from skmip import MIPNoiseWrapper

    X, y, member, Xr, yr = split
    wrapper = MIPNoiseWrapper(LogisticRegression(), method="moments", eta=0.1, n_subsets=4, train_size=1.0,
                              random_state=0).fit(X[member], y[member])
    audit = audit_fitted(wrapper, X, y, member, X_reference=Xr, y_reference=yr, n_reference_models=2,
                         random_state=0)
    assert audit.bound_ == 0.1 and audit.bound_holds_ is True


def test_errors_name_the_fix(split):
    X, y, member, Xr, yr = split
    kw = dict(X_reference=Xr, y_reference=yr)
    with pytest.raises(ValueError, match="not fitted"):
        audit_fitted(LogisticRegression(), X, y, member, **kw)
    model = LogisticRegression().fit(X[member], y[member])
    with pytest.raises(ValueError, match="boolean mask of the pool's 300 rows"):
        audit_fitted(model, X, y, member[:10], **kw)
    with pytest.raises(ValueError, match="needs both"):
        audit_fitted(model, X, y, np.ones(300, bool), **kw)
    with pytest.raises(ValueError, match="n_reference_models"):
        audit_fitted(model, X, y, member, n_reference_models=0, **kw)
    with pytest.raises(ValueError, match="y_reference"):
        audit_fitted(model, X, y, member, X_reference=Xr, y_reference=yr[:5])


def test_the_display_plots_a_fitted_audit(split):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from skmip.audit.display import MIAttackDisplay

    X, y, member, Xr, yr = split
    model = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    audit = audit_fitted(model, X, y, member, X_reference=Xr, y_reference=yr, n_reference_models=1,
                         random_state=0)
    display = MIAttackDisplay.from_estimator(audit)
    assert display.roc_auc == pytest.approx(audit.roc_auc_)


def test_references_that_see_the_pool_play_the_game_structure(digits):
    X, y, member, Xr, yr = digits
    target = LogisticRegression(C=10, max_iter=1000).fit(X[member], y[member])
    audit = audit_fitted(target, X, y, member, X_reference=Xr, y_reference=yr, n_reference_models=4,
                         random_state=0, references_see_pool=True)
    # with IN references for every pool row, the online attacks apply as well
    assert {"rmia", "lira"} <= set(audit.attack_results_)
    from skmip.audit.game import play_fitted_game

    game = play_fitted_game(target, X, y, member, Xr, yr, n_reference_models=4, random_state=0,
                            references_see_pool=True)
    refs = game.membership[1:]
    assert (refs[:, :400].sum(axis=1) == 200).all() and not refs[:, 400:].any()
    assert game.population[400:].all() and not game.population[:400].any()


def test_a_fitted_skorch_net(digits):
    pytest.importorskip("torch")
    pytest.importorskip("skorch")
    from skmip.nn import NeuralNetClassifier
    from skmip.nn.modules import MLPModule

    X, y, member, Xr, yr = digits
    net = NeuralNetClassifier(MLPModule, module__n_features=64, module__n_outputs=10, module__hidden=(32,),
                              max_epochs=5, batch_size=32, lr=0.1, random_state=0, verbose=0)
    net.fit(X[member].astype(np.float32), y[member])
    epochs, first_weight = len(net.history), next(net.module_.parameters()).detach().clone()
    audit = audit_fitted(net, X.astype(np.float32), y, member, X_reference=Xr.astype(np.float32),
                         y_reference=yr, n_reference_models=2, random_state=0)
    assert audit.n_trainings_ == 2 and audit.scores_.shape == (1, 400)
    # the net itself was not trained again: same history, same weights
    assert len(net.history) == epochs and (next(net.module_.parameters()) == first_weight).all()


_FITS = []


class _RecordsFits(ClassifierMixin, BaseEstimator):
    """A classifier whose fits are recorded (its clones are discarded by the game)."""

    def fit(self, X, y, sample_weight=None):
        _FITS.append((np.asarray(X), np.asarray(y), sample_weight))
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        p1 = 1 / (1 + np.exp(-np.asarray(X)[:, 0]))
        return np.column_stack([1 - p1, p1])


def test_distilled_references_learn_the_targets_probabilities_on_their_half(split):
    from skmip.audit.game import play_fitted_game

    X, y, member, Xr, yr = split
    target = _RecordsFits().fit(X[member], y[member])
    _FITS.clear()
    game = play_fitted_game(target, X, y, member, Xr, yr, n_reference_models=2, random_state=0,
                            reference_labels="target")
    assert len(_FITS) == 2
    proba = target.predict_proba(Xr)
    for (X_fit, y_fit, w), half in zip(_FITS, game.membership[1:, 300:], strict=True):
        rows = np.flatnonzero(half)
        # every row of the half once per class, weighted by the target's probability of it
        assert np.array_equal(X_fit, np.repeat(Xr[rows], 2, axis=0))
        assert np.array_equal(y_fit, np.tile([0, 1], rows.size))
        assert np.array_equal(w, proba[rows].ravel())


def test_reference_labels_auto_distills_where_it_applies(split):
    from skmip.audit.attacks import get_attack
    from skmip.audit.fitted import _fixed_offline_a

    X, y, member, Xr, yr = split
    kw = dict(X_reference=Xr, y_reference=yr, n_reference_models=2, random_state=0)
    tree = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    assert audit_fitted(tree, X, y, member, **kw).reference_labels_ == "target"
    assert audit_fitted(tree, X, y, member, references_see_pool=True, **kw).reference_labels_ == "true"
    no_weights = _FitsOnce().fit(X[member], y[member])  # fit takes no sample_weight
    assert audit_fitted(no_weights, X, y, member, **kw).reference_labels_ == "true"
    with pytest.raises(ValueError, match="sample_weight"):
        audit_fitted(no_weights, X, y, member, reference_labels="target", **kw)
    with pytest.raises(ValueError, match="references_see_pool=True"):
        audit_fitted(tree, X, y, member, reference_labels="target", references_see_pool=True, **kw)
    with pytest.raises(ValueError, match="reference_labels"):
        audit_fitted(tree, X, y, member, reference_labels="soft", **kw)
    # RMIA offline's a is tuned on a reference as pseudo-target: not with distilled ones
    alias = get_attack("rmia_offline")
    assert _fixed_offline_a(alias).offline_a == 0.0 and alias.offline_a == "auto"
    assert _fixed_offline_a(get_attack("rmia")).offline_a == "auto"


def test_distilled_references_find_a_memorising_tree(digits):
    X, y, member, Xr, yr = digits
    tree = DecisionTreeClassifier(random_state=0).fit(X[member], y[member])
    audit = audit_fitted(tree, X, y, member, X_reference=Xr, y_reference=yr, n_reference_models=2,
                         random_state=0, attack="rmia_offline")
    assert audit.reference_labels_ == "target"
    # 200 members vs 200 non-members: without leakage the AUC has sd 0.029 (Mann-Whitney), so
    # 0.5 + 3.5 sd is crossed with probability < 0.0003. A fully grown tree memorises its rows.
    assert audit.roc_auc_ > 0.5 + 3.5 * np.sqrt(401 / (12 * 200 * 200))
