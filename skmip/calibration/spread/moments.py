"""The per-coordinate spread sigma of a fit over random subsets: :func:`estimate_sigma`.

Izzo et al., Algorithm 1 needs, for every coordinate j of a model's parameter vector,
sigma_j = ``(1/B sum_i |theta_j^(i) - mean_j|^M)^(1/M)`` over B fits on random halves of the
data. Keeping the B vectors would cost O(B d) memory, which is out of reach for models with
millions of parameters. :class:`CentralMomentAccumulator`
(:mod:`skmip.calibration.spread.accumulator`, re-exported here) instead folds one parameter
vector at a time into O(M d) state, and partial accumulators computed on different workers
merge exactly, in any order. :func:`estimate_sigma` runs the split fits on top of it, drawn
and fitted in parallel by the machinery it shares with the noise shape
(:mod:`skmip.calibration.spread.subsets`).

References
----------
Izzo, Z., Yoon, J., Arik, S. O., Zou, J. "Provable Membership Inference Privacy",
Algorithm 1 and Corollary 10 (``shared/papers/izzo-provable-membership-inference-privacy.txt``).

Pébay, P. "Formulas for robust, one-pass parallel computation of covariances and
arbitrary-order statistical moments". Sandia Report SAND2008-6212, 2008.
"""

from __future__ import annotations

import functools
import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.rows import fit_on_rows
from skmip.utils.deprecation import is_unset, renamed_parameter
from skmip.utils.validation import check_int, check_interval, check_moment
from skmip.params import get_adapter

from skmip.calibration.spread.accumulator import CentralMomentAccumulator, _even_order
from skmip.calibration.spread.subsets import (
    RandomSubsets,
    check_data,
    check_length,
    check_n_subsets,
    check_vector,
    draw_split_seeds,
    map_chunks,
    rows_by_choice,
)

__all__ = ["CentralMomentAccumulator", "estimate_sigma"]

_EST = "estimate_sigma"
#: What every split's parameter vector is for (in messages).
_WHAT = "sigma"


def _split_size(split_size, n_rows, name):
    """Rows per split: a fraction of n (float) or an absolute count (int)."""
    if isinstance(split_size, numbers.Integral) and not isinstance(split_size, bool):
        rows = check_int(
            _EST, name, split_size, 2, n_rows - 1,
            why=(
                f"An integer {name} is a number of rows; with n={n_rows} rows it must "
                "leave at least one row out (identical splits have no spread) and keep at "
                "least 2 rows in."
            ),
        )
    else:
        fraction = check_interval(
            _EST, name, split_size, 0, 1, closed="neither",
            why=f"A float {name} is the fraction of rows in each split (0.5 in Algorithm 1).",
        )
        rows = int(math.floor(fraction * n_rows))
    if rows < 2:
        raise ValueError(
            f"{_EST}: {name}={split_size!r} of n={n_rows} rows gives {rows} row(s) per "
            f"split; each split needs at least 2 rows. Provide more data or a larger {name}."
        )
    return rows


def _split_vectors(estimator, adapter, X, y, fit_params, subsets, ids):
    """Yield ``(split index, parameter vector)`` for the splits ``ids`` of one chunk.

    An estimator with a ``fit_subsets(X, y, subsets, adapter=...)`` method (skmip's seeded
    skorch nets) fits the whole chunk in one batched run; anything else is fitted split by
    split. A failure is re-raised naming the split (or the chunk, for a batched run).
    """
    n_splits, split_rows = len(subsets), subsets.size
    rows = [subsets.rows(i) for i in ids]
    if hasattr(estimator, "fit_subsets") and not fit_params:
        try:
            vectors = estimator.fit_subsets(X, y, rows, adapter=adapter)
        except Exception as exc:
            raise RuntimeError(
                f"{_EST}: the batched fit of splits {ids[0]}..{ids[-1]} of {n_splits} "
                f"({split_rows} rows each) failed: {type(exc).__name__}: {exc}"
            ) from exc
        yield from zip(ids, np.asarray(vectors, dtype=np.float64))
        return
    for i, split in zip(ids, rows):
        try:
            fitted = fit_on_rows(estimator, X, y, split, fit_params)
            adapter.canonicalize(fitted)
            vector = np.asarray(adapter.get_vector(fitted), dtype=np.float64).ravel()
        except Exception as exc:
            raise RuntimeError(
                f"{_EST}: the fit on split {i} of {n_splits} ({split_rows} rows) failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        del fitted
        yield i, vector


def _fit_chunk(template, estimator, adapter, X, y, fit_params, subsets, ids):
    """Fit the splits ``ids`` of one chunk and fold their parameter vectors into one accumulator."""
    acc = template._empty_like()
    first = None
    for i, vector in _split_vectors(estimator, adapter, X, y, fit_params, subsets, ids):
        first = check_vector(_EST, subsets.noun, i, len(subsets), vector, first, _WHAT)
        acc.update(vector)
        del vector
    return first, acc


def _accumulate(template, estimator, adapter, X, y, fit_params, subsets, n_jobs, verbose, label):
    """All split fits, in the chunks of :func:`~skmip.calibration.spread.subsets.map_chunks`,
    their partial accumulators merged in chunk order (only those in flight are alive)."""
    task = functools.partial(_fit_chunk, template, estimator, adapter, X, y, fit_params)
    total, first = None, None
    chunks = map_chunks(task, subsets, n_jobs=n_jobs, verbose=verbose, owner=_EST, label=label)
    for _, (chunk_first, part) in chunks:
        first = check_length(_EST, subsets.noun, chunk_first[0], len(subsets), chunk_first[1], first, _WHAT)
        total = part if total is None else total.merge(part)
        del part
    return total


def estimate_sigma(
    estimator,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    n_subsets: int = 128,
    moment: float = 2,
    params="auto",
    train_size: float | int = 0.5,
    random_state=None,
    n_jobs: int | None = None,
    verbose: int = 0,
    fit_params: dict | None = None,
    return_mean: bool = False,
    n_splits="deprecated",
    split_size="deprecated",
):
    r"""Per-coordinate spread of an estimator's fitted parameters over random subsets.

    Fits ``n_subsets`` clones of ``estimator`` on uniformly random subsets of the rows (half of
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
    n_subsets : int, default=128
        Number B of random subsets (>= 2).
    moment : float, default=2
        Order M >= 2 of the central moment. Even integers take one set of fits; any other
        value takes two (see Notes).
    params : "auto", list of str or ParamAdapter, default="auto"
        Which fitted parameters to measure; resolved by :func:`skmip.params.get_adapter`.
    train_size : float or int, default=0.5
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
    n_splits : int or "deprecated", default="deprecated"
        Deprecated name of ``n_subsets`` (renamed in 0.2, removed in 0.3; a ``FutureWarning``).
    split_size : float, int or "deprecated", default="deprecated"
        Deprecated name of ``train_size`` (renamed in 0.2, removed in 0.3; a ``FutureWarning``).

    Returns
    -------
    sigma : ndarray of shape (n_params,)
    mean : ndarray of shape (n_params,)
        Only if ``return_mean``.

    Raises
    ------
    ValueError
        If ``moment < 2``, ``n_subsets < 2``, ``X`` has NaN or inf, ``X`` and ``y`` differ in
        length, a split would have fewer than 2 rows, splits give parameter vectors of different lengths (naming both), or a split gives non-finite
        parameters. (A classifier's split that lacks a class of ``y`` is redrawn: each split
        is uniform among those that hold every class, docs/coupling.md, "Subsets that lack a
        class"; :class:`~skmip.exceptions.MissingClassError` only if 65 draws in a row lack
        one.)
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
    >>> sigma = estimate_sigma(DummyRegressor(), X, y, n_subsets=512, params=["constant_"],
    ...                        random_state=0)
    >>> exact = float(np.sqrt(y.var() / 99))
    >>> round(exact, 4)
    2.9011
    >>> bool(abs(sigma[0] - exact) < 4 * exact / np.sqrt(2 * 512))  # within 4 standard errors
    True
    """
    moment = check_moment(_EST, moment)
    n_subsets = renamed_parameter(_EST, "n_splits", n_splits, "n_subsets", n_subsets, 128)
    train_size = renamed_parameter(_EST, "split_size", split_size, "train_size", train_size, 0.5)
    n_subsets = check_n_subsets(
        _EST, "n_subsets" if is_unset(n_splits) else "n_splits", n_subsets,
        why="A spread needs at least two fits (Algorithm 1 uses B of them; 128 by default).",
    )
    fit_params = {} if fit_params is None else dict(fit_params)
    X, y, n_rows = check_data(_EST, X, y)
    split_rows = _split_size(train_size, n_rows, "train_size" if is_unset(split_size) else "split_size")
    adapter = get_adapter(estimator, params)
    subsets = RandomSubsets(draw_split_seeds(random_state, n_subsets), n_rows, split_rows, rows_by_choice, "split")
    subsets.cover_classes(estimator, y)

    order = _even_order(moment)
    args = (estimator, adapter, X, y, fit_params, subsets, n_jobs, verbose)
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
