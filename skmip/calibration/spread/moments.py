"""Streaming central moments and the per-coordinate spread sigma over random subsets.

Izzo et al., Algorithm 1 needs, for every coordinate j of a model's parameter vector,
sigma_j = ``(1/B sum_i |theta_j^(i) - mean_j|^M)^(1/M)`` over B fits on random halves of the
data. Keeping the B vectors would cost O(B d) memory, which is out of reach for models with
millions of parameters. :class:`CentralMomentAccumulator` instead folds one parameter vector
at a time into O(M d) state, and partial accumulators computed on different workers merge
exactly, in any order. :func:`estimate_sigma` runs the split fits through joblib on top of it.

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
import numbers

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from sklearn.base import is_classifier
from sklearn.utils.parallel import Parallel, delayed

from skmip.utils.rng import resolve_rng
from skmip.utils.rows import fit_on_rows
from skmip.utils.rows import n_rows as _count_rows
from skmip.utils.validation import check_int, check_interval, check_moment
from skmip.params import get_adapter

__all__ = ["CentralMomentAccumulator", "estimate_sigma"]

# Split fits run in this many chunks, whatever n_jobs is: each chunk folds its fits into one
# partial accumulator, and the partials are merged in chunk order. A fixed chunking makes the
# floating-point operations, hence the result, identical for every n_jobs and backend.
_N_CHUNKS = 16

_ACC = "CentralMomentAccumulator"
_EST = "estimate_sigma"




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


# -- sigma over random subsets -----------------------------------------------------------


def _split_seeds(random_state, n_splits):
    """One seed per split, drawn up front from ``random_state``."""
    return resolve_rng(random_state).integers(np.iinfo(np.int64).max, size=n_splits)


def _split_rows(seed, n_rows, split_rows):
    """Sorted indices of a uniformly random subset of ``split_rows`` of ``n_rows`` rows."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_rows, size=split_rows, replace=False))


def _split_size(split_size, n_rows):
    """Rows per split: a fraction of n (float) or an absolute count (int)."""
    if isinstance(split_size, numbers.Integral) and not isinstance(split_size, bool):
        rows = check_int(
            _EST, "split_size", split_size, 2, n_rows - 1,
            why=(
                f"An integer split_size is a number of rows; with n={n_rows} rows it must "
                "leave at least one row out (identical splits have no spread) and keep at "
                "least 2 rows in."
            ),
        )
    else:
        fraction = check_interval(
            _EST, "split_size", split_size, 0, 1, closed="neither",
            why="A float split_size is the fraction of rows in each split (0.5 in Algorithm 1).",
        )
        rows = int(math.floor(fraction * n_rows))
    if rows < 2:
        raise ValueError(
            f"{_EST}: split_size={split_size!r} of n={n_rows} rows gives {rows} row(s) per "
            "split; each split needs at least 2 rows. Provide more data or a larger split_size."
        )
    return rows


def _check_finite(name, data):
    # Every sparse format (dok and lil included) exposes its stored values through COO.
    values = data.tocoo(copy=False).data if sparse.issparse(data) else np.asarray(data)
    if values.dtype.kind in "iub":
        return
    if values.dtype.kind not in "fc":
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError):
            return  # non-numeric columns: the estimator (e.g. a Pipeline) validates them
    bad = np.size(values) - np.count_nonzero(np.isfinite(values))
    if bad:
        raise ValueError(
            f"{_EST}: {name} contains {bad} NaN or infinite value(s). Impute or drop them "
            "before estimating sigma (the split fits and the released fit must see the same "
            "finite data)."
        )


def _check_classes(y, seeds, n_rows, split_rows, n_splits):
    """Fail before any fit if a split misses a class that the data has."""
    from skmip.exceptions import check_subset_classes

    check_subset_classes(
        _EST, y, ((f"split {i} of {n_splits}", _split_rows(seed, n_rows, split_rows)) for i, seed in enumerate(seeds)),
        what="to measure sigma", fix="Provide more rows of the rare classes or a larger split_size.",
    )


def _split_vectors(estimator, adapter, X, y, fit_params, split_ids, seeds, n_rows, split_rows,
                   n_splits):
    """Yield ``(split index, parameter vector)`` for the splits of one chunk.

    An estimator with a ``fit_subsets(X, y, subsets, adapter=...)`` method (skmip's seeded
    skorch nets) fits the whole chunk in one batched run; anything else is fitted split by
    split. A failure is re-raised naming the split (or the chunk, for a batched run).
    """
    subsets = [_split_rows(seed, n_rows, split_rows) for seed in seeds]
    if hasattr(estimator, "fit_subsets") and not fit_params:
        try:
            vectors = estimator.fit_subsets(X, y, subsets, adapter=adapter)
        except Exception as exc:
            raise RuntimeError(
                f"{_EST}: the batched fit of splits {split_ids[0]}..{split_ids[-1]} of {n_splits} "
                f"({split_rows} rows each) failed: {type(exc).__name__}: {exc}"
            ) from exc
        yield from zip(split_ids, np.asarray(vectors, dtype=np.float64))
        return
    for i, rows in zip(split_ids, subsets):
        try:
            fitted = fit_on_rows(estimator, X, y, rows, fit_params)
            adapter.canonicalize(fitted)
            vector = np.asarray(adapter.get_vector(fitted), dtype=np.float64).ravel()
        except Exception as exc:
            raise RuntimeError(
                f"{_EST}: the fit on split {i} of {n_splits} ({split_rows} rows) failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        del fitted
        yield i, vector


def _fit_chunk(template, estimator, adapter, X, y, fit_params, split_ids, seeds, n_rows,
               split_rows, n_splits):
    """Fit the splits of one chunk and fold their parameter vectors into one accumulator."""
    acc = template._empty_like()
    first = None
    for i, vector in _split_vectors(estimator, adapter, X, y, fit_params, split_ids, seeds,
                                    n_rows, split_rows, n_splits):
        if first is not None and vector.size != first[1]:
            raise ValueError(
                f"{_EST}: split {i} of {n_splits} gave {vector.size} parameters but split "
                f"{first[0]} gave {first[1]}. sigma needs the same parameter layout on every "
                "split; pass params=[...] (or an adapter) with a fixed-size parameterisation."
            )
        if not np.all(np.isfinite(vector)):
            raise ValueError(
                f"{_EST}: split {i} of {n_splits} gave NaN or infinite parameters; check that "
                "the estimator converges on subsets of the data."
            )
        first = first or (i, vector.size)
        acc.update(vector)
        del vector
    return first, acc


def _accumulate(template, estimator, adapter, X, y, fit_params, seeds, n_rows, split_rows,
                n_jobs, verbose, label):
    """All split fits, in _N_CHUNKS chunks merged in chunk order."""
    n_splits = len(seeds)
    chunks = np.array_split(np.arange(n_splits), min(_N_CHUNKS, n_splits))
    # return_as="generator" hands chunks back in order as they finish, and batch_size=1
    # stops joblib from grouping quick chunks into one task, so only the partial
    # accumulators in flight (about pre_dispatch of them) are alive at any time.
    results = Parallel(
        n_jobs=n_jobs, verbose=max(0, verbose - 1), return_as="generator", batch_size=1
    )(
        delayed(_fit_chunk)(
            template, estimator, adapter, X, y, fit_params, ids, seeds[ids], n_rows,
            split_rows, n_splits,
        )
        for ids in chunks
    )
    total, first = None, None
    for (chunk_first, partial), ids in zip(results, chunks):
        if first is not None and chunk_first[1] != first[1]:
            raise ValueError(
                f"{_EST}: split {chunk_first[0]} of {n_splits} gave {chunk_first[1]} "
                f"parameters but split {first[0]} gave {first[1]}. sigma needs the same "
                "parameter layout on every split; pass params=[...] (or an adapter) with a "
                "fixed-size parameterisation."
            )
        first = first or chunk_first
        total = partial if total is None else total.merge(partial)
        del partial
        if verbose > 0:
            print(f"{_EST}: {ids[-1] + 1}/{n_splits} split fits{label}", flush=True)
    return total


def estimate_sigma(
    estimator,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    n_splits: int = 128,
    moment: float = 2,
    params="auto",
    split_size: float | int = 0.5,
    random_state=None,
    n_jobs: int | None = None,
    verbose: int = 0,
    fit_params: dict | None = None,
    return_mean: bool = False,
):
    r"""Per-coordinate spread of an estimator's fitted parameters over random subsets.

    Fits ``n_splits`` clones of ``estimator`` on uniformly random subsets of the rows (half of
    them by default) and returns, for each parameter coordinate j,

    .. math:: \sigma_j = \Big(\frac{1}{B}\sum_{i=1}^{B}
              |\theta^{(i)}_j - \bar\theta_j|^M\Big)^{1/M},

    the estimate of Izzo et al., Algorithm 1 that calibrates the noise of Corollary 10.

    Parameters
    ----------
    estimator : estimator instance
        Unfitted; cloned for every split. Its own ``random_state`` is left as given: for
        sigma to measure data variability only it should be fixed (as
        :class:`skmip.defend.MIPNoiseWrapper` does).
    X : array-like or sparse matrix of shape (n_samples, n_features)
        The data the subsets are drawn from (D_train in Algorithm 1). Must be finite.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs), default=None
        Targets, subset alongside ``X``; ``None`` for unsupervised estimators.
    n_splits : int, default=128
        Number B of random subsets (>= 2).
    moment : float, default=2
        Order M >= 2 of the central moment. Even integers take one set of fits; any other
        value takes two (see Notes).
    params : "auto", list of str or ParamAdapter, default="auto"
        Which fitted parameters to measure; resolved by :func:`skmip.params.get_adapter`.
    split_size : float or int, default=0.5
        Rows per subset: a float in (0, 1) is a fraction of ``n_samples`` (rounded down), an
        int a number of rows in [2, n_samples - 1].
    random_state : None, int, numpy Generator or RandomState, default=None
        Draws the subsets: one seed per split, drawn up front.
    n_jobs : int, default=None
        Parallel split fits through joblib (``None`` means 1 unless in a
        ``joblib.parallel_config`` context; a dask backend works unchanged).
    verbose : int, default=0
        ``> 0`` prints progress after each chunk of split fits; ``> 1`` adds joblib's own.
    fit_params : dict, default=None
        Passed to every ``fit``. Array-likes with one entry per row of ``X`` (e.g.
        ``sample_weight``) are subset to each split; other values are passed as they are.
    return_mean : bool, default=False
        Also return the mean parameter vector over the splits.

    Returns
    -------
    sigma : ndarray of shape (n_params,)
    mean : ndarray of shape (n_params,)
        Only if ``return_mean``.

    Raises
    ------
    ValueError
        If ``moment < 2``, ``n_splits < 2``, ``X`` has NaN or inf, ``X`` and ``y`` differ in
        length, a split would have fewer than 2 rows, a classifier's split misses a class of
        ``y`` (naming the split and the classes, checked before any fit), splits give
        parameter vectors of different lengths (naming both), or a split gives non-finite
        parameters.
    RuntimeError
        If a split's fit fails; the message names the split, and the original exception is
        chained as ``__cause__``.

    Notes
    -----
    Izzo et al., Corollary 10 holds for any sigma_j^M >= ``E|theta_j - E theta_j|^M``, the M-th
    central moment over the random training subset and the algorithm's randomness (M >= 2).
    Algorithm 1 prints (theta - mean)^M; for even M this is ``|theta - mean|^M``, and for other M
    we use the absolute value that Corollary 10 and Theorem 9 state. The 1/B normalisation is
    the one printed: as the paper remarks below Corollary 10, this estimator is not unbiased
    but is consistent (the bias vanishes as B grows); for M = 2 the unbiased variant divides
    by B - 1, and Gerlovina and Hubbard (2019) give corrections for general M. The paper
    judges the difference small in practice: with B = 128 and M = 2 the printed estimate of
    sigma^2 is low by the factor 127/128 in expectation (sigma by about 0.4 %).

    Memory is O(M d) for d parameters, not O(B d): the fits run in a fixed number of chunks
    (16, independent of ``n_jobs``), each folding its parameter vectors one at a time into
    a :class:`CentralMomentAccumulator`; the chunks' accumulators merge in chunk order.
    Results are therefore bit-identical for every ``n_jobs`` and joblib backend as long as
    each fit is deterministic (e.g. BLAS thread counts do not change the fit's rounding).

    For even integer M one set of fits suffices (exact merging). Otherwise the mean must be
    known before ``|theta - mean|^M`` can be summed, so the same splits are fitted twice (2x the
    cost): pass 1 accumulates the mean, pass 2 refits the same subsets (same seeds) and
    sums ``|theta - mean|^M``. If the estimator is itself random (no fixed ``random_state``),
    pass 2 sees fresh draws; the result is then the moment about the pass-1 mean, still a
    consistent estimate.

    Nothing keeps the per-split parameter vectors or row indices after returning.

    References
    ----------
    Izzo et al., "Provable Membership Inference Privacy", Algorithm 1, Corollary 10 and the
    remark on the estimator's bias that precedes Algorithm 1.

    Gerlovina, I., Hubbard, A. E. "Computer algebra and algorithms for unbiased moment
    estimation of arbitrary order". Cogent Mathematics & Statistics 6(1), 2019.

    Examples
    --------
    The mean of y over half-samples without replacement of y = 0, ..., 99 has standard
    deviation sqrt(Var(y) / 50 * 50 / 99) = 2.90 (finite-population correction):

    >>> import numpy as np
    >>> from sklearn.dummy import DummyRegressor
    >>> from skmip.calibration.spread.moments import estimate_sigma
    >>> y = np.arange(100.0)
    >>> X = np.zeros((100, 1))
    >>> sigma = estimate_sigma(DummyRegressor(), X, y, n_splits=512, params=["constant_"],
    ...                        random_state=0)
    >>> exact = float(np.sqrt(y.var() / 99))
    >>> round(exact, 4)
    2.9011
    >>> bool(abs(sigma[0] - exact) < 4 * exact / np.sqrt(2 * 512))  # within 4 standard errors
    True
    """
    moment = check_moment(_EST, moment)
    n_splits = check_int(
        _EST, "n_splits", n_splits, 2, None,
        why="A spread needs at least two fits (Algorithm 1 uses B of them; 128 by default).",
    )
    fit_params = {} if fit_params is None else dict(fit_params)
    if sparse.issparse(X):
        X = X.tocsr()  # row subsets need a row-indexable format (not coo, dia, ...)
    elif not (hasattr(X, "shape") or hasattr(X, "iloc")):
        X = np.asarray(X)
    n_rows = _count_rows(X)
    _check_finite("X", X)
    if y is not None:
        if not hasattr(y, "shape"):
            y = np.asarray(y)
        if _count_rows(y) != n_rows:
            raise ValueError(
                f"{_EST}: X has {n_rows} rows but y has {_count_rows(y)}; they must match."
            )
        _check_finite("y", y)
    split_rows = _split_size(split_size, n_rows)
    adapter = get_adapter(estimator, params)
    seeds = _split_seeds(random_state, n_splits)
    if y is not None and is_classifier(estimator):
        _check_classes(y, seeds, n_rows, split_rows, n_splits)

    order = _even_order(moment)
    args = (estimator, adapter, X, y, fit_params, seeds, n_rows, split_rows, n_jobs, verbose)
    if order is not None:
        acc = _accumulate(CentralMomentAccumulator(moment=order), *args, "")
        sigma, mean = acc.sigma(), acc.mean_
    else:
        first = _accumulate(CentralMomentAccumulator(moment=2), *args, " (pass 1 of 2: mean)")
        mean, template = first.mean_, CentralMomentAccumulator(moment=moment, center=first)
        del first
        second = _accumulate(template, *args, f" (pass 2 of 2: |theta - mean|^{moment:g})")
        sigma = second.sigma()
    return (sigma, mean) if return_mean else sigma
