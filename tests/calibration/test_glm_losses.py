"""Tweedie-family smooth losses (skmip.calibration.losses.glm): objective, engines, refusals."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import GammaRegressor, PoissonRegressor, Ridge, TweedieRegressor

from skmip import MIPNoiseWrapper
from skmip.calibration.swap import estimate_swap_deltas, get_smooth_loss, polish_to_minimiser

_TIGHT = dict(alpha=0.05, solver="newton-cholesky", tol=1e-12)


def _data(n=90, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) / 2
    mu = np.exp(X @ [0.4, -0.3, 0.2] + 0.5)
    return X, {"poisson": rng.poisson(mu).astype(float), "gamma": rng.gamma(2.0, mu / 2.0)}


@pytest.mark.parametrize(
    "model, target",
    [
        (PoissonRegressor(**_TIGHT), "poisson"),
        (GammaRegressor(**_TIGHT), "gamma"),
        (TweedieRegressor(power=1.5, **_TIGHT), "gamma"),
        (TweedieRegressor(power=1.0, link="log", **_TIGHT), "poisson"),
    ],
)
def test_the_registered_objective_is_the_one_scikit_learn_minimises(model, target):
    # A fit to tol=1e-12 must already be the minimiser of the registered objective: one
    # Newton step on it (the check estimate_swap_deltas applies) is at rounding level. A wrong
    # scaling of the penalty against the loss (mean vs sum) moves it by O(alpha).
    X, ys = _data()
    y = ys[target]
    fitted = model.fit(X, y)
    (block,) = get_smooth_loss(fitted).blocks(fitted, X, y, np.arange(len(X)), None)
    grad = block.gradients.sum(axis=0) + block.regularizer_gradient
    step = np.linalg.solve(block.hessian, grad)
    assert np.abs(step).max() < 1e-8
    rough = type(model)(**{**model.get_params(), "tol": 1e-2, "solver": "lbfgs"}).fit(X, y)
    np.testing.assert_allclose(polish_to_minimiser(rough, X, y).coef_, fitted.coef_, atol=1e-9)


@pytest.mark.parametrize(
    "model, target",
    [(PoissonRegressor(**_TIGHT), "poisson"), (GammaRegressor(**_TIGHT), "gamma"),
     (TweedieRegressor(power=1.5, **_TIGHT), "gamma")],
)
def test_newton_engine_tracks_refits_and_beats_first_order(model, target):
    X, ys = _data()
    y = ys[target]
    kw = dict(scale=np.full(4, 0.05), n_rounds=2, pairs_per_target=1, random_state=1)
    refit = estimate_swap_deltas(model, X, y, engine="refit", **kw).distances
    newton = estimate_swap_deltas(model, X, y, **kw)
    assert newton.engine == "newton"
    first = estimate_swap_deltas(model, X, y, engine="influence", **kw).distances
    err_newton = np.abs(newton.distances / refit - 1)
    err_first = np.abs(first / refit - 1)
    assert np.median(err_newton) < 0.3 * np.median(err_first)
    assert err_newton.max() < err_first.max()


# scikit-learn's Newton solver reaches the quadratic's minimiser in one step and then warns
# that its line search cannot improve on rounding error; the fit is exact, the warning moot.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_identity_link_power_zero_is_least_squares_and_exact():
    X, ys = _data()
    model = TweedieRegressor(power=0.0, **_TIGHT)
    kw = dict(scale=np.full(4, 0.05), n_rounds=2, pairs_per_target=2, random_state=3)
    refit = estimate_swap_deltas(model, X, ys["gamma"], engine="refit", **kw)
    newton = estimate_swap_deltas(model, X, ys["gamma"], engine="newton", **kw)
    np.testing.assert_allclose(newton.distances, refit.distances, rtol=1e-7)


@pytest.mark.parametrize(
    "model, match",
    [
        (TweedieRegressor(power=3.0, link="log"), "not convex"),
        (TweedieRegressor(power=0.5, link="log"), "not convex"),
        (TweedieRegressor(power=1.5, link="identity"), "positive linear predictor"),
    ],
)
def test_non_convex_or_constrained_settings_are_refused(model, match):
    X, ys = _data()
    with pytest.raises(ValueError, match=match):
        estimate_swap_deltas(model, X, ys["gamma"], scale=np.ones(4), n_rounds=1, engine="newton", random_state=0)


def test_unequal_sample_weights_are_refused_and_equal_ones_accepted():
    # The penalty is alpha/2 ||w||^2 against the *weighted mean* loss: a swap between rows of
    # different weight changes the total weight, hence the effective penalty.
    X, ys = _data()
    y = ys["poisson"]
    kw = dict(scale=np.full(4, 0.05), n_rounds=1, pairs_per_target=1, random_state=0)
    uneven = np.linspace(0.5, 2.0, len(X))
    with pytest.raises(ValueError, match="total sample weight"):
        estimate_swap_deltas(PoissonRegressor(**_TIGHT), X, y, fit_params={"sample_weight": uneven}, **kw)
    even = estimate_swap_deltas(PoissonRegressor(**_TIGHT), X, y, fit_params={"sample_weight": np.full(len(X), 3.0)}, **kw)
    plain = estimate_swap_deltas(PoissonRegressor(**_TIGHT), X, y, **kw)
    np.testing.assert_allclose(even.distances, plain.distances, rtol=1e-6)


@pytest.mark.parametrize("model", [PoissonRegressor(alpha=0.05), GammaRegressor(alpha=0.05),
                                   TweedieRegressor(power=1.5, alpha=0.05)])
def test_wrapper_auto_calibrates_them_by_coupling(model):
    X, ys = _data(n=160)
    y = ys["poisson"] if isinstance(model, PoissonRegressor) else ys["gamma"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning
        w = MIPNoiseWrapper(model, eta=0.3, n_rounds=60, random_state=0).fit(X, y)
    assert (w.method_, w.sensitivity_engine_) == ("coupling", "newton")
    assert w.coupling_eta_upper_ <= 0.3
    assert w.estimator_.coef_.shape == (3,) and np.ndim(w.estimator_.intercept_) == 0
    assert np.all(w.predict(X) > 0)  # still a log-link model


@pytest.mark.parametrize("make, fix", [
    (lambda: TweedieRegressor(power=3.0), "Use 1 <= power <= 2 (Poisson to Gamma), or engine='refit'."),
    (lambda: TweedieRegressor(power=1.0, link="identity"), "or power=0 (least squares), or engine='refit'."),
    (lambda: Ridge(positive=True), "objective. Use engine='refit'."),
])
def test_a_loss_check_says_why_and_its_fix_apart(make, fix):
    """The registered losses refuse an estimator outside their objective with an
    ``ObjectiveMismatch``: a reason and the estimator's own fix, apart (the wrapper, which takes no
    engine, words its own message from them), and the engines' ``engine='refit'`` after them."""
    from skmip.calibration.losses.mismatch import ObjectiveMismatch
    from skmip.calibration.swap import get_smooth_loss

    est = make()
    with pytest.raises(ObjectiveMismatch) as err:
        get_smooth_loss(est).check(est)
    assert str(err.value).startswith("estimate_swap_deltas: ") and str(err.value).endswith(fix)
    assert "engine=" not in err.value.why and (err.value.fix is None or "engine=" not in err.value.fix)
