"""The promise contract (skmip.promise): what a defence states, read only through stated_promise()."""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

from skmip.promise import MIPPromiseMixin, Promise, PromiseMixin, stated_promise


class _MIPDefence(MIPPromiseMixin, BaseEstimator):
    def __init__(self, eta=0.1, target=0.1):
        self.eta = eta
        self.target = target

    def fit(self, X, y=None):
        self.n_train_ = len(X) // 2
        self.mip_bound_ = self.eta
        if self.target is not None:
            self.target_eta_ = self.target
        return self


def test_the_mip_mixin_reads_the_fitted_bound_and_the_calibration_target():
    with pytest.raises(NotFittedError):
        _MIPDefence().stated_promise()
    X = np.zeros((8, 1))
    assert stated_promise(_MIPDefence(0.2).fit(X)) == Promise("mip", 0.2, {"n_train": 4, "promised": True})
    # train_size=1.0 promises nothing: the calibration's target is read, marked unpromised.
    unpromised = stated_promise(_MIPDefence(None, 0.3).fit(X))
    assert unpromised == Promise.mip(0.3, n_train=4, promised=False) and not unpromised.promised
    assert stated_promise(_MIPDefence(None, None).fit(X)) is None


def test_objects_without_the_method_state_nothing():
    class AttributesOnly:
        mip_bound_ = 0.1  # the audit does not sniff attributes

    assert stated_promise(AttributesOnly()) is None
    assert stated_promise(make_pipeline(LogisticRegression())) is None


def test_a_wrong_return_type_and_an_unimplemented_mixin_are_refused():
    class Bad:
        def stated_promise(self):
            return 0.1

    with pytest.raises(TypeError, match="must return a skmip.promise.Promise or None"):
        stated_promise(Bad())
    with pytest.raises(NotImplementedError, match="does not implement stated_promise"):
        PromiseMixin().stated_promise()


@pytest.mark.parametrize("kind, value", [("dp", 0.1), ("mip", "0.1"), ("mip", float("nan")), ("mip", True)])
def test_promise_validates_its_kind_and_value(kind, value):
    with pytest.raises(ValueError, match="Promise: (kind|value) must"):
        Promise(kind, value)


def test_positive_accuracy_promise_keeps_what_the_audit_translates():
    p = Promise.positive_accuracy(0.7, epsilon=1.0, delta=0.0, sampling_rate=0.5, n_train=10)
    assert (p.kind, p.value, p.n_train, p.promised) == ("positive_accuracy", 0.7, 10, True)
    assert p.details == {"n_train": 10, "epsilon": 1.0, "delta": 0.0, "sampling_rate": 0.5, "min_tpr": None}


def test_every_skmip_defence_with_a_stated_bound_implements_the_contract():
    from skmip import (
        MIPGaussianSynthesizer,
        MIPMarginalSynthesizer,
        MIPNoiseWrapper,
        MIPNoiseWrapperCV,
        MIPTabularSynthesizer,
        SubsampledDPClassifier,
    )

    for cls in (MIPNoiseWrapper, MIPNoiseWrapperCV, MIPGaussianSynthesizer, MIPMarginalSynthesizer,
                MIPTabularSynthesizer):
        assert issubclass(cls, MIPPromiseMixin), cls
    assert issubclass(SubsampledDPClassifier, PromiseMixin)


def test_a_fitted_wrapper_states_its_mip_bound():
    from skmip import MIPNoiseWrapper

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = (X[:, 0] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        w = MIPNoiseWrapper(LogisticRegression(), eta=0.3, method="moments", n_subsets=4,
                            random_state=0).fit(X, y)
        given = MIPNoiseWrapper(LogisticRegression(), eta=0.3, method="moments", n_subsets=4,
                                train_size=1.0, random_state=0).fit(X, y)
    assert stated_promise(w) == Promise.mip(w.mip_bound_, n_train=w.n_train_)
    assert stated_promise(given) == Promise.mip(0.3, n_train=80, promised=False)
