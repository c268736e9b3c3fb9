r"""The coupling bound: how much Gaussian noise eta-MIP needs, in any dimension.

Setting (Definition 1 of Izzo et al.). A dataset :math:`\mathcal{D}` of :math:`n` rows, a
training set :math:`\mathcal{D}_{train}` drawn uniformly among the subsets of size :math:`k`,
a learner :math:`\mathcal{A}` that is deterministic given its data, and Gaussian noise
:math:`X \sim \mathcal{N}(0, s^2 \operatorname{diag}(w)^2)` whose shape :math:`w` and scale
:math:`s` are fixed given :math:`\mathcal{D}`. For a target :math:`x^*` let
:math:`P_{in}, P_{out}` be the laws of :math:`\mathcal{A}(\mathcal{D}_{train}) + X` given
:math:`x^* \in` / :math:`\notin \mathcal{D}_{train}`.

**Coupling.** Draw :math:`D_{out}` uniformly among the :math:`k`-subsets of
:math:`\mathcal{D} \setminus \{x^*\}`, then :math:`e` uniformly in :math:`D_{out}`, and put
:math:`D_{in} = D_{out} - \{e\} + \{x^*\}`. A given :math:`D_{in}` arises from exactly
:math:`n - k` equally likely pairs, so :math:`D_{in}` is uniform among the :math:`k`-subsets
that contain :math:`x^*`: :math:`P_{in}` and :math:`P_{out}` are mixtures over the same
:math:`(D_{out}, e)`.

**Joint convexity** of total variation then gives

.. math::

    \mathrm{TV}(P_{in}, P_{out}) \le \mathbb{E}_{D_{out}, e}\,
    \mathrm{TV}\big(\mathcal{N}(a, S), \mathcal{N}(a', S)\big)
    = \mathbb{E}\,\big[2\Phi(\Delta/2) - 1\big],
    \qquad \Delta = \frac{\|(\mathcal{A}(D_{out}) - \mathcal{A}(D_{in})) / w\|}{s}.

**Bayes risk.** With prior :math:`q = k/n` on membership, the Bayes-optimal attacker's
accuracy is :math:`\int \max(q\,p_{in}, (1-q)\,p_{out}) \le \max(q, 1-q) + \min(q, 1-q)\,
\mathrm{TV}(P_{in}, P_{out})` (Izzo et al., Proposition 2; an equality with
:math:`\tfrac12 + \tfrac12\mathrm{TV}` at :math:`q = 1/2`). The mechanism is therefore
eta-MIP as soon as, for every :math:`x^* \in \mathcal{D}`,

.. math::

    \min(q, 1-q)\; \mathbb{E}_{D_{out}, e}\big[2\Phi(\Delta_{x^*}/2) - 1\big] \le \eta .

No dimension-dependent constant enters (compare Theorem 9's :math:`6.16/\eta` and its
tail step). The expectation is over the real :math:`\mathcal{D}` and :math:`k`; it is
estimated from draws of :math:`(D_{out}, e)` (see :mod:`skmip.calibration.swap`), and this module
attaches a confidence statement to the estimate: an empirical-Bernstein upper bound
(Maurer & Pontil 2009, Theorem 4) with a union bound over the targets.

Array convention. ``deltas`` holds whitened swap distances
:math:`\|(\mathcal{A}(D_{out}) - \mathcal{A}(D_{in}))/w\|` (noise scale :math:`s = 1`):

- shape ``(n_draws,)``: one target;
- shape ``(n_targets, n_draws)``: one distance per independent draw of
  :math:`(D_{out}, e)`;
- shape ``(n_targets, n_draws, n_pairs)``: per independent draw of :math:`D_{out}`, several
  values whose average of :math:`\mathrm{TV}` is the draw's variable (several :math:`e`
  drawn in the same :math:`D_{out}`, or a compressed summary of all of them, see
  :func:`skmip.calibration.swap.estimate_swap_deltas`).

Draws must be independent across axis 1 (for the confidence bound); values within a draw
may be dependent. ``inf`` is allowed (a change in a coordinate the noise does not cover:
total variation 1).

References
----------
Izzo, Z., Yoon, J., Arik, S. O., Zou, J. "Provable Membership Inference Privacy",
Definition 1 and Proposition 2 (``shared/papers/izzo-provable-membership-inference-privacy.txt``).

Maurer, A., Pontil, M. (2009). "Empirical Bernstein Bounds and Sample Variance
Penalization", COLT 2009, Theorem 4.

Devroye, L., Mehrabian, A., Reddad, T. (2018). "The total variation distance between
high-dimensional Gaussians" (TV between Gaussians with a common covariance).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import erf

from skmip.utils.validation import check_eta, check_option

from skmip.bounds._common import scalar_or_array
from skmip.bounds.betting import BET_FRACTIONS, _upper, betting_passes

__all__ = [
    "gaussian_tv",
    "coupling_eta_per_target",
    "coupling_eta",
    "coupling_eta_upper",
    "coupling_noise_scale",
    "CouplingCalibration",
]

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
    return out


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
        return erf(d / (s * _SQRT8)) if s > 0 else (d > 0).astype(np.float64)

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

    def max_upper(self, s, weight, log_threshold):
        """``max_x`` of the betting bound at ``s`` (each target's :func:`~.betting._upper` of its
        draw values), evaluated exactly only on targets whose grouped capital does not already
        show theirs below."""
        upper = weight * self._tv(self.per_target, s)  # Jensen: at least each target's mean
        top = np.argsort(-upper, kind="stable")[:32]
        best = float(_upper(_draw_values(self.arr[top], s, weight), weight, log_threshold[top]).max())
        step = max(1, _BLOCK_VALUES // max(1, self.arr.shape[1] * self.arr.shape[2]))
        while True:
            # A target whose bound is at most best passes at level best; the grouped capital
            # (a lower bound on its capital) shows it for most without reading its draws.
            idx = np.flatnonzero(~(self._group_capital(slice(None), s, weight, best) >= log_threshold))
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
        m = self.arr.shape[1]
        # Every draw at most the target's worst draw's bound: a constant sample c, whose
        # capital at eta under the bet theta / weight is m log(1 + theta (eta - c) / weight).
        c = weight * self._tv(self.worst_draw, s)
        capital = m * np.log1p(np.multiply.outer(eta - c, BET_FRACTIONS / weight)).max(axis=1)
        todo = np.flatnonzero(~(capital >= log_threshold))
        if todo.size:
            # Every draw at most its group's largest (the draws sorted, in _GROUPS groups):
            # the capital is a sum over draws, in any order, non-increasing in each value.
            todo = todo[~(self._group_capital(todo, s, weight, eta) >= log_threshold[todo])]
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
            if block.size and not betting_passes(_draw_values(values, s, weight), eta, weight,
                                                 log_threshold[block]).all():
                return False
        return True


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


def coupling_eta_per_target(
    deltas: ArrayLike, noise_scale: float, *, train_fraction: float = 0.5,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    r"""Point estimate of the coupling bound on the MIP advantage, per target.

    Parameters
    ----------
    deltas : array_like of shape (n_draws,), (n_targets, n_draws) or (n_targets, n_draws, n_pairs)
        Whitened swap distances (module docstring), ``>= 0``.
    noise_scale : float
        :math:`s > 0`: the noise is :math:`\mathcal{N}(0, s^2\operatorname{diag}(w)^2)`.
    train_fraction : float, default=0.5
        :math:`q = k/n`; the advantage bound carries the factor :math:`\min(q, 1-q)`.
    weights : array_like of the shape of ``deltas`` (3-D), optional
        Probability of each value within its (target, draw), summing to 1 over axis 2:
        exhaustive deltas stored once per distinct value, with its multiplicity
        (:func:`skmip.calibration.swap.statistic_swap_deltas`). ``None``: equal weights.

    Returns
    -------
    ndarray of shape (n_targets,)
        :math:`\min(q,1-q)` times the average of :math:`2\Phi(\Delta/(2s)) - 1` over each
        target's draws: the empirical mean of the quantity the coupling bound needs below
        :math:`\eta`. Exact when ``deltas`` enumerates every :math:`(D_{out}, e)` with equal
        weight (``engine="exact"`` in :mod:`skmip.calibration.swap`), an unbiased estimate when the
        draws are random.

    Raises
    ------
    ValueError
        If ``deltas`` has a bad shape or negative/NaN values, ``noise_scale <= 0``, or
        ``train_fraction`` is outside (0, 1).

    Notes
    -----
    Coupling + joint convexity of TV + Proposition 2 (module docstring). Valid in every
    dimension; assumes a learner that is deterministic given its data and noise whose
    covariance does not depend on :math:`\mathcal{D}_{train}`.

    References
    ----------
    Izzo et al., Definition 1 and Proposition 2; this module's docstring for the coupling.

    Examples
    --------
    >>> coupling_eta_per_target([[1.0, 1.0], [0.0, 2.0]], 1.0).round(4).tolist()
    [0.1915, 0.1707]
    """
    owner = "coupling_eta_per_target"
    arr = _check_deltas(owner, deltas)
    s = _check_scale(owner, noise_scale)
    weight = _prior_weight(owner, train_fraction)
    return _draw_values(arr, s, weight, _check_weights(owner, weights, arr)).mean(axis=1)


def coupling_eta(
    deltas: ArrayLike, noise_scale: float, *, train_fraction: float = 0.5,
    weights: ArrayLike | None = None,
) -> float:
    r"""Point estimate of the coupling bound on the MIP level: the maximum over targets.

    Parameters
    ----------
    deltas : array_like of shape (n_draws,), (n_targets, n_draws) or (n_targets, n_draws, n_pairs)
        Whitened swap distances (module docstring).
    noise_scale : float
        :math:`s > 0`.
    train_fraction : float, default=0.5
        :math:`q = k/n`.
    weights : array_like, optional
        Pair weights, as in :func:`coupling_eta_per_target`.

    Returns
    -------
    float
        :math:`\max_{x^*} \min(q,1-q)\,\widehat{\mathbb{E}}[2\Phi(\Delta_{x^*}/(2s)) - 1]`.
        Definition 1 asks for every :math:`x^* \in \mathcal{D}`, hence the maximum. This is a
        *point estimate* when the draws are random; :func:`coupling_eta_upper` is the bound
        that holds with a stated confidence.

    Raises
    ------
    ValueError
        As :func:`coupling_eta_per_target`.

    Notes
    -----
    See :func:`coupling_eta_per_target`.

    References
    ----------
    Izzo et al., Definition 1 and Proposition 2.

    Examples
    --------
    Two targets: every swap of the first moves the output by one unit of :math:`w`; the
    swaps of the second move it by 0 or 2 units. The first is the more exposed (the
    bound is concave in the distance), and four times the noise cuts its bound about four
    times:

    >>> round(coupling_eta([[1.0, 1.0], [0.0, 2.0]], 1.0), 4)   # Phi(1/2) - 1/2
    0.1915
    >>> round(coupling_eta([[1.0, 1.0], [0.0, 2.0]], 4.0), 4)   # Phi(1/8) - 1/2
    0.0497
    """
    return float(
        coupling_eta_per_target(deltas, noise_scale, train_fraction=train_fraction, weights=weights).max()
    )


def _bernstein_terms(y, weight, log_term):
    """Mean, variance penalty and range term of Maurer & Pontil's Theorem 4 per target.

    ``y`` has shape (n_targets, m) with values in [0, weight]; ``log_term`` is
    ln(2 / delta), one per target. Returns (mean, var_term,
    second_moment_term, range_term): the bound is mean + var_term + range_term; replacing
    the sample variance by the raw second moment (second_moment_term) gives a bound that
    is no smaller and is non-increasing in the noise scale.
    """
    m = y.shape[1]
    mean = y.mean(axis=1)
    # Unbiased sample variance: Maurer & Pontil's V_n = sum_{i<j} (Z_i - Z_j)^2 / (n (n-1)).
    var = ((y - mean[:, None]) ** 2).sum(axis=1) / (m - 1)
    second = (y**2).sum(axis=1) / (m - 1)
    var_term = np.sqrt(2.0 * var * log_term / m)
    second_term = np.sqrt(2.0 * second * log_term / m)
    range_term = 7.0 * weight * log_term / (3.0 * (m - 1))
    return mean, var_term, second_term, range_term


def _log_terms(shares, alpha):
    # Theorem 4 at delta = alpha * share for each target (union bound over the targets).
    return np.log(2.0 / (alpha * shares))


def _ucb_per_target(arr, s, weight, alpha, shares, monotone=False):
    y = _draw_values(arr, s, weight)
    mean, var_term, second_term, range_term = _bernstein_terms(y, weight, _log_terms(shares, alpha))
    ucb = mean + (second_term if monotone else var_term) + range_term
    return np.minimum(ucb, weight), mean


def coupling_eta_upper(
    deltas: ArrayLike,
    noise_scale: float,
    *,
    confidence: float = 0.95,
    train_fraction: float = 0.5,
    bound: str = "betting",
    target_shares: ArrayLike | None = None,
) -> float:
    r"""Upper confidence bound on the coupling MIP level, simultaneous over all targets.

    Parameters
    ----------
    deltas : array_like of shape (n_targets, n_draws) or (n_targets, n_draws, n_pairs)
        Whitened swap distances; the draws (axis 1) must be independent and identically
        distributed per target, each draw of :math:`D_{out}` with the law of the coupling.
        At least 2 draws.
    noise_scale : float
        :math:`s > 0`, fixed before looking at ``deltas`` (to choose ``s`` from the same
        ``deltas`` use :func:`coupling_noise_scale`, whose search keeps the guarantee).
    confidence : float, default=0.95
        Probability, over the random draws, that the returned value bounds every target's
        expectation at once.
    train_fraction : float, default=0.5
        :math:`q = k/n`.
    bound : {"betting", "maurer-pontil"}, default="betting"
        The confidence bound on each target's mean: ``"betting"``, the capital-process
        bound of :func:`skmip.bounds.betting_mean_upper` at :math:`\delta = \alpha/n_t`
        (about half the excess over the mean when the draws vary little, the coupling
        calibration's case), or ``"maurer-pontil"``, the empirical Bernstein bound below.
    target_shares : array_like of shape (n_targets,), optional
        How the error probability :math:`\alpha` is spent over the targets (a weighted union
        bound): target :math:`x` is bounded at :math:`\delta = \alpha\pi_x` with the shares
        normalised to :math:`\sum_x\pi_x = 1`; each must be > 0. They must be fixed before
        the draws (a function of :math:`\mathcal{D}`, e.g.
        :func:`skmip.calibration.swap.design_target_shares`). ``None``: :math:`\alpha/n_t` each.

    Returns
    -------
    float
        ``"betting"``: :math:`\max_{x^*} U_{x^*}` with :math:`U` the betting bound of each
        target's draw values at :math:`\delta = \alpha / n_t`, capped at :math:`c`.
        ``"maurer-pontil"``: :math:`\max_{x^*} U_{x^*}` with, for the :math:`m` draw values
        :math:`Y_r \in [0, c]`, :math:`c = \min(q, 1-q)`,
        :math:`U = \bar Y + \sqrt{2 V \ln(2n_t/\alpha)/m} + 7c\ln(2n_t/\alpha)/(3(m-1))`,
        :math:`V` the unbiased sample variance, :math:`n_t` the number of targets and
        :math:`\alpha = 1 -` ``confidence``; capped at :math:`c`.

    Raises
    ------
    ValueError
        On bad ``deltas``, ``noise_scale``, ``confidence`` or ``train_fraction``, or fewer
        than 2 draws.

    Notes
    -----
    Maurer & Pontil (2009), Theorem 4: for i.i.d. :math:`Z_i \in [0, 1]`, :math:`m \ge 2`,
    with probability at least :math:`1 - \delta`,
    :math:`\mathbb{E}Z \le \bar Z + \sqrt{2V_m\ln(2/\delta)/m} + 7\ln(2/\delta)/(3(m-1))`.
    Applied to :math:`Z = Y/c` and rescaled (the range term picks up :math:`c`, the variance
    term is scale-equivariant), at :math:`\delta = \alpha/n_t` per target; the union bound
    makes the statement simultaneous, as Definition 1's "for every :math:`x^*`" requires.
    It covers the estimation error of the per-target means given :math:`\mathcal{D}`; the
    coupling bound itself (exact in every dimension) is what the means enter.

    References
    ----------
    Maurer & Pontil (2009), Theorem 4; Izzo et al., Definition 1 and Proposition 2.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> deltas = rng.uniform(0, 1, size=(50, 2000))
    >>> point = coupling_eta(deltas, 2.0)
    >>> upper = coupling_eta_upper(deltas, 2.0, confidence=0.95)
    >>> bool(point < upper < point + 0.02)
    True
    """
    owner = "coupling_eta_upper"
    arr = _check_deltas(owner, deltas)
    s = _check_scale(owner, noise_scale)
    weight = _prior_weight(owner, train_fraction)
    alpha = _alpha(owner, confidence)
    check_option(owner, "bound", bound, _BOUNDS)
    _check_draws(owner, arr)
    shares = _check_shares(owner, target_shares, arr.shape[0])
    if bound == "betting":
        return float(_JensenBounds(arr).max_upper(s, weight, _betting_log_thresholds(shares, alpha)))
    return float(_ucb_per_target(arr, s, weight, alpha, shares)[0].max())


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


class CouplingCalibration(NamedTuple):
    """Result of :func:`coupling_noise_scale`.

    Attributes
    ----------
    noise_scale : float
        The calibrated :math:`s`: add :math:`\\mathcal{N}(0, s^2\\operatorname{diag}(w)^2)`.
    eta_upper : float or None
        The confidence bound on the MIP level at ``noise_scale`` (at most the target eta);
        ``None`` when calibrated to the point estimate (``confidence=None``).
    eta_point : float
        The point estimate :func:`coupling_eta` at ``noise_scale``.
    noise_scale_point : float
        The :math:`s` at which the point estimate alone would meet eta: the ratio
        ``noise_scale / noise_scale_point`` is the price of the confidence statement.
    confidence : float or None
        The confidence level used.
    """

    noise_scale: float
    eta_upper: float | None
    eta_point: float
    noise_scale_point: float
    confidence: float | None


def _point_root(arr, eta, weight, pw=None, bounds=None):
    """The s at which max_x* mean TV equals eta (continuous, non-increasing in s)."""
    from scipy.optimize import brentq

    bounds = _JensenBounds(arr, pw) if bounds is None else bounds

    def excess(log_s):
        return bounds.max_mean(math.exp(log_s), weight) - eta

    floor = weight * float(bounds.inf_share.max())
    if floor >= eta:
        raise ValueError(
            f"coupling_noise_scale: {floor / weight:.3g} of some target's swap distances are "
            f"infinite (a coordinate with zero scale w changes), which alone costs an advantage "
            f"of {floor:.3g} >= eta={eta}: no noise scale can reach eta. Give every coordinate "
            "that varies a positive scale."
        )
    # As s -> 0 every positive distance counts fully; if even that meets eta, no noise is
    # needed (the point estimate is then met at s = 0).
    if weight * float(bounds.pos_share.max()) <= eta:
        return 0.0
    lo, hi = (math.log(v) for v in bounds.finite_range)
    lo, hi = lo - 2.0, hi + 2.0
    while excess(lo) <= 0:
        lo -= 4.0
    while excess(hi) > 0:
        hi += 4.0
    return math.exp(brentq(excess, lo, hi, xtol=1e-10, rtol=1e-12))


def coupling_noise_scale(
    deltas: ArrayLike,
    eta: float,
    *,
    confidence: float | None = 0.95,
    train_fraction: float = 0.5,
    grid_resolution: int = 128,
    bound: str = "betting",
    weights: ArrayLike | None = None,
    target_shares: ArrayLike | None = None,
) -> CouplingCalibration:
    r"""Smallest Gaussian noise scale whose coupling bound on the MIP level meets ``eta``.

    Parameters
    ----------
    deltas : array_like of shape (n_targets, n_draws) or (n_targets, n_draws, n_pairs)
        Whitened swap distances (module docstring), one row per target :math:`x^*`; every
        row of :math:`\mathcal{D}` must be a target (Definition 1 asks for each of them).
    eta : float
        Target MIP level in (0, 0.5].
    confidence : float or None, default=0.95
        Calibrate so that the simultaneous upper confidence bound of
        :func:`coupling_eta_upper` is at most ``eta``. ``None`` calibrates the point estimate
        :func:`coupling_eta` instead: right only when ``deltas`` enumerates every
        :math:`(D_{out}, e)` (an exact expectation), never silently for random draws.
    train_fraction : float, default=0.5
        :math:`q = k/n`.
    grid_resolution : int, default=128
        With a confidence level, the scale is searched on the fixed grid
        :math:`s \in \{2^{j/G}\}` with :math:`G` = ``grid_resolution`` (steps of about
        0.5% at 128); see Notes for why a fixed grid.
    bound : {"betting", "maurer-pontil"}, default="betting"
        The confidence bound of :func:`coupling_eta_upper`.
    weights : array_like, optional
        Pair weights of exhaustive deltas (:func:`coupling_eta_per_target`); only with
        ``confidence=None``, since weighted values are an enumeration, not random draws.
    target_shares : array_like of shape (n_targets,), optional
        The shares of :math:`\alpha` per target, as in :func:`coupling_eta_upper` (fixed
        before the draws; ``None``: even). Ignored with ``confidence=None``.

    Returns
    -------
    CouplingCalibration
        ``noise_scale`` (the calibrated :math:`s`), ``eta_upper`` (the bound at it, or
        ``None``), ``eta_point``, ``noise_scale_point`` and ``confidence``.

    Raises
    ------
    ValueError
        On invalid arguments; or when no scale can meet ``eta``: with :math:`m` draws and
        :math:`n_t` targets the confidence term alone is
        :math:`7c\ln(2n_t/\alpha)/(3(m-1))`, so ``eta`` below it needs more draws (the
        message says how many).

    Notes
    -----
    *Choosing s from the data it is tested on.* A confidence bound valid at each fixed
    :math:`s` says nothing, by itself, at an :math:`s` chosen after looking at the data. The
    search is built so that it does. The true per-target mean :math:`\mu_x(s)` is
    non-increasing in :math:`s`. The returned :math:`\hat s` is a point of the fixed grid
    such that the bound is at most ``eta`` at *every* grid point :math:`\ge \hat s`. If
    :math:`\mu_x(\hat s) > \eta` for some :math:`x`, let :math:`g_x` be the largest grid
    point with :math:`\mu_x(g_x) > \eta` (a fixed number, not a random one): then
    :math:`g_x \ge \hat s`, so the bound at :math:`g_x` is at most :math:`\eta < \mu_x(g_x)`:
    the fixed-point bound for target :math:`x` failed, which has probability at most
    :math:`\alpha/n_t` (:math:`\alpha\pi_x` with ``target_shares``). Summing over targets,
    :math:`P(\max_x \mu_x(\hat s) > \eta) \le \alpha`.

    To check every grid point above :math:`\hat s` in finitely many steps, the search first
    finds, by bisection, the grid point :math:`s_{top}` where a *monotone* relaxation of the
    bound (the raw second moment :math:`\frac{1}{m-1}\sum Y_r^2 \ge V` in place of the
    sample variance; each :math:`Y_r` is non-increasing in :math:`s`) meets ``eta``; it
    bounds Theorem 4's value at every :math:`s \ge s_{top}`. It then walks down the grid
    from :math:`s_{top}` while Theorem 4's bound stays at most ``eta``.

    With ``bound="betting"`` no relaxation is needed: with its bets fixed, the betting bound
    is non-decreasing in every draw value (:mod:`skmip.bounds.betting`), and every draw value
    is non-increasing in :math:`s`, so the bound is non-increasing in :math:`s` and the
    smallest grid point where it meets ``eta`` is found by bisection.

    With ``confidence=None`` the point estimate is solved by Brent's method (it is
    continuous and non-increasing in :math:`s`), without a grid.

    References
    ----------
    Maurer & Pontil (2009), Theorem 4; Izzo et al., Definition 1 and Proposition 2.

    Examples
    --------
    Exhaustive deltas: the mean of :math:`n = 4` scalars :math:`\{0, 1, 2, 3\}`, :math:`k = 2`,
    whitened by :math:`w = 1`. Swapping :math:`e` for :math:`x^*` moves the mean by
    :math:`|e - x^*|/k`, and :math:`e` is uniform on the other three rows.

    >>> x = np.array([0.0, 1.0, 2.0, 3.0])
    >>> deltas = [[abs(e - t) / 2 for e in x if e != t] for t in x]
    >>> cal = coupling_noise_scale(deltas, 0.1, confidence=None)
    >>> round(cal.noise_scale, 3), round(cal.eta_point, 6)
    (1.963, 0.1)
    """
    owner = "coupling_noise_scale"
    arr = _check_deltas(owner, deltas)
    eta = check_eta(owner, float(eta))
    weight = _prior_weight(owner, train_fraction)
    pw = _check_weights(owner, weights, arr)
    if pw is not None and confidence is not None:
        raise ValueError(
            f"{owner}: weights describe exhaustive deltas, whose weighted mean is the exact "
            f"expectation; pass confidence=None with them (got confidence={confidence!r})."
        )
    if eta >= weight:
        # min(q, 1-q) * TV <= min(q, 1-q): any scale (even no noise) meets such an eta.
        s0 = 0.0
        return CouplingCalibration(s0, None if confidence is None else weight, weight, s0, confidence)
    bounds = _JensenBounds(arr, pw)
    s_point = _point_root(arr, eta, weight, pw, bounds)
    if confidence is None:
        eta_point = bounds.max_mean(s_point, weight) if s_point > 0 else 0.0
        return CouplingCalibration(s_point, None, eta_point, s_point, None)

    alpha = _alpha(owner, confidence)
    check_option(owner, "bound", bound, _BOUNDS)
    _check_draws(owner, arr)
    if not (isinstance(grid_resolution, (int, np.integer)) and grid_resolution >= 1):
        raise ValueError(f"{owner}: grid_resolution must be an integer >= 1; got {grid_resolution!r}.")
    G = int(grid_resolution)
    n_t, m = arr.shape[0], arr.shape[1]
    shares = _check_shares(owner, target_shares, n_t)
    if bound == "betting":
        return _betting_scale(arr, eta, weight, alpha, shares, G, s_point, confidence, bounds)
    arr = np.asarray(arr, dtype=np.float64)  # Maurer-Pontil reads the whole array
    log_term = _log_terms(shares, alpha)

    # As s -> inf each Y_r tends to weight * (its fraction of infinite distances); the
    # monotone bound there is its infimum. If that already exceeds eta, no s works.
    y_inf = weight * np.isinf(arr).mean(axis=2)
    mean_i, _, second_i, range_term = _bernstein_terms(y_inf, weight, log_term)
    floor = float((mean_i + second_i + range_term).max())
    if floor >= eta:
        need = 1 + math.ceil(7.0 * weight * log_term.max() / (3.0 * eta))
        raise ValueError(
            f"{owner}: with {m} draws per target and {n_t} targets at confidence {confidence}, "
            f"the bound cannot go below {floor:.4g} > eta={eta} at any noise scale (Maurer & "
            f"Pontil's range term is 7 c ln(2 n_t / alpha) / (3 (m - 1)) = {range_term.max():.4g}). "
            f"Estimate more draws: n_rounds >= {need} is necessary"
            + (" (and no infinite distances)." if np.isinf(arr).any() else ".")
        )

    def ucb(j, monotone):
        return float(_ucb_per_target(arr, 2.0 ** (j / G), weight, alpha, shares, monotone)[0].max())

    # Bisection for the first grid point where the monotone bound meets eta. It is at least
    # the point estimate's root, since the bound exceeds the mean.
    if s_point > 0:
        lo = math.floor(G * math.log2(s_point))
    else:  # the point estimate needs no noise; start below every positive distance
        smallest = _smallest_positive(arr)
        lo = math.floor(G * (math.log2(smallest) - 11)) if np.isfinite(smallest) else 0
    hi = lo + G
    while ucb(hi, True) > eta:
        lo, hi = hi, hi + 2 * (hi - lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ucb(mid, True) > eta:
            lo = mid
        else:
            hi = mid
    # Walk down from s_top with Theorem 4's own bound; stop at the first grid point above eta.
    # Below j_floor every finite positive distance exceeds 2**10 s, where erf(. / sqrt 8)
    # is 1.0 in double precision: the bound no longer changes, so reaching j_floor means
    # every smaller grid point passes too, and no noise is needed.
    smallest = _smallest_positive(arr)
    j_floor = math.floor(G * (math.log2(smallest) - 10)) if np.isfinite(smallest) else hi
    j = hi
    while j > j_floor and ucb(j - 1, False) <= eta:
        j -= 1
    s_hat = 0.0 if j <= j_floor else 2.0 ** (j / G)
    upper, means = _ucb_per_target(arr, s_hat, weight, alpha, shares)
    return CouplingCalibration(s_hat, float(upper.max()), float(means.max()), s_point, float(confidence))


def _betting_scale(arr, eta, weight, alpha, shares, G, s_point, confidence, bounds):
    """coupling_noise_scale with the betting bound: bisection on the fixed grid (monotone)."""
    owner = "coupling_noise_scale"
    n_t, m = arr.shape[0], arr.shape[1]
    log_threshold = _betting_log_thresholds(shares, alpha)

    def ok(j):
        return bounds.all_pass(2.0 ** (j / G), weight, eta, log_threshold)

    # As s -> inf each draw value tends to weight * (its fraction of infinite distances),
    # from above: if the bound fails there, it fails at every s.
    if not all(betting_passes(weight * np.isinf(block).mean(axis=2), eta, weight, log_threshold[idx]).all()
               for idx, block in _target_blocks(arr)):
        # With every draw 0 the bound is c (exp(L/m) - 1) / 0.95: below eta iff m exceeds this.
        need = math.floor(log_threshold.max() / math.log1p(BET_FRACTIONS[0] * eta / weight)) + 1
        raise ValueError(
            f"{owner}: with {m} draws per target and {n_t} targets at confidence {confidence}, "
            f"the betting bound cannot reach eta={eta} at any noise scale. Estimate more draws: "
            f"n_rounds >= {need} is necessary" + (" (and no infinite distances)." if bounds.inf_share.max() > 0 else ".")
        )
    smallest = bounds.finite_range[0]
    # Below j_floor every finite positive distance exceeds 2**10 s, where erf(. / sqrt 8) is
    # 1.0 in double precision: the bound no longer changes below it.
    j_floor = math.floor(G * (math.log2(smallest) - 10)) if np.isfinite(smallest) else 0
    lo = math.floor(G * math.log2(s_point)) if s_point > 0 else j_floor
    while lo > j_floor and ok(lo):
        lo -= G
    lo = max(lo, j_floor)
    if ok(lo):  # saturated: no noise is needed
        s_hat = 0.0
    else:
        hi = lo + G
        while not ok(hi):
            lo, hi = hi, hi + 2 * (hi - lo)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid
        s_hat = 2.0 ** (hi / G)
    upper = bounds.max_upper(s_hat, weight, log_threshold)
    return CouplingCalibration(s_hat, min(float(upper), eta), bounds.max_mean(s_hat, weight), s_point,
                               float(confidence))
