"""One-run epsilon lower bounds (issue 30, item 2): validity on mechanisms of known epsilon, the
guess counting (one- and two-sided), the end-to-end audit in one fit."""

import numpy as np
import pytest
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression

from skmip.audit import one_run_audit, one_run_epsilon
from skmip.audit.one_run import guess_grid, right_guess_range, stated_epsilon
from skmip.bounds.gdp import gdp_to_dp
from skmip.bounds.one_run import fdp_refutes, one_run_epsilon_bound, steinke_p_value

DELTA = 1e-5
RUNS = 20
# Each run's bound exceeds the true epsilon with probability <= 5%; 6 or more of 20 such
# runs happen with probability P(Binomial(20, 0.05) >= 6) < 4e-4.
MAX_MISSES = 5
assert stats.binom.sf(MAX_MISSES, RUNS, 0.05) < 4e-4


def _gaussian_runs(mu, m=1000, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(RUNS):
        s = rng.random(m) < 0.5
        out = mu * s + rng.normal(size=m)
        yield out[s], out[~s]


@pytest.mark.parametrize("guesses", ["two-sided", "one-sided"])
@pytest.mark.parametrize("method, tradeoff", [("steinke", "dp"), ("fdp", "dp"), ("fdp", "gaussian")])
def test_the_bound_holds_on_the_gaussian_mechanism(method, tradeoff, guesses):
    """canary i's output is mu S_i + N(0, 1): exactly mu-GDP, so (gdp_to_dp(mu), delta)-DP."""
    eps_true = gdp_to_dp(1.0, DELTA)
    bounds = [one_run_epsilon(i, o, delta=DELTA, method=method, tradeoff=tradeoff, guesses=guesses)
              for i, o in _gaussian_runs(1.0)]
    assert sum(b > eps_true for b in bounds) <= MAX_MISSES
    assert np.mean(bounds) > 0.5  # and it sees the leakage (measured: 1.26 to 2.17)


@pytest.mark.parametrize("guesses", ["two-sided", "one-sided"])
def test_randomized_response_is_covered_by_the_dp_tradeoff(guesses):
    """Exactly eps-DP; the trade-off assumed by "dp" and "steinke" is its own."""
    rng, eps = np.random.default_rng(1), 2.0
    misses = 0
    for _ in range(RUNS):
        s = rng.random(1000) < 0.5
        out = np.where(rng.random(1000) < 1 / (1 + np.exp(-eps)), s, ~s) + 0.5 * rng.random(1000)
        misses += max(one_run_epsilon(out[s], out[~s], delta=DELTA, method=m, guesses=guesses)
                      for m in ("fdp", "steinke")) > eps
    assert misses <= MAX_MISSES


def test_two_sided_guesses_see_more_of_the_gaussian_mechanism():
    """Both tails carry evidence; on these fixed draws the two-sided bound is the larger in most runs."""
    pairs = [(one_run_epsilon(i, o, delta=DELTA, tradeoff="gaussian"),
              one_run_epsilon(i, o, delta=DELTA, tradeoff="gaussian", guesses="one-sided")) for i, o in _gaussian_runs(2.0)]
    two, one = np.array(pairs).T
    assert np.mean(two) > 1.1 * np.mean(one)  # measured: 1.22x on these 20 runs


def test_all_right_two_sided_guesses_are_a_binomial_tail():
    """k_+ highest all in, k_- lowest all out, delta = 0: Steinke's bound is q^r <= alpha, r = k_+ + k_-."""
    in_s, out_s = np.r_[np.arange(30) + 100.0, np.zeros(470)], np.r_[np.arange(20) - 100.0, np.zeros(480)]
    assert right_guess_range(in_s, out_s, 30, 20) == (50, 50)
    eps = one_run_epsilon(in_s, out_s, delta=0.0, method="steinke", n_guesses=(30, 20))
    q = lambda e: 1 / (1 + np.exp(-e))  # noqa: E731
    assert q(eps) ** 50 <= 0.05 < q(eps + 0.01) ** 50
    # the same fifty guesses all "in" are not all right, and a one-sided guesser cannot use the out-tail
    assert one_run_epsilon(in_s, out_s, delta=0.0, method="steinke", n_guesses=50, guesses="one-sided") < eps


def test_the_f_dp_analysis_with_the_dp_curve_is_at_least_as_tight_as_steinke():
    for i, o in _gaussian_runs(2.0):
        assert one_run_epsilon(i, o, delta=DELTA, method="fdp") >= one_run_epsilon(i, o, delta=DELTA, method="steinke") - 0.05


def test_no_information_gives_zero_and_the_p_value_is_a_binomial_tail():
    assert one_run_epsilon(np.zeros(500), np.zeros(500), delta=DELTA) == 0.0
    # ten right guesses of ten at epsilon = 0: 2^-10
    assert steinke_p_value(100, 10, 10, 0.0, 0.0)[0] == pytest.approx(2.0 ** -10)
    # all 100 guesses right: Steinke refutes eps with q^100 <= alpha, q = e^eps / (1 + e^eps)
    eps = one_run_epsilon_bound(1000, 100, 100, delta=0.0, alpha=0.05, method="steinke")
    q = lambda e: 1 / (1 + np.exp(-e))  # noqa: E731
    assert q(eps) ** 100 <= 0.05 < q(eps + 0.01) ** 100


def test_ties_give_a_range_of_counts_and_guess_grids_are_fixed():
    in_s, out_s = np.array([3.0, 2.0, 2.0]), np.array([2.0, 1.0])
    assert right_guess_range(in_s, out_s, 1, 0) == (1, 1)  # the 3.0
    assert right_guess_range(in_s, out_s, 2, 0) == (1, 2)  # a 2.0 slot: the out-canary's 2.0 or an in's
    assert right_guess_range(in_s, out_s, 3, 0) == (2, 3)
    assert right_guess_range(in_s, out_s, 1, 1) == (2, 2)  # the 3.0 in, the 1.0 out
    # one tie group across both cuts: the top slot and the bottom two slots all fall in it
    assert right_guess_range(np.zeros(2), np.zeros(2), 1, 2) == (0, 3)
    assert guess_grid(1000) == [(250, 250), (125, 125), (63, 62), (31, 31), (16, 15), (8, 7)]
    assert guess_grid(1000, guesses="one-sided") == [(500, 0), (250, 0), (125, 0), (62, 0), (31, 0), (15, 0)]
    assert guess_grid(12) == [(3, 3)] and guess_grid(100, [10, 20, 10], "one-sided") == [(20, 0), (10, 0)]
    assert guess_grid(100, [(10, 0), 10, (4, 6)]) == [(10, 0), (5, 5), (4, 6)]
    assert fdp_refutes(1000, 100, 100, 0.05, [1.0], DELTA)[0]


def test_no_information_in_ties_gives_zero_on_both_sides():
    for guesses in ("two-sided", "one-sided"):
        assert one_run_epsilon(np.zeros(500), np.zeros(500), delta=DELTA, method="steinke", guesses=guesses) == 0.0
    # perfectly separated but tied within each side: every tie-break is right, the range is one count
    assert right_guess_range(np.ones(300), np.zeros(300), 150, 150) == (300, 300)


def test_errors_name_the_fix():
    with pytest.raises(ValueError, match="in_scores is empty"):
        one_run_epsilon([], [1.0], delta=DELTA)
    with pytest.raises(ValueError, match="NaN"):
        one_run_epsilon([np.nan], [1.0], delta=DELTA)
    with pytest.raises(ValueError, match="tradeoff='dp'"):
        one_run_epsilon([1.0], [0.0], delta=0.0, tradeoff="gaussian")
    with pytest.raises(ValueError, match="n_guesses"):
        one_run_epsilon([1.0], [0.0], delta=DELTA, n_guesses=5)
    with pytest.raises(ValueError, match="n_guesses"):
        one_run_epsilon([1.0], [0.0], delta=DELTA, n_guesses=(2, -1))
    with pytest.raises(ValueError, match="guesses='two-sided'"):
        one_run_epsilon([1.0], [0.0], delta=DELTA, n_guesses=(1, 1), guesses="one-sided")
    with pytest.raises(ValueError, match="guesses"):
        one_run_epsilon([1.0], [0.0], delta=DELTA, guesses="both")


def _canaries(m=300, d0=5, n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.normal(size=(n, d0)) / np.sqrt(d0), np.zeros((n, m))])
    X_canary = np.hstack([np.zeros((m, d0)), np.eye(m)])
    return X, (X[:, 0] > 0).astype(int), X_canary, rng.integers(0, 2, m)


class _CountsFits(ClassifierMixin, BaseEstimator):
    fits = 0

    def fit(self, X, y):
        type(self).fits += 1
        self.model_ = LogisticRegression(C=100, max_iter=2000).fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


def test_one_run_audit_fits_once_and_sees_a_leaky_model():
    X, y, Xc, yc = _canaries()
    audit = one_run_audit(_CountsFits(), X, y, Xc, yc, delta=DELTA, random_state=0)
    assert _CountsFits.fits == 1 and audit.n_trainings_ == 1
    assert audit.included_.sum() == audit.in_scores_.size and audit.in_scores_.size + audit.out_scores_.size == 300
    assert audit.epsilon_lower_ > 1.0 and audit.model_epsilon_ is None


@pytest.mark.filterwarnings("ignore::skmip.exceptions.PrivacyWarning")  # seeded for the test
def test_a_dp_model_is_audited_against_the_epsilon_it_states():
    from skmip import DPLogisticRegression, SubsampledDPClassifier

    X, y, Xc, yc = _canaries()
    model = DPLogisticRegression(epsilon=2.0, C=100, classes=[0, 1], fit_intercept=False,
                                 random_state=0)
    audit = one_run_audit(model, X, y, Xc, yc, random_state=0)
    assert (audit.model_epsilon_, audit.model_delta_, audit.delta) == (2.0, 0.0, 0.0)
    assert audit.epsilon_lower_ <= audit.model_epsilon_
    sub = SubsampledDPClassifier(DPLogisticRegression(epsilon=2.0, classes=[0, 1], random_state=0), train_size=0.5,
                                 epsilon=2.0, random_state=0)
    sub.fit(X, y)
    eps, delta = stated_epsilon(sub)
    assert eps == pytest.approx(np.log1p(0.5 * np.expm1(2.0))) and delta == 0.0


@pytest.mark.filterwarnings("ignore::skmip.exceptions.PrivacyWarning")  # seeded for the test
def test_a_dpsgd_logistic_regression_costs_one_run():
    pytest.importorskip("torch")
    pytest.importorskip("opacus")
    from skmip.nn import DPSGDLogisticRegression

    X, y, Xc, yc = _canaries(m=100, n=100)
    model = DPSGDLogisticRegression(epsilon=8.0, delta=DELTA, max_epochs=2, accountant="rdp", random_state=0)
    audit = one_run_audit(model, X.astype(np.float32), y, Xc.astype(np.float32), yc, random_state=0)
    assert audit.n_trainings_ == 1 and audit.model_delta_ == DELTA
    assert audit.epsilon_lower_ <= audit.model_epsilon_ == pytest.approx(8.0, rel=0.01)


@pytest.mark.filterwarnings("ignore::skmip.exceptions.PrivacyWarning")  # seeded for the test
def test_an_eta_mip_release_reports_its_eta_beside_the_epsilon_bound():
    """An eta-MIP release by noisy gradients states no epsilon but an eta: the one-run audit
    reports it (model_eta_) beside the epsilon lower bound, after one fit."""
    from skmip import MIPNoiseWrapper

    X, y, Xc, yc = _canaries()
    wrapper = MIPNoiseWrapper(LogisticRegression(C=100, fit_intercept=False), eta=0.1, method="noisy_gradient",
                              random_state=0)
    audit = one_run_audit(wrapper, X, y, Xc, yc, random_state=0)
    assert audit.model_epsilon_ is None and audit.n_trainings_ == 1
    assert 0 < audit.model_eta_ <= 0.1 and audit.epsilon_lower_ >= 0.0
    assert one_run_audit(_CountsFits(), X, y, Xc, yc, delta=DELTA, random_state=0).model_eta_ is None
