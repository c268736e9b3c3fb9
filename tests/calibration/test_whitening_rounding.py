"""Whitened distances are upper bounds in the exact whitening, checked in exact arithmetic.

The noise is s L z (or s w * z); the coupling bound reads ||L^-1 (theta - theta')||. The code
whitens with a rounded inverse X of L and in floating point; `_Whitener.outward`, `norms`,
`images` and the closed-form engine round every distance outward (docs/coupling.md,
"Certified distances", *The whitening in floating point*). Each check below compares with the
exact value, computed with Python fractions from the very floats the code was given.
"""

from fractions import Fraction

import numpy as np
import pytest
from scipy import linalg

from skmip.calibration.swap.closed_form import _group, statistic_swap_deltas
from skmip.calibration.swap.whitening import _Whitener, _inverse_defect


def _exact(A):
    return [[Fraction(float(a)) for a in row] for row in np.atleast_2d(A)]


def _solve_exact(L, v):
    """L^-1 v for a square L, by Gauss-Jordan elimination in fractions."""
    D = len(L)
    M = [row[:] + [Fraction(float(b))] for row, b in zip(_exact(L), v)]
    for c in range(D):
        p = next(r for r in range(c, D) if M[r][c] != 0)
        M[c], M[p] = M[p], M[c]
        for r in range(D):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [a - f * b for a, b in zip(M[r], M[c])]
    return [M[r][D] / M[r][r] for r in range(D)]


def _sq(vec):
    return sum(x * x for x in vec)


def _ill_conditioned(D, seed, lower):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((D, D)) * np.logspace(0, 5, D)[None, :]
    A = np.tril(A) + np.diag(np.logspace(-2, 3, D)) if lower else A + D * np.eye(D)
    return A


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_the_inverse_defect_bounds_the_exact_residual(lower, seed):
    L = _ill_conditioned(6, seed, lower)
    X = _Whitener(L).linv
    E = _exact(np.eye(6))
    XL = [[sum(a * b for a, b in zip(row, col)) for col in zip(*_exact(L))] for row in _exact(X)]
    frob_sq = sum((E[i][j] - XL[i][j]) ** 2 for i in range(6) for j in range(6))
    delta = Fraction(_inverse_defect(L, X))
    assert delta * delta >= frob_sq  # ||E||_2 <= ||E||_F <= delta


@pytest.mark.parametrize("kind", ["lower", "full", "vector"])
@pytest.mark.parametrize("seed", range(4))
def test_norms_bound_the_exact_whitened_norms(kind, seed):
    rng = np.random.default_rng(seed)
    D = 5
    if kind == "vector":
        scale = np.exp(rng.uniform(-8, 8, D))
    else:
        scale = _ill_conditioned(D, seed, kind == "lower")
    w = _Whitener(scale)
    # Differences with cancellation: nearly parallel to a row of L, and tiny ones.
    V = np.vstack([rng.standard_normal((6, D)) * 10.0 ** rng.integers(-6, 6, (6, 1)),
                   (scale if scale.ndim == 2 else np.diag(scale))[:, 0] + 1e-9])
    got = w.norms(V)
    for v, g in zip(V, got):
        exact = (_sq(_solve_exact(np.diag(scale) if kind == "vector" else scale, v)))
        assert Fraction(float(g)) ** 2 >= exact


def test_outward_covers_the_defect_keeps_zero_and_inf():
    w = _Whitener(_ill_conditioned(6, 0, True))
    d = np.array([0.0, np.inf, 1e-300, 0.3, 1.0, 7.5e8])
    got = w.outward(d)
    assert got[0] == 0.0 and got[1] == np.inf
    for a, b in zip(d[2:], got[2:]):
        # d / (1 - delta) <= got, exactly
        assert Fraction(float(b)) * (1 - Fraction(w.defect)) >= Fraction(float(a))


@pytest.mark.parametrize("seed", range(3))
def test_closed_form_distances_bound_the_exact_ones(seed):
    rng = np.random.default_rng(seed)
    L = _ill_conditioned(3, seed, True)
    base = rng.standard_normal(3) * 1e3
    # Near-duplicates of a large row: the Gram form cancels almost everything there.
    F = np.vstack([base, base + 1e-7, base + [0.0, 0.0, 1e-9], rng.standard_normal((3, 3))])
    res = statistic_swap_deltas(F, scale=L, train_size=3)
    got = res.distances[:, 0, :]
    F = _group(F)[0]  # the distinct rows, in the engine's order
    W = [_solve_exact(L, f) for f in F]
    k = Fraction(3)
    for i in range(len(F)):
        for j in range(len(F)):
            exact_sq = _sq([a - b for a, b in zip(W[i], W[j])]) / (k * k)
            assert Fraction(float(got[i, j])) ** 2 >= exact_sq, (i, j)
    # The Jensen bound (one value per row): sqrt of the mean square over the other rows, / k.
    jensen = statistic_swap_deltas(F, scale=L, train_size=3, max_pairs=1).distances[:, 0, 0]
    n = len(F)
    for i in range(n):
        mean_sq = sum(_sq([a - b for a, b in zip(W[i], W[j])]) for j in range(n)) / (n - 1) / (k * k)
        assert Fraction(float(jensen[i])) ** 2 >= mean_sq, i


def test_whitening_in_place_is_the_same_product():
    # StackCertifier whitens the gathered rows of H in place: the same products, every bit;
    # a matrix scale cannot and returns a new array.
    rng = np.random.default_rng(3)
    V = rng.normal(size=(4, 9, 5))
    index = np.array([0, 2, 3, 5, 6])
    vector = _Whitener(rng.uniform(0.5, 2.0, size=7))
    want = vector.apply(V, index)
    W = V.copy()
    assert vector.apply(W, index, out=W) is W
    np.testing.assert_array_equal(W, want)
    np.testing.assert_array_equal(want, V * vector.inv[index])
    L = np.tril(rng.normal(size=(7, 7))) + 4 * np.eye(7)
    matrix = _Whitener(L)
    W = V.copy()
    got = matrix.apply(W, index, out=W)
    np.testing.assert_array_equal(W, V)  # untouched
    np.testing.assert_array_equal(got, matrix.apply(V, index))
