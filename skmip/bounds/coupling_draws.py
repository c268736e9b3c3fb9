r"""The coupling bound's per-draw variable and cheap upper bounds on it.

For whitened swap distances :math:`\Delta` (the array convention of
:mod:`skmip.bounds.coupling`) and noise scale :math:`s`, each draw of :math:`(D_{out}, e)`
contributes :math:`Y = c\,\overline{\mathrm{TV}}(\Delta/s)` with :math:`c = \min(q, 1-q)`
and :math:`\mathrm{TV}(\Delta) = 2\Phi(\Delta/2) - 1` (:func:`gaussian_tv`). This module
computes those values a block of targets at a time, bounds them from above by Jensen's
inequality (:class:`_JensenBounds`), and checks the arguments every coupling function shares.

References
----------
Izzo et al., Definition 1 and Proposition 2; Devroye, Mehrabian & Reddad (2018), the
equal-covariance case (see :mod:`skmip.bounds.coupling`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import erf

from skmip.bounds._common import scalar_or_array
from skmip.bounds.betting import BET_FRACTIONS, _capital_error, _upper, betting_passes
from skmip.bounds.rounding import UNIT_ROUNDOFF, relative_error, round_up

__all__ = ["gaussian_tv"]

_SQRT8 = math.sqrt(8.0)


def _prior_weight(owner, train_fraction):
    q = float(train_fraction)
    if not 0.0 < q < 1.0:
        raise ValueError(
            f"{owner}: train_fraction must be in (0, 1); got {train_fraction!r}. It is k/n, "
            "the probability that a given row is in D_train (0.5 in Definition 1 with k = n/2)."
        )
    # min(q, 1 - q) * TV bounds the Bayes advantage (module docstring); 1/2 at k = n/2.
    return min(q, 1.0 - q)


def _check_deltas(owner, deltas):
    """``deltas`` as a float array of shape (n_targets, n_draws, n_pairs); an object with
    ``blocks()`` and a 3-D ``shape`` whose first axis indexes to float rows (the rounds'
    compact store, :class:`skmip.calibration.swap.compact.CompactDistances`, checked when
    stored) passes as is, and is read a block of targets at a time."""
    if hasattr(deltas, "blocks") and len(getattr(deltas, "shape", ())) == 3:
        return deltas
    arr = np.asarray(deltas, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :, None]
    elif arr.ndim == 2:
        arr = arr[:, :, None]
    elif arr.ndim != 3:
        raise ValueError(
            f"{owner}: deltas must have shape (n_draws,), (n_targets, n_draws) or "
            f"(n_targets, n_draws, n_pairs); got an array of shape {arr.shape}."
        )
    if arr.size == 0:
        raise ValueError(f"{owner}: deltas is empty (shape {arr.shape}); it needs at least one draw.")
    if np.isnan(arr).any() or (arr < 0).any():
        raise ValueError(
            f"{owner}: deltas must be >= 0 (whitened distances; inf allowed); got "
            f"{int(np.isnan(arr).sum())} NaN and {int((arr < 0).sum())} negative value(s)."
        )
    return arr


def _check_scale(owner, noise_scale):
    s = np.asarray(noise_scale, dtype=np.float64)
    if s.ndim != 0 or not (s > 0) or not np.isfinite(s):
        raise ValueError(
            f"{owner}: noise_scale must be a finite number > 0; got {noise_scale!r}. It is s in "
            "X ~ N(0, s^2 diag(w)^2), in units of the whitening scale w."
        )
    return float(s)


def _alpha(owner, confidence):
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(
            f"{owner}: confidence must be in (0, 1); got {confidence!r}. It is the probability, "
            "over the random draws behind deltas, that the stated bound holds (0.95 by default). "
            "Pass confidence=None for the point estimate (only right for exhaustive deltas)."
        )
    return 1.0 - c


def gaussian_tv(delta: ArrayLike) -> float | np.ndarray:
    r"""Total variation between two Gaussians with one covariance: :math:`2\Phi(\Delta/2) - 1`.

    Parameters
    ----------
    delta : float or array_like
        Mahalanobis distance :math:`\Delta = \|\Sigma^{-1/2}(a - a')\|` between the means,
        ``>= 0``; ``inf`` gives 1.

    Returns
    -------
    float or ndarray
        :math:`\mathrm{TV}(\mathcal{N}(a, \Sigma), \mathcal{N}(a', \Sigma))`, in [0, 1].

    Raises
    ------
    ValueError
        If any ``delta`` is negative or NaN.

    Notes
    -----
    Both laws are symmetric about the hyperplane bisecting :math:`a a'`; projecting on the
    whitened direction :math:`\Sigma^{-1/2}(a - a')/\Delta` reduces the problem to
    :math:`\mathcal{N}(0, 1)` against :math:`\mathcal{N}(\Delta, 1)`, whose densities cross
    at :math:`\Delta/2`: :math:`\mathrm{TV} = \Phi(\Delta/2) - \Phi(-\Delta/2)`. Computed as
    :math:`\operatorname{erf}(\Delta/\sqrt 8)`, exact in every dimension.

    References
    ----------
    Devroye, Mehrabian & Reddad (2018), the equal-covariance case.

    Examples
    --------
    >>> round(gaussian_tv(1.0), 4)   # 2 * Phi(0.5) - 1
    0.3829
    >>> gaussian_tv([0.0, np.inf]).tolist()
    [0.0, 1.0]
    """
    d = np.asarray(delta, dtype=np.float64)
    if np.isnan(d).any() or (d < 0).any():
        raise ValueError(f"gaussian_tv: delta must be >= 0 (a distance); got {np.asarray(delta).tolist()!r}.")
    return scalar_or_array(erf(d / _SQRT8))


def _target_blocks(arr):
    """``(slice, float block)`` over the targets of ``arr``, a block of about
    ``_BLOCK_VALUES`` values at a time (the temporaries stay small whatever n)."""
    if hasattr(arr, "blocks"):
        yield from arr.blocks()
        return
    step = max(1, _BLOCK_VALUES // max(1, arr.shape[1] * arr.shape[2]))
    for a in range(0, arr.shape[0], step):
        idx = slice(a, a + step)
        yield idx, arr[idx]


def _smallest_positive(arr):
    """The smallest finite positive distance (``inf`` if none), without copying them."""
    return min((float(np.min(b, where=np.isfinite(b) & (b > 0), initial=np.inf)) for _, b in _target_blocks(arr)),
               default=np.inf)


#: Distances turned into total variations at a time by :func:`_draw_values`.
_BLOCK_VALUES = 2**22


def _draw_values(deltas, s, weight, pair_weights=None):
    """Per-target, per-draw variable Y = weight * mean over pairs of TV(delta / s).

    ``pair_weights`` (same shape as ``deltas``, summing to 1 over axis 2) turns the mean
    over pairs into a weighted mean: exhaustive deltas with grouped, repeated values.
    """
    out = np.empty(deltas.shape[:2])
    # Targets in blocks: the temporaries stay small whatever n (the same arithmetic per value).
    for idx, block in _target_blocks(deltas):
        # erf(inf) = 1, erf(0) = 0: infinite and zero distances need no special case.
        if s == 0.0:  # no noise: every positive distance is told apart with certainty
            tv = (block > 0).astype(np.float64)
        else:
            tv = erf(block / (s * _SQRT8))
        if pair_weights is None:
            out[idx] = weight * tv.mean(axis=2)
        else:
            out[idx] = weight * (tv * pair_weights[idx]).sum(axis=2)
    # Rounded up by their round-off bound (each TV a few ulps, a mean of n_pairs non-negative
    # terms, the factor weight): every bound built on them is non-decreasing in them
    # (betting) or padded on its own (Maurer & Pontil), so it stays above its exact value.
    # In place, as the values are >= 0: fl(y (1 + r + 4u)) >= y (1 + r) (one rounding).
    out *= 1.0 + relative_error(deltas.shape[2] + 12) + 4 * UNIT_ROUNDOFF
    return np.minimum(out, weight, out=out)


class _JensenBounds:
    r"""Cheap upper bounds on the draw values, to evaluate them exactly only where it matters.

    :math:`t \mapsto \operatorname{erf}(t / (s\sqrt8))` is concave and non-decreasing, so by
    Jensen's inequality a mean of TVs is at most the TV of the mean distance: per draw, the
    value over its pairs :math:`Y_{x,r} \le c\,\mathrm{TV}(\bar\Delta_{x,r}/s)`, and per
    target the mean over draws is at most :math:`c\,\mathrm{TV}(\bar\Delta_x/s)`. The
    searches over :math:`s` use them without changing any result:

    * the point estimate's maximum over targets is evaluated exactly on the targets in
      decreasing order of their bound, until the bound falls below the best exact value;
    * the betting bound is non-decreasing in every draw (:mod:`skmip.bounds.betting`), so a
      target that passes with its draws replaced by upper bounds passes; only the others are
      evaluated exactly (first against the constant bound :math:`\max_r`, then with each
      draw replaced by the largest of its group when a target's draws are sorted and cut
      into 16 groups, then per draw). The same tests find the maximum of the bound over the
      targets at the chosen scale.
    """

    #: Targets evaluated exactly at a time by :meth:`max_mean`.
    _STEP = 64
    #: Groups of sorted draws per target in the second test of :meth:`all_pass`.
    _GROUPS = 16

    def __init__(self, arr, pw=None):
        self.arr, self.pw = arr, pw
        n = arr.shape[0]
        # Per target, in one pass over blocks of targets: the mean distance and the worst
        # draw's mean distance (Jensen), the (weighted) shares of infinite and of positive
        # distances, and the range of the finite positive ones (of positive weight).
        self.per_target, self.worst_draw = np.empty(n), np.empty(n)
        self.inf_share, self.pos_share = np.empty(n), np.empty(n)
        # The draws' sorted mean distances cut into groups: each group's largest bounds
        # every draw of the group (group_max, group_sizes).
        m = arr.shape[1]
        ends = np.cumsum([len(g) for g in np.array_split(np.arange(m), min(self._GROUPS, m))])
        self.group_sizes = np.diff(np.r_[0, ends]).astype(np.float64)
        self.group_max = np.empty((n, ends.size))
        lo, hi = np.inf, -np.inf
        for idx, block in _target_blocks(arr):
            w = None if pw is None else pw[idx]
            per_draw = self._per_draw(block, w)
            self.per_target[idx] = per_draw.mean(axis=1)
            self.worst_draw[idx] = per_draw.max(axis=1)
            self.group_max[idx] = np.sort(per_draw, axis=1)[:, ends - 1]
            self.inf_share[idx] = self._share(np.isinf(block), w)
            self.pos_share[idx] = self._share(block > 0, w)
            keep = np.isfinite(block) & (block > 0) & (True if w is None else w > 0)
            lo = min(lo, float(np.min(block, where=keep, initial=np.inf)))
            hi = max(hi, float(np.max(block, where=keep, initial=-np.inf)))
        self.finite_range = (lo, hi)

    @staticmethod
    def _per_draw(block, w):
        """Mean distance of each draw (over its pairs, weighted)."""
        return block.mean(axis=2) if w is None else np.where(w > 0, block * w, 0.0).sum(axis=2)

    @staticmethod
    def _share(mask, w):
        """Per target, the (weighted) fraction of its values in ``mask``, averaged over draws."""
        return (mask.mean(axis=2) if w is None else (mask * w).sum(axis=2)).mean(axis=1)

    @staticmethod
    def _tv(d, s):
        # Upper bounds on TVs of mean distances: rounded up like _draw_values' values.
        tv = erf(d / (s * _SQRT8)) if s > 0 else (d > 0).astype(np.float64)
        return round_up(tv, rel_err=relative_error(12), upper=1.0)

    def means(self, s, weight):
        """Each target's mean over draws of ``_draw_values`` at ``s``, exactly."""
        out = np.empty(self.arr.shape[0])
        for idx, block in _target_blocks(self.arr):
            out[idx] = _draw_values(block, s, weight, None if self.pw is None else self.pw[idx]).mean(axis=1)
        return out

    def max_mean(self, s, weight):
        """``max_x`` of the mean over draws of ``_draw_values`` at ``s``, exactly."""
        upper = weight * self._tv(self.per_target, s)
        order = np.argsort(-upper, kind="stable")
        best = -np.inf
        for start in range(0, order.size, self._STEP):
            idx = order[start:start + self._STEP]
            if upper[idx[0]] <= best:
                break
            values = _draw_values(self.arr[idx], s, weight, None if self.pw is None else self.pw[idx])
            best = max(best, float(values.mean(axis=1).max()))
        return best

    def _group_capital(self, idx, s, weight, level):
        """The betting capital at ``level`` of targets ``idx`` with every draw replaced by its
        group's largest (the best of the fixed bets); a lower bound on the exact capital."""
        cg = weight * self._tv(self.group_max[idx], s)
        return np.max([(self.group_sizes * np.log1p((f / weight) * (level - cg))).sum(axis=1)
                       for f in BET_FRACTIONS], axis=0)

    #: Targets whose betting bound :meth:`max_upper` evaluates first.
    TOP = 32

    def first_upper(self, s, weight, log_threshold, among=None):
        """``(top, jensen, best)``: the ``TOP`` targets of largest Jensen bound (at least each
        target's mean) at ``s`` (of those ``among``, in increasing order; default all), every
        target's Jensen bound, and the largest betting bound of ``top`` (evaluated together):
        where :meth:`max_upper` starts."""
        jensen = weight * self._tv(self.per_target, s)
        among = np.arange(jensen.size) if among is None else among
        top = among[np.argsort(-jensen[among], kind="stable")[:self.TOP]]
        return top, jensen, float(_upper(_draw_values(self.arr[top], s, weight), weight, log_threshold[top]).max())

    def max_upper(self, s, weight, log_threshold):
        """``max_x`` of the betting bound at ``s`` (each target's :func:`~.betting._upper` of its
        draw values), evaluated exactly only on targets whose grouped capital does not already
        show theirs below."""
        best = self.first_upper(s, weight, log_threshold)[2]
        step = max(1, _BLOCK_VALUES // max(1, self.arr.shape[1] * self.arr.shape[2]))
        while True:
            # A target whose bound is at most best passes at level best; the grouped capital
            # (a lower bound on its capital) shows it for most without reading its draws.
            idx = np.flatnonzero(~(self._group_capital(slice(None), s, weight, best)
                                   >= log_threshold + _capital_error(self.arr.shape[1])))
            above = np.concatenate([
                idx[a:a + step][~betting_passes(_draw_values(self.arr[idx[a:a + step]], s, weight), best, weight,
                                                log_threshold[idx[a:a + step]])]
                for a in range(0, idx.size, step)] or [np.zeros(0, dtype=np.intp)])
            if not above.size:
                return best
            best = max(best, max(float(_upper(_draw_values(self.arr[above[a:a + step]], s, weight), weight,
                                              log_threshold[above[a:a + step]]).max())
                                 for a in range(0, above.size, step)))

    def all_pass(self, s, weight, eta, log_threshold):
        """Whether every target's betting bound at ``s`` is at most ``eta`` (exactly);
        ``log_threshold`` one per target."""
        return self.failing(s, weight, eta, log_threshold, first=True).size == 0

    def failing(self, s, weight, eta, log_threshold, first=False):
        """The targets whose betting bound at ``s`` exceeds ``eta`` (exactly), in increasing
        order; with ``first``, only those of the first block of targets that has any."""
        m = self.arr.shape[1]
        failed = []
        # Every draw at most the target's worst draw's bound: a constant sample c, whose
        # capital at eta under the bet theta / weight is m log(1 + theta (eta - c) / weight).
        c = weight * self._tv(self.worst_draw, s)
        capital = m * np.log1p(np.multiply.outer(eta - c, BET_FRACTIONS / weight)).max(axis=1)
        pad = _capital_error(m)  # the round-off of a computed capital (betting_passes)
        todo = np.flatnonzero(~(capital >= log_threshold + pad))
        if todo.size:
            # Every draw at most its group's largest (the draws sorted, in _GROUPS groups):
            # the capital is a sum over draws, in any order, non-increasing in each value.
            todo = todo[~(self._group_capital(todo, s, weight, eta) >= log_threshold[todo] + pad)]
        # The rest a block of targets at a time (no copy of the whole array): each draw at
        # most its own bound (Jensen over its pairs), then the exact values where that fails.
        step = max(1, _BLOCK_VALUES // max(1, m * self.arr.shape[2]))
        for a in range(0, todo.size, step):
            block = todo[a:a + step]
            values = self.arr[block]
            if values.shape[2] > 1:
                y = weight * self._tv(self._per_draw(values, None), s)
                fail = ~betting_passes(y, eta, weight, log_threshold[block])
                block, values = block[fail], values[fail]
            if block.size:
                failed.append(block[~betting_passes(_draw_values(values, s, weight), eta, weight,
                                                    log_threshold[block])])
                if first and failed[-1].size:
                    break
        return np.concatenate(failed) if failed else np.zeros(0, dtype=np.intp)



def _check_weights(owner, weights, arr):
    """Pair weights of exhaustive, grouped deltas: >= 0, shape of ``arr``, sum 1 on axis 2."""
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64).reshape(arr.shape) if np.size(weights) == arr.size else None
    if w is None or not np.all(np.isfinite(w)) or (w < 0).any():
        raise ValueError(
            f"{owner}: weights must be finite, >= 0 and of the shape of deltas {arr.shape}; got "
            f"{np.shape(weights)}. They are the probabilities of each distance given (target, draw)."
        )
    if not np.allclose(w.sum(axis=2), 1.0, rtol=0, atol=1e-9):
        raise ValueError(
            f"{owner}: weights must sum to 1 over the pairs of each (target, draw) (axis 2); "
            f"the sums range over [{w.sum(axis=2).min():.6g}, {w.sum(axis=2).max():.6g}]."
        )
    return w


_BOUNDS = ("betting", "maurer-pontil")


def _betting_log_thresholds(shares, alpha):
    # Each target's bound at delta = alpha * share (union over targets; uniform shares give
    # alpha / n_targets), each of the K bets at delta / K (union over bets).
    return np.log(len(BET_FRACTIONS) / (alpha * shares))


def _check_shares(owner, target_shares, n_targets):
    """Shares of alpha per target (weighted union bound), normalised; uniform by default."""
    if target_shares is None:
        return np.full(n_targets, 1.0 / n_targets)
    shares = np.asarray(target_shares, dtype=np.float64)
    if shares.shape != (n_targets,) or not np.all(np.isfinite(shares)) or not np.all(shares > 0):
        raise ValueError(
            f"{owner}: target_shares must hold one finite value > 0 per target ({n_targets}); "
            f"got shape {shares.shape} with values in "
            f"[{np.nanmin(shares) if shares.size else 'none'}, {np.nanmax(shares) if shares.size else 'none'}]. "
            "Every target needs a share of alpha: a target with none could not be bounded. "
            "Leave it None for the uniform union bound."
        )
    return shares / shares.sum()


def _check_draws(owner, arr):
    if arr.shape[1] < 2:
        raise ValueError(
            f"{owner}: a confidence bound needs at least 2 independent draws per target; got "
            f"{arr.shape[1]}. Estimate more draws (n_rounds) or pass confidence=None for the "
            "point estimate of exhaustive deltas."
        )
