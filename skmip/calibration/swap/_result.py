"""The result of :func:`~skmip.calibration.swap.estimate_swap_deltas`: whitened swap distances."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, repr=False, eq=False)
class SwapDeltas:
    r"""Whitened swap distances, per target row of :math:`\mathcal{D}`.

    Attributes
    ----------
    distances : ndarray of shape (n_samples, n_rounds, n_pairs)
        ``distances[i, r]`` are the values of round ``r`` for target row ``i``: the
        sorted-block summary (module docstring) of the distances
        :math:`\|(\mathcal{A}(D_{out}) - \mathcal{A}(D_{in}))/w\|` for the round's sampled
        :math:`e` (the distances themselves when no more are drawn than kept), or of all
        of them. Rounds are independent.
        ``inf`` marks a change in a coordinate whose scale is 0. Above
        ``compact.COMPACT_VALUES`` values (about 40,000 rows at the default 400 rounds and 2 values kept) a
        :class:`~skmip.calibration.swap.compact.CompactDistances`: half precision, every value
        rounded up (at most 0.1% above the distance), decoded to doubles when indexed by
        target (``distances[i]``) or by ``np.asarray``.
    n_train : int
        :math:`k`, the size of the training subsets.
    engine : str
        The engine that produced the distances (``"refit"``, ``"newton"``, ``"influence"``
        or ``"exact"``).
    pairs : str
        ``"sampled"`` (independent uniform :math:`e`, with replacement: the average of their
        TV is an unbiased draw, and its summary an upper bound), ``"all"`` (the sorted-block
        summary, an upper bound for the average over every :math:`e`),
        ``"exhaustive"`` (engines ``"exact"`` and ``"closed_form"``: every
        :math:`(D_{out}, e)`, or every :math:`e`; the (weighted) mean over axes 1 and 2 *is*
        the expectation) or ``"jensen"`` (engine ``"closed_form"`` on large data: one value
        per target whose TV bounds the expectation from above, by concavity).
    polished : bool
        True when every fit was carried to the exact minimiser of the registered objective
        (:func:`polish_to_minimiser`): the distances then describe that minimiser, and the
        released model must be polished the same way.
    certified : bool
        True when every distance is the exact one or a proven upper bound on it: the
        ``"newton"`` engine's certified distances (docs/coupling.md, "Certified
        distances"), or the engines that measure the learner itself (``"refit"``,
        ``"exact"``, ``"closed_form"``). False for estimates (the first-order
        ``"influence"`` engine, or ``"newton"`` for a loss that declares no
        self-concordance constant): a bound computed from them is an estimate too.
    weights : ndarray of the shape of ``distances``, or None
        Engine ``"closed_form"``: the probability of each stored distance given its target
        (distinct values stored once with their multiplicity); pass it to
        :func:`skmip.bounds.coupling_noise_scale`. ``None``: equal weights.
    target_counts : ndarray of shape (n_targets,), or None
        Engine ``"closed_form"``: rows of :math:`\mathcal{D}` that each target stands for
        (identical rows share one target, as they share their law). ``None``: one row each.

    Notes
    -----
    Feed ``distances`` to :func:`skmip.bounds.coupling_noise_scale` with
    ``train_fraction=result.train_fraction``; use ``confidence=None`` only when
    ``result.exhaustive``. The object holds sensitivities of private rows: do not release it.

    Examples
    --------
    >>> from skmip.calibration.swap import estimate_swap_deltas
    >>> from skmip.release.statistic import Statistic
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> res = estimate_swap_deltas(Statistic("mean"), X, scale=[1.0], engine="exact")
    >>> res.exhaustive, res.distances.shape   # C(3, 2) subsets D_out x k = 2 rows e
    (True, (4, 3, 2))
    >>> sorted(res.distances[0].ravel().tolist())  # |e - x*| / k for x* = 0, each e twice
    [0.5, 0.5, 1.0, 1.0, 1.5, 1.5]
    """

    distances: np.ndarray  # or CompactDistances (large n)
    n_train: int
    engine: str
    pairs: str
    polished: bool = False
    certified: bool = True
    weights: np.ndarray | None = None
    target_counts: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        r""":math:`n`, the number of rows of :math:`\mathcal{D}`."""
        if self.target_counts is not None:
            return int(np.sum(self.target_counts))
        return self.distances.shape[0]

    @property
    def n_rounds(self) -> int:
        """Independent draws per target (axis 1 of ``distances``)."""
        return self.distances.shape[1]

    @property
    def train_fraction(self) -> float:
        """:math:`k/n`, the prior probability of membership."""
        return self.n_train / self.n_samples

    @property
    def exhaustive(self) -> bool:
        """Whether ``confidence=None`` calibrates the bound itself: the distances enumerate
        every :math:`(D_{out}, e)` (exact means), or bound them exactly (``"jensen"``)."""
        return self.pairs in ("exhaustive", "jensen")

    def __repr__(self):
        return (
            f"SwapDeltas(n_samples={self.n_samples}, n_train={self.n_train}, "
            f"n_rounds={self.n_rounds}, n_pairs={self.distances.shape[2]}, "
            f"engine={self.engine!r}, pairs={self.pairs!r})"
        )
