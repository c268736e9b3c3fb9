"""Carrying a fit to the exact minimiser of its registered objective, and checking it is there."""

from __future__ import annotations

import copy

import numpy as np
from scipy import linalg, sparse

from skmip.params import get_adapter

from ._common import _OWNER, _fit_vector
from .losses import get_smooth_loss

#: Largest solver error, relative to the median swap distance of a fit, that the influence
#: engines accept (they model the exact minimiser).
_SOLVER_RTOL = 1e-2


def _polish(fitted, loss, adapter, Xd, y, rows, sample_weight, max_iter=50, rtol=1e-13):
    """Newton's method on the registered objective from the solver's output, in place.

    Returns the polished parameter vector. Newton's method converges quadratically from a
    point as close as a solver's output, so a handful of steps reach machine precision --
    that of the estimator's own storage (float32 parameters stall near 1e-7; the steps then
    stop shrinking, which is where we stop).
    """
    theta = np.asarray(adapter.get_vector(fitted), dtype=np.float64).ravel()
    previous = np.inf
    for _ in range(max_iter):
        step = np.zeros_like(theta)
        for b in loss.blocks(fitted, Xd, y, rows, sample_weight):
            step[b.index] = _solver_step(b, _factor(b), rows)
        size, scale = np.linalg.norm(step), 1.0 + np.linalg.norm(theta)
        if not np.isfinite(size):
            break
        if size <= rtol * scale or (size >= 0.5 * previous and size <= 1e-5 * scale):
            return np.asarray(adapter.get_vector(fitted), dtype=np.float64).ravel()
        theta = theta - step
        adapter.set_vector(fitted, theta)
        previous = size
    raise ValueError(
        f"{_OWNER}: Newton's method on the registered objective of {type(fitted).__name__} did "
        f"not converge in {max_iter} steps from the solver's output; check the estimator "
        "minimises that objective, or use engine='refit'."
    )


def polish_to_minimiser(fitted, X, y=None, *, sample_weight=None, params="auto"):
    r"""Carry a fitted smooth convex model to the exact minimiser of its objective, in place.

    A solver stops at a tolerance (``LogisticRegression``'s default ``tol=1e-4``), so its
    output is the minimiser plus an error that depends on the data. The ``"newton"`` and
    ``"influence"`` engines of :func:`estimate_swap_deltas` describe the exact minimiser;
    polishing every fit they make, and the released fit, makes the learner *be* that
    minimiser, so the engines' model is the algorithm. Newton steps on the registered
    objective (:func:`get_smooth_loss`) from the solver's output converge quadratically.

    Parameters
    ----------
    fitted : estimator instance
        A fitted estimator with a registered smooth loss.
    X : array_like of shape (n_samples, n_features)
        The rows it was fitted on.
    y : array_like, default=None
        Their targets.
    sample_weight : array_like, default=None
        The weights it was fitted with.
    params : "auto", list of str, or ParamAdapter, default="auto"
        How parameters are read and written.

    Returns
    -------
    estimator
        ``fitted``, its parameters now the exact minimiser (to ~1e-13 relative).

    Raises
    ------
    TypeError
        If no smooth loss is registered for the estimator.
    ValueError
        If Newton's method does not converge (the estimator minimises another objective).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> rough = LogisticRegression(C=0.1, tol=1e-2).fit(X, y)
    >>> exact = LogisticRegression(C=0.1, solver="newton-cholesky", tol=1e-12).fit(X, y)
    >>> bool(abs(polish_to_minimiser(rough, X, y).coef_ - exact.coef_).max() < 1e-9)
    True
    """
    loss = get_smooth_loss(fitted)
    if loss is None:
        raise TypeError(
            f"polish_to_minimiser: no smooth loss is registered for {type(fitted).__name__}; "
            "register one with skmip.sensitivity.register_smooth_loss."
        )
    adapter = get_adapter(fitted, params)
    Xd = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
    rows = np.arange(Xd.shape[0])
    _polish(fitted, loss, adapter, Xd, None if y is None else np.asarray(y), rows, sample_weight)
    return fitted


def _solver_step(block, factor, fit_rows):
    """Newton step H^-1 grad F_H(theta_H): how far the fit is from the minimiser of the
    declared objective (solver tolerance, or a wrong objective)."""
    grad = block.gradients[fit_rows].sum(axis=0) + block.regularizer_gradient
    return linalg.cho_solve(factor, grad, check_finite=False)


def _check_solver_error(err, values, k):
    """Raise if the fit's own error is not negligible next to the swap distances."""
    scale = float(np.median(values[np.isfinite(values)])) if np.isfinite(values).any() else 0.0
    # Two fits enter each distance, so their errors can add up to 2 err.
    if scale > 0 and 2.0 * err > _SOLVER_RTOL * scale:
        raise ValueError(
            f"{_OWNER}: the fit on {k} rows is {err:.3g} (in units of the scale w) from the "
            f"minimiser of the objective the influence engines model, against a median swap "
            f"distance of {scale:.3g}. The engines describe the exact minimiser, so the solver's "
            "own error must be negligible: fit to convergence (e.g. tol=1e-10, or "
            "solver='newton-cholesky' for LogisticRegression), check that the estimator "
            "minimises the registered objective, or use engine='refit'."
        )


def _factor(block):
    try:
        return linalg.cho_factor(block.hessian, lower=True, check_finite=False)
    except linalg.LinAlgError:
        raise ValueError(
            f"{_OWNER}: the objective's Hessian at the fit is not positive definite (e.g. an "
            "unpenalised model on separable or collinear data); the influence engines need "
            "a strictly convex objective. Add regularisation or use engine='refit'."
        ) from None


class SolverFits:
    """Fits on row subsets by the estimator's own solver, optionally polished (picklable)."""

    def __init__(self, estimator, adapter, X, y, fit_params, polish=False, loss=None, Xd=None):
        self.estimator, self.adapter, self.X, self.y = estimator, adapter, X, y
        self.fit_params, self.polish, self.loss, self.Xd = fit_params, polish, loss, Xd

    def __call__(self, rows):
        n = self.X.shape[0]
        fitted, theta = _fit_vector(self.estimator, self.adapter, self.X, self.y, rows, self.fit_params, n)
        if self.polish:
            theta = _polish(fitted, self.loss, self.adapter, self.Xd, self.y, rows,
                            self.fit_params.get("sample_weight"))
        return fitted, theta


class MinimiserFits(SolverFits):
    r"""Fits that *are* the exact minimiser, by Newton's method from a warm start.

    With ``polish=True`` the learner analysed is the exact minimiser of the registered
    (strictly convex) objective on the rows, which does not depend on where a solver
    starts. So instead of running the estimator's solver and polishing its output, Newton's
    method starts from ``template`` (a polished fit on another k-subset of the same D, close
    to every other one) and converges quadratically in a few steps of
    :math:`O(kD^2)`: on ``load_breast_cancer`` about 4 times cheaper than L-BFGS, and no
    estimator machinery per fit. Should Newton's method fail from there (it has no line
    search), the solver and the polish take over, so the result is the same minimiser.
    """

    def __init__(self, estimator, adapter, X, y, fit_params, loss, Xd, template):
        super().__init__(estimator, adapter, X, y, fit_params, polish=True, loss=loss, Xd=Xd)
        self.template = template

    def __call__(self, rows):
        fitted = copy.deepcopy(self.template)
        try:
            theta = _polish(fitted, self.loss, self.adapter, self.Xd, self.y, rows,
                            self.fit_params.get("sample_weight"), max_iter=20)
        except (ValueError, linalg.LinAlgError):
            return super().__call__(rows)
        return fitted, theta
