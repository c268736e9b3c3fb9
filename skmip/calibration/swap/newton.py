"""The ``"newton"`` engine's pieces: generalised-linear swaps with the target's loss kept exact."""

from __future__ import annotations

import math

import numpy as np

from skmip.calibration.swap.polish import _CHORD_MIN_WORK, _damped_step
from skmip.calibration.swap.stacks import _cho_inverse, _cholesky, _data_hessian, _solve_pos

#: Chord iterations before Newton's method with exact Hessians takes over (refinement).
_CHORD_ITER = 30
#: Most targets refined per fit.
_REFINE_MAX = 4


def _solve_margin(a, b, glm, rows):
    """Root of u + a * l'_rows(u) = b (elementwise; a >= 0, l'' >= 0 so the map increases).

    Safeguarded Newton: since the derivative is >= 1, [b - f(b), b] or [b, b - f(b)]
    brackets the root; a Newton step that leaves the bracket is replaced by bisection.
    Only the entries not yet converged are iterated.
    """
    shape = np.shape(a)
    a, b, rows = a.ravel(), b.ravel(), np.broadcast_to(rows, shape).ravel()
    fb = a * glm.dloss(b, rows)
    lo = np.where(fb > 0, b - fb, b)
    hi = np.where(fb > 0, b, b - fb)
    u = b - fb / (1.0 + a * glm.d2loss(b, rows))
    active = np.arange(u.size)
    for _ in range(100):
        ua, aa, ba, ra = u[active], a[active], b[active], rows[active]
        la, ha = lo[active], hi[active]
        ua = np.where((ua < la) | (ua > ha), 0.5 * (la + ha), ua)
        fu = ua + aa * glm.dloss(ua, ra) - ba
        la = np.where(fu <= 0, ua, la)
        ha = np.where(fu >= 0, ua, ha)
        new = ua - fu / (1.0 + aa * glm.d2loss(ua, ra))
        new = np.where((new < la) | (new > ha), 0.5 * (la + ha), new)
        u[active], lo[active], hi[active] = new, la, ha
        moving = np.abs(new - ua) > 1e-12 * (1.0 + np.abs(ua))
        active = active[moving]
        if active.size == 0:
            break
    return u.reshape(shape)


def _ops(cross):
    """Inner products and broadcasting for all pairs (cross) or matched pairs."""
    if cross:
        return (lambda A, B: A @ B.T), (lambda v: v[:, None]), (lambda v: v[None, :])
    # Matched pairs: e-side arrays of shape (T, p, .), target-side (T, 1, .) broadcast.
    return (lambda A, B: np.einsum("...i,...i->...", A, B)), (lambda v: v), (lambda v: v)


def _pair_coefficients(pe, px, glm, newton, cross, details=False):
    r"""Coefficients (c_e, c_x) with Delta = c_e U_e - c_x U_x for each pair.

    First order: Delta = H^-1 (g_e - g_x) = beta_e - beta_x, so c_e = c_x = 1.

    Newton (generalised-linear blocks): the objective after the swap is modelled as the
    second-order expansion at the fit of everything but the target, whose loss is kept
    exact: F_H - l_e ~ quadratic with gradient -g_e and Hessian A = H - l''_e x_e x_e',
    plus l_x(x_x' theta). Its minimiser is Delta = A^-1 (g_e - l'_x(u) x_x) where the
    target's new margin u solves the scalar equation u + a l'_x(u) = b with
    a = x_x' A^-1 x_x and b = u0_x + x_x' A^-1 g_e. By Sherman-Morrison,
    A^-1 = H^-1 + kappa_e xi_e xi_e' / (1 - kappa_e h_ee), xi = H^-1 x, so Delta is a
    combination of xi_e and xi_x, and all pairs need one cross product h_ex = x_e' H^-1 x_x.
    Exact for least squares (the expansion is exact there).

    With ``details`` (Newton only) also returns what certifies each pair
    (:mod:`.certify`): ``dK2`` = ||Delta||_K^2 for K = H (the fit's Hessian), ``lev_e`` =
    l''_e h_ee, ``res_x``, the gradient norm ||.||_{A^-1} that the scalar equation's
    residual leaves, and the target's ``a`` = x_x' A^-1 x_x, ``tau`` (A^-1 x_x = xi_x +
    tau xi_e), ``curv_x`` = l''_x at its margin after the step and ``kappa_e`` = l''_e.
    """
    dot, col_e, row_x = _ops(cross)
    if not newton:
        shape = (pe["U"].shape[0], px["U"].shape[0]) if cross else np.broadcast_shapes(pe["U"].shape[:-1], px["U"].shape[:-1])
        one = np.ones(shape)
        return one, one
    h_ex = dot(pe["feats"], px["xi"])  # x_e' H^-1 x_x
    kappa, lam = col_e(pe["d2"]), col_e(pe["d1"])
    den = 1.0 - kappa * col_e(pe["h"])  # > 0 when A = H - kappa x_e x_e' is positive definite
    rho = lam / den  # A^-1 g_e = rho xi_e
    tau = kappa * h_ex / den  # A^-1 x_x = xi_x + tau xi_e
    a = row_x(px["h"]) + tau * h_ex
    b = row_x(px["u0"]) + rho * h_ex
    rows = np.broadcast_to(row_x(px["rows"]), np.shape(a))
    u = _solve_margin(a, b, glm, rows)
    mu = glm.dloss(u, rows)  # l'_x at the new margin
    c_e = rho - mu * tau  # Delta = (rho - mu tau) xi_e - mu xi_x
    if not details:
        return c_e, mu
    # The step's true target margin is b - a mu = u - f(u); the gradient it leaves is
    # (l'_x(u - f) - l'_x(u)) x_x, of A^-1-norm |.| sqrt(a).
    f = u + a * mu - b
    res_x = np.abs(glm.dloss(u - f, rows) - mu) * np.sqrt(np.maximum(a, 0.0))
    he, hx = col_e(pe["h"]), row_x(px["h"])
    # Rounding of the cancelling sum is covered by a term of the triangle inequality's size.
    top = (np.abs(c_e) * np.sqrt(np.maximum(he, 0.0)) + np.abs(mu) * np.sqrt(np.maximum(hx, 0.0))) ** 2
    dK2 = np.maximum(c_e**2 * he - 2.0 * c_e * mu * h_ex + mu**2 * hx, 0.0) + 1e-14 * top
    return c_e, mu, {"dK2": dK2, "lev_e": kappa * col_e(pe["h"]), "res_x": res_x, "a": a, "tau": tau,
                     "curv_x": glm.d2loss(u - f, rows), "kappa_e": np.broadcast_to(kappa, np.shape(a))}


def _settled(step, change, theta, previous):
    """Stop when the step is negligible next to the change it refines (1e-10 of it), or has
    stopped shrinking at the level of rounding (a sum over k rows is exact to ~1e-16 k).
    Row by row on stacks (..., D); ``previous`` is the last step's norm."""
    size, moved = np.linalg.norm(step, axis=-1), np.linalg.norm(change, axis=-1)
    return ((size <= 1e-10 * moved) | (size <= 1e-15 * (1.0 + np.linalg.norm(theta, axis=-1)))
            | ((size >= 0.5 * previous) & (size <= 1e-7 * moved)))


def _refine_targets(glm, F, H, P, theta0, reg0, Hinv, x, xi_x, a, u0x, e_rows, whitener, index):
    r"""Distances for targets with their own addition solved to convergence.

    A grid of independent problems, iterated together: fit ``b`` (the features ``F[b]``
    (k, D) of its rows ``H[b]``, its minimiser ``theta0[b]``, the regulariser's gradient
    ``reg0[b]`` there, the inverse ``Hinv[b]`` of its Hessian) and its
    targets ``x[b]`` (q of them, with xi_x = H^-1 x_x, a = x_x' H^-1 x_x and the margins
    ``u0x`` at the fit), each with its rows ``e_rows[b, j]`` (p of them) to remove.

    The minimiser of F_H + l_x (the exact objective of H + {x}, quadratic regulariser P) is
    found from the target-exact estimate by chord iterations: the exact gradient, and the
    Hessian of the rows of H frozen at theta_H plus the target's own curvature (a rank-one
    update of the factorised block Hessian, by Sherman-Morrison). Each iteration costs
    O(k D + D^2) instead of the O(k D^2) of forming a Hessian; the iteration converges
    linearly at the rate ||H^-1 (Hess F(theta) - H)||, which is small because one row moves
    the fit little; where one Hessian is cheap (small k D^2) the frozen rows' Hessian is
    refreshed once, after the first step, which makes that rate far smaller. Chord steps
    are taken where Hessians are dear in all: on large problems, or on a large grid of
    small ones; a small grid (one fit's few targets, whose cost is per-call overhead) goes
    straight to Newton's method with exact Hessians, which also takes over should the
    chord iteration stall. Then
    the removal of each e is linearised at that solution: theta(H - e + x) ~
    theta_{H+x} + (H' - l''_e x_e x_e')^-1 g'_e with H', g'_e the Hessian and e's gradient
    at theta_{H+x} (Sherman-Morrison).

    Returns ``(dist, ok)``, shapes (B, q, p) and (B, q): ``ok`` is False where neither
    iteration converged (the caller keeps the one-step value).
    """
    fx, t = glm.features[x], lambda A: np.swapaxes(A, -1, -2)
    u = _solve_margin(a, u0x, glm, x)
    theta = theta0[:, None] - glm.dloss(u, x)[..., None] * xi_x

    def gradient(theta):  # of F_H + l_x, (B, q, D)
        rows = t(t(F) @ glm.dloss(F @ t(theta), H[..., None]))
        target = glm.dloss((fx * theta).sum(-1), x)[..., None] * fx
        return rows + reg0[:, None] + (theta - theta0[:, None]) @ P + target

    def hessian(theta, target=True):  # of F_H + l_x, or (target=False) of F_H alone
        rows = _data_hessian(F[:, None], t(glm.d2loss(F @ t(theta), H[..., None]))) + P
        if not target:
            return rows
        kx = glm.d2loss((fx * theta).sum(-1), x)
        return rows + kx[..., None, None] * fx[..., :, None] * fx[..., None, :]

    def advance(step, grad, live, theta, converged, failed, previous):
        """One damped step of the live problems; their convergence, or failure; the gradient
        at the new point (0 for a problem that failed)."""
        step = np.where(live[..., None], step, 0.0)
        move, grad = _damped_step(gradient, theta, step, grad)
        moved = theta - move
        finite = np.isfinite(moved).all(axis=-1)
        failed = failed | (live & ~finite)
        live = live & finite
        theta = np.where(live[..., None], moved, theta)
        grad = np.where(failed[..., None], 0.0, grad)
        converged = converged | (live & _settled(step, theta - theta0[:, None], theta, previous))
        return theta, grad, converged, failed, np.where(live, np.linalg.norm(step, axis=-1), previous)

    converged, failed = np.zeros(x.shape, dtype=bool), np.zeros(x.shape, dtype=bool)
    previous = np.full(x.shape, np.inf)
    # Chord iterations pay where forming a Hessian is dear (O(k D^2) against O(k D) each): on
    # large problems, or on a large stack of small ones. On small ones a single Hessian is
    # cheap: after the first step the frozen Hessian of the rows of H is refreshed there,
    # where the iteration then contracts much faster (the first step moves the most).
    work = F.shape[1] * F.shape[2] ** 2
    G = np.broadcast_to(Hinv[:, None], x.shape + Hinv.shape[-2:])
    grad = gradient(theta)
    for it in range(_CHORD_ITER if x.size * work > _CHORD_MIN_WORK else 0):
        live = ~(converged | failed)
        if not live.any():
            break
        kx = glm.d2loss((fx * theta).sum(-1), x)
        g1 = (grad[..., None, :] @ G)[..., 0, :]
        # Convergence is judged on the full step, the move on the damped one.
        step = g1 - (kx * (xi_x * grad).sum(-1) / (1.0 + kx * a))[..., None] * xi_x
        theta, grad, converged, failed, previous = advance(step, grad, live, theta, converged, failed,
                                                           previous)
        if it == 0 and work <= _CHORD_MIN_WORK:
            L, fresh = _cholesky(hessian(theta, target=False), ~(converged | failed))
            G = np.where(fresh[..., None, None], _cho_inverse(L), G)
            xi_x = (fx[..., None, :] @ G)[..., 0, :]
            a = (fx * xi_x).sum(-1)
    previous = np.full(x.shape, np.inf)
    for _ in range(50):
        live = ~(converged | failed)
        if not live.any():
            break
        step, solved = _solve_pos(hessian(theta), grad, live)
        failed |= live & ~solved
        theta, grad, converged, failed, previous = advance(step, grad, live & solved, theta, converged,
                                                           failed, previous)
    ok = converged & ~failed
    fac, factored = _cholesky(hessian(theta), ok)
    ok &= factored
    return _removal_distances(glm, fac, theta, theta0, e_rows, whitener, index), ok


def _removal_distances(glm, fac, theta, theta0, e_rows, whitener, index):
    """Whitened distances (B, q, p) from each fit ``theta0[b]`` to the target's solution
    ``theta[b, j]`` with each of its rows ``e_rows[b, j]`` removed, linearised there:
    ``theta - theta0 + rho xi_e`` with ``xi_e = H'^-1 x_e`` (``fac`` the Cholesky factor of
    the Hessian H' at ``theta``) and Sherman-Morrison's ``rho``; ``inf`` where a zero-scale
    coordinate moves."""
    Fe = glm.features[e_rows]  # (B, q, p, D)
    me = (Fe * theta[..., None, :]).sum(-1)
    xi_e = Fe @ _cho_inverse(fac)
    kappa = glm.d2loss(me, e_rows)
    rho = glm.dloss(me, e_rows) / (1.0 - kappa * (Fe * xi_e).sum(-1))
    v = theta - theta0[:, None]
    vw = whitener.apply(v, index)
    xw = whitener.apply(xi_e, index)
    sq = ((vw * vw).sum(-1)[..., None] + 2.0 * rho * (xw * vw[..., None, :]).sum(-1)
          + rho**2 * (xw**2).sum(-1))
    out = np.sqrt(np.maximum(sq, 0.0))
    vraw = whitener.raw(v, index)
    if vraw.shape[-1]:
        raw = vraw[..., None, :] + rho[..., None] * whitener.raw(xi_e, index)
        out = np.where((raw != 0).any(axis=-1), np.inf, out)
    return out


def _n_refine(fraction, n_targets):
    """Targets refined per fit: the ``fraction`` most exposed, at most ``_REFINE_MAX``.

    The cap keeps a round linear in n: the targets that decide the maximum over D are a
    handful, whatever n, and the one-step error shrinks as k grows (docs/coupling.md,
    "Cost and scaling").
    """
    return min(n_targets, _REFINE_MAX, math.ceil(fraction * n_targets)) if fraction > 0 else 0
