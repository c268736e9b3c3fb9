"""skmip.bounds.accounting and profile_to_mip: rigorous accounting, eta = replace-one TV / 2."""

import itertools

import numpy as np
import pytest
from scipy import optimize, stats

pytest.importorskip("dp_accounting")

from skmip.bounds import (  # noqa: E402
    dp_to_mip,
    dpsgd_delta,
    dpsgd_epsilon,
    dpsgd_eta,
    dpsgd_noise_multiplier,
    gdp_to_dp,
    profile_to_mip,
)


def exact_advantage(values, target, k, s, grid):
    """Best attacker's accuracy - 1/2 for M(S) = sum(S) + N(0, s^2), S a uniform k-subset (prior 1/2)."""
    n = len(values)
    ins, outs = [], []
    for S in itertools.combinations(range(n), k):
        (ins if target in S else outs).append(sum(values[i] for i in S))
    ins, outs = np.array(ins, float), np.array(outs, float)

    def g(x):  # f_in - f_out
        return stats.norm.pdf(x, ins, s).mean() - stats.norm.pdf(x, outs, s).mean()

    def mass(a, b):  # P_in([a, b]) - P_out([a, b]), exactly, with normal CDFs
        cdf = lambda m: stats.norm.cdf(b, m, s) - stats.norm.cdf(a, m, s)  # noqa: E731
        return cdf(ins).mean() - cdf(outs).mean()

    # The set {f_in > f_out} is a union of intervals whose ends are the sign changes of g
    # on the grid, refined by Brent's method: the total variation is then exact.
    vals = np.array([g(x) for x in grid])
    cuts = [-np.inf]
    for i in np.flatnonzero(np.sign(vals[:-1]) * np.sign(vals[1:]) < 0):
        cuts.append(optimize.brentq(g, grid[i], grid[i + 1], xtol=1e-14))
    cuts.append(np.inf)
    tv = sum(max(mass(a, b), 0.0) for a, b in zip(cuts[:-1], cuts[1:]))
    return tv / 2


def test_profile_to_mip_bounds_the_exact_attacker_and_is_attained():
    """Every dataset of {-1, 0, 1}^4, every target, k = 2: exact Bayes advantage <= TV/2.

    Replacing a record moves the sum by at most 2, so the replace-one TV is
    2 Phi(1/s) - 1 (two normals 2 apart); [1, -1, -1, -1] with target 0 realises it.
    """
    s = 0.8
    tv = 2 * stats.norm.cdf(1 / s) - 1
    bound = profile_to_mip(tv)
    # Offset so that no crossing point (a multiple of 1/2 here) falls on a grid point.
    grid = np.linspace(-6.0123, 6.0311, 241)
    worst = 0.0
    for values in itertools.product((-1, 0, 1), repeat=4):
        for target in range(4):
            worst = max(worst, exact_advantage(values, target, 2, s, grid))
    # Exact up to round-off (normal CDFs at Brent-refined crossing points).
    assert worst <= bound + 1e-12
    assert worst == pytest.approx(bound, abs=1e-9)
    # Theorem 4 at any point of the same (Gaussian) profile is larger.
    mu = 2 / s
    for delta in (1e-5, 1e-3, 0.05):
        assert bound < dp_to_mip(gdp_to_dp(mu, delta), delta)


def test_randomized_response_tv_equals_theorem_4():
    eps = np.linspace(0.1, 5, 20)
    np.testing.assert_allclose(profile_to_mip(np.tanh(eps / 2)), dp_to_mip(eps), rtol=1e-12)
    with pytest.raises(ValueError, match="tv must be in"):
        profile_to_mip(1.5)


def test_full_batch_fixed_size_is_the_gaussian_mechanism():
    """q = 1: every step is the Gaussian mechanism with replace-one sensitivity 2 (mu = 2/sigma)."""
    sigma, T, delta = 3.0, 25, 1e-5
    exact = gdp_to_dp(2 * np.sqrt(T) / sigma, delta)
    pld = dpsgd_epsilon(sigma, 1.0, T, delta, sampling="fixed", adjacency="replace_one")
    assert exact <= pld <= exact + 2e-3  # pessimistic: above, by the discretisation only
    tv = 2 * stats.norm.cdf(np.sqrt(T) / sigma) - 1
    eta = dpsgd_eta(sigma, 1.0, T, sampling="fixed")
    assert tv / 2 <= eta <= tv / 2 + 1e-3


def test_fixed_size_sits_between_its_lower_bound_and_rdp():
    import dp_accounting as dpa
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
    from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

    n, B, T, delta = 1000, 10, 100, 1e-5
    for sigma in (1.0, 2.0):
        ours = dpsgd_epsilon(sigma, B / n, T, delta, sampling="fixed", adjacency="replace_one")
        lower = PLDAccountant(dpa.NeighboringRelation.ADD_OR_REMOVE_ONE)
        lower.compose(dpa.PoissonSampledDpEvent(B / n, dpa.GaussianDpEvent(sigma / 2)), T)
        rdp = RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
        rdp.compose(dpa.SampledWithoutReplacementDpEvent(n, B, dpa.GaussianDpEvent(sigma / 2)), T)
        assert lower.get_epsilon(delta) <= ours <= rdp.get_epsilon(delta)


@pytest.mark.parametrize("sigma, q, T", [(1.0, 0.01, 100), (2.0, 0.01, 1000), (0.8, 0.1, 100)])
def test_poisson_relations_and_eta(sigma, q, T):
    delta = 1e-5
    add_remove = dpsgd_epsilon(sigma, q, T, delta)
    replace = dpsgd_epsilon(sigma, q, T, delta, adjacency="replace_one")
    assert add_remove <= replace
    eta = dpsgd_eta(sigma, q, T)
    assert eta == profile_to_mip(dpsgd_delta(sigma, q, T, 0.0, adjacency="replace_one"))
    assert eta <= dp_to_mip(replace, delta)


def test_noise_multiplier_calibration_and_edges():
    s = dpsgd_noise_multiplier(1.0, 1e-5, 0.02, 200)
    assert dpsgd_epsilon(s, 0.02, 200, 1e-5) <= 1.0 < dpsgd_epsilon(s / 1.01, 0.02, 200, 1e-5)
    assert dpsgd_epsilon(0.0, 0.02, 10, 1e-5) == np.inf and dpsgd_eta(0.0, 0.02, 10) == 0.5
    assert dpsgd_epsilon(1.0, 0.02, 0, 1e-5) == 0.0
    with pytest.raises(ValueError, match="sampling='fixed' is defined for adjacency='replace_one' only"):
        dpsgd_epsilon(1.0, 0.1, 10, 1e-5, sampling="fixed")
    with pytest.raises(ValueError, match="delta must be in"):
        dpsgd_epsilon(1.0, 0.1, 10, 1.5)
