"""The rounds' compact store: half precision rounded up keeps every bound (compact.py)."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skmip.bounds import coupling_noise_scale
from skmip.calibration.swap import batched as batched_rounds
from skmip.calibration.swap import estimate
from skmip.calibration.swap import estimate_swap_deltas
from skmip.calibration.swap.compact import CompactDistances, encode_rounds


def _decode(codes, exponents):
    store = CompactDistances(*codes.shape)
    store.put(0, codes, exponents)
    return store


def test_encoded_values_bound_the_values_within_the_half_precision_step():
    rng = np.random.default_rng(0)
    values = np.exp(rng.uniform(-30, 8, size=(500, 6, 2)))  # many orders of magnitude
    values[0, 0, 0], values[1, 2, 1], values[2, 3] = 0.0, np.inf, 1e-300
    codes, exponents = encode_rounds(values)
    decoded = np.asarray(_decode(codes, exponents))
    assert decoded.dtype == np.float64 and decoded.shape == values.shape
    assert np.all(decoded >= values)  # every stored value is an upper bound
    assert decoded[0, 0, 0] == 0.0 and np.isinf(decoded[1, 2, 1])
    # Each round's largest finite value is scaled to [2**14, 2**15): no overflow.
    top = np.array([values[:, r][np.isfinite(values[:, r])].max() for r in range(6)])
    assert np.all((top * np.exp2(exponents) >= 2.0**14) & (top * np.exp2(exponents) < 2.0**15))
    # Within 2**-10 relative where the scaled value is a normal half float ...
    unit = np.broadcast_to(np.exp2(-exponents)[None, :, None], values.shape)
    finite = np.isfinite(values)
    normal = finite & (values >= unit * 2.0**-14)
    assert np.all(decoded[normal] <= values[normal] * (1 + 2.0**-10))
    # ... and within the subnormal step below it (absolute: 2**-24 in scaled units).
    small = finite & ~normal
    assert small.sum() > 100  # the case is exercised
    assert np.all(decoded[small] - values[small] <= unit[small] * 2.0**-24)
    # Indexing targets decodes the same rows.
    store = _decode(codes, exponents)
    np.testing.assert_array_equal(store[np.array([3, 1])], decoded[[3, 1]])


def test_encoding_refuses_nan_and_negative_values():
    for bad in (np.nan, -1.0):
        values = np.ones((3, 2, 1))
        values[1, 1, 0] = bad
        with pytest.raises(ValueError, match="NaN or negative"):
            encode_rounds(values)


def test_compact_rounds_bound_the_distances_and_the_noise_scale(monkeypatch):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    kwargs = dict(scale=np.full(5, 0.05), n_rounds=80, polish=True, random_state=3)
    exact = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, **kwargs)
    monkeypatch.setattr(estimate, "COMPACT_VALUES", 0)  # store these small rounds compact
    stored = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, **kwargs)
    assert isinstance(stored.distances, CompactDistances) and isinstance(exact.distances, np.ndarray)
    assert stored.distances.nbytes < exact.distances.nbytes / 3
    decoded = np.asarray(stored.distances)
    assert np.all(decoded >= exact.distances)
    assert np.all(decoded <= exact.distances * (1 + 2.0**-10))
    # Larger draws give a bound no smaller: the calibrated scale is at least the exact one,
    # and at most one step of the search grid (2**(1/128)) above 2**-10 more.
    a = coupling_noise_scale(exact.distances, 0.2, train_fraction=exact.train_fraction)
    b = coupling_noise_scale(stored.distances, 0.2, train_fraction=stored.train_fraction)
    assert a.noise_scale <= b.noise_scale <= a.noise_scale * (1 + 2.0**-10) * 2 ** (1 / 128)
    assert b.eta_upper <= 0.2
    # The point estimate and the blockwise reads agree with the decoded array's.
    c = coupling_noise_scale(decoded, 0.2, train_fraction=stored.train_fraction)
    assert (c.noise_scale, c.eta_upper, c.eta_point) == (b.noise_scale, b.eta_upper, b.eta_point)


@pytest.mark.parametrize("batched", [True, False])  # stacked fits; fit by fit, streamed
def test_threads_give_the_sequential_rounds_bit_for_bit(batched, monkeypatch):
    # The rounds run in threads that share the fitter; each job keeps its own cache of exact
    # solves (the outliers' pairs fall back to them), so the result cannot depend on timing.
    rng = np.random.default_rng(2)
    X = rng.normal(size=(240, 3))
    X[:4] *= 30.0  # high-leverage rows: some pairs need the exact solves (85 of them here)
    y = (X[:, 0] + rng.normal(size=240) > 0).astype(int)
    monkeypatch.setattr(estimate, "COMPACT_VALUES", 0)
    monkeypatch.setattr(batched_rounds, "_ENABLED", batched)
    kwargs = dict(scale=np.full(4, 0.05), n_rounds=24, polish=True, random_state=5)
    one = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, n_jobs=1, **kwargs)
    two = estimate_swap_deltas(LogisticRegression(C=1.0), X, y, n_jobs=2, **kwargs)
    assert one.certified and two.certified
    np.testing.assert_array_equal(two.distances.codes, one.distances.codes)
    np.testing.assert_array_equal(two.distances.exponents, one.distances.exponents)
