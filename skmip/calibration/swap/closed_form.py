r"""The ``"closed_form"`` engine: exact swap distances of a mean of per-row features.

For a statistic :math:`T(S) = \frac1k\sum_{i\in S}\phi(x_i)` of a :math:`k`-subset
:math:`S`, swapping :math:`e` for :math:`x^*` moves it by exactly
:math:`(\phi(x^*) - \phi(e))/k`, whatever the other rows of :math:`D_{out}`. In the
coupling (:mod:`skmip.bounds.coupling`) :math:`D_{out}` is uniform among the
:math:`k`-subsets without :math:`x^*` and :math:`e` uniform in :math:`D_{out}`, so
:math:`e` is uniform on :math:`\mathcal{D}\setminus\{x^*\}` (by symmetry: every row other
than :math:`x^*` is in :math:`D_{out}` with probability :math:`k/(n-1)` and is then picked
with probability :math:`1/k`). The coupling expectation of a target is therefore exactly

.. math::

    \frac{1}{n-1}\sum_{e \ne x^*} \mathrm{TV}\Big(\frac{\|L^{-1}(\phi(x^*)-\phi(e))\|}{k\,s}\Big),

a finite sum: no rounds, no confidence term. Identical rows share their law, so they are
grouped into one target with a multiplicity, and each target's distances are stored once
per distinct row (or, for marginals, per distinct value) with its probability as a weight.

When even the grouped pairs are too many, :func:`statistic_swap_deltas` stores per target
one value :math:`\bar\Delta_{x^*} = \sqrt{\mathbb{E}_e\|\cdot\|^2}/k`, computed in closed form
from the mean and the mean square of the whitened features. Since
:math:`t \mapsto \operatorname{erf}(\sqrt t / c)` is concave on :math:`t \ge 0` (its
derivative :math:`e^{-t/c^2}/(c\sqrt{\pi t})` decreases), Jensen's inequality gives
:math:`\mathbb{E}_e\,\mathrm{TV}(\Delta_e/s) \le \mathrm{TV}(\bar\Delta/s)` for every
:math:`s` at once: an exact upper bound, still without a confidence term
(``pairs="jensen"``).
"""

from __future__ import annotations

import sys

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import clone

from skmip.bounds.rounding import UNIT_ROUNDOFF, relative_error
from skmip.utils.validation import check_int

from skmip.calibration.swap._result import SwapDeltas
from skmip.calibration.swap.rounds import _resolve_k
from skmip.calibration.swap.whitening import _Whitener

__all__ = ["statistic_swap_deltas", "marginal_swap_deltas"]

_OWNER = "statistic_swap_deltas"
#: Above this many (target, distinct row) pairs the Jensen bound replaces the exact sum.
_MAX_PAIRS = 2**24
#: Targets per block of the pairwise computations (memory block * n_distinct).
_BLOCK = 256
#: A factor that covers the roundings of a square root, two sums and a division (each
#: relative at most u) in a computed distance.
_UP = 1.0 + 8.0 * UNIT_ROUNDOFF


def _group(rows):
    """Distinct rows, the index of each row's group and the group sizes."""
    distinct, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return distinct, inverse.ravel(), counts


def statistic_swap_deltas(
    features: ArrayLike,
    *,
    scale: ArrayLike,
    train_size: int | float | None = None,
    max_pairs: int = _MAX_PAIRS,
) -> SwapDeltas:
    r"""Exact swap distances of the mean of per-row features :math:`\phi(x)` (coupling bound).

    Parameters
    ----------
    features : array_like of shape (n_samples, n_features)
        :math:`\phi(x_i)` for every row of the whole dataset :math:`\mathcal{D}`, in the
        coordinates of the release (the statistic of a subset :math:`S` is the mean of its
        rows of ``features``).
    scale : array_like of shape (n_features,) or (n_features, n_features)
        The noise shape, fixed given :math:`\mathcal{D}`: a vector :math:`w` (noise
        :math:`s\,w\odot z`) or an invertible matrix :math:`L` (noise :math:`s\,Lz`), as in
        :func:`estimate_swap_deltas`.
    train_size : int or float, default=None
        :math:`k`: a number of rows or a fraction of :math:`n`; ``None`` means
        :math:`\lfloor n/2\rfloor`.
    max_pairs : int, default=2**24
        Most (target, distinct row) pairs stored; above it each target keeps the one-value
        Jensen bound (module docstring).

    Returns
    -------
    SwapDeltas
        ``engine="closed_form"``; ``pairs="exhaustive"`` with ``distances`` and ``weights``
        of shape ``(n_distinct, 1, n_distinct)`` and ``target_counts`` (rows per distinct
        target), or ``pairs="jensen"`` with shape ``(n_distinct, 1, 1)``. Calibrate with
        ``coupling_noise_scale(res.distances, eta, confidence=None, weights=res.weights,
        train_fraction=res.train_fraction)``: the result is the coupling bound itself, not
        an estimate.

    Raises
    ------
    ValueError
        On non-finite features, fewer than 2 rows, a bad ``train_size`` or a ``scale`` of
        the wrong size.

    Notes
    -----
    Exact for any statistic that is a mean over the training rows of a fixed feature map
    (column means, uncentred second moments, marginal counts divided by :math:`k`); see the
    module docstring for the derivation. The coupling bound and its assumptions are those of
    :mod:`skmip.bounds.coupling`: noise shape and scale fixed given :math:`\mathcal{D}`,
    :math:`\mathcal{D}_{train}` uniform among the :math:`k`-subsets. Memory is
    :math:`O(u^2)` for :math:`u` distinct rows (:math:`O(u\,p)` with the Jensen bound).

    References
    ----------
    Izzo et al., "Provable Membership Inference Privacy", Definition 1 and Proposition 2;
    ``docs/coupling.md`` ("The bound", "Statistics in closed form").

    Examples
    --------
    The mean of four scalars, :math:`k = 2`: :math:`e` is uniform on the other three rows.

    >>> res = statistic_swap_deltas([[0.0], [1.0], [2.0], [3.0]], scale=[1.0])
    >>> res.pairs, res.distances.shape
    ('exhaustive', (4, 1, 4))
    >>> res.distances[0, 0].tolist(), res.weights[0, 0].round(3).tolist()
    ([0.0, 0.5, 1.0, 1.5], [0.0, 0.333, 0.333, 0.333])
    """
    F = np.asarray(features, dtype=np.float64)
    if F.ndim != 2 or not np.all(np.isfinite(F)):
        raise ValueError(
            f"{_OWNER}: features must be a finite 2-D array (one row phi(x) per record); got "
            f"shape {F.shape}" + ("" if F.ndim != 2 else " with non-finite entries") + "."
        )
    n = F.shape[0]
    if n < 2:
        raise ValueError(f"{_OWNER}: the dataset needs at least 2 rows; got {n}.")
    k = _resolve_k(_OWNER, train_size, n)
    max_pairs = check_int(_OWNER, "max_pairs", max_pairs, 1, None)
    whitener = _Whitener(scale)
    if whitener.size != F.shape[1]:
        raise ValueError(
            f"{_OWNER}: scale has {whitener.size} entries per axis but features have "
            f"{F.shape[1]} columns; pass the noise shape of the released coordinates."
        )
    distinct, _, counts = _group(F)
    u = distinct.shape[0]
    # Each row's image with a bound on its rounding (whitening.py); every distance below is
    # rounded outward (docs/coupling.md, "Statistics in closed form").
    W, err = whitener.images(distinct)
    moved = distinct[:, whitener.zero] if whitener.diagonal else distinct[:, :0]  # un-noised: a change is seen
    sq = np.einsum("ij,ij->i", W, W)
    if u * u > max_pairs:
        value = _jensen_values(W, err, sq, counts, n, k)
        if moved.shape[1]:
            differs = np.array([(counts * np.any(moved != m, axis=1)).sum() > 0 for m in moved])
            value = np.where(differs, np.inf, value)
        return SwapDeltas(whitener.outward(value)[:, None, None], k, "closed_form", "jensen", target_counts=counts)
    dist = np.empty((u, 1, u))
    gamma = relative_error(2 * W.shape[1] + 9)
    for start in range(0, u, _BLOCK):
        stop = min(start + _BLOCK, u)
        # ||w_i - w_j||^2 in its Gram form, with its rounding: at most gamma (s_i + s_j), doubled.
        block = sq[start:stop, None] + sq[None, :] - 2.0 * W[start:stop] @ W.T
        slack = 2.0 * gamma * (sq[start:stop, None] + sq[None, :])
        block = (np.sqrt(np.maximum(block, 0.0) + slack) + err[start:stop, None] + err[None, :]) * _UP / k
        # A row is not distinct from itself (its own swap does not move the statistic).
        block[np.arange(stop - start), np.arange(start, stop)] = 0.0
        if moved.shape[1]:
            block = np.where(np.any(moved[start:stop, None, :] != moved[None, :, :], axis=2), np.inf, block)
        dist[start:stop, 0] = block
    return SwapDeltas(whitener.outward(dist), k, "closed_form", "exhaustive",
                      weights=_pair_weights(counts, n)[:, None, :],
                      target_counts=counts)


def _jensen_values(W, err, sq, counts, n, k):
    r"""Per distinct row, an upper bound on :math:`\sqrt{\mathbb{E}_e\|L^{-1}(\phi(x^*) - \phi(e))\|^2}/k`
    (before :meth:`~.whitening._Whitener.outward`), from
    :math:`\mathbb{E}_e\|w^* - w_e\|^2 = (\sum_j c_j\|w^* - w_j\|^2)/(n - 1)` in closed form.

    The numerator :math:`\sum_j c_j s_j - 2 w^{*\top}\sum_j c_j w_j + n s^*` rounds by at most
    :math:`\gamma_{D+u+4}` times the same sum of absolute values (each a sum of at most
    :math:`D + u` products), doubled; the images' own errors add :math:`\epsilon^* + \max_j
    \epsilon_j` (Minkowski's inequality); the square root, the sums and the division are
    covered by ``_UP``."""
    total = counts @ W
    numerator = counts @ sq - 2.0 * W @ total + n * sq
    size = counts @ sq + 2.0 * np.abs(W) @ (counts @ np.abs(W)) + n * sq
    slack = 2.0 * relative_error(W.shape[1] + W.shape[0] + 4) * size
    mean_sq = (np.maximum(numerator, 0.0) + slack) / (n - 1)
    return (np.sqrt(mean_sq) + err + err.max(initial=0.0)) * _UP / k


def _statistic_features(estimator, adapter, X):
    """phi(x_i) for each row: the statistic of the single row, in the adapter's layout.

    Only for a :class:`skmip.release.statistic.Statistic` whose ``func`` is an alias listed in
    ``skmip.release.statistic.MEAN_OF_FEATURES``: their value on a subset is the mean of these rows,
    which is what makes the closed form exact. A callable cannot be checked to be one.
    """
    module = sys.modules.get("skmip.release.statistic")  # above this layer; imported if one exists
    func = getattr(estimator, "func", None)
    func = "mean" if func is None else func
    if module is None or not isinstance(estimator, module.Statistic) or func not in module.MEAN_OF_FEATURES:
        raise TypeError(
            f"estimate_swap_deltas: engine='closed_form' is exact only for a Statistic whose func "
            f"is one of {('mean', 'second_moment', 'mean_and_second_moment')} (a mean of per-row "
            f"features); got {estimator!r}. For your own feature map phi call "
            "skmip.calibration.swap.statistic_swap_deltas(phi(X), ...) directly."
        )
    X = np.asarray(X, dtype=np.float64)
    return np.stack([
        np.asarray(adapter.get_vector(clone(estimator).fit(X[i : i + 1])), dtype=np.float64).ravel()
        for i in range(X.shape[0])
    ])


def _pair_weights(counts, n):
    """P(e in group j | target in group i) = (c_j - [i == j]) / (n - 1)."""
    weights = np.broadcast_to(counts.astype(np.float64), (counts.size, counts.size)).copy()
    weights[np.diag_indices(counts.size)] -= 1.0
    return weights / (n - 1)


def marginal_swap_deltas(
    codes: ArrayLike,
    marginals,
    *,
    train_size: int | float | None = None,
) -> SwapDeltas:
    r"""Exact swap distances of marginal tables (cell counts divided by :math:`k`).

    The release is the vector of every cell of every marginal in ``marginals``, each cell
    holding the fraction of :math:`\mathcal{D}_{train}` that falls in it, with noise
    :math:`s z` on every cell. A record lies in exactly one cell of each marginal, so
    swapping :math:`e` for :math:`x^*` changes two cells (by :math:`\pm 1/k`) of each
    marginal on which they differ and nothing else: the distance is
    :math:`\sqrt{2 j}/k` with :math:`j` the number of such marginals. The result stores, per
    distinct pattern of :math:`\mathcal{D}`, the exact law of :math:`j` over
    :math:`e \in \mathcal{D}\setminus\{x^*\}`.

    Parameters
    ----------
    codes : array_like of int, shape (n_samples, n_columns)
        Categorical codes of every row of the whole dataset :math:`\mathcal{D}`.
    marginals : sequence of tuples of int
        Column indices of each released marginal (one column: a 1-way table; two: a 2-way
        table; any number works).
    train_size : int or float, default=None
        :math:`k`, as in :func:`statistic_swap_deltas`.

    Returns
    -------
    SwapDeltas
        ``engine="closed_form"``, ``pairs="exhaustive"``; ``distances`` and ``weights`` of
        shape ``(n_patterns, 1, len(marginals) + 1)`` (value ``sqrt(2 j) / k`` with weight
        the share of rows ``e`` that differ from the target on ``j`` marginals), and
        ``target_counts``. Noise scale ``s`` is then in units of one cell's fraction.

    Raises
    ------
    ValueError
        On bad codes, an empty or out-of-range marginal, or too few rows.

    Notes
    -----
    A special case of :func:`statistic_swap_deltas` (``features`` = the one-hot cells,
    ``scale`` = ones) computed in :math:`O(u^2 c)` time and :math:`O(u\,m)` memory for
    :math:`u` distinct patterns, :math:`c` columns and :math:`m` marginals, since only the
    number of differing marginals matters.

    Examples
    --------
    >>> codes = [[0, 0], [0, 1], [1, 1], [1, 1]]
    >>> res = marginal_swap_deltas(codes, [(0,), (0, 1)], train_size=2)
    >>> res.target_counts.tolist(), res.distances[0, 0].tolist()
    ([1, 1, 2], [0.0, 0.7071067811865476, 1.0])
    >>> res.weights[0, 0].round(3).tolist()   # x* = (0, 0): e = (0, 1) differs on 1, (1, 1) on 2
    [0.0, 0.333, 0.667]
    """
    owner = "marginal_swap_deltas"
    C = np.asarray(codes)
    if C.ndim != 2 or not np.issubdtype(C.dtype, np.integer):
        raise ValueError(f"{owner}: codes must be a 2-D integer array; got shape {C.shape}, dtype {C.dtype}.")
    n, c = C.shape
    if n < 2:
        raise ValueError(f"{owner}: the dataset needs at least 2 rows; got {n}.")
    marginals = [tuple(int(j) for j in m) for m in marginals]
    if not marginals or any(not m or min(m) < 0 or max(m) >= c for m in marginals):
        raise ValueError(
            f"{owner}: marginals must be a non-empty list of non-empty tuples of column indices "
            f"in [0, {c}); got {marginals!r}."
        )
    k = _resolve_k(owner, train_size, n)
    used = sorted({j for m in marginals for j in m})
    distinct, _, counts = _group(C[:, used])
    where = {col: i for i, col in enumerate(used)}
    u, n_m = distinct.shape[0], len(marginals)
    # Each pattern's cell in each marginal: two records differ on a marginal exactly when
    # their cells differ (one comparison per marginal, whatever its number of columns).
    cells = np.empty((n_m, u), dtype=np.int64)
    for i, m in enumerate(marginals):
        sub = distinct[:, [where[j] for j in m]]
        cells[i] = np.unique(sub, axis=0, return_inverse=True)[1].ravel()
    hist = np.zeros((u, n_m + 1))
    for start in range(0, u, _BLOCK):
        stop = min(start + _BLOCK, u)
        j = np.zeros((stop - start, u), dtype=np.int32)
        for row in cells:
            j += row[start:stop, None] != row[None, :]
        # hist[t, v] = sum of counts of the patterns e that differ from t on v marginals.
        flat = (j + (n_m + 1) * np.arange(stop - start, dtype=np.int32)[:, None]).ravel()
        hist[start:stop] = np.bincount(flat, weights=np.broadcast_to(counts, j.shape).ravel(),
                                       minlength=(stop - start) * (n_m + 1)).reshape(stop - start, n_m + 1)
    hist[:, 0] -= 1.0  # the target itself is not a candidate e
    values = np.sqrt(2.0 * np.arange(n_m + 1)) / k
    dist = np.broadcast_to(values, (u, 1, n_m + 1)).copy()
    return SwapDeltas(dist, k, "closed_form", "exhaustive", weights=(hist / (n - 1))[:, None, :],
                      target_counts=counts)
