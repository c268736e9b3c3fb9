"""skmip.nn.head: a softmax head solved exactly on a frozen backbone, noised alone by coupling."""

import pickle
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_digits, load_iris  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from skmip import MIPNoiseWrapper  # noqa: E402
from skmip.exceptions import PrivacyWarning  # noqa: E402
from skmip.nn import PrivateHeadClassifier  # noqa: E402
from skmip.params import get_adapter  # noqa: E402
from skmip.calibration.swap import estimate_swap_deltas, get_smooth_loss, polish_to_minimiser  # noqa: E402


def _backbone(n_in, width=6, seed=0):
    gen = torch.Generator().manual_seed(seed)
    layer = torch.nn.Linear(n_in, width)
    with torch.no_grad():
        layer.weight.copy_(torch.randn(width, n_in, generator=gen) / np.sqrt(n_in))
        layer.bias.copy_(0.1 * torch.randn(width, generator=gen))
    return torch.nn.Sequential(layer, torch.nn.Tanh())


def _phi(backbone, X):
    with torch.no_grad():
        return backbone(torch.as_tensor(X, dtype=torch.float32)).double().numpy()


def _state(module):
    return {k: v.clone() for k, v in module.state_dict().items()}


def _same_state(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.fixture(scope="module")
def digits():
    """Digits 5-9 (a private half in the benchmark), scaled to [0, 1]; a subset for speed."""
    X, y = load_digits(return_X_y=True)
    keep = np.flatnonzero(y >= 5)[:160]
    return X[keep] / 16.0, y[keep]


@parametrize_with_checks([PrivateHeadClassifier(torch.nn.Identity())])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        check(estimator)


@pytest.mark.parametrize("binary", [True, False])
def test_head_is_logistic_regression_on_the_frozen_features(digits, binary):
    X, y = digits
    y = y % 2 if binary else y
    bb = _backbone(X.shape[1])
    before = _state(bb)
    clf = PrivateHeadClassifier(bb, C=2.0).fit(X, y)
    ref = LogisticRegression(C=2.0, solver="newton-cholesky", tol=1e-10).fit(_phi(bb, X), y)
    np.testing.assert_allclose(clf.head_.coef_, ref.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(_phi(bb, X)), atol=1e-9)
    assert np.array_equal(clf.predict(X), ref.predict(_phi(bb, X)))
    # fit trains nothing in the backbone, leaves the caller's module as it was (mode included)
    assert _same_state(before, bb.state_dict()) and bb.training
    assert _same_state(before, clf.backbone_.state_dict()) and not clf.backbone_.training
    assert clf.n_backbone_features_ == 6
    assert pickle.loads(pickle.dumps(clf)).score(X, y) == clf.score(X, y)


class _Drifting(torch.nn.Module):
    """A backbone whose forward moves its own weights with the data it sees."""

    def __init__(self, n_in):
        super().__init__()
        self.layer = torch.nn.Linear(n_in, 3)

    def forward(self, X):
        self.layer.weight.add_(1e-3 * X.mean())
        return self.layer(X)


class _BatchStats(torch.nn.Module):
    """Batch norm forced into training mode: its running statistics follow the private rows."""

    def __init__(self, n_in):
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(n_in)

    def forward(self, X):
        self.norm.train()
        return self.norm(X)


@pytest.mark.parametrize("make", [_Drifting, _BatchStats])
def test_a_backbone_that_changes_during_fit_is_refused(digits, make):
    X, y = digits
    with pytest.raises(ValueError, match=r"PrivateHeadClassifier: the backbone's tensors .* changed"):
        PrivateHeadClassifier(make(X.shape[1])).fit(X, y)


def test_invalid_parameters_say_what_to_do(digits):
    X, y = digits
    with pytest.raises(TypeError, match="backbone must be a torch.nn.Module"):
        PrivateHeadClassifier(np.eye(3)).fit(X, y)
    with pytest.raises(ValueError, match="C"):
        PrivateHeadClassifier(_backbone(X.shape[1]), C=0.0).fit(X, y)


def test_registered_loss_and_adapter_read_the_head_only(digits):
    X, y = digits
    clf = PrivateHeadClassifier(_backbone(X.shape[1]), C=1.0, tol=1e-3).fit(X, y)
    adapter = get_adapter(clf)
    vec = adapter.get_vector(clf)
    assert vec.shape == (5 * 6 + 5,)  # class-major coef_ then intercept_, no backbone tensor
    blocks = get_smooth_loss(clf).blocks(clf, X, y, np.arange(len(X)), None)
    np.testing.assert_array_equal(vec[blocks[0].index], blocks[0].theta)
    # a loose solver is carried to the minimiser of the same objective as a tight one
    polish_to_minimiser(clf, X, y)
    tight = PrivateHeadClassifier(clf.backbone, C=1.0).fit(X, y)
    np.testing.assert_allclose(adapter.get_vector(clf), adapter.get_vector(tight), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("engine, weighted", [("newton", False), ("refit", False), ("newton", True)])
def test_swap_distances_are_those_of_logistic_regression_on_the_features(digits, engine, weighted):
    # The head is a GLM on fixed features: its swap distances must be exactly those of
    # LogisticRegression fitted on phi(X), pair for pair (same seeds draw the same pairs).
    X, y = digits[0][:60], digits[1][:60] % 2
    bb = _backbone(X.shape[1])
    w = np.full(7, 0.05)
    kw = dict(scale=w, n_rounds=2, pairs_per_target=2, random_state=3, engine=engine)
    if weighted:
        kw["fit_params"] = {"sample_weight": np.random.default_rng(1).uniform(0.5, 2.0, size=len(X))}
    head = estimate_swap_deltas(PrivateHeadClassifier(bb, C=1.0), X, y, **kw)
    ref = estimate_swap_deltas(LogisticRegression(C=1.0, solver="newton-cholesky", tol=1e-10),
                               _phi(bb, X), y, **kw)
    assert head.engine == engine
    np.testing.assert_allclose(head.distances, ref.distances, rtol=1e-6)


@pytest.mark.parametrize("binary", [True, False])
def test_influence_engines_track_refits_of_the_head(binary):
    # Refit validation on a small problem: the engine the wrapper picks against exact refits
    # of the whole net on the same (x*, e) pairs; thresholds as for LogisticRegression
    # (tests/calibration/test_swap_distances.py): the target-exact Newton scheme, with one margin for two
    # classes and K margins for more (skmip/calibration/swap/multinomial.py).
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    y = (y == 2).astype(int) if binary else y
    net = PrivateHeadClassifier(_backbone(4, width=5, seed=1), C=0.5)
    rng = np.random.default_rng(0)
    vecs = []
    for _ in range(40):
        rows = np.sort(rng.permutation(len(X))[:75])
        vecs.append(get_adapter(net).get_vector(clone(net).fit(X[rows], y[rows])))
    kw = dict(scale=np.std(vecs, axis=0), n_rounds=1, pairs_per_target=1, random_state=2)
    fast = estimate_swap_deltas(net, X, y, **kw)
    refit = estimate_swap_deltas(net, X, y, engine="refit", **kw)
    assert fast.engine == "newton"
    err = np.abs(fast.distances / refit.distances - 1)
    assert np.median(err) < 0.01


def test_wrapper_noises_only_the_head_end_to_end(digits):
    X, y = digits
    bb = _backbone(X.shape[1], width=8)
    before = _state(bb)
    with pytest.warns(PrivacyWarning, match="random_state"):
        private = MIPNoiseWrapper(PrivateHeadClassifier(bb, C=1.0), eta=0.25,
                                  n_rounds=100, random_state=0).fit(X, y % 2)
    assert private.method_ == "coupling" and private.sensitivity_engine_ == "newton"
    assert private.coupling_eta_upper_ <= 0.25
    released = private.estimator_
    # the backbone is released bit for bit as given: no noise, no training
    assert _same_state(before, released.backbone_.state_dict())
    # what was noised is the head: the sigma vector has one entry per head coordinate, and
    # the released head is not the exact fit on any subset (it carries Gaussian noise)
    assert private.sigma_.shape == (8 + 1,)
    assert not hasattr(released.head_, "n_iter_") and not hasattr(released, "n_iter_")  # scrubbed
    exact = PrivateHeadClassifier(bb, C=1.0).fit(X, y % 2)
    assert not np.allclose(released.head_.coef_, exact.head_.coef_, atol=1e-3)
    assert set(private.predict(X)) <= {0, 1} and private.score(X, y % 2) > 0.5
