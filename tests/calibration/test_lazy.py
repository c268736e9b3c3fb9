"""Lazy certification (skmip.calibration.swap.lazy, skmip.bounds.coupling_binding): the scale
printed from distances tightened only where they can move it equals full certification's."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skmip.bounds import coupling_noise_scale
from skmip.bounds.coupling_binding import BindingTargets
from skmip.calibration.swap import estimate_swap_deltas
from skmip.calibration.swap import lazy as lazy_passes
from skmip.calibration.swap.lazy import Tighten, settled_rounds


def _model(seed, n=300, m=200, inf_rows=3):
    """Tight distances, looser upper bounds of them (some infinite: the closed form certifies
    nothing there) and estimates a little below: the three things a pass can return."""
    rng = np.random.default_rng(seed)
    tight = rng.gamma(2.0, 0.05, size=(n, m, 2)) * rng.uniform(0.5, 3.0, size=(n, 1, 1))
    loose = tight * rng.uniform(1.0, 1.6, size=tight.shape)
    loose[rng.choice(n, inf_rows, replace=False), :5, 0] = np.inf
    return tight, loose, tight * rng.uniform(0.97, 1.0, size=tight.shape)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("etas, confidence", [((0.1,), 0.95), ((0.1, 0.2), 0.95), ((0.1,), None)])
def test_settled_rounds_give_the_scale_of_tight_distances(seed, etas, confidence):
    tight, loose, estimate = _model(seed)
    passes = []

    def run(certify, steer):
        passes.append(certify if isinstance(certify, bool) else int(certify.targets.sum()))
        if certify is False:
            return estimate
        if isinstance(certify, Tighten):
            return np.where(certify.targets[:, None, None], tight, loose)
        return tight

    binding = BindingTargets(etas, confidence)
    got = settled_rounds(run, binding, 0.5, tight.shape[0])
    assert np.all(got >= tight)  # every value an upper bound of the tight one
    for eta in etas:
        want = coupling_noise_scale(tight, eta, confidence=confidence)
        have = coupling_noise_scale(got, eta, confidence=confidence)
        if confidence is None:  # Brent's root: the same function near it, iterates elsewhere
            assert have.noise_scale == pytest.approx(want.noise_scale, rel=3e-10)  # xtol 1e-10 in log s
        else:  # the grid point itself
            assert have.noise_scale == want.noise_scale
    assert passes[-1] is not True  # settled without certifying every pair
    assert passes[-1] < tight.shape[0] // 2  # ... and tightened fewer than half of the targets


@pytest.mark.parametrize("seed", range(40))
def test_settled_is_never_wrong(seed):
    # Brute force: whatever the mask, a calibration declared settled equals the tight one.
    rng = np.random.default_rng(100 + seed)
    tight, loose, _ = _model(seed, n=60, m=120, inf_rows=0)
    mask = rng.random(60) < rng.uniform(0.05, 0.9)
    mixed = np.where(mask[:, None, None], tight, loose)
    binding = BindingTargets([0.15], 0.9)
    ok, scales = binding.settled(mixed, 0.5, mask)
    want = coupling_noise_scale(tight, 0.15, confidence=0.9).noise_scale
    assert scales[0.15] >= want
    if ok:
        assert scales[0.15] == want


def test_lazy_estimate_gives_the_full_scale_on_a_fit_with_high_leverage_rows(monkeypatch):
    monkeypatch.setattr(lazy_passes, "MIN_ROWS", 0)  # lazy at this size too
    rng = np.random.default_rng(0)
    n = 160
    X = rng.normal(size=(n, 3))
    X[:4, 2] = 8.0  # a rare large value: rows whose swaps move the fit by O(1)
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    scale = np.ones(4)
    common = dict(scale=scale, n_rounds=120, polish=True, random_state=1)
    full = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, **common)
    binding = BindingTargets([0.1, 0.2])
    lazy = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, tighten_for=binding, **common)
    assert lazy.certified and full.certified
    d_full, d_lazy = np.asarray(full.distances), np.asarray(lazy.distances)
    assert np.all(d_lazy >= d_full * (1 - 1e-9))
    assert (d_lazy > d_full * (1 + 1e-6)).any()  # some targets kept their closed-form bound
    for eta in (0.1, 0.2):
        assert (coupling_noise_scale(d_lazy, eta, train_fraction=0.5).noise_scale
                == coupling_noise_scale(d_full, eta, train_fraction=0.5).noise_scale)


@pytest.mark.parametrize("seed", range(20))
def test_eta_upper_is_the_tight_one_once_upper_open_names_no_target(seed):
    # Brute force: grow a random mask as the passes do; when the scale is settled and
    # upper_open names no target, eta_upper is the tight distances' to the last digit.
    rng = np.random.default_rng(200 + seed)
    tight, loose, _ = _model(seed, n=120, m=120, inf_rows=0)
    mask = rng.random(120) < rng.uniform(0.05, 0.5)
    binding = BindingTargets([0.15], 0.9)
    for _ in range(10):
        mixed = np.where(mask[:, None, None], tight, loose)
        ok, scales = binding.settled(mixed, 0.5, mask)
        more = binding.upper_open(mixed, 0.5, mask, scales) if ok else binding.near(mixed, 0.5, scales, 0.85)
        if ok and not more.any():
            break
        mask |= more
    else:
        pytest.fail("the passes did not settle")
    got = coupling_noise_scale(mixed, 0.15, confidence=0.9)
    want = coupling_noise_scale(tight, 0.15, confidence=0.9)
    assert (got.noise_scale, got.eta_upper) == (want.noise_scale, want.eta_upper)
    assert not mask.all()
