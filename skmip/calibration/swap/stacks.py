"""Linear algebra on stacks of small independent problems (one fit, or one target, each).

The influence engines solve many small problems of the same shape: a Newton fit of every
row subset of a round, the refinement of a fit's most exposed targets. On stacks of shape
(B, ..., D) numpy and scipy loop over the problems in C, which on small ones (a few
hundred rows, tens of parameters) removes the per-call overhead that otherwise dominates.
A problem that fails (a matrix that is not positive definite) is reported in a mask; the
others are unaffected.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg
from scipy.linalg import lapack


def _data_hessian(F, w):
    r"""Stacked :math:`\sum_i w_i x_i x_i^\top` for rows ``F`` (..., k, D), weights ``w`` (..., k)."""
    return np.swapaxes(F * w[..., None], -1, -2) @ F


def _guarded(f, A, live, shape):
    """``f(A, idx)`` on a stack of matrices A (..., D, D), with ``idx`` selecting the problems'
    other inputs: at once, or, where that fails (a matrix not positive definite), problem by
    problem. Problems not ``live`` get the identity, a harmless stand-in. Returns
    ``(out, ok)``: ``ok`` is False where a problem is not live or its own call failed (its
    ``out`` is then 0)."""
    A = np.where(live[..., None, None], A, np.eye(A.shape[-1]))
    try:
        return f(A, ...), live.copy()
    except (linalg.LinAlgError, ValueError):
        out, ok = np.zeros(shape), live.copy()
    for i in zip(*np.nonzero(live)):
        try:
            out[i] = f(A[i], i)
        except (linalg.LinAlgError, ValueError):
            ok[i] = False
    return out, ok


def _solve_pos(A, b, live):
    """Solve A x = b for a stack of symmetric positive definite A (..., D, D), b (..., D).

    Returns ``(x, solved)``: ``solved`` is False where the problem is not ``live`` or A is
    not positive definite, and x is 0 there.
    """
    def solve(A, i):
        return linalg.solve(A, b[i][..., None], assume_a="pos", check_finite=False)[..., 0]

    x, ok = _guarded(solve, A, live, b.shape)
    return np.where(ok[..., None], x, 0.0), ok


def _cholesky(A, live):
    """Lower Cholesky factors of a stack (..., D, D); ``(L, ok)`` as in :func:`_solve_pos`,
    with the identity where a problem failed."""
    L, ok = _guarded(lambda A, i: np.linalg.cholesky(A), A, live, A.shape)
    return np.where(ok[..., None, None], L, np.eye(A.shape[-1])), ok


def _solve_cholesky(K, g):
    r"""``(K^{-1} g, ok)`` for a stack of matrices K (m, D, D) and rows g (m, D) (``K^{-1}`` where
    ``g`` is None) by Cholesky factors (:func:`_cholesky`); ``ok``: where the factorisation
    succeeds (its test of positive definiteness). The others get a finite placeholder (the
    identity's solve) and ``ok`` False."""
    L, ok = _cholesky(K, np.ones(K.shape[0], dtype=bool))
    rhs = np.broadcast_to(np.eye(K.shape[-1]), K.shape) if g is None else g[..., None]
    out = linalg.cho_solve((L, True), rhs, check_finite=False)
    return (out, ok) if g is None else (out[..., 0], ok)


def _largest_eigenvalues(M):
    """The largest eigenvalue of each symmetric matrix of a stack M (..., D, D): SciPy's
    ``linalg.eigvalsh(M)[..., -1]`` to every bit (LAPACK's ``syevr`` on the lower triangle
    with SciPy's workspace query), called matrix by matrix without SciPy's per-matrix
    validation and dispatch, which on small matrices (the batched fits' D = 31) cost more
    than the decomposition. Non-finite entries or a failed decomposition go to SciPy, which
    raises as before."""
    M = np.asarray(M)
    D = M.shape[-1]
    if M.dtype != np.float64 or not D or not np.isfinite(M).all():
        return linalg.eigvalsh(M)[..., -1]
    flat = M.reshape((-1, D, D))
    syevr, query = lapack.get_lapack_funcs(("syevr", "syevr_lwork"), (flat,))
    work, iwork, info = query(D, lower=1)
    if info != 0:
        return linalg.eigvalsh(M)[..., -1]
    out = np.empty(flat.shape[0])
    for i, a in enumerate(flat):
        w, _, _, _, info = syevr(a, compute_v=0, lower=1, lwork=int(work), liwork=int(iwork))
        out[i] = w[-1] if info == 0 else linalg.eigvalsh(a)[-1]
    return out.reshape(M.shape[:-2])


def _cho_inverse(L):
    """H^-1 for a stack of lower Cholesky factors L (..., D, D) of H.

    LAPACK's ``potri`` problem by problem (numpy's batched ``inv`` redoes an LU
    factorisation, several times slower on small matrices); solves against H then become
    matrix products, which numpy runs through BLAS on the whole stack.
    """
    out = np.empty(L.shape)
    flat, inv = L.reshape((-1,) + L.shape[-2:]), out.reshape((-1,) + L.shape[-2:])
    for i in range(flat.shape[0]):
        c, info = lapack.dpotri(flat[i], lower=1)
        if info != 0:
            raise linalg.LinAlgError("the Cholesky factor is singular")
        inv[i] = c
    low = np.tril(out)
    return low + np.swapaxes(np.tril(out, -1), -1, -2)
