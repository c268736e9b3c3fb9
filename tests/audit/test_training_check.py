"""No false all-clear: models that did not train are refused before any attack scores them."""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

from skmip.exceptions import AuditWarning, TrainingFailedError
from skmip.audit.game import play_membership_game, progress_line
from skmip.audit.scoring import MIAttackScorer
from skmip.audit.training_check import ModelCheck, check_training, inspect_fitted_model


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return X[:200], y[:200]


class _NaNProba(ClassifierMixin, BaseEstimator):
    """A classifier whose probabilities are NaN (a diverged model)."""

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict_proba(self, X):
        return np.full((len(X), len(self.classes_)), np.nan)


def test_the_issue_case_is_refused_in_skmip_words(cancer):
    """Issue 21: every model of LogisticRegression on X * 1e300 stops at its start and predicts
    1/2 everywhere; the audit used to read AUC 0.5, 'no leakage'."""
    X, y = cancer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scikit-learn's own ConvergenceWarning, passed on
        with pytest.raises(TrainingFailedError, match="did not train") as info:
            MIAttackScorer(LogisticRegression(), attack="lira", n_models=4,
                               random_state=0).fit(X * 1e300, y)
    text = str(info.value)
    assert "4 of 4 models predict the same output for every row" in text
    assert "4 of 4 models did not converge" in text and "StandardScaler" in text
    assert len(info.value.issues) == 2


def test_non_finite_outputs_are_refused(cancer):
    X, y = cancer
    with pytest.raises(TrainingFailedError, match="output NaN or inf"):
        play_membership_game(_NaNProba(), X, y, n_models=2, random_state=0)


def test_non_finite_parameters_are_found_through_the_adapter(cancer):
    X, y = cancer
    model = LogisticRegression(max_iter=5000).fit(X / X.max(0), y)
    proba = model.predict_proba(X / X.max(0))
    assert inspect_fitted_model(model, proba) == ModelCheck()
    model.coef_[0, 3] = np.nan
    assert inspect_fitted_model(model, proba).nonfinite_params == ("LogisticRegression parameters",)


def test_check_training_outcomes():
    ok, const, lazy = ModelCheck(), ModelCheck(constant_output=True), ModelCheck(converged=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_training([ok] * 4, owner="t") == []
        assert check_training([lazy, lazy, ok, ok], owner="t") == []  # half: not most
    with pytest.warns(AuditWarning, match="1 of 4 models predict the same output"):
        assert len(check_training([const, ok, ok, ok], owner="t")) == 1
    with pytest.warns(AuditWarning, match="3 of 4 models did not converge"):
        check_training([lazy, lazy, lazy, ok], owner="t")
    # constant on most models: a warning (heavy privacy noise can do that) ...
    with pytest.warns(AuditWarning, match="3 of 4 models predict the same"):
        check_training([const, const, const, ok], owner="t")
    # ... an error when those models also did not converge: the optimiser never started
    stuck = ModelCheck(constant_output=True, converged=False)
    with pytest.raises(TrainingFailedError, match="3 of 4 models predict the same"):
        check_training([stuck, stuck, stuck, ok], owner="t")
    with pytest.raises(TrainingFailedError, match="NaN or inf in their fitted parameters"):
        check_training([ModelCheck(nonfinite_params=("coef_",)), ok], owner="t")


def test_unconverged_models_warn_and_the_scorer_keeps_the_warning(cancer):
    X, y = cancer
    Xs = X / X.max(0)
    with pytest.warns(AuditWarning, match="4 of 4 models did not converge"):
        audit = MIAttackScorer(LogisticRegression(max_iter=1), attack="loss", n_models=4,
                               random_state=0).fit(Xs, y)
    assert audit.training_issues_ == ["4 of 4 models did not converge (ConvergenceWarning)"]


def test_verbose_prints_each_model_with_the_time_left(cancer, capsys):
    X, y = cancer
    Xs = X / X.max(0)
    play_membership_game(LogisticRegression(), Xs, y, n_models=3, random_state=0, verbose=1)
    out = capsys.readouterr().out.splitlines()
    done = [line for line in out if " done, " in line]
    assert [line.split()[2] for line in done] == ["1/3", "2/3", "3/3"]
    assert "s left" in done[0] and "s left" not in done[-1]
    assert progress_line("model", 1, 4, 2.0) == "model 1/4 done, 2.0 s elapsed, about 6 s left"
