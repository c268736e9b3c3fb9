"""Certified distances of the squared hinge (skmip.calibration.swap.hinge_certify): every pair's
bound is at least the exact refit's distance, on small worst-case data, binary and one against the
rest (one block per class, 3 and 4 classes, the certificate over the stack)."""

import warnings

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from skmip.calibration.swap import get_smooth_loss, polish_to_minimiser
from skmip.calibration.swap.certify import RELEASE_TOL
from skmip.calibration.swap.release import check_release, release_error
from skmip.calibration.swap.hinge_certify import strong_certifier
from skmip.calibration.swap.influence import (_assemble_sq, _certified_pairs, _closed_form_pairs, _prepare,
                                             _strong_stack, certifiable)
from skmip.calibration.swap.newton import _pair_coefficients
from skmip.calibration.swap.polish import SolverFits, _factor, _regulariser_hessian
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


def _ovr_data(name, K, seed=0, n=20):
    """Rows of K classes in 2 dimensions, H = the first 12 (every class at least twice)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % K
    centres = 2.5 * np.c_[np.cos(2 * np.pi * np.arange(K) / K), np.sin(2 * np.pi * np.arange(K) / K)]
    X = rng.normal(size=(n, 2)) + centres[y]
    if name == "outliers":  # a far outlier with the wrong label, and its duplicate
        X[0], y[0] = [7.0, -6.0], 1
        X[K + 1], y[K + 1] = X[0], y[0]
    elif name == "separable":  # classes far apart: most margins beyond their kinks
        X = 0.3 * rng.normal(size=(n, 2)) + 3.0 * centres[y]
    else:  # a rare class: two rows in H (one far away), one outside
        y = np.where(y == K - 1, 0, y)
        rare = [3, 7, 14]
        y[rare] = K - 1
        X[rare] = centres[K - 1] + rng.normal(size=(3, 2))
        X[7] = [9.0, 9.0]
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
    _check_against_refits(C, X, y, H, targets, block.theta, np.linalg.inv(L), certified, dist)


def _vector(est):
    return np.r_[est.coef_.ravel(), est.intercept_]


def _check_against_refits(C, X, y, H, targets, theta0, linv, certified, estimates):
    """Every pair (e in H, target x): the exact refit's whitened distance is at most the certified
    one, which is within 10% (+1% of the median) of the estimate, or at the exact solve."""
    floor, slack = 0.01 * np.median(estimates), 2 * RELEASE_TOL + 1e-6
    for a, e in enumerate(H):
        for b, x in enumerate(targets):
            rows = np.sort(np.r_[H[H != e], x])
            exact = np.linalg.norm(linv @ (_vector(_fit(C, X, y, rows)) - theta0))
            assert exact <= certified[a, b], (e, x, exact, certified[a, b], estimates[a, b])
            assert certified[a, b] <= max(1.1 * estimates[a, b] + floor, exact + slack) + 1e-9


@pytest.mark.parametrize("name, K, C", [
    ("outliers", 3, 1.0), ("outliers", 3, 10.0), ("outliers", 4, 1.0), ("separable", 3, 1.0),
    ("separable", 4, 10.0), ("rare", 3, 1.0), ("rare", 4, 10.0),
])
@pytest.mark.parametrize("shape", ["full", "diagonal"])
def test_one_against_the_rest_every_certified_distance_bounds_the_exact_refit(name, K, C, shape):
    X, y = _ovr_data(name, K)
    n, H = len(X), np.arange(12)
    targets = np.setdiff1d(np.arange(n), H)
    est = _fit(C, X, y, H)
    blocks = get_smooth_loss(est).blocks(est, X, y, H, None)
    D = 3 * K
    rng = np.random.default_rng(1)
    if shape == "full":  # a noise shape that couples the classes' blocks
        scale = np.diag(rng.uniform(0.3, 2.0, D)) + np.tril(rng.uniform(-0.2, 0.2, (D, D)), -1)
        linv = np.linalg.inv(scale)
    else:
        scale = rng.uniform(0.3, 2.0, D)
        linv = np.diag(1.0 / scale)
    whitener = _Whitener(scale)
    assert len(blocks) == K and certifiable(blocks, True, whitener)
    factors = [_factor(b) for b in blocks]
    cert = _strong_stack(blocks, factors, SolverFits(None, None, None, None, None), H, whitener)
    sides = [(_prepare(b, f, H, whitener, True), _prepare(b, f, targets, whitener, True), b.glm)
             for b, f in zip(blocks, factors)]
    certified = _certified_pairs(cert, sides, whitener, True)
    # The engine's estimates, to check that the certificate is tight.
    terms = [(pe, px) + _pair_coefficients(pe, px, glm, True, cross=True) for pe, px, glm in sides]
    estimates = np.sqrt(_assemble_sq(terms, True, whitener.diagonal))
    _check_against_refits(C, X, y, H, targets, _vector(est), linv, certified, estimates)


def test_the_release_check_certifies_the_stacked_release():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the rough fit does not converge
        rough = LinearSVC(C=1.0, tol=1e-1, max_iter=3).fit(X, y)
    scale = np.full(15, 1e-3)
    with pytest.raises(ValueError, match="certified only to"):
        check_release(rough, X, y, None, scale)
    polish_to_minimiser(rough, X, y)
    check_release(rough, X, y, None, scale)  # the polished release passes
    blocks = get_smooth_loss(rough).blocks(rough, X, y, np.arange(len(X)), None)
    one = [release_error([b], np.arange(len(X)), scale) for b in blocks]
    # Diagonal shape, blocks apart: the stack's error is the root of the sum of the blocks' squares.
    np.testing.assert_allclose(release_error(blocks, np.arange(len(X)), scale), np.sqrt(np.sum(np.square(one))),
                               rtol=1e-9)


@pytest.mark.parametrize("dataset, shape", [("breast_cancer", (1, 30)), ("iris", (3, 4))])
def test_the_wrapper_promises_eta_for_linear_svc(dataset, shape):
    from sklearn import datasets
    from sklearn.preprocessing import StandardScaler

    from skmip import MIPNoiseWrapper
    from skmip.calibration.routes import CouplingRoute

    X, y = getattr(datasets, f"load_{dataset}")(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        w = MIPNoiseWrapper(LinearSVC(C=0.1), eta=0.2, method=CouplingRoute(n_rounds=60), random_state=0).fit(X, y)
    assert not [c for c in caught if "estimates, not proven" in str(c.message)]
    assert w.coupling_certified_ and w.mip_bound_ == 0.2 and w.coupling_eta_upper_ <= 0.2
    released = w.estimator_  # the user's LinearSVC, one row of coef_ per problem
    assert isinstance(released, LinearSVC) and released.coef_.shape == shape and released.intercept_.shape == shape[:1]
    np.testing.assert_array_equal(released.classes_, np.unique(y))


def _one_pair_solve(block, e, x, start):
    """The one-pair generalised Newton the stacked solve replaced (the oracle of the next test):
    the objective of H - e + x formed on its own rows, a Cholesky solve, the damped step."""
    from scipy import linalg

    from skmip.calibration.swap.polish import _damped_step

    glm, P = block.glm, block.P
    rows = np.sort(np.r_[block.H[block.H != e], x])
    F = glm.features[rows]

    def gradient(theta):
        return F.T @ glm.dloss(F @ theta, rows) + P @ theta

    theta = np.where(np.isfinite(start), start, block.theta0)
    grad = gradient(theta)
    for _ in range(100):
        hess = (F.T * glm.d2loss(F @ theta, rows)) @ F + P
        step = linalg.cho_solve(linalg.cho_factor(hess, lower=True), grad)
        if not np.all(np.isfinite(step)) or float(step @ grad) <= 1e-28 * (1.0 + float(theta @ theta)):
            break
        move, grad = _damped_step(gradient, theta, step, grad)
        theta = theta - move
        if np.linalg.norm(move) <= 1e-15 * (1.0 + np.linalg.norm(theta)):
            break
    return theta - block.theta0


def _one_pair_tighten(cert, dist, bound, e_rows, x_rows):
    """``(bounds, gradient terms)`` of the loose pairs one at a time (the path before the stacked
    solve): each block solved by :func:`_one_pair_solve` unless its own term is rounding; the
    gradient term is :math:`\\sqrt\\nu\\,(\\sum_c\\|\\nabla F_c\\|_{P_c^{-1}}^2)^{1/2}` there."""
    from skmip.calibration.swap import hinge_certify as hc

    shape, last, norms = cert._estimates
    e_rows, x_rows = (np.broadcast_to(v, shape) for v in (e_rows, x_rows))
    out, term = np.array(bound, dtype=float), np.zeros(shape)
    for idx in zip(*np.nonzero(cert._loose(bound, dist))):
        e, x, flat = int(e_rows[idx]), int(x_rows[idx]), np.ravel_multi_index(idx, shape)
        settled = hc._EXACT_SHARE * (float(dist[idx]) + cert.floor)
        deltas = [L[flat][None] if np.sqrt(cert.nu) * norms[c, flat] <= settled
                  else _one_pair_solve(b, e, x, b.theta0 + L[flat])[None]
                  for c, (b, L) in enumerate(zip(cert.blocks, last))]
        parts = np.empty((len(cert.blocks), 1))
        out[idx] = min(out[idx], float(cert._certify(np.array([e]), np.array([x]), deltas, parts)[0]))
        term[idx] = np.sqrt(cert.nu) * np.sqrt((parts**2).sum())
    return out, term


@pytest.mark.parametrize("name, K, C", [("outliers", 2, 1.0), ("outliers", 2, 10.0), ("separable", 2, 1.0),
                                        ("outliers", 3, 10.0), ("rare", 4, 10.0), ("separable", 3, 1.0)])
def test_the_stacked_solves_match_the_one_pair_path_and_bound_the_refits(name, K, C):
    """Pair for pair, the stacked exact solves of ``tighten`` give bounds >= the exact refits'
    distances and equal to the one-pair path's up to the two points' certified errors: each bound
    is :math:`\\|W\\Delta\\| + \\sqrt\\nu G + c` at its own point, and by strong convexity
    :math:`\\|W(\\Delta - \\Delta^*)\\| \\le \\sqrt\\nu G` for each, so the two differ by at most
    :math:`\\sqrt\\nu(G_1 + G_2)` in the first term and :math:`\\sqrt\\nu|G_1 - G_2|` in the
    second: at most :math:`2\\sqrt\\nu(G_1 + G_2)` (both at the exact minimiser up to rounding,
    where G is the gradient's rounding allowance), and the final sums' relative rounding."""
    X, y = _data(name) if K == 2 else _ovr_data(name, K)
    H = np.r_[1:9] if K == 2 else np.arange(12)
    targets = np.setdiff1d(np.arange(len(X)), H)
    est = _fit(C, X, y, H)
    blocks = get_smooth_loss(est).blocks(est, X, y, H, None)
    D = blocks[0].theta.size * len(blocks)
    scale = np.diag(np.linspace(0.5, 2.0, D)) + np.tril(np.full((D, D), 0.1), -1)  # a full noise shape
    whitener = _Whitener(scale)
    factors = [_factor(b) for b in blocks]
    cert = _strong_stack(blocks, factors, SolverFits(None, None, None, None, None), H, whitener)
    sides = [(_prepare(b, f, H, whitener, True), _prepare(b, f, targets, whitener, True), b.glm)
             for b, f in zip(blocks, factors)]
    dist, bound, c_e, c_x, det, e_rows, x_rows = _closed_form_pairs(cert, sides, whitener, True)
    reference, term = _one_pair_tighten(cert, dist, bound, e_rows, x_rows)
    solved = cert.tighten(dist, bound, x_rows, e_rows, c_e, c_x, det)
    at = np.flatnonzero(cert._loose(bound, dist))
    assert at.size >= 5  # the exact solves are exercised
    # The stacked path's gradient terms at its points (each loose pair is new to the cache here).
    e, x = (np.broadcast_to(v, dist.shape).ravel()[at] for v in (e_rows, x_rows))
    parts = np.empty((len(blocks), at.size))
    again = cert._certify(e, x, cert.exact_points(e, x, at, dist.ravel()[at]), parts)
    np.testing.assert_allclose(solved.ravel()[at], again, rtol=1e-12)
    gap = np.abs(solved.ravel()[at] - reference.ravel()[at])
    allowed = 2.0 * (term.ravel()[at] + np.sqrt(cert.nu) * np.sqrt((parts**2).sum(0))) + 1e-12 * reference.ravel()[at]
    assert np.all(gap <= allowed), (gap.max(), allowed.min())
    np.testing.assert_array_equal(solved.ravel()[~np.isin(np.arange(dist.size), at)],
                                  bound.ravel()[~np.isin(np.arange(dist.size), at)])
    _check_against_refits(C, X, y, H, targets, _vector(est), np.linalg.inv(scale), solved, dist)
