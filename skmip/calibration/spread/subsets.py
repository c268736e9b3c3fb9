r"""Random subsets of the rows, fitted in parallel: what the spread estimators share.

Both estimators of the spread of a fit over subsets of :math:`\mathcal{D}` --
:func:`skmip.calibration.spread.moments.estimate_sigma` (per-coordinate central moments over
random half-splits, Izzo et al., Algorithm 1) and
:func:`skmip.calibration.spread.noise_factor.estimate_noise_factor` (the covariance, a full
noise shape for the coupling bound) -- do the same four things, here once:

- check the data (finite, ``X`` and ``y`` of one length: :func:`check_data`) and the number
  of subsets (:func:`check_n_subsets`);
- draw the subsets: one seed per subset, drawn up front, and the subset's rows from its seed
  alone (:class:`RandomSubsets`), so a worker rebuilds its rows from a seed, and the
  subsets of a classifier hold every class (:meth:`RandomSubsets.cover_classes`: a subset
  lacking one is redrawn);
- fit them in a fixed number of chunks (:data:`N_CHUNKS`, whatever ``n_jobs``) through
  joblib, handed back in chunk order (:func:`map_chunks`), so that the result is
  bit-identical for every ``n_jobs`` and backend;
- check every parameter vector: one length for all, finite (:func:`check_vector`,
  :func:`check_length`).

Each estimator keeps its own statistic, and its own law of the seeds and of the rows
(:func:`draw_split_seeds` with :func:`rows_by_choice` for sigma;
:func:`skmip.utils.rng.draw_seed` per subset with :func:`rows_by_permutation` for the noise
shape). Both laws draw a subset
uniformly among those of its size, which is all that Algorithm 1 and the coupling bound's
shape (any shape fixed given :math:`\mathcal{D}`) ask of them; they stay two so that every
seeded result of skmip 0.2.0 is reproduced bit for bit.

References
----------
Izzo, Z., Yoon, J., Arik, S. O., Zou, J. "Provable Membership Inference Privacy",
Algorithm 1 (the spread over random subsets).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.utils.parallel import Parallel, delayed

from skmip.utils.rng import resolve_rng
from skmip.utils.rows import n_rows
from skmip.utils.validation import check_int
from skmip.calibration.class_cover import class_cover

__all__ = [
    "N_CHUNKS",
    "RandomSubsets",
    "check_data",
    "check_length",
    "check_n_subsets",
    "check_vector",
    "draw_split_seeds",
    "map_chunks",
    "rows_by_choice",
    "rows_by_permutation",
]

#: Subset fits run in this many chunks, whatever ``n_jobs`` is, handed back in chunk order:
#: a fixed chunking makes the floating-point operations, hence the result, identical for
#: every ``n_jobs`` and backend.
N_CHUNKS = 16


def check_n_subsets(owner, name, value, why=""):
    """The number of subsets, an integer >= 2 (a spread needs two fits)."""
    return check_int(owner, name, value, 2, None, why=why)


def _check_finite(owner, name, data):
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
            f"{owner}: {name} contains {bad} NaN or infinite value(s). Impute or drop them "
            "before measuring the spread (the subset fits and the released fit must see the "
            "same finite data)."
        )


def check_data(owner, X, y):
    """``(X, y, n_rows)``: ``X`` row-indexable (sparse as CSR), both finite, of one length.

    Raises
    ------
    ValueError
        If ``X`` or ``y`` holds NaN or inf, or their lengths differ.
    """
    if sparse.issparse(X):
        X = X.tocsr()  # row subsets need a row-indexable format (not coo, dia, ...)
    elif not (hasattr(X, "shape") or hasattr(X, "iloc")):
        X = np.asarray(X)
    n = n_rows(X)
    _check_finite(owner, "X", X)
    if y is not None:
        if not hasattr(y, "shape"):
            y = np.asarray(y)
        if n_rows(y) != n:
            raise ValueError(f"{owner}: X has {n} rows but y has {n_rows(y)}; they must match.")
        _check_finite(owner, "y", y)
    return X, y, n


def draw_split_seeds(random_state, n_subsets):
    """One seed per subset, drawn up front from ``random_state`` (sigma's law)."""
    return resolve_rng(random_state).integers(np.iinfo(np.int64).max, size=n_subsets)


def rows_by_choice(seed, n_rows, size):
    """Sorted indices of a uniformly random subset of ``size`` of ``n_rows`` rows (sigma's law)."""
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_rows, size=size, replace=False))


def rows_by_permutation(seed, n_rows, size):
    """Sorted indices of a uniformly random subset: the first ``size`` of a random permutation
    (the noise shape's law)."""
    return np.sort(np.random.default_rng(seed).permutation(n_rows)[:size])


class RandomSubsets:
    """``len(seeds)`` uniformly random subsets of ``size`` of ``n_rows`` rows.

    Subset ``i`` is ``draw(seeds[i], n_rows, size)``: a function of its seed alone, so the
    object is small to send to a worker, which rebuilds the rows it fits.

    Parameters
    ----------
    seeds : sequence of int
        One seed per subset, drawn up front.
    n_rows, size : int
        Rows of the data and of each subset.
    draw : callable
        :func:`rows_by_choice` or :func:`rows_by_permutation`.
    noun : str
        What a subset is called in messages (``"split"``, ``"subset"``).
    """

    def __init__(self, seeds, n_rows, size, draw, noun):
        self.seeds, self.n_rows, self.size, self.draw, self.noun = seeds, n_rows, size, draw, noun

    def __len__(self):
        return len(self.seeds)

    def rows(self, i):
        """Sorted row indices of subset ``i``."""
        return self.draw(self.seeds[i], self.n_rows, self.size)

    def chunks(self):
        """The subsets' indices in :data:`N_CHUNKS` chunks (fewer if there are fewer subsets)."""
        return np.array_split(np.arange(len(self)), min(N_CHUNKS, len(self)))

    def cover_classes(self, estimator, y):
        """For a classifier, replace the seed of every subset that lacks a class of ``y`` by
        its first redraw that holds them all (:meth:`.ClassCover.covering_seed`): each subset
        is then uniform among those of its size that hold every class. Seeds whose subsets
        hold every class are kept, so such results are unchanged."""
        cover = class_cover(estimator, y)
        if cover is None:
            return
        self.seeds = [cover.covering_seed(seed, self.draw, self.n_rows, self.size)[0] for seed in self.seeds]


def check_length(owner, noun, i, n_subsets, size, first, what):
    """Check that subset ``i`` gave ``size`` parameters, as the first one did; return ``first``,
    the ``(index, length)`` of the first vector checked (the one every other must match).

    Raises
    ------
    ValueError
        If ``size`` differs from ``first``'s length, naming both subsets.
    """
    if first is not None and size != first[1]:
        raise ValueError(
            f"{owner}: {noun} {i} of {n_subsets} gave {size} parameters but {noun} "
            f"{first[0]} gave {first[1]}. {what} needs the same parameter layout on every "
            f"{noun}; pass params=[...] (or an adapter) with a fixed-size parameterisation."
        )
    return first or (i, size)


def check_vector(owner, noun, i, n_subsets, vector, first, what):
    """:func:`check_length`, and that the parameter vector of subset ``i`` is finite.

    Raises
    ------
    ValueError
        If ``vector`` has a length other than ``first``'s, or is not finite.
    """
    first_now = check_length(owner, noun, i, n_subsets, vector.size, first, what)
    if not np.all(np.isfinite(vector)):
        raise ValueError(
            f"{owner}: {noun} {i} of {n_subsets} gave NaN or infinite parameters; check that "
            "the estimator converges on subsets of the data."
        )
    return first_now


def map_chunks(function, subsets, *, n_jobs, verbose, owner, label=""):
    """Yield ``(ids, function(subsets, ids))`` for each chunk ``ids`` of
    :meth:`RandomSubsets.chunks`, in chunk order, through joblib.

    ``return_as="generator"`` hands the chunks back in order as they finish, and
    ``batch_size=1`` stops joblib from grouping quick chunks into one task, so only the
    results in flight (about ``pre_dispatch`` of them) are alive at any time. With
    ``verbose > 0`` a line of progress follows each chunk the caller has consumed; ``> 1``
    adds joblib's own.
    """
    chunks = subsets.chunks()
    results = Parallel(n_jobs=n_jobs, verbose=max(0, verbose - 1), return_as="generator", batch_size=1)(
        delayed(function)(subsets, ids) for ids in chunks
    )
    for result, ids in zip(results, chunks):
        yield ids, result
        if verbose > 0:
            print(f"{owner}: {ids[-1] + 1}/{len(subsets)} {subsets.noun} fits{label}", flush=True)
