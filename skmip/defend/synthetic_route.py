"""MIPNoiseWrapper's route for estimators without continuous parameters: train on MIP synthetic data.

Trees, forests, boosting and k-NN hold no parameter vector that noise can protect (the
parameter registry refuses them). ``method="auto"`` releases them trained on records drawn
from an eta-MIP synthesizer of the table ``(X, y)``
(:class:`~skmip.release.tabular.MIPTabularSynthesizer`): the fitted model is a function of the
released synthesizer and of randomness independent of ``D_train``, so it keeps the
synthesizer's promise (Izzo et al., Theorem 3, post-processing).
"""

from __future__ import annotations

import warnings

import numpy as np

from sklearn.base import clone, is_classifier

from skmip.utils.rng import draw_seed, fix_inner_random_state, resolve_rng, spawn_generators
from skmip.calibration.routes import warn_if_vacuous
from skmip.utils.rows import n_rows
from skmip.exceptions import PrivacyWarning, check_privacy_seed

__all__ = ["SYNTHETIC", "fit_synthetic"]

#: The ``method_`` of this route.
SYNTHETIC = "synthetic"


def fit_synthetic(wrapper, route, X, y, fit_params, owner):
    """Fitted attributes of ``wrapper`` by the synthetic route.

    Fits the synthesizer (``route.synthesizer``, a
    :class:`~skmip.calibration.routes.SyntheticRoute`'s, or a default
    :class:`~skmip.release.tabular.MIPTabularSynthesizer`) on ``(X, y)`` with the wrapper's eta,
    train size and randomness, draws as many records as ``X`` has rows, and fits a clone of
    the estimator on them. Nothing is assigned here: the caller does, once all succeeded.
    """
    from skmip.release.tabular import MIPTabularSynthesizer

    if fit_params:
        raise ValueError(
            f"{owner}: method_='synthetic' trains on synthetic records, to which fit parameters "
            f"about the real rows ({sorted(fit_params)}) do not apply; fit without them."
        )
    template = route.synthesizer if route.synthesizer is not None else MIPTabularSynthesizer()
    if not isinstance(template, MIPTabularSynthesizer):
        raise TypeError(
            f"{owner}: synthesizer must be None or an unfitted MIPTabularSynthesizer (its bins, "
            f"categories and n_bins set the domains); got {template!r}."
        )
    classifier = is_classifier(wrapper.estimator)
    if classifier and y is None:
        raise ValueError(f"{owner}: the {type(wrapper.estimator).__name__} needs y.")
    check_privacy_seed(owner, wrapper.random_state)
    rng = resolve_rng(wrapper.random_state)
    synth_rng, sample_rng = spawn_generators(rng, 2)
    # The learner's seed is post-processing randomness: it needs no secrecy, only
    # independence of D_train (a stream of its own).
    inner_seed = draw_seed(spawn_generators(rng, 1)[0])
    synth = clone(template).set_params(
        eta=wrapper.eta, train_size=wrapper.train_size, random_state=synth_rng,
        target="categorical" if classifier else template.target,
    )
    if wrapper.verbose:
        print(f"[{owner}] method_='synthetic': fitting {type(synth).__name__} on {len(X)} rows", flush=True)
    with warnings.catch_warnings():
        # Said once above, under the wrapper's name.
        warnings.filterwarnings("ignore", message=r".*fixes the privacy noise", category=PrivacyWarning)
        synth.fit(X, y)
    warn_if_vacuous(owner, wrapper.eta, synth.n_train_, n_rows(X), stacklevel=4)
    synth.random_state = None  # the generator is not part of the release
    X_syn, y_syn = _draw(synth, len(X), np.unique(y) if classifier else None, sample_rng)
    estimator = fix_inner_random_state(clone(wrapper.estimator), inner_seed)
    if classifier:
        missing = np.setdiff1d(np.unique(y), np.unique(y_syn))
        if missing.size:
            warnings.warn(
                f"{owner}: in {_RESAMPLES} draws of {len(X)} synthetic records, class(es) "
                f"{missing.tolist()} never appeared (the released tables give them almost no mass), "
                "so the model cannot predict them. A larger eta or more rows of those classes "
                "helps; fitting again is a second release, and two releases together keep a weaker "
                "promise than either.", UserWarning, stacklevel=3,
            )
    if wrapper.verbose:
        print(f"[{owner}] training {type(estimator).__name__} on {len(X_syn)} synthetic records", flush=True)
    if y_syn is None:
        estimator.fit(X_syn)
    else:
        estimator.fit(X_syn, y_syn)
    attrs = {
        "estimator_": estimator,
        "synthesizer_": synth,
        "method_": SYNTHETIC,
        "noise_scale_": synth.noise_scale_,
        "coupling_eta_point_": synth.coupling_eta_,
        "mip_bound_": synth.mip_bound_,
        "target_eta_": synth.target_eta_,
        "n_train_": synth.n_train_,
        "n_features_in_": synth.n_features_in_,
    }
    if hasattr(synth, "feature_names_in_"):
        attrs["feature_names_in_"] = synth.feature_names_in_
    if classifier:
        attrs["classes_"] = estimator.classes_
    return attrs


#: Draws from the same release, at most, until every class of y appears.
_RESAMPLES = 10


def _draw(synth, n_samples, classes, rng):
    """``(X, y)`` sampled from the fitted synthesizer; for a classifier, drawn again (from the
    same release: post-processing) until every class appears, at most ``_RESAMPLES`` times."""
    for _ in range(_RESAMPLES):
        drawn = synth.sample(n_samples, random_state=rng)
        X_syn, y_syn = drawn if synth.has_target_ else (drawn, None)
        if classes is None or np.isin(classes, y_syn).all():
            break
    return X_syn, y_syn
