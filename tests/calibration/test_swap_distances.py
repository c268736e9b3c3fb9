"""Swap-sensitivity draws (skmip.calibration.swap): design, engines, whitening, errors."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler

from skmip.bounds import coupling_eta
from skmip.calibration.swap import (
    SwapDeltas,
    estimate_swap_deltas,
    get_smooth_loss,
    register_smooth_loss,
)
from skmip.calibration.swap.rounds import _jensen_summary, _round_design
from skmip.release.statistic import Statistic


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    idx = np.random.default_rng(0).permutation(len(X))[:120]
    return X[idx], y[idx]


def _sigma(make, X, y, k, n_fits=40, seed=0):
    rng = np.random.default_rng(seed)
    vecs = []
    for _ in range(n_fits):
        rows = np.sort(rng.permutation(len(X))[:k])
        m = make().fit(X[rows], y[rows])
        vecs.append(np.r_[np.ravel(m.coef_), np.ravel(m.intercept_)])
    return np.std(vecs, axis=0)


# --------------------------------------------------------------------------- round design


@pytest.mark.parametrize("n, k", [(10, 5), (11, 5), (10, 8), (10, 2)])
def test_every_row_is_a_target_once_per_round_and_never_in_its_fit_set(n, k):
    for seed in range(20):
        _, fit_sets, owner = _round_design(seed, n, k)
        assert len(fit_sets) == math.ceil(n / (n - k))
        for j, H in enumerate(fit_sets):
            assert H.size == k and np.all(np.diff(H) > 0)
            assert not np.isin(np.flatnonzero(owner == j), H).any()
        assert np.bincount(owner, minlength=len(fit_sets)).sum() == n


def test_d_out_is_uniform_among_subsets_without_the_target():
    # n = 7, k = 3: C(6, 3) = 20 possible D_out for row 0; chi-square over 4000 rounds.
    n, k, counts = 7, 3, {}
    for seed in range(4000):
        _, fit_sets, owner = _round_design(seed, n, k)
        key = tuple(fit_sets[owner[0]])
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == math.comb(n - 1, k)
    assert all(0 not in key for key in counts)
    assert stats.chisquare(list(counts.values())).pvalue > 1e-3


# --------------------------------------------------------------------------- Jensen summary


def test_jensen_summary_upper_bounds_every_concave_tv_average():
    rng = np.random.default_rng(1)
    values = rng.lognormal(size=(50, 37))
    values[3, -2:] = np.inf
    for size in [1, 4, 8]:
        summary = _jensen_summary(values, size)
        assert summary.shape == (50, size)
        finite = np.isfinite(values).all(axis=1)
        # Block means of the quantile function keep the total mass.
        np.testing.assert_allclose(summary[finite].mean(1), values[finite].mean(1), rtol=1e-12)
        for s in [0.1, 1.0, 10.0]:
            tv = lambda v: np.array([[math.erf(x / (s * math.sqrt(8))) for x in row] for row in v])  # noqa: E731
            assert np.all(tv(summary).mean(1) >= tv(values).mean(1) - 1e-12)
    assert np.isinf(_jensen_summary(values, 4)[3, -1])
    np.testing.assert_array_equal(_jensen_summary(values[:, :3], 8), np.sort(values[:, :3], axis=1))


# --------------------------------------------------------------------------- engines


def _ridge_data(n=60, d=4, outputs=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = X @ rng.normal(size=(d, outputs)) + rng.normal(size=(n, outputs))
    return X, Y[:, 0] if outputs == 1 else Y


@pytest.mark.parametrize("model", [Ridge(alpha=2.0), LinearRegression(), Ridge(alpha=0.5, fit_intercept=False)])
def test_newton_engine_is_exact_for_least_squares(model):
    X, y = _ridge_data()
    w = np.full(X.shape[1] + int(model.fit_intercept), 0.05)
    kw = dict(scale=w, n_rounds=2, pairs_per_target=2, random_state=3)
    refit = estimate_swap_deltas(model, X, y, engine="refit", **kw)
    newton = estimate_swap_deltas(model, X, y, engine="newton", **kw)
    assert newton.engine == "newton" and refit.engine == "refit" and newton.pairs == "sampled"
    np.testing.assert_allclose(newton.distances, refit.distances, rtol=1e-7)


def test_newton_engine_exact_with_sample_weights_multioutput_and_a_full_matrix():
    X, Y = _ridge_data(outputs=2)
    sw = np.random.default_rng(5).uniform(0.5, 2.0, size=len(X))
    D = 2 * (X.shape[1] + 1)
    L = np.eye(D) + 0.05 * np.tril(np.random.default_rng(6).normal(size=(D, D)), -1)
    kw = dict(scale=L, n_rounds=2, pairs_per_target=3, random_state=4, fit_params={"sample_weight": sw})
    refit = estimate_swap_deltas(Ridge(alpha=1.0), X, Y, engine="refit", **kw)
    newton = estimate_swap_deltas(Ridge(alpha=1.0), X, Y, engine="newton", **kw)
    np.testing.assert_allclose(newton.distances, refit.distances, rtol=1e-7)


def test_all_pairs_agree_with_refits_of_every_pair():
    X, y = _ridge_data(n=16)
    w = np.full(5, 0.1)
    kw = dict(scale=w, n_rounds=2, pairs_per_target="all", summary_size=100, random_state=0)
    refit = estimate_swap_deltas(Ridge(alpha=1.0), X, y, engine="refit", **kw)
    newton = estimate_swap_deltas(Ridge(alpha=1.0), X, y, engine="newton", **kw)
    assert newton.pairs == "all" and newton.distances.shape == (16, 2, 8)
    np.testing.assert_allclose(newton.distances, refit.distances, rtol=1e-7)


def test_newton_engine_tracks_refits_on_logistic_regression(cancer):
    # Binary logistic regression on real data: the target-exact Newton scheme against exact
    # refits on the same (x*, e) pairs. First order is kept for comparison.
    X, y = cancer
    make = lambda: LogisticRegression(C=1.0, tol=1e-10, solver="newton-cholesky")  # noqa: E731
    w = _sigma(make, X, y, 60)
    kw = dict(scale=w, n_rounds=1, pairs_per_target=1, random_state=7)
    refit = estimate_swap_deltas(make(), X, y, engine="refit", **kw).distances.ravel()
    newton = estimate_swap_deltas(make(), X, y, **kw)
    first = estimate_swap_deltas(make(), X, y, engine="influence", **kw).distances.ravel()
    assert newton.engine == "newton"
    err = np.abs(newton.distances.ravel() / refit - 1)
    err1 = np.abs(first / refit - 1)
    assert np.median(err) < 0.01 and np.quantile(err, 0.9) < 0.05
    assert np.median(err1) > np.median(err)


def test_refining_the_exposed_targets_makes_the_calibration_match_refits(cancer):
    # The maximum over targets is decided by outlying targets, where the one-step model is
    # least accurate; solving their addition to convergence removes the discrepancy in the
    # calibrated noise scale (point estimate on the same pairs).
    from skmip.bounds import coupling_noise_scale

    X, y = cancer
    make = lambda: LogisticRegression(C=1.0, tol=1e-10, solver="newton-cholesky")  # noqa: E731
    w = _sigma(make, X, y, 60)
    kw = dict(scale=w, n_rounds=2, pairs_per_target=2, random_state=8, polish=True)
    s = {}
    for name, extra in [("refit", dict(engine="refit")), ("raw", dict(refine=0.0, certify=False)),
                        ("refined", dict(refine=0.1, certify=False)), ("certified", dict())]:
        d = estimate_swap_deltas(make(), X, y, **kw, **extra).distances
        s[name] = coupling_noise_scale(d, 0.1, confidence=None).noise_scale
    assert abs(s["refined"] / s["refit"] - 1) < 0.005
    assert abs(s["refined"] / s["refit"] - 1) <= abs(s["raw"] / s["refit"] - 1)
    # The certified distances bound the exact minimisers' from above, and stay close.
    assert s["refit"] * (1 - 1e-6) <= s["certified"] <= 1.05 * s["refit"]


def test_multinomial_logistic_regression_uses_the_target_exact_engine():
    # "auto" picks the K-margin "newton" engine (multinomial.py); the first-order engine
    # stays available on request and is the less accurate of the two against refits.
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    make = lambda: LogisticRegression(C=0.5, tol=1e-10)  # noqa: E731
    w = _sigma(make, X, y, 75)
    kw = dict(scale=w, n_rounds=1, pairs_per_target=1, random_state=2)
    newton = estimate_swap_deltas(make(), X, y, **kw)
    assert newton.engine == "newton"
    first = estimate_swap_deltas(make(), X, y, engine="influence", **kw)
    refit = estimate_swap_deltas(make(), X, y, engine="refit", **kw)
    err_newton = np.abs(newton.distances / refit.distances - 1)
    err_first = np.abs(first.distances / refit.distances - 1)
    assert np.median(err_newton) < 0.02 and np.median(err_first) < 0.1
    assert err_newton.max() < err_first.max()


def test_exact_engine_enumerates_every_pair_of_the_mean():
    X = np.random.default_rng(3).normal(size=(8, 2))
    w = np.array([0.3, 0.7])
    res = estimate_swap_deltas(Statistic("mean"), X, scale=w, engine="exact", train_size=3, random_state=0)
    assert res.exhaustive and res.n_train == 3 and res.distances.shape == (8, math.comb(7, 3), 3)
    # Swapping e for x* moves the mean by (e - x*)/k whatever D_out is; e is uniform on
    # D \ {x*}, each row appearing in C(6, 2) of the subsets.
    for x in range(8):
        expected = sorted(
            np.linalg.norm((X[e] - X[x]) / 3 / w) for e in range(8) if e != x for _ in range(math.comb(6, 2))
        )
        np.testing.assert_allclose(np.sort(res.distances[x].ravel()), expected, rtol=1e-12)


# --------------------------------------------------------------------------- whitening


def test_zero_scale_coordinates_give_infinite_distance_only_when_they_move():
    X, y = _ridge_data()
    # The coefficient of an all-zero feature is exactly 0 on every subset: a zero scale
    # there is harmless.
    X0 = np.c_[X, np.zeros(len(X))]
    w0 = np.r_[np.full(X.shape[1], 0.1), 0.0, 0.1]
    for engine in ["newton", "influence", "refit"]:
        res = estimate_swap_deltas(
            Ridge(alpha=1.0), X0, y, scale=w0, n_rounds=2, engine=engine, pairs_per_target=2, random_state=0
        )
        assert np.all(np.isfinite(res.distances))
    # A zero scale on the intercept, which does move, makes every swap visible.
    w = np.r_[np.full(X.shape[1], 0.1), 0.0]
    for engine in ["newton", "refit"]:
        res = estimate_swap_deltas(
            Ridge(alpha=1.0), X, y, scale=w, n_rounds=1, engine=engine, pairs_per_target=1, random_state=0
        )
        assert np.all(np.isinf(res.distances))


def test_a_matrix_scale_must_be_invertible_and_of_the_right_size():
    X, y = _ridge_data()
    with pytest.raises(ValueError, match="invertible"):
        estimate_swap_deltas(Ridge(), X, y, scale=np.zeros((5, 5)), n_rounds=1)
    with pytest.raises(ValueError, match="5 parameters"):
        estimate_swap_deltas(Ridge(), X, y, scale=np.ones(4), n_rounds=1, random_state=0)
    with pytest.raises(ValueError, match="shape"):
        estimate_swap_deltas(Ridge(), X, y, scale=np.ones((5, 4)), n_rounds=1)


# --------------------------------------------------------------------------- checks


def test_a_loose_solver_is_refused_by_the_influence_engines(cancer):
    X, y = cancer
    w = _sigma(lambda: LogisticRegression(C=1.0, tol=1e-10), X, y, 60)
    with pytest.raises(ValueError, match="solver's own error must be negligible"):
        estimate_swap_deltas(LogisticRegression(C=1.0, tol=1e-2), X, y, scale=w, n_rounds=2, random_state=0)


@pytest.mark.parametrize(
    "model, match",
    [
        (LogisticRegression(class_weight="balanced"), "class_weight"),
        (LogisticRegression(solver="liblinear"), "liblinear"),
        (LogisticRegression(l1_ratio=1.0, solver="saga"), "L1"),
        (Ridge(positive=True), "positive"),
    ],
)
def test_objectives_the_influence_engines_do_not_model_are_refused(cancer, model, match):
    X, y = cancer
    with pytest.raises(ValueError, match=match):
        estimate_swap_deltas(model, X, y.astype(float), scale=np.ones(31), n_rounds=1, engine="influence", random_state=0)


def test_argument_errors(cancer):
    X, y = cancer
    with pytest.raises(ValueError, match="engine"):
        estimate_swap_deltas(Ridge(), X, y, scale=np.ones(31), engine="magic")
    with pytest.raises(TypeError, match="register_smooth_loss"):
        estimate_swap_deltas(Statistic("mean"), X, scale=np.ones(30), engine="newton", random_state=0)
    with pytest.raises(ValueError, match="train_size"):
        estimate_swap_deltas(Ridge(), X, y, scale=np.ones(31), train_size=len(X))
    with pytest.raises(ValueError, match="C\\(120, 60\\)"):
        estimate_swap_deltas(Ridge(), X, y, scale=np.ones(31), engine="exact", random_state=0)
    with pytest.raises(ValueError, match="pairs_per_target"):
        estimate_swap_deltas(Ridge(), X, y, scale=np.ones(31), pairs_per_target=0, random_state=0)


def test_results_do_not_depend_on_n_jobs_and_repeat_with_the_seed():
    X, y = _ridge_data(n=40)
    kw = dict(scale=np.full(5, 0.1), n_rounds=6, random_state=11)
    a = estimate_swap_deltas(Ridge(), X, y, n_jobs=1, **kw)
    b = estimate_swap_deltas(Ridge(), X, y, n_jobs=2, **kw)
    np.testing.assert_array_equal(a.distances, b.distances)
    c = estimate_swap_deltas(Ridge(), X, y, n_jobs=1, **dict(kw, random_state=12))
    assert not np.array_equal(a.distances, c.distances)


def test_result_object_reports_its_shape_and_prior():
    X, y = _ridge_data(n=30)
    res = estimate_swap_deltas(Ridge(), X, y, scale=np.full(5, 0.1), n_rounds=3, train_size=0.4, random_state=0)
    assert isinstance(res, SwapDeltas)
    assert (res.n_samples, res.n_rounds, res.n_train) == (30, 3, 12)
    assert res.train_fraction == pytest.approx(0.4) and not res.exhaustive
    assert "n_train=12" in repr(res) and "distances" not in repr(res)
    assert 0 < coupling_eta(res.distances, 1.0, train_fraction=res.train_fraction) < 0.4


def test_register_smooth_loss_teaches_a_new_estimator_type():
    class MyRidge(Ridge):
        pass

    X, y = _ridge_data()
    assert get_smooth_loss(MyRidge()) is None  # subclasses may change the objective
    kw = dict(scale=np.full(5, 0.1), n_rounds=1, pairs_per_target=1, random_state=0)
    assert estimate_swap_deltas(MyRidge(), X, y, **kw).engine == "refit"
    from skmip.calibration.losses.registry import _LeastSquaresLoss

    register_smooth_loss(MyRidge, lambda est: _LeastSquaresLoss())
    try:
        res = estimate_swap_deltas(MyRidge(), X, y, **kw)
        assert res.engine == "newton"
        np.testing.assert_allclose(
            res.distances, estimate_swap_deltas(MyRidge(), X, y, engine="refit", **kw).distances, rtol=1e-7
        )
    finally:
        from skmip.calibration.losses import registry as losses

        losses._LOSSES.pop(0)


def test_exhaustive_pairs_and_itertools_agree_on_the_number_of_draws():
    # Each target has C(n-1, k) subsets D_out and k choices of e: every (D_out, e) once.
    X = np.arange(12.0).reshape(6, 2)
    res = estimate_swap_deltas(Statistic("mean"), X, scale=np.ones(2), engine="exact", random_state=0)
    assert res.distances.shape[1] * res.distances.shape[2] == sum(
        1 for c in itertools.combinations(range(5), 3) for _ in c
    )


def test_a_loss_whose_layout_does_not_match_the_adapter_is_refused():
    from skmip.calibration.swap import LossBlock
    from skmip.calibration.losses.registry import _LeastSquaresLoss

    class Shuffled(_LeastSquaresLoss):
        def blocks(self, est, X, y, fit_rows, sample_weight):
            return [b._replace(index=b.index[::-1]) for b in super().blocks(est, X, y, fit_rows, sample_weight)]

    class MyRidge(Ridge):
        pass

    register_smooth_loss(MyRidge, lambda est: Shuffled())
    try:
        X, y = _ridge_data()
        with pytest.raises(ValueError, match="layout"):
            estimate_swap_deltas(MyRidge(), X, y, scale=np.full(5, 0.1), n_rounds=1, random_state=0)
        assert LossBlock._fields[:2] == ("index", "theta")
    finally:
        from skmip.calibration.losses import registry as losses

        losses._LOSSES.pop(0)


def test_sparse_input_gives_the_same_distances():
    from scipy import sparse

    X, y = _ridge_data()
    X[np.abs(X) < 0.5] = 0.0
    kw = dict(scale=np.full(5, 0.1), n_rounds=2, pairs_per_target=2, random_state=1)
    dense = estimate_swap_deltas(Ridge(), X, y, **kw)
    sp = estimate_swap_deltas(Ridge(), sparse.csr_matrix(X), y, **kw)
    np.testing.assert_allclose(sp.distances, dense.distances, rtol=1e-7)


def test_noise_factor_matches_the_covariance_of_subset_means():
    # The mean of a uniform k-subset of n rows has covariance (n - k) / (k (n - 1)) * S with
    # S the population covariance of the rows (sampling without replacement). Each entry
    # of the sample covariance over m subsets has relative error about sqrt(2 / m); 5 of
    # those is the tolerance.
    from skmip.calibration.spread.noise_factor import estimate_noise_factor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) @ np.array([[1.0, 0.8, 0.0], [0.0, 0.6, 0.3], [0.0, 0.0, 0.5]])
    n, k, m = 40, 20, 4000
    L = estimate_noise_factor(Statistic("mean"), X, n_subsets=m, shrinkage=False, random_state=1)
    expected = (n - k) / (k * (n - 1)) * np.cov(X.T, ddof=0)
    cov = L @ L.T
    assert np.allclose(L, np.tril(L))
    sd = np.sqrt(np.diag(expected))
    np.testing.assert_allclose(cov / np.outer(sd, sd), expected / np.outer(sd, sd), atol=5 * math.sqrt(2 / m))
    # Shrinkage multiplies the sample correlations by one factor in [0, 1] and keeps the
    # variances (same subsets: same seed).
    Ls = estimate_noise_factor(Statistic("mean"), X, n_subsets=50, random_state=1)
    Ln = estimate_noise_factor(Statistic("mean"), X, n_subsets=50, shrinkage=False, random_state=1)
    cs, cn = Ls @ Ls.T, Ln @ Ln.T
    np.testing.assert_allclose(np.diag(cs), np.diag(cn), rtol=1e-12)
    rs = cs / np.sqrt(np.outer(np.diag(cs), np.diag(cs)))
    rn = cn / np.sqrt(np.outer(np.diag(cn), np.diag(cn)))
    factor = rs[np.triu_indices(3, 1)] / rn[np.triu_indices(3, 1)]
    np.testing.assert_allclose(factor, factor[0], rtol=1e-10)
    assert 0 <= factor[0] < 1


def test_noise_factor_handles_constant_coordinates_and_feeds_the_deltas():
    from skmip.calibration.spread.noise_factor import estimate_noise_factor

    X, y = _ridge_data()
    X0 = np.c_[X, np.zeros(len(X))]  # its coefficient is 0 on every subset
    L = estimate_noise_factor(Ridge(alpha=1.0), X0, y, n_subsets=32, random_state=0)
    assert L.shape == (6, 6) and np.all(np.diag(L) > 0)
    res = estimate_swap_deltas(Ridge(alpha=1.0), X0, y, scale=L, n_rounds=2, random_state=0)
    assert np.all(np.isfinite(res.distances)) and np.all(res.distances > 0)
    with pytest.raises(ValueError, match="n_subsets"):
        estimate_noise_factor(Ridge(), X, y, n_subsets=1)


# --------------------------------------------------------------------------- scale (issue 12)


def test_warm_started_fits_are_the_exact_minimiser(cancer):
    # MinimiserFits (damped chord steps from a template fit, then Newton) against the
    # estimator's solver carried to the minimiser by polish_to_minimiser, on other subsets.
    from skmip.params import get_adapter
    from skmip.calibration.swap.polish import MinimiserFits, SolverFits

    X, y = cancer
    est = LogisticRegression(C=0.1)
    adapter, loss = get_adapter(est), get_smooth_loss(est)
    rng = np.random.default_rng(0)
    rows = [np.sort(rng.permutation(len(X))[:60]) for _ in range(4)]
    solver = SolverFits(est, adapter, X, y, {}, polish=True, loss=loss, Xd=X)
    template, _ = solver(rows[0])
    warm = MinimiserFits(est, adapter, X, y, {}, loss, X, template, rows[0])
    for r in rows[1:]:
        np.testing.assert_allclose(warm(r)[1], solver(r)[1], rtol=1e-9, atol=1e-11)


def test_damped_steps_stop_a_cycling_newton_iteration():
    # f(t) = sqrt(1 + t^2): Newton's full steps t -> -t^3 diverge from |t| > 1; the damped
    # step minimises along the direction instead.
    from skmip.calibration.swap.polish import _damped

    def gradient(t):
        return t / np.sqrt(1 + t**2)

    t = np.array([1.5])
    for _ in range(30):
        g = gradient(t)
        step = g / (1 + t**2) ** -1.5  # Newton: f'' = (1 + t^2)^-1.5
        t = t - _damped(gradient, t, step, g)
    assert abs(t[0]) < 1e-8


def test_rounds_do_not_depend_on_n_jobs_and_report_progress(cancer, capsys):
    X, y = cancer
    kw = dict(scale=np.full(X.shape[1] + 1, 0.05), n_rounds=25, random_state=3, polish=True)
    one = estimate_swap_deltas(LogisticRegression(C=0.1), X, y, n_jobs=1, verbose=1, **kw)
    err = capsys.readouterr().err
    assert "rounds 25/25" in err and "left" in err
    two = estimate_swap_deltas(LogisticRegression(C=0.1), X, y, n_jobs=2, **kw)
    # The same draws whatever the split among jobs; the sums over a row may round
    # differently with the memory alignment of the stacked fits (a few ulps).
    np.testing.assert_allclose(one.distances, two.distances, rtol=1e-13, atol=0)
    # Certified distances draw 1 value of e per target and round (8 for estimates).
    assert one.certified and one.pairs == "sampled" and one.distances.shape == (len(X), 25, 1)


def test_memory_budget_keeps_one_jensen_value_that_still_bounds_the_average(cancer, monkeypatch):
    # With the budget forced down, each round keeps the mean of its sampled distances: by
    # Jensen (TV concave in the distance) its TV bounds the average TV of the kept pairs.
    from skmip.bounds import coupling_eta_per_target
    from skmip.calibration.swap import estimate as estimate_module

    X, y = cancer
    kw = dict(scale=np.full(X.shape[1] + 1, 0.05), n_rounds=6, random_state=4, polish=True)
    full = estimate_swap_deltas(LogisticRegression(C=0.1), X, y, summary_size=8, **kw)
    monkeypatch.setattr(estimate_module, "_MAX_VALUES", len(X) * 6)
    small = estimate_swap_deltas(LogisticRegression(C=0.1), X, y, summary_size=8, **kw)
    assert small.distances.shape == (len(X), 6, 1)
    np.testing.assert_allclose(small.distances[..., 0], full.distances.mean(axis=2), rtol=1e-12)
    for s in [0.5, 2.0, 8.0]:
        assert np.all(coupling_eta_per_target(small.distances, s) >= coupling_eta_per_target(full.distances, s) - 1e-12)


# ----------------------------------------------------------------------------- whitening by a matrix
def _factor_with_tiny_upper_entries(d=4, seed=0):
    """A non-triangular noise factor on the scale of small coefficients: lower part ~1e-8, upper
    entries exactly 1e-9, below np.allclose's default atol of 1e-8 but not negligible here."""
    rng = np.random.default_rng(seed)
    L = np.tril(rng.normal(size=(d, d)) * 1e-8) + np.diag(np.full(d, 3e-8))
    L[np.triu_indices(d, 1)] = 1e-9
    return L


def test_whitener_solves_with_a_factor_that_is_almost_but_not_triangular():
    from skmip.calibration.swap.whitening import _Whitener

    L = _factor_with_tiny_upper_entries()
    assert np.allclose(L, np.tril(L)) and not np.array_equal(L, np.tril(L))  # the trap
    diff = np.random.default_rng(1).normal(size=(50, L.shape[0])) * 1e-8
    dense = np.linalg.norm(np.linalg.solve(L, diff.T).T, axis=1)
    # Dropping the upper entries (a triangular solve with np.tril(L)) gives other distances ...
    dropped = np.linalg.norm(np.linalg.solve(np.tril(L), diff.T).T, axis=1)
    assert np.max(np.abs(dropped / dense - 1)) > 0.01
    # ... the whitener solves with L itself.
    np.testing.assert_allclose(_Whitener(L).norms(diff), dense, rtol=1e-9)


def test_statistic_swap_deltas_with_an_almost_triangular_factor_matches_a_dense_solve():
    L = _factor_with_tiny_upper_entries()
    F = np.random.default_rng(2).normal(size=(12, L.shape[0])) * 1e-8
    from skmip.calibration.swap import statistic_swap_deltas

    res = statistic_swap_deltas(F, scale=L, train_size=6)
    W = np.linalg.solve(L, F.T).T
    exact = np.linalg.norm(W[:, None] - W[None], axis=-1) / 6  # ||L^-1 (phi_i - phi_j)|| / k
    # Rows are grouped (and reordered) by the engine: compare the multisets of distances.
    np.testing.assert_allclose(np.sort(res.distances.ravel()), np.sort(exact.ravel()), rtol=1e-6, atol=1e-12)
