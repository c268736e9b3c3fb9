"""The K-margin "newton" engine (skmip.calibration.swap.multinomial): its algebra and its accuracy."""

import numpy as np
import pytest
from scipy.special import logsumexp
from sklearn.datasets import load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skmip.calibration.swap import estimate_swap_deltas, get_smooth_loss
from skmip.calibration.swap.multinomial import _multi_margin_distances
from skmip.calibration.swap.polish import _factor
from skmip.calibration.swap.whitening import _Whitener


def _dense_model_minimiser(block, e, x, C, onehot):
    """argmin Q(Delta) = -g_e'Delta + Delta'A Delta / 2 + l_x(z0_x + X_x'Delta) with dense A
    (A = H - X_e W_e X_e'), by damped Newton on Q itself: the definition the Woodbury and
    K-dimensional reductions of multinomial.py must reproduce."""
    terms = block.multi
    K = terms.margins.shape[1]
    Xe = np.kron(np.eye(K), terms.features[e][:, None])
    Xx = np.kron(np.eye(K), terms.features[x][:, None])
    We = terms.d2loss(terms.margins[[e]], np.array([e]))[0]
    A = block.hessian - Xe @ We @ Xe.T
    g = block.gradients[e]

    def Q(delta):
        z = terms.margins[x] + Xx.T @ delta
        return -g @ delta + 0.5 * delta @ A @ delta + C * (logsumexp(z) - onehot[x] @ z)

    delta = np.zeros(A.shape[0])
    for _ in range(100):
        z = terms.margins[x] + Xx.T @ delta
        grad = -g + A @ delta + Xx @ terms.dloss(z[None], np.array([x]))[0]
        hess = A + Xx @ terms.d2loss(z[None], np.array([x]))[0] @ Xx.T
        step = np.linalg.solve(hess, grad)
        t = 1.0
        # Damped far from the minimiser only: near it Q's values differ by rounding alone.
        while np.linalg.norm(t * step) > 1e-6 and Q(delta - t * step) > Q(delta):
            t /= 2
        delta = delta - t * step
        if np.linalg.norm(step) < 1e-13 * (1 + np.linalg.norm(delta)):
            break
    return delta


@pytest.mark.parametrize("load, C, fit_intercept", [(load_iris, 1.0, True), (load_wine, 0.3, True), (load_iris, 2.0, False)])
@pytest.mark.parametrize("shape", ["diagonal", "matrix"])
def test_distances_are_the_exact_minimiser_of_the_target_exact_model(load, C, fit_intercept, shape):
    X, y = load(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(0)
    n = len(X)
    H = np.sort(rng.permutation(n)[: n // 2])
    targets = np.setdiff1d(np.arange(n), H)[:6]
    est = LogisticRegression(C=C, fit_intercept=fit_intercept, solver="newton-cholesky", tol=1e-12)
    est.fit(X[H], y[H])
    (block,) = get_smooth_loss(est).blocks(est, X, y, H, None)
    D = block.theta.size
    if shape == "diagonal":
        scale = rng.uniform(0.05, 0.2, size=D)
        whiten = lambda v: v / scale  # noqa: E731
    else:
        scale = 0.1 * (np.eye(D) + 0.1 * np.tril(rng.normal(size=(D, D)), -1))
        whiten = lambda v: np.linalg.solve(scale, v)  # noqa: E731
    e_pos = rng.integers(0, H.size, size=(targets.size, 3))
    got = _multi_margin_distances(block, _factor(block), H, targets, e_pos, _Whitener(scale))
    onehot = (y[:, None] == est.classes_[None, :]).astype(float)
    for t, x in enumerate(targets):
        for j, pos in enumerate(e_pos[t]):
            delta = _dense_model_minimiser(block, H[pos], x, C, onehot)
            layout = np.empty(D)
            layout[block.index] = delta
            np.testing.assert_allclose(got[t, j], np.linalg.norm(whiten(layout)), rtol=1e-8)


def test_all_pairs_and_sampled_pairs_agree():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(1)
    H = np.sort(rng.permutation(len(X))[:75])
    targets = np.setdiff1d(np.arange(len(X)), H)
    est = LogisticRegression(C=1.0, solver="newton-cholesky", tol=1e-12).fit(X[H], y[H])
    (block,) = get_smooth_loss(est).blocks(est, X, y, H, None)
    whitener = _Whitener(np.full(block.theta.size, 0.1))
    every = _multi_margin_distances(block, _factor(block), H, targets, None, whitener)
    pos = np.tile(np.arange(H.size), (targets.size, 1))
    np.testing.assert_allclose(every, _multi_margin_distances(block, _factor(block), H, targets, pos, whitener))


def test_default_pairs_are_sampled_and_all_pairs_on_request():
    # The default draws 8 e per target (linear in n); "all" keeps the sorted-block summary.
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    kw = dict(scale=np.full(15, 0.1), n_rounds=1, random_state=0)
    res = estimate_swap_deltas(LogisticRegression(C=1.0, tol=1e-10), X, y, **kw)
    assert res.engine == "newton" and res.pairs == "sampled"
    every = estimate_swap_deltas(LogisticRegression(C=1.0, tol=1e-10), X, y, pairs_per_target="all", **kw)
    assert every.pairs == "all"
    for r in (res, every):
        np.testing.assert_array_equal(np.isfinite(r.distances), True)


def test_a_zero_scale_coordinate_that_moves_gives_infinity():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    w = np.full(15, 0.1)
    w[0] = 0.0  # the first coefficient of class 0 moves with every swap
    res = estimate_swap_deltas(LogisticRegression(C=1.0, tol=1e-10), X, y, scale=w, n_rounds=1,
                               pairs_per_target=2, random_state=0)
    assert np.isinf(res.distances).all()


# ----------------------------------------------------------------------------- tiny data
def _three_classes(n, seed=0):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    return rng.normal(size=(n, 2)) + y[:, None], y


def test_tiny_three_class_data_is_refused_with_the_reason_not_an_index_error():
    """12 rows, 4 per class: random 6-row subsets often lack a class, and scikit-learn then fits 2
    classes (3 parameters where D's model has 9). That used to surface as an IndexError deep in
    the engine (influence.py); since issue 31 (item 4) the wrapper decides it from D's class
    counts before D_train is drawn, in words that name D only (the engine's own check of its fit
    sets is the next test)."""
    import warnings

    from skmip import MIPNoiseWrapper

    X, y = _three_classes(12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"MIPNoiseWrapper: a random subset of 6 of the 12 rows .*"
                                             r"class counts 0: 4, 1: 4, 2: 4.*raise train_size"):
            MIPNoiseWrapper(LogisticRegression(), eta=0.1, method="coupling", random_state=0).fit(X, y)


def test_fit_sets_lacking_a_class_score_zero_on_the_multinomial_path():
    """12 rows of three classes, k = 6 (the multinomial K-margin path): fit sets lacking a
    class no longer stop the calibration; their targets' rounds score 0
    (tests/calibration/test_class_cover.py checks where, round by round)."""
    X, y = _three_classes(12)
    res = estimate_swap_deltas(LogisticRegression(), X, y, scale=np.ones(9), train_size=6, n_rounds=50,
                               random_state=0)
    dist = np.asarray(res.distances)
    assert np.all(np.isfinite(dist)) and (dist == 0).any() and (dist > 0).any()


def test_small_three_class_data_whose_subsets_keep_every_class_calibrates():
    """45 rows, 15 per class: the coupling route (designed shape, newton engine, the
    multinomial K-margin path) runs, and its distances are certified (the softmax loss's range
    self-concordance, multi_certify.py), so it promises eta."""
    import warnings

    from skmip import MIPNoiseWrapper

    X, y = _three_classes(45)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = MIPNoiseWrapper(LogisticRegression(), eta=0.1, method="coupling", random_state=0).fit(X, y)
    assert w.method_ == "coupling" and w.sensitivity_engine_ == "newton"
    assert w.coupling_certified_ and w.mip_bound_ == 0.1 and w.coupling_eta_upper_ <= 0.1
    assert w.coupling_eta_point_ <= 0.1 and w.target_eta_ == 0.1
    assert w.estimator_.coef_.shape == (3, 2)
