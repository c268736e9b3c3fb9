"""MIPGaussianSynthesizer, mixtures released by MIPNoiseWrapper, and a membership audit."""

import pickle
import warnings
from functools import partial

import numpy as np
import pytest
from scipy import stats
from sklearn.exceptions import NotFittedError
from sklearn.mixture import GaussianMixture
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip import MIPNoiseWrapper, PrivacyWarning, Statistic
from skmip.bounds import mip_noise_constant
from skmip.audit.game import play_membership_game
from skmip.audit.metrics import check_mip_bound, membership_advantage
from skmip.calibration.spread.moments import estimate_sigma
from skmip.audit.attacks.synthetic import closest_record_signal
from skmip.audit.synth_audit import CopyingSynthesizer
from skmip.params import GaussianMixtureAdapter, nearest_psd as _project_psd
from skmip.release.gaussian import MIPGaussianSynthesizer, mean_and_covariance

COV = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])
MEAN = np.array([1.0, -2.0, 0.5])


@pytest.fixture(scope="module")
def gaussian_data():
    rng = np.random.default_rng(0)
    return rng.multivariate_normal(MEAN, COV, size=4000)


def _unpack(values, d):
    out = np.zeros((d, d))
    iu = np.triu_indices(d)
    out[iu] = values
    out[iu[::-1]] = values
    return out


# ----------------------------------------------------------------------------- attributes
def test_fitted_attributes_describe_the_release(gaussian_data):
    synth = MIPGaussianSynthesizer(eta=0.3, method="moments", moment=4, n_subsets=16,
                                   random_state=0).fit(gaussian_data)
    assert set(k for k in vars(synth) if k.endswith("_")) == {
        "mean_", "covariance_", "sqrt_covariance_", "method_", "noise_constant_", "noise_scale_",
        "coupling_eta_", "coupling_pairs_", "mip_bound_", "target_eta_", "n_train_", "n_features_in_",
    }
    assert synth.method_ == "moments" and synth.noise_scale_ is None and synth.coupling_eta_ is None
    assert synth.mean_.shape == (3,) and synth.covariance_.shape == (3, 3)
    np.testing.assert_allclose(synth.covariance_, synth.covariance_.T)
    assert np.linalg.eigvalsh(synth.covariance_).min() >= -1e-10
    np.testing.assert_allclose(synth.sqrt_covariance_ @ synth.sqrt_covariance_, synth.covariance_,
                               atol=1e-8 * np.abs(synth.covariance_).max())
    assert synth.noise_constant_ == pytest.approx(mip_noise_constant(0.3, 4))
    assert synth.mip_bound_ == 0.3
    assert synth.n_train_ == 2000
    assert synth.n_features_in_ == 3


@pytest.mark.parametrize("center", [True, False])
def test_release_is_the_wrapper_release_post_processed(gaussian_data, center):
    # The synthesizer adds nothing private of its own: its covariance is the PSD projection of
    # exactly what MIPNoiseWrapper releases for the same statistic and seed.
    kw = dict(eta=0.2, moment=2, n_subsets=8, radius="gamma", train_size=0.5, random_state=3)
    synth = MIPGaussianSynthesizer(center=center, method="moments", **kw).fit(gaussian_data)
    stat = Statistic(mean_and_covariance, structure="vector") if center else Statistic("second_moment")
    released = MIPNoiseWrapper(stat, method="moments", **kw).fit(gaussian_data).estimator_.statistic_
    if center:
        np.testing.assert_array_equal(synth.mean_, released[:3])
        cov = _project_psd(_unpack(released[3:], 3), 0.0)
    else:
        np.testing.assert_array_equal(synth.mean_, np.zeros(3))
        cov = released
    np.testing.assert_allclose(synth.covariance_, cov, rtol=1e-12, atol=1e-12 * np.abs(cov).max())


def test_nothing_unnoised_is_kept(gaussian_data):
    # With train_size=1.0, D_train is the data itself, so its un-noised statistic is known.
    synth = MIPGaussianSynthesizer(eta=0.4, n_subsets=8, train_size=1.0, random_state=0).fit(gaussian_data)
    exact = mean_and_covariance(gaussian_data)
    blob = pickle.dumps(synth)
    for value in exact:
        assert np.float64(value).tobytes() not in blob
    # No copy of the data: the pickle is a few hundred bytes, not 4000 x 3 floats.
    assert len(blob) < 2000
    assert not hasattr(synth, "sigma_")


def test_sample_has_the_released_law(gaussian_data):
    synth = MIPGaussianSynthesizer(eta=0.5, moment=6, n_subsets=16, random_state=1).fit(gaussian_data)
    samples = synth.sample(20_000, random_state=2)
    assert samples.shape == (20_000, 3)
    # Each projection u^T x is N(u^T mean_, u^T covariance_ u): a KS test per direction.
    # (Izzo's printed W = (A + A^T)^(1/2) would double the variance and fail it.)
    rng = np.random.default_rng(5)
    for u in rng.normal(size=(3, 3)):
        scale = np.sqrt(u @ synth.covariance_ @ u)
        p = stats.kstest(samples @ u, "norm", args=(u @ synth.mean_, scale)).pvalue
        assert p > 1e-3


def test_sample_uses_its_own_random_state(gaussian_data):
    synth = MIPGaussianSynthesizer(eta=0.5, n_subsets=8, random_state=0).fit(gaussian_data)
    np.testing.assert_array_equal(synth.sample(4, random_state=7), synth.sample(4, random_state=7))
    assert not np.array_equal(synth.sample(4, random_state=7), synth.sample(4, random_state=8))


def test_center_false_is_izzo_zero_mean_release():
    rng = np.random.default_rng(1)
    X = rng.multivariate_normal(np.zeros(3), COV, size=4000)
    synth = MIPGaussianSynthesizer(eta=0.5, moment=6, n_subsets=8, center=False, random_state=0).fit(X)
    np.testing.assert_array_equal(synth.mean_, np.zeros(3))
    assert np.allclose(synth.sample(5, random_state=0).shape, (5, 3))


def test_mean_and_covariance_matches_numpy(gaussian_data):
    d = gaussian_data.shape[1]
    vec = mean_and_covariance(gaussian_data)
    np.testing.assert_allclose(vec[:d], gaussian_data.mean(axis=0))
    np.testing.assert_allclose(_unpack(vec[d:], d), np.cov(gaussian_data, rowvar=False, bias=True))


# ----------------------------------------------------------------------------- warnings, errors
def test_fixed_seed_warns_once_under_own_name(gaussian_data):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        MIPGaussianSynthesizer(eta=0.5, n_subsets=4, random_state=0).fit(gaussian_data)
    privacy = [w for w in caught if issubclass(w.category, PrivacyWarning)]
    assert len(privacy) == 1
    assert "MIPGaussianSynthesizer" in str(privacy[0].message)


def test_laplace_radius_warning_reaches_the_user(gaussian_data):
    with pytest.warns(PrivacyWarning, match="(?i)laplace"):
        MIPGaussianSynthesizer(eta=0.5, method="moments", n_subsets=4, radius="laplace", random_state=0).fit(gaussian_data)


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"eta": 0.7}, ValueError, "MIPGaussianSynthesizer: eta must be in"),
        ({"method": "exact"}, ValueError, "MIPGaussianSynthesizer: method"),
        ({"moment": 1}, ValueError, "MIPGaussianSynthesizer: moment"),
        ({"n_subsets": 1}, ValueError, "MIPGaussianSynthesizer: n_subsets"),
        ({"radius": "normal"}, ValueError, "MIPGaussianSynthesizer: radius"),
        ({"center": "yes"}, TypeError, "MIPGaussianSynthesizer: center"),
        ({"train_size": 0.0}, ValueError, "MIPGaussianSynthesizer: train_size"),
        ({"sigma_from": "test"}, ValueError, "MIPGaussianSynthesizer: sigma_from"),
    ],
)
def test_invalid_parameters(gaussian_data, params, error, match):
    with pytest.raises(error, match=match):
        MIPGaussianSynthesizer(**params).fit(gaussian_data)


@pytest.mark.parametrize("method", ["coupling", "moments"])
def test_failed_fit_leaves_nothing_fitted(method):
    synth = MIPGaussianSynthesizer(eta=0.5, method=method, n_subsets=4, random_state=0)
    with pytest.raises(ValueError, match="NaN|infinity"):
        synth.fit(np.array([[1.0, np.nan], [0.0, 1.0], [2.0, 1.0], [1.0, 1.0]]))
    with pytest.raises(ValueError, match="at least"):
        synth.fit(np.ones((2, 2)))
    assert not [k for k in vars(synth) if k.endswith("_")]
    with pytest.raises(NotFittedError):
        synth.sample(3)


def test_sample_rejects_bad_n_samples(gaussian_data):
    synth = MIPGaussianSynthesizer(eta=0.5, n_subsets=4, random_state=0).fit(gaussian_data)
    with pytest.raises(ValueError, match="n_samples"):
        synth.sample(0)


@parametrize_with_checks([MIPGaussianSynthesizer(n_subsets=4, random_state=0),
                          MIPGaussianSynthesizer(method="moments", n_subsets=4, random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ----------------------------------------------------------------------------- mixtures
@pytest.fixture(scope="module")
def separated_mixture():
    rng = np.random.default_rng(0)
    centers = np.array([[-10.0, 0.0], [0.0, 10.0], [10.0, 0.0]])
    return np.vstack([c + rng.normal(size=(100, 2)) for c in centers])


class _NoCanonicalOrder(GaussianMixtureAdapter):
    """The mixture adapter with component sorting switched off (the control)."""

    def canonicalize(self, estimator):
        return estimator


def test_mixture_sigma_needs_canonical_order(separated_mixture):
    X = separated_mixture
    gm = GaussianMixture(3, random_state=0)
    kw = dict(n_subsets=16, random_state=0)
    ordered = estimate_sigma(gm, X, params=GaussianMixtureAdapter(), **kw)
    unordered = estimate_sigma(gm, X, params=_NoCanonicalOrder(), **kw)
    means = slice(3, 9)  # weights (3), then the 3 x 2 means
    # Canonical order: each mean coordinate is an average of ~50 unit-variance points drawn
    # without replacement from 100, spread sqrt(1/50 * 1/2) = 0.1; 0.3 is three times that.
    assert ordered[means].max() < 0.3
    # Without it, split fits label the components differently and the "spread" of a mean is
    # the distance between clusters (10).
    assert unordered[means].max() > 2.5
    assert unordered[means].max() > 20 * ordered[means].max()


def test_mixture_release_samples(separated_mixture):
    w = MIPNoiseWrapper(GaussianMixture(3), eta=0.5, moment=4, n_subsets=8, random_state=0)
    w.fit(separated_mixture)
    released = w.estimator_
    assert released.weights_.sum() == pytest.approx(1.0) and released.weights_.min() > 0
    for cov in released.covariances_:
        assert np.linalg.eigvalsh(cov).min() > 0
    X_syn, labels = w.sample(50)
    assert X_syn.shape == (50, 2) and labels.shape == (50,)
    assert np.all(np.isfinite(w.score_samples(separated_mixture)))


# ----------------------------------------------------------------------------- audit
# The release attacked through its own density (the game's default output for it), and its
# samples through the distance to the closest of 200 synthetic records.
_closest_record = partial(closest_record_signal, n_samples=200)


@pytest.fixture(scope="module")
def audit_pool():
    rng = np.random.default_rng(11)
    return rng.multivariate_normal([0.0, 0.0], [[1.0, 0.3], [0.3, 1.0]], size=100)


@pytest.mark.parametrize("attack", ["score_samples", _closest_record])
def test_membership_audit_within_bound(audit_pool, attack):
    eta = 0.1
    synth = MIPGaussianSynthesizer(eta=eta, n_subsets=16, train_size=1.0)
    game = play_membership_game(synth, audit_pool, n_models=32, output=attack, random_state=0)
    check = check_mip_bound(game.membership, game.signal, eta)
    assert check.holds, check
    # 32 x 100 trials: the advantage of a blind guess is at most a few hundredths.
    assert membership_advantage(game.membership, game.signal) < 2 * eta


def test_audit_detects_a_copying_synthesizer(audit_pool):
    # The same game and attack refute the bound for a release that leaks the records, so a
    # passing audit above is evidence, not an artefact of a blind attack.
    game = play_membership_game(
        CopyingSynthesizer(), audit_pool, n_models=8, output=_closest_record, random_state=0
    )
    assert not check_mip_bound(game.membership, game.signal, 0.1).holds
    assert membership_advantage(game.membership, game.signal) > 0.5


def test_score_samples_is_the_released_gaussian_density(audit_pool):
    """score_samples = log N(x; mean_, covariance_): a function of the released attributes only
    (set here to known values), finite when the released covariance is singular."""
    synth = MIPGaussianSynthesizer(eta=0.3, n_subsets=16, random_state=0).fit(audit_pool)
    synth.mean_, synth.covariance_ = np.array([0.5, -0.2]), np.array([[2.0, 0.3], [0.3, 0.5]])
    expected = stats.multivariate_normal(synth.mean_, synth.covariance_).logpdf(audit_pool[:10])
    np.testing.assert_allclose(synth.score_samples(audit_pool[:10]), expected, rtol=1e-10)
    synth.covariance_ = np.array([[1.0, 0.0], [0.0, 0.0]])  # a PSD projection can leave this
    assert np.all(np.isfinite(synth.score_samples(audit_pool)))


# ----------------------------------------------------------------------------- coupling
def test_coupling_is_the_default_and_its_bound_is_exact():
    # method="auto" calibrates the exact coupling bound: noise_scale_ solves it equal to eta
    # on the features of D with the Ledoit-Wolf shape (recomputed here from D).
    from sklearn.covariance import ledoit_wolf

    from skmip.bounds import coupling_eta
    from skmip.calibration.swap import statistic_swap_deltas
    from skmip.release.gaussian import _moment_features

    rng = np.random.default_rng(2)
    X = rng.multivariate_normal(MEAN, COV, size=300)
    synth = MIPGaussianSynthesizer(eta=0.1, random_state=0).fit(X)
    assert synth.method_ == "coupling" and synth.coupling_pairs_ == "exhaustive"
    assert synth.noise_constant_ is None and synth.n_train_ == 150
    assert synth.coupling_eta_ == pytest.approx(0.1, rel=1e-6)
    F = _moment_features(X, True)
    res = statistic_swap_deltas(F, scale=np.linalg.cholesky(ledoit_wolf(F)[0]), train_size=150)
    assert coupling_eta(res.distances, synth.noise_scale_, weights=res.weights) == pytest.approx(0.1, rel=1e-6)
    # Far less noise than Corollary 10: the released law is close to the data's.
    assert np.abs(synth.mean_ - MEAN).max() < 0.5
    assert np.linalg.norm(synth.covariance_ - COV) / np.linalg.norm(COV) < 0.5


def test_coupling_on_many_rows_uses_the_jensen_bound(gaussian_data):
    synth = MIPGaussianSynthesizer(eta=0.1, center=False, random_state=0).fit(gaussian_data)
    assert synth.coupling_pairs_ == "jensen" and synth.coupling_eta_ == pytest.approx(0.1, rel=1e-6)
    np.testing.assert_array_equal(synth.mean_, np.zeros(3))
    # Second moment of data with mean MEAN: COV + MEAN MEAN^T. Corollary 10 at the same eta
    # (the paper's release) is many times further from it.
    target = COV + np.outer(MEAN, MEAN)
    moments = MIPGaussianSynthesizer(eta=0.1, method="moments", n_subsets=16, center=False,
                                     random_state=0).fit(gaussian_data)
    err = np.linalg.norm(synth.covariance_ - target)
    assert 10 * err < np.linalg.norm(moments.covariance_ - target)


def test_n_splits_is_the_deprecated_name_of_n_subsets(gaussian_data):
    kw = dict(eta=0.5, method="moments", random_state=0)
    new = MIPGaussianSynthesizer(n_subsets=8, **kw).fit(gaussian_data)
    with pytest.warns(FutureWarning, match="n_splits was renamed n_subsets"):
        old = MIPGaussianSynthesizer(n_splits=8, **kw).fit(gaussian_data)
    assert np.array_equal(new.covariance_, old.covariance_) and np.array_equal(new.mean_, old.mean_)
    from sklearn.base import clone

    assert clone(old).get_params()["n_splits"] == 8
    with pytest.raises(ValueError, match="were both set"):
        MIPGaussianSynthesizer(n_subsets=4, n_splits=8, **kw).fit(gaussian_data)
