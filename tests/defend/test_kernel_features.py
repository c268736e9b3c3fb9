"""Kernel ridge regression under MIP: refused raw by noise (method="auto" trains it on synthetic
data instead), calibrated by coupling on a fixed feature map.

A fitted ``KernelRidge`` stores its training rows (``X_fit_``), so no noise on its
coefficients protects membership; kernel ridge on a finite feature map that is fixed given D
(``RBFSampler`` with a set ``random_state`` and gamma) *is* ``Ridge`` on those features, which
the ``"newton"`` engine treats exactly (docs/coupling.md, "Learners calibrated by coupling").
"""

import warnings

import numpy as np
import pytest
from sklearn.kernel_approximation import RBFSampler
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge

from skmip import MIPNoiseWrapper
from skmip.calibration.swap import estimate_swap_deltas, get_smooth_loss


def _data(n=80, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=n)


def test_raw_kernel_ridge_is_refused_because_it_stores_its_training_rows():
    X, y = _data()
    assert get_smooth_loss(KernelRidge()) is None
    with pytest.raises(TypeError, match="X_fit_"):  # noise on its coefficients cannot help
        MIPNoiseWrapper(KernelRidge(), eta=0.2, random_state=0, method="moments").fit(X, y)
    # method="auto" trains it on MIP synthetic records instead: what it stores is synthetic.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixed seed's warning
        model = MIPNoiseWrapper(KernelRidge(), eta=0.2, random_state=0).fit(X, y)
    assert model.method_ == "synthetic" and model.mip_bound_ == 0.2
    assert not np.isin(model.estimator_.X_fit_, X).all(axis=1).any()


def test_random_fourier_features_are_fixed_given_the_data_and_make_kernel_ridge_a_ridge():
    X, y = _data()
    # RBFSampler.fit reads only the number of features (numeric gamma): the map is the same
    # whatever rows it sees, so it is fixed given D and independent of D_train.
    a = RBFSampler(gamma=2.0, n_components=40, random_state=0).fit(X)
    b = RBFSampler(gamma=2.0, n_components=40, random_state=0).fit(np.zeros((1, 2)))
    np.testing.assert_array_equal(a.random_weights_, b.random_weights_)
    Z = a.transform(X)
    # Kernel ridge with the kernel phi(x)'phi(x') is ridge on phi without an intercept.
    kr = KernelRidge(alpha=0.5, kernel="linear").fit(Z, y)
    ridge = Ridge(alpha=0.5, fit_intercept=False).fit(Z, y)
    np.testing.assert_allclose(kr.predict(Z), ridge.predict(Z), atol=1e-10)


def test_ridge_on_the_features_is_calibrated_by_coupling_with_exact_swaps():
    X, y = _data()
    Z = RBFSampler(gamma=2.0, n_components=30, random_state=0).fit(X).transform(X)
    model = Ridge(alpha=0.5, fit_intercept=False)
    kw = dict(scale=np.full(30, 0.05), n_rounds=2, pairs_per_target=2, random_state=0)
    refit = estimate_swap_deltas(model, Z, y, engine="refit", **kw)
    newton = estimate_swap_deltas(model, Z, y, **kw)
    assert newton.engine == "newton"
    np.testing.assert_allclose(newton.distances, refit.distances, rtol=1e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning
        w = MIPNoiseWrapper(model, eta=0.3, n_rounds=60, random_state=0).fit(Z, y)
    assert (w.method_, w.sensitivity_engine_) == ("coupling", "newton")
    assert not hasattr(w.estimator_, "X_fit_")
