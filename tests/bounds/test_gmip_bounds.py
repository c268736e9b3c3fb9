"""skmip.bounds.gmip (Leemann et al. Eqs. 8-10, GDP of noisy SGD). Pure numpy: no torch."""

import numpy as np
import pytest
from scipy import stats

from skmip.bounds import (
    gaussian_compose,
    gaussian_tradeoff,
    gdp_mu,
    gdp_noise_multiplier,
    gdp_to_dp,
    gmip_compose,
    gmip_effective_batch_size,
    gmip_mu,
    gmip_mu_step,
    gmip_noise_multiplier,
    gmip_tradeoff,
    mu_to_eta,
)

ALPHAS = np.array([0.01, 0.05, 0.1, 0.25, 0.5])


def _binomial_tol(p, reps, z=4.0):
    return z * np.sqrt(np.maximum(p * (1 - p), 1.0 / reps) / reps)


def test_gaussian_tradeoff_is_a_tradeoff_function():
    a = np.linspace(0, 1, 201)
    for mu in (0.0, 0.5, 2.0):
        f = gaussian_tradeoff(a, mu)
        assert np.all(np.diff(f) <= 1e-12) and np.all(f <= 1 - a + 1e-12)
        assert np.all(np.diff(f, 2) >= -1e-9)  # convex
    np.testing.assert_allclose(gaussian_tradeoff(a, 0.0), 1 - a, atol=1e-12)


def test_mu_to_eta_is_the_best_accuracy_advantage():
    a = np.linspace(0, 1, 100_001)
    for mu in (0.3, 1.0, 3.0):
        best = np.max((1 - a + 1 - gaussian_tradeoff(a, mu)) / 2) - 0.5
        assert mu_to_eta(mu) == pytest.approx(best, abs=1e-8)


def _simulate_noisy_step(rng, n, d, K, s, reps):
    """One noisy-SGD step in whitened coordinates, noise s*Sigma: H0 z ~ N(0, a I), H1
    z ~ N(u/n, b I). Returns the rescaled LRT statistic and the code's raw statistic."""
    u = np.zeros(d)
    u[0] = np.sqrt(K)
    a, b = 1 / n + s, (n - 1) / n**2 + s
    z0 = rng.normal(scale=np.sqrt(a), size=(reps, d))
    z1 = u / n + rng.normal(scale=np.sqrt(b), size=(reps, d))
    n_eff = n + s * n**2
    lam = n / n_eff
    lrt = [n_eff * np.sum((lam * z - u) ** 2, axis=1) for z in (z0, z1)]
    raw = [np.sum((z - u) ** 2, axis=1) for z in (z0, z1)]
    return lrt, raw, n_eff


@pytest.mark.parametrize("s", [0.0, 0.05])
def test_eq8_is_the_exact_tradeoff_of_the_noisy_step(s):
    """Monte Carlo of the Gaussian model of Theorem 5.1, with and without noise: the
    rescaled statistic has power 1 - Eq. 8 (with n_eff) at every FPR."""
    rng = np.random.default_rng(0)
    n, d, K, reps = 20, 10, 10.0, 20_000
    (t0, t1), _, n_eff = _simulate_noisy_step(rng, n, d, K, s, reps)
    thresholds = stats.ncx2.ppf(ALPHAS, d, n_eff * K)
    fpr = (t0[:, None] <= thresholds).mean(axis=0)
    tpr = (t1[:, None] <= thresholds).mean(axis=0)
    # tau = sqrt(s) * C with C = 1 gives s = tau^2 / C^2.
    beta = gmip_tradeoff(ALPHAS, n, d, K, tau=np.sqrt(s), clip_norm=1.0)
    assert np.all(np.abs(fpr - ALPHAS) <= _binomial_tol(ALPHAS, reps))
    assert np.all(np.abs(tpr - (1 - beta)) <= _binomial_tol(1 - beta, reps))


def test_code_variant_statistic_is_weaker_than_the_lrt():
    """The authors' code's mu is the Gaussian approximation of the unrescaled statistic;
    with noise that test has less power than the LRT, so it cannot bound the attacker."""
    rng = np.random.default_rng(1)
    n, d, K, s, reps = 2, 10, 40.0, 5.0, 20_000  # a regime with a visible gap (~0.17)
    (l0, l1), (r0, r1), _ = _simulate_noisy_step(rng, n, d, K, s, reps)
    alpha = 0.1
    power_lrt = (l1 <= np.quantile(l0, alpha)).mean()
    power_raw = (r1 <= np.quantile(r0, alpha)).mean()
    assert power_lrt > power_raw + _binomial_tol(0.5, reps)
    tau = np.sqrt(s)
    assert gmip_mu_step(n, d, K, tau, 1.0) > gmip_mu_step(n, d, K, tau, 1.0, variant="code")


def test_variants_agree_without_noise_and_lrt_dominates():
    n, d, K = np.meshgrid([2, 16, 256], [1, 100, 5000], [0.0, 1.0, 100.0, 1e4], indexing="ij")
    np.testing.assert_allclose(gmip_mu_step(n, d, K), gmip_mu_step(n, d, K, variant="code"))
    tau = 3.0 / n
    assert np.all(gmip_mu_step(n, d, K, tau, 1.0) >= gmip_mu_step(n, d, K, tau, 1.0, variant="code") - 1e-12)


def test_eq9_approximates_eq8_for_large_d_and_n():
    # Leemann Fig. 1: the chi-square curve converges to the Gaussian one.
    gaps = []
    for n, d in [(50, 20), (500, 200), (5000, 2000)]:
        mu = gmip_mu_step(n, d)
        gaps.append(np.max(np.abs(gmip_tradeoff(ALPHAS, n, d) - gaussian_tradeoff(ALPHAS, mu))))
    assert gaps[0] > gaps[1] > gaps[2] and gaps[2] < 5e-3


def test_fig2a_glir_matches_eq8_with_known_parameters():
    """Leemann Fig. 2a: simulated Gaussian gradients with known mean and covariance, query
    gradients at susceptibility exactly K = d. GLiR's empirical FPR and TPR at each level
    match alpha and 1 - Eq. 8 within Monte-Carlo error."""
    glir = pytest.importorskip("skmip.audit.attacks.glir")
    rng = np.random.default_rng(2)
    n, d, reps = 20, 6, 1500
    A = rng.normal(size=(d, d))
    cov = A @ A.T / d + np.eye(d)
    mean = rng.normal(size=d)
    log_p0, log_p1 = glir.simulate_glir_gaussian(
        n, d, n_trials=reps, mean=mean, covariance=cov, random_state=rng
    )
    p0, p1 = np.exp(log_p0), np.exp(log_p1)
    fpr = (p0[:, None] < ALPHAS).mean(axis=0)
    tpr = (p1[:, None] < ALPHAS).mean(axis=0)
    expected = 1 - gmip_tradeoff(ALPHAS, n, d, K=d)
    assert np.all(np.abs(fpr - ALPHAS) <= _binomial_tol(ALPHAS, reps))
    assert np.all(np.abs(tpr - expected) <= _binomial_tol(expected, reps))


def test_fig2a_simulation_paper_scale_and_errors():
    """With the paper's n - 1 scale the non-member p-values are no longer uniform
    (glir_scores, Notes); invalid inputs are refused."""
    glir = pytest.importorskip("skmip.audit.attacks.glir")
    n, d, reps = 10, 4, 4000
    out, _ = glir.simulate_glir_gaussian(n, d, K=2.0, n_trials=reps, statistic="paper", random_state=3)
    # The n - 1 scale shrinks the statistic, so p-values are too small: FPR above alpha.
    assert np.mean(np.exp(out) < 0.1) > 0.1 + _binomial_tol(0.1, reps)
    with pytest.raises(ValueError, match="positive definite"):
        glir.simulate_glir_gaussian(n, d, covariance=-np.eye(d))
    with pytest.raises(ValueError, match="mean must have shape"):
        glir.simulate_glir_gaussian(n, d, mean=np.zeros(3))
    with pytest.raises(ValueError, match="K must be"):
        glir.simulate_glir_gaussian(n, d, K=0.0)


def test_compose_and_gdp():
    # Eq. 10 at mu_step -> 0 vanishes; the CLT bracket is increasing in mu_step.
    mus = gmip_compose(np.array([0.0, 0.5, 1.0, 2.0]), 64, 1000, 100)
    assert mus[0] == 0 and np.all(np.diff(mus) > 0)
    assert gmip_compose(1.0, 64, 1000, 0) == 0
    assert gdp_mu(0.0, 64, 1000, 10) == np.inf
    assert gdp_mu(4.0, 64, 1000, 10) == pytest.approx(gmip_compose(0.5, 64, 1000, 10))
    assert gaussian_compose(1.0, 9) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="batch_size must be <= n_samples"):
        gmip_compose(1.0, 2000, 1000, 10)


def test_calibrations_invert_and_gmip_never_needs_more_noise():
    B, N, T, d = 64, 2000, 300, 100
    free = gmip_mu(0.0, B, N, T, d=d)
    for mu in (0.2, 0.5, 1.0, 2.0):
        s_dp = gdp_noise_multiplier(mu, B, N, T)
        assert gdp_mu(s_dp, B, N, T) == pytest.approx(mu, rel=1e-8)
        s_mip = gmip_noise_multiplier(mu, B, N, T, d=d, use_dp_bound=False)
        if mu >= free:
            assert s_mip == 0.0
        else:
            assert gmip_mu(s_mip, B, N, T, d=d) == pytest.approx(mu, rel=1e-8)
        assert gmip_noise_multiplier(mu, B, N, T, d=d) == min(s_mip, s_dp)
    assert gmip_effective_batch_size(B, tau=2.0 / B, clip_norm=1.0) == pytest.approx(B + 4.0)


def test_gdp_to_dp_inverts_corollary_2_13():
    for mu in (0.5, 1.0, 3.0):
        for delta in (1e-3, 1e-6):
            eps = gdp_to_dp(mu, delta)
            got = stats.norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * stats.norm.cdf(-eps / mu - mu / 2)
            assert got == pytest.approx(delta, rel=1e-6)
    assert gdp_to_dp(0.01, 0.5) == 0.0
    # Large mu (tiny noise): no overflow; epsilon grows like mu^2 / 2.
    eps = gdp_to_dp(1e3, 1e-5)
    assert np.isfinite(eps) and 0.5e6 <= eps <= 0.51e6


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: gaussian_tradeoff(1.5, 1.0), "alpha must be in"),
        (lambda: gaussian_tradeoff(0.5, -1.0), "mu must be >= 0"),
        (lambda: gmip_mu_step(10, 5, variant="paper"), "variant must be"),
        (lambda: gmip_tradeoff(0.1, 1, 5), "n must be > 1"),
        (lambda: gdp_to_dp(1.0, 1.5), "delta must be in"),
    ],
)
def test_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
