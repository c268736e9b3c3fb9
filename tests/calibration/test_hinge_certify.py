"""Certified distances of the squared hinge (skmip.calibration.swap.hinge_certify): every pair's
bound is at least the exact refit's distance, on small worst-case binary data."""

import warnings

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from skmip.calibration.swap import get_smooth_loss, polish_to_minimiser
from skmip.calibration.swap.certify import RELEASE_TOL
from skmip.calibration.swap.hinge_certify import strong_certifier
from skmip.calibration.swap.influence import _prepare
from skmip.calibration.swap.newton import _pair_coefficients
from skmip.calibration.swap.polish import _factor, _regulariser_hessian
from skmip.calibration.swap.whitening import _Whitener


def _data(name, seed=0, n=16):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.arange(n) % 2
    if name == "outliers":  # a far outlier with the wrong label, and its duplicate
        X[y == 1] += 1.0
        X[0], y[0] = [6.0, 6.0], 0
        X[2], y[2] = X[0], y[0]
    else:  # separable: every margin beyond its kink but a few
        X[y == 1] += 4.0
    return X, y


def _fit(C, X, y, rows):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # liblinear's ConvergenceWarning at tol 1e-12
        est = LinearSVC(C=C, tol=1e-12, max_iter=100000).fit(X[rows], y[rows])
    polish_to_minimiser(est, X[rows], y[rows])
    return est


@pytest.mark.parametrize("name, C", [("outliers", 1.0), ("outliers", 10.0), ("separable", 1.0)])
def test_every_certified_distance_bounds_the_exact_refit(name, C):
    X, y = _data(name)
    n, H = len(X), np.r_[1:9]
    targets = np.setdiff1d(np.arange(n), H)
    est = _fit(C, X, y, H)
    (block,) = get_smooth_loss(est).blocks(est, X, y, H, None)
    L = np.diag([0.5, 1.0, 2.0]) + np.tril(np.full((3, 3), 0.1), -1)  # a full noise shape
    whitener = _Whitener(L)
    factor = _factor(block)
    hinv = np.linalg.inv(block.hessian)
    cert = strong_certifier([(block.glm, block.theta, _regulariser_hessian(block, H), hinv, H, block.index)],
                            whitener)
    pe, px = _prepare(block, factor, H, whitener, True), _prepare(block, factor, targets, whitener, True)
    c_e, c_x, det = _pair_coefficients(pe, px, block.glm, True, cross=True, details=True)
    dist = np.sqrt(((c_e[..., None] * pe["U"][:, None] - c_x[..., None] * px["U"][None]) ** 2).sum(-1))
    bound = cert.bound(dist, None, None, c_e, c_x, det, H[:, None], targets[None, :])
    certified = cert.tighten(dist, bound, targets[None, :], H[:, None], c_e, c_x, det)
    linv = np.linalg.inv(L)
    floor, slack = 0.01 * np.median(dist), 2 * RELEASE_TOL + 1e-6
    for a, e in enumerate(H):
        for b, x in enumerate(targets):
            rows = np.sort(np.r_[H[H != e], x])
            other = _fit(C, X, y, rows)
            exact = np.linalg.norm(linv @ (np.r_[other.coef_.ravel(), other.intercept_] - block.theta))
            assert exact <= certified[a, b], (e, x, exact, certified[a, b], dist[a, b])
            # Tight: within 10% (+1% of the median) of the estimate, or at the exact solve.
            assert certified[a, b] <= max(1.1 * dist[a, b] + floor, exact + slack) + 1e-9


def test_the_wrapper_promises_eta_for_binary_linear_svc():
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from skmip import MIPNoiseWrapper
    from skmip.calibration.routes import CouplingRoute

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = MIPNoiseWrapper(LinearSVC(C=0.1), eta=0.2, method=CouplingRoute(n_rounds=60), random_state=0).fit(X, y)
    assert not [c for c in caught if "estimates, not proven" in str(c.message)]
    assert w.coupling_certified_ and w.mip_bound_ == 0.2 and w.coupling_eta_upper_ <= 0.2
