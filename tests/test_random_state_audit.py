"""The suite never depends on OS entropy: the audit every test runs in (conftest.py) sees it."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier

from conftest import AUDIT_SEED, audit_verdict, entropy_audit
from skmip import MIPNoiseWrapper


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    return X, (X[:, 0] > 0).astype(int)


def _fit_wrapper(data, random_state):
    X, y = data
    MIPNoiseWrapper(LogisticRegression(), method="moments", n_subsets=4,
                    random_state=random_state).fit(X, y)


@pytest.mark.os_entropy  # the unseeded fit below draws fresh entropy on purpose
def test_an_unseeded_skmip_fit_breaks_the_rule_and_a_seeded_one_does_not(data):
    with entropy_audit() as records:
        _fit_wrapper(data, None)
    assert any("resolve_rng" in r and "test_random_state_audit.py" in r for r in records)
    assert "Seed it" in audit_verdict(records, allowed=False)
    assert audit_verdict(records, allowed=True) is None  # @pytest.mark.os_entropy
    with entropy_audit() as records:
        _fit_wrapper(data, 0)
    assert records == [] and audit_verdict(records, allowed=False) is None


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_scikit_learn_random_state_none_draws_from_the_pinned_global_state(data):
    X, y = data
    with entropy_audit() as records:
        MLPClassifier(hidden_layer_sizes=(3,), max_iter=5).fit(X, y)
    assert records == ["numpy's global RandomState (e.g. a scikit-learn estimator with "
                       "random_state=None)"]
    assert audit_verdict(records, allowed=False) is None  # pinned, so deterministic
    with entropy_audit():
        first = MLPClassifier(hidden_layer_sizes=(3,), max_iter=5).fit(X, y).coefs_[0]
    with entropy_audit():
        again = MLPClassifier(hidden_layer_sizes=(3,), max_iter=5).fit(X, y).coefs_[0]
    np.testing.assert_array_equal(first, again)


def test_documentation_code_gets_a_fixed_seed_instead_of_entropy():
    with entropy_audit(replace_with=AUDIT_SEED):
        a = np.random.default_rng().random(3)
    with entropy_audit(replace_with=AUDIT_SEED):
        b = np.random.default_rng().random(3)
    np.testing.assert_array_equal(a, b)


def test_this_test_runs_inside_the_audit():
    # The autouse fixture pinned the global RandomState to AUDIT_SEED at this test's start.
    np.testing.assert_array_equal(np.random.random(2), np.random.RandomState(AUDIT_SEED).random(2))
