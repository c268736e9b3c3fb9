"""DP baselines: calibration, sensitivity, noise law and the gradient-descent update."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from skmip.bounds import dp_to_gdp_mu, dp_to_mip, gdp_to_dp, mip_to_dp_epsilon
from skmip.release.dp_baselines import (
    analyze_gauss,
    clip_rows,
    dp_gd_noise_multiplier,
    dp_gradient_descent_second_moment,
    gaussian_noise_scale,
    second_moment_gradient_norms,
)


# ----------------------------------------------------------------------------- accounting
@pytest.mark.parametrize("delta", [0.0, 1e-6, 1e-3])
@pytest.mark.parametrize("eta", [0.01, 0.1, 0.3, 0.49])
def test_epsilon_for_mip_inverts_theorem_4(eta, delta):
    assert dp_to_mip(mip_to_dp_epsilon(eta, delta), delta) == pytest.approx(eta, abs=1e-12)


def test_epsilon_for_mip_edges():
    assert mip_to_dp_epsilon(0.5) == math.inf
    with pytest.raises(ValueError, match="delta/2"):
        mip_to_dp_epsilon(1e-4, delta=1e-3)
    with pytest.raises(ValueError, match="eta"):
        mip_to_dp_epsilon(0.6)


@pytest.mark.parametrize("epsilon, delta", list(itertools.product([0.05, 0.5, 1.0, 4.0, 20.0], [1e-9, 1e-5, 1e-2])))
def test_gaussian_dp_mu_inverts_gdp_to_dp(epsilon, delta):
    mu = dp_to_gdp_mu(epsilon, delta)
    assert gdp_to_dp(mu, delta) == pytest.approx(epsilon, rel=1e-8)


def test_classical_calibration_formula_and_range():
    # Dwork & Roth, Theorem A.1: sigma = Delta sqrt(2 ln(1.25/delta)) / epsilon.
    assert gaussian_noise_scale(0.5, 1e-5, 2.0, calibration="classical") == pytest.approx(
        2.0 * math.sqrt(2 * math.log(1.25e5)) / 0.5
    )
    with pytest.raises(ValueError, match="epsilon < 1"):
        gaussian_noise_scale(1.0, 1e-5, calibration="classical")


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 0.9])
def test_analytic_never_noisier_than_classical(epsilon):
    assert gaussian_noise_scale(epsilon, 1e-6) <= gaussian_noise_scale(epsilon, 1e-6, calibration="classical")


def test_dp_gd_composition_is_gdp():
    for neighbours, ratio in (("replace", 2.0), ("add_remove", 1.0)):
        z = dp_gd_noise_multiplier(0.7, 1e-6, 50, neighbours=neighbours)
        assert gdp_to_dp(ratio * math.sqrt(50) / z, 1e-6) == pytest.approx(0.7, rel=1e-8)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: gaussian_noise_scale(0.0, 1e-5), "epsilon"),
        (lambda: gaussian_noise_scale(1.0, 0.0), "delta"),
        (lambda: gaussian_noise_scale(1.0, 1e-5, calibration="exact"), "calibration"),
        (lambda: analyze_gauss(np.ones((4, 2)), epsilon=1.0, delta=1e-5, clip_norm=-1.0), "clip_norm"),
        (lambda: analyze_gauss(np.ones((4, 2)), epsilon=1.0, delta=1e-5, neighbours="swap"), "neighbours"),
        (lambda: analyze_gauss([[np.nan, 1.0]], epsilon=1.0, delta=1e-5), "NaN"),
        (lambda: dp_gradient_descent_second_moment(np.ones((4, 2)), epsilon=1.0, delta=1e-5,
                                                   clip_norm=1.0, init=np.zeros((3, 3))), "init"),
    ],
)
def test_errors_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ----------------------------------------------------------------------------- Analyze Gauss
def _packed(matrix):
    return matrix[np.triu_indices(matrix.shape[0])]


def test_second_moment_sensitivity_bounds():
    # Replace-one: ||ut(x x^T - x' x'^T)|| <= sqrt(2) C^2, attained by orthogonal rows of norm C;
    # add/remove: ||ut(x x^T)|| <= C^2.
    rng = np.random.default_rng(0)
    C = 1.7
    rows = clip_rows(rng.normal(size=(2000, 4)) * 3.0, C)
    worst_replace = max(
        np.linalg.norm(_packed(np.outer(a, a) - np.outer(b, b))) for a, b in zip(rows[:1000], rows[1000:])
    )
    worst_add = max(np.linalg.norm(_packed(np.outer(a, a))) for a in rows)
    assert worst_replace <= math.sqrt(2) * C**2 + 1e-12
    assert worst_add <= C**2 + 1e-12
    e1, e2 = C * np.eye(4)[0], C * np.eye(4)[1]
    assert np.linalg.norm(_packed(np.outer(e1, e1) - np.outer(e2, e2))) == pytest.approx(math.sqrt(2) * C**2)


@pytest.mark.parametrize("neighbours, factor", [("replace", math.sqrt(2)), ("add_remove", 1.0)])
def test_analyze_gauss_noise_law(neighbours, factor):
    # One all-zero row: the output is the noise itself, N(0, s^2) on each upper-triangle entry.
    d, C = 40, 0.5
    out = analyze_gauss(np.zeros((1, d)), epsilon=0.8, delta=1e-6, clip_norm=C, neighbours=neighbours,
                        project_psd=False, random_state=0)
    np.testing.assert_array_equal(out, out.T)
    scale = gaussian_noise_scale(0.8, 1e-6, factor * C**2)
    assert stats.kstest(_packed(out), "norm", args=(0.0, scale)).pvalue > 1e-3


def test_analyze_gauss_clips_then_averages():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400_000, 3)) * 2.0
    out = analyze_gauss(X, epsilon=2.0, delta=1e-7, clip_norm=3.0, project_psd=False, random_state=0)
    rows = clip_rows(X, 3.0)
    target = rows.T @ rows / len(X)
    # Noise on each entry of the average: s / n with s = sqrt(2) * 9 / mu*(2, 1e-7).
    sd = gaussian_noise_scale(2.0, 1e-7, math.sqrt(2) * 9.0) / len(X)
    assert np.abs(out - target).max() < 5 * sd
    psd = analyze_gauss(np.zeros((2, 6)), epsilon=0.5, delta=1e-6, random_state=1)
    assert np.linalg.eigvalsh(psd).min() >= -1e-12


# ----------------------------------------------------------------------------- DP-GD
def test_gradient_norms_match_brute_force():
    rng = np.random.default_rng(2)
    A, X = rng.normal(size=(3, 3)), rng.normal(size=(50, 3))
    brute = [np.linalg.norm(2 * (A - np.outer(x, x))) for x in X]
    np.testing.assert_allclose(second_moment_gradient_norms(A, X), brute, rtol=1e-10)


def test_dp_gd_matches_a_per_example_reference():
    # The vectorised clipped sum against an explicit per-example loop with the same noise draws.
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3)) * 1.5
    eps, delta, C, T, lr = 1.5, 1e-5, 4.0, 5, 0.3
    got = dp_gradient_descent_second_moment(X, epsilon=eps, delta=delta, clip_norm=C, n_steps=T,
                                            learning_rate=lr, random_state=np.random.default_rng(9))
    z = dp_gd_noise_multiplier(eps, delta, T)
    noise_rng = np.random.default_rng(9)
    A = np.zeros((3, 3))
    for _ in range(T):
        total = np.zeros((3, 3))
        for x in X:
            g = 2 * (A - np.outer(x, x))
            total += g * min(1.0, C / np.linalg.norm(g))
        A = A - lr * (total + noise_rng.normal(scale=z * C, size=(3, 3))) / len(X)
    np.testing.assert_allclose(got, A, rtol=1e-10, atol=1e-12)


def test_dp_gd_one_unclipped_step_noise_law():
    # lr = 0.5, one step from 0, no row clipped: A_1 = S - 0.5 * N(0, z^2 C^2) / n exactly.
    rng = np.random.default_rng(4)
    d, n, C = 20, 50, 1e3
    X = rng.normal(size=(n, d))
    S = X.T @ X / n
    A = dp_gradient_descent_second_moment(X, epsilon=1.0, delta=1e-6, clip_norm=C, n_steps=1,
                                          learning_rate=0.5, random_state=0)
    scale = 0.5 * dp_gd_noise_multiplier(1.0, 1e-6, 1) * C / n
    assert stats.kstest((A - S).ravel(), "norm", args=(0.0, scale)).pvalue > 1e-3
