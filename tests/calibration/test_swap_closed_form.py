"""The closed-form swap engine (skmip.calibration.swap.closed_form) and weighted exhaustive deltas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from skmip.bounds import coupling_eta_per_target, coupling_noise_scale
from skmip.calibration.swap import estimate_swap_deltas, marginal_swap_deltas, statistic_swap_deltas
from skmip.release.statistic import Statistic


def _per_row(res, rows, s):
    """The closed form's per-target values mapped back to the rows of D."""
    _, inverse = np.unique(rows, axis=0, return_inverse=True)
    values = coupling_eta_per_target(res.distances, s, weights=res.weights, train_fraction=res.train_fraction)
    return values[inverse.ravel()]


@pytest.mark.parametrize("func, width", [("mean", 2), ("second_moment", 3), ("mean_and_second_moment", 5)])
def test_closed_form_equals_the_exact_enumeration(func, width):
    # Every (D_out, e) of C(9, 5) subsets against the finite sum over e: equal per row, at
    # every noise scale, because the swap moves a mean of features by (phi(x*) - phi(e)) / k.
    X = np.random.default_rng(1).normal(size=(10, 2))
    X[3] = X[7]  # a repeated row: grouped into one target of multiplicity 2
    scale = np.linspace(0.5, 2.0, width)
    exact = estimate_swap_deltas(Statistic(func), X, scale=scale, engine="exact", random_state=0)
    closed = estimate_swap_deltas(Statistic(func), X, scale=scale, engine="closed_form", random_state=0)
    assert closed.engine == "closed_form" and closed.exhaustive and closed.n_samples == 10
    assert closed.target_counts.tolist().count(2) == 1 and closed.train_fraction == 0.5
    phi = np.stack([Statistic(func).fit(x[None]).statistic_[np.triu_indices(2)] if func == "second_moment"
                    else Statistic(func).fit(x[None]).statistic_ for x in X])
    for s in [0.05, 0.3, 1.0, 4.0]:
        np.testing.assert_allclose(
            _per_row(closed, phi, s), coupling_eta_per_target(exact.distances, s), rtol=1e-10, atol=1e-14
        )
    a = coupling_noise_scale(exact.distances, 0.1, confidence=None)
    b = coupling_noise_scale(closed.distances, 0.1, confidence=None, weights=closed.weights)
    assert b.noise_scale == pytest.approx(a.noise_scale, rel=1e-9) and b.eta_point == pytest.approx(0.1)


def test_matrix_scale_and_unnoised_coordinates():
    rng = np.random.default_rng(2)
    F = rng.normal(size=(30, 3))
    L = np.tril(rng.normal(size=(3, 3))) + 3 * np.eye(3)
    res = statistic_swap_deltas(F, scale=L, train_size=10)
    i, j = 4, 17
    ti, tj = (np.flatnonzero((np.unique(F, axis=0) == F[r]).all(1))[0] for r in (i, j))
    assert res.distances[ti, 0, tj] == pytest.approx(np.linalg.norm(np.linalg.solve(L, F[i] - F[j])) / 10)
    # A coordinate with zero scale that varies is seen exactly: infinite distance.
    G = np.c_[F, np.r_[np.zeros(29), 1.0]]
    res0 = statistic_swap_deltas(G, scale=[1.0, 1.0, 1.0, 0.0])
    assert np.isinf(res0.distances).any()
    with pytest.raises(ValueError, match="3 columns"):
        statistic_swap_deltas(F, scale=np.ones(4))
    with pytest.raises(ValueError, match="finite 2-D"):
        statistic_swap_deltas(np.ones(3), scale=[1.0])


def test_jensen_bound_is_an_exact_upper_bound():
    # Above max_pairs one value per target: TV at the root mean square distance, which
    # bounds the exact per-target expectation from above at every s (concavity), and is
    # close to it when the distances concentrate.
    F = np.random.default_rng(3).normal(size=(60, 20))
    exact = statistic_swap_deltas(F, scale=np.ones(20))
    jensen = statistic_swap_deltas(F, scale=np.ones(20), max_pairs=10)
    assert jensen.pairs == "jensen" and jensen.exhaustive and jensen.distances.shape == (60, 1, 1)
    for s in [0.05, 0.2, 1.0]:
        e = coupling_eta_per_target(exact.distances, s, weights=exact.weights)
        j = coupling_eta_per_target(jensen.distances, s)
        assert np.all(j >= e - 1e-12) and np.all(j <= e * 1.1)


def test_marginal_engine_equals_the_one_hot_statistic():
    # Marginal tables are the mean of one-hot cell indicators: the specialised engine must
    # agree with the generic one on the one-hot features with unit scale.
    rng = np.random.default_rng(4)
    codes = np.c_[rng.integers(0, 3, 40), rng.integers(0, 2, 40), rng.integers(0, 4, 40)]
    marginals = [(0,), (0, 1), (1, 2)]
    onehot = np.concatenate([
        np.eye(int(np.prod([codes[:, c].max() + 1 for c in m])))[
            np.ravel_multi_index(tuple(codes[:, c] for c in m), tuple(codes[:, c].max() + 1 for c in m))]
        for m in marginals], axis=1)
    fast = marginal_swap_deltas(codes, marginals, train_size=20)
    slow = statistic_swap_deltas(onehot, scale=np.ones(onehot.shape[1]), train_size=20)
    for s in [0.01, 0.1, 1.0]:
        a = _per_row(fast, codes, s)
        b = _per_row(slow, onehot, s)
        np.testing.assert_allclose(a, b, rtol=1e-10)
    assert fast.distances.shape[2] == len(marginals) + 1
    np.testing.assert_allclose(fast.weights.sum(axis=2), 1.0)
    with pytest.raises(ValueError, match="column indices"):
        marginal_swap_deltas(codes, [(0, 5)])


def test_weights_are_validated_and_need_confidence_none():
    d = np.ones((2, 1, 3))
    w = np.full((2, 1, 3), 1 / 3)
    with pytest.raises(ValueError, match="confidence=None"):
        coupling_noise_scale(d, 0.1, weights=w)
    with pytest.raises(ValueError, match="sum to 1"):
        coupling_noise_scale(d, 0.1, confidence=None, weights=w * 2)
    with pytest.raises(ValueError, match="shape of deltas"):
        coupling_noise_scale(d, 0.1, confidence=None, weights=np.ones(2))
    # Weighted values are the same as repeating each value by its weight.
    dist = np.array([[[0.0, 1.0, 2.0]]])
    ww = np.array([[[0.5, 0.25, 0.25]]])
    rep = np.array([[[0.0, 0.0, 1.0, 2.0]]])
    assert coupling_eta_per_target(dist, 0.7, weights=ww)[0] == pytest.approx(coupling_eta_per_target(rep, 0.7)[0])
    cal = coupling_noise_scale(dist, 0.05, confidence=None, weights=ww)
    assert cal.noise_scale == pytest.approx(coupling_noise_scale(rep, 0.05, confidence=None).noise_scale)


def test_closed_form_refuses_statistics_that_are_not_means():
    X = np.random.default_rng(0).normal(size=(8, 2))
    with pytest.raises(TypeError, match="mean of per-row"):
        estimate_swap_deltas(Statistic(np.median, kw_args={"axis": 0}), X, scale=np.ones(2), engine="closed_form", random_state=0)
    assert math.isfinite(estimate_swap_deltas(Statistic(), X, scale=np.ones(2), engine="closed_form", random_state=0).distances.max())


# --------------------------------------------------------------------------- exact audits
# The exact Bayes-optimal attacker (skmip.audit.attacks.bayes) on enumerable problems, with the
# noise calibrated by the closed-form engine: the advantage must not exceed eta (one-sided
# 99.9% Monte Carlo bound), and it comes close to it where the coupling is tight.
def _closed_form_audit(fn, X, scale, eta, n_mc, seed):
    from skmip.audit.attacks.bayes import exact_mip_advantage

    phi = np.stack([np.atleast_1d(fn(x[None])) for x in X])
    res = statistic_swap_deltas(phi, scale=scale)
    cal = coupling_noise_scale(res.distances, eta, confidence=None, weights=res.weights,
                               train_fraction=res.train_fraction)
    sd = cal.noise_scale * np.asarray(scale)
    audit = exact_mip_advantage(
        fn, X, noise_sampler=lambda m, rng: rng.normal(size=(m, sd.size)) * sd,
        noise_logpdf=lambda x: -0.5 * ((x / sd) ** 2).sum(axis=1), n_mc=n_mc, random_state=seed,
    )
    return cal, audit, _per_row(res, phi, cal.noise_scale)


def _upper_second_moment(A):
    return (A.T @ A / len(A))[np.triu_indices(A.shape[1])]


@pytest.mark.parametrize("eta", [0.05, 0.2])
def test_exact_audit_mean_with_one_outlier_is_tight(eta):
    # n = 12 rows, one outlier among zeros (grouped: two targets). For the outlier, D_out is
    # always all zeros and D_in always holds it: the coupling bound is an equality.
    X = np.zeros((12, 1))
    X[0] = 1.0
    cal, audit, bound = _closed_form_audit(lambda A: A.mean(0), X, [1.0], eta, 4000, 5)
    assert bound.max() == pytest.approx(eta, rel=1e-9) and cal.eta_point == pytest.approx(eta)
    assert abs(audit.advantage[0] - eta) < 4 * audit.std_error[0]
    assert audit.upper_confidence_bound(0.999).max() - 4 * audit.std_error.max() < eta


@pytest.mark.parametrize("func", ["mean", "second_moment"])
def test_exact_audit_gaussian_rows_never_exceed_eta(func):
    # Mean (d = 3) and uncentred second moment (d = 2, three free entries) of 12 Gaussian rows.
    rng = np.random.default_rng(6)
    if func == "mean":
        X, fn = rng.normal(size=(12, 3)), (lambda A: A.mean(0))
    else:
        X, fn = rng.normal(size=(12, 2)), _upper_second_moment
    scale = np.stack([fn(x[None]) for x in X]).std(axis=0)
    for eta in [0.1, 0.3]:
        cal, audit, bound = _closed_form_audit(fn, X, scale, eta, 2000, 7)
        assert bound.max() == pytest.approx(eta, rel=1e-9)
        assert np.all(audit.advantage <= bound + 4 * audit.std_error)
        assert audit.upper_confidence_bound(0.999).max() < eta
        # Not vacuous: the optimal attacker reaches most of the bound on the exposed rows.
        assert audit.advantage.max() > 0.6 * eta
