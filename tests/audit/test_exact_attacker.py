"""Tests of the exact Bayes-optimal attacker and, through it, of the MIP noise.

Tolerances come from the Monte-Carlo standard error (se):
* agreement with a closed form or a quadrature: |estimate - truth| < 4 se (two-sided);
* "the promise holds": the one-sided 99.9% upper bound estimate + z_0.999 se is below eta
  (rejects "advantage >= eta" at level 0.001);
* "the promise is broken": the one-sided 99.9% lower bound estimate - z_0.999 se exceeds eta.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from joblib import parallel_backend
from scipy import integrate, stats

from skmip.audit.attacks.bayes import ExactAuditResult, exact_mip_advantage
from skmip.bounds import mip_noise_constant

Z2 = 4.0
Z1 = stats.norm.ppf(0.999)


def mean(s):
    return s.mean(axis=0)


def outlier_data(n, d, value=1.0):
    """One outlying record among n - 1 zeros: the strongest case for mean estimation.

    The half mean is value/k with the outlier and 0 without, so the output is a
    deterministic function of the outlier's membership and in/out are separated by 2 sigma,
    the most an M-th central moment of sigma^M allows (Jensen).
    """
    data = np.zeros((n, d))
    data[0] = value
    return data


# --------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("radius", ["gamma", "laplace"])
@pytest.mark.parametrize("eta, moment", [(0.3, 2), (0.5, 4), (0.5, 6)])
def test_one_dimensional_two_point_closed_form(radius, eta, moment):
    # d = 1: both radii give Laplace(c sigma) noise; outputs 2 sigma apart, so the optimal
    # attacker's advantage on the outlier is TV/2 = (1 - exp(-1/c)) / 2.
    res = exact_mip_advantage(mean, outlier_data(6, 1, 3.0), eta=eta, moment=moment,
                              radius=radius, target=0, n_mc=4000, random_state=0)
    exact = (1 - math.exp(-1 / mip_noise_constant(eta, moment))) / 2
    assert res.n_outputs == 2 and res.stratified
    assert abs(res.advantage[0] - exact) < Z2 * res.std_error[0]


def test_generic_gaussian_noise_two_point_closed_form():
    # N(0, s^2 I) noise, outputs a and 0 at Euclidean distance D: advantage Phi(D/2s) - 1/2.
    d, s = 3, 0.2
    data = outlier_data(4, d, 0.5)  # outputs (0.25, 0.25, 0.25) and 0
    dist = 0.25 * math.sqrt(d)
    res = exact_mip_advantage(
        mean, data, target=0, n_mc=4000, random_state=1,
        noise_sampler=lambda n, rng: s * rng.standard_normal((n, d)),
        noise_logpdf=lambda x: -0.5 * np.sum(x**2, axis=1) / s**2,
    )
    exact = stats.norm.cdf(dist / (2 * s)) - 0.5
    assert res.sigma is None
    assert abs(res.advantage[0] - exact) < Z2 * res.std_error[0]


@pytest.mark.parametrize("stratify", [True, False])
def test_matches_quadrature_on_a_generic_dataset(stratify):
    # n = 6 records in 1-D with repeats (20 halves, 12 distinct outputs of unequal
    # multiplicity): every target's optimal accuracy is (1/H) * integral of
    # max(sum_in p, sum_out p), computed here by brute force and quadrature, independently
    # of the module's enumeration and deduplication.
    data = np.array([0.0, 0.0, 0.3, 1.0, 1.0, 4.0])[:, None]
    b = 0.4  # Laplace scale
    halves = list(itertools.combinations(range(6), 3))
    outs = np.array([data[list(h), 0].mean() for h in halves])

    def accuracy(t):
        inside = np.array([t in h for h in halves])

        def f(th):
            p = np.exp(-np.abs(th - outs) / b) / (2 * b)
            return max(p[inside].sum(), p[~inside].sum()) / len(halves)

        lo, hi = outs.min() - 40 * b, outs.max() + 40 * b
        return integrate.quad(f, lo, hi, points=np.sort(outs), limit=500, epsabs=1e-10)[0]

    truth = np.array([accuracy(t) for t in range(6)]) - 0.5
    res = exact_mip_advantage(
        mean, data, n_mc=3000, stratify=stratify, random_state=2,
        noise_sampler=lambda n, rng: rng.laplace(0.0, b, size=(n, 1)),
        noise_logpdf=lambda x: -np.abs(x[:, 0]) / b,
    )
    assert res.n_halves == 20 and res.n_outputs == len(np.unique(outs)) < 20
    assert res.stratified is stratify
    assert np.all(np.abs(res.advantage - truth) < Z2 * res.std_error)
    assert truth.max() > 0.05  # a non-trivial case


def test_identical_records_leak_nothing():
    res = exact_mip_advantage(mean, np.ones((6, 2)), eta=0.1, n_mc=50, random_state=0)
    assert res.n_outputs == 1
    np.testing.assert_array_equal(res.advantage, 0.0)
    np.testing.assert_array_equal(res.sigma, 0.0)


def test_zero_sigma_on_a_varying_coordinate_releases_membership():
    # A coordinate the sigma estimate wrongly calls constant gets no noise: the optimal
    # attacker then reads the outlier's membership off it exactly.
    data = outlier_data(6, 2)
    res = exact_mip_advantage(mean, data, eta=0.1, sigma=[1 / 6, 0.0], target=0, n_mc=50,
                              random_state=0)
    np.testing.assert_allclose(res.advantage, 0.5)


# --------------------------------------------------------------------------- sigma


@pytest.mark.parametrize("moment", [2, 4])
def test_exact_sigma_of_the_outlier_dataset(moment):
    # theta = v/k w.p. 1/2, else 0: |theta - E theta| = v/(2k) = v/n always.
    v = np.array([2.0, -1.0, 0.0])
    data = np.zeros((8, 3))
    data[0] = v
    res = exact_mip_advantage(mean, data, eta=0.1, moment=moment, n_mc=10, random_state=0)
    np.testing.assert_allclose(res.sigma, np.abs(v) / 8, rtol=1e-12)
    assert res.sigma[2] == 0.0


# --------------------------------------------------------------------------- the MIP promise


@pytest.mark.parametrize("d", [1, 2, 5, 100])
@pytest.mark.parametrize("moment", [2, 4])
def test_gamma_radius_keeps_the_promise_on_the_strongest_dataset(d, moment):
    # One audit per (d, M), all four eta; the outlier target is the most exposed record.
    for eta in (0.05, 0.1, 0.2, 0.3):
        res = exact_mip_advantage(mean, outlier_data(8, d), eta=eta, moment=moment,
                                  target=0, n_mc=1000, random_state=3)
        assert res.upper_confidence_bound(0.999)[0] < eta
        # Far below: the log-likelihood ratio is at most ||a - b|| / c = 2 / c.
        assert res.advantage[0] <= math.tanh(1 / mip_noise_constant(eta, moment)) / 2


def test_gamma_radius_keeps_the_promise_on_a_random_dataset():
    data = np.random.default_rng(4).standard_normal((10, 5))
    res = exact_mip_advantage(mean, data, eta=0.1, moment=2, n_mc=1000, random_state=5)
    assert res.n_outputs == 252 and not res.stratified
    assert np.all(res.upper_confidence_bound(0.999) < 0.1)


@pytest.mark.parametrize("eta", [0.1, 0.3])
def test_printed_laplace_radius_breaks_the_promise_for_m6_d1000(eta):
    res = exact_mip_advantage(mean, outlier_data(8, 1000), eta=eta, moment=6, radius="laplace",
                              target=0, n_mc=1000, random_state=6)
    assert res.advantage[0] - Z1 * res.std_error[0] > eta


# --------------------------------------------------------------------------- API


def test_result_does_not_depend_on_n_jobs():
    data = np.random.default_rng(7).standard_normal((8, 3))
    kw = dict(eta=0.1, n_mc=300, random_state=8)
    one = exact_mip_advantage(mean, data, n_jobs=1, **kw)
    with parallel_backend("threading"):
        two = exact_mip_advantage(mean, data, n_jobs=2, **kw)
    np.testing.assert_array_equal(one.advantage, two.advantage)
    np.testing.assert_array_equal(one.std_error, two.std_error)


def test_tuple_data_and_result_fields():
    rng = np.random.default_rng(9)
    X, y = rng.standard_normal((8, 2)), rng.standard_normal(8)

    def ols(Xs, ys):
        return np.linalg.lstsq(Xs, ys, rcond=None)[0]

    res = exact_mip_advantage(ols, (X, y), eta=0.2, target=[0, 3], n_mc=200, random_state=0)
    assert isinstance(res, ExactAuditResult)
    assert res.targets.tolist() == [0, 3] and res.n_halves == 70 and res.sigma.shape == (2,)
    assert np.all((res.advantage >= 0) & (res.advantage <= 0.5))
    np.testing.assert_allclose(res.accuracy, 0.5 + res.advantage)
    assert np.all(res.upper_confidence_bound(0.99) >= res.advantage)


@pytest.mark.parametrize(
    "data, kwargs, exc, match",
    [
        (np.zeros((5, 1)), dict(eta=0.1), ValueError, "even"),
        (np.zeros((18, 1)), dict(eta=0.1), ValueError, r"len\(data\) must be in \[2, 16\]"),
        (np.zeros((4, 1)), dict(), ValueError, "eta is required"),
        (np.zeros((4, 1)), dict(eta=0.1, noise_sampler=lambda n, r: None), ValueError, "both"),
        (np.zeros((4, 1)), dict(eta=0.1, sigma=[1.0, 1.0]), ValueError, "sigma has 2"),
        (np.zeros((4, 1)), dict(eta=0.1, target=4), ValueError, r"\[0, 3\]"),
        (np.zeros((4, 1)), dict(eta=0.7), ValueError, "eta must be in"),
        (np.zeros((4, 1)), dict(eta=0.1, radius="x"), ValueError, "radius"),
        ((np.zeros(4), np.zeros(3)), dict(eta=0.1), ValueError, "same length"),
    ],
)
def test_validation_messages(data, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        exact_mip_advantage(mean, data, n_mc=10, random_state=0, **kwargs)


def test_algorithm_output_must_have_fixed_length():
    def ragged(s):
        return s[s[:, 0] > 0, 0]

    with pytest.raises(ValueError, match="different lengths"):
        exact_mip_advantage(ragged, np.arange(1.0, 7.0)[:, None] - 3, eta=0.1, n_mc=10, random_state=0)
