"""skmip.nn.dpsgd: DP-SGD with Opacus (Poisson sampling, accountants), GDP/GMIP noisy SGD."""

import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")
pytest.importorskip("opacus")

from skorch.callbacks import Callback  # noqa: E402
from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skmip.bounds import dpsgd_epsilon, dpsgd_eta, gdp_mu, gdp_noise_multiplier, gdp_to_dp, gmip_mu  # noqa: E402
from skmip.exceptions import PrivacyWarning  # noqa: E402
from skmip.nn import DPNeuralNetClassifier, DPSGDLogisticRegression, MLPModule  # noqa: E402


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


class BatchSizes(Callback):
    def initialize(self):
        self.sizes = []
        return self

    def on_batch_begin(self, net, batch=None, training=False, **kwargs):
        if training:
            self.sizes.append(len(batch[0]))


def make(**kw):
    params = dict(
        module__n_features=30, module__hidden=(8,), max_epochs=2, batch_size=32, lr=0.5,
        verbose=0, random_state=0, noise_multiplier=1.0,
    )
    params.update(kw)
    return DPNeuralNetClassifier(MLPModule, **params)


def test_poisson_sampling_rate_is_the_accounted_rate(data):
    X, y = data
    n, B, epochs = len(X), 32, 4
    sizes = BatchSizes()
    net = make(max_epochs=epochs, callbacks=[("sizes", sizes)], accountant="rdp").fit(X, y)
    q = B / n
    steps_per_epoch = int(1 / q)  # Opacus' UniformWithReplacementSampler
    assert net.sample_rate_ == q
    assert net.n_steps_ == epochs * steps_per_epoch == len(sizes.sizes)
    # The accountant was charged once per step with the loader's own rate.
    assert net.accountant_.history == [(1.0, q, epochs * steps_per_epoch)]
    # Poisson batches: Binomial(n, q) sizes, not a fixed 32. The mean over S steps is
    # within 4 standard errors of B, and the sizes vary.
    s = np.array(sizes.sizes)
    se = np.sqrt(n * q * (1 - q) / len(s))
    assert abs(s.mean() - B) < 4 * se
    assert s.std() > 0.5 * np.sqrt(n * q * (1 - q))


def test_noise_is_calibrated_to_epsilon(data):
    from opacus.accountants import create_accountant

    X, y = data
    net = make(noise_multiplier=None, epsilon=2.0, accountant="rdp").fit(X, y)
    assert net.delta_ == pytest.approx(1 / (10 * len(X)))
    # Opacus' bisection stops within epsilon_tolerance=0.01 below the target.
    assert 2.0 - 0.05 <= net.epsilon_ <= 2.0 + 1e-9
    ref = create_accountant("rdp")
    ref.history = [(net.noise_multiplier_, net.sample_rate_, net.n_steps_)]
    assert net.epsilon_ == pytest.approx(ref.get_epsilon(delta=net.delta_))
    assert net.mip_bound_ < 0.5 and net.mu_ is None


def test_pld_accountant_is_the_default_and_rigorous(data):
    X, y = data
    net = make(noise_multiplier=None, epsilon=2.0).fit(X, y)
    assert net.accountant_ is None  # the PLD accountant of skmip.bounds
    q, T, d = net.sample_rate_, net.n_steps_, net.delta_
    assert net.epsilon_ == dpsgd_epsilon(net.noise_multiplier_, q, T, d) <= 2.0
    # Calibrated to within 0.1% of sigma: a slightly smaller sigma already overshoots.
    assert dpsgd_epsilon(net.noise_multiplier_ / 1.002, q, T, d) > 2.0 - 0.05
    # Replace-one: at least the add/remove epsilon; eta from the replace-one profile.
    assert net.epsilon_replace_one_ >= net.epsilon_
    assert net.mip_bound_ == dpsgd_eta(net.noise_multiplier_, q, T)
    assert net.epsilon_clt_ is None and net.mip_bound_clt_ is None


def test_prv_accountant(data):
    from opacus.accountants import create_accountant

    X, y = data
    net = make(accountant="prv", max_epochs=1).fit(X, y)
    ref = create_accountant("prv")
    ref.history = [(1.0, net.sample_rate_, net.n_steps_)]
    assert net.accountant_.mechanism() == "prv"
    assert net.epsilon_ == pytest.approx(ref.get_epsilon(delta=net.delta_))


def test_seeded_reproducible_and_noise_matters(data):
    X, y = data
    before = torch.get_rng_state()
    a = make().fit(X, y)
    assert torch.equal(before, torch.get_rng_state())
    b = make().fit(X, y)
    np.testing.assert_array_equal(a.module_.output.weight.detach(), b.module_.output.weight.detach())
    c = make(noise_multiplier=0.0).fit(X, y)
    assert not torch.equal(a.module_.output.weight, c.module_.output.weight)
    assert c.epsilon_ == float("inf") or c.epsilon_ > 1e3


def test_clipping_bounds_each_step():
    # One row, SGD without momentum, no noise: one step moves the parameters by
    # exactly lr * clipped gradient / expected batch size, with norm <= lr * C / B.
    X = np.full((4, 30), 10.0, dtype=np.float32)
    y = np.array([0, 1, 0, 1])
    net = make(max_epochs=1, batch_size=1, noise_multiplier=0.0, max_grad_norm=0.1, lr=1.0)
    net.initialize()
    start = torch.cat([p.detach().flatten().clone() for p in net.module_.parameters()])
    net.partial_fit(X[:1], y[:1])
    end = torch.cat([p.detach().flatten() for p in net.module_.parameters()])
    steps = net.n_steps_
    assert steps == 1
    assert float((end - start).norm()) <= 1.0 * 0.1 / 1 + 1e-6


def test_history_emptied_and_pickle_clone(data):
    X, y = data
    net = make().fit(X, y)
    assert len(net.history_) == 0
    again = pickle.loads(pickle.dumps(net))
    np.testing.assert_allclose(again.predict_proba(X), net.predict_proba(X))
    assert again.epsilon_ == net.epsilon_
    c = clone(net)
    assert c.get_params()["noise_multiplier"] == 1.0 and not hasattr(c, "epsilon_")


def test_partial_fit_accumulates_privacy_loss(data):
    X, y = data
    net = make(max_epochs=1).fit(X, y)
    eps1, steps1 = net.epsilon_, net.n_steps_
    net.partial_fit(X, y)
    assert net.n_steps_ == 2 * steps1 and net.epsilon_ > eps1
    with pytest.raises(ValueError, match="changes the sampling rate"):
        net.partial_fit(X[:100], y[:100])


def test_fixed_seed_warns(data):
    X, y = data
    with pytest.warns(PrivacyWarning, match="random_state=0"):
        make(max_epochs=1).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        make(max_epochs=1, random_state=None, secure_mode=True).fit(X, y)


def test_default_rng_warns_once_that_it_is_not_cryptographic(data, monkeypatch):
    from skmip import exceptions

    monkeypatch.setattr(exceptions, "_WARNED_NOT_CRYPTOGRAPHIC", set())
    X, y = data
    with pytest.warns(PrivacyWarning, match="not a cryptographically secure generator.*secure_mode=True"):
        make(max_epochs=1, random_state=None).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)
        make(max_epochs=1, random_state=None).fit(X, y)  # once per process
    with pytest.warns(PrivacyWarning, match="DPSGDLogisticRegression: .*not a cryptographically secure"):
        DPSGDLogisticRegression(noise_multiplier=1.0, max_epochs=1).fit(X, y)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(train_split=lambda X, y: (X, X)), "train_split must be None"),
        (dict(secure_mode=True), "secure_mode=True .* cannot be seeded"),
        (dict(privacy="gmip", noise_multiplier=None), "needs a target mu"),
        (dict(privacy="nope"), "privacy must be one of"),
        (dict(accountant="gdp"), "accountant must be one of"),
        (dict(batch_size=0), "batch_size must be an integer >= 1"),
        (dict(delta=2.0), "delta must be in"),
    ],
)
def test_errors(data, kw, match):
    X, y = data
    with pytest.raises(ValueError, match=match):
        make(**kw).fit(X, y)


@pytest.mark.parametrize("privacy", ["dp", "gdp"])
def test_a_batch_larger_than_the_data_is_clipped_and_accounted_clipped(data, privacy):
    # Issue 31: skorch clips such a batch; the net refused it. The rate accounted is the
    # clipped batch's (B = n: q = 1), the one the loader draws with.
    X, y = data
    X, y = X[:60], y[:60]
    kw = dict(privacy=privacy, mu=1.0, noise_multiplier=None) if privacy == "gdp" else {}
    net = make(batch_size=10_000, max_epochs=1, module__n_features=30, **kw).fit(X, y)
    assert net.sample_rate_ == 1.0 and net.n_steps_ == 1
    sampling = "poisson" if privacy == "dp" else "fixed"
    assert net.mip_bound_ == dpsgd_eta(net.noise_multiplier_, 1.0, 1, sampling=sampling)


def test_partial_fit_after_score_trains_on(data):
    # Issue 31: score leaves the module in eval mode, where Opacus refused the next step
    # ("Model needs to be in training mode").
    X, y = data
    net = make(max_epochs=1).fit(X, y)
    net.score(X, y)
    steps = net.n_steps_
    net.partial_fit(X, y)
    assert net.n_steps_ == 2 * steps


def test_one_full_batch_step_prints_eta_above_its_exact_value(data):
    # Issue 31: privacy="gdp" after one step printed 0.47724986805178826 against the exact
    # 0.4772498680518208. One step of the whole data with noise sigma is a Gaussian of
    # sensitivity 2: eta = Phi(1 / sigma) - 1/2 exactly.
    mpmath = pytest.importorskip("mpmath")
    X, y = data
    net = make(batch_size=len(X), max_epochs=1, noise_multiplier=0.5, privacy="gdp").fit(X, y)
    assert net.n_steps_ == 1
    mpmath.mp.dps = 40
    assert net.mip_bound_ >= mpmath.ncdf(1 / mpmath.mpf(0.5)) - mpmath.mpf(0.5)


def test_secure_mode_draws_batches_and_noise_from_os_random(data, monkeypatch):
    """secure_mode=True works without torchcsprng: every draw goes through os.urandom."""
    import os

    from skmip.utils import os_random

    X, y = data
    calls = []
    real = os.urandom
    monkeypatch.setattr(os_random.os, "urandom", lambda k: calls.append(k) or real(k))
    net = make(secure_mode=True, random_state=None, max_epochs=1).fit(X, y)
    assert net.n_steps_ > 0 and np.isfinite(net.epsilon_)
    d = sum(p.numel() for p in net.module_.parameters())
    # Per step: n uniforms for the Poisson batch (8 bytes each) and, per parameter,
    # 2 x 4 uniforms for the four summed Box-Muller normals.
    assert sum(calls) == net.n_steps_ * 8 * (len(X) + 8 * d)


def test_gdp_and_gmip_modes(data):
    X, y = data
    n, B, epochs = len(X), 32, 2
    T = epochs * (n // B)
    d = 30 * 8 + 8 + 8 * 2 + 2
    gdp = make(privacy="gdp", mu=1.0, noise_multiplier=None).fit(X, y)
    assert gdp.noise_multiplier_ == pytest.approx(gdp_noise_multiplier(1.0, B, n, T))
    assert gdp.mu_ == pytest.approx(1.0, rel=1e-6) and gdp.n_steps_ == T
    # The printed epsilon is the rigorous replace-one one; the CLT value is kept, smaller.
    sigma = gdp.noise_multiplier_
    assert gdp.epsilon_ == gdp.epsilon_replace_one_ == dpsgd_epsilon(
        sigma, B / n, T, gdp.delta_, sampling="fixed", adjacency="replace_one")
    assert gdp.epsilon_clt_ == pytest.approx(gdp_to_dp(gdp.mu_, gdp.delta_))
    assert gdp.epsilon_clt_ < gdp.epsilon_
    assert gdp.mip_bound_ == dpsgd_eta(sigma, B / n, T, sampling="fixed")
    # Above the no-noise level of Eqs. 9-10, GMIP needs no noise at all.
    free = gmip_mu(0.0, B, n, T, d=d)
    gmip = make(privacy="gmip", mu=free * 1.01, noise_multiplier=None).fit(X, y)
    assert gmip.noise_multiplier_ == 0.0 and gmip.mu_ == pytest.approx(free)
    # Without noise nothing rigorous is left: the CLT GMIP figure is not printed as eta.
    assert gmip.epsilon_ == np.inf and gmip.mip_bound_ == 0.5 and gmip.mip_bound_clt_ is not None
    # Below it, never more noise than GDP (GDP implies GMIP, Theorem 4.2).
    low = make(privacy="gmip", mu=0.5, noise_multiplier=None).fit(X, y)
    assert 0 < low.noise_multiplier_ <= gdp_noise_multiplier(0.5, B, n, T) + 1e-9
    assert low.mu_ <= 0.5 + 1e-6
    assert low.mu_ <= gdp_mu(low.noise_multiplier_, B, n, T) + 1e-12



def test_gradient_susceptibility_sets_the_gmip_bound_and_gmip_K_is_its_deprecated_name(data):
    """K of Leemann Theorem 5.1: ``gradient_susceptibility``; ``gmip_K`` warns and is used."""
    X, y = data
    n, B, T = len(X), 32, 2 * (len(X) // 32)
    d = 30 * 8 + 8 + 8 * 2 + 2
    # With K = d (the default) mu = 1 needs noise; with K = 1 plain clipped SGD already has it.
    K = 1.0
    assert gmip_mu(0.0, B, n, T, d=d) > 1.0 > gmip_mu(0.0, B, n, T, d=d, K=K)
    kw = dict(privacy="gmip", mu=1.0, noise_multiplier=None, max_epochs=2)
    net = make(gradient_susceptibility=K, **kw)
    assert net.get_params()["gradient_susceptibility"] == K and net.get_params()["gmip_K"] == "deprecated"
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        net.fit(X, y)
    assert net.noise_multiplier_ == 0.0 and net.mu_ == pytest.approx(gmip_mu(0.0, B, n, T, d=d, K=K))
    assert make(**kw).fit(X, y).noise_multiplier_ > 0
    old = make(gmip_K=K, **kw)
    assert clone(old).get_params()["gmip_K"] == K
    with pytest.warns(FutureWarning, match="gmip_K was renamed gradient_susceptibility"):
        old.fit(X, y)
    assert old.noise_multiplier_ == net.noise_multiplier_ and old.mu_ == net.mu_
    with pytest.raises(ValueError, match="were both set"):
        make(gmip_K=K, gradient_susceptibility=K, **kw).fit(X, y)
    with pytest.raises(ValueError, match="gradient_susceptibility must be"):
        make(gradient_susceptibility=-1.0, **kw).fit(X, y)

def test_logistic_regression_sklearn_api(data):
    X, y = data
    clf = DPSGDLogisticRegression(noise_multiplier=1.0, max_epochs=3, random_state=0).fit(X, y)
    assert clf.coef_.shape == (1, 30) and clf.intercept_.shape == (1,)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # The exported coefficients reproduce the net's own probabilities.
    np.testing.assert_allclose(proba, clf.net_.predict_proba(X.astype(np.float32)), atol=1e-5)
    assert clf.score(X, y) > 0.85 and 0 < clf.epsilon_ < np.inf
    labels = np.where(y == 1, "benign", "malignant")
    assert set(clf.fit(X, labels).predict(X)) <= {"benign", "malignant"}


def test_grid_search_and_clone(data):
    X, y = data
    grid = GridSearchCV(
        DPSGDLogisticRegression(noise_multiplier=1.0, max_epochs=2, random_state=0), {"lr": [0.1, 1.0]}, cv=2
    ).fit(X, y)
    assert grid.best_params_["lr"] in (0.1, 1.0)
    grid_net = GridSearchCV(make(max_epochs=1), {"max_grad_norm": [0.5, 1.0]}, cv=2).fit(X, y)
    assert grid_net.best_estimator_.epsilon_ > 0
    pickle.loads(pickle.dumps(grid.best_estimator_))


def test_multiclass_logistic_regression():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    clf = DPSGDLogisticRegression(noise_multiplier=0.5, max_epochs=5, batch_size=32, random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 4) and clf.predict(X).shape == (150,)


def test_logistic_regression_initial_weights(data):
    """coef_init / intercept_init start training there (lr = 0 and no noise leave them as is)."""
    from sklearn.datasets import load_iris

    X, y = data
    frozen = dict(noise_multiplier=0.0, lr=0.0, max_epochs=1, random_state=0)
    start = np.linspace(-1, 1, 30)
    for coef in (start, start[None, :]):  # a binary problem takes either shape, as SGDClassifier
        clf = DPSGDLogisticRegression(**frozen).fit(X, y, coef_init=coef, intercept_init=[0.5])
        np.testing.assert_allclose(clf.coef_, start[None, :], rtol=1e-6)
        np.testing.assert_allclose(clf.intercept_, [0.5], rtol=1e-6)
    state = torch.random.get_rng_state()
    zero = DPSGDLogisticRegression(**frozen).fit(X, y, intercept_init=[0.0])
    assert np.all(zero.coef_ == 0)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global torch RNG is not used
    Xi, yi = load_iris(return_X_y=True)
    W = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(DPSGDLogisticRegression(**frozen).fit(Xi, yi, coef_init=W).coef_, W, rtol=1e-6)
    with pytest.raises(ValueError, match=r"coef_init must have shape \(1, 30\)"):
        DPSGDLogisticRegression().fit(X, y, coef_init=np.zeros((2, 30)))
    with pytest.raises(ValueError, match="intercept_init must have shape"):
        DPSGDLogisticRegression().fit(X, y, intercept_init=[0.0, 1.0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_dp_fit_is_seeded(data):
    X, y = data
    a = make(device="cuda").fit(X, y)
    b = make(device="cuda").fit(X, y)
    assert a.module_.output.weight.is_cuda
    assert torch.equal(a.module_.output.weight, b.module_.output.weight)
    assert a.epsilon_ == b.epsilon_
