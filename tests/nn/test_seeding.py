"""skmip.nn: seeded skorch nets and the skorch parameter adapter."""

import pickle
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skorch = pytest.importorskip("skorch")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skmip.nn import MLPModule, NeuralNetClassifier, NeuralNetRegressor, SkorchAdapter  # noqa: E402
from skmip.params import get_adapter  # noqa: E402


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:200]
    return X, y[:200]


def make_net(**kw):
    params = dict(
        module__n_features=30, module__hidden=(8,), max_epochs=3, lr=0.1, batch_size=32,
        verbose=0, iterator_train__shuffle=True, random_state=0,
    )
    params.update(kw)
    return NeuralNetClassifier(MLPModule, **params)


def vec(net):
    return SkorchAdapter().get_vector(net)


def test_same_seed_same_parameters_and_global_rng_untouched(data):
    X, y = data
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a = make_net().fit(X, y)
    assert torch.equal(before, torch.get_rng_state())
    b = make_net().fit(X, y)
    np.testing.assert_array_equal(vec(a), vec(b))
    c = make_net(random_state=1).fit(X, y)
    assert not np.array_equal(vec(a), vec(c))


def test_data_order_comes_from_the_seed(data):
    X, y = data
    # Same initialisation (dropout-free, seeds differ only in data order): compare the
    # first epoch's permutation by training with and without shuffle.
    shuffled = make_net(max_epochs=1).fit(X, y)
    ordered = make_net(max_epochs=1, iterator_train__shuffle=False).fit(X, y)
    assert not np.array_equal(vec(shuffled), vec(ordered))
    # Refitting the same net object repeats the order exactly.
    np.testing.assert_array_equal(vec(shuffled), vec(shuffled.fit(X, y)))


def test_partial_fit_continues_with_new_seeds(data):
    X, y = data
    a = make_net(max_epochs=1).fit(X, y)
    a.partial_fit(X, y)
    b = make_net(max_epochs=1).fit(X, y)
    b.partial_fit(X, y)
    np.testing.assert_array_equal(vec(a), vec(b))
    assert len(a.history_) == 2


def test_random_state_instance_is_advanced(data):
    X, y = data
    rs = np.random.RandomState(0)
    a = vec(make_net(random_state=rs).fit(X, y))
    b = vec(make_net(random_state=rs).fit(X, y))
    assert not np.array_equal(a, b)


def test_clone_get_params_pickle(data):
    X, y = data
    net = make_net(random_state=7)
    assert net.get_params()["random_state"] == 7
    c = clone(net)
    assert c.random_state == 7 and "_data_generator_" not in c.get_params()
    fitted = c.fit(X, y)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(again.predict_proba(X), fitted.predict_proba(X))


def test_float64_input_and_regressor(data):
    X, y = data
    reg = NeuralNetRegressor(
        MLPModule, module__n_features=30, module__n_outputs=1, max_epochs=2, lr=0.01, verbose=0,
        random_state=0,
    )
    reg.fit(X, y.astype(np.float32).reshape(-1, 1))
    assert reg.predict(X).shape == (len(X), 1)


# -- adapter --------------------------------------------------------------------------


def test_adapter_is_found_and_round_trips(data):
    X, y = data
    net = make_net().fit(X, y)
    adapter = get_adapter(net)
    assert isinstance(adapter, SkorchAdapter)
    v = adapter.get_vector(net)
    assert v.dtype == np.float64 and v.shape == (30 * 8 + 8 + 8 * 2 + 2,)
    w = v + 0.5
    adapter.set_vector(net, w)
    np.testing.assert_allclose(adapter.get_vector(net), w.astype(np.float32), rtol=0, atol=0)
    with pytest.raises(ValueError, match="vector has 3 entries"):
        adapter.set_vector(net, np.zeros(3))


def test_adapter_selects_by_pattern(data):
    X, y = data
    net = make_net().fit(X, y)
    last = SkorchAdapter(include=["output.*"])
    assert last.get_vector(net).shape == (18,)
    before = SkorchAdapter(include=["hidden.*"]).get_vector(net)
    last.set_vector(net, np.zeros(18))
    assert not net.module_.output.weight.detach().numpy().any()
    np.testing.assert_array_equal(SkorchAdapter(include=["hidden.*"]).get_vector(net), before)
    assert SkorchAdapter(exclude=["*.bias"]).get_vector(net).shape == (30 * 8 + 8 * 2,)
    with pytest.raises(ValueError, match="select no tensor"):
        SkorchAdapter(include=["nope"]).get_vector(net)


def test_adapter_refuses_unseeded_plain_skorch(data):
    X, y = data
    plain = skorch.NeuralNetClassifier(
        MLPModule, module__n_features=30, criterion=torch.nn.CrossEntropyLoss, max_epochs=1,
        train_split=None, verbose=0,
    ).fit(X.astype(np.float32), y)
    adapter = get_adapter(plain)
    with pytest.raises(TypeError, match=r"skmip\.nn\.NeuralNetClassifier\(\.\.\., random_state=0\)"):
        adapter.get_vector(plain)
    assert SkorchAdapter(require_seed=False).get_vector(plain).size == 30 * 32 + 32 + 32 * 2 + 2



def test_plain_skorch_net_finds_its_adapter_without_importing_skmip_nn():
    """skmip.params holds no skorch code: the torch leaf registers SkorchAdapter itself, and
    get_adapter imports the leaf the first time it meets a skorch net (in a fresh interpreter,
    where no other test has imported skmip.nn)."""
    code = (
        "import sys, skorch, torch\n"
        "from skmip.params import get_adapter\n"
        "assert 'skmip.nn' not in sys.modules\n"
        "net = skorch.NeuralNetClassifier(torch.nn.Linear, module__in_features=2, module__out_features=2)\n"
        "print(repr(get_adapter(net)), 'skmip.nn.params' in sys.modules)\n"
        "from skmip.params import registry\n"
        "print(sum(p(net) for p, _ in registry._REGISTRY))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # One registry entry matches: the leaf's own, registered once.
    assert out.stdout.split() == ["SkorchAdapter()", "True", "1"]

class BNModule(torch.nn.Module):
    def __init__(self, n_features=30):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(n_features)
        self.output = torch.nn.Linear(n_features, 2)

    def forward(self, X):
        return self.output(self.bn(X))


def test_adapter_noises_batchnorm_statistics_and_projects(data):
    X, y = data
    net = NeuralNetClassifier(BNModule, max_epochs=1, verbose=0, random_state=0).fit(X, y)
    adapter = SkorchAdapter()
    names = [n for n, _ in adapter.named_tensors(net)]
    assert "bn.running_mean" in names and "bn.running_var" in names
    assert "bn.num_batches_tracked" not in names
    v = adapter.get_vector(net)
    adapter.set_vector(net, -np.abs(v) - 1.0)
    adapter.project(net)
    assert (net.module_.bn.running_var >= 0).all()
    assert (net.module_.bn.running_mean < 0).all()  # only the variances are projected


def test_scrub_drops_history_callback_and_optimizer_state(data):
    X, y = data
    net = make_net(optimizer=torch.optim.Adam, lr=0.01).fit(X, y)
    assert len(net.history_) == 3 and len(net.optimizer_.state) > 0
    SkorchAdapter().scrub(net)
    assert len(net.history_) == 0
    assert len(net.optimizer_.state) == 0
    assert net.predict(X).shape == (len(X),)
    pickle.loads(pickle.dumps(net))


def test_mip_noise_wrapper_end_to_end(data):
    wrappers = pytest.importorskip("skmip.defend")
    X, y = data
    net = make_net(random_state=None)
    w = wrappers.MIPNoiseWrapper(net, eta=0.45, n_subsets=6, random_state=0).fit(X, y)
    released = w.estimator_
    assert len(released.history_) == 0
    assert w.sigma_.shape == (30 * 8 + 8 + 8 * 2 + 2,) and np.all(w.sigma_ > 0)
    assert w.predict(X).shape == (len(X),)
    # The wrapper fixes one integer seed per fit: repeat fits give the same release.
    w2 = wrappers.MIPNoiseWrapper(net, eta=0.45, n_subsets=6, random_state=0).fit(X, y)
    np.testing.assert_array_equal(vec(w.estimator_), vec(w2.estimator_))
    np.testing.assert_array_equal(w.sigma_, w2.sigma_)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_fit_is_seeded(data):
    X, y = data
    a = make_net(device="cuda").fit(X, y)
    b = make_net(device="cuda").fit(X, y)
    np.testing.assert_array_equal(vec(a), vec(b))
    assert str(a.module_.output.weight.device).startswith("cuda")
