r"""Which targets can move the calibrated noise scale: the test behind lazy certification.

:func:`~skmip.bounds.coupling_noise_scale` returns the smallest grid point at which every
target's bound meets eta, and each target's bound is non-decreasing in each of its own
distances. So the swap distances need to be tight only for targets that decide the scale;
for the others any upper bound serves. :class:`BindingTargets` names the targets that may
decide it (:meth:`~BindingTargets.near`) and checks that a calibration from mixed distances
equals the one from tight distances everywhere (:meth:`~BindingTargets.settled`). The proof
is in docs/coupling.md, "Certified distances", *Certify only what can move the printed
number*; :func:`skmip.calibration.swap.lazy.settled_rounds` runs the passes.
"""

from __future__ import annotations

import math

import numpy as np

from skmip.bounds.coupling_draws import (
    _JensenBounds,
    _alpha,
    _betting_log_thresholds,
    _check_shares,
    _prior_weight,
)
from skmip.bounds.coupling_scale import coupling_noise_scale

_OWNER = "BindingTargets"


class BindingTargets:
    r"""The calibrations that lazy certification must leave unchanged, and their binding targets.

    Parameters
    ----------
    etas : sequence of float
        The levels the distances will be calibrated to (each with the settings below, as
        :func:`~skmip.bounds.coupling_noise_scale` with ``bound="betting"``).
    confidence : float or None, default=0.95
        As in :func:`~skmip.bounds.coupling_noise_scale`.
    target_shares : array_like, optional
        As in :func:`~skmip.bounds.coupling_noise_scale`.
    grid_resolution : int, default=128
        As in :func:`~skmip.bounds.coupling_noise_scale`.

    Notes
    -----
    Let :math:`U` be distances with :math:`U_x = T_x` (tight) for the targets :math:`x` in a
    set :math:`\mathcal T` and :math:`U_x \ge T_x` for the others. The scale from :math:`U`
    is :math:`\hat s_U = 2^{j/G}`, the smallest grid point where all pass; since every bound
    is non-decreasing in every distance, :math:`\hat s_T \le \hat s_U`. If some target of
    :math:`\mathcal T` fails at :math:`2^{(j-1)/G}` under :math:`U`, it fails there under
    :math:`T` (same distances), so :math:`\hat s_T > 2^{(j-1)/G}`: :math:`\hat s_T = \hat s_U`
    (:meth:`settled`). With ``confidence=None`` the scale is the root of the largest mean,
    and the same holds when a target of :math:`\mathcal T` attains that maximum at the root.

    Examples
    --------
    >>> deltas = np.r_[np.full((40, 400, 1), 0.1), np.full((1, 400, 1), 1.0)]
    >>> b = BindingTargets([0.1])
    >>> np.flatnonzero(b.near(deltas, 0.5, b.scales(deltas, 0.5), 0.9))
    array([40])
    """

    def __init__(self, etas, confidence=0.95, target_shares=None, grid_resolution=128):
        self.etas = tuple(dict.fromkeys(float(e) for e in etas))
        self.confidence, self.shares, self.G = confidence, target_shares, int(grid_resolution)

    def _calibrate(self, deltas, train_fraction, eta):
        return coupling_noise_scale(deltas, eta, confidence=self.confidence, train_fraction=train_fraction,
                                    grid_resolution=self.G, target_shares=self.shares)

    def scales(self, deltas, train_fraction):
        """``{eta: noise scale}`` calibrated from ``deltas`` (raises as
        :func:`~skmip.bounds.coupling_noise_scale` does)."""
        return {eta: self._calibrate(deltas, train_fraction, eta).noise_scale for eta in self.etas}

    def _failing(self, bounds, deltas, train_fraction, eta, s):
        """Targets whose bound (or, without confidence, mean) at ``s`` exceeds ``eta``."""
        weight = _prior_weight(_OWNER, train_fraction)
        if self.confidence is None:
            means = bounds.means(s, weight)
            return np.flatnonzero(means > eta)
        shares = _check_shares(_OWNER, self.shares, deltas.shape[0])
        log_threshold = _betting_log_thresholds(shares, _alpha(_OWNER, self.confidence))
        return bounds.failing(s, weight, eta, log_threshold)

    def near(self, deltas, train_fraction, scales, factor):
        r"""Mask of the targets that fail under ``deltas`` at ``factor`` times the scale of
        ``scales`` for some eta: those that can decide a scale at least that large."""
        bounds = _JensenBounds(deltas)
        mask = np.zeros(deltas.shape[0], dtype=bool)
        for eta in self.etas:
            if scales[eta] > 0:
                mask[self._failing(bounds, deltas, train_fraction, eta, factor * scales[eta])] = True
        return mask

    def upper_open(self, deltas, train_fraction, tight, scales):
        r"""Mask of the targets to tighten before every eta's ``eta_upper`` at its scale in
        ``scales`` is, to the last digit, the one tight distances give (none: it is).

        :meth:`~skmip.bounds.coupling_draws._JensenBounds.max_upper` evaluates the bound of the
        32 targets of largest Jensen bound together (a bisection whose steps depend on the
        rows evaluated together), then of every target that fails at the best value so far.
        If those 32 are tight, every other target's Jensen bound lies below theirs, and no
        target that is not tight fails at their best value, then with tight distances (each
        at most the mixed one, every bound non-decreasing in every distance) the same rows
        are evaluated in the same groups: the same ``eta_upper``. The mask: the targets not
        tight whose Jensen bound reaches the 32nd largest of the tight ones (all of the 32
        largest while fewer are tight), and those that fail at the best value of the 32
        largest tight ones, so that one pass settles it.
        """
        if self.confidence is None:  # no eta_upper is printed
            return np.zeros(deltas.shape[0], dtype=bool)
        bounds = _JensenBounds(deltas)
        weight = _prior_weight(_OWNER, train_fraction)
        shares = _check_shares(_OWNER, self.shares, deltas.shape[0])
        log_threshold = _betting_log_thresholds(shares, _alpha(_OWNER, self.confidence))
        more = np.zeros(deltas.shape[0], dtype=bool)
        for eta in self.etas:
            s = scales[eta]
            if s == 0 or weight <= eta:  # no eta_upper from the draws
                continue
            top, jensen, best = bounds.first_upper(s, weight, log_threshold, among=np.flatnonzero(tight))
            if top.size < bounds.TOP:  # fewer tight targets than the first group holds
                more[bounds.first_upper(s, weight, log_threshold)[0]] = True
                continue
            more |= jensen >= jensen[top].min()
            more[self._failing(bounds, deltas, train_fraction, best, s)] = True
        return more & ~tight

    def settled(self, deltas, train_fraction, tight):
        r"""``(ok, scales)``: whether every eta's scale from ``deltas`` is the one that tight
        distances give, when only the targets in the mask ``tight`` are tight (class Notes)."""
        bounds = _JensenBounds(deltas)
        ok, scales = True, {}
        for eta in self.etas:
            s = scales[eta] = self._calibrate(deltas, train_fraction, eta).noise_scale
            if s == 0:  # no noise: tight distances cannot need less
                continue
            if self.confidence is None:
                means = bounds.means(s, _prior_weight(_OWNER, train_fraction))
                ok &= bool(tight[means == means.max()].any())
            else:
                below = 2.0 ** ((round(self.G * math.log2(s)) - 1) / self.G)
                ok &= bool(tight[self._failing(bounds, deltas, train_fraction, eta, below)].any())
        return ok, scales
