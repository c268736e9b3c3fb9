r"""Certified swap distances for strongly convex objectives with a monotone row derivative
(``LinearSVC``'s squared hinge): :class:`StrongCertifier`.

For :math:`F(\theta) = \sum_i \ell_i(x_i^\top\theta) + \tfrac12\theta^\top P\theta` with every
:math:`\ell_i` convex and once differentiable (:math:`\ell_i'` non-decreasing) and
:math:`P \succ 0` (liblinear penalises the intercept too), :math:`F` is :math:`P`-strongly
convex: :math:`(\nabla F(a) - \nabla F(b))^\top(a - b) \ge \|a - b\|_P^2`. At the minimiser
:math:`\nabla F(\theta^*) = 0`, so for any point :math:`\tilde\theta`

.. math::

    \|\tilde\theta - \theta^*\|_P^2 \le \nabla F(\tilde\theta)^\top(\tilde\theta - \theta^*)
    \le \|\nabla F(\tilde\theta)\|_{P^{-1}}\|\tilde\theta - \theta^*\|_P,

and the whitened error is at most :math:`\sqrt{\nu_P}\,\|\nabla F(\tilde\theta)\|_{P^{-1}}`,
:math:`\nu_P = \lambda_{\max}(WP^{-1}W^\top)`. The engine's model is exact for a pair that moves
no row across its kink, where the gradient at its estimate vanishes to rounding; the others
are solved by generalised Newton steps (finite on a piecewise-quadratic objective) and
certified the same way. docs/coupling.md, "Certified distances", *The squared hinge*.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from skmip.calibration.swap.certify import RELEASE_TOL
from skmip.calibration.swap.multi_certify import gradient_rounding

#: Elements of one (rows x pairs) array of the gradients.
_ROW_ELEMENTS = 2**21
#: A pair whose bound exceeds its estimate by more than this fraction (plus 1% of the fit's
#: median estimate) is solved exactly.
_FALLBACK_RTOL = 0.1
_U = 2.0**-53


class _NoSums:
    """The engine fills the one-margin certificate's row sums; this one needs none."""

    @staticmethod
    def fill(*args):
        return None


class StrongCertifier:
    r"""Certified distances of the pairs of one fit of a :math:`P`-strongly convex
    generalised-linear block (module docstring), with :class:`~.pair_certifier.PairCertifier`'s
    ``bound`` / ``tighten`` interface.

    Parameters
    ----------
    glm : GLMTerms
        The block's rows (``lipschitz``: the Lipschitz constants of the :math:`\ell_i'`).
    theta0, P, hinv : ndarray
        The fit on ``H``, the regulariser's Hessian (positive definite), :math:`K^{-1}`.
    H : ndarray of int (k,)
        The rows of the fit.
    whiten : callable
        Rows of parameter changes to the noise's whitened coordinates.
    """

    def __init__(self, glm, theta0, P, hinv, H, whiten):
        self.glm, self.theta0, self.P, self.hinv, self.H, self.whiten = glm, theta0, P, hinv, np.asarray(H), whiten
        self.sums = _NoSums()
        self.cache, self.floor = {}, None
        self.F = glm.features[self.H]
        self.m0 = self.F @ theta0
        self.d1 = glm.dloss(self.m0, self.H)
        D = theta0.size
        self.pinv = linalg.cho_solve(linalg.cho_factor(P, lower=True, check_finite=False), np.eye(D),
                                     check_finite=False)
        Wt = whiten(np.eye(D))
        self.nu = float(max(linalg.eigvalsh(Wt.T @ self.pinv @ Wt)[-1], 0.0))
        self.root_pinv = float(np.sqrt(np.abs(self.pinv).sum(axis=1).max()))  # >= lambda_max(P^-1)^(1/2)
        self.xnorm = np.linalg.norm(self.F, axis=1)
        L = glm.lipschitz[self.H]
        self.lip = (float(self.xnorm**2 @ L), float(self.xnorm @ L))
        self.gamma = 1.01 * (self.H.size + D + 16) * _U
        self.p_norm = float(np.abs(P).sum(axis=1).max()) * np.sqrt(D)
        self.theta_norm = float(np.linalg.norm(theta0))
        self.sum_d1 = float(self.xnorm @ np.abs(self.d1))
        self.r0 = self.F.T @ self.d1 + P @ theta0
        self._position = {int(h): i for i, h in enumerate(self.H)}
        g0 = self._p_norm_of(self.r0[None], self._slack(0.0, 0.0, 0.0))[0]
        self.out_error = float(np.sqrt(self.nu) * g0)

    def _slack(self, sum_moved, sum_x, step_norm):
        return gradient_rounding(self.gamma, sum_moved + self.sum_d1 + sum_x, self.theta_norm + step_norm,
                                 self.p_norm, 1, self.lip, 1.01 * (self.F.shape[1] + 2) * _U)

    def _p_norm_of(self, g, slack):
        r""":math:`\|g\|_{P^{-1}}` of rows ``g``, plus the rounding ``slack`` (2-norm) converted."""
        sq = np.einsum("pi,ij,pj->p", g, self.pinv, g)
        sq = np.maximum(sq, 0.0) + self.gamma * np.einsum("pi,ij,pj->p", np.abs(g), np.abs(self.pinv), np.abs(g))
        return np.sqrt(sq) + self.root_pinv * slack

    def bound(self, dist, norms_e, norms_x, c_e, c_x, det, e_rows, x_rows):
        """Certified bounds for pairs laid out as ``dist`` (:math:`\\Delta = c_e K^{-1}x_e -
        c_xK^{-1}x_x`): the gradient at the estimate over the rows, and strong convexity."""
        shape = np.shape(dist)
        e, x = (np.broadcast_to(v, shape).ravel() for v in (e_rows, x_rows))
        ce, cx = (np.broadcast_to(v, shape).ravel() for v in (c_e, c_x))
        feats = self.glm.features
        if self.floor is None:
            finite = np.asarray(dist)[np.isfinite(dist)]
            self.floor = 0.01 * float(np.median(finite)) if finite.size else 0.0
        out = np.empty(e.size)
        width = max(1, _ROW_ELEMENTS // max(self.H.size, 1))
        for a in range(0, e.size, width):
            j = slice(a, a + width)
            Delta = (ce[j, None] * feats[e[j]] - cx[j, None] * feats[x[j]]) @ self.hinv
            out[j] = self._certify(e[j], x[j], Delta)
        return out.reshape(shape)

    def _certify(self, e, x, Delta):
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(Delta).all(axis=-1)
            Delta = np.where(finite[:, None], Delta, 0.0)
            g, slack = self._gradient(e, x, Delta)
            err = np.sqrt(self.nu) * self._p_norm_of(g, slack)
            dist = np.linalg.norm(self.whiten(Delta), axis=-1) * (1.0 + 1e-12)
            bound = dist + err + self.out_error + 2 * RELEASE_TOL
        return np.where(np.isfinite(bound), bound, np.inf)

    def _gradient(self, e, x, Delta):
        """The gradient of :math:`F_H - \\ell_e + \\ell_x` at :math:`\\theta_0 + \\Delta` for each
        pair, and its rounding allowance (2-norm)."""
        glm, F = self.glm, self.F
        m = Delta.shape[0]
        moved = glm.dloss(self.m0[:, None] + F @ Delta.T, self.H[:, None])  # (k, m)
        pos = np.array([self._position[int(v)] for v in e], dtype=np.intp)
        sum_moved = self.xnorm @ np.abs(moved)
        moved -= self.d1[:, None]
        moved[pos, np.arange(m)] = -self.d1[pos]  # e leaves: its gradient at the fit removed
        fx = glm.features[x]
        gx = glm.dloss((fx * (self.theta0 + Delta)).sum(-1), x)
        g = moved.T @ F + self.r0 + Delta @ self.P + gx[:, None] * fx
        nx = np.linalg.norm(fx, axis=-1)
        step_norm = np.linalg.norm(Delta, axis=-1)
        sum_x = nx * np.abs(gx) + 2.0 * (self.theta_norm + step_norm) * nx**2 * glm.lipschitz[x] + 8.0 * nx * glm.lipschitz[x]
        return g, self._slack(sum_moved, sum_x, step_norm)

    def tighten(self, dist, certified, x_rows, e_rows, c_e, c_x, det):
        """Exact solves for the pairs whose bound exceeds the estimate by more than 10%."""
        loose = ~(certified <= dist * (1.0 + _FALLBACK_RTOL) + self.floor + 1e-12)
        if not loose.any():
            return certified
        out = certified.copy()
        shape = np.shape(dist)
        x_rows, e_rows, c_e, c_x = (np.broadcast_to(v, shape) for v in (x_rows, e_rows, c_e, c_x))
        feats = self.glm.features
        for idx in zip(*np.nonzero(loose)):
            e, x = int(e_rows[idx]), int(x_rows[idx])
            if (e, x) not in self.cache:
                start = self.theta0 + (c_e[idx] * feats[e] - c_x[idx] * feats[x]) @ self.hinv
                self.cache[(e, x)] = self._exact(e, x, start)
            out[idx] = min(out[idx], self.cache[(e, x)])
        return out

    def _exact(self, e, x, start):
        """Generalised Newton (damped) on the objective of :math:`H - e + x` from ``start``; the
        certified bound on the distance of its minimiser from the fit."""
        from skmip.calibration.swap.polish import _damped_step

        glm, P = self.glm, self.P
        rows = np.sort(np.r_[self.H[self.H != e], x])
        F = glm.features[rows]

        def gradient(theta):
            return F.T @ glm.dloss(F @ theta, rows) + P @ theta

        theta = np.where(np.isfinite(start), start, self.theta0)
        grad = gradient(theta)
        for _ in range(100):
            hess = (F.T * glm.d2loss(F @ theta, rows)) @ F + P
            step = linalg.cho_solve(linalg.cho_factor(hess, lower=True, check_finite=False), grad, check_finite=False)
            if not np.all(np.isfinite(step)) or float(step @ grad) <= 1e-28 * (1.0 + float(theta @ theta)):
                break
            move, grad = _damped_step(gradient, theta, step, grad)
            theta = theta - move
            if np.linalg.norm(move) <= 1e-15 * (1.0 + np.linalg.norm(theta)):
                break
        d = theta - self.theta0
        g, slack = self._gradient(np.array([e]), np.array([x]), d[None])
        err = float(np.sqrt(self.nu) * self._p_norm_of(g, slack)[0])
        dist = float(np.linalg.norm(self.whiten(d[None])[0])) * (1.0 + 1e-12)
        bound = dist + err + self.out_error + 2 * RELEASE_TOL
        return bound if np.isfinite(bound) else np.inf
