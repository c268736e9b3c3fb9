"""An estimator pickled by skmip 0.1 unpickles under 0.2: the old module path resolves
(skmip/_moved.py) and a renamed parameter's value moves to its new name."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from skmip import MIPGaussianSynthesizer, MIPNoiseWrapper, MIPNoiseWrapperCV, SubsampledDPClassifier


def _as_in_0_1(estimator, old, new, module):
    """The pickle skmip 0.1 wrote: the old parameter name, no new one, the old module path."""
    state = dict(vars(estimator))
    state[old] = state.pop(new)
    return pickle.dumps((module, type(estimator).__name__, state))


def _load_0_1(blob):
    module, name, state = pickle.loads(blob)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # the moved module path warns
        cls = getattr(__import__(module, fromlist=[name]), name)
    obj = cls.__new__(cls)
    obj.__setstate__(state)
    return obj


@pytest.mark.parametrize("estimator, old, new, value, module", [
    (MIPNoiseWrapper(LogisticRegression(), n_subsets=12), "n_splits", "n_subsets", 12, "skmip.wrappers.mip_noise"),
    (MIPNoiseWrapperCV(LogisticRegression(), n_subsets=12), "n_splits", "n_subsets", 12, "skmip.wrappers.mip_noise_cv"),
    (MIPGaussianSynthesizer(n_subsets=12), "n_splits", "n_subsets", 12, "skmip.synthetic"),
    (SubsampledDPClassifier(train_size=0.3), "sampling_rate", "train_size", 0.3, "skmip.subsampled"),
])
def test_a_0_1_pickle_gets_the_new_parameter_names(estimator, old, new, value, module):
    loaded = _load_0_1(_as_in_0_1(estimator, old, new, module))
    params = loaded.get_params()
    assert params[new] == value and params[old] == "deprecated"
    assert clone(loaded).get_params()[new] == value
    # A 0.2 pickle round-trips unchanged.
    again = pickle.loads(pickle.dumps(estimator))
    assert again.get_params()[new] == value and again.get_params()[old] == "deprecated"


def test_a_fitted_0_1_wrapper_still_predicts():
    X = np.random.default_rng(0).normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = MIPNoiseWrapper(LogisticRegression(), eta=0.5, random_state=0).fit(X, y)
    loaded = _load_0_1(_as_in_0_1(fitted, "n_splits", "n_subsets", "skmip.wrappers.mip_noise"))
    assert np.array_equal(loaded.predict(X), fitted.predict(X))
