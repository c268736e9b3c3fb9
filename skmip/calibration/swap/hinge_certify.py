r"""Certified swap distances for strongly convex objectives with a monotone row derivative
(``LinearSVC``'s squared hinge): :class:`StrongCertifier`, over one block or a stack of them.

For :math:`F(\theta) = \sum_i \ell_i(x_i^\top\theta) + \tfrac12\theta^\top P\theta` with every
:math:`\ell_i` convex and once differentiable (:math:`\ell_i'` non-decreasing) and
:math:`P \succ 0` (liblinear penalises the intercept too), :math:`F` is :math:`P`-strongly
convex: :math:`(\nabla F(a) - \nabla F(b))^\top(a - b) \ge \|a - b\|_P^2`. At the minimiser
:math:`\nabla F(\theta^*) = 0`, so for any point :math:`\tilde\theta`

.. math::

    \|\tilde\theta - \theta^*\|_P^2 \le \nabla F(\tilde\theta)^\top(\tilde\theta - \theta^*)
    \le \|\nabla F(\tilde\theta)\|_{P^{-1}}\|\tilde\theta - \theta^*\|_P,

and the whitened error is at most :math:`\sqrt{\nu_P}\,\|\nabla F(\tilde\theta)\|_{P^{-1}}`,
:math:`\nu_P = \lambda_{\max}(WP^{-1}W^\top)`.

**A stack of blocks** (one against the rest: one problem per class on the same rows). The
objective :math:`\sum_c F_c(\theta_c)` of the stacked parameter is
:math:`\mathrm{blockdiag}(P_c)`-strongly convex, its gradient is the stack of the blocks'
gradients, so the same inequality holds with :math:`\|\nabla F\|_{P^{-1}}^2 = \sum_c
\|\nabla F_c\|_{P_c^{-1}}^2` and :math:`\nu = \lambda_{\max}(\sum_c W_cP_c^{-1}W_c^\top)`
(:math:`W_c` the whitening's columns of block :math:`c`; a diagonal whitening keeps the blocks
apart and :math:`\nu = \max_c\nu_c`). One block is the binary case.

The engine's model is exact for a pair that moves no row across its kink, where the gradient
at its estimate vanishes to rounding; the others are solved by generalised Newton steps
(finite on a piecewise-quadratic objective), all the loose pairs of a fit at once, and certified
the same way. docs/coupling.md, "Certified distances", *The squared hinge*.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from skmip.bounds.rounding import UNIT_ROUNDOFF as _U
from skmip.calibration.swap.certify import RELEASE_TOL
from skmip.calibration.swap.multi_certify import gradient_rounding
from skmip.calibration.swap.stacks import _solve_cholesky

#: Elements of one (rows x pairs) array of the gradients.
_ROW_ELEMENTS = 2**21
#: Elements of one (pairs x rows x parameters) stack of the exact solves' rows (the most a
#: Hessian update gathers).
_SOLVE_ELEMENTS = 2**22
#: A pair whose bound exceeds its estimate by more than this fraction (plus 1% of the fit's
#: median estimate) is solved exactly.
_FALLBACK_RTOL = 0.1
#: A block of a loose pair is solved exactly unless its own term at the estimate is at most this
#: fraction of the pair's estimate (plus the fit's floor), rounding: the bound then exceeds the
#: exact distance by at most ``2 sqrt(K)`` times it besides the fit's own error and the releases'
#: allowance (steering only; the bound is the formula at the point reached).
_EXACT_SHARE = 1e-7
#: Relative allowance for the few roundings of a bound's final sums and products (each a
#: handful of operations on non-negative numbers: at most 8u relative).
_SUM_RTOL = 1e-12


class _NoSums:
    """The engine fills the one-margin certificate's row sums; this one needs none."""

    @staticmethod
    def fill(*args):
        return None


class StrongBlock:
    r"""One strongly convex generalised-linear block of a fit: the gradient of a swapped
    objective over the rows, its :math:`P^{-1}`-norm rounded up, and exact solves.

    Parameters
    ----------
    glm : GLMTerms
        The block's rows (``lipschitz``: the Lipschitz constants of the :math:`\ell_i'`).
    theta0, P, hinv : ndarray
        The fit on ``H``, the regulariser's Hessian (positive definite; ``glm.penalty``, the
        exact one, where the loss declares it), :math:`K^{-1}` (which only steers).
    H : ndarray of int (k,)
        The rows of the fit.
    """

    def __init__(self, glm, theta0, P, hinv, H):
        P = P if glm.penalty is None else glm.penalty
        self.glm, self.theta0, self.P, self.hinv, self.H = glm, theta0, P, hinv, np.asarray(H)
        self.F = glm.features[self.H]
        self.m0 = self.F @ theta0
        self.d1 = glm.dloss(self.m0, self.H)
        D = theta0.size
        self.pinv = linalg.cho_solve(linalg.cho_factor(P, lower=True, check_finite=False), np.eye(D),
                                     check_finite=False)
        self.root_pinv = float(np.sqrt(np.abs(self.pinv).sum(axis=1).max()))  # >= lambda_max(P^-1)^(1/2)
        self.xnorm = np.linalg.norm(self.F, axis=1)
        L = glm.lipschitz[self.H]
        self.lip = (float(self.xnorm**2 @ L), float(self.xnorm @ L))
        self.gamma = 1.01 * (self.H.size + D + 16) * _U
        self.p_norm = float(np.abs(P).sum(axis=1).max()) * np.sqrt(D)
        self.theta_norm = float(np.linalg.norm(theta0))
        self.sum_d1 = float(self.xnorm @ np.abs(self.d1))
        self.r0 = self.F.T @ self.d1 + P @ theta0
        self.d2 = glm.d2loss(self.m0, self.H)
        self.hessian = (self.F.T * self.d2) @ self.F + P  # K, which the exact solves update
        self._position = {int(h): i for i, h in enumerate(self.H)}
        #: :math:`\|\nabla F_H(\theta_0)\|_{P^{-1}}` rounded up: the fit's own residual.
        self.out_norm = float(self._p_norm_of(self.r0[None], self._slack(0.0, 0.0, 0.0))[0])

    def step(self, e, x, c_e, c_x):
        r"""The engine's estimate :math:`\Delta = K^{-1}(c_ex_e - c_xx_x)` of each pair."""
        feats = self.glm.features
        return (c_e[:, None] * feats[e] - c_x[:, None] * feats[x]) @ self.hinv

    def _slack(self, sum_moved, sum_x, step_norm):
        return gradient_rounding(self.gamma, sum_moved + self.sum_d1 + sum_x, self.theta_norm + step_norm,
                                 self.p_norm, 1, self.lip, 1.01 * (self.F.shape[1] + 2) * _U)

    def _p_norm_of(self, g, slack):
        r""":math:`\|g\|_{P^{-1}}` of rows ``g``, plus the rounding ``slack`` (2-norm) converted."""
        sq = np.einsum("pi,ij,pj->p", g, self.pinv, g)
        sq = np.maximum(sq, 0.0) + self.gamma * np.einsum("pi,ij,pj->p", np.abs(g), np.abs(self.pinv), np.abs(g))
        return np.sqrt(sq) + self.root_pinv * slack

    def gradient(self, e, x, Delta):
        r"""``(g, norm)``: :math:`\nabla(F_H - \ell_e + \ell_x)(\theta_0 + \Delta)` of each pair over
        the rows, and its :math:`P^{-1}`-norm rounded up (with its rounding allowance)."""
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
        return g, self._p_norm_of(g, self._slack(sum_moved, sum_x, step_norm))

    def solve(self, e, x, start):
        r"""Generalised Newton (damped) on the objectives of :math:`H - e + x`, stacked over the
        pairs ``(e[i], x[i])`` from ``start`` (rows of parameters): each pair's change of the
        block's minimiser from the fit (only steers: it is certified by its gradient).

        Each pair's rows are H's rows weighted by a mask (0 where e leaves) plus the target's
        row: its Hessian is the fit's updated by the rows whose curvature moved
        (:meth:`_hessians`), its step one solve of the stack, its damping its own
        (:func:`~.polish._damped_step` takes a step per pair); a pair stops on its own test (a
        step that no longer descends, or one at rounding level).
        """
        from skmip.calibration.swap.polish import _damped_step

        glm, F, P, H = self.glm, self.F, self.P, self.H[:, None]
        keep = (self.H[:, None] != np.asarray(e)[None, :]).astype(np.float64)  # (k, pairs): e leaves
        fx = glm.features[x]

        def gradient(theta, j):
            return (glm.dloss(F @ theta.T, H) * keep[:, j]).T @ F + theta @ P + (
                glm.dloss((fx[j] * theta).sum(-1), x[j])[:, None] * fx[j])

        theta = np.where(np.isfinite(start), start, self.theta0)
        live = np.arange(len(x))
        grad = gradient(theta, live)
        for _ in range(100):
            th = theta[live]
            hess = self._hessians(glm.d2loss(F @ th.T, H) * keep[:, live])
            fl = fx[live]
            hess += glm.d2loss((fl * th).sum(-1), x[live])[:, None, None] * (fl[:, :, None] * fl[:, None])
            step = _stacked_solve(hess, grad)
            go = np.isfinite(step).all(-1) & ((step * grad).sum(-1) > 1e-28 * (1.0 + (th * th).sum(-1)))
            live, th, step = live[go], th[go], step[go]
            if not live.size:
                break
            move, grad = _damped_step(lambda t, j=live: gradient(t, j), th, step, grad[go])
            theta[live] = th = th - move
            go = np.linalg.norm(move, axis=-1) > 1e-15 * (1.0 + np.linalg.norm(th, axis=-1))
            live, grad = live[go], grad[go]
            if not live.size:
                break
        return theta - self.theta0

    def _hessians(self, curv):
        r"""The Hessians :math:`\sum_i c_{ip}x_ix_i^\top + P` over H's rows of curvatures ``curv``
        (rows, pairs): the fit's, :math:`K`, plus the rows whose curvature differs from the fit's
        (the squared hinge's: those that crossed their kinks, and e), gathered per pair."""
        diff = curv - self.d2[:, None]
        moved = diff != 0.0
        r = int(moved.sum(axis=0).max(initial=0))
        out = np.repeat(self.hessian[None], curv.shape[1], axis=0)
        if r:
            order = np.argsort(~moved, axis=0, kind="stable")[:r]  # each pair's moved rows first
            G = self.F[order].transpose(1, 0, 2)  # (pairs, r, D); the padding's weight is 0
            out += np.matmul(G.transpose(0, 2, 1) * np.take_along_axis(diff, order, axis=0).T[:, None, :], G)
        return out


def _stacked_solve(hess, grad):
    """:math:`A_i^{-1}g_i` for a stack of positive definite matrices (:func:`~.stacks._solve_cholesky`);
    a pair whose matrix the solver rejects gets a non-finite step (it stops where it is: the
    solve only steers)."""
    step, ok = _solve_cholesky(hess, grad)
    return np.where(ok[:, None], step, np.nan)


def _hypot(parts):
    r""":math:`(\sum_c p_c^2)^{1/2}` of non-negative arrays, rounded up (one part: itself)."""
    if len(parts) == 1:
        return parts[0]
    total = sum(p * p for p in parts)
    return np.sqrt(total) * (1.0 + 2.0 * (len(parts) + 2) * _U)


class StrongCertifier:
    r"""Certified distances of the pairs of one fit of a stack of :math:`P_c`-strongly convex
    generalised-linear blocks that separate (module docstring; binary ``LinearSVC``: one block,
    one against the rest: one per class), with :class:`~.pair_certifier.PairCertifier`'s
    ``bound`` / ``tighten`` interface (one block: arrays of coefficients; several: lists, one
    array per block).

    Parameters
    ----------
    blocks : list of StrongBlock
        The blocks of the fit.
    whitens : list of callable
        Per block: rows of its parameter changes to the noise's whitened coordinates.
    orthogonal : bool
        Whether the blocks' whitened images are in disjoint coordinates (a diagonal noise
        shape), whose squared norms add; else the images add.
    """

    def __init__(self, blocks, whitens, orthogonal):
        self.blocks, self.whitens, self.orthogonal = blocks, whitens, orthogonal
        self.sums = _NoSums()
        self.cache, self.floor = {}, None
        self.k = blocks[0].H.size
        self.nu = self._nu()
        self.out_error = float(np.sqrt(self.nu) * _hypot([np.float64(b.out_norm) for b in blocks]))

    def _nu(self):
        r""":math:`\lambda_{\max}` of :math:`\sum_c W_cP_c^{-1}W_c^\top` (blocks apart: the largest of
        each block's), rounded up by :math:`10^{-12}` of its largest absolute row sum."""
        mats = []
        for b, whiten in zip(self.blocks, self.whitens):
            Wt = whiten(np.eye(b.theta0.size))
            mats.append(Wt.T @ b.pinv @ Wt)
        if not self.orthogonal:
            mats = [sum(mats)]
        return max(float(max(linalg.eigvalsh(M)[-1], 0.0)) + 1e-12 * float(np.abs(M).sum(axis=1).max())
                   for M in mats)

    def _norm(self, deltas):
        """Whitened norm of each pair's stacked change (rows of the blocks' ``deltas``)."""
        images = [whiten(D) for whiten, D in zip(self.whitens, deltas)]
        if self.orthogonal or len(images) == 1:
            return np.sqrt(sum((V * V).sum(-1) for V in images))
        return np.linalg.norm(sum(images), axis=-1)

    def bound(self, dist, norms_e, norms_x, c_e, c_x, det, e_rows, x_rows):
        r"""Certified bounds for pairs laid out as ``dist`` (block :math:`c`'s estimate
        :math:`\Delta_c = K_c^{-1}(c_{e,c}x_e - c_{x,c}x_x)`): the gradients over the rows at the
        estimate, and strong convexity. The estimates and their blocks' gradient norms are kept
        for :meth:`tighten`."""
        shape = np.shape(dist)
        c_e, c_x = (v if isinstance(v, (list, tuple)) else [v] for v in (c_e, c_x))
        e, x = (np.broadcast_to(v, shape).ravel() for v in (e_rows, x_rows))
        ce, cx = ([np.broadcast_to(v, shape).ravel() for v in c] for c in (c_e, c_x))
        dist = np.broadcast_to(dist, shape).ravel()
        if self.floor is None:
            finite = dist[np.isfinite(dist)]
            self.floor = 0.01 * float(np.median(finite)) if finite.size else 0.0
        out = np.empty(e.size)
        # Each pair's estimate and its blocks' gradient norms there, for tighten.
        self._estimates = (shape, [np.empty((e.size, b.theta0.size)) for b in self.blocks],
                           np.empty((len(self.blocks), e.size)))
        width = max(1, _ROW_ELEMENTS // max(self.k, 1))
        for a in range(0, e.size, width):
            j = slice(a, a + width)
            with np.errstate(invalid="ignore", over="ignore"):
                for b, L, ce_b, cx_b in zip(self.blocks, self._estimates[1], ce, cx):
                    L[j] = b.step(e[j], x[j], ce_b[j], cx_b[j])
            out[j] = self._certify(e[j], x[j], [L[j] for L in self._estimates[1]], self._estimates[2][:, j])
        return out.reshape(shape)

    def _loose(self, bound, dist):
        return ~(bound <= dist * (1.0 + _FALLBACK_RTOL) + self.floor + 1e-12)

    def _certify(self, e, x, deltas, gnorms=None):
        r""":math:`\|W\Delta\| + \sqrt\nu\,\|\nabla F_{\rm in}\|_{P^{-1}}` + the fit's own error +
        the releases' allowance, for the point :math:`\theta_0 + \Delta` (any point bounds the
        distance: a non-finite one is replaced by the fit itself); the blocks' gradient norms into
        ``gnorms`` (K, pairs) where given."""
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.logical_and.reduce([np.isfinite(D).all(axis=-1) for D in deltas])
            deltas = [np.where(finite[:, None], D, 0.0) for D in deltas]
            parts = [b.gradient(e, x, D)[1] for b, D in zip(self.blocks, deltas)]
            if gnorms is not None:
                gnorms[...] = parts
            bound = (self._norm(deltas) + np.sqrt(self.nu) * _hypot(list(parts)) + self.out_error
                     + 2 * RELEASE_TOL) * (1.0 + _SUM_RTOL)
        return np.where(np.isfinite(bound), bound, np.inf)

    def tighten(self, dist, certified, x_rows, e_rows, c_e, c_x, det):
        """Exact solves for the pairs whose bound exceeds the estimate by more than 10% (+ the
        floor), from the estimates :meth:`bound` certified, every new pair of the fit at once
        (:meth:`StrongBlock.solve`; each pair (e, x) once per fit: its first occurrence); a
        block whose own term there is rounding keeps it (steering: the bound is
        :meth:`_certify` at the point reached)."""
        loose = self._loose(certified, dist)
        if not loose.any():
            return certified
        shape = np.shape(dist)
        known = self._estimates[0]
        if known != shape:
            raise RuntimeError("StrongCertifier.tighten follows bound on the same pairs.")
        flat = np.flatnonzero(loose)
        e, x = (np.broadcast_to(v, shape).ravel()[flat] for v in (e_rows, x_rows))
        keys = list(zip(e.tolist(), x.tolist()))
        new = {}
        for i, key in enumerate(keys):
            if key not in self.cache:
                new.setdefault(key, i)
        if new:
            sel = np.fromiter(new.values(), dtype=np.intp, count=len(new))
            d = np.broadcast_to(dist, shape).ravel()[flat[sel]]
            self.cache.update(zip(new, self._solved(e[sel], x[sel], flat[sel], d).tolist()))
        out = np.array(certified, dtype=np.float64).reshape(-1)
        out[flat] = np.minimum(out[flat], [self.cache[key] for key in keys])
        return out.reshape(shape)

    def _solved(self, e, x, at, dist):
        """The certified bounds of pairs ``(e, x)`` (their places ``at`` in :meth:`bound`'s
        layout, their estimates ``dist``) at :meth:`exact_points`, in chunks of
        :data:`_SOLVE_ELEMENTS`."""
        width = max(1, _SOLVE_ELEMENTS // (self.k * max(b.theta0.size for b in self.blocks)))
        out = np.empty(e.size)
        for a in range(0, e.size, width):
            j = slice(a, a + width)
            out[j] = self._certify(e[j], x[j], self.exact_points(e[j], x[j], at[j], dist[j]))
        return out

    def exact_points(self, e, x, at, dist):
        """Each block's change for pairs ``(e, x)`` (places ``at`` in :meth:`bound`'s layout,
        estimates ``dist``): its exact solve (:meth:`StrongBlock.solve`) from the engine's estimate,
        or that estimate where the block's own term there is at most
        :data:`_EXACT_SHARE` of the estimate (+ the floor)."""
        _, estimates, norms = self._estimates
        settled = _EXACT_SHARE * (dist + self.floor)
        deltas = []
        for c, (b, L) in enumerate(zip(self.blocks, estimates)):
            D = L[at]
            solve = ~(np.sqrt(self.nu) * norms[c, at] <= settled)
            if solve.any():
                with np.errstate(invalid="ignore", over="ignore"):
                    D[solve] = b.solve(e[solve], x[solve], b.theta0 + D[solve])
            deltas.append(D)
        return deltas


def strong_certifier(parts, whitener):
    """The :class:`StrongCertifier` of one fit: ``parts`` = ``(glm, theta0, P, hinv, H, index)``
    per block, ``whitener`` the noise's (:class:`~.whitening._Whitener`)."""
    blocks = [StrongBlock(glm, theta0, P, hinv, H) for glm, theta0, P, hinv, H, _ in parts]
    whitens = [lambda V, index=index: whitener.apply(V, index) for *_, index in parts]
    return StrongCertifier(blocks, whitens, whitener.diagonal)
