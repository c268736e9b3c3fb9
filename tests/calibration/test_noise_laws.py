"""Statistical and contract tests of skmip.calibration.noise_laws (the MIP noise of Izzo et al.).

Every statistical test uses a fixed seed and a tolerance derived from the distribution: a
KS test at level 1e-3, or a CLT interval of 4 standard errors (two-sided level ~6e-5).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from skmip.bounds import mip_noise_constant
from skmip.exceptions import PrivacyWarning
from skmip.calibration.noise_laws import (
    MIPNoiseLaw,
    _sample_direction,
    mip_noise_logpdf,
    mip_norm,
    sample_mip_noise,
)

KS_LEVEL = 1e-3
Z = 4.0


def _gen(seed):
    return np.random.default_rng(seed)


# --------------------------------------------------------------------------- mip_norm


def test_mip_norm_matches_definition_and_is_vectorised():
    rng = _gen(0)
    sigma = rng.uniform(0.5, 2.0, size=7)
    x = rng.normal(size=(5, 7))
    for m in (2, 3.5, 6):
        expected = (np.sum(np.abs(x / sigma) ** m, axis=1) / 7) ** (1 / m)
        np.testing.assert_allclose(mip_norm(x, sigma, m), expected, rtol=1e-12)
        assert mip_norm(x[0], sigma, m) == pytest.approx(expected[0], rel=1e-12)


def test_mip_norm_does_not_overflow_for_large_noise():
    # |x|^6 of 1e300 overflows; the scaled computation must not.
    x = np.array([1e300, -1e300])
    assert mip_norm(x, [1.0, 1.0], 6) == pytest.approx(1e300, rel=1e-12)


def test_mip_norm_zero_sigma_coordinates():
    sigma = [1.0, 0.0, 1.0]
    assert mip_norm([3.0, 0.0, 4.0], sigma) == pytest.approx(np.sqrt(25 / 2))  # d = 2
    assert mip_norm([3.0, 1e-9, 4.0], sigma) == np.inf


# --------------------------------------------------------------------------- radius laws


@pytest.mark.parametrize("d, moment", [(1, 2), (3, 2), (5, 4), (40, 6)])
def test_gamma_radius_norm_is_gamma_d_c(d, moment):
    sigma = np.linspace(0.5, 3.0, d)
    eta = 0.2
    c = mip_noise_constant(eta, moment)
    x = sample_mip_noise(sigma, eta=eta, moment=moment, random_state=_gen(1), n_samples=4000)
    p = stats.kstest(mip_norm(x, sigma, moment), stats.gamma(a=d, scale=c).cdf).pvalue
    assert p > KS_LEVEL


@pytest.mark.parametrize("d, moment", [(1, 2), (4, 2), (30, 4)])
def test_laplace_radius_norm_is_abs_laplace(d, moment):
    sigma = np.linspace(1.0, 2.0, d)
    c = mip_noise_constant(0.1, moment)
    with pytest.warns(PrivacyWarning) if d > 1 else _no_warning():
        x = sample_mip_noise(
            sigma, eta=0.1, moment=moment, radius="laplace", random_state=_gen(2), n_samples=4000
        )
    # |Laplace(0, c)| is Exponential(scale=c).
    p = stats.kstest(mip_norm(x, sigma, moment), stats.expon(scale=c).cdf).pvalue
    assert p > KS_LEVEL


class _no_warning:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("error", PrivacyWarning)

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)


# --------------------------------------------------------------------------- direction


@pytest.mark.parametrize("moment", [2, 3, 4, 6, 50])
def test_direction_lies_on_the_unit_sphere(moment):
    u = _sample_direction(9, moment, _gen(3), 500)
    assert np.all(np.isfinite(u))
    np.testing.assert_allclose(mip_norm(u, np.ones(9), moment), 1.0, rtol=1e-12)


def test_angle_uniform_for_isotropic_gaussian_case():
    # d = 2, sigma = (1, 1), M = 2: the cone measure of the circle is uniform.
    x = sample_mip_noise([1.0, 1.0], eta=0.1, moment=2, random_state=_gen(4), n_samples=5000)
    angle = np.arctan2(x[:, 1], x[:, 0])
    assert stats.kstest(angle, stats.uniform(-np.pi, 2 * np.pi).cdf).pvalue > KS_LEVEL


@pytest.mark.parametrize("radius", ["gamma", "laplace"])
def test_angle_law_is_the_cone_measure_for_m4(radius):
    # Any density f(||x||) in d = 2 gives the angle phi the density proportional to
    # ||(cos phi, sin phi)||^(-2) (polar coordinates), whatever the radial profile. This
    # checks the direction law independently of the Dirichlet argument. A chi-square test
    # on 64 angle bins: the law is periodic, so a KS test would be nearly blind to a wrong
    # M (a Gaussian direction moves the CDF by < 0.01 but bin masses by ~10%).
    sigma, m, n = np.array([1.0, 2.0]), 4, 20000
    grid = np.linspace(-np.pi, np.pi, 64 * 400 + 1)
    dens = mip_norm(np.c_[np.cos(grid), np.sin(grid)], sigma, m) ** -2.0
    cdf = integrate.cumulative_trapezoid(dens, grid, initial=0.0)
    prob = np.diff(cdf[::400]) / cdf[-1]
    with pytest.warns(PrivacyWarning) if radius == "laplace" else _no_warning():
        x = sample_mip_noise(sigma, eta=0.1, moment=m, radius=radius, random_state=_gen(5),
                             n_samples=n)
    observed, _ = np.histogram(np.arctan2(x[:, 1], x[:, 0]), bins=grid[::400])
    assert stats.chisquare(observed, prob / prob.sum() * n).pvalue > KS_LEVEL


def test_norm_and_direction_are_independent():
    # Spearman correlation of ||X|| with |U_1|: under independence it is ~ N(0, 1/(n-1)).
    n = 5000
    sigma = np.array([1.0, 3.0, 0.5])
    x = sample_mip_noise(sigma, eta=0.1, moment=4, random_state=_gen(6), n_samples=n)
    s = mip_norm(x, sigma, 4)
    rho = stats.spearmanr(s, np.abs(x[:, 0]) / s).statistic
    assert abs(rho) < Z / np.sqrt(n - 1)


@pytest.mark.parametrize("radius", ["gamma", "laplace"])
@pytest.mark.parametrize("d, moment", [(1, 2), (3, 2), (3, 4), (6, 6)])
def test_per_coordinate_second_moments(radius, d, moment):
    # E[X_i^2] = E[r^2] E[U_i^2]. With Z_j = |Y_j/sigma_j|^M ~ Gamma(1/M) iid, D = Z/sum(Z) is
    # Dirichlet(1/M, ..., 1/M) and U_i^2 = sigma_i^2 d^(2/M) D_i^(2/M), D_i ~ Beta(1/M, (d-1)/M):
    # E[U_i^2] = sigma_i^2 d^(2/M) Gamma(3/M) Gamma(d/M) / (Gamma(1/M) Gamma((d+2)/M)).
    eta, n = 0.3, 40000
    sigma = np.linspace(0.5, 2.0, d)
    c = mip_noise_constant(eta, moment)
    er2 = d * (d + 1) * c**2 if radius == "gamma" else 2 * c**2
    eu2 = sigma**2 * d ** (2 / moment) * np.exp(
        special.gammaln(3 / moment) + special.gammaln(d / moment)
        - special.gammaln(1 / moment) - special.gammaln((d + 2) / moment)
    )
    with pytest.warns(PrivacyWarning) if (radius == "laplace" and d > 1) else _no_warning():
        x = sample_mip_noise(sigma, eta=eta, moment=moment, radius=radius,
                             random_state=_gen(7), n_samples=n)
    sq = x**2
    se = sq.std(axis=0, ddof=1) / np.sqrt(n)
    # Bonferroni over the d coordinates keeps the family-wise level below d * 6e-5.
    assert np.all(np.abs(sq.mean(axis=0) - er2 * eu2) < Z * se)


# --------------------------------------------------------------------------- density


@pytest.mark.parametrize("radius", ["gamma", "laplace"])
@pytest.mark.parametrize("d, moment", [(2, 2), (5, 4)])
def test_logpdf_is_the_density_of_the_sampler(radius, d, moment):
    # For X ~ p and any shift delta, E[p(X - delta) / p(X)] = int p(x - delta) dx = 1: the
    # unknown normalising constant cancels, so this ties sampler and log-density together.
    eta, n = 0.3, 40000
    sigma = np.linspace(1.0, 2.0, d)
    c = mip_noise_constant(eta, moment)
    delta = 0.3 * c * sigma  # ||delta|| = 0.3 c
    with pytest.warns(PrivacyWarning) if radius == "laplace" else _no_warning():
        x = sample_mip_noise(sigma, eta=eta, moment=moment, radius=radius,
                             random_state=_gen(8), n_samples=n)
    ratio = np.exp(
        mip_noise_logpdf(x - delta, sigma, eta=eta, moment=moment, radius=radius)
        - mip_noise_logpdf(x, sigma, eta=eta, moment=moment, radius=radius)
    )
    se = ratio.std(ddof=1) / np.sqrt(n)
    assert abs(ratio.mean() - 1.0) < Z * se
    # The other radius' density must fail the same identity on these draws (the test has power).
    other = "laplace" if radius == "gamma" else "gamma"
    wrong = np.exp(
        mip_noise_logpdf(x - delta, sigma, eta=eta, moment=moment, radius=other)
        - mip_noise_logpdf(x, sigma, eta=eta, moment=moment, radius=other)
    )
    assert abs(wrong.mean() - 1.0) > Z * wrong.std(ddof=1) / np.sqrt(n)


def test_logpdf_closed_forms():
    sigma = np.array([1.0, 2.0, 0.0])
    x = np.array([[1.0, 2.0, 0.0], [3.0, 0.0, 0.0], [1.0, 1.0, 0.5]])
    c = mip_noise_constant(0.1, 2)
    s = mip_norm(x, sigma)
    np.testing.assert_allclose(mip_noise_logpdf(x, sigma, eta=0.1), -s / c)
    lap = mip_noise_logpdf(x, sigma, eta=0.1, radius="laplace")
    np.testing.assert_allclose(lap[:2], -s[:2] / c - np.log(s[:2]))  # d = 2 active
    assert lap[2] == -np.inf
    assert mip_noise_logpdf(np.zeros(3), sigma, eta=0.1, radius="laplace") == np.inf


# --------------------------------------------------------------------------- zero sigma, size


def test_zero_sigma_coordinates_get_no_noise_and_leave_d():
    sigma = np.array([1.0, 0.0, 2.0, 0.0])
    c = mip_noise_constant(0.2, 2)
    x = sample_mip_noise(sigma, eta=0.2, random_state=_gen(9), n_samples=3000)
    assert np.all(x[:, [1, 3]] == 0.0)
    p = stats.kstest(mip_norm(x, sigma), stats.gamma(a=2, scale=c).cdf).pvalue
    assert p > KS_LEVEL


def test_all_zero_sigma_gives_zero_noise():
    assert np.all(sample_mip_noise([0.0, 0.0], eta=0.1, random_state=_gen(0)) == 0.0)


def test_million_dimensions_in_one_vectorised_draw():
    d = 10**6
    c = mip_noise_constant(0.1, 4)
    x = sample_mip_noise(np.ones(d), eta=0.1, moment=4, random_state=_gen(10))
    assert x.shape == (d,)
    # ||X|| / (d c) ~ Gamma(d, 1/d): mean 1, standard deviation 1/sqrt(d).
    assert abs(mip_norm(x, np.ones(d), 4) / (d * c) - 1.0) < Z / np.sqrt(d)


# --------------------------------------------------------------------------- randomness, warnings


def test_shapes_and_reproducibility():
    sigma = [1.0, 2.0]
    assert sample_mip_noise(sigma, eta=0.1, random_state=_gen(0)).shape == (2,)
    assert sample_mip_noise(sigma, eta=0.1, random_state=_gen(0), n_samples=3).shape == (3, 2)
    a = sample_mip_noise(sigma, eta=0.1, random_state=_gen(1), n_samples=3)
    b = sample_mip_noise(sigma, eta=0.1, random_state=_gen(1), n_samples=3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(
        sample_mip_noise(sigma, eta=0.1, random_state=5), sample_mip_noise(sigma, eta=0.1, random_state=5)
    )
    sample_mip_noise(sigma, eta=0.1, random_state=np.random.RandomState(0))


@pytest.mark.os_entropy
def test_no_seed_draws_fresh_noise():
    sigma = np.array([1.0, 2.0])
    assert not np.array_equal(sample_mip_noise(sigma, eta=0.1), sample_mip_noise(sigma, eta=0.1))


@pytest.mark.os_entropy
def test_privacy_warnings():
    with pytest.warns(PrivacyWarning, match="random_state=3"):
        sample_mip_noise([1.0], eta=0.1, random_state=3)
    with pytest.warns(PrivacyWarning, match="Laplace"):
        sample_mip_noise([1.0, 1.0], eta=0.1, radius="laplace", random_state=_gen(0))
    with _no_warning():  # a Generator, and Laplace in d = 1 (the same law as gamma there)
        sample_mip_noise([1.0, 0.0], eta=0.1, radius="laplace", random_state=_gen(0))
        sample_mip_noise([1.0, 1.0], eta=0.1, random_state=None)


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(sigma=[1.0, -1.0]), ValueError, r"sample_mip_noise: sigma must be finite and >= 0.*sigma\[1\]"),
        (dict(sigma=[1.0, np.nan]), ValueError, "finite"),
        (dict(sigma=[[1.0]]), ValueError, "1-D"),
        (dict(sigma=[]), ValueError, "non-empty"),
        (dict(sigma=["a"]), TypeError, "real numbers"),
        (dict(eta=0.0), ValueError, r"eta must be in \(0, 0.5\]"),
        (dict(eta=0.7), ValueError, "promise nothing"),
        (dict(moment=1), ValueError, "M >= 2"),
        (dict(moment=np.inf), ValueError, "finite"),
        (dict(radius="normal"), ValueError, "radius must be one of 'gamma', 'laplace'"),
        (dict(n_samples=0), ValueError, "n_samples"),
    ],
)
def test_validation_messages(kwargs, exc, match):
    args = dict(sigma=[1.0, 2.0], eta=0.1, random_state=_gen(0))
    args.update(kwargs)
    sigma = args.pop("sigma")
    with pytest.raises(exc, match=match):
        sample_mip_noise(sigma, **args)


def test_logpdf_validates_x_shape():
    with pytest.raises(ValueError, match=r"mip_noise_logpdf: x must have shape \(2,\)"):
        mip_noise_logpdf(np.zeros(3), [1.0, 1.0], eta=0.1)


def test_the_law_object_is_what_the_functions_draw_and_evaluate():
    sigma = [1.0, 0.0, 2.0]
    law = MIPNoiseLaw(sigma, eta=0.2, moment=4, radius="laplace")
    assert (law.dim, law.eta, law.moment, law.radius) == (2, 0.2, 4.0, "laplace")
    with _no_warning():  # the law draws for audits: no warning, even for the printed radius
        x = law.sample(5, _gen(3))
    with pytest.warns(PrivacyWarning, match="Laplace"):
        y = sample_mip_noise(sigma, eta=0.2, moment=4, radius="laplace", random_state=_gen(3), n_samples=5)
    np.testing.assert_array_equal(x, y)  # the same stream, the same noise
    np.testing.assert_array_equal(law.logpdf(x), mip_noise_logpdf(x, sigma, eta=0.2, moment=4, radius="laplace"))
    with pytest.raises(ValueError, match=r"my_audit: eta must be in \(0, 0.5\]"):
        MIPNoiseLaw(sigma, eta=0.0, owner="my_audit")
