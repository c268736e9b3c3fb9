"""Every printed bound is >= the exact value of its own formula (issue 31, item 5).

Each bound is evaluated again in 40-digit arithmetic (mpmath) from the same inputs; the float
the library returns must not be below it.
"""

import numpy as np
import pytest

mpmath = pytest.importorskip("mpmath")

from skmip.bounds import (  # noqa: E402
    coupling_eta_upper,
    coupling_noise_scale,
    dp_to_mip,
    dpsgd_eta,
    mip_promise,
    mu_to_eta,
    positive_accuracy_bound,
)
from skmip.bounds.betting import BET_FRACTIONS  # noqa: E402
from skmip.bounds.rounding import format_up, relative_error, round_down, round_up  # noqa: E402

mpmath.mp.dps = 40
SQRT8 = mpmath.sqrt(8)


def _tv(d, s):
    return mpmath.erf(mpmath.mpf(float(d)) / (mpmath.mpf(float(s)) * SQRT8))


def _draws(deltas, s, weight, weights=None):
    """Exact per-target, per-draw values c * (weighted) mean TV."""
    t, m, p = deltas.shape
    w = np.full(deltas.shape, 1.0 / p) if weights is None else weights
    c = mpmath.mpf(weight)
    return [[c * mpmath.fsum(mpmath.mpf(float(w[i, r, j])) * _tv(deltas[i, r, j], s) for j in range(p))
             if weights is not None else c * mpmath.fsum(_tv(deltas[i, r, j], s) for j in range(p)) / p
             for r in range(m)] for i in range(t)]


def test_round_up_and_down_bracket_the_value():
    assert round_up(0.1) > 0.1 > round_down(0.1)
    assert round_up(0.0) == 0.0 == round_down(0.0)  # a relative bound keeps an exact zero
    assert round_up(0.0, abs_err=1e-20) > 0.0
    assert round_up(0.5 - 1e-17, rel_err=1e-9, upper=0.5) == 0.5
    assert round_up(np.inf) == np.inf and np.isnan(round_up(np.nan))
    assert relative_error(0) == 0.0 and relative_error(2**60) == np.inf


@pytest.mark.parametrize("value", [4 / 7 + 0.1, 5 / 9 + 0.1, 1 / 3, 0.6, 0.1, 0.9999, 123456.7, 1e-7 / 3])
def test_format_up_never_prints_below_the_value(value):
    text = format_up(value)
    assert float(text) >= value
    assert float(text) <= value * (1 + 1e-2)  # three significant digits: at most one step up


def test_mip_promise_prints_rounded_up():
    # k = 4 of n = 7: prior 4/7 = 0.5714..., total 0.6714...: "0.571" and "0.671" would be below.
    text = mip_promise(0.1, 4, 7)
    assert "= 0.572 + 0.1 = 0.672" in text


@pytest.mark.parametrize("seed", range(40))
def test_coupling_point_calibration_meets_eta_exactly(seed):
    # The synthesizers' calibration (confidence=None on exhaustive, weighted deltas): before
    # issue 31 Brent's root landed on either side and 35 of 40 such draws had an exact
    # level above eta by up to 1e-14 (coupling_eta_ 0.100000000002356 with mip_bound_ 0.1).
    rng = np.random.default_rng(seed)
    deltas = rng.gamma(2.0, 0.5, size=(5, 1, 12))
    weights = rng.dirichlet(np.ones(12), size=(5, 1))
    eta = float(rng.choice([0.05, 0.1, 0.2, 0.3]))
    cal = coupling_noise_scale(deltas, eta, confidence=None, weights=weights)
    exact = max(sum(row) / len(row) for row in _draws(deltas, cal.noise_scale, 0.5, weights))
    assert exact <= eta  # what mip_bound_ = eta states
    assert exact <= cal.eta_point <= eta  # what coupling_eta_ prints
    # Rounding costs nothing visible: the scale is within 1e-9 of the exact root.
    assert cal.eta_point == pytest.approx(eta, rel=1e-9)


def test_point_level_without_noise_is_the_share_of_positive_distances():
    # No noise is needed when every positive distance alone meets eta; the level printed is
    # then the weight of the positive distances (it was printed as 0 before issue 31).
    deltas = np.array([[[0.0, 0.0, 0.0, 1.0]]])
    cal = coupling_noise_scale(deltas, 0.2, confidence=None)
    assert cal.noise_scale == 0.0 and cal.eta_point == pytest.approx(0.5 * 0.25) and cal.eta_point >= 0.125


@pytest.mark.parametrize("s", [0.3, 1.0, 3.0])
def test_betting_upper_bound_is_above_its_exact_value(s):
    # At the printed level U, some bet's exact log-capital reaches ln(K n_t / alpha): U is
    # at least the exact betting bound (the capital is increasing in the level).
    rng = np.random.default_rng(1)
    deltas = rng.gamma(2.0, 0.5, size=(3, 60, 2))
    upper = coupling_eta_upper(deltas, s, confidence=0.9, bound="betting")
    threshold = mpmath.log(mpmath.mpf(len(BET_FRACTIONS)) * 3 / mpmath.mpf("0.1"))
    c = mpmath.mpf(0.5)
    for row in _draws(deltas, s, 0.5):
        best = max(mpmath.fsum(mpmath.log1p(mpmath.mpf(float(f)) / c * (mpmath.mpf(upper) - y)) for y in row)
                   for f in BET_FRACTIONS)
        assert best >= threshold or upper == 0.5


@pytest.mark.parametrize("s", [0.5, 2.0])
def test_maurer_pontil_upper_bound_is_above_its_exact_value(s):
    rng = np.random.default_rng(2)
    deltas = rng.gamma(2.0, 0.5, size=(4, 50, 2))
    upper = coupling_eta_upper(deltas, s, confidence=0.9, bound="maurer-pontil")
    log_term = mpmath.log(2 * 4 / mpmath.mpf("0.1"))
    for row in _draws(deltas, s, 0.5):
        m = len(row)
        mean = mpmath.fsum(row) / m
        var = mpmath.fsum((y - mean) ** 2 for y in row) / (m - 1)
        exact = mean + mpmath.sqrt(2 * var * log_term / m) + 7 * mpmath.mpf(0.5) * log_term / (3 * (m - 1))
        assert upper >= min(exact, mpmath.mpf(0.5))


@pytest.mark.parametrize("sigma, steps, sampling", [(0.5, 1, "fixed"), (1.0, 4, "poisson"), (2.0, 9, "fixed")])
def test_dpsgd_eta_is_above_the_exact_gaussian_level(sigma, steps, sampling):
    # Full batches (q = 1): T steps of a Gaussian of sensitivity 2 and noise sigma, so the
    # exact eta is Phi(sqrt(T) / sigma) - 1/2. DPNeuralNetClassifier(privacy="gdp") after one
    # step printed 0.47724986805178826 against 0.4772498680518208 before issue 31.
    exact = mpmath.ncdf(mpmath.sqrt(steps) / mpmath.mpf(sigma)) - mpmath.mpf(0.5)
    got = dpsgd_eta(sigma, 1.0, steps, sampling=sampling)
    assert got >= exact
    assert got == pytest.approx(float(exact), abs=1e-6)  # the PLD grid's own pessimism


@pytest.mark.parametrize("eps, t, delta, floor", [(0.0, 1e-4, 0.0, 1.0), (2.0, 0.5, 1e-5, 0.01),
                                                  (0.3, 0.9999, 1e-3, 0.0039), (7.0, 0.05, 0.0, 1.0)])
def test_positive_accuracy_bound_is_above_its_exact_value(eps, t, delta, floor):
    exact = 1 / (1 + mpmath.exp(-mpmath.mpf(eps)) * (1 - mpmath.mpf(t)) / mpmath.mpf(t)
                 * (1 - mpmath.mpf(delta) / mpmath.mpf(floor)))  # Theorem 3.3, corrected form
    got = positive_accuracy_bound(eps, sampling_rate=t, delta=delta, min_tpr=floor)
    assert got >= exact and got == pytest.approx(float(exact), rel=1e-12)


@pytest.mark.parametrize("x", [0.01, 0.3, 1.0, 2.5])
def test_closed_form_levels_are_above_their_exact_values(x):
    assert mu_to_eta(x) >= mpmath.ncdf(mpmath.mpf(x) / 2) - mpmath.mpf(0.5)
    exact = mpmath.mpf(1e-5) + (1 - mpmath.mpf(1e-5)) / (1 + mpmath.exp(-mpmath.mpf(x))) - mpmath.mpf(0.5)
    assert dp_to_mip(x, 1e-5) >= exact


@pytest.mark.parametrize("eta, moment", [(0.1, 2), (0.013, 3), (0.5, 7.5)])
def test_the_noise_constant_is_at_least_corollary_10s(eta, moment):
    from skmip.bounds import mip_noise_constant

    exact = (mpmath.mpf("6.16") / mpmath.mpf(eta)) ** (1 + 2 / mpmath.mpf(moment))
    assert mip_noise_constant(eta, moment=moment) >= exact
    assert mip_noise_constant(eta, moment=moment) == pytest.approx(float(exact), rel=1e-13)


def test_the_printed_promise_is_the_exact_bound_rounded_up():
    """k/n in exact rationals and eta as typed: 0.5 + 0.3 prints 0.8 (a float sum rounded up by
    an ulp printed 0.801); k = 4 of n = 9: max(k/n, 1-k/n) = 5/9 prints 0.556 and the sum
    0.6555... prints 0.656, both rounded up."""
    from fractions import Fraction

    from skmip.bounds import mip_promise
    from skmip.bounds.rounding import format_up

    assert mip_promise(0.3, 105, 210).endswith("= 0.5 + 0.3 = 0.8 (k = 105 of n = 210)")
    assert mip_promise(0.1, 50, 100).endswith("= 0.5 + 0.1 = 0.6 (k = 50 of n = 100)")
    text = mip_promise(0.1, 4, 9)
    assert "= 0.556 + 0.1 = 0.656 " in text
    assert Fraction(format_up(Fraction(5, 9) + Fraction(1, 10))) >= Fraction(5, 9) + Fraction(1, 10)
