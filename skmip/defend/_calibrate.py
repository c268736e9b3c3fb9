"""The steps of one MIPNoiseWrapper calibration, after ``D_train`` is drawn.

:func:`~skmip.defend.mip_noise._fit_path` draws the training rows and the seeds, then runs
these in order: the spread of the fit over random subsets (:func:`measure_spread`), the noise
law that turns eta into noise (:func:`noise_law`), the fit on ``D_train`` carried to what the
calibration analysed (:func:`fit_released_base`), and one noised release per eta
(:func:`release`). Nothing here assigns fitted state: the caller does, once all succeeded.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from sklearn.utils import _safe_indexing

from skmip.exceptions import PrivacyWarning
from skmip.utils.rows import fit_on_rows, n_rows, subset_fit_params
from skmip.calibration.losses.mismatch import ObjectiveMismatch
from skmip.calibration.swap import get_smooth_loss
from skmip.calibration.routes.coupling import CouplingNoise, outlying_records
from skmip.calibration.routes.moments import MomentsNoise

__all__ = ["TrainingSet", "Spread", "measure_spread", "noise_law", "fit_released_base", "release"]

_OWNER = "MIPNoiseWrapper"


def log(wrapper, message):
    """Print ``message`` under the wrapper's name when ``verbose`` > 0."""
    if wrapper.verbose:
        print(f"[{_OWNER}] {message}", flush=True)


@dataclass
class TrainingSet:
    """The validated data D, the rows of ``D_train`` and the seeds drawn for one fit.

    ``train_rows`` is ``None`` when ``D_train`` is all of D (``train_size=1.0``, or a
    ``train_size`` that rounds to n). ``X_train`` copies the rows of ``D_train`` only when first
    read: at large n the copy would otherwise sit beside the calibration's own memory.
    """

    X: Any
    y: Any
    probe: Any
    fit_params: dict
    n_train: int
    given_subset: bool
    route: Any
    transformers: Any
    inner_seed: int
    train_rows: Any
    sigma_seed: int
    coupling_seed: int
    noise_rngs: list
    coverage: Any = None  # skmip.defend._coverage.ClassCoverage, decided from D before the draw

    @property
    def n(self):
        return n_rows(self.X)

    @cached_property
    def X_train(self):
        return self.X if self.train_rows is None else _safe_indexing(self.X, self.train_rows)

    @cached_property
    def y_train(self):
        if self.y is None or self.train_rows is None:
            return self.y
        return _safe_indexing(self.y, self.train_rows)

    def train_fit_params(self):
        """``fit_params`` restricted to the rows of ``D_train``."""
        if self.train_rows is None:
            return self.fit_params
        return subset_fit_params(self.fit_params, self.train_rows, self.n)


@dataclass
class Spread:
    """What :func:`measure_spread` found: the route, the noise shape and the data it used."""

    method: str
    shape: str
    smooth: bool
    sigma: np.ndarray
    scale: np.ndarray
    shares: Any
    X: Any
    y: Any
    size: int
    fit_params: dict


def measure_spread(wrapper, route, estimator, adapter, data):
    """Measure the fit's spread for ``route`` (a coupling or moments route): the noise shape.

    The spread is measured over subsets of D of the training size (Theorem 9's law) or over
    halves of ``D_train`` (``sigma_from="train"``, Algorithm 1 as printed). Raises when no
    parameter varied, and warns for those that did not.
    """
    if route.sigma_from == "dataset" and data.train_rows is not None:
        X, y, size = data.X, data.y, data.n_train
    else:
        X, y, size = data.X_train, data.y_train, data.n_train // 2
    fit_params = data.fit_params if X is data.X else subset_fit_params(data.fit_params, data.train_rows, data.n)
    method = route.name
    # The coupling engines analyse the exact minimiser of a registered smooth loss; the noise
    # shape is then measured on that same learner (its fits by warm-started Newton steps).
    loss = get_smooth_loss(estimator) if method == "coupling" else None
    smooth = loss is not None
    if smooth:
        _check_objective(loss, estimator)
    # The moments calibration has its own shape: sigma per coordinate.
    shape = route.resolve_shape(_OWNER, smooth) if method == "coupling" else "diagonal"
    sigma, scale, shares = _spread(wrapper, route, estimator, adapter, shape, smooth, X, y, size, fit_params,
                                   data.sigma_seed)
    _check_sigma(estimator, sigma, size, route.n_subsets)
    return Spread(method, shape, smooth, sigma, scale, shares, X, y, size, fit_params)


def _check_objective(loss, estimator):
    """Refuse, before any fit, an estimator configured outside the objective its registered
    smooth loss models (the plain hinge, an L1 part, ``crammer_singer``, ...): the coupling
    engines would refuse it later, naming ``engine='refit'``, which the wrapper does not take."""
    try:
        loss.check(estimator)
    except ValueError as err:  # a registered loss of one's own may raise a plain ValueError
        why, fix = (err.why, err.fix_sentence()) if isinstance(err, ObjectiveMismatch) else (str(err), "")
        raise ValueError(
            f"{_OWNER}: method='coupling' cannot calibrate this {type(estimator).__name__}: {why} "
            f"{fix + ' ' if fix else ''}Or pass method='auto', which trains such an estimator on MIP "
            "synthetic records, or method='moments' (Corollary 10's noise on its own parameters)."
        ) from None


def _spread(wrapper, route, estimator, adapter, shape, smooth, X, y, size, fit_params, seed):
    """``(sigma, scale, shares)`` for the resolved noise shape."""
    shares = None  # the confidence statement's alpha, spent evenly over the records
    if shape == "design":
        from skmip.calibration.noise_shape import design_noise_factor

        log(wrapper, f"designing the noise shape from one fit on {n_rows(X)} rows")
        # The design's predicted exposures also say where to spend alpha (a function of D,
        # fixed before the rounds draw anything): design_target_shares.
        scale, shares = design_noise_factor(
            estimator, X, y, train_size=size, params=adapter, random_state=seed,
            fit_params=fit_params, return_shares=True,
        )
        return np.sqrt(np.sum(scale**2, axis=1)), scale, shares
    n_subsets = route.n_subsets
    log(wrapper, f"measuring the spread over {n_subsets} subsets of {size} rows")
    if shape == "full":
        from skmip.calibration.spread.noise_factor import estimate_noise_factor

        # Gaussian noise shaped like the fit's own covariance over random subsets of D.
        scale = estimate_noise_factor(
            estimator, X, y, train_size=size, n_subsets=n_subsets, params=adapter,
            random_state=seed, n_jobs=wrapper.n_jobs, fit_params=fit_params, polish=smooth,
        )
        return np.sqrt(np.sum(scale**2, axis=1)), scale, shares
    from skmip.calibration.spread.moments import estimate_sigma

    sigma = estimate_sigma(
        estimator, X, y, n_subsets=n_subsets, moment=route.moment, params=adapter,
        train_size=size, random_state=seed, n_jobs=wrapper.n_jobs,
        verbose=max(0, wrapper.verbose - 1), fit_params=fit_params,
    )
    return sigma, sigma, shares


def _check_sigma(estimator, sigma, size, n_subsets):
    if np.all(sigma == 0):
        raise ValueError(
            f"{_OWNER}: none of the {sigma.size} parameters varied over the random subsets of "
            f"{size} rows (sigma = 0 everywhere): the {type(estimator).__name__} fit did not "
            "depend on the data, so releasing it would release its starting point, not a model. "
            "A solver that stops at once does this, e.g. LogisticRegression on features of huge "
            "magnitude: standardize X, check that the estimator converges on D, or raise n_subsets."
        )
    if np.any(sigma == 0):
        warnings.warn(
            f"{_OWNER}: {int(np.sum(sigma == 0))} of {sigma.size} parameters did not vary over "
            f"the {n_subsets} subsets (sigma = 0) and are released without noise. That "
            "is safe only if they truly never depend on the data; raise n_subsets or exclude "
            "them with params=[...].",
            PrivacyWarning, stacklevel=6,
        )


def noise_law(wrapper, route, estimator, adapter, data, spread, etas):
    """``(law, polish, certified)``: the strategy that draws the noise for each eta.

    The coupling calibration estimates the swap distances on the same data and subset size as
    the spread: D with ``k = n_train`` (Definition 1), or, when only ``D_train`` is known,
    halves of it. They are discarded once the law has its scales.
    """
    if spread.method != "coupling":
        return MomentsNoise(route, spread.sigma), False, False
    from skmip.bounds.coupling_binding import BindingTargets
    from skmip.calibration.swap import estimate_swap_deltas

    log(wrapper, f"coupling calibration: {route.n_rounds} rounds of swap distances")
    deltas = estimate_swap_deltas(
        estimator, spread.X, spread.y, scale=spread.scale, n_rounds=route.n_rounds,
        train_size=spread.size, polish=True, params=adapter, random_state=data.coupling_seed,
        n_jobs=wrapper.n_jobs, verbose=wrapper.verbose, fit_params=spread.fit_params,
        # Certify past the closed form only what can move these calibrations (lazy.py).
        tighten_for=BindingTargets(etas, route.confidence, spread.shares),
    )
    _warn_about_deltas(route, estimator, deltas)
    # Halves of D_train (sigma_from="train" with a D_train drawn from D): the law is a function
    # of D_train, outside the coupling theorem's law fixed given D.
    fixed_given_D = route.sigma_from == "dataset" or data.train_rows is None
    if not fixed_given_D and deltas.certified:
        warnings.warn(
            f"{_OWNER}: sigma_from='train' measures the noise shape and the swap distances on halves "
            "of D_train, so the noise law depends on which rows were drawn; the coupling bound holds "
            "for a law fixed given D (sigma_from='dataset', the default), so no eta is promised: "
            "mip_bound_ and coupling_eta_upper_ are None.",
            PrivacyWarning, stacklevel=5,
        )
    law = CouplingNoise(route, spread.scale, deltas, spread.shares, etas, fixed_given_D=fixed_given_D)
    spread.shares = None  # per-row exposures of private rows: never kept
    return law, deltas.polished, deltas.certified


def _warn_about_deltas(route, estimator, deltas):
    if route.confidence is None and not deltas.exhaustive:
        warnings.warn(
            f"{_OWNER}: confidence=None calibrates the noise to a point estimate from "
            "random draws; the eta it states is then an estimate, not a guarantee.",
            PrivacyWarning, stacklevel=6,
        )
    outliers = outlying_records(deltas.distances)
    if outliers is not None:
        warnings.warn(
            f"{_OWNER}: the coupling noise is set by {outliers[0]} record(s) of D whose swaps "
            + (f"move the fit up to {outliers[1]:.0f} times more than the 99th-percentile record's. "
               if np.isfinite(outliers[1]) else
               "move the fit by distances the certificate could not bound (infinite), where the "
               "99th-percentile record's are finite. ")
            + "eta-MIP protects every record, so these decide the noise for all. "
            "Scaling features to a bounded range (e.g. MinMaxScaler fitted on D or on known "
            "bounds) or clipping outlying values usually cuts the noise many times (docs: "
            "'Bound your features').",
            UserWarning, stacklevel=6,
        )
    if not deltas.certified:
        warnings.warn(
            f"{_OWNER}: the swap distances of engine {deltas.engine!r} for "
            f"{type(estimator).__name__} are estimates, not proven upper bounds (docs: "
            "'Certified distances'), so no eta is promised: mip_bound_ and "
            "coupling_eta_upper_ are None and coupling_eta_point_ is an estimate.",
            PrivacyWarning, stacklevel=6,
        )


def fit_released_base(estimator, adapter, data, spread, polish, certified):
    """``(base, theta)``: the fit on ``D_train`` and its parameter vector, before noise.

    With ``polish`` the fit is carried to the exact minimiser of the objective, which the
    swap distances describe; with ``certified`` the release is checked against the
    certificate's assumptions.
    """
    X_train = data.X_train  # the rows of D_train, copied only now by default
    base = fit_on_rows(estimator, data.X, data.y, data.train_rows, data.fit_params)
    if polish:
        from skmip.calibration.swap import polish_to_minimiser

        train_params = data.train_fit_params()
        polish_to_minimiser(base, X_train, data.y_train, sample_weight=train_params.get("sample_weight"),
                            params=adapter)
        if certified:
            from skmip.calibration.swap.release import check_release

            check_release(base, X_train, data.y_train, train_params.get("sample_weight"), spread.scale)
    adapter.canonicalize(base)
    theta = adapter.get_vector(base)
    if theta.shape != spread.sigma.shape:
        raise ValueError(
            f"{_OWNER}: the model fitted on D_train has {theta.size} parameters but the subset "
            f"fits had {spread.sigma.size}. The parameterisation must not depend on the data; pass "
            "params=[...] naming fixed-size attributes."
        )
    return base, theta


def release(adapter, data, spread, law, base, theta, etas, classes):
    """One attribute dict per eta: ``base`` noised by ``law`` with that eta's own stream."""
    results = []
    for i, (eta, noise_rng) in enumerate(zip(etas, data.noise_rngs)):
        noise, noise_attrs = law.draw(eta, noise_rng)
        released = base if i == len(etas) - 1 else copy.deepcopy(base)
        adapter.set_vector(released, theta + noise)
        adapter.project(released)
        adapter.scrub(released)
        # Definition 1 covers a noise law fixed given D; with train_size=1.0 it is a function
        # of D_train and nothing is promised (warn_no_promise_on_given_subset); nor is anything
        # where the coupling distances are estimates, not bounds, or measured on D_train.
        promised = not data.given_subset and (spread.method != "coupling" or law.promises)
        attrs = {
            "estimator_": released if data.route is None else data.route.release(data.transformers, released),
            "sigma_": spread.sigma,
            "method_": spread.method,
            **noise_attrs,
            "n_train_": data.n_train,
            "mip_bound_": float(eta) if promised else None,
            "target_eta_": float(eta),
            "n_features_in_": data.probe.n_features_in_,
        }
        if hasattr(data.probe, "feature_names_in_"):
            attrs["feature_names_in_"] = data.probe.feature_names_in_
        if classes is not None:
            attrs["classes_"] = getattr(released, "classes_", classes)
        results.append(attrs)
    return results
