"""Streaming, mergeable per-coordinate central moments: :class:`CentralMomentAccumulator`.

Izzo et al., Algorithm 1 needs, for every coordinate j of a model's parameter vector, the
M-th central moment over B fits. Keeping the B vectors would cost O(B d) memory, which is
out of reach for models with millions of parameters. :class:`CentralMomentAccumulator`
instead folds one parameter vector at a time into O(M d) state, and partial accumulators
computed on different workers merge exactly, in any order
(:func:`skmip.calibration.spread.moments.estimate_sigma` runs on top of it).

References
----------
Izzo, Z., Yoon, J., Arik, S. O., Zou, J. "Provable Membership Inference Privacy",
Algorithm 1 and Corollary 10 (``shared/papers/izzo-provable-membership-inference-privacy.txt``).

Pébay, P. "Formulas for robust, one-pass parallel computation of covariances and
arbitrary-order statistical moments". Sandia Report SAND2008-6212, 2008.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.validation import check_moment

__all__ = ["CentralMomentAccumulator"]

_ACC = "CentralMomentAccumulator"


def _even_order(moment):
    """The integer M when M is an even integer (exact one-pass merging), else None."""
    return int(moment) if float(moment).is_integer() and int(moment) % 2 == 0 else None


def _add_shifted(dst, src, n_src, delta):
    """Add to ``dst`` the power sums ``src`` re-expressed about a point moved by ``delta``.

    ``src[p-1]`` holds S_p = sum (x - c)^p for p = 1..P over ``n_src`` points (``src=None``
    means all S_p = 0, i.e. one point, or identical points, at c). With y = x - c, the sums
    about c' = c - delta are sum (y + delta)^p = sum_k C(p, k) delta^k S_{p-k}, S_0 = n_src
    (the binomial step behind Pébay's pairwise update, eq. 3.1 of SAND2008-6212). When
    ``dst is src`` the shift is done in place; descending p keeps the lower-order sums it
    reads unshifted until they are themselves rewritten.
    """
    power = np.empty_like(delta)
    term = np.empty_like(delta)  # one scratch vector: keeps the merge's memory at O(d)
    for p in range(dst.shape[0], 0, -1):
        if src is not None and dst is not src:
            dst[p - 1] += src[p - 1]
        np.copyto(power, delta)
        for k in range(1, p + 1):
            if k > 1:
                power *= delta
            if k == p:
                np.multiply(power, n_src, out=term)
            elif src is not None:
                np.multiply(src[p - k - 1], power, out=term)
                term *= math.comb(p, k)
            else:
                continue
            dst[p - 1] += term


class CentralMomentAccumulator:
    """Mergeable streaming per-coordinate central moment of order M >= 2.

    Rows (vectors of length d) are folded in one at a time or in batches; accumulators
    filled on different workers merge with :meth:`merge`. Memory is O(M d) whatever the
    number of rows, and the result does not depend on how the rows were split into batches
    or in which order partial accumulators were merged (up to floating-point rounding).

    Parameters
    ----------
    moment : float, default=2
        Order M >= 2; the statistic is ``(1/n) sum |x - mean|^M`` per coordinate.
    center : None, array-like of shape (d,) or CentralMomentAccumulator, default=None
        ``None`` (exact one-pass mode, M must be an even integer): the moment is about the
        mean of the data. Otherwise (two-pass mode, any real M >= 2): the moment is taken
        about this fixed point. Passing the first pass's accumulator uses its ``mean_`` and
        keeps the rounding residual of that mean, so that the second pass is centred on the
        exact mean even when it is large compared with the spread (e.g. 1e8 + N(0, 1)).

    Attributes
    ----------
    n_ : int
        Number of rows folded in so far.
    mean_ : ndarray of shape (d,)
        Mean of the rows folded in so far (only once ``n_ > 0``).
    center : ndarray of shape (d,) or None
        The fixed point of the two-pass mode (rounded to float64), else ``None``.

    Raises
    ------
    ValueError
        If ``moment < 2`` or is not finite, if ``center`` is not a finite 1-D vector, or if
        ``center=None`` and M is not an even integer.

    Notes
    -----
    For even integer M, ``|x - mean|^M`` = (x - mean)^M is a polynomial and two sets of power sums
    S_p = sum (x - c)^p, p = 1..M, merge exactly by the binomial shift of Pébay (2008, eq.
    3.1). Each accumulator stores its sums about a reference point c close to its mean and
    keeps S_1 (which Pébay's formulation sets to zero): S_1 / n is the rounding residual of
    c, so the final central moment is centred on the exact mean rather than on the float
    nearest to it. This keeps about 1e-15 relative accuracy for data such as 1e8 + N(0, 1),
    where centering on a rounded mean (as a plain two-pass computation does) already costs
    around M * ulp(1e8) / sd ~ 1e-8.

    For other M, ``|x - mean|^M`` is not a polynomial in x and no exact one-pass merge exists:
    accumulate the mean first (any even M, e.g. ``moment=2``), then a second accumulator with
    ``center=`` the first one sums ``|x - center|^M``, which merges trivially. This costs a
    second pass over the data (for :func:`estimate_sigma`, a second set of fits).

    The normalisation is 1/n, as in Izzo et al., Algorithm 1; see :func:`estimate_sigma` for
    the remark on its bias.

    References
    ----------
    Pébay, P. "Formulas for robust, one-pass parallel computation of covariances and
    arbitrary-order statistical moments". Sandia Report SAND2008-6212, 2008, eq. (3.1).

    Izzo et al., "Provable Membership Inference Privacy", Algorithm 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skmip.calibration.spread.moments import CentralMomentAccumulator
    >>> left = CentralMomentAccumulator(moment=2).update([[1.0], [2.0]])
    >>> right = CentralMomentAccumulator(moment=2).update([3.0]).update([4.0])
    >>> acc = left.merge(right)
    >>> acc.n_, acc.mean_, acc.central_moment()
    (4, array([2.5]), array([1.25]))

    Two passes for a moment that is not an even integer:

    >>> x = np.array([[1.0], [2.0], [4.0]])
    >>> first = CentralMomentAccumulator(moment=2).update(x)
    >>> second = CentralMomentAccumulator(moment=3, center=first).update(x)
    >>> second.central_moment()  # (|1 - 7/3|^3 + |2 - 7/3|^3 + |4 - 7/3|^3) / 3 = 190/81
    array([2.34567901])
    """

    def __init__(self, moment: float = 2, center=None):
        self.moment = moment
        self._moment = check_moment(_ACC, moment)
        self._order = _even_order(self._moment)
        self.n_ = 0
        if center is None:
            if self._order is None:
                raise ValueError(
                    f"{_ACC}: moment={moment!r} is not an even integer, so |x - mean|^M is "
                    "not a polynomial and cannot be merged in one pass. Accumulate the mean "
                    "first (moment=2), then pass that accumulator as center=... for a second "
                    "pass over the same data."
                )
            self.center = None
            self._shift = None  # reference point of the power sums, set by the first rows
            self._sums = None  # (M, d): row p-1 = sum (x - _shift)^p
            return
        if isinstance(center, CentralMomentAccumulator):
            if center.n_ == 0:
                raise ValueError(f"{_ACC}: center is an accumulator that holds no data yet.")
            hi, lo = center._mean_parts()
        else:
            hi = np.array(center, dtype=np.float64)
            if hi.ndim != 1 or hi.size == 0 or not np.all(np.isfinite(hi)):
                raise ValueError(
                    f"{_ACC}: center must be a finite 1-D vector (one entry per coordinate); "
                    f"got an array of shape {hi.shape}"
                    + ("" if hi.ndim != 1 or hi.size == 0 else " with NaN or inf")
                    + "."
                )
            lo = np.zeros_like(hi)
        # The center as hi + lo (a float plus its rounding residual); deviations are
        # computed as (x - hi) - lo, exact in the first step when x and hi are close.
        self._center_hi, self._center_lo = hi, lo
        self.center = hi + lo
        self._sums = np.zeros((2, hi.size))  # rows: sum of deviations, sum |deviation|^M

    # -- state ---------------------------------------------------------------------------

    def _n_features(self):
        if self.center is not None:
            return self.center.size
        return None if self._shift is None else self._shift.size

    def _mean_parts(self):
        """The mean as (float, small residual): their sum is more exact than either alone."""
        if self.center is None:
            return self._shift.copy(), self._sums[0] / self.n_
        return self._center_hi.copy(), self._center_lo + self._sums[0] / self.n_

    @property
    def mean_(self) -> np.ndarray:
        if self.n_ == 0:
            raise AttributeError(f"{_ACC}: mean_ is defined once rows have been folded in.")
        hi, lo = self._mean_parts()
        return hi + lo

    def _empty_like(self):
        """A new, empty accumulator of the same kind (same moment, same fixed center)."""
        new = CentralMomentAccumulator.__new__(CentralMomentAccumulator)
        new.moment, new._moment, new._order, new.n_ = self.moment, self._moment, self._order, 0
        new.center = self.center
        if self.center is None:
            new._shift = new._sums = None
        else:
            new._center_hi, new._center_lo = self._center_hi, self._center_lo
            new._sums = np.zeros_like(self._sums)
        return new

    def _check_width(self, d, what):
        expected = self._n_features()
        if expected is not None and d != expected:
            raise ValueError(
                f"{_ACC}: {what} has {d} coordinates but this accumulator holds vectors of "
                f"length {expected}. Every row must have the same length."
            )

    # -- folding in ----------------------------------------------------------------------

    def update(self, x: ArrayLike) -> CentralMomentAccumulator:
        """Fold in one row (shape (d,)) or a batch of rows (shape (k, d)).

        Parameters
        ----------
        x : array-like of shape (d,) or (k, d)
            Finite values.

        Returns
        -------
        self : CentralMomentAccumulator

        Raises
        ------
        ValueError
            If ``x`` is not 1-D or 2-D, has NaN or inf, or its length differs from earlier rows.
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim == 1:
            x = x[np.newaxis, :]
        if x.ndim != 2:
            raise ValueError(
                f"{_ACC}: update takes one row of shape (d,) or a batch of shape (k, d); "
                f"got an array of shape {x.shape}."
            )
        if x.shape[0] == 0:
            return self
        if not np.all(np.isfinite(x)):
            raise ValueError(
                f"{_ACC}: update got NaN or infinite values; moments of such data are undefined."
            )
        self._check_width(x.shape[1], "the row")
        if self.center is not None:
            dev = (x - self._center_hi) - self._center_lo
            self._sums[0] += dev.sum(axis=0)
            np.abs(dev, out=dev)
            np.power(dev, self._moment, out=dev)
            self._sums[1] += dev.sum(axis=0)
            self.n_ += x.shape[0]
            return self
        if x.shape[0] == 1:
            # A single point is its own mean with all power sums zero.
            self._merge_sums(1, x[0], None)
            return self
        shift = x.mean(axis=0)
        dev = x - shift
        sums = np.empty((self._order, x.shape[1]))
        power = dev.copy()
        for p in range(1, self._order + 1):
            if p > 1:
                power *= dev
            sums[p - 1] = power.sum(axis=0)
        self._merge_sums(x.shape[0], shift, sums)
        return self

    def _merge_sums(self, n_other, shift_other, sums_other):
        """Fold in n_other points with power sums ``sums_other`` (None: zeros) about shift_other."""
        if self.n_ == 0:
            self.n_ = n_other
            self._shift = np.array(shift_other, dtype=np.float64)
            self._sums = (
                np.zeros((self._order, self._shift.size)) if sums_other is None else sums_other.copy()
            )
            return
        n = self.n_ + n_other
        mean_self = self._shift + self._sums[0] / self.n_
        mean_other = shift_other if sums_other is None else shift_other + sums_other[0] / n_other
        # Any float near the combined mean will do as the new reference point: S_1 carries
        # its residual. Close to the mean keeps the power sums free of cancellation.
        new_shift = np.subtract(mean_other, mean_self)
        new_shift *= n_other / n
        new_shift += mean_self
        del mean_self
        _add_shifted(self._sums, self._sums, self.n_, self._shift - new_shift)
        _add_shifted(self._sums, sums_other, n_other, shift_other - new_shift)
        self._shift = new_shift
        self.n_ = n

    def merge(self, other: CentralMomentAccumulator) -> CentralMomentAccumulator:
        """Fold in everything another accumulator of the same kind has seen.

        Parameters
        ----------
        other : CentralMomentAccumulator
            Same ``moment`` and same ``center`` (both ``None`` or equal vectors). It is not
            modified.

        Returns
        -------
        self : CentralMomentAccumulator

        Raises
        ------
        TypeError
            If ``other`` is not a :class:`CentralMomentAccumulator`.
        ValueError
            If the moments, centers or vector lengths differ.
        """
        if not isinstance(other, CentralMomentAccumulator):
            raise TypeError(f"{_ACC}: merge takes another {_ACC}; got {type(other).__name__}.")
        if other is self:
            # The in-place shift below would otherwise also move the sums being added.
            other = copy.deepcopy(other)
        if other._moment != self._moment:
            raise ValueError(
                f"{_ACC}: cannot merge moment={other.moment!r} into moment={self.moment!r}; "
                "accumulate both parts with the same moment."
            )
        if (self.center is None) != (other.center is None) or (
            self.center is not None
            and not (
                np.array_equal(self._center_hi, other._center_hi)
                and np.array_equal(self._center_lo, other._center_lo)
            )
        ):
            raise ValueError(
                f"{_ACC}: cannot merge accumulators with different centers; sums about "
                "different fixed points do not add. Build both from the same center=..."
            )
        if other.n_ == 0:
            return self
        self._check_width(other._n_features(), "the other accumulator")
        if self.center is not None:
            self._sums += other._sums
            self.n_ += other.n_
        else:
            self._merge_sums(other.n_, other._shift, other._sums)
        return self

    # -- results -------------------------------------------------------------------------

    def central_moment(self) -> np.ndarray:
        """Per-coordinate ``(1/n) sum |x - c|^M``, c the mean (or the fixed ``center``).

        Returns
        -------
        ndarray of shape (d,)

        Raises
        ------
        ValueError
            If no rows have been folded in.
        """
        if self.n_ == 0:
            raise ValueError(f"{_ACC}: no rows have been folded in; call update() first.")
        if self.center is not None:
            return self._sums[1] / self.n_
        # Re-centre from the stored reference point to the exact mean: that moves by
        # -S_1/n, a rounding-sized amount, so the binomial shift loses nothing.
        sums = self._sums.copy()
        _add_shifted(sums, sums, self.n_, -self._sums[0] / self.n_)
        # An even power sum is >= 0; clip the last-bit negative values rounding can leave.
        return np.maximum(sums[self._order - 1], 0.0) / self.n_

    def sigma(self) -> np.ndarray:
        """Per-coordinate ``central_moment() ** (1 / M)`` (sigma_j of Izzo et al., Alg. 1).

        Returns
        -------
        ndarray of shape (d,)
        """
        return self.central_moment() ** (1.0 / self._moment)

    def __repr__(self):
        center = "None" if self.center is None else f"<vector of length {self.center.size}>"
        return f"{_ACC}(moment={self.moment!r}, center={center}) with n_={self.n_}"
