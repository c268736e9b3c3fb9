r"""The ``"newton"`` engine for losses of K margins (multinomial logistic regression).

A row's loss depends on :math:`K` margins :math:`z_i = \Theta\tilde x_i` (one per class;
:math:`\theta = \mathrm{vec}(\Theta)` class-major, :math:`\Theta` of shape ``(K, D_b/K)``):
its gradient is :math:`r_i \otimes \tilde x_i` with :math:`r_i = \nabla_z\ell_i` and its
Hessian :math:`W_i \otimes \tilde x_i\tilde x_i^\top` with :math:`W_i = \nabla_z^2\ell_i`.
For the softmax cross-entropy :math:`\ell_i(z) = c_i(\log\sum_a e^{z_a} - z_{y_i})`:
:math:`r_i = c_i(p_i - t_i)`, :math:`W_i = c_i(\mathrm{diag}\,p_i - p_ip_i^\top)`.

**The swap** (the scalar derivation of ``newton._pair_coefficients``, with :math:`K`
margins). Everything but the target is expanded to second order at the fit
:math:`\hat\theta_H`, with :math:`e`'s gradient and curvature removed exactly; the target's
loss is kept exact. With :math:`X_i = I_K \otimes \tilde x_i` (so :math:`z_i = X_i^\top\theta`)
the model of the swapped objective is

.. math::

    Q(\Delta) = -g_e^\top\Delta + \tfrac12\Delta^\top A\Delta + \ell_x(z^0_x + X_x^\top\Delta),
    \qquad A = \mathbf{H} - X_e W_e X_e^\top,

whose minimiser solves :math:`A\Delta = g_e - X_x\mu`, :math:`\mu = \nabla\ell_x(z)` at the
target's new margins :math:`z = z^0_x + X_x^\top\Delta`. With :math:`\Xi_i = \mathbf{H}^{-1}X_i`
and :math:`S_{ij} = X_i^\top\mathbf{H}^{-1}X_j` (:math:`K\times K`), Woodbury's identity gives
:math:`A^{-1} = \mathbf{H}^{-1} + \Xi_e C_e\Xi_e^\top` with
:math:`C_e = W_e(I - S_{ee}W_e)^{-1}`, hence

.. math::

    \Delta = \Xi_e(\rho_e - C_eS_{ex}\mu) - \Xi_x\mu, \qquad \rho_e = (I + C_eS_{ee})\,r_e,

and :math:`z` solves the :math:`K`-dimensional equation

.. math::

    F(z) = z + A_x\nabla\ell_x(z) - b = 0, \qquad A_x = S_{xx} + S_{ex}^\top C_eS_{ex},\quad
    b = z^0_x + S_{ex}^\top\rho_e.

:math:`A_x` and :math:`W_x(z)` are positive semi-definite, so the Jacobian
:math:`I + A_xW_x(z)` has eigenvalues :math:`\ge 1` (those of
:math:`I + W_x^{1/2}A_xW_x^{1/2}`): it is invertible, the Newton direction is a descent
direction of :math:`\|F\|^2`, and Newton's method with backtracking on :math:`\|F\|^2`
converges to the root. Each pair costs :math:`O(K D_b)` (two :math:`K \times K` products of
its rows) once :math:`\mathbf{H}^{-1}` is known (one inverse and :math:`O(nD_b^2)` per fit).

For :math:`K = 1` this is ``_pair_coefficients`` exactly; like it, the model is exact for a
quadratic loss and its error on logistic losses is measured against refits
(``benchmarks/bench_influence.py``, ``docs/coupling.md``).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from skmip.calibration.losses.terms import MultiMarginTerms  # noqa: F401  (defined with the loss terms; importable here as before)
from skmip.calibration.swap._common import _OWNER
from skmip.calibration.swap.multi_certify import MultiCertifier

#: (e, x) pairs processed at a time (memory: a few K x K arrays per pair).
_PAIR_CHUNK = 8192


def _solve_margins(Ax, b, terms, rows, max_iter=100):
    """Roots z of z + Ax dloss(z) = b, batched over pairs (Newton, backtracking on ||F||^2)."""
    z = b.copy()

    def residual(z, idx):
        return z + np.einsum("pab,pb->pa", Ax[idx], terms.dloss(z, rows[idx])) - b[idx]

    F = residual(z, np.arange(len(z)))
    scale = 1.0 + np.linalg.norm(b, axis=1)
    active = np.flatnonzero(np.linalg.norm(F, axis=1) > 1e-12 * scale)
    eye = np.eye(z.shape[1])
    for _ in range(max_iter):
        if active.size == 0:
            return z
        za, Fa = z[active], F[active]
        J = eye + Ax[active] @ terms.d2loss(za, rows[active])
        d = -np.linalg.solve(J, Fa[:, :, None])[:, :, 0]
        f0 = (Fa**2).sum(1)
        t = np.ones(active.size)
        znew, Fnew = za + d, residual(za + d, active)
        for _ in range(40):  # Armijo on 1/2 ||F||^2, whose slope along d is -||F||^2
            bad = (Fnew**2).sum(1) > (1.0 - 1e-4 * t) * f0
            if not bad.any():
                break
            t[bad] *= 0.5
            znew[bad] = za[bad] + t[bad, None] * d[bad]
            Fnew[bad] = residual(znew[bad], active[bad])
        moved = np.linalg.norm(znew - za, axis=1) > 1e-15 * (1.0 + np.linalg.norm(za, axis=1))
        z[active], F[active] = znew, Fnew
        done = (np.linalg.norm(Fnew, axis=1) <= 1e-12 * scale[active]) | ~moved
        active = active[~done]
    if active.size and (np.linalg.norm(F[active], axis=1) > 1e-8 * scale[active]).any():
        raise ValueError(
            f"{_OWNER}: the target's {z.shape[1]} margins did not converge in the multinomial "
            "'newton' engine; use engine='influence' or engine='refit'."
        )
    return z


def _multi_margin_distances(block, factor, fit_rows, targets, e_pos, whitener, certify=False):
    r"""Whitened swap distances of the target-exact model (module docstring), for one fit.

    Parameters
    ----------
    block : LossBlock
        The block at the fit on ``fit_rows``; ``block.multi`` holds its
        :class:`MultiMarginTerms`.
    factor : tuple
        Cholesky factor of ``block.hessian`` (``scipy.linalg.cho_factor``).
    fit_rows : ndarray of int, shape (k,)
        :math:`H`, the rows of the fit.
    targets : ndarray of int, shape (T,)
        The targets :math:`x^*` of this fit (rows not in :math:`H`).
    e_pos : ndarray of int, shape (T, P), or None
        Positions in ``fit_rows`` of the :math:`e` paired with each target; ``None`` pairs
        every target with every row of :math:`H` (``P = k``).
    whitener : _Whitener
        The noise's whitening.
    certify : bool, default=False
        Return certified upper bounds on the exact distances instead
        (:class:`~.multi_certify.MultiCertifier`; the loss must declare ``gsc`` and
        ``penalty``, and the whitening no zero-scale coordinate).

    Returns
    -------
    ndarray of shape (T, P)
        :math:`\|L^{-1}\Delta\|` for each pair; ``inf`` where a zero-scale coordinate moves
        (certified: where no bound was found).

    Notes
    -----
    With :math:`\Omega = \mathbf{H}^{-1}\Lambda\mathbf{H}^{-1}` (:math:`\Lambda` the
    whitening's metric), :math:`\|L^{-1}\Delta\|^2 = \alpha^\top G_{ee}\alpha
    - 2\alpha^\top G_{ex}\mu + \mu^\top G_{xx}\mu` with :math:`G_{ij} = X_i^\top\Omega X_j`,
    so a pair needs only :math:`K\times K` products of its two rows, like :math:`S_{ex}`.
    """
    terms = block.multi
    F = terms.features
    K, df = terms.margins.shape[1], F.shape[1]
    D = K * df
    e_rows, targets = np.asarray(fit_rows), np.asarray(targets)
    Hinv = linalg.cho_solve(factor, np.eye(D), check_finite=False)
    Mt = whitener.apply(Hinv, block.index)  # row j: the whitened column j of H^-1
    Omega = Mt @ Mt.T
    Rt = whitener.raw(Hinv, block.index)
    has_raw = Rt.shape[1] > 0

    def per_row(rows):
        x = F[rows]
        # Row i's (K_b, K_a, df) blocks of H^-1 X_i and Omega X_i; contracting with x_j on
        # f gives the (a, b) entries of X_j' H^-1 X_i and X_j' Omega X_i.
        Xi = np.einsum("bgaf,ig->ibaf", Hinv.reshape(K, df, K, df), x, optimize=True)
        Psi = np.einsum("bgaf,ig->ibaf", Omega.reshape(K, df, K, df), x, optimize=True)
        S = np.einsum("ibaf,if->iab", Xi, x, optimize=True)
        G = np.einsum("ibaf,if->iab", Psi, x, optimize=True)
        return Xi, Psi, 0.5 * (S + S.transpose(0, 2, 1)), 0.5 * (G + G.transpose(0, 2, 1))

    XiE, _, See, Gee = per_row(e_rows)
    We = terms.d2loss(terms.margins[e_rows], e_rows)
    re = terms.dloss(terms.margins[e_rows], e_rows)
    eye = np.eye(K)
    # C_e = W_e (I - S_ee W_e)^-1: A = H - X_e W_e X_e' is positive definite (it is the
    # Hessian of F_H - l_e), so I - S_ee W_e is invertible.
    Ce = np.linalg.solve((eye - See @ We).transpose(0, 2, 1), We.transpose(0, 2, 1)).transpose(0, 2, 1)
    rho = re + np.einsum("pab,pbc,pc->pa", Ce, See, re)
    cert = MultiCertifier(terms, block.theta, Hinv, e_rows, lambda V: whitener.apply(V, block.index),
                          See, We, Ce, XiE) if certify else None
    if has_raw:  # values on zero-scale coordinates: R_i[c] = raw part of H^-1 (e_c (x) x_i)
        Rt3 = Rt.reshape(K, df, -1)

        def raw(rows):
            return np.einsum("cfd,if->icd", Rt3, F[rows], optimize=True)

    T = targets.size
    P = e_rows.size if e_pos is None else e_pos.shape[1]
    out = np.empty((T, P))
    width = max(1, _PAIR_CHUNK // P)
    for start in range(0, T, width):
        tc = targets[start : start + width]
        Xix, Psix, Sxx, Gxx = per_row(tc)
        pos = np.broadcast_to(np.arange(P), (tc.size, P)) if e_pos is None else e_pos[start : start + width]
        xe = F[e_rows[pos]]  # (t, P, df)
        # S_ex[a, b] = x_e' H^-1[a, b] x_x and G_ex likewise: one batched product per target.
        both = np.concatenate([Xix, Psix], axis=1).reshape(tc.size, 2 * K * K, df)
        prod = (xe @ both.transpose(0, 2, 1)).reshape(tc.size, P, 2, K, K)
        Sex = prod[:, :, 0].transpose(0, 1, 3, 2).reshape(-1, K, K)  # (pairs, a, b)
        Gex = prod[:, :, 1].transpose(0, 1, 3, 2).reshape(-1, K, K)
        ei = pos.reshape(-1)
        xr = np.repeat(tc, P)
        ti = np.repeat(np.arange(tc.size), P)
        CS = Ce[ei] @ Sex
        Ax = Sxx[ti] + Sex.transpose(0, 2, 1) @ CS
        b = terms.margins[xr] + np.einsum("pab,pa->pb", Sex, rho[ei])
        mu = terms.dloss(_solve_margins(Ax, b, terms, xr), xr)
        alpha = rho[ei] - np.einsum("pab,pb->pa", CS, mu)
        sq = (np.einsum("pa,pab,pb->p", alpha, Gee[ei], alpha)
              - 2.0 * np.einsum("pa,pab,pb->p", alpha, Gex, mu)
              + np.einsum("pa,pab,pb->p", mu, Gxx[ti], mu))
        dist = np.sqrt(np.maximum(sq, 0.0))
        if has_raw:
            moved = np.einsum("pkd,pk->pd", raw(e_rows[ei]), alpha) - np.einsum("pkd,pk->pd", raw(xr), mu)
            dist = np.where((moved != 0).any(axis=1), np.inf, dist)
        if cert is not None:
            dist = cert.distances(ei, xr, alpha, mu, Xix[ti], Ax, dist)
        out[start : start + tc.size] = dist.reshape(tc.size, P)
    return out
