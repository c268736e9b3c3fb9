r"""Certified distances of the pairs of a stack of fits at once: :class:`StackCertifier`.

The batched engine (:mod:`.batched`) fits a chunk of rounds together; its fits are small
(breast cancer: 213 rows, 31 parameters, 426 pairs), and certifying them fit by fit with
:class:`~.pair_certifier.PairCertifier` spent most of a certified calibration on the fixed
cost of numpy calls. Here the three stages of docs/coupling.md, "Certified distances", run
on the pairs of every fit of the chunk together, each pair read at its own fit: the closed
form (:meth:`~.certify.FitCertificate.pair_bound`, elementwise with each fit's constants
and row sums), the second stage (:class:`~.second_stage.SecondStage`, the fits stacked),
and the exact solves (:func:`~.exact_stack.exact_minimisers`, every loose pair of the chunk
together). The arithmetic of each pair is that of its fit certified alone, so are the
bounds (the exact solves': up to summation order).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from skmip.calibration.swap.certify import FitCertificate, fit_constants
from skmip.calibration.swap.pair_certifier import _FALLBACK_ATOL, PairCertifier
from skmip.calibration.swap.row_sums import _SUMS_CHUNK, _SUMS_WORK, RowSums, stacked_row_sums
from skmip.calibration.swap.second_stage import SecondStage, _mv, _vm


class _Constants(NamedTuple):
    """The constants of :class:`~.certify.FitCertificate` that its ``pair_bound`` reads, one
    value per pair (its fit's)."""

    nu: np.ndarray
    lam: np.ndarray
    g0: np.ndarray
    gsc: float
    out_error: np.ndarray


class _Sums(NamedTuple):
    """The row sums of :class:`~.row_sums.RowSums` of every fit, flat (fit b's row j at
    ``b n + j``), and ``top`` per pair."""

    reach: np.ndarray
    quartic: np.ndarray
    weighted: np.ndarray
    squared: np.ndarray
    top: np.ndarray


class StackCertifier(PairCertifier):
    r"""Certified distances of the pairs of B fits (one generalised-linear block each).

    Parameters
    ----------
    glm : GLMTerms
        The block's rows (features, loss derivatives).
    theta, reg0, residual : ndarray (B, D)
        Each fit's minimiser, regulariser gradient and residual gradient
        :math:`\nabla F_H(\theta_0)`.
    P : ndarray (D, D)
        The regulariser's Hessian.
    Hinv : ndarray (B, D, D)
        Each fit's :math:`K^{-1}`.
    H : ndarray (B, k)
        Each fit's rows.
    whitener, index
        The noise shape's whitening and the block's coordinates.
    xi, h : ndarray (B, n, D), (B, n)
        :math:`K^{-1}x_j` and :math:`h_{jj}` of every row of :math:`\mathcal{D}` at each fit.
    cache : dict, optional
        Exact minimisers by training set (the job's).
    targets : ndarray of bool, optional
        Lazy certification's targets (:class:`~.pair_certifier.PairCertifier`).
    FH : ndarray (B, k, D), optional
        The rows of each fit's ``H`` (``glm.features[H]``), where the caller has them.

    Notes
    -----
    :meth:`bound` and :meth:`tighten` take ``fit``, each pair's fit (laid out as the pairs,
    the pairs of each fit together and in the order of the fits).
    """

    def __init__(self, glm, theta, reg0, P, Hinv, H, residual, whitener, index, xi, h, cache=None, targets=None,
                 FH=None):
        self.targets = targets
        self.glm, self.theta0, self.P, self.hinv, self.H = glm, theta, P, Hinv, H
        self.cache = {} if cache is None else cache
        self.reg_const = reg0 - _vm(theta, P)  # the same function for every fit
        self.whiten = lambda V: whitener.apply(V, index)
        B, n = H.shape[0], glm.features.shape[0]
        at_H = (np.arange(B)[:, None], H)
        # u_i = ||W K^-1 x_i|| for the rows of H: np.linalg.norm's own sum of squares, formed
        # in the gathered rows in place (three (B, k, D) temporaries fewer per batch).
        U = xi[at_H]
        U = whitener.apply(U, index, out=U)
        self.unorm = np.sqrt(np.add.reduce(np.multiply(U, U, out=U), axis=-1))
        FH = glm.features[H] if FH is None else FH
        # The rows and margins of H, kept for the second stage (FitRows: the same products).
        self._at_H = (FH, _mv(FH, theta))
        self.curv = glm.d2loss(self._at_H[1], H)
        # Each fit's FitCertificate constants (nu, lam, g0, out_error), arrays over the fits.
        *self.consts, self.lev = fit_constants(Hinv, residual, self.whiten, glm.gsc, h[at_H])
        self._n = n
        if H.shape[1] * n * FH.shape[-1] <= _SUMS_WORK:  # every row of H summed exactly: all fits at once
            self._reach, *flat = stacked_row_sums(FH, self.curv, self.unorm, xi)
            self._flat = [f.ravel() for f in flat]
            self._top = self.unorm.max(axis=1, initial=0.0)
        else:
            sums = [RowSums(glm.features, H[b], self.curv[b], self.lev[b], self.unorm[b]) for b in range(B)]
            for b, s in enumerate(sums):
                for a in range(0, n, _SUMS_CHUNK):  # the chunks in which one fit's rows are summed
                    c = slice(a, a + _SUMS_CHUNK)
                    s.fill(np.arange(n)[c], xi[b, c], h[b, c])
            self._reach = np.stack([s.reach for s in sums])
            self._flat = [np.concatenate([getattr(s, key) for s in sums]) for key in ("quartic", "weighted", "squared")]
            self._top = np.array([s.top for s in sums])
        self._second = None

    def bound(self, dist, norms_e, norms_x, c_e, c_x, det, e_rows, x_rows, fit):
        """Closed-form bounds (:meth:`~.certify.FitCertificate.pair_bound`) of pairs of the
        fits ``fit``, each with its fit's constants and row sums."""
        top = np.abs(c_e) * norms_e + np.abs(c_x) * norms_x
        nu, lam, g0, out_error = (c[fit] for c in self.consts)
        consts = _Constants(nu, lam, g0, float(self.glm.gsc), out_error)
        sums = _Sums(self._reach.ravel(), *self._flat, self._top[fit])
        at = fit * self._n
        # pair_bound reads only these constants: each pair's are its fit's.
        return FitCertificate.pair_bound(consts, dist, top, det, c_e, c_x, norms_e, norms_x, at + e_rows,
                                         at + x_rows, sums)

    def tighten(self, dist, certified, x_rows, e_rows, c_e, c_x, det, fit):
        """:meth:`PairCertifier.tighten` for pairs of the fits ``fit``, each with its own fit's
        floor (the median of its fit's distances)."""
        fit = np.broadcast_to(fit, dist.shape)
        # The pairs of each fit are together: one slice of the flat layout per fit.
        ends = np.searchsorted(fit.ravel(), np.arange(self.H.shape[0] + 1))
        floor = self._floors(dist.ravel(), ends)
        return self._tighten_fits(dist, certified, x_rows, e_rows, c_e, c_x, fit, floor[fit])

    def _floors(self, flat, ends):
        """Each fit's :meth:`PairCertifier._floor` of its pairs ``flat[ends[b]:ends[b + 1]]``:
        one median along an axis where every fit has the same count of pairs, all finite (the
        batched rounds' case: a median selects and averages the same elements either way)."""
        counts = np.diff(ends)
        if counts.size and counts[0] > 0 and (counts == counts[0]).all() and np.isfinite(flat).all():
            return _FALLBACK_ATOL * np.median(flat[ends[0]:ends[-1]].reshape(counts.size, counts[0]), axis=1)
        return np.array([self._floor(flat[a:b]) for a, b in zip(ends[:-1], ends[1:])])

    def release_closed_form(self):
        """:meth:`PairCertifier.release_closed_form` for the stack: the row sums but ``_reach``,
        and the rows of H (a kept certifier's second stage gathers them again)."""
        self._flat = self._top = self._at_H = None

    def _stage(self):
        if self._second is None:
            nu, lam, _, out_error = self.consts
            self._second = SecondStage(self.glm, self.H, self.theta0, self.reg_const, self.P, self.hinv, self.curv,
                                       self.lev, self.unorm, (lam, nu, out_error), self._reach, self.whiten,
                                       self._at_H)
        return self._second

    def _fits(self):
        return self.H, self.theta0, self.hinv, self.reg_const, self.consts[3]
