r"""The third stage's exact solves of many pairs at once: :func:`exact_minimisers`.

The one-pair third stage (until session 13; the oracle of tests/calibration/test_exact_stack.py)
solved one swapped objective at a time (damped Newton on
:math:`F_H - \ell_e + \ell_x`) and certified the point it reached by the ball lemma with its
own gradient and Hessian (docs/coupling.md, "Certified distances", stage 3). A fit leaves
thousands of pairs to it on data with rare categories (German credit's full fit: 2,327 solves,
about 2 ms each, half of it the fixed cost of numpy calls). Here the same iteration runs on a
stack of pairs (of one fit or of many): each pair's rows are its fit's with e weighted 0, plus
x's row; each pair's margins, gradient and Hessian are its own BLAS calls (so nothing of a pair
depends on the pairs beside it), the last Hessian also serves the certificate (the one-pair path
forms it again at the same point), each pair's damping is its own
(:func:`~.polish._damped_step` searches a step per problem), and so is its stop test, the
one-pair test on its own decrement. The Newton iterates only steer; each pair's certificate is
:func:`.certify.fit_constants` at the point it reached, the formula of the one-pair path on a
stack (trace :math:`\nu`, :math:`K^{-1}` by the same Cholesky solve), so the bound differs from
the one-pair path's by summation order and by where the iteration stopped, never by its
inequalities.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from skmip.calibration.swap.certify import fit_constants
from skmip.calibration.swap.second_stage import _mv, _vm
from skmip.calibration.swap.stacks import _solve_cholesky as _solve

#: Elements of one (pairs x rows) or (pairs x D x D) array of a chunk of pairs solved together.
_SOLVE_ELEMENTS = 2**20
#: Newton iterations at most (the one-pair path's).
_MAX_STEPS = 100


def swapped_rows(H, e, x):
    r"""The training sets of the pairs: row :math:`p` is ``H[p]`` (or ``H``) with ``e[p]``
    replaced by ``x[p]``, sorted (the rows of :math:`H - e + x`: the exact solves' cache key).

    Raises
    ------
    RuntimeError
        If some ``e[p]`` is not exactly once a row of its ``H``.
    """
    return np.sort(np.where(_leaving(H, e), np.asarray(x)[:, None], H), axis=1)


def _leaving(H, e):
    """Where each pair's ``e`` is in its fit's rows (pairs, k); it must be there once."""
    hit = np.asarray(H) == np.asarray(e)[:, None]
    if not np.all(hit.sum(axis=1) == 1):
        raise RuntimeError("exact_minimisers: each pair's row e must be a row of its fit's H, once.")
    return hit


def exact_minimisers(features, dloss, d2loss, H, b, e, x, P, reg_const, start, whiten, gsc):
    r"""Damped Newton to the minimisers of the objectives on :math:`H_{b_p} - e_p + x_p` for
    pairs :math:`p` of a stack of fits, together, and each one's certified whitened distance to
    its exact minimiser (``inf`` on failure).

    Parameters
    ----------
    features : ndarray (n, D)
        The block's rows.
    dloss, d2loss : callable
        :math:`\ell_i'(u)`, :math:`\ell_i''(u)` at margins ``u`` of rows ``rows`` (broadcast).
    H : ndarray of int (B, k)
        The fits' rows.
    b, e, x : ndarray of int (m,)
        Each pair's fit, leaving row (a row of ``H[b]``) and target.
    P : ndarray (D, D)
        The regulariser's Hessian.
    reg_const : ndarray (B, D)
        Each fit's regulariser gradient less :math:`\theta P`.
    start : ndarray (m, D)
        Where each pair's iteration starts (finite).
    whiten : callable
        Rows of parameters to the noise's whitened coordinates.
    gsc : float
        The loss's self-concordance constant :math:`R`.

    Returns
    -------
    theta : ndarray (m, D)
        The points reached.
    own_error : ndarray (m,)
        :math:`\sqrt{\nu}\,\rho` of :func:`.certify.fit_constants` at each point (trace
        :math:`\nu`), as the one-pair path returned.

    Raises
    ------
    RuntimeError
        If some ``e[p]`` is not exactly once a row of ``H[b[p]]``.

    Notes
    -----
    docs/coupling.md, "Certified distances", stage 3; the ball lemma is fact 3 of
    :mod:`.certify`. Solved in chunks of pairs of :data:`_SOLVE_ELEMENTS`.
    """
    m, (k, D) = len(e), (H.shape[1], P.shape[0])
    width = max(1, _SOLVE_ELEMENTS // max(k, D * D))
    theta, own = np.empty((m, D)), np.empty(m)
    for a in range(0, m, width):
        j = slice(a, a + width)
        problem = _Pairs(features, dloss, d2loss, H, P, reg_const, *(np.asarray(v)[j] for v in (b, e, x)))
        theta[j], own[j] = problem.certify(*problem.solve(np.array(start[j], dtype=np.float64)), whiten, gsc)
    return theta, own


class _Pairs:
    """The swapped objectives of pairs of a stack of fits: gradients and Hessians of a subset
    ``j`` of them (indices into the pairs). Every product is one pair's own BLAS call (gemv or
    gemm per matrix, :func:`~.second_stage._mv`), so a pair's arithmetic does not depend on the
    pairs solved beside it (nor the printed values on how rounds fall into chunks)."""

    def __init__(self, features, dloss, d2loss, H, P, reg_const, b, e, x):
        self.dloss, self.d2loss, self.H, self.P, self.b = dloss, d2loss, H, P, b
        self.F = {f: features[H[f]] for f in np.unique(b).tolist()}  # each fit's rows
        self.keep = ~_leaving(H[b], e)  # (pairs, k): e leaves
        self.reg, self.x, self.fx = reg_const[b], x, features[x]

    def _at(self, fn, theta, j):
        """``fn`` (a loss derivative) at the margins of ``theta`` over the rows of the fits of
        the pairs ``j``, 0 where e leaves (j, k), and at x's row (j,); with ``(fit, pairs)``
        of the pairs' fits."""
        out, bj = np.empty((j.size, self.H.shape[1])), self.b[j]
        groups = [(f, np.flatnonzero(bj == f)) for f in np.unique(bj).tolist()]
        for f, c in groups:
            out[c] = fn(_mv(self.F[f], theta[c]), self.H[f])
        return np.where(self.keep[j], out, 0.0), fn((self.fx[j] * theta).sum(-1), self.x[j]), groups

    def gradient(self, theta, j):
        """Each problem's gradient at ``theta`` (rows of the problems ``j``)."""
        on_h, on_x, groups = self._at(self.dloss, theta, j)
        g = on_x[:, None] * self.fx[j] + self.reg[j] + _vm(theta, self.P)
        for f, c in groups:
            g[c] += _vm(on_h[c], self.F[f])
        return g

    def hessians(self, theta, j):
        """Each problem's Hessian at ``theta``: the one-pair path's product over its fit's rows
        (e's weight 0), plus x's row and P."""
        on_h, on_x, _ = self._at(self.d2loss, theta, j)
        fx = self.fx[j]
        out = on_x[:, None, None] * (fx[:, :, None] * fx[:, None, :]) + self.P
        for i, f in enumerate(self.b[j].tolist()):
            F = self.F[f]
            out[i] += (F.T * on_h[i]) @ F
        return out

    def solve(self, theta):
        r"""Damped Newton on every problem from ``theta`` (m, D): ``(theta, failed, K, fresh)``.
        A problem stops on the one-pair path's test: a
        decrement at rounding level, or one that no longer falls to a quarter of the previous;
        it fails (its bound is ``inf``) where its Hessian is not positive definite or its
        decrement not finite. ``K`` holds each problem's last Hessian, at its final point where
        ``fresh`` (it stopped on the test, not on the iteration count)."""
        from skmip.calibration.swap.polish import _damped_step

        m, D = theta.shape
        failed, fresh, previous = np.zeros(m, dtype=bool), np.zeros(m, dtype=bool), np.full(m, np.inf)
        K = np.empty((m, D, D))
        live = np.arange(m)
        grad = self.gradient(theta, live)
        for _ in range(_MAX_STEPS):
            th = theta[live]
            K[live] = self.hessians(th, live)
            step, ok = _solve(K[live], grad)
            decrement = (step * grad).sum(-1)
            bad = ~ok | ~np.isfinite(decrement)
            failed[live[bad]] = True
            go = ~bad & (decrement > 1e-26 * (1.0 + (th * th).sum(-1))) & (decrement < 0.25 * previous[live])
            fresh[live[~go]] = True
            live, th, step, grad = live[go], th[go], step[go], grad[go]
            if not live.size:
                break
            previous[live] = decrement[go]
            move, grad = _damped_step(lambda t, j=live: self.gradient(t, j), th, step, grad)
            theta[live] = th - move
        return theta, failed, K, fresh

    def certify(self, theta, failed, K, fresh, whiten, gsc):
        """``(theta, own_error)``: the ball lemma at each point with its own gradient and Hessian
        (:func:`.certify.fit_constants`, trace nu); ``inf`` where it failed."""
        own = np.full(theta.shape[0], np.inf)
        j = np.flatnonzero(~failed)
        if j.size:
            th, stale = theta[j], np.flatnonzero(~fresh[j])
            K = K[j]
            if stale.size:  # stopped by the iteration count: the Hessian at the last point
                K[stale] = self.hessians(th[stale], j[stale])
            hinv, ok = _solve(K, None)
            leverage = self._leverages(hinv, j)
            out_error = fit_constants(hinv, self.gradient(th, j), whiten, gsc, leverage, nu="trace")[3]
            own[j[ok]] = out_error[ok]
        return theta, own

    def _leverages(self, hinv, j):
        r""":math:`x_i^\top K_p^{-1}x_i` over each pair's rows (j, k + 1): its fit's (``-inf``
        where e leaves, which no maximum takes and :func:`.certify.fit_constants` clips to 0),
        then x's."""
        on_h = np.empty((j.size, self.H.shape[1]))
        for i, f in enumerate(self.b[j].tolist()):
            F = self.F[f]
            on_h[i] = ((F @ hinv[i]) * F).sum(axis=1)
        fx = self.fx[j]
        on_x = ((fx[:, None, :] @ hinv)[:, 0] * fx).sum(-1)
        return np.concatenate([np.where(self.keep[j], on_h, -np.inf), on_x[:, None]], axis=1)
