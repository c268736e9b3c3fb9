r"""Certified distances of the pairs of one fit: :class:`PairCertifier`.

The closed-form certificate of :mod:`skmip.calibration.swap.certify` first; the pairs it
leaves loose get chord steps over the rows and the ball lemma, then, where still loose, an
exact solve certified by its own gradient (docs/coupling.md, "Certified distances"). The
second stage is :class:`~.second_stage.SecondStage` (here a stack of one fit); the batched
engine certifies many fits at once with the subclass :class:`~.stacked_certifier.StackCertifier`.
"""

from __future__ import annotations

import numpy as np

from skmip.calibration.swap.certify import RELEASE_TOL, FitCertificate
from skmip.calibration.swap.exact_stack import exact_minimisers, swapped_rows
from skmip.calibration.swap.hinge_certify import strong_certifier
from skmip.calibration.swap.row_sums import RowSums, fit_row_scalars, rows_times
from skmip.calibration.swap.second_stage import SecondStage

#: A pair whose certificate adds more than this fraction to its estimate is solved exactly.
FALLBACK_RTOL = 0.1
#: ... or more than this fraction of the median distance of its fit.
_FALLBACK_ATOL = 0.01
#: Exact minimisers kept per job (keyed by training set).
_CACHE_SIZE = 20000
#: Further chord steps for the pairs still loose after those.
_MORE_CHORD_STEPS = 6


def make_certifier(glm, theta0, reg0, P, hinv, H, residual, whitener, index, **kwargs):
    """The certifier of one fit of a generalised-linear block: :class:`PairCertifier` for a
    loss that declares its self-concordance constant, :class:`~.hinge_certify.StrongCertifier`
    for one that declares a Lipschitz, non-decreasing derivative instead (the squared hinge;
    ``residual`` and ``kwargs`` are then not needed)."""
    if glm.gsc is None:
        return strong_certifier([(glm, theta0, P, hinv, H, index)], whitener)
    return PairCertifier(glm, theta0, reg0, P, hinv, H, residual, whitener, index, **kwargs)


class _Reach:
    """What the second stage reads of :class:`~.row_sums.RowSums`."""

    def __init__(self, reach):
        self.reach = reach


class PairCertifier:
    r"""Certified distances of the pairs of one fit (one generalised-linear block).

    The engine's estimates become upper bounds by :meth:`FitCertificate.pair_bound`; a pair
    whose bound is infinite, or exceeds its estimate by more than ``FALLBACK_RTOL``, is
    solved to convergence (:func:`.exact_stack.exact_minimisers`, the loose pairs together),
    which is certified by its own gradient and Hessian. ``block`` is the fit's :class:`~.losses.LossBlock` on ``H``,
    ``factor`` its Hessian's Cholesky factor, ``P`` the regulariser's Hessian. ``targets``
    (a boolean mask over the rows of D) limits the later stages to the pairs of those
    targets and the pairs the closed form leaves unbounded; the others keep their
    closed-form bound (lazy certification, :mod:`.lazy`).
    """

    def __init__(self, glm, theta0, reg0, P, hinv, H, residual, whitener, index, cache=None, rows=None,
                 targets=None):
        self.targets = targets
        self.glm, self.theta0, self.reg0, self.P, self.hinv, self.H = glm, theta0, reg0, P, hinv, H
        # Exact minimisers by training set (small n repeats them across rounds); the
        # regulariser is the same function for every k-row set (reg0 - theta0 P is constant).
        self.cache = {} if cache is None else cache
        self.reg_const = reg0 - theta0 @ P
        self.whiten = lambda V: whitener.apply(V, index)
        # ``rows``: the engine's (leverages, whitened norms, curvatures) of the rows of H; the
        # row sums are then filled as it reaches the rows (RowSums.fill). Else all computed here.
        lev, self.unorm, self.curv = fit_row_scalars(glm, theta0, H, hinv, self.whiten) if rows is None else rows
        self.fit = FitCertificate(hinv, None, residual, self.whiten, glm.gsc, leverage=lev)
        self.sums = RowSums(glm.features, H, self.curv, self.fit.leverage, self.unorm,
                            hinv=hinv if rows is None else None)
        self._second = None  # the second stage (_stage), on first use

    def bound(self, dist, norms_e, norms_x, c_e, c_x, det, e_rows, x_rows):
        """Closed-form bounds for pairs laid out as ``dist`` (:meth:`FitCertificate.pair_bound`);
        ``norms_*``: whitened norms of xi_e, xi_x.

        Where the row sums are split (:attr:`.row_sums.RowSums.split`), a pair the closed form
        leaves loose is bounded again with the maximum and the quartic sum over the rows of
        ``H`` summed exactly for its two rows (:meth:`.row_sums.RowSums.refine`, O(k D) a row,
        no transcendental work), and keeps the smaller bound: both are upper bounds, and the
        second stage then runs only where this leaves the pair loose."""
        top = np.abs(c_e) * norms_e + np.abs(c_x) * norms_x
        out = self.fit.pair_bound(dist, top, det, c_e, c_x, norms_e, norms_x, e_rows, x_rows, self.sums)
        if not self.sums.split:
            return out
        loose = self._loose(dist, out, self._floor(dist)) & self._asked(x_rows, out)
        if not loose.any():
            return out
        idx = np.nonzero(loose)

        def pick(v):
            return np.broadcast_to(v, loose.shape)[idx]

        e_sel, x_sel = pick(e_rows), pick(x_rows)
        rows = np.unique(np.r_[e_sel, x_sel])
        self.sums.refine(rows, rows_times(self.glm.features[rows], self.hinv))
        again = self.fit.pair_bound(pick(dist), pick(top), {key: pick(v) for key, v in det.items()}, pick(c_e),
                                    pick(c_x), pick(norms_e), pick(norms_x), e_sel, x_sel, self.sums.refined())
        out[idx] = np.minimum(out[idx], again)
        return out

    @staticmethod
    def _floor(dist):
        """Slack that cannot matter: a small fraction of the typical distance of the fit."""
        finite = dist[np.isfinite(dist)]
        return _FALLBACK_ATOL * float(np.median(finite)) if finite.size else 0.0

    @staticmethod
    def _loose(dist, certified, floor):
        return ~np.isfinite(certified) | (certified > dist * (1.0 + FALLBACK_RTOL) + floor + 1e-12)

    def _stage(self):
        """The fit's second stage (:class:`~.second_stage.SecondStage`, a stack of one fit),
        built on first use."""
        if self._second is None:
            fit = self.fit
            self._second = SecondStage(
                self.glm, self.H[None], self.theta0[None], self.reg_const[None], self.P, self.hinv[None],
                self.curv[None], fit.leverage[None], self.unorm[None], ([fit.lam], [fit.nu], [fit.out_error]),
                self.sums.reach[None], self.whiten)
        return self._second

    def tighten(self, dist, certified, x_rows, e_rows, c_e, c_x, det):
        """Tighten the loose entries of ``certified`` (laid out as ``dist``): first by the
        remainder summed over the rows, then by exact solves; returns the array."""
        return self._tighten_fits(dist, certified, x_rows, e_rows, c_e, c_x, 0, self._floor(dist))

    def _tighten_fits(self, dist, certified, x_rows, e_rows, c_e, c_x, fit, floor):
        """:meth:`tighten` for pairs of the fits ``fit`` (their indices in the stack, laid out
        as ``dist``, the pairs of each fit together), each with its fit's ``floor``."""
        loose = self._loose(dist, certified, floor) & self._asked(x_rows, certified)
        if not loose.any():
            return certified
        shape = dist.shape
        x_rows, e_rows, fit, floor = (np.broadcast_to(v, shape) for v in (x_rows, e_rows, fit, floor))
        c_e, c_x = np.broadcast_to(c_e, shape), np.broadcast_to(c_x, shape)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # diverging steps: inf
            out, start_at = self._chord_stage(dist, certified, loose, floor, x_rows, e_rows, c_e, c_x, fit)
            loose = self._loose(dist, out, floor) & self._asked(x_rows, out)
            if loose.any():
                idx = np.nonzero(loose)
                moved = [start_at.get(i) for i in zip(*(i.tolist() for i in idx))]
                out[idx] = np.minimum(out[idx], self._exact(fit[idx], x_rows[idx], e_rows[idx], moved, c_e[idx],
                                                            c_x[idx]))
        return out

    #: Lazy certification over kept pairs (:mod:`.kept`): the pairs (a mask laid out as the
    #: pairs) the later stages may take in this pass, in place of ``targets``' rule.
    pairs = None

    def _asked(self, x_rows, certified):
        """The pairs the later stages may take: all, ``pairs``, or (lazy) those of ``targets``
        and every unbounded one."""
        if self.pairs is not None:
            return self.pairs
        if self.targets is None:
            return True
        return self.targets[x_rows] | ~np.isfinite(certified)

    def release_stage(self):
        """Drop the second stage's copy of the fit's rows (rebuilt on its next use): what a
        kept certifier need not hold between passes (:mod:`.kept`)."""
        self._second = None

    def release_closed_form(self):
        """Drop the row sums only the closed form reads (:meth:`bound`), keeping the
        :math:`M_j` the second stage reads: for a certifier kept once every pair has its
        closed-form bound (:mod:`.kept`)."""
        self.sums = _Reach(self.sums.reach)

    def _chord_stage(self, dist, certified, loose, floor, x_rows, e_rows, c_e, c_x, fit):
        """The second stage for the ``loose`` pairs: ``(bounds, start_at)``, the chord points
        where the chord steps settled (a finite bound), by pair."""
        out = certified.copy()
        idx = np.nonzero(loose)
        stage = self._stage()
        bounds, moved = stage.bounds(fit[idx], x_rows[idx], e_rows[idx], c_e[idx], c_x[idx])
        out[idx] = np.minimum(out[idx], bounds)
        # More chord steps (O(k D) each) where one was not enough, before exact solves.
        again = self._loose(dist[idx], out[idx], floor[idx])
        if again.any():
            sub = tuple(i[again] for i in idx)
            bounds2, moved[again] = stage.bounds(fit[sub], x_rows[sub], e_rows[sub], c_e[sub], c_x[sub],
                                                 steps=_MORE_CHORD_STEPS, start=moved[again])
            out[sub] = np.minimum(out[sub], bounds2)
        # Exact solves start from the chord point where the chord steps settled (finite bound),
        # else from the engine's estimate (chord steps can diverge far from the minimiser).
        settled = np.flatnonzero(np.isfinite(out[idx]) & self._loose(dist[idx], out[idx], floor[idx]))
        return out, {tuple(int(i[m]) for i in idx): moved[m] for m in settled}

    def _fits(self):
        """``(H, theta0, hinv, reg_const, out_error)`` of the fits of the stack (here the one fit),
        arrays over the fits (``reg_const``: the regulariser's gradient less theta P, the same
        function for every fit)."""
        return self.H[None], self.theta0[None], self.hinv[None], self.reg_const[None], np.array([self.fit.out_error])

    def _exact(self, b, x, e, moved, c_e, c_x):
        """Stage 3: the certified distances of the exact minimisers of the swaps (``x`` for ``e``)
        on the fits ``b``, all solved together (:func:`.exact_stack.exact_minimisers`) from the
        chord points ``moved`` (a list; ``None``: from the estimate); a training set met before
        (the cache) is not solved again."""
        H, theta0, hinv, reg_const, out_error = self._fits()
        feats = self.glm.features
        rows = swapped_rows(H[b], e, x)
        keys = [r.tobytes() for r in rows]
        found, new = {}, {}
        for i, key in enumerate(keys):
            if key in self.cache:
                found[key] = self.cache[key]
            else:
                new.setdefault(key, i)
        if new:
            sel = np.fromiter(new.values(), dtype=np.intp, count=len(new))
            start = self._starts(b[sel], x[sel], e[sel], [moved[i] for i in sel], c_e[sel], c_x[sel])
            thetas, own = exact_minimisers(feats, self.glm.dloss, self.glm.d2loss, H, b[sel], e[sel], x[sel], self.P,
                                           reg_const, start, self.whiten, self.glm.gsc)
            for key, theta, err in zip(new, thetas, own.tolist()):
                if len(self.cache) >= _CACHE_SIZE:
                    self.cache.clear()
                self.cache[key] = found[key] = (theta, err)
        theta = np.array([found[key][0] for key in keys])
        own = np.array([found[key][1] for key in keys])
        # Each pair whitened alone (a product per row: its bound does not depend on the others).
        moved = self.whiten((theta - theta0[b])[:, None, :])[:, 0]
        bound = np.linalg.norm(moved, axis=-1) + own + out_error[b] + 2 * RELEASE_TOL
        return np.where(np.isfinite(bound), bound, np.inf)  # a failed solve certifies nothing

    def _starts(self, b, x, e, moved, c_e, c_x):
        """Where the solves start: the chord points ``moved`` where given, else the engine's
        estimates, else (not finite) the fits."""
        _, theta0, hinv, _, _ = self._fits()
        feats = self.glm.features
        xi_e, xi_x = ((hinv[b] @ feats[r][..., None])[..., 0] for r in (e, x))
        start = theta0[b] + c_e[:, None] * xi_e - c_x[:, None] * xi_x
        for i, m in enumerate(moved):
            if m is not None:
                start[i] = theta0[b[i]] + m
        return np.where(np.isfinite(start).all(-1, keepdims=True), start, theta0[b])
