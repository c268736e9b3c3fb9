"""Did the models of a membership game train? Checked before any attack scores them.

An attack on models that learned nothing finds nothing: every model of
``LogisticRegression().fit(X * 1e300, y)`` stops at its starting point and predicts 1/2 for
every row, and the audit would read AUC 0.5, advantage 0 -- "no leakage". So the game
records, for every model, whether its fitted parameters and outputs are finite, whether its
output is the same for every row, and whether its optimiser warned that it did not converge
(:func:`skmip.params.learned.inspect_fitted_model`, the one source the defences' checks use too);
:func:`check_training` turns that into a :class:`~skmip.exceptions.TrainingFailedError` (the
audit cannot mean anything) or an :class:`~skmip.exceptions.AuditWarning` (it means less).

=========================================================  =======
finding                                                    outcome
=========================================================  =======
non-finite fitted parameters or outputs, any model         error
the same output for every row and no convergence, most     error
the same output for every row, some or most models         warning
no convergence, most models                                warning
=========================================================  =======

"Most" is more than half. A constant output alone is a warning, not an error: a privacy
mechanism with much noise can legitimately release a model that predicts one output for every
row (its outputs then carry no information at all, about members or anything else), and the
warning says so. Failed convergence alone is a warning too: an iteration cap is often
deliberate (early stopping), and such models still fit their rows. Both together, on most
models, mean the optimiser never left its start: an error.
"""

from __future__ import annotations

import warnings

from skmip.exceptions import AuditWarning, TrainingFailedError
from skmip.params.learned import ModelCheck, inspect_fitted_model

__all__ = ["ModelCheck", "inspect_fitted_model", "check_training"]


def check_training(checks, *, owner: str, estimator_name: str = "the estimator", stacklevel: int = 3) -> list:
    """Refuse a game whose models did not train; warn when they trained badly.

    Parameters
    ----------
    checks : sequence of ModelCheck
        One per model of the game.
    owner : str
        First word of the messages.
    estimator_name : str, default="the estimator"
        How to name the audited estimator in the messages.
    stacklevel : int, default=3
        Of the warnings.

    Returns
    -------
    list of str
        The warnings issued (empty when all is well), for a report to repeat.

    Raises
    ------
    TrainingFailedError
        When any model has non-finite parameters or outputs, or most models predict the
        same output for every row and did not converge.
    """
    k = len(checks)
    errors, notes = [], []
    bad_params = [i for i, c in enumerate(checks) if c.nonfinite_params]
    bad_output = [i for i, c in enumerate(checks) if not c.finite_output]
    constant = [i for i, c in enumerate(checks) if c.constant_output]
    unconverged = [i for i, c in enumerate(checks) if not c.converged]
    if bad_params:
        names = sorted({n for i in bad_params for n in checks[i].nonfinite_params})
        errors.append(f"{len(bad_params)} of {k} models have NaN or inf in their fitted parameters "
                      f"({', '.join(names[:5])})")
    if bad_output:
        errors.append(f"{len(bad_output)} of {k} models output NaN or inf on the pool")
    stuck = 2 * len(set(constant) & set(unconverged)) > k
    if constant:
        text = f"{len(constant)} of {k} models predict the same output for every row"
        (errors if stuck else notes).append(text)
    if unconverged and 2 * len(unconverged) > k:
        text = f"{len(unconverged)} of {k} models did not converge (ConvergenceWarning)"
        (errors if stuck else notes).append(text)
    why = (" -- models that did not learn give an attack nothing to find, and an AUC near 0.5 "
           "would then say nothing about the training algorithm's privacy")
    if errors:
        detail = "; ".join(errors + notes)
        raise TrainingFailedError(
            f"{owner}: the models of {estimator_name} did not train: {detail}{why}. Fix the "
            "training first (scale the features, e.g. StandardScaler in a Pipeline; raise "
            "max_iter; check the data for extreme values), then audit.",
            issues=errors + notes,
        )
    if notes:
        warnings.warn(
            f"{owner}: {'; '.join(notes)} ({estimator_name}){why}. Read a low leakage as a "
            "statement about these models only (a constant model reveals nothing, useful or "
            "private); fix the training (scaling, max_iter, less noise) and audit again.",
            AuditWarning, stacklevel=stacklevel,
        )
    return notes
