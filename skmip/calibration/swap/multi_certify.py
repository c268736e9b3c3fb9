r"""Certified swap distances of the K-margin ``"newton"`` engine (multinomial logistic regression).

The engine (:mod:`skmip.calibration.swap.multinomial`) estimates the minimiser of the swapped
objective :math:`F_{\rm in} = F_H - \ell_e + \ell_x` by :math:`\theta_0 + \Delta`. This module
turns each estimate into a proven upper bound on the exact whitened distance, for row losses
:math:`\ell_i(z)` of :math:`K` margins :math:`z = X_i^\top\theta` whose third derivative obeys
:math:`|D^3\ell_i(z)[w, w, v]| \le R\,\mathrm{rg}(v)\,D^2\ell_i(z)[w, w]`, with
:math:`\mathrm{rg}(v) = \max_a v_a - \min_a v_a` (softmax: :math:`R = 1`). The derivation is
in docs/coupling.md, "Certified distances", *Several margins per row*:

* (M1) Gronwall along the segment: :math:`e^{-R\,\mathrm{rg}(v)}\nabla^2\ell(z) \preceq
  \nabla^2\ell(z + v)`; with :math:`\mathrm{rg}(X_i^\top w) \le \kappa_i\|w\|_{K}` (the
  *range leverage* :math:`\kappa_i^2 = \max_{a,b}(e_a - e_b)^\top S_{ii}(e_a - e_b)`,
  :math:`S_{ii} = X_i^\top K^{-1}X_i`) the Hessian of :math:`F_{\rm in}` is at least
  :math:`e^{-R(T + \kappa s\rho)}A` on the ball of :math:`A`-radius :math:`\rho` around the
  estimate, :math:`A = K - X_eW_eX_e^\top \succeq (1 - \mathrm{lev}_e)K`,
  :math:`s = (1 - \mathrm{lev}_e)^{-1/2}`, :math:`T = \max_{i \in H - e}\mathrm{rg}(X_i^\top\Delta)`.
* The gradient of :math:`F_{\rm in}` at the estimate is evaluated exactly over the rows
  (:math:`O(kD)` per pair), and the ball lemma (:func:`~.certify.ball_radius`) gives
  :math:`\rho \ge \|\theta^* - \theta_0 - \Delta\|_A`; the whitened error is at most
  :math:`\sqrt{\nu}\,s\rho`. A few steps :math:`\Delta \leftarrow \Delta - M^{-1}\nabla
  F_{\rm in}` (:math:`M = A + X_xW_xX_x^\top`, the target's curvature added) shrink
  :math:`\rho` where that term is not negligible; every point's bound is an upper bound, and
  the smallest is kept. Pairs still far above their estimate are solved exactly
  (:func:`exact_distance`), certified by their own gradient.

Rounding allowances (docs/coupling.md): the margins' moves, the gradient's row terms and its
sums are bounded with :math:`\gamma = (k + D + 16)u` (:math:`u = 2^{-53}`) times the sums of
the absolute values they add.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from skmip.bounds.rounding import UNIT_ROUNDOFF as _U
from skmip.calibration.swap.certify import RELEASE_TOL, FitCertificate, ball_radius

#: Elements of one (rows x pairs x K) array of the gradients.
_ROW_ELEMENTS = 2**21
#: Steps after the certificate at the estimate, for the pairs whose certificate is not yet tight.
_CHORD_STEPS = 8
#: A pair takes a further step while its certificate adds more than this fraction to its distance.
_LOOSE_RTOL = 1e-3
#: A pair whose bound after the chord steps exceeds its estimate by more than this fraction
#: (plus ``floor``, 1% of the fit's median estimate) is solved exactly.
_FALLBACK_RTOL = 0.1


def range_leverage(S):
    r""":math:`\max_{a, b}(S_{aa} + S_{bb} - 2S_{ab})` of each positive semi-definite ``S`` (..., K, K),
    rounded up: the square of :math:`\max_{a,b}\|X_i(e_a - e_b)\|_{K^{-1}}` for
    :math:`S = X_i^\top K^{-1}X_i`, which bounds :math:`\mathrm{rg}(X_i^\top w)` per unit of
    :math:`\|w\|_K`.

    Examples
    --------
    >>> float(range_leverage(np.diag([1.0, 2.0, 0.5]))) >= 3.0
    True
    """
    d = np.diagonal(S, axis1=-2, axis2=-1)
    spread = d[..., :, None] + d[..., None, :] - 2.0 * S
    size = d[..., :, None] + d[..., None, :] + 2.0 * np.abs(S)
    return np.maximum(spread.max(axis=(-2, -1)), 0.0) + 1e-13 * size.max(axis=(-2, -1))


def curvature_leverage(S, W):
    r""":math:`\lambda_{\max}(W^{1/2} S W^{1/2})` (= :math:`\lambda_{\max}(K^{-1/2}X_eW_eX_e^\top
    K^{-1/2})` for :math:`S = X_e^\top K^{-1}X_e`), rounded up, for stacks (..., K, K):
    :math:`A = K - X_eW_eX_e^\top \succeq (1 - \mathrm{lev}_e)K`.

    Examples
    --------
    >>> round(float(curvature_leverage(np.eye(2), np.diag([0.25, 0.5]))), 9)
    0.5
    """
    lam, V = np.linalg.eigh(0.5 * (W + np.swapaxes(W, -1, -2)))
    half = (V * np.sqrt(np.maximum(lam, 0.0))[..., None, :]) @ np.swapaxes(V, -1, -2)
    M = half @ S @ half
    top = np.linalg.eigvalsh(0.5 * (M + np.swapaxes(M, -1, -2)))[..., -1]
    size = np.abs(M).sum(axis=(-2, -1)) + np.abs(W).sum(axis=(-2, -1)) * np.abs(S).sum(axis=(-2, -1))
    return np.maximum(top, 0.0) + 1e-12 * size


class MultiCertifier:
    r"""Certified distances of the pairs of one fit of a K-margin block.

    Parameters
    ----------
    terms : MultiMarginTerms
        The block's rows (``gsc``, ``penalty`` and ``lipschitz`` declared).
    theta0 : ndarray (D,)
        The (polished) fit on ``H``, class-major.
    hinv : ndarray (D, D)
        :math:`K^{-1}`, :math:`K` the block's Hessian on ``H`` (with ``terms.penalty``).
    H : ndarray of int (k,)
        The rows of the fit.
    whiten : callable
        Rows of parameter changes to the noise's whitened coordinates.
    S, W, C : ndarray (k, K, K)
        For the rows of ``H``: :math:`X_i^\top K^{-1}X_i`, :math:`\nabla^2\ell_i` at the fit and
        Woodbury's :math:`C_i = W_i(I - S_iW_i)^{-1}` (:math:`A^{-1} = K^{-1} + \Xi_iC_i\Xi_i^\top`).
    Xi : ndarray (k, K, K, D_f)
        ``Xi[i, b]`` = :math:`K^{-1}(e_b \otimes x_i)` as a (K, D_f) array.
    """

    def __init__(self, terms, theta0, hinv, H, whiten, S, W, C, Xi):
        self.terms, self.theta0, self.hinv, self.H, self.whiten = terms, theta0, hinv, np.asarray(H), whiten
        self.C, self.Xi = C, Xi
        self.cache, self.floor = {}, None  # exact solves by (position of e, target); the fallback's floor
        self.R, self.P = float(terms.gsc), terms.penalty
        F = self.F = terms.features[self.H]
        k, df = F.shape
        self.K = terms.margins.shape[1]
        D = self.K * df
        self.Z0 = terms.margins[self.H]
        self.G0 = terms.dloss(self.Z0, self.H)  # (k, K)
        self.xnorm = np.linalg.norm(F, axis=1)
        self.gamma = 1.01 * (k + D + 16) * _U
        self.root_hinv = float(np.sqrt(np.abs(hinv).sum(axis=1).max()))  # >= ||K^-1||^(1/2)
        r0 = (self.G0.T @ F).ravel() + self.P @ theta0  # the fit's own residual gradient
        self.ge = r0[None, :] - (self.G0[:, :, None] * F[:, None, :]).reshape(k, D)  # grad of F_H - l_e
        self.theta_norm = float(np.linalg.norm(theta0))
        self.p_norm = float(np.abs(self.P).sum(axis=1).max()) * np.sqrt(D)
        self.sum_g0 = float(self.xnorm @ np.linalg.norm(self.G0, axis=1))
        L = terms.lipschitz[self.H]
        self.lip = (float(self.xnorm**2 @ L), float(self.xnorm @ L))
        self.lev = curvature_leverage(S, W)
        kap2 = range_leverage(S)
        self.kappa = float(np.sqrt(kap2.max())) if kap2.size else 0.0
        slack0 = self.root_hinv * self._gradient_slack(0.0, 0.0, 0.0)
        self.fit = FitCertificate(hinv, None, r0, whiten, self.R, leverage=kap2, slack=slack0)

    def _gradient_slack(self, sum_moved, sum_x, step_norm):
        """:func:`gradient_rounding` of a gradient of :math:`F_{\\rm in}` at a step of norm ``step_norm``
        from the fit (``sum_moved``, ``sum_x``: the moved rows' and the target's sums)."""
        return gradient_rounding(self.gamma, sum_moved + self.sum_g0 + sum_x, self.theta_norm + step_norm,
                                 self.p_norm, self.K, self.lip, 1.01 * (self.F.shape[1] + 2) * _U)

    def distances(self, pos, x, alpha, mu, Xix, Sx, estimates):
        r"""Certified distances of the pairs (e = ``H[pos]``, target ``x``) whose estimate is
        :math:`\Delta = \Xi_e\alpha - \Xi_x\mu` (``Xix[p]`` = the target's :math:`\Xi_x`,
        ``Sx[p]`` = :math:`X_x^\top A^{-1}X_x`; ``estimates``: the engine's distances, which
        set the fallback's floor)."""
        m = pos.size
        out = np.empty(m)
        if self.floor is None:  # one floor per fit, from its first chunk of pairs
            finite = estimates[np.isfinite(estimates)]
            self.floor = 0.01 * float(np.median(finite)) if finite.size else 0.0
        width = max(1, _ROW_ELEMENTS // (self.H.size * self.K))
        for a in range(0, m, width):
            j = slice(a, a + width)
            Delta = (np.einsum("pbaf,pb->paf", self.Xi[pos[j]], alpha[j])
                     - np.einsum("pbaf,pb->paf", Xix[j], mu[j])).reshape(alpha[j].shape[0], -1)
            out[j] = self._certify(pos[j], x[j], Delta, Sx[j])
        return out

    def _certify(self, pos, x, Delta, Sx):
        """Bounds at the estimate and after chord steps for the pairs still loose; the smallest."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            shrink = 1.0 / np.sqrt(np.maximum(1.0 - self.lev[pos], 0.0))
            sqnu = np.sqrt(self.fit.nu) * shrink
            estimate = np.linalg.norm(self.whiten(Delta), axis=-1)
            Delta = np.where(np.isfinite(Delta).all(axis=-1, keepdims=True), Delta, 0.0)
            best = np.full(pos.size, np.inf)
            live = np.isfinite(shrink)
            for _ in range(_CHORD_STEPS + 1):
                idx = np.flatnonzero(live)
                if idx.size == 0:
                    break
                g, T, slack, Wx = self._gradient(pos[idx], x[idx], Delta[idx])
                step = self._a_inv(pos[idx], g)
                gnorm = np.sqrt(np.maximum((step * g).sum(-1), 0.0) + self.gamma * (np.abs(step) * np.abs(g)).sum(-1))
                gnorm += shrink[idx] * self.root_hinv * slack
                rho = ball_radius(gnorm, self.R * T, self.R * self.kappa * shrink[idx])
                dist = np.linalg.norm(self.whiten(Delta[idx]), axis=-1) * (1.0 + 1e-12)
                err = sqnu[idx] * rho
                bound = dist + err
                best[idx] = np.minimum(best[idx], np.where(np.isfinite(bound), bound, np.inf))
                # Steering only: a further step where the certificate's own term is not yet
                # negligible next to the distance, and the step is finite.
                live[idx] = ~(err <= _LOOSE_RTOL * dist) & np.isfinite(step).all(-1)
                move = self._target_step(pos[idx], x[idx], step, Wx, Sx[idx])
                live[idx] &= np.isfinite(move).all(-1)
                Delta[idx] = np.where(live[idx, None], Delta[idx] - move, Delta[idx])
            # Exact solves (certified by their own gradient) where the bound stays far off.
            for i in np.flatnonzero(~(best <= estimate * (1.0 + _FALLBACK_RTOL) + self.floor)):
                key = (int(pos[i]), int(x[i]))
                if key not in self.cache:
                    self.cache[key] = exact_distance(self.terms, self.H, self.H[pos[i]], x[i],
                                                     self.theta0 + Delta[i], self.theta0, self.whiten)
                best[i] = min(best[i], self.cache[key])
        return np.where(np.isfinite(best), best + self.fit.out_error + 2 * RELEASE_TOL, np.inf)

    def _a_inv(self, pos, g):
        r""":math:`A^{-1}g = K^{-1}g + \Xi_eC_e\Xi_e^\top g` (Woodbury) for each pair."""
        m, K = g.shape[0], self.K
        s0 = g @ self.hinv
        t = np.einsum("paf,pf->pa", s0.reshape(m, K, -1), self.F[pos])  # X_e' K^-1 g
        c = np.einsum("pab,pb->pa", self.C[pos], t)
        return s0 + np.einsum("pbaf,pb->paf", self.Xi[pos], c).reshape(m, -1)

    def _target_step(self, pos, x, step, Wx, Sx):
        r"""The step :math:`M^{-1}g` for :math:`M = A + X_xW_xX_x^\top` (the target's curvature
        at the current point added, by Woodbury from ``step`` = :math:`A^{-1}g`):
        :math:`M^{-1}g = A^{-1}g - A^{-1}X_x(I + W_xS_x)^{-1}W_xX_x^\top A^{-1}g`. It only
        steers: the target's margins move the most, and a step without their curvature can
        overshoot."""
        m, K = step.shape[0], self.K
        fx = self.terms.features[x]
        t = np.einsum("paf,pf->pa", step.reshape(m, K, -1), fx)
        c = np.linalg.solve(np.eye(K) + Wx @ Sx, (Wx @ t[:, :, None]))[:, :, 0]
        return step - self._a_inv(pos, (c[:, :, None] * fx[:, None, :]).reshape(m, -1))

    def _gradient(self, pos, x, Delta):
        r"""The gradient of :math:`F_{\rm in}` at :math:`\theta_0 + \Delta` over the rows,
        :math:`T = \max_{i \in H - e}\mathrm{rg}(X_i^\top\Delta)` rounded up, and the
        gradient's rounding allowance (2-norm), for pairs (rows of ``Delta``)."""
        terms, F, K = self.terms, self.F, self.K
        k, m = F.shape[0], Delta.shape[0]
        Dm = Delta.reshape(m, K, -1)
        delta = (F @ Dm.reshape(m * K, -1).T).reshape(k, m, K)
        spread = delta.max(-1) - delta.min(-1)
        own = (pos, np.arange(m))
        spread[own] = 0.0  # e is not in F_in
        step_norm = np.linalg.norm(Delta, axis=-1)
        T = spread.max(0) + 2.0 * self.gamma * self.xnorm.max() * step_norm
        moved = terms.dloss((self.Z0[:, None, :] + delta).reshape(k * m, K), np.repeat(self.H, m)).reshape(k, m, K)
        sum_moved = self.xnorm @ np.linalg.norm(moved, axis=-1)
        moved -= self.G0[:, None, :]
        moved[own] = 0.0
        g = (moved.reshape(k, m * K).T @ F).reshape(m, -1) + self.ge[pos] + Delta @ self.P
        fx = terms.features[x]
        zx = terms.margins[x] + np.einsum("paf,pf->pa", Dm, fx)
        gx = terms.dloss(zx, x)
        g += (gx[:, :, None] * fx[:, None, :]).reshape(m, -1)
        nx, Lx = np.linalg.norm(fx, axis=-1), terms.lipschitz[x]
        # The target's row: its sum term and its margin's rounding, as the rows' in _gradient_slack.
        sum_x = nx * np.linalg.norm(gx, axis=-1) + (
            2.0 * np.sqrt(K) * (self.theta_norm + step_norm) * nx**2 * Lx + 8.0 * K * nx * Lx)
        return g, T, self._gradient_slack(sum_moved, sum_x, step_norm), terms.d2loss(zx, x)



def fit_certificate(terms, theta, rows, whiten, hinv=None, nu="eigen"):
    r"""``(certificate, hinv, gradient)`` of a parameter vector ``theta`` on ``rows`` of a
    K-margin block: the objective's gradient there (with the regulariser's), :math:`K^{-1}` of
    its Hessian there (``hinv`` when given), and the :class:`~.certify.FitCertificate` whose
    ``out_error`` bounds the whitened distance to the exact minimiser (the range leverages of
    the rows, the gradient's rounding allowance as :meth:`MultiCertifier._gradient_slack`)."""
    F = terms.features[rows]
    K, df = terms.margins.shape[1], F.shape[1]
    if hinv is None:
        gradient, hess = objective(terms, theta, rows, hessian=True)
        hinv = linalg.cho_solve(linalg.cho_factor(hess, lower=True, check_finite=False), np.eye(K * df),
                                check_finite=False)
    else:
        gradient = objective(terms, theta, rows)
    G = terms.dloss(F @ theta.reshape(K, df).T, rows)
    Xi = np.einsum("bgaf,ig->ibaf", hinv.reshape(K, df, K, df), F, optimize=True)
    S = np.einsum("ibaf,if->iab", Xi, F, optimize=True)
    xnorm, L = np.linalg.norm(F, axis=1), terms.lipschitz[rows]
    gamma = 1.01 * (F.shape[0] + K * df + 16) * _U
    p_norm = float(np.abs(terms.penalty).sum(axis=1).max()) * np.sqrt(K * df)
    slack = np.sqrt(np.abs(hinv).sum(axis=1).max()) * gradient_rounding(
        gamma, float(xnorm @ np.linalg.norm(G, axis=1)), float(np.linalg.norm(theta)), p_norm, K,
        (float(xnorm**2 @ L), float(xnorm @ L)), 1.01 * (df + 2) * _U)
    cert = FitCertificate(hinv, None, gradient, whiten, terms.gsc, nu=nu,
                          leverage=range_leverage(0.5 * (S + np.swapaxes(S, 1, 2))), slack=slack)
    return cert, hinv, gradient


def gradient_rounding(gamma, sums, theta_norm, p_norm, K, lip, gamma_margin):
    r"""Bound on the 2-norm of the rounding error of a computed gradient :math:`\sum_i X_i
    \nabla\ell_i + P\theta` (docs/coupling.md, *Several margins per row*): :math:`\gamma` times
    the absolute values summed (``sums`` = :math:`\sum_i\|x_i\|\|\nabla\ell_i\|` over
    every gradient that enters, and :math:`\|P\|_\infty\|\theta\|\sqrt{D}`), and the row
    gradients at margins rounded by :math:`2\gamma_m\|x_i\|\|\theta\|` in the 2-norm
    (``gamma_margin`` :math:`= \gamma_m = 1.01(D_f + 2)u`: each margin a dot product of
    :math:`D_f` terms, computed twice, the fit's and the move; each gradient
    :math:`L_i`-Lipschitz: ``lip`` = :math:`(\sum_i L_i\|x_i\|^2, \sum_i L_i\|x_i\|)`) plus
    a softmax's own :math:`8KuL_i`."""
    return (gamma * (sums + p_norm * theta_norm)
            + 2.0 * gamma_margin * theta_norm * lip[0] + 8.0 * K * _U * lip[1])


def objective(terms, theta, rows, hessian=False):
    r"""The gradient of the objective :math:`\sum_{i \in rows}\ell_i(X_i^\top\theta) +
    \tfrac12\theta^\top P\theta` at ``theta``, and with ``hessian`` its Hessian
    :math:`\sum_i W_i \otimes x_ix_i^\top + P` (one matrix product over the rows)."""
    F = terms.features[rows]
    K, df = terms.margins.shape[1], F.shape[1]
    Z = F @ theta.reshape(K, df).T
    gradient = (terms.dloss(Z, rows).T @ F).ravel() + terms.penalty @ theta
    if not hessian:
        return gradient
    W = terms.d2loss(Z, rows)
    blocks = F.T @ (W[:, :, :, None] * F[:, None, None, :]).reshape(F.shape[0], -1)  # (g, a b f)
    hess = blocks.reshape(df, K, K, df).transpose(1, 3, 2, 0).reshape(K * df, K * df) + terms.penalty
    return gradient, 0.5 * (hess + hess.T)


def exact_distance(terms, H, e, x, start, theta0, whiten, max_iter=60):
    r"""Damped Newton to the minimiser of the objective on :math:`H - e + x` from ``start``,
    and a certified bound on its whitened distance from ``theta0``: the solution's distance
    plus its own certificate's ``out_error`` (``inf`` on failure)."""
    from skmip.calibration.swap.polish import _damped_step

    rows = np.sort(np.r_[H[H != e], x])
    theta = np.array(start, dtype=np.float64)
    if not np.isfinite(theta).all():
        theta = np.array(theta0, dtype=np.float64)
    previous = np.inf
    try:
        for _ in range(max_iter):
            grad, hess = objective(terms, theta, rows, hessian=True)
            step = linalg.cho_solve(linalg.cho_factor(hess, lower=True, check_finite=False), grad, check_finite=False)
            decrement = float(step @ grad)
            if not np.isfinite(decrement):
                return np.inf
            # Stop at rounding level, or once the quadratic convergence has stalled near it
            # (far from the minimiser a damped step may shrink the decrement less).
            size = 1.0 + float(theta @ theta)
            if decrement <= 1e-26 * size or (decrement >= 0.25 * previous and decrement <= 1e-16 * size):
                break
            previous = decrement
            move, _ = _damped_step(lambda th: objective(terms, th, rows), theta, step, grad)
            theta = theta - move
        cert = fit_certificate(terms, theta, rows, whiten, nu="trace")[0]
    except linalg.LinAlgError:
        return np.inf
    return float(np.linalg.norm(whiten((theta - theta0)[None])[0])) * (1.0 + 1e-12) + cert.out_error
