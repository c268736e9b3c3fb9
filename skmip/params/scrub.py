"""What a release keeps: the fitted attributes that are training diagnostics, the public ones,
and the scrubbing that removes everything else computed on the private data.

Scrubbing is post-processing of the release (Izzo et al., Theorem 3): it only deletes.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

from sklearn.base import clone

#: Fitted attributes that describe the training run on the private data rather than the
#: model: losses and scores, iteration counts, selected regularisation, per-sample masks and
#: distances, optimiser state. :func:`scrub_diagnostics` removes them wherever they appear;
#: the built-in adapters go further and keep only what they know to be released.
DIAGNOSTIC_ATTRIBUTES = (
    # losses, scores and convergence of the run on the private data
    "loss_",
    "loss_curve_",
    "best_loss_",
    "validation_scores_",
    "best_validation_score_",
    "n_iter_",
    "t_",
    "history_",
    "lower_bound_",
    "lower_bounds_",
    "converged_",
    "n_steps_",
    "costs_",
    "scores_",
    "best_score_",
    "dual_gap_",
    "eps_",
    "mse_path_",
    "cv_results_",
    "cv_alphas_",
    "criterion_",
    "noise_variance_",
    # hyper-parameters selected on the private data (CV estimators, robust fits)
    "alpha_",
    "alphas_",
    "l1_ratio_",
    "C_",
    "Cs_",
    "coefs_paths_",
    "coef_path_",
    "active_",
    "shrinkage_",
    "breakdown_",
    "n_nonzero_coefs_",
    # spectra and per-sample quantities of the training data
    "singular_",
    "rank_",
    "dist_",
    "support_",
    "outliers_",
    "inlier_mask_",
    "raw_location_",
    "raw_covariance_",
    "raw_support_",
    "n_samples_seen_",
    # optimiser state (SGD averaging, MLP solvers) computed on the private data
    "_average_coef",
    "_average_intercept",
    "_standard_coef",
    "_standard_intercept",
    "_expanded_class_weight",
    "_optimizer",
    "_best_coefs",
    "_best_intercepts",
    "_no_improvement_count",
    "_random_state",
    "_coef_indptr",
    "_intercept_indptr",
)

#: Fitted attributes that carry public information (the label set, the input schema) and
#: that predictions need. Adapters keep them.
PUBLIC_ATTRIBUTES = ("classes_", "n_features_in_", "feature_names_in_", "n_outputs_")

# Construction-time configuration that scikit-learn copies in ``clone``; never data.
_CONFIG_ATTRIBUTES = ("_sklearn_output_config", "_metadata_request", "_skl_callbacks")


def scrub_diagnostics(estimator, names: Sequence[str] = DIAGNOSTIC_ATTRIBUTES):
    """Delete the listed fitted attributes from ``estimator`` where present.

    Parameters
    ----------
    estimator : object
        Any object; modified in place.
    names : sequence of str, default=DIAGNOSTIC_ATTRIBUTES
        Attribute names to delete.

    Returns
    -------
    estimator : object
        The same object.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LogisticRegression(max_iter=1000).fit(X, y)
    >>> hasattr(scrub_diagnostics(clf), "n_iter_")
    False
    """
    for name in names:
        if name in vars(estimator):
            delattr(estimator, name)
    return estimator


def _construction_attributes(estimator):
    """Attribute names an unfitted copy of ``estimator`` has (hyper-parameters, config)."""
    try:
        with warnings.catch_warnings():
            # Cloning only to list attribute names; deprecation notices are not news here.
            warnings.simplefilter("ignore")
            return set(vars(clone(estimator))) | set(_CONFIG_ATTRIBUTES)
    except Exception:  # not clonable: fall back to scikit-learn's naming convention
        names = set(_CONFIG_ATTRIBUTES)
        if hasattr(estimator, "get_params"):
            names |= set(estimator.get_params(deep=False))
        return names | {k for k in vars(estimator) if not (k.endswith("_") or k.startswith("_"))}


def _scrub_all_but(estimator, keep):
    """Delete every fitted attribute of ``estimator`` that is not named in ``keep``.

    Fitted attributes are those an unfitted clone does not have. An allow-list rather than
    a deny-list: a new scikit-learn version that caches something else computed on the data
    (a private ``_something``) is removed without anyone having to know its name.
    """
    keep = set(keep) | set(PUBLIC_ATTRIBUTES) | _construction_attributes(estimator)
    for name in list(vars(estimator)):
        if name not in keep:
            delattr(estimator, name)
    return estimator
