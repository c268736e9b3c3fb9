"""skmip.nn's public entry points on a CUDA device: parameters stay there, results come back
as numpy and agree with the CPU to float32 round-off.

Skipped without CUDA (CI has none). The seeded-fit tests of test_seeding, test_ensemble and
test_dpsgd cover ``fit`` on CUDA; these cover the parameter adapter, the wrapper's release,
per-sample gradients and SGD replays, DP-SGD logistic regression and the private head. First
run on an NVIDIA H100 (docs/nn.md, "On a GPU").
"""

import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")

from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skmip import MIPNoiseWrapper  # noqa: E402
from skmip.nn import (  # noqa: E402
    DPSGDLogisticRegression,
    MLPModule,
    NeuralNetClassifier,
    PrivateHeadClassifier,
    SkorchAdapter,
    per_sample_gradients,
    sgd_step_gradients,
)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

EPS32 = np.finfo(np.float32).eps


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X).astype(np.float32)[:200], y[:200]


def make_net(**kw):
    params = dict(
        module__n_features=30, module__hidden=(8,), max_epochs=3, lr=0.1, batch_size=32,
        verbose=0, iterator_train__shuffle=True, random_state=0, device="cuda",
    )
    params.update(kw)
    return NeuralNetClassifier(MLPModule, **params)


def on_cuda(module):
    return all(p.is_cuda for p in module.parameters())


def cpu_twin(net, X, y):
    """A CPU net holding exactly the parameters of the CUDA net ``net``."""
    twin = make_net(device="cpu").fit(X, y)
    SkorchAdapter().set_vector(twin, SkorchAdapter().get_vector(net))
    return twin


def test_adapter_writes_back_onto_the_device(data):
    X, y = data
    net = make_net().fit(X, y)
    adapter = SkorchAdapter()
    v = adapter.get_vector(net)
    adapter.set_vector(net, v + 1.0)
    assert on_cuda(net.module_) and net.module_.output.weight.dtype == torch.float32
    # The write rounds to float32 and changes nothing else.
    np.testing.assert_array_equal(adapter.get_vector(net), (v + 1.0).astype(np.float32).astype(np.float64))


def test_wrapper_release_stays_on_the_device_and_repeats(data):
    X, y = data
    fits = [MIPNoiseWrapper(make_net(random_state=None), eta=0.45, n_subsets=6, random_state=0).fit(X, y)
            for _ in range(2)]
    assert on_cuda(fits[0].estimator_.module_)
    np.testing.assert_array_equal(SkorchAdapter().get_vector(fits[0].estimator_),
                                  SkorchAdapter().get_vector(fits[1].estimator_))
    assert fits[0].predict(X).shape == (len(X),)


def test_gradients_and_sgd_replay_match_the_cpu(data):
    X, y = data
    net = make_net().fit(X, y)
    twin = cpu_twin(net, X, y)
    G, ref = per_sample_gradients(net, X[:40], y[:40]), per_sample_gradients(twin, X[:40], y[:40])
    # float32 accumulation in a different order on each device: a few ulps of the row's largest entry.
    assert np.all(np.abs(G - ref) <= 64 * EPS32 * np.abs(ref).max(axis=1, keepdims=True))
    nets, means = sgd_step_gradients(net, X[:16], y[:16], n_steps=2)
    _, ref_means = sgd_step_gradients(twin, X[:16], y[:16], n_steps=2)
    assert all(on_cuda(w.module_) for w in nets) and on_cuda(net.module_)
    assert np.all(np.abs(means - ref_means) <= 64 * EPS32 * np.abs(ref_means).max(axis=1, keepdims=True))


def test_dpsgd_logistic_regression_on_the_device(data):
    X, y = data
    start = np.linspace(-1, 1, 30)
    frozen = DPSGDLogisticRegression(noise_multiplier=0.0, lr=0.0, max_epochs=1, random_state=0, device="cuda")
    clf = frozen.fit(X, y, coef_init=start, intercept_init=[0.5])
    assert clf.net_.module_.output.weight.is_cuda
    np.testing.assert_allclose(clf.coef_, start[None, :], rtol=1e-6)  # lr = 0, no noise: the start, in float32
    a, b = (DPSGDLogisticRegression(device="cuda", random_state=0, max_epochs=2).fit(X, y) for _ in range(2))
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.epsilon_ == b.epsilon_


def test_private_head_on_a_cuda_backbone(data):
    X, y = data
    gen = torch.Generator().manual_seed(0)
    layer = torch.nn.Linear(30, 8)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(8, 30, generator=gen) / np.sqrt(30))
        layer.bias.copy_(0.1 * torch.randn(8, generator=gen))
    cpu = torch.nn.Sequential(layer, torch.nn.Tanh())
    cuda = copy.deepcopy(cpu).to("cuda")
    with torch.no_grad():
        phi = cuda(torch.as_tensor(X, device="cuda")).double().cpu().numpy()
        phi_cpu = cpu(torch.as_tensor(X)).double().numpy()
    assert np.abs(phi - phi_cpu).max() <= 64 * EPS32  # tanh features lie in [-1, 1]
    head = PrivateHeadClassifier(cuda, C=0.1).fit(X, y)
    # The head is the exact solve on the device's features, brought back as float64.
    exact = head._head_template().fit(phi, y)
    np.testing.assert_array_equal(head.head_.coef_, exact.coef_)
    before = {k: v.clone() for k, v in cuda.state_dict().items()}
    private = MIPNoiseWrapper(PrivateHeadClassifier(cuda, C=0.1), eta=0.25, n_rounds=50, random_state=0).fit(X, y)
    assert private.sensitivity_engine_ == "newton" and private.coupling_eta_upper_ <= 0.25
    released = private.estimator_.backbone_.state_dict()
    assert all(v.is_cuda and torch.equal(v, before[k]) for k, v in released.items())
