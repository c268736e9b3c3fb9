"""``train_size=1.0`` (the data passed to fit already is D_train) states no Definition-1 promise.

Definition 1 fixes D and randomises only D_train; whatever an estimator computes from D alone is
outside the attacker's signal. With ``train_size=1.0`` D is unknown and every such quantity is
computed from D_train itself, so no theorem covers it. The marginal synthesizer's category lists
make this a plain leak, reproduced here; every estimator with the option then states no promise
(``mip_bound_ is None``, a PrivacyWarning saying why, ``target_eta_`` for audits), while
``train_size < 1`` keeps its promise.
"""

from __future__ import annotations

import re
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skmip import MIPGaussianSynthesizer, MIPMarginalSynthesizer, MIPNoiseWrapper, MIPNoiseWrapperCV
from skmip.bounds import mip_accuracy_bound, mip_prior, mip_promise
from skmip.exceptions import NO_PROMISE_MESSAGE, PrivacyWarning

NO_PROMISE = re.escape(NO_PROMISE_MESSAGE)


def _population(n=60, n_unique=6, seed=0):
    """Categorical records: column 0 is common values except ``n_unique`` records whose value
    appears once in the population (a rare diagnosis, an outlying postcode)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, 3))
    unique_rows = np.arange(n_unique)
    X[unique_rows, 0] = 100 + unique_rows
    return X, unique_rows


def _categories_attack(synth, X, rows):
    """Guess 'member' exactly when the record's column-0 value is among the released categories."""
    return np.isin(X[rows, 0], synth.categories_[0])


def test_categories_leak_membership_with_train_size_one_and_no_promise_is_stated():
    X, unique_rows = _population()
    n = len(X)
    rng = np.random.default_rng(1)
    correct = total = 0
    for trial in range(20):
        members = np.zeros(n, dtype=bool)
        members[rng.choice(n, size=n // 2, replace=False)] = True
        with pytest.warns(PrivacyWarning, match=NO_PROMISE):
            synth = MIPMarginalSynthesizer(eta=0.1, train_size=1.0, random_state=trial).fit(X[members])
        guess = _categories_attack(synth, X, unique_rows)
        correct += int(np.sum(guess == members[unique_rows]))
        total += unique_rows.size
        # The mode no longer prints a promise it cannot keep; the calibration target remains.
        assert synth.mip_bound_ is None and synth.target_eta_ == 0.1
    # The attack is always right: accuracy 1.0, where "eta = 0.1" would have meant <= 0.6.
    assert correct == total == 120
    assert correct / total > mip_accuracy_bound(0.1)


def test_with_the_whole_dataset_the_categories_carry_no_membership_signal():
    """train_size < 1: categories_ is np.unique of D, the same for every D_train, so the same
    attack cannot beat the prior (its guess does not depend on the draw)."""
    X, unique_rows = _population()
    cats = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # no no-promise warning in this mode
        warnings.filterwarnings("ignore", message=".*fixes the privacy noise", category=PrivacyWarning)
        for seed in range(5):
            synth = MIPMarginalSynthesizer(eta=0.1, train_size=0.5, random_state=seed).fit(X)
            assert synth.mip_bound_ == 0.1 == synth.target_eta_
            cats.append(synth.categories_[0])
            assert _categories_attack(synth, X, unique_rows).all()  # every unique value is listed
    for c in cats[1:]:
        np.testing.assert_array_equal(c, cats[0])


def _toy_classification(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


FAST_WRAPPER = dict(method="moments", n_subsets=4)


@pytest.mark.parametrize("make, data", [
    (lambda ts: MIPNoiseWrapper(LogisticRegression(), eta=0.3, train_size=ts, random_state=0, **FAST_WRAPPER),
     "xy"),
    (lambda ts: MIPNoiseWrapperCV(LogisticRegression(), etas=[0.3, 0.4], cv=2, train_size=ts, random_state=0,
                                  **FAST_WRAPPER), "xy"),
    (lambda ts: MIPGaussianSynthesizer(eta=0.3, train_size=ts, random_state=0), "x"),
    (lambda ts: MIPMarginalSynthesizer(eta=0.3, train_size=ts, random_state=0), "cat"),
], ids=["MIPNoiseWrapper", "MIPNoiseWrapperCV", "MIPGaussianSynthesizer", "MIPMarginalSynthesizer"])
def test_every_estimator_with_the_option_states_no_promise_on_a_given_subset(make, data):
    X, y = _toy_classification()
    args = {"xy": (X, y), "x": (X,), "cat": (_population()[0],)}[data]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        given = make(1.0).fit(*args)
    no_promise = [w for w in caught if issubclass(w.category, PrivacyWarning)
                  and NO_PROMISE_MESSAGE in str(w.message)]
    assert len(no_promise) == 1  # once per fit, under the class's own name
    assert str(no_promise[0].message).startswith(type(given).__name__ + ":")
    assert "train_size < 1" in str(no_promise[0].message)  # the fix is named
    assert given.mip_bound_ is None
    assert given.target_eta_ in (0.3, 0.4)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drawn = make(0.5).fit(*args)
    assert not any(NO_PROMISE_MESSAGE in str(w.message) for w in caught)
    assert drawn.mip_bound_ == drawn.target_eta_ in (0.3, 0.4)


# ----------------------------------------------------------------------------- the promise's wording
def test_the_prior_of_an_odd_dataset_exceeds_one_half():
    """n = 9, k = round(9/2) = 4 (what train_size=0.5 draws): a release that reveals nothing
    leaves the Bayes attacker the prior, 5/9 = 0.556 > 1/2 + eta for eta < 0.056. Definition
    1's promise max(k/n, 1-k/n) + eta covers it; '1/2 + eta' does not."""
    n, k = 9, int(round(0.5 * 9))
    assert k == 4
    # Exact Bayes accuracy of the best attacker against a constant release: always guess
    # 'non-member', right with probability (n - k)/n for every record.
    bayes = (n - k) / n
    eta = 0.002
    assert bayes > 0.5 + eta
    assert mip_prior(k, n) == pytest.approx(bayes)
    assert bayes <= mip_accuracy_bound(eta, train_fraction=k / n)
    assert mip_promise(eta, k, n) == (
        "accuracy <= max(k/n, 1-k/n) + eta = 0.556 + 0.002 = 0.558 (k = 4 of n = 9)"
    )


@pytest.mark.parametrize("bad", [(0, 9), (10, 9), (4.5, 9), (True, 9)])
def test_mip_prior_rejects_sizes_that_are_not_a_subset(bad):
    with pytest.raises(ValueError, match="1 <= n_train <= n_samples"):
        mip_prior(*bad)


def test_the_cli_promise_column_uses_the_real_k_and_n():
    from skmip.app import audit_plan

    spec = audit_plan.estimator_from_name("logreg")
    options = SimpleNamespace(eta=[0.3], mip_method="auto", n_rounds=60, n_subsets=16, bound=0.881,
                              sampling_rate=0.5, mu=1.0, epsilon=2.0)
    rows, _ = audit_plan.plan_rows([(spec, ["mip"])], options, 2, 2, 9)
    (mip,) = [r for r in rows if r.key == "mip"]
    assert "accuracy <= max(k/n, 1-k/n) + eta = 0.556 + 0.3 = 0.856 (k = 4 of n = 9)" in mip.promise
    # After the fit the column is rebuilt from the fitted model's own k.
    promise, eta, promised = mip.fitted_promise(SimpleNamespace(mip_bound_=0.3, n_train_=5))
    assert "= 0.556 + 0.3 = 0.856 (k = 5 of n = 9)" in promise and eta == 0.3
    assert promised == pytest.approx(0.01 + 0.6)
