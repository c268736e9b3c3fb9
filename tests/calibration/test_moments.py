"""Tests of skmip.calibration.spread.moments: the streaming central-moment accumulator and estimate_sigma."""

from __future__ import annotations

import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.datasets import load_breast_cancer
from sklearn.dummy import DummyRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skmip.calibration.spread.moments import CentralMomentAccumulator, estimate_sigma
from skmip.calibration.spread.subsets import draw_split_seeds, rows_by_choice

# ---------------------------------------------------------------------------------------
# Reference: a two-pass computation whose first pass is exact.
#
# A plain numpy two-pass computation centres on the float nearest the mean. For data such as
# 1e8 + N(0, 1) that float is up to ulp(1e8)/2 ~ 7e-9 away from the true mean, which moves
# the 6th central moment by up to ~6 * 7e-9 * |m_5| / m_6, i.e. ~1e-8 relative: numpy's own
# two-pass answer is not good to 1e-9 there. So the reference computes the mean in exact
# rational arithmetic, rounds each deviation x_i - mean once, and finishes with numpy:
# relative error ~ M * n * 2**-53, far below the 1e-9 asserted.
# ---------------------------------------------------------------------------------------


def exact_mean(x):
    return np.array([float(sum(map(Fraction, col)) / len(col)) for col in x.T.tolist()])


def reference_moment(x, moment):
    out = []
    for col in x.T.tolist():
        mean = sum(map(Fraction, col)) / len(col)
        dev = np.array([float(Fraction(v) - mean) for v in col])
        out.append(np.mean(np.abs(dev) ** moment))
    return np.array(out)


LAWS = {
    "normal": lambda rng, size: rng.standard_normal(size),
    "exponential": lambda rng, size: rng.exponential(size=size),  # skewed: odd moments != 0
    "student3": lambda rng, size: rng.standard_t(3, size=size),  # heavy tails
}


@st.composite
def samples(draw, max_rows=40):
    n = draw(st.integers(1, max_rows))
    d = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    offset = draw(st.sampled_from([0.0, 1e8, -1e8, 3.5e4]))
    scale = draw(st.sampled_from([1.0, 1e-3, 1e3]))
    law = draw(st.sampled_from(sorted(LAWS)))
    return offset + scale * LAWS[law](rng, (n, d))


def fold(data, x, make):
    """Feed the rows of ``x`` to accumulators in a random partition (as 1-D rows or 2-D
    batches, in a random row order) and merge them in a random order and direction."""
    n = x.shape[0]
    order = data.draw(st.permutations(range(n)))
    cuts = sorted(data.draw(st.sets(st.integers(1, n - 1), max_size=6))) if n > 1 else []
    pieces = np.split(np.asarray(order, dtype=int), cuts)
    accs = []
    for rows in pieces:
        acc = make()
        if data.draw(st.booleans()):
            for r in rows:
                acc.update(x[r])
        else:
            acc.update(x[rows])
        accs.append(acc)
    while len(accs) > 1:
        i = data.draw(st.integers(0, len(accs) - 1))
        a = accs.pop(i)
        j = data.draw(st.integers(0, len(accs) - 1))
        accs[j] = accs[j].merge(a) if data.draw(st.booleans()) else a.merge(accs[j])
    return accs[0]


@settings(max_examples=80, deadline=None)
@given(data=st.data(), x=samples(), moment=st.sampled_from([2, 4, 6]))
def test_even_moment_any_partition_and_merge_order(data, x, moment):
    acc = fold(data, x, lambda: CentralMomentAccumulator(moment=moment))
    assert acc.n_ == x.shape[0]
    np.testing.assert_allclose(acc.central_moment(), reference_moment(x, moment), rtol=1e-9, atol=0)
    # The mean is good to a few ulps of the larger of |mean| and the spread.
    spread = np.ptp(x, axis=0)
    tol = 8 * np.finfo(float).eps * (np.abs(exact_mean(x)) + spread)
    assert np.all(np.abs(acc.mean_ - exact_mean(x)) <= tol)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), x=samples(), moment=st.one_of(st.sampled_from([2.5, 3, 5]), st.floats(2, 7)))
def test_two_pass_any_real_moment(data, x, moment):
    first = fold(data, x, lambda: CentralMomentAccumulator(moment=2))
    second = fold(data, x, lambda: CentralMomentAccumulator(moment=moment, center=first))
    np.testing.assert_allclose(second.central_moment(), reference_moment(x, moment), rtol=1e-9, atol=0)
    np.testing.assert_allclose(
        second.sigma(), reference_moment(x, moment) ** (1 / moment), rtol=1e-9, atol=0
    )


@settings(max_examples=40, deadline=None)
@given(data=st.data(), x=samples(), moment=st.floats(2, 7))
def test_fixed_array_center_matches_numpy(data, x, moment):
    # About an arbitrary fixed point every term is positive: a direct numpy sum is accurate.
    center = x[0] + 1.5 * np.ptp(x, axis=0)
    acc = fold(data, x, lambda: CentralMomentAccumulator(moment=moment, center=center))
    np.testing.assert_allclose(
        acc.central_moment(), np.mean(np.abs(x - center) ** moment, axis=0), rtol=1e-9, atol=0
    )


def test_plain_numpy_two_pass_agrees_at_moderate_offsets(rng):
    x = 3.0 + rng.standard_normal((500, 4)) * [1.0, 1e-3, 10.0, 0.5]
    for moment in (2, 4, 6):
        acc = CentralMomentAccumulator(moment=moment)
        for chunk in np.array_split(x, 7):
            acc.merge(CentralMomentAccumulator(moment=moment).update(chunk))
        expected = np.mean((x - x.mean(axis=0)) ** moment, axis=0)
        np.testing.assert_allclose(acc.central_moment(), expected, rtol=1e-9, atol=0)
        np.testing.assert_allclose(acc.sigma(), expected ** (1 / moment), rtol=1e-9, atol=0)


def test_large_offset_is_exact_where_a_rounded_center_is_not():
    x = 1e8 + np.random.default_rng(0).standard_normal((50, 3))
    acc = CentralMomentAccumulator(moment=6)
    for row in x:
        acc.update(row)
    np.testing.assert_allclose(acc.central_moment(), reference_moment(x, 6), rtol=1e-14, atol=0)


def test_merge_leaves_other_unchanged_and_empty_merges_are_no_ops(rng):
    x = rng.standard_normal((10, 2))
    a = CentralMomentAccumulator(moment=4).update(x[:5])
    b = CentralMomentAccumulator(moment=4).update(x[5:])
    b_state = pickle.dumps(b)
    a.merge(b)
    assert pickle.dumps(b) == b_state
    before = a.central_moment().copy()
    a.merge(CentralMomentAccumulator(moment=4))
    a.update(np.empty((0, 2)))
    np.testing.assert_array_equal(a.central_moment(), before)
    empty = CentralMomentAccumulator(moment=4).merge(a)
    np.testing.assert_array_equal(empty.central_moment(), before)
    assert empty.n_ == 10
    # Merging an accumulator into itself counts every row twice: same central moment.
    np.testing.assert_allclose(a.merge(a).central_moment(), before, rtol=1e-12)
    assert a.n_ == 20


def test_pickle_round_trip_keeps_state(rng):
    x = rng.standard_normal((20, 3))
    acc = CentralMomentAccumulator(moment=4).update(x[:12])
    clone = pickle.loads(pickle.dumps(acc))
    acc.update(x[12:])
    clone.update(x[12:])
    np.testing.assert_array_equal(acc.central_moment(), clone.central_moment())
    first = CentralMomentAccumulator(moment=2).update(x)
    second = pickle.loads(pickle.dumps(CentralMomentAccumulator(moment=2.5, center=first)))
    second.merge(CentralMomentAccumulator(moment=2.5, center=first).update(x))
    assert second.n_ == 20


def test_single_row_has_zero_spread():
    acc = CentralMomentAccumulator(moment=2).update([5.0, -1.0])
    np.testing.assert_array_equal(acc.central_moment(), [0.0, 0.0])
    np.testing.assert_array_equal(acc.mean_, [5.0, -1.0])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"moment": 1.5}, ValueError, r"moment must be in \[2"),
        ({"moment": float("inf")}, ValueError, "finite"),
        ({"moment": "2"}, TypeError, "moment must be a real number"),
        ({"moment": 3}, ValueError, "not an even integer.*center="),
        ({"moment": 2.5}, ValueError, "not an even integer"),
        ({"moment": 3, "center": [[1.0]]}, ValueError, "1-D vector.*shape \\(1, 1\\)"),
        ({"moment": 3, "center": [1.0, np.nan]}, ValueError, "NaN or inf"),
    ],
)
def test_accumulator_constructor_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        CentralMomentAccumulator(**kwargs)


def test_accumulator_usage_errors():
    acc = CentralMomentAccumulator(moment=2)
    with pytest.raises(ValueError, match="no rows have been folded in"):
        acc.central_moment()
    assert not hasattr(acc, "mean_")
    with pytest.raises(ValueError, match="holds no data"):
        CentralMomentAccumulator(moment=3, center=acc)
    acc.update([1.0, 2.0])
    with pytest.raises(ValueError, match="3 coordinates but .* length 2"):
        acc.update([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="NaN or infinite"):
        acc.update([np.nan, 1.0])
    with pytest.raises(ValueError, match="shape \\(1, 1, 2\\)"):
        acc.update(np.zeros((1, 1, 2)))
    with pytest.raises(ValueError, match="cannot merge moment=4"):
        acc.merge(CentralMomentAccumulator(moment=4).update([1.0, 2.0]))
    with pytest.raises(ValueError, match="3 coordinates"):
        acc.merge(CentralMomentAccumulator(moment=2).update([1.0, 2.0, 3.0]))
    with pytest.raises(TypeError, match="takes another"):
        acc.merge(np.zeros(2))
    with pytest.raises(ValueError, match="different centers"):
        CentralMomentAccumulator(moment=3, center=[0.0, 0.0]).merge(
            CentralMomentAccumulator(moment=3, center=[0.0, 1.0])
        )
    with pytest.raises(ValueError, match="different centers"):
        CentralMomentAccumulator(moment=2, center=[0.0, 0.0]).merge(acc)


# ---------------------------------------------------------------------------------------
# estimate_sigma
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def brute_force(estimator, X, y, n_subsets, moment, random_state, train_size=0.5, params=None):
    """Algorithm 1's loop, written out: B fits kept in memory, then the moments."""
    n = X.shape[0]
    m = int(np.floor(train_size * n)) if isinstance(train_size, float) else train_size
    thetas = []
    for seed in draw_split_seeds(random_state, n_subsets):
        rows = rows_by_choice(seed, n, m)
        fitted = estimator.__class__(**estimator.get_params())
        fitted.fit(X[rows], y[rows]) if y is not None else fitted.fit(X[rows])
        thetas.append(
            np.concatenate([np.ravel(getattr(fitted, a)) for a in (params or ["coef_", "intercept_"])])
        )
    thetas = np.array(thetas)
    mean = thetas.mean(axis=0)
    return np.mean(np.abs(thetas - mean) ** moment, axis=0) ** (1 / moment), mean


@pytest.mark.parametrize("moment", [2, 3, 4])
def test_matches_brute_force_on_breast_cancer(cancer, moment):
    X, y = cancer
    est = LogisticRegression(max_iter=500)
    sigma, mean = estimate_sigma(
        est, X, y, n_subsets=16, moment=moment, random_state=3, return_mean=True
    )
    expected_sigma, expected_mean = brute_force(est, X, y, 16, moment, 3)
    assert sigma.shape == (31,)
    np.testing.assert_allclose(sigma, expected_sigma, rtol=1e-9, atol=0)
    np.testing.assert_allclose(mean, expected_mean, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("moment", [2, 3])
def test_bit_identical_for_n_jobs_1_and_2(cancer, moment):
    X, y = cancer
    runs = [
        estimate_sigma(
            LogisticRegression(max_iter=500), X, y, n_subsets=20, moment=moment,
            random_state=7, n_jobs=n_jobs, return_mean=True,
        )
        for n_jobs in (1, 2)
    ]
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


@pytest.mark.parametrize("train_size, m", [(0.5, 50), (30, 30)])
def test_subsets_are_uniform_without_replacement(train_size, m):
    # Mean of a simple random sample of m of n values: Var = s^2 / m * (n - m) / (n - 1),
    # s^2 the population variance (1/n). With replacement it would be s^2 / m: 41 % larger
    # sd for m = n/2, far outside the tolerance below.
    n, n_subsets = 100, 512
    y = np.arange(float(n))
    exact = np.sqrt(y.var() / m * (n - m) / (n - 1))
    sigma = estimate_sigma(
        DummyRegressor(), np.zeros((n, 1)), y, n_subsets=n_subsets, params=["constant_"],
        train_size=train_size, random_state=11,
    )
    # Standard error of a sample sd over B draws of a near-normal statistic: sd / sqrt(2B).
    assert abs(sigma[0] - exact) < 4 * exact / np.sqrt(2 * n_subsets)


def test_unsupervised_estimator_and_moment_normalisation(rng):
    # StandardScaler.mean_ is the column mean: y=None path, params given by name.
    X = rng.standard_normal((60, 3)) * [1.0, 2.0, 5.0] + 10.0
    sigma = estimate_sigma(StandardScaler(), X, n_subsets=10, params=["mean_"], random_state=0)
    expected, _ = brute_force(StandardScaler(), X, None, 10, 2, 0, params=["mean_"])
    np.testing.assert_allclose(sigma, expected, rtol=1e-9, atol=0)


def test_per_row_fit_params_are_subset(rng):
    n = 40
    y = rng.standard_normal(n)
    w = rng.uniform(0.5, 2.0, n)
    sigma = estimate_sigma(
        DummyRegressor(), np.zeros((n, 1)), y, n_subsets=12, params=["constant_"],
        random_state=5, fit_params={"sample_weight": w},
    )
    means = np.array(
        [np.average(y[r], weights=w[r]) for r in (rows_by_choice(s, n, n // 2) for s in draw_split_seeds(5, 12))]
    )
    np.testing.assert_allclose(sigma, [np.sqrt(np.mean((means - means.mean()) ** 2))], rtol=1e-9)


def test_verbose_reports_progress(cancer, capsys):
    X, y = cancer
    estimate_sigma(LogisticRegression(), X, y, n_subsets=4, moment=3, random_state=0, verbose=1)
    out = capsys.readouterr().out
    assert "estimate_sigma: 4/4 split fits (pass 1 of 2: mean)" in out
    assert "estimate_sigma: 4/4 split fits (pass 2 of 2: |theta - mean|^3)" in out
    estimate_sigma(LogisticRegression(), X, y, n_subsets=4, random_state=0)
    assert capsys.readouterr().out == ""


# -- error paths --------------------------------------------------------------------------


class UniqueValues(BaseEstimator):
    """A statistic whose parameter vector length depends on the data (the distinct values)."""

    def fit(self, X, y=None):
        self.values_ = np.unique(np.asarray(X)[:, 0])
        return self


class FailsOnRow(RegressorMixin, BaseEstimator):
    """Raises when its subset contains row ``bad`` (marked by X[:, 0] == -1)."""

    def __init__(self, nan=False):
        self.nan = nan

    def fit(self, X, y=None):
        if np.any(X[:, 0] == -1):
            if self.nan:
                self.coef_ = np.array([np.nan])
                return self
            raise ZeroDivisionError("boom")
        self.coef_ = np.array([X[:, 0].mean()])
        return self


def _data(n=20):
    X = np.arange(float(n)).reshape(-1, 1)
    return X, X[:, 0].copy()


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"moment": 1.5}, ValueError, r"estimate_sigma: moment must be in \[2"),
        ({"moment": np.inf}, ValueError, "moment must be a finite"),
        ({"n_subsets": 1}, ValueError, r"n_subsets must be in \[2, inf\]; got 1"),
        ({"n_subsets": 2.0}, TypeError, "n_subsets must be an integer"),
        ({"train_size": 1.0}, ValueError, r"train_size must be in \(0, 1\)"),
        ({"train_size": 0.0}, ValueError, r"train_size must be in \(0, 1\)"),
        ({"train_size": 20}, ValueError, r"train_size must be in \[2, 19\]; got 20"),
        ({"train_size": 0.05}, ValueError, "gives 1 row.*at least 2 rows"),
    ],
)
def test_parameter_errors(kwargs, error, match):
    X, y = _data()
    with pytest.raises(error, match=match):
        estimate_sigma(DummyRegressor(), X, y, params=["constant_"], **{"n_subsets": 4, **kwargs})


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_data(bad):
    X, y = _data()
    X[3, 0] = bad
    with pytest.raises(ValueError, match="X contains 1 NaN or infinite"):
        estimate_sigma(DummyRegressor(), X, y, params=["constant_"], n_subsets=4)
    X, y = _data()
    y[0] = bad
    with pytest.raises(ValueError, match="y contains 1 NaN or infinite"):
        estimate_sigma(DummyRegressor(), X, y, params=["constant_"], n_subsets=4)


def test_too_few_rows_and_length_mismatch():
    X, y = _data(3)
    with pytest.raises(ValueError, match="train_size=0.5 of n=3 rows gives 1 row"):
        estimate_sigma(DummyRegressor(), X, y, params=["constant_"], n_subsets=4)
    X, y = _data(10)
    with pytest.raises(ValueError, match="X has 10 rows but y has 9"):
        estimate_sigma(DummyRegressor(), X, y[:9], params=["constant_"], n_subsets=4)


class RecordsClasses(ClassifierMixin, BaseEstimator):
    seen = []

    def fit(self, X, y):
        RecordsClasses.seen.append(frozenset(np.unique(y).tolist()))
        self.coef_ = np.array([float(len(y))])
        return self


def test_a_split_missing_a_class_is_redrawn():
    """Issue 31, item 9: a split lacking class 2 (one row in 40, so about half of the splits)
    is redrawn until it holds it (rejection: uniform among the splits that hold every class),
    instead of stopping the estimate."""
    X = np.zeros((40, 1))
    y = np.array([0] * 20 + [1] * 19 + [2])
    RecordsClasses.seen = []
    estimate_sigma(RecordsClasses(), X, y, n_subsets=16, params=["coef_"], random_state=0)
    assert RecordsClasses.seen == [frozenset({0, 1, 2})] * 16


@pytest.mark.parametrize("n_subsets", [16, 40])  # one split per chunk; several per chunk
def test_parameter_length_changing_between_splits(n_subsets):
    X = np.repeat(np.arange(12.0), 2).reshape(-1, 1)
    with pytest.raises(
        ValueError,
        match=rf"split \d+ of {n_subsets} gave \d+ parameters but split \d+ gave \d+\..*fixed-size",
    ):
        estimate_sigma(UniqueValues(), X, n_subsets=n_subsets, params=["values_"], random_state=0)


def test_failing_fit_names_the_split():
    X, y = _data()
    X[7, 0] = -1
    with pytest.raises(RuntimeError, match=r"the fit on split \d+ of 8 \(10 rows\) failed: ZeroDivisionError: boom") as info:
        estimate_sigma(FailsOnRow(), X, y, n_subsets=8, params=["coef_"], random_state=0)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_non_finite_parameters_name_the_split():
    X, y = _data()
    X[7, 0] = -1
    with pytest.raises(ValueError, match=r"split \d+ of 8 gave NaN or infinite parameters"):
        estimate_sigma(FailsOnRow(nan=True), X, y, n_subsets=8, params=["coef_"], random_state=0)


@pytest.mark.parametrize("fmt", ["coo", "dok", "lil", "csc"])
def test_sparse_inputs_of_any_format(fmt):
    from scipy import sparse
    from sklearn.linear_model import Ridge

    X = sparse.random(40, 3, density=0.5, format="csr", random_state=0)
    y = np.asarray(X.sum(axis=1)).ravel() + np.linspace(-1, 1, 40)
    kwargs = dict(n_subsets=6, random_state=0)
    expected = estimate_sigma(Ridge(), X, y, **kwargs)
    np.testing.assert_array_equal(estimate_sigma(Ridge(), X.asformat(fmt), y, **kwargs), expected)
    X.data[2] = np.nan
    with pytest.raises(ValueError, match="X contains 1 NaN or infinite"):
        estimate_sigma(Ridge(), X.asformat(fmt), y, **kwargs)


def test_the_names_before_0_2_still_work_with_a_warning():
    """n_splits / split_size (0.1) are n_subsets / train_size: same draws, same sigma."""
    X, y = np.zeros((40, 1)), np.arange(40.0)
    kw = dict(params=["constant_"], random_state=5)
    new = estimate_sigma(DummyRegressor(), X, y, n_subsets=6, train_size=0.25, **kw)
    with pytest.warns(FutureWarning) as record:
        old = estimate_sigma(DummyRegressor(), X, y, n_splits=6, split_size=0.25, **kw)
    assert {str(w.message).split(":")[1].split(" was")[0].strip() for w in record} == {"n_splits", "split_size"}
    assert np.array_equal(new, old)
    with pytest.raises(ValueError, match="n_splits=6 and n_subsets=8 were both set"):
        estimate_sigma(DummyRegressor(), X, y, n_subsets=8, n_splits=6, **kw)
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match=r"split_size must be in \(0, 1\)"):
        estimate_sigma(DummyRegressor(), X, y, split_size=1.5, **kw)
