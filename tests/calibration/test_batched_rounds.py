"""The batched rounds of the "newton" engine (skmip.calibration.swap.batched) against the per-fit path.

Both describe the exact minimisers: the fits stop at steps of 1e-14 relative, the target
refinement at steps of 1e-10 of the move it refines, so the two paths agree to far better
than rtol=1e-7 (measured: ~1e-12 on breast cancer).
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression, PoissonRegressor
from sklearn.preprocessing import StandardScaler

from skmip.calibration.spread.noise_factor import estimate_noise_factor
from skmip.calibration.swap import batched, estimate_swap_deltas, newton
from skmip.calibration.swap.polish import MinimiserFits

RTOL = 1e-7


@pytest.fixture(scope="module")
def cancer():
    """Standardized breast cancer, the 426 rows of the README's training split."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    idx = np.random.default_rng(0).permutation(len(X))[:426]
    return X[idx], y[idx]


@pytest.fixture(scope="module")
def rare():
    """A column that 3 of 151 rows hold (most subsets see it once or never): uneven blocks
    (151 rows, k = 90: fits own 61, 61 and 29 targets) and diagonal scales."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(151, 6))
    X[:, 5] = 0.0
    X[[3, 50, 100], 5] = 4.0
    y = (rng.random(151) < 1 / (1 + np.exp(-X[:, :5] @ [1, -1, 0.5, 0, 2] - 2 * X[:, 5]))).astype(int)
    return X, y


def _count_batches(monkeypatch):
    calls = []
    batch = batched._batch

    def spy(fits, *args):
        calls.append(len(fits))
        return batch(fits, *args)

    monkeypatch.setattr(batched, "_batch", spy)
    return calls


def _both(monkeypatch, est, X, y, **kw):
    """Distances by the batched path (asserted used) and by the per-fit path."""
    calls = _count_batches(monkeypatch)
    fast = estimate_swap_deltas(est, X, y, polish=True, **kw).distances
    assert calls and max(calls) > 1
    n_batches = len(calls)
    monkeypatch.setattr(batched, "_ENABLED", False)
    slow = estimate_swap_deltas(est, X, y, polish=True, **kw).distances
    monkeypatch.setattr(batched, "_ENABLED", True)
    assert len(calls) == n_batches  # the per-fit run made none
    return fast, slow, calls[:n_batches]


def test_batched_rounds_match_the_per_fit_path_on_breast_cancer(cancer, monkeypatch):
    X, y = cancer
    est = LogisticRegression(C=0.1)
    L = estimate_noise_factor(est, X, y, n_subsets=64, random_state=1, polish=True)
    # 80 rounds: 4 per chunk, 8 fits and 32 refined targets a batch (the stacked refinement).
    fast, slow, calls = _both(monkeypatch, est, X, y, scale=L, n_rounds=80, random_state=2)
    assert sum(calls) == 160  # every fit went through a batch
    np.testing.assert_allclose(fast, slow, rtol=RTOL)


def test_batched_rounds_match_on_a_rare_feature_with_uneven_blocks(rare, monkeypatch):
    X, y = rare
    # Refinement replaces certification (certify=False): the estimates it refines.
    kw = dict(scale=np.full(7, 0.05), train_size=90, n_rounds=40, random_state=5, refine=0.2, certify=False)
    fast, slow, _ = _both(monkeypatch, LogisticRegression(C=1.0), X, y, **kw)
    np.testing.assert_allclose(fast, slow, rtol=RTOL)
    # A zero scale on the rare column: its swaps are seen exactly (inf) in both paths.
    scale = np.r_[np.full(5, 0.05), 0.0, 0.05]
    fast, slow, _ = _both(monkeypatch, LogisticRegression(C=1.0), X, y, **{**kw, "scale": scale})
    assert np.isinf(fast).any() and np.array_equal(np.isinf(fast), np.isinf(slow))
    np.testing.assert_allclose(fast, slow, rtol=RTOL)


def test_batched_rounds_match_for_another_glm(rare, monkeypatch):
    X, _ = rare
    y = np.random.default_rng(1).poisson(np.exp(0.3 * X[:, 0]))
    fast, slow, _ = _both(monkeypatch, PoissonRegressor(alpha=0.01), X, y, scale=np.full(7, 0.05),
                          n_rounds=30, random_state=6)
    np.testing.assert_allclose(fast, slow, rtol=RTOL)


def test_refinement_that_does_not_converge_keeps_the_one_step_value(rare, monkeypatch):
    X, y = rare
    kw = dict(scale=np.full(7, 0.05), train_size=90, n_rounds=20, random_state=5, certify=False)
    est = LogisticRegression(C=1.0)
    one_step = estimate_swap_deltas(est, X, y, polish=True, refine=0.0, **kw).distances
    refined = estimate_swap_deltas(est, X, y, polish=True, refine=0.2, **kw).distances
    assert not np.allclose(one_step, refined, rtol=1e-6)
    # No refinement ever settles: every target keeps its one-step value, in both paths.
    monkeypatch.setattr(newton, "_settled", lambda step, *a: np.zeros(step.shape[:-1], dtype=bool))
    fast, slow, _ = _both(monkeypatch, est, X, y, refine=0.2, **kw)
    np.testing.assert_allclose(fast, one_step, rtol=RTOL)
    np.testing.assert_allclose(slow, one_step, rtol=RTOL)


#: A short breast-cancer calibration, run in the default (batched) way for reference.
_SHORT = {"scale": np.full(31, 0.05), "n_rounds": 20, "random_state": 3, "polish": True}


@pytest.fixture(scope="module")
def short_reference(cancer):
    return estimate_swap_deltas(LogisticRegression(C=0.1), *cancer, **_SHORT).distances


def test_fits_the_stacked_iteration_fails_fall_back_to_the_per_fit_chain(cancer, short_reference,
                                                                         monkeypatch):
    chord = MinimiserFits._chord
    singles = []

    def every_other_fails(self, rows, max_iter=100):
        theta, ok = chord(self, rows, max_iter)
        if len(rows) > 1:
            ok[::2] = False  # redone one by one through MinimiserFits.__call__
        else:
            singles.append(1)
        return theta, ok

    monkeypatch.setattr(MinimiserFits, "_chord", every_other_fails)
    calls = _count_batches(monkeypatch)
    fallback = estimate_swap_deltas(LogisticRegression(C=0.1), *cancer, **_SHORT).distances
    assert calls and singles
    np.testing.assert_allclose(fallback, short_reference, rtol=RTOL)


def test_a_loss_that_disagrees_with_the_template_runs_fit_by_fit(cancer, short_reference, monkeypatch):
    monkeypatch.setattr(batched, "_same_objective", lambda *a: False)
    per_fit = []
    round_ = batched._influence_round
    monkeypatch.setattr(batched, "_influence_round", lambda *a: per_fit.append(1) or round_(*a))
    out = estimate_swap_deltas(LogisticRegression(C=0.1), *cancer, **_SHORT).distances
    assert len(per_fit) == 20
    np.testing.assert_allclose(out, short_reference, rtol=RTOL)


def test_the_batch_is_the_default_only_where_it_applies(cancer, monkeypatch):
    X, y = cancer
    kw = dict(scale=np.full(31, 0.05), n_rounds=4, random_state=0)
    est = LogisticRegression(C=0.1, tol=1e-10)
    calls = _count_batches(monkeypatch)
    estimate_swap_deltas(est, X, y, polish=True, **kw)
    assert calls  # the default: polished warm-started fits, sampled pairs
    calls.clear()
    estimate_swap_deltas(est, X, y, **kw)  # the solver's own fits
    estimate_swap_deltas(est, X[:40], y[:40], polish=True, pairs_per_target="all", **kw)
    estimate_swap_deltas(est, X, y, polish=True, engine="influence", **kw)
    assert not calls


def test_certified_distances_do_not_depend_on_how_rounds_fall_into_chunks(cancer, monkeypatch):
    # Each fit's certificate (its stacked row sums, its second stage at its own width) is that
    # of the fit alone, whatever fits share its batch: chunks of 6, 4 and 1 rounds (batches of
    # 12, 8 and 2 fits) store the same certified distances, bit for bit.
    from skmip.calibration.swap import rounds

    X, y = cancer
    kw = dict(scale=np.full(X.shape[1] + 1, 0.05), n_rounds=12, random_state=3, polish=True)
    got = []
    for n_chunks in (2, 3, 12):
        monkeypatch.setattr(rounds, "_n_chunks", lambda *args, n=n_chunks: n)
        d = estimate_swap_deltas(LogisticRegression(C=0.1), X, y, **kw)
        assert d.certified and isinstance(d.distances, np.ndarray)  # stored in full, not compact
        got.append(d.distances)
    for other in got[1:]:
        np.testing.assert_array_equal(other, got[0])
