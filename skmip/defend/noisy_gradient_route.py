"""MIPNoiseWrapper's noisy-gradient route: the user's GLM trained on D_train by noisy gradients.

The wrapper has drawn D_train (and fitted a pipeline's transformers on all of D) as for every
route; :func:`fit_noisy_gradient_path` hands the engine
(:func:`skmip.calibration.noisy_gradient.fit_noisy_gradient`) D_train's rows, the labels of D
(never D_train's: which classes D_train happens to hold must not show; with ``start="prior"``
also their frequencies, where the descent starts) and, per eta, the noise
stream the wrapper spawned from its own root, and turns each run into the wrapper's fitted
attributes. Nothing is assigned here: the caller does, once all succeeded.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone, is_classifier

from skmip.exceptions import PrivacyWarning, warn_not_cryptographic

__all__ = ["NOISY_GRADIENT", "check_noisy_gradient", "fit_noisy_gradient_path"]

#: The ``method_`` of this route.
NOISY_GRADIENT = "noisy_gradient"


def check_noisy_gradient(wrapper, route, owner):
    """Refuse, before any work, what the route cannot take from the wrapper's settings."""
    why = route.applies(wrapper.estimator, wrapper.params)
    if why is not None:
        raise TypeError(
            f"{owner}: the noisy-gradient route cannot train this {type(wrapper.estimator).__name__}: {why}. "
            "It trains scikit-learn GLMs with a registered smooth loss (LogisticRegression, Ridge, "
            "LinearRegression, Poisson/Gamma/TweedieRegressor, LinearSVC), bare or last in a pipeline, "
            "with params='auto'; use method='auto' to let the wrapper choose a route that applies."
        )
    if route.secure_mode and wrapper.random_state is not None:
        raise ValueError(
            f"{owner}: NoisyGradientRoute(secure_mode=True) draws its batches and noise from the "
            f"OS's secure generator, which cannot be seeded; got random_state={wrapper.random_state!r}. "
            "Pass random_state=None."
        )


def check_fit_params(fit_params, pipeline, owner):
    """Refuse, before any fit, a fit parameter other than ``sample_weight`` (the only one the
    engine takes); ``pipeline`` names the last step's prefix as the caller spelled it."""
    prefix = "" if pipeline is None else f"{pipeline.last_name}__"
    other = sorted(prefix + name for name in set(fit_params or {}) - {"sample_weight"})
    if other:
        raise ValueError(
            f"{owner}: the noisy-gradient route trains the estimator's objective itself and takes "
            f"only sample_weight as a fit parameter; got {other}. Fit without them, or choose "
            "another route."
        )


def _sample_weight(data, owner):
    """D_train's ``sample_weight`` (the only fit parameter the engine takes), or ``None``."""
    params = data.train_fit_params()
    check_fit_params(params, data.route, owner)
    return params.get("sample_weight")


def fit_noisy_gradient_path(wrapper, route, data, etas, owner):
    """One attribute dict per eta: a noisy-gradient run on D_train with that eta's own stream.

    Parameters
    ----------
    wrapper : MIPNoiseWrapper
        Validated; its ``estimator`` (or its pipeline's last step) is trained.
    route : NoisyGradientRoute
        Validated knobs.
    data : TrainingSet
        D (transformed by the pipeline's transformers fitted on D), D_train's rows and the
        noise streams spawned from the wrapper's root (one per eta).
    etas : list of float
        Targets; each gets an independent run (the noise multiplier depends on eta).
    owner : str
        The class named in errors and warnings.

    Returns
    -------
    list of dict
        The fitted attributes of each release.

    Notes
    -----
    ``mip_bound_`` is the engine's ``details["mip_bound"]``, :func:`skmip.bounds.dpsgd_eta` of the
    run (at most eta); ``None`` with ``train_size=1.0``, whose transformers and schedule are
    functions of the given rows (the wrapper warns). The engine's own warning of a fixed seed is
    silenced: the wrapper passes a generator spawned from its root, and warns itself when its
    ``random_state`` is fixed.
    """
    from skmip.calibration.noisy_gradient import fit_noisy_gradient

    estimator = clone(wrapper.estimator if data.route is None else data.route.last)
    classes = np.unique(data.y) if is_classifier(estimator) else None
    sample_weight = _sample_weight(data, owner)
    if not route.secure_mode and wrapper.random_state is None:
        warn_not_cryptographic(owner)
    results = []
    for eta, noise_rng in zip(etas, data.noise_rngs):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"fit_noisy_gradient: random_state=", category=PrivacyWarning)
            released, details = fit_noisy_gradient(
                estimator, data.X_train, data.y_train, n_total=data.n, eta=eta, classes=classes,
                clip_norm=route.clip_norm, learning_rate=route.learning_rate,
                batch_size=route.batch_for(data.n_train),
                n_epochs=route.n_epochs, average=route.average, sample_weight=sample_weight,
                y_pool=data.y if route.start == "prior" else None, X_pool=data.X, subspace=route.subspace,
                secure_mode=route.secure_mode, random_state=None if route.secure_mode else noise_rng,
            )
        attrs = {
            "estimator_": released if data.route is None else data.route.release(data.transformers, released),
            "method_": NOISY_GRADIENT,
            "noise_multiplier_": details["noise_multiplier"],
            "clip_norm_": details["clip_norm"],
            "sample_rate_": details["sample_rate"],
            "n_steps_": details["n_steps"],
            "subspace_rank_": details["subspace_rank"],
            "n_train_": data.n_train,
            "mip_bound_": None if data.given_subset else float(details["mip_bound"]),
            "target_eta_": float(eta),
            "n_features_in_": data.probe.n_features_in_,
        }
        if hasattr(data.probe, "feature_names_in_"):
            attrs["feature_names_in_"] = data.probe.feature_names_in_
        if classes is not None:
            attrs["classes_"] = released.classes_
        results.append(attrs)
    return results
