"""Lazy certification over kept fits (skmip.calibration.swap.kept): each pass keeps its fits,
their closed form and the pairs it tightened for the next, so the fits are not repeated, and the
result is what full certification prints."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skmip.bounds import coupling_noise_scale
from skmip.bounds.coupling_binding import BindingTargets
from skmip.calibration.swap import batched, estimate_swap_deltas, influence, kept
from skmip.calibration.swap import lazy as lazy_passes
from skmip.calibration.swap.polish import MinimiserFits

ETAS = (0.1, 0.2)


def _data(n=160):
    """Rows with a rare large value (swaps that move the fit by O(1)): loose closed forms."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    X[:4, 2] = 8.0
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


def _fits_counted(monkeypatch):
    """Count the row sets fitted (batched: ``vectors``; per fit: ``__call__``)."""
    count = [0]
    vectors, call = MinimiserFits.vectors, MinimiserFits.__call__

    def spy_vectors(self, row_sets):
        count[0] += len(row_sets)
        return vectors(self, row_sets)

    def spy_call(self, rows):
        count[0] += 1
        return call(self, rows)

    monkeypatch.setattr(MinimiserFits, "vectors", spy_vectors)
    monkeypatch.setattr(MinimiserFits, "__call__", spy_call)
    return count


def _full_and_lazy(monkeypatch, per_fit):
    monkeypatch.setattr(lazy_passes, "MIN_ROWS", 0)  # lazy at this size too
    monkeypatch.setattr(batched, "_ENABLED", not per_fit)
    # Per fit: its 80 targets in chunks of 32 (a fit keeps one set of pairs per chunk).
    monkeypatch.setattr(influence, "_GATHER_ELEMENTS", 2**8 if per_fit else influence._GATHER_ELEMENTS)
    X, y = _data()
    common = dict(scale=np.ones(4), n_rounds=120, polish=True, random_state=1)
    count = _fits_counted(monkeypatch)
    full = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, **common)
    fits_full = count[0]
    lazy = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, tighten_for=BindingTargets(ETAS), **common)
    return np.asarray(full.distances), np.asarray(lazy.distances), fits_full, count[0] - fits_full


@pytest.mark.parametrize("per_fit", [False, True])
def test_lazy_over_kept_fits_prints_what_full_certification_prints(monkeypatch, per_fit):
    d_full, d_lazy, _, _ = _full_and_lazy(monkeypatch, per_fit)
    # Every value is full certification's or a closed-form bound above it; a pair tightened in
    # a pass with fewer pairs beside it rounds the second stage's sums in another order
    # (docs/coupling.md, "Certify only what can move the printed number": 1e-16 to 3e-15 here).
    rounding = 1e-13
    assert np.all(d_lazy >= d_full * (1 - rounding))
    # Pairs that neither tightens (their closed form within 10% of the estimate) are the same
    # arithmetic on the same arrays: bit for bit.
    assert np.mean(d_lazy == d_full) > 0.5
    assert (d_lazy > d_full * (1 + 1e-6)).any()  # some targets kept their closed-form bound
    for eta in ETAS:
        a = coupling_noise_scale(d_lazy, eta, train_fraction=0.5)
        b = coupling_noise_scale(d_full, eta, train_fraction=0.5)
        assert (a.noise_scale, a.eta_upper) == (b.noise_scale, b.eta_upper)  # every digit
        # The targets that decide the scale (failing one grid step below) have full's distances.
        deciding = BindingTargets([eta]).near(d_full, 0.5, {eta: b.noise_scale}, 2 ** (-1 / 128))
        assert deciding.any()
        np.testing.assert_allclose(d_lazy[deciding], d_full[deciding], rtol=rounding, atol=0)


@pytest.mark.parametrize("per_fit", [False, True])
def test_kept_fits_are_not_fitted_again(monkeypatch, per_fit):
    hits = []
    get = kept.KeptBatches.get

    def spy_get(self, key):
        out = get(self, key)
        hits.append(out is not None)
        return out

    monkeypatch.setattr(kept.KeptBatches, "get", spy_get)
    _, _, fits_full, fits_lazy = _full_and_lazy(monkeypatch, per_fit)
    # Three passes or more (estimates, closed form, tightened), one set of fits.
    assert fits_lazy == fits_full
    assert sum(hits) >= 2 * (len(hits) - sum(hits)) > 0


def test_a_store_out_of_budget_recomputes_the_same_values(monkeypatch):
    _, d_kept, _, _ = _full_and_lazy(monkeypatch, per_fit=False)
    monkeypatch.setattr(kept, "_KEEP_BYTES", 0)
    d_full, d_unkept, fits_full, fits_lazy = _full_and_lazy(monkeypatch, per_fit=False)
    assert fits_lazy > 2 * fits_full  # every pass fitted again
    np.testing.assert_allclose(d_unkept, d_kept, rtol=1e-13, atol=0)
    for eta in ETAS:
        assert (coupling_noise_scale(d_unkept, eta, train_fraction=0.5).noise_scale
                == coupling_noise_scale(d_full, eta, train_fraction=0.5).noise_scale)


def test_the_store_budget_is_two_gib_or_an_eighth_of_the_memory(monkeypatch):
    """The default budget: 2 GiB, less on a machine with under 16 GiB, never under 256 MiB."""
    assert kept.KeptBatches().budget == kept.keep_budget() <= 2**31
    for pages, expected in ((2**22, 2**31), (2**20, 2**29), (2**15, 2**28)):  # 4 KiB pages
        monkeypatch.setattr(kept.os, "sysconf", lambda name, pages=pages: 4096 if name == "SC_PAGE_SIZE" else pages)
        assert kept.keep_budget() == expected
