"""The one-run tests of skmip.bounds.one_run rounded against the auditor (issue 30): the claims they
test are never stronger than the exact ones, and a guesser's count may be "in" and "out" guesses."""

import numpy as np
from scipy import stats

from skmip.bounds.gdp import dp_to_gdp_mu
from skmip.bounds.one_run import _least_mass, fdp_refutes, one_run_epsilon_bound, steinke_p_value


def test_the_gaussian_claim_is_rounded_to_a_weaker_one():
    """g must never exceed Phi(Phi^-1(x) - mu*) at the exact mu*: a larger g would refute more."""
    x = np.array([1e-6, 0.01, 0.3, 0.9])
    for eps in (0.5, 2.0, 8.0):
        exact = stats.norm.cdf(stats.norm.ppf(x) - dp_to_gdp_mu(eps, 1e-5))
        assert np.all(_least_mass("gaussian", np.full(x.shape, eps), 1e-5)(x) <= exact)
        dp_curve = np.maximum.reduce([0 * x, np.exp(-eps) * (x - 1e-5), 1 - 1e-5 - np.exp(eps) * (1 - x)])
        assert np.all(_least_mass("dp", np.full(x.shape, eps), 1e-5)(x) <= dp_curve)


def test_the_counts_are_those_of_any_guesses_in_or_out():
    """Nothing in the tests depends on the kind of guess: (m, r, v) only, r = k_plus + k_minus."""
    # delta = 0: Steinke's p-value is the binomial tail itself
    q = 1 / (1 + np.exp(-1.0))
    assert steinke_p_value(1000, 40, 30, 1.0, 0.0)[0] == stats.binom.sf(29, 40, q)
    # the bound is the grid point below the first claim that stands
    eps = one_run_epsilon_bound(1000, 40, 36, delta=0.0, alpha=0.05, method="fdp")
    assert eps > 0 and fdp_refutes(1000, 40, 36, 0.05, [eps], 0.0)[0]
    assert not fdp_refutes(1000, 40, 36, 0.05, [eps + 0.01], 0.0)[0]
