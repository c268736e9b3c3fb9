"""Issue 31, item 3: a release that did not learn never carries a promise silently."""

import copy
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, Ridge

from skmip import MIPNoiseWrapper
from skmip.defend._learned import check_releases
from skmip.exceptions import DegenerateReleaseWarning, TrainingFailedError
from skmip.params.learned import CONSTANT_RTOL, is_constant_output


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(200, 5, random_state=0)
    return (X - X.mean(0)) / X.std(0), y


@pytest.mark.parametrize("scale", [1e-8, 1e-30, 1e-300])
def test_features_too_small_to_learn_from_are_refused_before_the_draw(data, scale):
    """The issue's case: LogisticRegression(C=0.1) on features scaled by 1e-8 converges to a
    model whose probabilities differ by 1e-15 over D (one class predicted); it was released
    with coupling_certified_=True and mip_bound_=0.3. Now: refused, from D alone, so the
    message is the same for every draw of D_train."""
    X, y = data
    messages = set()
    for seed in range(3):
        with pytest.raises(TrainingFailedError, match="fitted on all 200 rows of D gives the same output") as info:
            MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, n_rounds=20, random_state=seed).fit(X * scale, y)
        assert "before D_train is drawn" in str(info.value) and "Standardize" in str(info.value)
        messages.add(str(info.value))
    assert len(messages) == 1


def test_a_release_predicting_one_class_warns(data):
    """At scale 1e-3 the fit on D still ranks the rows (outputs range 2e-5), so nothing is
    refused before the draw, but the release predicts one class on D: skmip's own warning."""
    X, y = data
    with pytest.warns(DegenerateReleaseWarning, match="predicts one class for every row of D"):
        model = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, n_rounds=50, random_state=0).fit(X * 1e-3, y)
    assert np.unique(model.predict(X * 1e-3)).size == 1


def test_a_release_that_learned_is_silent(data):
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateReleaseWarning)
        model = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, n_rounds=50, random_state=0).fit(X, y)
    assert np.unique(model.predict(X)).size == 2


class _Data:
    """What check_releases reads of a fit's data: D and the pipeline route (none)."""

    def __init__(self, X):
        self.X, self.route = X, None


def test_the_release_check_reads_the_release_and_D_only(data):
    """check_releases is handed the releases and D; a non-finite release is refused, a
    constant regressor warns, and a good one passes."""
    X, y = data
    good = Ridge().fit(X, y)
    check_releases("T", [{"estimator_": good, "target_eta_": 0.1}], _Data(X))
    flat = copy.deepcopy(good)
    flat.coef_[:] = 0.0
    with pytest.warns(DegenerateReleaseWarning, match="predicts one output"):
        check_releases("T", [{"estimator_": flat, "target_eta_": 0.1}], _Data(X))
    broken = copy.deepcopy(good)
    broken.coef_[0] = np.nan
    with pytest.raises(TrainingFailedError, match="NaN or infinite"):
        check_releases("T", [{"estimator_": broken, "target_eta_": 0.1}], _Data(X))


def test_constant_means_within_half_the_digits():
    base = np.full((5, 2), 0.5)
    assert is_constant_output(base)
    assert is_constant_output(base + np.arange(5)[:, None] * 0.5 * CONSTANT_RTOL / 5)
    assert not is_constant_output(base + np.arange(5)[:, None] * 0.5 * CONSTANT_RTOL)
    assert is_constant_output(np.zeros((3, 1)))
    assert not is_constant_output(np.zeros((1, 1)))  # one row: nothing to compare
    assert not is_constant_output(np.array([[np.nan], [np.nan]]))  # non-finite is another finding


def test_a_one_component_mixture_is_read_by_its_density():
    """GaussianMixture(1).predict_proba is 1 for every row; its density is the output that
    says whether it learned (skmip.params.learned.model_output)."""
    from sklearn.mixture import GaussianMixture

    from skmip.params.learned import model_output

    X = np.random.default_rng(0).normal(size=(200, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the moments route's own PrivacyWarning
        model = MIPNoiseWrapper(GaussianMixture(1), eta=0.3, method="moments", n_subsets=16,
                                random_state=0).fit(X)
    assert not is_constant_output(model_output(GaussianMixture(1).fit(X), X))
    assert model.method_ == "moments"
