"""The third stage's stacked exact solves (skmip.calibration.swap.exact_stack): pair for pair
the one-pair path's bounds, and upper bounds on exact refits on worst cases."""

import numpy as np
import pytest
from scipy import linalg
from sklearn.linear_model import LogisticRegression, PoissonRegressor

from skmip.calibration.losses.registry import get_smooth_loss
from skmip.calibration.swap import polish_to_minimiser
from skmip.calibration.swap.certify import RELEASE_TOL, FitCertificate
from skmip.calibration.swap.exact_stack import exact_minimisers, swapped_rows
from skmip.calibration.swap.pair_certifier import PairCertifier
from skmip.calibration.swap.polish import _regulariser_hessian
from skmip.calibration.swap.whitening import _Whitener


def exact_minimiser(features, dloss, d2loss, rows, P, reg_at, start, whiten, gsc):
    """The one-pair third stage the stack replaced (until session 13 in ``certify``), the oracle:
    damped Newton to the minimiser of the objective on ``rows``, and the certified whitened
    distance of the result to the exact minimiser (``inf`` on failure)."""
    from skmip.calibration.swap.polish import _damped_step

    F = features[rows]

    def gradient(theta):
        return F.T @ dloss(F @ theta, rows) + reg_at(theta)

    theta = np.array(start, dtype=np.float64)
    grad = gradient(theta)
    previous = np.inf
    for _ in range(100):
        K = (F.T * d2loss(F @ theta, rows)) @ F + P
        try:
            fac = linalg.cho_factor(K, lower=True, check_finite=False)
        except linalg.LinAlgError:
            return theta, np.inf
        step = linalg.cho_solve(fac, grad, check_finite=False)
        decrement = float(step @ grad)
        if not np.isfinite(decrement):
            return theta, np.inf
        # Stop at rounding level, or once Newton's quadratic convergence has stalled there.
        if decrement <= 1e-26 * (1.0 + float(theta @ theta)) or decrement >= 0.25 * previous:
            break
        previous = decrement
        move, grad = _damped_step(gradient, theta, step, grad)
        theta = theta - move
    K = (F.T * d2loss(F @ theta, rows)) @ F + P
    try:
        fac = linalg.cho_factor(K, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return theta, np.inf
    hinv = linalg.cho_solve(fac, np.eye(K.shape[0]), check_finite=False)
    # At a converged solve the residual is at rounding level: the trace bound on nu costs less.
    return theta, FitCertificate(hinv, F, gradient(theta), whiten, gsc, nu="trace").out_error



def _worst_case(kind, seed=0, n=24):
    """Outliers with wrong labels, a one-hot column with a category of one row, and a
    duplicated outlier: ``(X, y, make)``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    cat = rng.integers(0, 2, size=n)
    cat[3] = 2  # a rare category: one row
    X = np.c_[X, np.eye(3)[cat]]
    X[0, :2], y[0] = [7.0, -6.0], 1  # a far outlier with the wrong label, and its twin
    X[5], y[5] = X[0], y[0]
    if kind == "poisson":
        y = rng.poisson(np.exp(0.5 * X[:, 0].clip(-2, 2))).astype(float)
        y[0] = 12.0
        return X, y, lambda: PoissonRegressor(alpha=0.05, tol=1e-12)
    return X, y, lambda: LogisticRegression(C=1.0, solver="newton-cholesky", tol=1e-12)


def _fit(make, X, y, H):
    est = make().fit(X[H], y[H])
    polish_to_minimiser(est, X[H], y[H])
    return est


def _problem(kind, fits=((0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11),)):
    """Blocks of fits on ``fits`` (row sets, each with the rare row 3 and the outlier 0), the
    whitening of a full noise shape, and every pair (e in H, x outside H) of each fit."""
    X, y, make = _worst_case(kind)
    blocks = [get_smooth_loss(est := _fit(make, X, y, np.array(H))).blocks(est, X, y, np.array(H), None)[0]
              for H in fits]
    D = blocks[0].theta.size
    L = np.eye(D) * np.linspace(0.5, 2.0, D) + np.tril(np.full((D, D), 0.1), -1)
    whitener = _Whitener(L)
    H = np.array(fits)
    pairs = [(b, e, x) for b, rows in enumerate(fits) for e in rows for x in np.setdiff1d(np.arange(len(X)), rows)]
    b, e, x = (np.array(v) for v in zip(*pairs))
    return X, y, make, blocks, whitener, L, H, b, e, x


@pytest.mark.parametrize("kind", ["logistic", "poisson"])
def test_stacked_solves_give_the_one_pair_bounds(kind):
    fits = ((0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11), (0, 3, 5, 12, 13, 14, 15, 16, 17, 18, 19))
    X, y, make, blocks, whitener, L, H, b, e, x = _problem(kind, fits)
    glm, index = blocks[0].glm, blocks[0].index
    P = _regulariser_hessian(blocks[0], H[0])
    whiten = lambda V: whitener.apply(V, index)  # noqa: E731
    theta0 = np.array([blk.theta for blk in blocks])
    reg_const = np.array([blk.regularizer_gradient - blk.theta @ P for blk in blocks])
    start = theta0[b]  # the fits: the farthest start the engine gives
    theta, own = exact_minimisers(glm.features, glm.dloss, glm.d2loss, H, b, e, x, P, reg_const, start, whiten,
                                  glm.gsc)
    rows = swapped_rows(H[b], e, x)
    for p in range(len(e)):
        t1, own1 = exact_minimiser(glm.features, glm.dloss, glm.d2loss, rows[p], P,
                                   lambda th, r=reg_const[b[p]]: r + th @ P, start[p], whiten, glm.gsc)
        bound1 = np.linalg.norm(whiten((t1 - theta0[b[p]])[None])[0]) + own1
        bound = np.linalg.norm(whiten((theta[p] - theta0[b[p]])[None])[0]) + own[p]
        # Both stop at a Newton decrement below 1e-26 (1 + |theta|^2) or where it stalls at
        # rounding (here |theta| <= 3): each point is within ~1e-13 of the minimiser in the
        # K-norm, times sqrt(nu) <= 10 whitened, and each own error is the ball lemma's radius
        # at a gradient of rounding size (measured: points 2e-15 apart, own errors 4e-13).
        assert np.isfinite(bound) and np.isfinite(bound1)
        assert abs(bound - bound1) <= 1e-11 * (1.0 + bound1), (p, bound, bound1)
        assert own[p] <= 1e-11 and own1 <= 1e-11


def test_a_pair_solved_in_a_stack_is_the_pair_solved_alone():
    # Each pair's products are its own BLAS calls: its point and certificate do not depend on
    # the pairs beside it (so the printed values not on how rounds fall into chunks).
    fits = ((0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11), (0, 3, 5, 12, 13, 14, 15, 16, 17, 18, 19))
    X, y, make, blocks, whitener, L, H, b, e, x = _problem("logistic", fits)
    glm, index = blocks[0].glm, blocks[0].index
    P = _regulariser_hessian(blocks[0], H[0])
    theta0 = np.array([blk.theta for blk in blocks])
    reg_const = np.array([blk.regularizer_gradient - blk.theta @ P for blk in blocks])

    def solve(sel):
        return exact_minimisers(glm.features, glm.dloss, glm.d2loss, H, b[sel], e[sel], x[sel], P, reg_const,
                                theta0[b[sel]], lambda V: whitener.apply(V, index), glm.gsc)

    every = np.arange(e.size)
    theta, own = solve(every)
    back = solve(every[::-1])
    np.testing.assert_array_equal(back[0][::-1], theta)
    np.testing.assert_array_equal(back[1][::-1], own)
    for p in (0, 7, e.size // 2, e.size - 1):
        alone = solve(np.array([p]))
        np.testing.assert_array_equal(alone[0][0], theta[p])
        assert alone[1][0] == own[p]


@pytest.mark.parametrize("kind", ["logistic", "poisson"])
def test_stacked_third_stage_bounds_exact_refits(kind):
    X, y, make, blocks, whitener, L, H, b, e, x = _problem(kind)
    (block,) = blocks
    hinv = np.linalg.inv(block.hessian)
    cert = PairCertifier(block.glm, block.theta, block.regularizer_gradient, _regulariser_hessian(block, H[0]),
                         hinv, H[0], block.gradients[H[0]].sum(0) + block.regularizer_gradient, whitener, block.index,
                         cache={})
    zeros = np.zeros(e.size)
    bound = cert._exact(b, x, e, [None] * e.size, zeros, zeros)  # every pair solved from the fit
    again = cert._exact(b, x, e, [None] * e.size, zeros + 1.0, zeros)  # from elsewhere: the cache answers
    np.testing.assert_array_equal(bound, again)
    assert len(cert.cache) == len({r.tobytes() for r in swapped_rows(H[b], e, x)})
    linv = np.linalg.inv(L)
    for p in range(e.size):
        rows = np.sort(np.r_[H[0][H[0] != e[p]], x[p]])
        est = _fit(make, X, y, rows)
        exact = np.linalg.norm(linv @ (np.r_[est.coef_.ravel(), np.ravel(est.intercept_)] - block.theta))
        # An upper bound, and tight: the solve's own error and the refit's are at rounding level
        # beside the releases' allowance 2 RELEASE_TOL.
        assert exact <= bound[p], (p, exact, bound[p])
        assert bound[p] <= exact + cert.fit.out_error + 2 * RELEASE_TOL + 1e-8, (p, exact, bound[p])
