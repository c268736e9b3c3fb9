"""Did a fitted model learn? Finite parameters, and outputs that vary over the rows.

One source for every check that a fitted model trained: the audit's, before any attack scores
the models of a membership game (:mod:`skmip.audit.training_check`), and the defences', on the
learner fitted on D before ``D_train`` is drawn and on the release after the noise
(:mod:`skmip.defend._learned`). A model "did not learn" when its fitted parameters or its
outputs hold NaN or inf, or when its output is the same for every row: a
``LogisticRegression`` on features scaled by 1e-8 converges to a minimiser whose
probabilities differ by 1e-15 over the rows, and one on features scaled by 1e-300 to
probabilities that are identical; both predict one class.

"The same output" allows for rounding (:data:`CONSTANT_RTOL`): a column of outputs is
constant when its range is at most ``sqrt(eps)`` (about 1.5e-8) times its largest magnitude,
i.e. when no more than half of float64's digits tell its rows apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CONSTANT_RTOL", "ModelCheck", "is_constant_output", "model_output", "nonfinite_params",
           "inspect_fitted_model"]

#: Outputs whose range over the rows is at most this share of their largest magnitude are
#: the same output: ``sqrt(eps)`` of float64, the usual line below which differences are
#: rounding rather than signal (half the digits).
CONSTANT_RTOL = float(np.sqrt(np.finfo(np.float64).eps))

#: The methods whose result is a model's output on rows, most informative first: a
#: classifier's scores, a regressor's predictions, else a density or a transform (a
#: one-component mixture's ``predict_proba`` is 1 everywhere; its ``score_samples`` is not).
_OUTPUT_METHODS = {
    "classifier": ("predict_proba", "decision_function", "predict"),
    "regressor": ("predict",),
    None: ("score_samples", "transform", "predict"),
}


@dataclass(frozen=True)
class ModelCheck:
    """What one fitted model looks like to the training check.

    Attributes
    ----------
    nonfinite_params : tuple of str
        Names the parameter blocks holding NaN or inf (empty when finite, or when no
        parameter adapter reads the model).
    finite_output : bool
        Whether the recorded output (probabilities, predictions, log-densities) is finite.
    constant_output : bool
        Whether the output is the same for every row (:func:`is_constant_output`).
    converged : bool
        False when fitting raised a :class:`sklearn.exceptions.ConvergenceWarning`.
    """

    nonfinite_params: tuple = ()
    finite_output: bool = True
    constant_output: bool = False
    converged: bool = True

    @property
    def did_not_learn(self):
        """Non-finite parameters or outputs, or one output for every row."""
        return bool(self.nonfinite_params) or not self.finite_output or self.constant_output


def is_constant_output(output) -> bool:
    """Whether a finite output of shape ``(n_rows, ...)`` is the same for every row.

    Each column counts as constant when its range is at most :data:`CONSTANT_RTOL` times its
    largest magnitude (an all-zero column is constant); the output is constant when every
    column is. A single row is never constant (there is nothing to compare).

    Examples
    --------
    >>> is_constant_output([[0.5], [0.5 + 1e-15]]), is_constant_output([[0.5], [0.51]])
    (True, False)
    """
    out = np.asarray(output, dtype=np.float64)
    out = out.reshape(out.shape[0], -1) if out.ndim else out.reshape(1, 1)
    if out.shape[0] < 2 or not np.all(np.isfinite(out)):
        return False
    spread = np.ptp(out, axis=0)
    return bool(np.all(spread <= CONSTANT_RTOL * np.max(np.abs(out), axis=0)))


def model_output(model, X):
    """The model's output on ``X``, or ``None`` if it has none (a
    :class:`~skmip.release.statistic.Statistic` releases numbers, not a function of rows).

    A classifier's first of ``predict_proba``, ``decision_function``, ``predict``; a
    regressor's ``predict``; any other model's first of ``score_samples``, ``transform``,
    ``predict``.
    """
    from sklearn.utils import get_tags

    try:
        kind = get_tags(model).estimator_type
    except Exception:  # noqa: BLE001 - a third-party model without tags: the generic order
        kind = None
    for name in _OUTPUT_METHODS.get(kind, _OUTPUT_METHODS[None]):
        method = getattr(model, name, None)
        if callable(method):
            return np.asarray(method(X))
    return None


def nonfinite_params(model):
    """Names of the parameter blocks of ``model`` that hold NaN or inf, read through its adapter.

    The adapter (:func:`skmip.params.get_adapter`) is the one place that knows where an
    estimator keeps its parameters; a meta-estimator's ``estimator_`` is read when the
    model itself has no adapter. Models without any (trees, forests, k-NN) are checked
    through their outputs only. Returns ``("<class> parameters",)`` when a non-finite value is
    found, else ``()``.
    """
    from skmip.params.registry import get_adapter

    for obj in (model, getattr(model, "estimator_", None)):
        if obj is None:
            continue
        try:
            adapter = get_adapter(obj)
            vector = np.asarray(adapter.get_vector(obj), dtype=np.float64)
        except Exception:  # noqa: BLE001 - no adapter, or one that cannot read this model
            continue
        if not np.all(np.isfinite(vector)):
            return (f"{type(obj).__name__} parameters",)
        return ()
    return ()


def inspect_fitted_model(model, output, convergence_warnings: int = 0) -> ModelCheck:
    """The :class:`ModelCheck` of one fitted model from its raw output on some rows.

    Parameters
    ----------
    model : fitted estimator
    output : ndarray of shape (n_samples, ...) or None
        The model's output before any transformation: ``predict_proba``, ``predict`` or
        ``score_samples`` on the rows (:func:`model_output`), or a callable's signal.
        ``None``: the model has no output on rows; only its parameters are checked.
    convergence_warnings : int, default=0
        Number of :class:`~sklearn.exceptions.ConvergenceWarning` raised by ``fit``.

    Returns
    -------
    ModelCheck
    """
    params = tuple(nonfinite_params(model))
    if output is None:
        return ModelCheck(nonfinite_params=params, converged=convergence_warnings == 0)
    out = np.asarray(output, dtype=np.float64)
    return ModelCheck(
        nonfinite_params=params, finite_output=bool(np.all(np.isfinite(out))),
        constant_output=is_constant_output(out), converged=convergence_warnings == 0,
    )
