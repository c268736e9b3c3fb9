"""Did the learner learn, and did the release? Checked from D before the draw, and on the release.

A promise about a model that learned nothing is worse than no promise: it reads as "private and
fine". :class:`~skmip.defend.MIPNoiseWrapper` therefore checks twice, with the test the audit
uses (:func:`skmip.params.learned.inspect_fitted_model`), and neither check reads anything the
promise does not cover:

* **before** ``D_train`` **is drawn** (:func:`check_learner_on_data`): the learner fitted on all
  of D, with the inner seed. Non-finite parameters or outputs, or the same output for every row
  of D, raise :class:`~skmip.exceptions.TrainingFailedError`. A function of D alone (and of a
  seed drawn independently of ``D_train``), so the outcome and its wording are the same
  whichever rows are drawn;
* **after** the noise (:func:`check_releases`): the release's parameters and its outputs on the
  rows of D. Non-finite ones raise :class:`~skmip.exceptions.TrainingFailedError`; a classifier
  that predicts one class for every row of D (any other model: one output) warns with
  :class:`~skmip.exceptions.DegenerateReleaseWarning`. A function of the release and D only,
  both of which the attacker of Definition 1 holds: the check is a post-processing of the
  release (Izzo et al., Theorem 3) and says nothing the release does not. The un-noised fit on
  ``D_train`` is never read, since what it says would reach beyond the release.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning

from skmip.exceptions import DegenerateReleaseWarning, TrainingFailedError
from skmip.params.learned import inspect_fitted_model, is_constant_output, model_output
from skmip.utils.rows import n_rows

__all__ = ["check_learner_on_data", "check_releases"]

_FIX = ("Standardize the features (StandardScaler, fitted on D or in a Pipeline), check them for "
        "extreme or tiny magnitudes, or weaken the regularisation")


def check_learner_on_data(owner, estimator, X, y, fit_params):
    """Refuse, before ``D_train`` is drawn, a learner that learns nothing from all of D.

    Parameters
    ----------
    owner : str
        First word of the message.
    estimator : estimator
        The learner as the calibration fits it (its inner seed fixed); a clone is fitted.
    X, y : array-like
        The data D (a pipeline's rows after its transformers, fitted on D).
    fit_params : dict
        The fit parameters for all rows of D (``sample_weight``).

    Raises
    ------
    TrainingFailedError
        When the fit on D has non-finite parameters or outputs on D, or gives the same output
        for every row of D (:func:`skmip.params.learned.is_constant_output`).

    Notes
    -----
    A function of D and of the inner seed, which is drawn before and independently of
    ``D_train``: whatever it says is outside the attacker's signal under Definition 1.
    """
    with warnings.catch_warnings(record=True) as caught:
        # The learner's own warnings come from the calibration's fits and the released fit.
        warnings.simplefilter("always")
        model = clone(estimator).fit(X, y, **fit_params) if y is not None else clone(estimator).fit(X, **fit_params)
        output = model_output(model, X)
    unconverged = sum(issubclass(w.category, ConvergenceWarning) for w in caught)
    check = inspect_fitted_model(model, output, unconverged)
    if not check.did_not_learn:
        return
    name = type(estimator).__name__
    if check.nonfinite_params or not check.finite_output:
        what = "has NaN or infinite parameters or outputs"
    else:
        out = np.asarray(output, dtype=np.float64).reshape(n_rows(X), -1)
        what = (f"gives the same output for every row of D (range {np.ptp(out, axis=0).max():.3g} "
                f"over the rows, against a magnitude of {np.abs(out).max():.3g})")
    stalled = "" if check.converged else " and did not converge"
    raise TrainingFailedError(
        f"{owner}: the {name} fitted on all {n_rows(X)} rows of D {what}{stalled}: it learned "
        "nothing from the features, so no release of it would carry a meaningful model, and no "
        f"promise is stated about one. {_FIX}. (Decided from D alone, before D_train is drawn.)",
        issues=[what],
    )


def _released_model(attrs, data):
    """The fitted model whose output is read on ``data.X``: a pipeline's last step (``data.X``
    holds the rows its transformers made), else the release itself."""
    released = attrs["estimator_"]
    return released if data.route is None else released[-1]


def check_releases(owner, results, data, *, stacklevel=4):
    """Refuse a non-finite release; warn about one that predicts one output for every row of D.

    Parameters
    ----------
    owner : str
        First word of the messages.
    results : list of dict
        The attribute dicts of the releases (one per eta), ``estimator_`` each.
    data : TrainingSet
        The fit's data; only D (``data.X``) is read, never ``D_train``.
    stacklevel : int, default=4
        Of the warning.

    Raises
    ------
    TrainingFailedError
        When a release has non-finite parameters or outputs on D.

    Notes
    -----
    A function of the release and D: a post-processing of the release (Izzo et al.,
    Theorem 3), so the error or warning reveals nothing the release does not.
    """
    for attrs in results:
        model = _released_model(attrs, data)
        output = model_output(model, data.X)
        check = inspect_fitted_model(model, output)
        eta = attrs["target_eta_"]
        if check.nonfinite_params or not check.finite_output:
            raise TrainingFailedError(
                f"{owner}: the released {type(model).__name__} (eta={eta:g}) has NaN or infinite "
                f"parameters or outputs on D, so it is not released. {_FIX}; raise eta if the "
                "noise overflowed.",
                issues=["non-finite release"],
            )
        one_class = is_classifier(model) and np.unique(model.predict(data.X)).size == 1
        if one_class or (not is_classifier(model) and check.constant_output):
            what = "one class" if one_class else "one output"
            warnings.warn(
                f"{owner}: the released {type(model).__name__} (eta={eta:g}) predicts {what} for "
                f"every row of D: it is private but useless. The noise may swamp what the learner "
                f"found (a larger eta, or more rows, needs less), or the learner found little. "
                f"{_FIX}. (A check on the release and D only: it reveals nothing the release does "
                "not.)",
                DegenerateReleaseWarning, stacklevel=stacklevel,
            )
