"""Certified swap distances (skmip.calibration.swap.certify, .row_sums, .pair_certifier): every stage bounds the exact one."""

import gc

import numpy as np
import pytest
from scipy import sparse
from scipy.special import lambertw
from sklearn.linear_model import LogisticRegression, PoissonRegressor

from skmip.calibration.swap import polish_to_minimiser
from skmip.calibration.swap import certify, pair_certifier, row_sums, second_stage
from skmip.calibration.swap.certify import ball_radius, remainder_ratio
from skmip.calibration.swap.pair_certifier import PairCertifier
from skmip.calibration.swap.influence import _prepare, _take
from skmip.calibration.losses.registry import get_smooth_loss
from skmip.calibration.losses import terms
from skmip.calibration.losses.terms import augment, augmented_design_cache, design_csr
from skmip.calibration.swap.newton import _pair_coefficients
from skmip.calibration.swap.polish import _factor, _regulariser_hessian
from skmip.calibration.swap.whitening import _Whitener


def test_remainder_ratio_matches_its_definition_and_its_series():
    x = np.array([0.0, 1e-6, 1e-4, 5e-4, 1e-3, 0.1, 1.0, 10.0])
    exact = np.where(x > 0, (np.expm1(x) - x) / np.where(x > 0, x, 1.0), 0.0)
    got = remainder_ratio(x)
    # The series is an upper bound below 1e-3 (its dropped tail is below x^4 / 100).
    assert np.all(got >= exact * (1 - 1e-12)) and np.allclose(got, exact, rtol=1e-9, atol=1e-18)


def test_ball_radius_is_the_smallest_fixed_point_and_refuses_past_one_over_e():
    g, c, b = 0.01, 0.2, 3.0
    rho = float(ball_radius(g, c, b))
    smallest = g * np.exp(c - np.real(lambertw(-b * g * np.exp(c), 0)))
    assert smallest <= rho <= smallest * (1 + 2e-6)
    assert g * np.exp(c + b * rho) < rho  # the lemma's strict inequality holds
    assert np.isinf(ball_radius(1.0, 0.0, 1.0))  # b g e^c = 1 > 1/e: no radius
    assert float(ball_radius(0.3, 0.0, 0.0)) == pytest.approx(0.3, rel=1e-5)  # least squares


def _outlier_data(seed=0, n=14):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.arange(n) % 2
    X[y == 1] += 1.0
    X[0], y[0] = [6.0, 6.0], 0  # a far outlier with the wrong label, and its duplicate
    X[2], y[2] = X[0], y[0]
    return X, y


def _exact_theta(make, X, y, rows):
    est = make().fit(X[rows], y[rows])
    polish_to_minimiser(est, X[rows], y[rows])
    return np.r_[est.coef_.ravel(), np.ravel(est.intercept_)]


@pytest.mark.parametrize("make, data", [
    (lambda: LogisticRegression(C=1.0, solver="newton-cholesky", tol=1e-12), "logistic"),
    (lambda: PoissonRegressor(alpha=0.05, tol=1e-12), "poisson"),
])
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_every_stage_bounds_the_exact_distance(make, data, stages, monkeypatch):
    X, y = _outlier_data()
    if data == "poisson":
        y = np.random.default_rng(1).poisson(np.exp(0.4 * X[:, 0].clip(-2, 2))).astype(float)
    n, k = len(X), 7
    H = np.arange(1, k + 1)  # D_out without the outlier (row 0) but with its twin (row 2)
    est = make().fit(X[H], y[H])
    polish_to_minimiser(est, X[H], y[H])
    (block,) = get_smooth_loss(est).blocks(est, X, y, H, None)
    L = np.diag([0.5, 1.0, 2.0]) + np.tril(np.full((3, 3), 0.1), -1)  # a full noise shape
    whitener = _Whitener(L)
    factor = _factor(block)
    hinv = np.linalg.inv(block.hessian)
    cert = PairCertifier(block.glm, block.theta, block.regularizer_gradient, _regulariser_hessian(block, H),
                         hinv, H, block.gradients[H].sum(0) + block.regularizer_gradient, whitener, block.index,
                         cache={})
    if stages == 1:  # the closed form alone
        monkeypatch.setattr(PairCertifier, "tighten", lambda self, dist, bound, *a: bound)
    elif stages == 2:  # no exact solves
        monkeypatch.setattr(pair_certifier, "exact_minimisers",
                            lambda f, d1, d2, H, b, e, *a: (np.zeros((len(e), 3)), np.full(len(e), np.inf)))
    targets = np.setdiff1d(np.arange(n), H)
    pe = _prepare(block, factor, H, whitener, True)
    px = _prepare(block, factor, targets, whitener, True)
    c_e, c_x, det = _pair_coefficients(pe, px, block.glm, True, cross=True, details=True)
    sq = (c_e[..., None] * pe["U"][:, None] - c_x[..., None] * px["U"][None]) ** 2
    dist = np.sqrt(sq.sum(-1))
    norms = lambda p: np.linalg.norm(p["U"], axis=-1)  # noqa: E731
    bound = cert.bound(dist, norms(pe)[:, None], norms(px)[None, :], c_e, c_x, det, H[:, None], targets[None, :])
    certified = cert.tighten(dist, bound, targets[None, :], H[:, None], c_e, c_x, det)
    linv = np.linalg.inv(L)
    theta0 = block.theta
    checked = 0
    for a, e in enumerate(H):
        for b, x in enumerate(targets):
            if not np.isfinite(certified[a, b]):
                continue
            rows = np.sort(np.r_[H[H != e], x])
            exact = np.linalg.norm(linv @ (_exact_theta(make, X, y, rows) - theta0))
            assert exact <= certified[a, b] + 1e-9, (e, x, exact, certified[a, b], dist[a, b])
            if stages == 3:  # tight: accepted within 10% (+1% of the median) of the estimate, or solved
                floor = 0.01 * np.median(dist)
                slack = 2 * certify.RELEASE_TOL + 1e-6  # the release allowance, and the solves'
                assert certified[a, b] <= max(1.1 * dist[a, b] + floor, exact + slack) + 1e-9
            checked += 1
    # The closed form alone certifies few pairs of such a tiny, outlying dataset (the later
    # stages exist for them); with them every pair is certified.
    assert checked >= {1: 1, 2: (k * targets.size) // 2, 3: k * targets.size}[stages]


def _row_sums_fit(seed=3, n=60, d=4):
    """A logistic fit on half of data with a few high-leverage rows: ``(block, H, rng)``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.r_[1.0, 1.0, 3.0, 0.3]
    X[:3] *= 6.0  # a few high-leverage rows
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(int)
    H = np.sort(rng.choice(n, n // 2, replace=False))
    est = LogisticRegression(C=1.0, solver="newton-cholesky", tol=1e-12).fit(X[H], y[H])
    polish_to_minimiser(est, X[H], y[H])
    (block,) = get_smooth_loss(est).blocks(est, X, y, H, None)
    return block, H, rng


def _row_sums_case():
    block, H, rng = _row_sums_fit()
    hinv = np.linalg.inv(block.hessian)
    F, FH = block.glm.features, block.glm.features[H]
    curv = block.glm.d2loss(FH @ block.theta, H)
    lev = ((FH @ hinv) * FH).sum(1)
    unorm = np.abs(rng.normal(size=H.size)) + 0.1
    return FH, curv, lev, unorm, F, hinv, H


@pytest.mark.parametrize("split", [False, True])
def test_row_sums_are_the_exact_sums_or_bound_them(split, monkeypatch):
    FH, curv, lev, unorm, F, hinv, H = _row_sums_case()
    if split:  # only D rows of H summed exactly, the rest bounded by Cauchy-Schwarz
        monkeypatch.setattr(row_sums, "_SUMS_WORK", 0.0)
    sums = row_sums.RowSums(F, H, curv, lev, unorm, hinv=hinv)
    h = FH @ hinv @ F.T  # (k, n): h_ij
    l, u = curv[:, None], unorm[:, None]
    exact = {
        "reach": np.abs(h).max(0),
        "quartic": ((l * h**4).sum(0)) ** 0.25,
        "weighted": np.sqrt((l * u * h**2).sum(0)),
        "squared": np.sqrt((l * u**2 * h**2).sum(0)),
    }
    for name, value in exact.items():
        got = getattr(sums, name)
        if split and name in ("reach", "quartic"):  # bounded over the rest
            assert np.all(got >= value * (1 - 1e-12)), name
            assert np.any(got > value * 1.01), name  # the bound is not silently exact
        else:  # summed (over the rest as quadratic forms, with their rounding allowance)
            assert np.all(got >= value * (1 - 1e-12)), name
            np.testing.assert_allclose(got, value, rtol=1e-10, err_msg=name)
    assert sums.top == pytest.approx(unorm.max())
    if split:  # refined rows: every sum exact
        rows = np.array([0, 5, 7, 31])
        sums.refine(rows, F[rows] @ hinv)
        sums.refine(rows[1:2], F[rows[1:2]] @ hinv)  # a row again: kept
        refined = sums.refined()
        for name, value in exact.items():
            np.testing.assert_allclose(getattr(refined, name)[rows], value[rows], rtol=1e-10, err_msg=name)
            assert np.isnan(getattr(refined, name)[1]) or name in ("weighted", "squared")


def test_stacked_row_sums_are_each_fits_exact_sums(monkeypatch):
    # Three fits at once, two per temporary (the stack is split): each fit's sums are the
    # definitions' (brute force) and RowSums.fill's, whatever fits are stacked beside it.
    FH, curv, lev, unorm, F, hinv, H = _row_sums_case()
    rng = np.random.default_rng(3)
    scale = np.array([1.0, 0.5, 2.0])
    curvs, unorms = np.stack([curv * s for s in scale]), np.stack([unorm, unorm[::-1], unorm * 3])
    hinvs = np.stack([hinv * s for s in scale])
    Hs = np.stack([H, H, rng.permutation(F.shape[0])[:H.size]])
    xi = F @ hinvs  # (3, n, D)
    monkeypatch.setattr(row_sums, "_SUMS_ELEMENTS", 2 * H.size * F.shape[0])
    got = row_sums.stacked_row_sums(F[Hs], curvs, unorms, xi)
    for b in range(3):
        h = F[Hs[b]] @ hinvs[b] @ F.T
        l, u = curvs[b][:, None], unorms[b][:, None]
        exact = (np.abs(h).max(0), ((l * h**4).sum(0)) ** 0.25, np.sqrt((l * u * h**2).sum(0)),
                 np.sqrt((l * u**2 * h**2).sum(0)))
        alone = row_sums.RowSums(F, Hs[b], curvs[b], lev, unorms[b], hinv=hinvs[b])
        for name, value, want in zip(("reach", "quartic", "weighted", "squared"), got, exact):
            np.testing.assert_allclose(value[b], want, rtol=1e-12, err_msg=name)
            np.testing.assert_allclose(value[b], getattr(alone, name), rtol=1e-14, err_msg=name)


@pytest.mark.parametrize("density", [0.0, 1.0])  # the rest's rows dense, or kept sparse (CSR)
def test_row_sums_rest_bounds_hold_on_one_hot_rows_with_a_unique_category(density, monkeypatch):
    # One-hot rows with a category only one row holds (curvature leverage near 1): the rest's
    # quadratic forms, the bound on its largest |h_ij| and on its quartic sum, against the
    # brute-force sums; refined rows equal them.
    monkeypatch.setattr(row_sums, "_SUMS_WORK", 0.0)
    monkeypatch.setattr(row_sums, "_SPARSE_DENSITY", density)
    rng = np.random.default_rng(5)
    n = 80
    cats = rng.integers(0, 4, size=n)
    cats[:2] = [4, 5]  # two unique categories
    X = np.c_[np.eye(6)[cats], rng.normal(size=n) * np.where(np.arange(n) == 3, 25.0, 1.0)]  # an outlier
    y = (X[:, -1] + rng.normal(size=n) > 0).astype(int)
    y[:2] = 1 - y[:2]
    H = np.sort(np.r_[0, 1, 3, rng.choice(np.arange(4, n), n // 2 - 3, replace=False)])
    est = LogisticRegression(C=10.0, solver="newton-cholesky", tol=1e-12).fit(X[H], y[H])
    polish_to_minimiser(est, X[H], y[H])
    (block,) = get_smooth_loss(est).blocks(est, X, y, H, None)
    hinv = np.linalg.inv(block.hessian)
    F, FH = block.glm.features, block.glm.features[H]
    curv = block.glm.d2loss(FH @ block.theta, H)
    lev = ((FH @ hinv) * FH).sum(1)
    unorm = np.abs(rng.normal(size=H.size)) + 0.1
    sums = row_sums.RowSums(F, H, curv, lev, unorm, hinv=hinv)
    assert sums.split and row_sums.sparse.issparse(sums._rest.F) == (density == 1.0)
    h = FH @ hinv @ F.T
    l, u = curv[:, None], unorm[:, None]
    exact = {"reach": np.abs(h).max(0), "quartic": ((l * h**4).sum(0)) ** 0.25,
             "weighted": np.sqrt((l * u * h**2).sum(0)), "squared": np.sqrt((l * u**2 * h**2).sum(0))}
    for name, value in exact.items():
        assert np.all(getattr(sums, name) >= value * (1 - 1e-12)), name
    rows = np.arange(n)
    sums.refine(rows, F @ hinv)
    for name, value in exact.items():
        np.testing.assert_allclose(getattr(sums.refined(), name), value, rtol=1e-10, err_msg=name)


def test_row_sums_filled_as_the_rows_come_equal_the_sums_at_once(monkeypatch):
    # The streamed engine fills a fit's row sums chunk by chunk, rows repeated across chunks.
    monkeypatch.setattr(row_sums, "_SUMS_WORK", 0.0)
    FH, curv, lev, unorm, F, hinv, H = _row_sums_case()
    whole = row_sums.RowSums(F, H, curv, lev, unorm, hinv=hinv)
    lazy = row_sums.RowSums(F, H, curv, lev, unorm)
    assert np.isnan(lazy.reach).all()  # nothing summed yet: a bound on it is not finite
    rng = np.random.default_rng(0)
    for rows in (rng.choice(len(F), (7, 2)), np.arange(len(F))[::-1]):  # repeats, then all
        xi = F[rows] @ hinv
        lazy.fill(rows, xi, (xi * F[rows]).sum(-1))
    for name in ("reach", "quartic", "weighted", "squared"):
        np.testing.assert_allclose(getattr(lazy, name), getattr(whole, name), rtol=1e-12, err_msg=name)


@pytest.mark.parametrize("density", [0.0, 1.0])  # the rest's rows dense, or kept sparse (CSR)
def test_rest_forms_bound_the_sums_in_extended_precision(density, monkeypatch):
    # _Rest.forms (2 xi' U_w xi from a triangular product, the allowance added) against the
    # sums sum_i w_i h_ij^2 in 80-bit arithmetic, one-hot rows with a numeric column: never
    # below them, above by at most twice the allowance; a row alone as in a chunk.
    monkeypatch.setattr(row_sums, "_SPARSE_DENSITY", density)
    rng = np.random.default_rng(8)
    n, D = 400, 12
    X = np.c_[np.eye(D - 2)[rng.integers(0, D - 2, n)], rng.normal(size=n) * 30.0, np.ones(n)]
    X.flags.writeable = False
    rows = np.arange(0, n, 2)
    curv, unorm = rng.uniform(1e-3, 0.25, rows.size), rng.uniform(0.1, 3.0, rows.size)
    rest = row_sums._Rest(X, rows, curv, unorm)
    xi = rng.normal(size=(37, D)) * np.r_[np.ones(D - 2), 1e-2, 1.0]
    got = rest.forms(xi)
    F, x = X[rows].astype(np.longdouble), xi.astype(np.longdouble)
    h2 = (F @ x.T) ** 2  # (|R|, m)
    weights = np.stack([curv, curv * unorm, curv * unorm**2]).astype(np.longdouble)
    exact = weights @ h2  # (3, m)
    slack = 2 * rest.allow[:, None] * (xi * xi).sum(-1)
    assert np.all(got >= exact) and np.all(got - exact <= 2 * slack)
    for j in (0, 5):  # one row alone
        np.testing.assert_allclose(rest.forms(xi[j:j + 1])[:, 0], got[:, j], rtol=1e-13)
        assert np.all(rest.forms(xi[j:j + 1])[:, 0] >= exact[:, j])


def test_rest_rows_of_a_read_only_design_slice_one_kept_csr_copy():
    # RowSums keeps the rest of H sparse where its rows are (one-hot): from one CSR copy of the
    # engines' augmented design (kept with it, terms.design_csr), sliced by rows (the matrix
    # converting the rows gives), not a scan of the dense rows every fit; the same choice of
    # sparse or dense as the scan.
    rng = np.random.default_rng(6)
    n = 60
    X0 = np.c_[np.eye(10)[rng.integers(0, 10, n)], rng.normal(size=n)]  # 3 of 12 entries non-zero
    X0[:20] = rng.normal(size=(20, 11))  # dense rows
    with augmented_design_cache():
        X = augment(X0, True)
        for rows in (np.arange(20, 60, 3), np.arange(0, 20), np.r_[0:5, 20:60]):
            F = row_sums._rest_rows(X, rows)
            dense = X[rows]
            assert sparse.issparse(F) == (np.count_nonzero(dense) <= row_sums._SPARSE_DENSITY * dense.size)
            want = sparse.csr_matrix(dense) if sparse.issparse(F) else dense
            for a in ("data", "indices", "indptr") if sparse.issparse(F) else ():
                np.testing.assert_array_equal(getattr(F, a), getattr(want, a))
            if not sparse.issparse(F):
                np.testing.assert_array_equal(F, want)
        kept = design_csr(X, build=False)
        assert kept is not None and kept.nnz == np.count_nonzero(X)
        row_sums._rest_rows(X, np.arange(30, 50))
        assert design_csr(X, build=False) is kept  # made once
        Y = X.copy()  # not the kept design: it may change, so it is converted row by row and not kept
        np.testing.assert_array_equal(row_sums._rest_rows(Y, np.arange(20, 60)).toarray(), Y[20:])
        assert design_csr(Y, build=False) is None
        del X0, X, kept
        gc.collect()
        assert terms._AUGMENTED[0] is None  # dropped with its design


def test_closed_form_bounds_the_exact_distance_with_split_row_sums(monkeypatch):
    # The same check as the stage-1 case above, with the row sums bounded, not summed.
    monkeypatch.setattr(row_sums, "_SUMS_WORK", 0.0)
    test_every_stage_bounds_the_exact_distance(
        lambda: LogisticRegression(C=1.0, solver="newton-cholesky", tol=1e-12), "logistic", 1, monkeypatch)


def test_second_stage_row_terms_equal_the_row_by_row_formula():
    # The second stage sums its rows by matrix products, in place (second_stage.FitRows);
    # here each pair's gradient weights and second-order bound are summed row by row, as
    # written in docs/coupling.md (stage 2).
    FH, curv, lev, unorm, F, hinv, H = _row_sums_case()
    block = _row_sums_fit()[0]
    glm, theta0 = block.glm, block.theta
    P = _regulariser_hessian(block, H)
    rows = second_stage.FitRows(glm, H, theta0, block.regularizer_gradient - theta0 @ P, P, curv, lev, unorm)
    rng = np.random.default_rng(1)
    m = 9
    delta = rng.normal(scale=0.3, size=(H.size, m))
    e_pos = rng.integers(0, H.size, size=m)
    W, slack = rows.moves(glm.dloss, delta, e_pos)
    mH = FH @ theta0
    for j in range(m):
        moved = glm.dloss(mH + delta[:, j], H)
        want = np.where(np.arange(H.size) == e_pos[j], 0.0, moved - glm.dloss(mH, H))
        np.testing.assert_allclose(W[:, j], want, rtol=1e-12, atol=1e-15)
        assert slack[j] == pytest.approx(np.abs(moved).sum() + np.abs(glm.dloss(mH, H)).sum(), rel=1e-12)
    reach, shrink, v_e = rng.uniform(0.01, 0.2, m), rng.uniform(1.0, 1.5, m), rng.uniform(0.0, 0.5, m)
    T, moves = rows.curvature_moves(delta)
    got = rows.second_order(moves, reach, shrink, v_e)
    root = np.sqrt(lev)
    for j in range(m):
        assert T[j] == np.abs(delta[:, j]).max()
        E = np.expm1(glm.gsc * (np.abs(delta[:, j]) + root * reach[j]))
        single = shrink[j] * (sum(curv * root * E * unorm) + v_e[j] * sum(curv * root * E))
        squares = np.sqrt(sum(curv * E**2 * unorm**2)) + v_e[j] * np.sqrt(sum(curv * E**2))
        assert got[j] == pytest.approx(min(single, squares), rel=1e-12)


@pytest.mark.parametrize("stages", [1, 3])
def test_every_stage_bounds_the_exact_distance_on_one_hot_rows_with_split_sums(stages, monkeypatch):
    # One-hot rows with a unique category and a numeric outlier (curvature leverage near 1),
    # the row sums split (the rest as quadratic forms, refined rows summed exactly), every
    # pair against its exact refit.
    monkeypatch.setattr(row_sums, "_SUMS_WORK", 0.0)
    monkeypatch.setattr(row_sums, "_SPARSE_DENSITY", 1.0)
    rng = np.random.default_rng(2)
    n, k = 40, 20
    cats = np.r_[3, 3, rng.integers(0, 3, size=n - 2)]  # category 3: rows 0 and 1 only
    X = np.c_[np.eye(4)[cats], rng.normal(size=n)]
    X[2, -1] = 8.0  # a numeric outlier
    y = (X[:, -1] + rng.normal(size=n) > 0).astype(int)
    y[0] = 1 - y[1]
    make = lambda: LogisticRegression(C=1.0, solver="newton-cholesky", tol=1e-12)  # noqa: E731
    H = np.r_[0, 2, np.arange(4, 4 + k - 2)]
    est = make().fit(X[H], y[H])
    polish_to_minimiser(est, X[H], y[H])
    (block,) = get_smooth_loss(est).blocks(est, X, y, H, None)
    D = block.theta.size
    L = np.diag(np.linspace(0.5, 2.0, D)) + np.tril(np.full((D, D), 0.1), -1)
    whitener = _Whitener(L)
    hinv = np.linalg.inv(block.hessian)
    cert = PairCertifier(block.glm, block.theta, block.regularizer_gradient, _regulariser_hessian(block, H),
                         hinv, H, block.gradients[H].sum(0) + block.regularizer_gradient, whitener, block.index,
                         cache={})
    assert cert.sums.split
    if stages == 1:  # the closed form, with its refined rows
        monkeypatch.setattr(PairCertifier, "tighten", lambda self, dist, bound, *a: bound)
    factor = _factor(block)
    targets = np.setdiff1d(np.arange(n), H)
    pe = _prepare(block, factor, H, whitener, True)
    px = _prepare(block, factor, targets, whitener, True)
    c_e, c_x, det = _pair_coefficients(pe, px, block.glm, True, cross=True, details=True)
    dist = np.sqrt(((c_e[..., None] * pe["U"][:, None] - c_x[..., None] * px["U"][None]) ** 2).sum(-1))
    norms = lambda p: np.linalg.norm(p["U"], axis=-1)  # noqa: E731
    bound = cert.bound(dist, norms(pe)[:, None], norms(px)[None, :], c_e, c_x, det, H[:, None], targets[None, :])
    certified = cert.tighten(dist, bound, targets[None, :], H[:, None], c_e, c_x, det)
    linv = np.linalg.inv(L)
    checked = 0
    for a, e in enumerate(H):
        for b, x in enumerate(targets):
            if np.isfinite(certified[a, b]):
                rows = np.sort(np.r_[H[H != e], x])
                exact = np.linalg.norm(linv @ (_exact_theta(make, X, y, rows) - block.theta))
                assert exact <= certified[a, b] + 1e-9, (e, x, exact, certified[a, b], dist[a, b])
                checked += 1
    assert checked >= (1 if stages == 1 else k * targets.size)
