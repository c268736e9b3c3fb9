"""The noise shape designed for utility (skmip.calibration.noise_shape): optimality, influences,
the exact attacker, and the wrapper's choice of shape."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from skmip import MIPNoiseWrapper
from skmip.bounds import coupling_eta_per_target, coupling_noise_scale
from skmip.exceptions import PrivacyWarning
from skmip.calibration.noise_shape import design_noise_factor
from skmip.calibration.swap import estimate_swap_deltas, polish_to_minimiser
from skmip.calibration.noise_shape import _design_shape, _influence_vectors
from skmip.calibration.losses.registry import get_smooth_loss


def _cost(V, A, S):
    q = np.einsum("ij,ij->i", V, np.linalg.solve(S, V.T).T)
    return q.max() * np.trace(A @ S)


def _rare_column_data(n=300, seed=0):
    """Two Gaussian features and a standardized one-hot column that three rows hold."""
    rng = np.random.default_rng(seed)
    X = np.c_[rng.normal(size=(n, 2)), np.zeros(n)]
    X[:3, 2] = 1.0
    X = StandardScaler().fit_transform(X)
    y = (X[:, 0] - X[:, 1] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def test_design_is_optimal_in_two_dimensions_against_a_grid():
    """f(S) = max_i v_i'S^-1 v_i tr(AS) is scale-invariant; in two dimensions every shape is
    (up to scale) S = [[1, r], [r, t]]: a fine grid over (r, t) cannot beat the design by
    more than its resolution."""
    rng = np.random.default_rng(3)
    V = rng.normal(size=(40, 2)) * [1.0, 0.3]
    V[0] = [0.2, 2.5]  # one record alone moves the second coordinate far
    A = np.array([[1.0, 0.3], [0.3, 0.5]])
    S, f, f0, gap = _design_shape(V, A, max_iter=2000, tol=1e-9)
    assert 0 <= gap <= 1e-9  # the dual bound certifies the optimum
    best = np.inf
    for t in np.geomspace(1e-3, 1e3, 241):
        for c in np.linspace(-0.995, 0.995, 199):
            G = np.array([[1.0, c * np.sqrt(t)], [c * np.sqrt(t), t]])
            best = min(best, _cost(V, A, G))
    assert f == pytest.approx(_cost(V, A, S), rel=1e-8)
    assert f <= best * (1 + 1e-3)
    assert f0 >= f  # the uniform-weight start is no better than the design


def test_influences_match_leave_one_out_refits():
    """v_i predicts how far adding record i moves a k-row fit that lacks it: on average over
    k-subsets without i, A(D_out + i) - A(D_out) against v_i (generalised-linear
    leave-one-out correction), for the most exposed records."""
    X, y = _rare_column_data(n=120)
    n, k = len(X), len(X) // 2
    est = LogisticRegression(C=1.0, solver="newton-cholesky", tol=1e-12)
    full = polish_to_minimiser(LogisticRegression(C=1.0).fit(X, y), X, y)
    V, A, covered = _influence_vectors(full, get_smooth_loss(full), X, y, None, k, 4)
    assert covered.all() and np.all(np.linalg.eigvalsh(A) > 0)
    rng = np.random.default_rng(0)
    for i in np.argsort(-np.linalg.norm(V, axis=1))[:3]:
        moves = []
        for _ in range(30):
            out = rng.choice(np.delete(np.arange(n), i), size=k, replace=False)
            a = est.fit(X[out], y[out])
            th_out = np.r_[a.coef_[0], a.intercept_]
            b = est.fit(X[np.r_[out, i]], y[np.r_[out, i]])
            moves.append(np.r_[b.coef_[0], b.intercept_] - th_out)
        mean = np.mean(moves, axis=0)
        # Sign convention: v_i = H^-1 grad l_i, adding i moves the fit by about -v_i.
        cos = -(mean @ V[i]) / (np.linalg.norm(mean) * np.linalg.norm(V[i]))
        assert cos > 0.9
        assert 0.5 < np.linalg.norm(V[i]) / np.linalg.norm(mean) < 2.0


def test_design_shape_gives_a_rare_column_its_own_noise():
    X, y = _rare_column_data()
    k = len(X) // 2
    est = LogisticRegression(C=0.1, solver="newton-cholesky", tol=1e-12)
    L = design_noise_factor(est, X, y, train_size=k, random_state=0)
    assert np.allclose(L, np.tril(L)) and np.all(np.diag(L) > 0)
    np.testing.assert_array_equal(L, design_noise_factor(est, X, y, train_size=k, random_state=0))  # deterministic
    from skmip.calibration.spread.noise_factor import estimate_noise_factor

    F = estimate_noise_factor(est, X, y, train_size=k, n_subsets=128, random_state=0, polish=True)
    full = polish_to_minimiser(LogisticRegression(C=0.1).fit(X, y), X, y)
    V, A, _ = _influence_vectors(full, get_smooth_loss(full), X, y, None, k, 4)
    # The design's predicted cost is several times lower than the covariance shape's.
    assert _cost(V, A, L @ L.T) < 0.5 * _cost(V, A, F @ F.T)
    # Relative to the covariance shape, most of the extra noise sits on the rare column.
    ratio = np.sqrt(np.diag(L @ L.T) / np.diag(F @ F.T))
    assert np.argmax(ratio) == 2


def _full_gaussian(L):
    Li = np.linalg.inv(L)
    return (
        lambda m, rng: rng.normal(size=(m, L.shape[0])) @ L.T,
        lambda x: -0.5 * ((x @ Li.T) ** 2).sum(axis=1),
    )


def test_exact_audit_ridge_with_a_rare_record_and_the_designed_shape():
    """The designed shape is only a shape: calibrated on exhaustive swap distances, the exact
    Bayes-optimal attacker stays within every record's coupling bound and within eta."""
    from skmip.audit.attacks.bayes import exact_mip_advantage

    rng = np.random.default_rng(11)
    n = 12
    X = np.c_[rng.normal(size=n), np.zeros(n)]
    X[0, 1] = 3.0  # one record alone holds the second feature
    y = X[:, 0] + 0.3 * rng.normal(size=n)
    model = Ridge(alpha=1.0)
    L = design_noise_factor(model, X, y, random_state=0)

    def fit(A, b):
        m = Ridge(alpha=1.0).fit(A, b)
        return np.r_[m.coef_.ravel(), m.intercept_]

    res = estimate_swap_deltas(model, X, y, scale=L, engine="exact", random_state=0)
    for eta in [0.1, 0.3]:
        cal = coupling_noise_scale(res.distances, eta, confidence=None)
        sampler, logpdf = _full_gaussian(cal.noise_scale * L)
        audit = exact_mip_advantage(fit, (X, y), noise_sampler=sampler, noise_logpdf=logpdf,
                                    n_mc=2000, random_state=13)
        bound = coupling_eta_per_target(res.distances, cal.noise_scale)
        assert np.all(audit.advantage <= bound + 4 * audit.std_error)
        assert audit.upper_confidence_bound(0.999).max() < eta


def test_design_noise_factor_needs_a_smooth_loss():
    X, y = _rare_column_data(n=40)
    with pytest.raises(TypeError, match="estimate_noise_factor"):
        design_noise_factor(DecisionTreeClassifier(), X, y)
    with pytest.raises(ValueError, match="max_iter"):
        design_noise_factor(LogisticRegression(), X, y, max_iter=0)


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    rows = np.random.default_rng(0).choice(len(X), 160, replace=False)
    return StandardScaler().fit_transform(X[rows]), y[rows]


def test_wrapper_auto_shape_is_the_design_for_smooth_losses(cancer):
    from skmip.calibration.routes import CouplingRoute

    assert CouplingRoute().resolve_shape("Owner", True) == "design"
    assert CouplingRoute().resolve_shape("Owner", False) == "full"
    assert CouplingRoute(noise_shape="full").resolve_shape("Owner", True) == "full"
    with pytest.raises(ValueError, match="Owner: noise_shape='design' needs a smooth loss"):
        CouplingRoute(noise_shape="design").resolve_shape("Owner", False)
    X, y = cancer
    kw = dict(eta=0.3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        w = MIPNoiseWrapper(LogisticRegression(C=0.1), method=CouplingRoute(n_rounds=150), **kw).fit(X, y)
        d = MIPNoiseWrapper(LogisticRegression(C=0.1), method=CouplingRoute(n_rounds=150, noise_shape="design"),
                            **kw).fit(X, y)
    assert w.noise_scale_ == d.noise_scale_ and w.coupling_eta_upper_ <= 0.3
    assert w.score(X, y) > 0.85



def test_design_shares_follow_the_predicted_exposure():
    """The shares of alpha are half even, half proportional to the squared exposure
    v_i'S^-1 v_i of the designed shape; the shape is the same with or without them."""
    from skmip.calibration.noise_shape import design_target_shares

    X, y = _rare_column_data()
    est = LogisticRegression(C=0.1)
    L = design_noise_factor(est, X, y, random_state=0)
    L2, shares = design_noise_factor(est, X, y, return_shares=True, random_state=0)
    assert np.array_equal(L, L2)
    loss = get_smooth_loss(est)
    fitted = polish_to_minimiser(LogisticRegression(C=0.1).fit(X, y), X, y)
    V, _, _ = _influence_vectors(fitted, loss, X, y, None, len(X) // 2, L.shape[0])
    q = np.einsum("ij,ij->i", V, np.linalg.solve(L @ L.T, V.T).T)
    expected = 0.5 / len(q) + 0.5 * q**2 / np.sum(q**2)
    np.testing.assert_allclose(shares, expected, rtol=1e-6)
    assert shares.sum() == pytest.approx(1.0) and shares.min() >= 0.5 / len(q) * (1 - 1e-12)
    # The design equalises the largest exposures: the share is largest on the records it
    # holds at the bound, and many records share the top.
    assert np.sum(q > 0.99 * q.max()) >= 2 and shares.argmax() in np.flatnonzero(q > 0.99 * q.max())
    np.testing.assert_allclose(design_target_shares(np.zeros(4)), 0.25)
    for bad in ([], [1.0, -1.0], [np.inf]):
        with pytest.raises(ValueError, match="exposure must be a non-empty array"):
            design_target_shares(bad)


def test_wrapper_spends_alpha_by_the_design_shares(cancer, monkeypatch):
    """The designed shape's wrapper calibrates with the design's shares of alpha, and with
    even shares in the covariance shape (which predicts no exposures)."""
    import skmip.calibration.routes.coupling as noise_module

    seen = []
    real = noise_module.coupling_noise_scale

    def spy(*args, **kwargs):
        seen.append(kwargs.get("target_shares"))
        return real(*args, **kwargs)

    monkeypatch.setattr(noise_module, "coupling_noise_scale", spy)
    X, y = cancer
    kw = dict(eta=0.3, random_state=0, n_rounds=150)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        MIPNoiseWrapper(LogisticRegression(C=0.1), **kw).fit(X, y)
        MIPNoiseWrapper(LogisticRegression(C=0.1), noise_shape="full", n_subsets=64, **kw).fit(X, y)
    design, full = seen
    _, expected = design_noise_factor(LogisticRegression(C=0.1), X, y, train_size=len(X) // 2,
                                      return_shares=True, random_state=0)
    assert design.shape == (len(X),) and design.sum() == pytest.approx(1.0)
    assert np.max(np.abs(design - expected)) < 1e-6 * expected.max()
    assert full is None
