"""The certification of a batch of fits at once (skmip.calibration.swap.stacked_certifier)
against each fit certified alone (skmip.calibration.swap.pair_certifier).

Both evaluate each pair's bounds with its own fit's formula; the stacks only change how many
numpy calls do it, so the two agree to rounding (measured: equal but for 2 of 85,200 values
on breast cancer, larger by 5e-16; docs/coupling.md, "Certifying a batch of fits at once").
"""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skmip.calibration.swap import batched, estimate_swap_deltas
from skmip.calibration.swap.influence import _assemble_sq, _norms, _pair_coefficients
from skmip.calibration.swap.pair_certifier import PairCertifier
from skmip.calibration.swap.stacked_certifier import StackCertifier

#: Rounding of a sum taken in another order (a few ulps of distances of order 1).
RTOL = 1e-12


def _data():
    """151 rows of standardized breast cancer (k = 90: fits of a few hundred loose pairs)."""
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[:151], y[:151]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_batch_certified_at_once_equals_its_fits_certified_one_by_one(lazy, monkeypatch):
    X, y = _data()
    init = StackCertifier.__init__
    seen = {"fits": 0, "loose": 0}

    def spy_init(self, glm, theta, reg0, P, Hinv, H, residual, whitener, index, *args, **kw):
        init(self, glm, theta, reg0, P, Hinv, H, residual, whitener, index, *args, **kw)
        if lazy:  # lazy certification: the later stages for every third target only
            self.targets = np.arange(glm.features.shape[0]) % 3 == 0
        shared = {}  # both sides solve exactly in the same order, from empty caches
        self.cache = {}
        self.alone = [PairCertifier(glm, theta[b], reg0[b], P, Hinv[b], H[b], residual[b], whitener, index,
                                    cache=shared, targets=self.targets) for b in range(H.shape[0])]

    def checked(cert, side, whitener, fit):
        pe, px, glm = side
        c_e, c_x, det = _pair_coefficients(pe, px, glm, True, cross=False, details=True)
        dist = np.sqrt(_assemble_sq([(pe, px, c_e, c_x)], False, whitener.diagonal))
        bound = cert.bound(dist, _norms(pe), _norms(px), c_e, c_x, det, pe["rows"], px["rows"], fit=fit)
        out = cert.tighten(dist, bound, px["rows"], pe["rows"], c_e, c_x, det, fit=fit)
        for b, alone in enumerate(cert.alone):
            part = fit[:, 0] == b
            sub = lambda d: {key: value[part] for key, value in d.items()}  # noqa: E731
            pe_b, px_b = sub(pe), sub(px)
            c_e_b, c_x_b, det_b = _pair_coefficients(pe_b, px_b, glm, True, cross=False, details=True)
            dist_b = np.sqrt(_assemble_sq([(pe_b, px_b, c_e_b, c_x_b)], False, whitener.diagonal))
            bound_b = alone.bound(dist_b, _norms(pe_b), _norms(px_b), c_e_b, c_x_b, det_b, pe_b["rows"],
                                  px_b["rows"])
            np.testing.assert_array_equal(bound_b, bound[part])  # the closed form: elementwise
            seen["loose"] += int(alone._loose(dist_b, bound_b, alone._floor(dist_b)).sum())
            np.testing.assert_allclose(alone.tighten(dist_b, bound_b, px_b["rows"], pe_b["rows"], c_e_b, c_x_b,
                                                     det_b), out[part], rtol=RTOL)
            seen["fits"] += 1
        return out

    monkeypatch.setattr(StackCertifier, "__init__", spy_init)
    monkeypatch.setattr(batched, "_certified_matched", checked)
    d = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, scale=np.full(31, 0.05), train_size=90, n_rounds=12,
                             random_state=5, polish=True)
    assert np.isfinite(d.distances).all()
    assert seen["fits"] >= 12 and seen["loose"] > 0  # batches of several fits, with loose pairs


@pytest.mark.parametrize("count", [213, 8])
def test_fit_floors_along_an_axis_equal_the_fit_by_fit_medians(count):
    # The batched rounds' fits have equal counts of pairs: one median along an axis, which
    # must be each fit's PairCertifier._floor to every bit (a floor decides which pairs the
    # later stages take); otherwise (a non-finite distance) fit by fit.
    rng = np.random.default_rng(count)
    flat = rng.lognormal(size=5 * count)
    ends = np.arange(6) * count
    cert = object.__new__(StackCertifier)
    alone = np.array([PairCertifier._floor(flat[a:b]) for a, b in zip(ends[:-1], ends[1:])])
    np.testing.assert_array_equal(cert._floors(flat, ends), alone)
    flat[3] = np.inf
    alone[0] = PairCertifier._floor(flat[:count])
    np.testing.assert_array_equal(cert._floors(flat, ends), alone)
