"""The coupling bound (skmip.bounds.coupling): formulas, confidence, calibration, exact audits."""

import itertools
import math
import re

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import erf
from sklearn.base import BaseEstimator

from skmip.bounds import (
    CouplingCalibration,
    betting_mean_upper,
    coupling_eta,
    coupling_eta_per_target,
    coupling_eta_upper,
    coupling_noise_scale,
    gaussian_tv,
)
from skmip.calibration.swap import estimate_swap_deltas
from skmip.release.statistic import Statistic


# --------------------------------------------------------------------------- Gaussian TV


def test_gaussian_tv_matches_numerical_integration_in_one_dimension():
    for delta in [0.0, 0.3, 1.0, 2.5, 7.0]:
        tv, _ = integrate.quad(
            lambda x: 0.5 * abs(stats.norm.pdf(x) - stats.norm.pdf(x, loc=delta)), -12, 12 + delta,
            points=[delta / 2], limit=200,
        )
        assert gaussian_tv(delta) == pytest.approx(tv, abs=1e-9)
        assert gaussian_tv(delta) == pytest.approx(2 * stats.norm.cdf(delta / 2) - 1, abs=1e-15)


def test_gaussian_tv_is_dimension_free_for_a_common_covariance():
    # TV = P_0(A) - P_1(A) for the likelihood-ratio set A; estimated by Monte Carlo in d = 7
    # with a correlated covariance. The per-draw indicator difference is bounded, so the
    # 5-sigma band of the mean is a valid tolerance.
    rng = np.random.default_rng(0)
    d = 7
    L = np.tril(rng.normal(size=(d, d))) + 3 * np.eye(d)
    a = rng.normal(size=d)
    Sinv = np.linalg.inv(L @ L.T)
    delta = math.sqrt(a @ Sinv @ a)
    m = 200_000
    x0 = rng.normal(size=(m, d)) @ L.T
    x1 = rng.normal(size=(m, d)) @ L.T + a
    # log p1/p0 > 0  <=>  a' S^-1 x > a' S^-1 a / 2
    in0 = (x0 @ Sinv @ a) > (a @ Sinv @ a) / 2
    in1 = (x1 @ Sinv @ a) > (a @ Sinv @ a) / 2
    est = in1.mean() - in0.mean()
    se = math.sqrt(in1.var() / m + in0.var() / m)
    assert abs(est - gaussian_tv(delta)) < 5 * se


def test_gaussian_tv_rejects_negative_and_nan():
    with pytest.raises(ValueError, match="delta must be >= 0"):
        gaussian_tv(-1.0)
    with pytest.raises(ValueError):
        gaussian_tv([0.1, np.nan])


# --------------------------------------------------------------------------- point estimate


def test_per_target_mean_is_the_prior_weighted_average_tv():
    deltas = np.array([[0.5, 1.0, 2.0], [0.0, np.inf, 1.0]])
    s = 1.7
    expected = 0.5 * (2 * stats.norm.cdf(deltas / (2 * s)) - 1).mean(axis=1)
    np.testing.assert_allclose(coupling_eta_per_target(deltas, s), expected, rtol=1e-13)
    assert coupling_eta(deltas, s) == pytest.approx(expected.max())
    # k/n = 0.2: the advantage bound carries min(q, 1 - q) = 0.2 instead of 1/2.
    np.testing.assert_allclose(
        coupling_eta_per_target(deltas, s, train_fraction=0.2), expected * 0.4, rtol=1e-13
    )
    # The three layouts agree: (draws,), (targets, draws), (targets, draws, pairs).
    assert coupling_eta_per_target(deltas[0], s)[0] == pytest.approx(expected[0])
    np.testing.assert_allclose(
        coupling_eta_per_target(deltas.reshape(2, 1, 3), s), expected, rtol=1e-13
    )


def test_point_estimate_decreases_with_the_noise_scale():
    deltas = np.random.default_rng(1).exponential(size=(5, 40))
    values = [coupling_eta(deltas, s) for s in [0.1, 0.5, 1.0, 3.0, 10.0]]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert values[0] < 0.5


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(deltas=[[-0.1, 1.0]], noise_scale=1.0), ">= 0"),
        (dict(deltas=np.zeros((2, 2, 2, 2)), noise_scale=1.0), "shape"),
        (dict(deltas=[[1.0]], noise_scale=0.0), "noise_scale"),
        (dict(deltas=[[1.0]], noise_scale=1.0, train_fraction=1.0), "train_fraction"),
    ],
)
def test_point_estimate_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        coupling_eta(**kwargs)


# --------------------------------------------------------------------------- confidence bound


def _maurer_pontil(y, c, n_targets, alpha):
    """Theorem 4 of Maurer & Pontil (2009), written out for one target, range [0, c]."""
    m = y.size
    log = math.log(2 * n_targets / alpha)
    var = np.var(y, ddof=1)
    return min(c, y.mean() + math.sqrt(2 * var * log / m) + 7 * c * log / (3 * (m - 1)))


def test_upper_bound_is_theorem_4_with_a_union_bound():
    rng = np.random.default_rng(2)
    deltas = rng.gamma(2.0, 0.5, size=(6, 300, 3))
    s = 2.0
    y = 0.5 * (2 * stats.norm.cdf(deltas / (2 * s)) - 1).mean(axis=2)
    expected = max(_maurer_pontil(y[i], 0.5, 6, 0.1) for i in range(6))
    got = coupling_eta_upper(deltas, s, confidence=0.9, bound="maurer-pontil")
    assert got == pytest.approx(expected, rel=1e-12)


def test_betting_upper_bound_is_the_per_target_betting_bound_with_a_union_bound():
    rng = np.random.default_rng(2)
    deltas = rng.gamma(2.0, 0.5, size=(6, 300, 3))
    s = 2.0
    y = 0.5 * (2 * stats.norm.cdf(deltas / (2 * s)) - 1).mean(axis=2)
    expected = betting_mean_upper(y, upper=0.5, delta=0.1 / 6).max()
    assert coupling_eta_upper(deltas, s, confidence=0.9) == pytest.approx(expected, abs=1e-9)
    # Draws that vary little: betting is tighter than Maurer & Pontil.
    tight = 0.4 + 0.01 * rng.random((6, 300))
    assert coupling_eta_upper(tight, 1.0, confidence=0.9) < coupling_eta_upper(
        tight, 1.0, confidence=0.9, bound="maurer-pontil"
    )


@pytest.mark.parametrize("bound", ["maurer-pontil", "betting"])
@pytest.mark.parametrize("skewed", [False, True])
def test_upper_bound_covers_the_true_means_at_least_at_the_stated_rate(bound, skewed):
    # 8 targets whose distances are exponential with known scales: the true mean of the TV
    # term is an integral we compute by quadrature. Over 300 independent replications
    # (fixed seeds) the per-target bounds must cover every target at once in at least 90%
    # of them. Were the coverage exactly 0.9, the count would fall at or below `low` with
    # probability < 1e-3 (binomial lower tail). ``skewed`` spends alpha unevenly over the
    # targets (a weighted union bound), most of it on the most exposed ones, whose bounds
    # then come closest to their means: the statement holds all the same.
    from skmip.bounds.bernstein import _ucb_per_target

    scales = np.linspace(0.2, 2.0, 8)
    s = 1.5
    shares = np.geomspace(1.0, 8.0, 8) if skewed else np.ones(8)
    shares = shares / shares.sum()

    def true_mean(scale):
        f = lambda t: 0.5 * math.erf(t / (s * math.sqrt(8))) * math.exp(-t / scale) / scale  # noqa: E731
        return integrate.quad(f, 0, np.inf)[0]

    truth = np.array([true_mean(b) for b in scales])
    covered = 0
    for rep in range(300):
        rng = np.random.default_rng(1000 + rep)
        deltas = rng.exponential(scales[:, None], size=(8, 60))
        if bound == "maurer-pontil":
            ub, _ = _ucb_per_target(deltas[:, :, None], s, 0.5, 0.1, shares)
        else:
            y = 0.5 * erf(deltas / (s * math.sqrt(8)))
            ub = np.array([betting_mean_upper(y[i], upper=0.5, delta=0.1 * shares[i])[0] for i in range(8)])
        upper = coupling_eta_upper(deltas, s, confidence=0.9, bound=bound, target_shares=shares if skewed else None)
        assert ub.max() == pytest.approx(upper, abs=1e-9)
        covered += bool(np.all(ub >= truth))
    low = stats.binom.ppf(1e-3, 300, 0.9) - 1
    assert stats.binom.cdf(low, 300, 0.9) < 1e-3
    assert covered > low


def test_upper_bound_needs_two_draws():
    with pytest.raises(ValueError, match="at least 2 independent draws"):
        coupling_eta_upper([[1.0], [2.0]], 1.0)


# --------------------------------------------------------------------------- calibration


def test_point_calibration_solves_the_point_estimate_exactly():
    rng = np.random.default_rng(3)
    deltas = rng.lognormal(size=(10, 50))
    for eta in [0.05, 0.1, 0.3]:
        cal = coupling_noise_scale(deltas, eta, confidence=None)
        assert isinstance(cal, CouplingCalibration)
        assert cal.confidence is None and cal.eta_upper is None
        assert coupling_eta(deltas, cal.noise_scale) == pytest.approx(eta, rel=1e-9)
        assert cal.noise_scale == cal.noise_scale_point


@pytest.mark.parametrize("bound", ["maurer-pontil", "betting"])
@pytest.mark.parametrize("skewed", [False, True])
def test_confident_calibration_is_on_the_grid_and_every_larger_grid_point_passes(bound, skewed):
    rng = np.random.default_rng(4)
    deltas = rng.gamma(1.5, 1.0, size=(30, 400, 2))
    shares = rng.uniform(0.1, 1.0, 30) if skewed else None
    G = 64
    cal = coupling_noise_scale(deltas, 0.1, confidence=0.95, grid_resolution=G, bound=bound, target_shares=shares)
    j = G * math.log2(cal.noise_scale)
    assert j == pytest.approx(round(j), abs=1e-9)
    assert cal.eta_upper <= 0.1

    def upper(scale):
        return coupling_eta_upper(deltas, scale, confidence=0.95, bound=bound, target_shares=shares)

    assert cal.eta_upper == pytest.approx(min(upper(cal.noise_scale), 0.1), abs=1e-9)
    assert cal.eta_point == pytest.approx(coupling_eta(deltas, cal.noise_scale))
    # Minimal on the grid: one step down fails ...
    assert upper(2 ** ((round(j) - 1) / G)) > 0.1
    # ... and every grid point above passes (the property the validity argument needs).
    for jj in range(round(j), round(j) + 3 * G):
        assert upper(2 ** (jj / G)) <= 0.1 + 1e-9
    # The confidence costs noise: more than the point estimate, less than twice here.
    assert cal.noise_scale_point < cal.noise_scale < 2 * cal.noise_scale_point


@pytest.mark.parametrize("bound", ["maurer-pontil", "betting"])
@pytest.mark.parametrize("skewed", [False, True])
def test_confident_calibration_keeps_its_promise_over_replications(bound, skewed):
    # Known truth: per target, the distances are exponential with a known scale; the true
    # max-over-targets mean at the calibrated s must be <= eta in >= 95% of replications
    # (binomial lower tail as above). ``skewed``: most of alpha on the most exposed targets
    # (the weighted union bound of design_target_shares).
    scales = np.array([0.3, 0.6, 1.0, 1.2])
    shares = np.array([1.0, 2.0, 4.0, 8.0]) if skewed else None

    def true_max_mean(s):
        f = lambda t, b: 0.5 * math.erf(t / (s * math.sqrt(8))) * math.exp(-t / b) / b  # noqa: E731
        return max(integrate.quad(f, 0, np.inf, args=(b,))[0] for b in scales)

    ok = 0
    for rep in range(200):
        rng = np.random.default_rng(5000 + rep)
        deltas = rng.exponential(scales[:, None], size=(4, 120))
        cal = coupling_noise_scale(deltas, 0.15, confidence=0.95, grid_resolution=32, bound=bound,
                                   target_shares=shares)
        ok += true_max_mean(cal.noise_scale) <= 0.15
    low = stats.binom.ppf(1e-3, 200, 0.95) - 1
    assert ok > low


@pytest.mark.parametrize("bound", ["maurer-pontil", "betting"])
def test_calibration_says_how_many_rounds_are_needed(bound):
    deltas = np.ones((500, 50))
    with pytest.raises(ValueError, match=r"n_rounds >= \d+") as info:
        coupling_noise_scale(deltas, 0.05, bound=bound)
    # The number it names is enough when nothing moves: all-zero draws then pass.
    need = int(re.search(r"n_rounds >= (\d+)", str(info.value)).group(1))
    assert coupling_noise_scale(np.zeros((500, need)), 0.05, bound=bound).noise_scale == 0.0
    # With the point estimate the same deltas are fine.
    assert coupling_noise_scale(deltas, 0.05, confidence=None).noise_scale > 0


@pytest.mark.parametrize("bound", ["maurer-pontil", "betting"])
def test_a_refusal_caused_by_infinite_distances_says_so(bound):
    # Issue 31: after 400 rounds the refusal advised "n_rounds >= 43"; the cause was distances
    # the certificate could not bound (infinite), which no number of rounds removes.
    deltas = np.ones((20, 400))
    deltas[3, :8] = np.inf  # alone worth 0.01 < eta on average, but not with confidence
    with pytest.raises(ValueError, match="certificate could not bound") as info:
        coupling_noise_scale(deltas, 0.03, bound=bound)
    message = str(info.value)
    assert "0.02 of a target's swap distances are infinite" in message
    assert "more rounds do not remove them" in message and "n_rounds >=" not in message


@pytest.mark.parametrize("shares", [np.ones(2), [1.0, 0.0, 1.0], [1.0, -1.0, 1.0], [1.0, np.nan, 1.0]])
def test_target_shares_are_validated(shares):
    deltas = np.ones((3, 100))
    with pytest.raises(ValueError, match="target_shares must hold one finite value > 0 per target"):
        coupling_noise_scale(deltas, 0.1, target_shares=shares)
    with pytest.raises(ValueError, match="target_shares"):
        coupling_eta_upper(deltas, 1.0, target_shares=shares)


def test_even_target_shares_are_the_plain_union_bound():
    rng = np.random.default_rng(8)
    deltas = rng.gamma(1.5, 1.0, size=(20, 300))
    for bound in ("maurer-pontil", "betting"):
        plain = coupling_noise_scale(deltas, 0.1, bound=bound)
        even = coupling_noise_scale(deltas, 0.1, bound=bound, target_shares=np.full(20, 7.0))
        assert even == plain


def test_calibration_edge_cases():
    # Nothing moves: no noise is needed.
    cal = coupling_noise_scale(np.zeros((3, 100)), 0.1)
    assert cal.noise_scale == 0.0 and cal.eta_point == 0.0
    # eta at or above min(q, 1 - q): every mechanism qualifies.
    assert coupling_noise_scale(np.ones((3, 10)), 0.5).noise_scale == 0.0
    # Infinite distances (an un-noised coordinate moved) with mass above eta: impossible.
    deltas = np.ones((2, 100))
    deltas[0, :30] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        coupling_noise_scale(deltas, 0.1, confidence=None)
    with pytest.raises(ValueError, match="eta must be in"):
        coupling_noise_scale(deltas, 0.0)
    with pytest.raises(ValueError, match="confidence"):
        coupling_noise_scale(np.ones((2, 100)), 0.1, confidence=1.0)


def test_doc_example_value_for_the_mean_of_four_points():
    # Mean of {0, 1, 2, 3}, k = 2, w = 1: exhaustive deltas |e - x*| / 2.
    x = np.array([0.0, 1.0, 2.0, 3.0])
    deltas = [[abs(e - t) / 2 for e in x if e != t] for t in x]

    def excess(s):
        return max(np.mean([stats.norm.cdf(d / (2 * s)) - 0.5 for d in row]) for row in deltas) - 0.1

    from scipy.optimize import brentq

    assert coupling_noise_scale(deltas, 0.1, confidence=None).noise_scale == pytest.approx(
        brentq(excess, 0.1, 10), rel=1e-9
    )


# --------------------------------------------------------------------------- exact audits


def _exact_sigma(fn, data, n):
    outputs = np.array([fn(*[part[list(h)] for part in data]) for h in itertools.combinations(range(n), n // 2)])
    return outputs.std(axis=0)


def _gaussian_noise(sd):
    d = sd.size
    return (
        lambda m, rng: rng.normal(size=(m, d)) * sd,
        lambda x: -0.5 * ((x / sd) ** 2).sum(axis=1),
    )


def _audit(fn, data, deltas, sd_unit, eta, n_mc, seed):
    """Calibrate on exhaustive deltas, then run the exact Bayes-optimal attacker."""
    from skmip.audit.attacks.bayes import exact_mip_advantage

    cal = coupling_noise_scale(deltas, eta, confidence=None)
    sampler, logpdf = _gaussian_noise(cal.noise_scale * sd_unit)
    audit = exact_mip_advantage(
        fn, data if len(data) > 1 else data[0], noise_sampler=sampler, noise_logpdf=logpdf,
        n_mc=n_mc, random_state=seed,
    )
    bound = coupling_eta_per_target(deltas, cal.noise_scale)
    return cal, audit, bound


@pytest.mark.parametrize("eta", [0.05, 0.1, 0.2, 0.3])
def test_exact_audit_one_outlier_mean_the_bound_is_tight(eta):
    # One outlier among identical records: D_out always averages zeros and D_in always
    # holds the outlier, so P_in and P_out are two Gaussians and the coupling bound is an
    # equality for the outlier. The optimal attacker must reach eta, not exceed it.
    n, d = 12, 1
    X = np.zeros((n, d))
    X[0] = 1.0
    sd = _exact_sigma(lambda A: A.mean(0), (X,), n)
    res = estimate_swap_deltas(Statistic("mean"), X, scale=sd, engine="exact", random_state=0)
    assert res.exhaustive and res.distances.shape == (n, math.comb(n - 1, n // 2), n // 2)
    cal, audit, bound = _audit(lambda A: A.mean(0), (X,), res.distances, sd, eta, 4000, 11)
    assert bound[0] == pytest.approx(eta, rel=1e-9)
    assert abs(audit.advantage[0] - eta) < 4 * audit.std_error[0]
    assert np.all(audit.advantage <= bound + 4 * audit.std_error)


@pytest.mark.parametrize("d", [5, 100])
def test_exact_audit_gaussian_means_never_exceed_eta(d):
    n = 12 if d <= 5 else 10
    X = np.random.default_rng(d).normal(size=(n, d))
    sd = _exact_sigma(lambda A: A.mean(0), (X,), n)
    res = estimate_swap_deltas(Statistic("mean"), X, scale=sd, engine="exact", random_state=0)
    for eta in [0.05, 0.1, 0.2, 0.3]:
        cal, audit, bound = _audit(lambda A: A.mean(0), (X,), res.distances, sd, eta, 2000, 12)
        assert bound.max() == pytest.approx(eta, rel=1e-9)
        # Per target: advantage <= coupling bound; overall: the 0.999 upper bound < eta.
        assert np.all(audit.advantage <= bound + 4 * audit.std_error)
        assert audit.upper_confidence_bound(0.999).max() < eta


class _TinyLogit(BaseEstimator):
    """L2 logistic regression by Newton's method; defined on one-class subsets too."""

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, X, y):
        Xa = np.c_[X, np.ones(len(X))]
        reg = np.r_[np.ones(X.shape[1]), 0.0]
        theta = np.zeros(Xa.shape[1])
        for _ in range(100):
            p = 1 / (1 + np.exp(-Xa @ theta))
            grad = self.C * Xa.T @ (p - y) + reg * theta
            # A tiny intercept penalty keeps one-class subsets finite (like a prior).
            hess = self.C * (Xa.T * (p * (1 - p))) @ Xa + np.diag(reg + 1e-2 * (reg == 0))
            step = np.linalg.solve(hess, grad + 1e-2 * (reg == 0) * theta)
            theta -= step
            if np.abs(step).max() < 1e-12:
                break
        self.coef_, self.intercept_ = theta[None, :-1], theta[-1:]
        return self


def test_exact_audit_tiny_logistic_regression_never_exceeds_eta():
    rng = np.random.default_rng(7)
    n = 12
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(float)

    def fit(A, b):
        m = _TinyLogit(C=1.0).fit(A, b)
        return np.r_[m.coef_.ravel(), m.intercept_]

    sd = _exact_sigma(fit, (X, y), n)
    res = estimate_swap_deltas(_TinyLogit(C=1.0), X, y, scale=sd, engine="exact", params=["coef_", "intercept_"], random_state=0)
    for eta in [0.05, 0.1, 0.2, 0.3]:
        cal, audit, bound = _audit(fit, (X, y), res.distances, sd, eta, 2000, 13)
        assert np.all(audit.advantage <= bound + 4 * audit.std_error)
        assert audit.upper_confidence_bound(0.999).max() < eta


def test_betting_mean_upper_validates_and_is_monotone_in_the_draws():
    with pytest.raises(ValueError, match=r"every sample must lie in \[0, upper"):
        betting_mean_upper([0.1, 0.7], upper=0.5, delta=0.05)
    with pytest.raises(ValueError, match="delta must be in"):
        betting_mean_upper([0.1], upper=0.5, delta=1.0)
    rng = np.random.default_rng(0)
    y = rng.uniform(0, 0.3, size=400)
    lower = y * rng.uniform(0.5, 1.0, size=400)  # every draw lowered
    assert betting_mean_upper(lower, upper=0.5, delta=0.05)[0] <= betting_mean_upper(y, upper=0.5, delta=0.05)[0]
    # Never below the sample mean, never above the range.
    u = betting_mean_upper(rng.uniform(0, 0.5, size=(5, 50)), upper=0.5, delta=0.01)
    assert np.all(u <= 0.5)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pruned_searches_match_full_evaluation(seed):
    """The Jensen bounds only skip exact evaluations that cannot matter: the point root and
    the betting grid point are those of evaluating every draw at every step."""
    from scipy.optimize import brentq

    from skmip.bounds.betting import betting_passes
    from skmip.bounds.coupling_draws import _betting_log_thresholds, _draw_values

    rng = np.random.default_rng(seed)
    d = rng.gamma(rng.uniform(0.5, 3.0), 0.05, size=(120, 300, 4))
    d[rng.integers(0, 120, 3)] *= rng.uniform(1.0, 5.0)  # a few exposed targets
    d[5, 0, 0] = np.inf
    for eta in (0.1, 0.3):
        cal = coupling_noise_scale(d, eta, train_fraction=0.5)

        def excess(log_s):
            return float(_draw_values(d, math.exp(log_s), 0.5).mean(axis=1).max()) - eta

        point = math.exp(brentq(excess, -20.0, 20.0, xtol=1e-12, rtol=1e-14))
        assert cal.noise_scale_point == pytest.approx(point, rel=1e-9)
        threshold = _betting_log_thresholds(np.full(120, 1 / 120), 0.05)
        j = round(128 * math.log2(cal.noise_scale))

        def passes(j):
            return bool(betting_passes(_draw_values(d, 2.0 ** (j / 128), 0.5), eta, 0.5, threshold).all())

        assert passes(j) and not passes(j - 1)


def test_calibration_in_blocks_of_targets_is_the_same(monkeypatch):
    # The draw values are computed a block of targets at a time (memory); the result is the
    # same arithmetic, so the same calibration, however small the blocks.
    from skmip.bounds import coupling, coupling_draws

    rng = np.random.default_rng(5)
    deltas = rng.gamma(2.0, 0.05, size=(50, 300, 2))
    deltas[3, :, 0] *= 20  # one exposed target sets the noise
    whole = coupling.coupling_noise_scale(deltas, 0.1)
    monkeypatch.setattr(coupling_draws, "_BLOCK_VALUES", 7)  # a few targets per block, uneven
    blocks = coupling.coupling_noise_scale(deltas, 0.1)
    assert blocks == whole


@pytest.mark.parametrize("pairs", [1, 3])
def test_pruned_searches_give_the_brute_force_values(pairs):
    # coupling_noise_scale prunes targets with Jensen, constant and grouped bounds before it
    # reads their draws; at its scale, its eta_upper and eta_point must be the maxima over
    # every target of the exact betting bound and mean (many near-equal targets: the pruning
    # has to decide for most of them).
    from skmip.bounds.betting import _upper
    from skmip.bounds.coupling_draws import _betting_log_thresholds, _draw_values

    rng = np.random.default_rng(7)
    level = np.exp(rng.normal(0.0, 0.1, size=(3000, 1, 1)))
    deltas = level * rng.lognormal(0.0, 0.5, size=(3000, 80, pairs))
    cal = coupling_noise_scale(deltas, 0.2)
    y = _draw_values(deltas, cal.noise_scale, 0.5)
    thresholds = _betting_log_thresholds(np.full(3000, 1 / 3000), 0.05)
    assert cal.eta_upper == min(float(_upper(y, 0.5, thresholds).max()), 0.2)
    assert cal.eta_point == float(y.mean(axis=1).max())
    assert cal.eta_upper == coupling_eta_upper(deltas, cal.noise_scale) or cal.eta_upper == 0.2
