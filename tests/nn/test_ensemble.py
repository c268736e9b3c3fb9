"""skmip.nn.ensemble: vmapped ensembles reproduce sequential skorch fits."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skorch = pytest.importorskip("skorch")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skmip.nn import (  # noqa: E402
    MLPModule,
    NeuralNetClassifier,
    NeuralNetRegressor,
    SkorchAdapter,
    ensemble_vectors,
    fit_ensemble,
)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return StandardScaler().fit_transform(X).astype(np.float32)[:600], y[:600]


def make(**kw):
    params = dict(
        module__n_features=64, module__n_outputs=10, module__hidden=(16,), max_epochs=3,
        batch_size=48, lr=0.05, random_state=0, verbose=0, iterator_train__shuffle=True,
    )
    params.update(kw)
    return NeuralNetClassifier(MLPModule, **params)


def vectors(nets):
    return np.stack([SkorchAdapter().get_vector(n) for n in nets])


def roundoff_tol(net, size, reference):
    # Each step can differ by a few float32 ulps of the parameters; over the steps of
    # training such differences add up at most linearly (small learning rates).
    steps = net.max_epochs * int(np.ceil(size / net.batch_size))
    return 8 * steps * np.finfo(np.float32).eps * np.abs(reference).max()


@pytest.mark.parametrize(
    "optimizer, extra",
    [(torch.optim.SGD, {"optimizer__momentum": 0.9}), (torch.optim.Adam, {"lr": 0.01})],
)
def test_members_match_sequential_fits(digits, optimizer, extra):
    X, y = digits
    rng = np.random.default_rng(0)
    # 250 rows in batches of 48: the last batch of each epoch is smaller, as in skorch.
    subsets = [rng.choice(len(X), size=250, replace=False) for _ in range(4)]
    seeds = [0, 1, 2, 3]
    net = make(optimizer=optimizer, **extra)
    members = fit_ensemble(net, X, y, subsets, random_states=seeds)
    seq = [clone(net).set_params(random_state=s).fit(X[r], y[r]) for s, r in zip(seeds, subsets)]
    a, b = vectors(members), vectors(seq)
    assert np.abs(a - b).max() <= roundoff_tol(net, 250, b)
    assert not np.allclose(a[0], a[1])  # members really differ
    np.testing.assert_array_equal(members[1].classes_, seq[1].classes_)
    np.testing.assert_array_equal(members[1].predict(X), seq[1].predict(X))
    assert len(members[0].history_) == 0


def test_shared_seed_without_shuffle_and_regressor(digits):
    X, y = digits
    subsets = [np.arange(i * 100, i * 100 + 100) for i in range(3)]
    reg = NeuralNetRegressor(
        MLPModule, module__n_features=64, module__n_outputs=1, max_epochs=2, batch_size=32,
        lr=0.01, random_state=5, verbose=0,
    )
    target = y.astype(np.float32)[:, None]
    members = fit_ensemble(reg, X, target, subsets)
    seq = [clone(reg).fit(X[r], target[r]) for r in subsets]
    a, b = vectors(members), vectors(seq)
    assert np.abs(a - b).max() <= roundoff_tol(reg, 100, b)
    vec = ensemble_vectors(reg, X, target, subsets)
    np.testing.assert_array_equal(vec, a)


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(train_split=skorch.dataset.ValidSplit(5)), "train_split must be None"),
        (dict(callbacks=[skorch.callbacks.GradientNormClipping(1.0)]), "callbacks="),
        (dict(iterator_train__drop_last=True), "change the data loading"),
    ],
)
def test_unsupported_templates(digits, kw, match):
    X, y = digits
    with pytest.raises(ValueError, match=match):
        fit_ensemble(make(**kw), X, y, [np.arange(50), np.arange(50, 100)])


def test_bad_subsets_and_unseeded_nets(digits):
    X, y = digits
    with pytest.raises(ValueError, match="same positive length"):
        fit_ensemble(make(), X, y, [np.arange(50), np.arange(60)])
    plain = skorch.NeuralNetClassifier(MLPModule, module__n_features=64, train_split=None)
    with pytest.raises(TypeError, match="no random_state"):
        fit_ensemble(plain, X, y, [np.arange(50)])


class BN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(64)
        self.output = torch.nn.Linear(64, 10)

    def forward(self, X):
        return self.output(self.bn(X))


def test_buffers_are_refused(digits):
    X, y = digits
    net = NeuralNetClassifier(BN, max_epochs=1, random_state=0, verbose=0)
    with pytest.raises(ValueError, match="buffers"):
        fit_ensemble(net, X, y, [np.arange(50), np.arange(50, 100)])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_ensemble_matches_cuda_sequential(digits):
    X, y = digits
    rng = np.random.default_rng(0)
    subsets = [rng.choice(len(X), size=200, replace=False) for _ in range(3)]
    net = make(device="cuda")
    a = vectors(fit_ensemble(net, X, y, subsets))
    b = vectors([clone(net).fit(X[r], y[r]) for r in subsets])
    assert np.abs(a - b).max() <= roundoff_tol(net, 200, b) * 10


def test_fit_subsets_hook_batches_or_falls_back(digits):
    X, y = digits
    subsets = [np.arange(0, 120), np.arange(120, 240)]
    net = make()
    seq = vectors([clone(net).fit(X[r], y[r]) for r in subsets])
    fast = net.fit_subsets(X, y, subsets)
    assert np.abs(fast - seq).max() <= roundoff_tol(net, 120, seq)
    # Unequal subsets are not batched: the hook falls back to sequential fits.
    uneven = [np.arange(0, 100), np.arange(100, 230)]
    slow = net.fit_subsets(X, y, uneven)
    np.testing.assert_array_equal(slow, vectors([clone(net).fit(X[r], y[r]) for r in uneven]))
