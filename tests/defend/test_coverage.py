"""Issue 31, item 4: what the wrapper says must not depend on which rows were drawn."""

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skmip import MIPNoiseWrapper
from skmip.calibration.routes import CouplingRoute, MomentsRoute
from skmip.defend._coverage import ClassCoverage, class_coverage, miss_probability


def _singleton_class_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    y[0] = 2  # a class of one row: D_train lacks it exactly when row 0 is not a member
    return X, y


def test_a_class_of_one_row_is_refused_the_same_way_for_every_draw():
    """The issue's case: the exception type (ValueError when D_train missed the row,
    MissingClassError when a calibration subset did) told membership 60 times in 60. Now the
    refusal is decided from D before the draw: one type, one message, for 40 draws."""
    X, y = _singleton_class_data()
    seen = set()
    for seed in range(40):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning
            with pytest.raises(ValueError) as info:
                MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, method=CouplingRoute(n_rounds=50), random_state=seed).fit(X, y)
        seen.add((type(info.value), str(info.value)))
    assert len(seen) == 1
    (kind, text), = seen
    assert kind is ValueError and "before D_train is drawn" in text and "2: 1" in text


@pytest.mark.os_entropy
def test_the_refusal_is_the_same_with_fresh_entropy():
    """random_state=None (the release path): the same text as with a fixed seed."""
    X, y = _singleton_class_data()
    texts = set()
    for random_state in (None, None, 7):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ValueError) as info:
                MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, method="coupling", random_state=random_state).fit(X, y)
        texts.add(str(info.value))
    assert len(texts) == 1


@pytest.mark.parametrize("n, counts, size", [(30, (15, 15), 15), (30, (10, 10, 10), 15), (60, (30, 29, 1), 30),
                                             (12, (6, 6), 6), (40, (34, 6), 20)])
def test_miss_probability_bounds_the_exact_union_from_above(n, counts, size):
    y = np.repeat(np.arange(len(counts)), counts)
    exact = sum(Fraction(math.comb(n - m, size), math.comb(n, size)) for m in counts)
    bound = miss_probability(y, size)
    assert Fraction(bound) >= min(exact, 1)
    assert bound <= float(exact) * (1 + 1e-9)


def test_no_class_can_be_missed_when_each_is_larger_than_the_rest():
    assert miss_probability([0] * 9 + [1], 10) == 0.0  # every 10-subset is all of D
    assert miss_probability([0] * 8 + [1] * 2, 9) == 0.0


def test_the_calibration_eta_and_the_stated_levels_are_rounded_outward():
    coverage = ClassCoverage(slack=1e-60, miss=5e-61, message="m")
    for eta in (0.1, 0.3, 0.05):
        cal = coverage.calibration_eta(eta)
        assert cal < eta and Fraction(cal) + Fraction(1e-60) <= Fraction(eta)
        stated = coverage.stated(cal)
        assert stated <= eta and Fraction(stated) >= Fraction(cal) + Fraction(1e-60)
    assert ClassCoverage().calibration_eta(0.1) == 0.1 and ClassCoverage().stated(None) is None


def _Wrapper(train_size=0.5):
    return MIPNoiseWrapper(LogisticRegression(), train_size=train_size)


def _route(sigma_from="dataset", n_subsets=4):
    return MomentsRoute(sigma_from=sigma_from, n_subsets=n_subsets)


def test_the_residual_refusal_names_d_only():
    """Three classes of 10 rows, k = 15: delta = 6.0e-4 is paid in the calibration; a D_train
    that lacks a class is refused in one wording, whichever class and rows it lacks."""
    y = np.repeat([0, 1, 2], 10)
    coverage = class_coverage("W", _Wrapper(), _route(n_subsets=128), y, 15, [0.2])
    assert coverage.slack == pytest.approx(2 * 3 * math.comb(20, 15) / math.comb(30, 15), rel=1e-9)
    assert coverage.slack >= 2 * coverage.miss
    texts = set()
    for rows in (np.r_[0:10, 10:15], np.r_[10:25], np.r_[0:5, 20:30]):
        with pytest.raises(ValueError) as info:
            coverage.check_subset(y[rows], np.unique(y))
        texts.add(str(info.value))
    assert len(texts) == 1 and "accounts for it" in texts.pop()
    coverage.check_subset(y[np.r_[0:5, 10:15, 20:25]], np.unique(y))  # every class: no refusal


def test_halves_of_d_train_are_paid_for_with_sigma_from_train():
    y = np.repeat([0, 1, 2], 30)
    dataset = class_coverage("W", _Wrapper(), _route(n_subsets=4), y, 45, [0.4])
    train = class_coverage("W", _Wrapper(), _route("train", 4), y, 45, [0.4])
    half = miss_probability(y, 22)
    assert train.slack == pytest.approx(dataset.slack + 8 * half * 2, rel=1e-9)  # 2B halves, / max(q, 1-q)
    assert class_coverage("W", _Wrapper(train_size=1.0), _route(n_subsets=4), y, 90, [0.4]).slack == 0.0
    with pytest.raises(ValueError, match="costs 1.83 of eta"):  # halves of 7 rows of 3 x 10
        class_coverage("W", _Wrapper(), _route("train", 4), np.repeat([0, 1, 2], 10), 15, [0.4])


def test_a_certified_fit_with_a_rare_class_states_eta_with_the_slack_paid():
    """48 and 12 rows, k = 30: a random D_train lacks the rare class with probability 6.2e-5, so
    delta = 1.2e-4 is paid: the noise is calibrated to eta - delta and the stated upper level,
    delta included, still meets eta."""
    rng = np.random.default_rng(3)
    y = np.repeat([0, 1], [48, 12])
    X = rng.normal(size=(60, 2)) + 2 * y[:, None]
    coverage = class_coverage("W", _Wrapper(), _route(n_subsets=128), y, 30, [0.3])
    exact = Fraction(math.comb(48, 30), math.comb(60, 30))
    assert Fraction(coverage.miss) >= exact and coverage.slack == pytest.approx(2 * float(exact), rel=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, n_rounds=200, random_state=0).fit(X, y)
    assert model.mip_bound_ == 0.3 and model.coupling_certified_
    assert model.coupling_eta_upper_ <= 0.3
    assert model.coupling_eta_upper_ - coverage.slack <= coverage.calibration_eta(0.3)


def test_a_class_with_zero_weight_everywhere_is_refused_naming_sample_weight():
    """Issue 31, item 11 (and scikit-learn's check_classifiers_one_label_sample_weights): zero
    weight on every row of a class gave 'the objective's Hessian at the fit is not positive
    definite'. Now: decided from D, naming sample_weight and the fix."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1], 20)
    X = rng.normal(size=(40, 2)) + y[:, None]
    weight = (y == 0).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"class 1 has a total sample_weight of 0 \(20 rows\)"):
            MIPNoiseWrapper(LogisticRegression(), n_rounds=50, random_state=0).fit(X, y, sample_weight=weight)
