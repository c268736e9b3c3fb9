"""skmip.audit.metrics and skmip.bounds.empirical: ROC over trials, low-FPR TPR, Thudi's positive
accuracy, Clopper--Pearson epsilon and the eta-MIP ROC check."""

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import roc_auc_score, roc_curve

from skmip.bounds import clopper_pearson_interval, dp_epsilon_lower_bound, mip_roc_violation
from skmip.audit.metrics import (
    check_mip_bound,
    check_positive_accuracy_bound,
    empirical_epsilon,
    membership_advantage,
    mi_roc_auc,
    mi_roc_curve,
    positive_accuracy,
    tpr_at_fpr,
)


def _randomized_response(rng, n, keep):
    """Trials of a mechanism that reveals membership truthfully with probability ``keep``."""
    member = rng.random(n) < 0.5
    truthful = rng.random(n) < keep
    return member, np.where(truthful, member, ~member).astype(float)


# ---------------------------------------------------------------- ROC, AUC, TPR@FPR
def test_roc_matches_sklearn_with_ties(rng):
    member = rng.random((8, 300)) < 0.5
    scores = np.round(rng.normal(size=(8, 300)) + 0.7 * member, 1)  # many ties
    fpr, tpr, thr = mi_roc_curve(member, scores)
    ref_fpr, ref_tpr, ref_thr = roc_curve(member.ravel(), scores.ravel(), drop_intermediate=False)
    np.testing.assert_allclose(fpr, ref_fpr)
    np.testing.assert_allclose(tpr, ref_tpr)
    np.testing.assert_allclose(thr[1:], ref_thr[1:])
    assert mi_roc_auc(member, scores) == pytest.approx(roc_auc_score(member.ravel(), scores.ravel()), abs=1e-12)


def test_tpr_at_fpr_takes_the_best_point_without_interpolation():
    member = np.array([1, 1, 0, 1, 0, 0, 0, 0, 0, 0], dtype=bool)
    scores = np.arange(10, 0, -1, dtype=float)  # ranked: M M N M N N N N N N
    # 7 non-members: FPR steps of 1/7.
    assert tpr_at_fpr(member, scores, 0.0) == pytest.approx(2 / 3)
    assert tpr_at_fpr(member, scores, 0.1) == pytest.approx(2 / 3)  # 1/7 > 0.1
    assert tpr_at_fpr(member, scores, 1 / 7) == pytest.approx(1.0)
    np.testing.assert_allclose(tpr_at_fpr(member, scores, [0.0, 1.0]), [2 / 3, 1.0])


def test_advantage_is_the_max_gap_and_zero_for_a_useless_attack():
    member = np.array([1, 0, 1, 0], dtype=bool)
    assert membership_advantage(member, [0.9, 0.8, 0.7, 0.1]) == pytest.approx(0.5)
    assert membership_advantage(member, [1.0, 1.0, 1.0, 1.0]) == 0.0


def test_metric_inputs_are_validated():
    with pytest.raises(ValueError, match="same shape"):
        mi_roc_auc([1, 0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="finite"):
        mi_roc_auc([1, 0], [np.inf, 0.2])
    with pytest.raises(ValueError, match="both member and non-member"):
        mi_roc_auc([1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="fpr must be in"):
        tpr_at_fpr([1, 0], [0.1, 0.2], fpr=1.5)


# ---------------------------------------------------------------- positive accuracy (Thudi)
def test_positive_accuracy_uses_thudi_quantile_grid():
    # 40 trials, scores 40..1; members are the top 3 and every 4th one below.
    scores = np.arange(40, 0, -1, dtype=float)
    member = np.zeros(40, dtype=bool)
    member[:3] = True
    member[3::4] = True
    best, all_prec = positive_accuracy(member, scores, return_all=True)
    assert all_prec.shape == (40,)
    assert best == 1.0  # the top 2.5% (one trial) and top 7.5% are all members
    assert all_prec[-1] == pytest.approx(member.mean())  # accepting everything: the base rate
    # brute force: precision among the top i trials
    expected = np.array([member[:i].mean() for i in range(1, 41)])
    np.testing.assert_allclose(all_prec, expected)


def test_positive_accuracy_of_a_useless_attack_is_the_base_rate(rng):
    member = rng.random(4000) < 0.3
    best, precisions = positive_accuracy(member, np.zeros(4000), return_all=True)
    np.testing.assert_allclose(precisions, member.mean())


# ---------------------------------------------------------------- Clopper-Pearson
def test_clopper_pearson_matches_scipy_binomtest():
    for k, n in [(0, 10), (3, 10), (10, 10), (17, 1000), (500, 1000)]:
        low, high = clopper_pearson_interval(k, n, confidence=0.9)
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
        assert low == pytest.approx(ci.low, abs=1e-12)
        assert high == pytest.approx(ci.high, abs=1e-12)


def test_clopper_pearson_one_sided_coverage(rng):
    """The one-sided 95% upper bound covers the true rate in >= 95% of repetitions."""
    p, n, reps = 0.03, 200, 4000
    k = rng.binomial(n, p, size=reps)
    _, high = clopper_pearson_interval(k, n, confidence=0.95, alternative="less")
    coverage = np.mean(high >= p)
    # Conservative by construction; the MC error of the coverage at 4000 reps is < 0.35%.
    assert coverage >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps)


def test_clopper_pearson_rejects_bad_counts():
    with pytest.raises(ValueError, match="0 <= k <= n"):
        clopper_pearson_interval(11, 10)
    with pytest.raises(ValueError, match="confidence"):
        clopper_pearson_interval(1, 10, confidence=1.0)
    with pytest.raises(ValueError, match="alternative"):
        clopper_pearson_interval(1, 10, alternative="both")


# ---------------------------------------------------------------- empirical epsilon
def test_dp_epsilon_lower_bound_formula():
    """Both hypothesis-testing inequalities, with one-sided CP bounds at alpha/2 each."""
    tp, fp, n_pos, n_neg, delta = 900, 50, 1000, 1000, 1e-5
    fpr_hi = stats.beta.ppf(0.975, fp + 1, n_neg - fp)
    fnr_hi = stats.beta.ppf(0.975, n_pos - tp + 1, tp)
    expected = max(np.log((1 - delta - fpr_hi) / fnr_hi), np.log((1 - delta - fnr_hi) / fpr_hi))
    assert dp_epsilon_lower_bound(tp, fp, n_pos, n_neg, delta=delta) == pytest.approx(expected)
    # no evidence at all -> 0
    assert dp_epsilon_lower_bound(500, 500, 1000, 1000) == 0.0


def test_dp_epsilon_lower_bound_reproduces_nasr_example():
    """Nasr et al. IV-A: TPR 0.017, FPR 0.002 over 1000 trials -> 'epsilon = 0.31' (we get 0.32
    with the counts 17/1000 and 2/1000; the paper does not print its counts)."""
    eps = dp_epsilon_lower_bound(17, 2, 1000, 1000, delta=1e-5)
    assert 0.30 < eps < 0.33


def test_empirical_epsilon_is_a_valid_lower_bound_for_randomized_response(rng):
    """Randomized response at epsilon = 1 is exactly 1-DP: the bound must stay below 1 and
    approach it with many trials."""
    member, guess = _randomized_response(rng, 40000, np.e / (1 + np.e))
    eps_split = empirical_epsilon(member, guess, delta=0.0)
    eps_max = empirical_epsilon(member, guess, delta=0.0, threshold="max")
    eps_fixed = empirical_epsilon(member, guess, delta=0.0, threshold=0.5)
    assert 0.9 < eps_split < 1.0
    assert 0.9 < eps_max < 1.0
    assert eps_fixed == pytest.approx(eps_max)  # one non-trivial threshold only


def test_empirical_epsilon_split_never_sees_its_evaluation_counts(rng):
    """A useless attack: the 'max' selection can pick a lucky threshold; 'split' stays at 0
    far more often. Over 200 null games the split bound is positive in < 5% + MC error."""
    positives = 0
    for _ in range(200):
        member = rng.random(400) < 0.5
        positives += empirical_epsilon(member, rng.normal(size=400), delta=0.0) > 0
    # Each run is a level-0.95 statement; binomial 99.9% upper limit of 200 draws at 5%.
    assert positives <= stats.binom.ppf(0.999, 200, 0.05)


def test_empirical_epsilon_split_of_an_alternating_member_mask(rng):
    """Members on even indices, non-members on odd ones: the parity split would leave each half
    one class; every other member and non-member go to the selection half instead, and the
    bound matches a shuffled copy's in law (randomized response at epsilon 1, 20,000 trials:
    both just below 1). A mask that leaves a class fewer than 2 trials is refused."""
    n = 20000
    member = np.arange(n) % 2 == 0
    truthful = rng.random(n) < np.e / (1 + np.e)
    guess = np.where(truthful, member, ~member).astype(float)
    assert 0.9 < empirical_epsilon(member, guess, delta=0.0) < 1.0
    with pytest.raises(ValueError, match="has only one class"):
        empirical_epsilon(np.r_[True, np.zeros(9, dtype=bool)], np.arange(10.0), delta=0.0)


# ---------------------------------------------------------------- eta-MIP check
def test_mip_check_accepts_an_exactly_eta_mip_mechanism(rng):
    """Randomized response with TPR - FPR = 2 eta is exactly eta-MIP (the tight case of
    Theorem 8): the check must not refute it."""
    member, guess = _randomized_response(rng, 20000, 0.5 + 0.1)
    check = check_mip_bound(member, guess, eta=0.1)
    assert check.holds and check.kind == "mip" and check.bound == 0.1
    assert -0.05 < check.margin <= 0


def test_mip_check_refutes_a_mechanism_above_the_bound(rng):
    member, guess = _randomized_response(rng, 20000, 0.5 + 0.15)  # advantage 0.3 = 2 * 0.15
    check = check_mip_bound(member, guess, eta=0.1)
    assert not check.holds and check.margin > 0
    assert check.threshold == 1.0


def test_mip_roc_violation_is_bonferroni_over_thresholds():
    tp, fp = np.array([600, 700]), np.array([400, 400])
    margins = mip_roc_violation(tp, fp, 1000, 1000, eta=0.1, confidence=0.95)
    level = 1 - 0.05 / 4
    expected = stats.beta.ppf(1 - level, tp, 1000 - tp + 1) - stats.beta.ppf(level, fp + 1, 1000 - fp) - 0.2
    np.testing.assert_allclose(margins, expected)


def test_positive_accuracy_check():
    member = np.array([1, 0] * 500, dtype=bool)
    perfect = member.astype(float)
    assert not check_positive_accuracy_bound(member, perfect, 0.9).holds
    assert check_positive_accuracy_bound(member, np.zeros(1000), 0.55).holds
