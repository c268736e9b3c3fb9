"""Carrying a fit to the exact minimiser of its registered objective, and checking it is there."""

from __future__ import annotations

import copy

import numpy as np
from scipy import linalg, sparse

from skmip.utils.rows import n_rows
from skmip.params import get_adapter

from skmip.calibration.swap._common import _OWNER, _fit_vector
from skmip.calibration.losses.registry import get_smooth_loss, gradient_sum
from skmip.calibration.swap.stacks import _cho_inverse, _cholesky, _data_hessian, _solve_pos

#: Below this many flops per Hessian (k D^2), Newton's method is cheaper than chord steps.
_CHORD_MIN_WORK = 5e6
#: Largest solver error, relative to the median swap distance of a fit, that the influence
#: engines accept (they model the exact minimiser).
_SOLVER_RTOL = 1e-2
#: Elements of the features gathered for one stack of fits iterated together (memory cap).
_STACK_ELEMENTS = 2**22
#: Solver error, in units of the whitening scale, that is rounding whatever the distances.
_SOLVER_ATOL = 1e-10


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
            "register one with skmip.calibration.swap.register_smooth_loss."
        )
    adapter = get_adapter(fitted, params)
    Xd = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
    rows = np.arange(Xd.shape[0])
    _polish(fitted, loss, adapter, Xd, None if y is None else np.asarray(y), rows, sample_weight)
    return fitted


def _solver_step(block, factor, fit_rows):
    """Newton step H^-1 grad F_H(theta_H): how far the fit is from the minimiser of the
    declared objective (solver tolerance, or a wrong objective)."""
    grad = gradient_sum(block, fit_rows) + block.regularizer_gradient
    return linalg.cho_solve(factor, grad, check_finite=False)


def _check_solver_error(err, values, k):
    """Raise if the fit's own error is not negligible next to the swap distances."""
    if 2.0 * err <= _SOLVER_ATOL:
        return  # rounding whatever the distances (below): no median to take
    scale = float(np.median(values[np.isfinite(values)])) if np.isfinite(values).any() else 0.0
    # Two fits enter each distance, so their errors can add up to 2 err.
    # Below _SOLVER_ATOL (whitened units) both the error and the distances are rounding: a
    # fit that does not depend on the rows swapped (e.g. a constant target) has nothing to check.
    if scale > 0 and 2.0 * err > max(_SOLVER_RTOL * scale, _SOLVER_ATOL):
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
        raise _not_convex() from None


def _not_convex():
    return ValueError(
        f"{_OWNER}: the objective's Hessian at the fit is not positive definite (e.g. an "
        "unpenalised model on separable or collinear data); the influence engines need "
        "a strictly convex objective. Add regularisation or use engine='refit'."
    )


def _damped(gradient, theta, step, grad):
    """``t * step`` with t in (0, 1] near the minimum of the convex objective along the step.

    The step is a descent direction (a positive definite matrix times the gradient), so the
    directional derivative d(t) = -step' grad F(theta - t step) increases with t from
    d(0) < 0. Unless d(1) has overshot past half of |d(0)| the full step is taken (always,
    once Newton's method converges quadratically); else regula falsi on [0, 1] finds the
    root of d (one step is exact for a quadratic). Without it Newton's and chord steps can
    cycle far from the minimiser (seen on outlying targets of standardized adult data).

    Works row by row on a stack of independent problems too: ``theta``, ``step`` and
    ``grad`` of shape (..., D), ``gradient`` mapping such a stack to its gradients; each
    problem gets its own t (a problem with a zero step keeps t = 1, a zero move).
    """
    return _damped_step(gradient, theta, step, grad)[0]


def _damped_step(gradient, theta, step, grad):
    """:func:`_damped`, and the gradient at ``theta - t * step``: the line search has just
    evaluated it (its last evaluation is at every problem's final t), and the iteration
    needs it next."""
    at = []

    def slope(t):
        at[:] = [gradient(theta - t[..., None] * step)]
        return -(step * at[0]).sum(axis=-1)

    d0 = -(step * grad).sum(axis=-1)
    t = np.ones(d0.shape)
    d1 = slope(t)
    search = d1 > -0.5 * d0
    if np.any(search):
        lo, hi, dlo, dhi = np.zeros(d0.shape), t.copy(), d0, d1
        for _ in range(20):
            guess = np.where(dhi > dlo, lo + (hi - lo) * dlo / np.where(dhi > dlo, dlo - dhi, -1.0),
                             0.5 * (lo + hi))
            t = np.where(search, guess, t)
            dt = slope(t)
            search = search & (np.abs(dt) > 0.1 * np.abs(d0))
            if not np.any(search):
                break
            lo, dlo = np.where(search & (dt < 0), t, lo), np.where(search & (dt < 0), dt, dlo)
            hi, dhi = np.where(search & (dt >= 0), t, hi), np.where(search & (dt >= 0), dt, dhi)
    return t[..., None] * step, at[0]


def _regulariser_hessian(block, H):
    """The regulariser's Hessian P (constant for the quadratic penalties of the built-in
    losses): the block's Hessian minus the data part on H."""
    glm = block.glm
    FH = glm.features[H]
    P = block.hessian - (FH.T * glm.d2loss(glm.margins[H], H)) @ FH
    return 0.5 * (P + P.T)


class SolverFits:
    """Fits on row subsets by the estimator's own solver, optionally polished (picklable)."""

    def __init__(self, estimator, adapter, X, y, fit_params, polish=False, loss=None, Xd=None):
        self.estimator, self.adapter, self.X, self.y = estimator, adapter, X, y
        self.fit_params, self.polish, self.loss, self.Xd = fit_params, polish, loss, Xd

    def __call__(self, rows):
        n = n_rows(self.X)
        fitted, theta = _fit_vector(self.estimator, self.adapter, self.X, self.y, rows, self.fit_params, n)
        if self.polish:
            theta = _polish(fitted, self.loss, self.adapter, self.Xd, self.y, rows,
                            self.fit_params.get("sample_weight"))
        return fitted, theta

    def vectors(self, row_sets):
        """Parameter vectors of the fits on each row set, shape (len, n_params)."""
        return np.array([self(rows)[1] for rows in row_sets])

    def regulariser_hessian(self, block, rows):
        """The regulariser's Hessian P of a generalised-linear ``block`` fitted on ``rows``."""
        return _regulariser_hessian(block, rows)


class _StackRows:
    """The rows ``rows`` (B, k) of ``features`` (n, D), for the products of the chord steps.

    Gathered once into a (B, k, D) array where that holds at most ``_STACK_ELEMENTS``
    values; else read a chunk of rows at a time (no copy of the fit's rows at large k:
    the products cost the same, the memory stays O(chunk D)).
    """

    def __init__(self, features, rows):
        self.features, self.rows = features, rows
        self.F = features[rows] if rows.size * features.shape[1] <= _STACK_ELEMENTS else None

    def _chunks(self, sel):
        rows = self.rows[sel]
        if self.F is not None:
            yield slice(None), self.F[sel]
            return
        width = max(1, _STACK_ELEMENTS // (rows.shape[0] * self.features.shape[1]))
        for a in range(0, rows.shape[1], width):
            c = slice(a, a + width)
            yield c, self.features[rows[:, c]]

    def margins(self, th, sel=slice(None)):
        """``F @ th`` per problem: (B', k) for ``th`` (B', D) and the problems ``sel``."""
        if self.F is not None:
            return (self.F[sel] @ th[..., None])[..., 0]
        out = np.empty(self.rows[sel].shape)
        for c, F in self._chunks(sel):
            out[:, c] = (F @ th[..., None])[..., 0]
        return out

    def transposed_times(self, d):
        """``F' d`` per problem: (B, D) for ``d`` (B, k)."""
        if self.F is not None:
            return (np.swapaxes(self.F, 1, 2) @ d[..., None])[..., 0]
        out = np.zeros((self.rows.shape[0], self.features.shape[1]))
        for c, F in self._chunks(slice(None)):
            out += (np.swapaxes(F, 1, 2) @ d[:, c, None])[..., 0]
        return out

    def gram(self, w, sel=slice(None)):
        """``sum_i w_i x_i x_i'`` per problem (:func:`~.stacks._data_hessian`)."""
        if self.F is not None:
            return _data_hessian(self.F[sel], w)
        out = 0.0
        for c, F in self._chunks(sel):
            out = out + _data_hessian(F, w[:, c])
        return out


class MinimiserFits(SolverFits):
    r"""Fits that *are* the exact minimiser, from a warm start, without the estimator's solver.

    With ``polish=True`` the learner analysed is the exact minimiser of the registered
    (strictly convex) objective on the rows, which does not depend on where an iteration
    starts. So the fits of a calibration start from ``template``, a polished fit on
    ``template_rows`` (another subset of D of the same size, close to every other one):

    * generalised-linear blocks: chord iterations with the template's factorised Hessian,
      :math:`\theta \leftarrow \theta - \mathbf{H}_t^{-1}\nabla F_H(\theta)`. Each costs a
      gradient, :math:`O(kD)`, instead of a Hessian, :math:`O(kD^2)`; they converge linearly
      at the rate :math:`\|\mathbf{H}_t^{-1}(\nabla^2F_H - \mathbf{H}_t)\|`, small because two
      random k-subsets of D have nearly the same curvature (a few percent on
      ``load_breast_cancer``);
    * other smooth losses: Newton's method (:func:`_polish`) from the template.

    Both stop at the exact minimiser to rounding. Should they fail, the solver and the polish
    take over, so the result is the same minimiser in every case; the caller's solver check
    (:func:`_check_solver_error`) verifies it on every fit.
    """

    def __init__(self, estimator, adapter, X, y, fit_params, loss, Xd, template, template_rows):
        super().__init__(estimator, adapter, X, y, fit_params, polish=True, loss=loss, Xd=Xd)
        self.template = template
        self.theta = np.asarray(adapter.get_vector(template), dtype=np.float64).ravel()
        blocks = loss.blocks(template, Xd, y, template_rows, fit_params.get("sample_weight"))
        self.chord = None
        if all(b.glm is not None for b in blocks):
            self.chord = []
            for b in blocks:
                # The regulariser's Hessian P and its gradient's constant r0: grad R = P theta + r0.
                P = _regulariser_hessian(b, template_rows)
                r0 = b.regularizer_gradient - P @ b.theta
                self.chord.append((b.index, _factor(b), P, r0, b.glm))

    def _chord(self, rows, max_iter=100):
        """Damped chord steps per block while they contract (each step at most half the
        last), then damped Newton steps with exact Hessians: rare features that only some
        subsets contain make the template's curvature a poor model in a few directions.
        Where a Hessian is dear (k D^2 above ``_CHORD_MIN_WORK``) each one is kept while the
        steps it gives shrink at least 4 times, and formed afresh at the next iterate when not.

        ``rows`` (B, k): the row sets of B independent fits, iterated together as a stack
        (each with its own step sizes and stopping); returns the parameter vectors (B, n_params)
        and a mask of the fits that converged.
        """
        B = rows.shape[0]
        theta = np.tile(self.theta, (B, 1))
        ok = np.ones(B, dtype=bool)
        for index, factor, P, r0, glm in self.chord:
            F = _StackRows(glm.features, rows)  # (B, k, D), gathered or read by chunks

            def gradient(th, F=F, P=P, r0=r0, glm=glm):
                return F.transposed_times(glm.dloss(F.margins(th), rows)) + th @ P + r0

            # Newton from the start where a Hessian is cheap; chord steps first where not.
            th, previous = theta[:, index], np.full(B, np.inf)
            lagged = rows.shape[1] * glm.features.shape[1] ** 2 > _CHORD_MIN_WORK
            newton = np.full(B, not lagged)
            # Where a Hessian is dear, Newton's method keeps each one while its steps shrink
            # at least 4 times (Shamanskii's variant: such a step costs O(kD), not O(kD^2)).
            kept, current = np.zeros(th.shape + th.shape[-1:]), np.zeros(B, dtype=bool)
            active = ok.copy()
            grad = gradient(th)
            for _ in range(max_iter):
                step = np.zeros_like(th)
                if np.any(newton & active) and not lagged:
                    curv = glm.d2loss(F.margins(th), rows)
                    step, solved = _solve_pos(F.gram(curv) + P, grad, newton & active)
                    ok &= solved | ~(newton & active)
                    active &= ok
                elif np.any(newton & active):
                    need = newton & active & ~current
                    if np.any(need):
                        curv = glm.d2loss(F.margins(th[need], need), rows[need])
                        chol, solved = _cholesky(F.gram(curv, need) + P, np.ones(int(need.sum()), dtype=bool))
                        kept[need] = _cho_inverse(chol)
                        ok[need] &= solved
                        current |= need
                        active &= ok
                    step = np.where((newton & active)[:, None], (kept @ grad[..., None])[..., 0], 0.0)
                if not np.all(newton):
                    chord = linalg.cho_solve(factor, grad.T, check_finite=False).T
                    step = np.where(newton[:, None], step, chord)
                # Convergence is judged on the full step (a measure of the gradient), never on
                # the damped one: a short damped step says nothing about being at the minimum.
                size, scale = np.linalg.norm(step, axis=1), 1.0 + np.linalg.norm(th, axis=1)
                ok &= np.isfinite(size) | ~active
                active &= ok
                step = np.where(active[:, None], step, 0.0)
                move, grad = _damped_step(gradient, th, step, grad)
                th = th - move
                active &= ~((size <= 1e-14 * scale) | ((size >= 0.5 * previous) & (size <= 1e-9 * scale)))
                if not np.any(active):
                    break
                current &= size <= 0.25 * previous  # else a fresh Hessian at the next iterate
                newton |= size > 0.5 * previous
                previous = size
            ok &= ~active
            theta[:, index] = th
        return theta, ok

    def regulariser_hessian(self, block, rows):
        """P is constant for the quadratic penalties the refinement models: the template's,
        already formed, instead of a Hessian over ``rows`` formed again."""
        for index, _, P, _, _ in self.chord or ():
            if np.array_equal(index, block.index):
                return P
        return super().regulariser_hessian(block, rows)

    def vectors(self, row_sets):
        """Parameter vectors of the fits on each row set (equal sizes), shape (len, n_params):
        stacks of fits iterated together (:meth:`_chord`), any that fails by :meth:`__call__`."""
        row_sets = np.asarray(row_sets)
        if self.chord is None or not len(row_sets):
            return super().vectors(row_sets)
        per_fit = row_sets.shape[1] * max(idx.size for idx, *_ in self.chord)
        width = max(1, _STACK_ELEMENTS // per_fit)
        out = np.empty((len(row_sets), self.theta.size))
        for start in range(0, len(row_sets), width):
            stack = row_sets[start:start + width]
            out[start:start + width], ok = self._chord(stack)
            for i in np.flatnonzero(~ok):
                out[start + i] = self(stack[i])[1]
        return out

    def __call__(self, rows):
        fitted = copy.deepcopy(self.template)
        theta, ok = self._chord(np.asarray(rows)[None]) if self.chord is not None else (None, [False])
        if ok[0]:
            theta = theta[0]
            self.adapter.set_vector(fitted, theta)
            return fitted, theta
        try:
            theta = _polish(fitted, self.loss, self.adapter, self.Xd, self.y, rows,
                            self.fit_params.get("sample_weight"), max_iter=20)
        except (ValueError, linalg.LinAlgError):
            return super().__call__(rows)
        return fitted, theta
