"""A full noise shape for the coupling calibration: the covariance of the fit over subsets.

The subsets are drawn, fitted in parallel and checked by :mod:`skmip.calibration.spread.subsets`,
as those of :func:`skmip.calibration.spread.moments.estimate_sigma`; this module keeps the
statistic (the covariance, shrunk toward its diagonal, and its Cholesky factor).
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from sklearn.base import clone

from skmip.utils.rng import draw_seed, fix_inner_random_state, resolve_rng
from skmip.utils.threads import single_threaded_blas
from skmip.params import get_adapter

from skmip.calibration.spread.subsets import (
    RandomSubsets,
    check_data,
    check_n_subsets,
    check_vector,
    map_chunks,
    rows_by_permutation,
)

# The fitters and the loss registry are imported where they are used: a fresh process (a
# loky worker unpickling _subset_vectors) that enters skmip through this module would
# otherwise import the loss registry before the swap package, and the registry's imports of
# that package lead back to the half-initialised registry (an ImportError at n_jobs > 1).

_OWNER = "estimate_noise_factor"


def _subset_vectors(fitter, subsets, ids):
    """Parameter vectors of the fits on the subsets ``ids`` of one chunk, shape (len(ids), d)."""
    return fitter.vectors([subsets.rows(i) for i in ids])


def _make_fitter(estimator, adapter, X, y, fit_params, polish, template_rows):
    """The estimator's own fits, or (``polish``) the exact minimiser by warm-started Newton."""
    from skmip.calibration.losses.registry import get_smooth_loss
    from skmip.calibration.swap.polish import MinimiserFits, SolverFits

    if not polish:
        return SolverFits(estimator, adapter, X, y, fit_params)
    loss = get_smooth_loss(estimator)
    if loss is None:
        raise TypeError(
            f"estimate_noise_factor: polish=True needs the objective of {type(estimator).__name__}; "
            "none is registered (skmip.calibration.swap.register_smooth_loss)."
        )
    Xd = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
    yd = None if y is None else np.asarray(y)
    template, _ = SolverFits(estimator, adapter, X, yd, fit_params, polish=True, loss=loss, Xd=Xd)(
        template_rows
    )
    return MinimiserFits(estimator, adapter, X, yd, fit_params, loss, Xd, template, template_rows)


def _fit_subsets(fitter, subsets, n_jobs, verbose):
    """The parameter vectors of every subset's fit, shape (n_subsets, d), each checked finite."""
    parts, first = [], None
    with single_threaded_blas():
        task = functools.partial(_subset_vectors, fitter)
        for ids, part in map_chunks(task, subsets, n_jobs=n_jobs, verbose=verbose, owner=_OWNER):
            for i, vector in zip(ids, part):
                first = check_vector(_OWNER, subsets.noun, i, len(subsets), vector, first, "the noise shape")
            parts.append(part)
    return np.concatenate(parts)


def estimate_noise_factor(
    estimator,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    train_size: int | float | None = None,
    n_subsets: int = 256,
    shrinkage: bool = True,
    params="auto",
    random_state=None,
    n_jobs: int | None = None,
    fit_params: dict | None = None,
    polish: bool = False,
    verbose: int = 0,
) -> np.ndarray:
    r"""A full noise shape for the coupling calibration: the spread of the fit over subsets.

    Returns a lower-triangular :math:`L` with :math:`LL^\top` the covariance of the
    parameter vector :math:`\mathcal{A}(S)` over uniformly random :math:`k`-subsets
    :math:`S` of :math:`\mathcal{D}` (shrunk toward its diagonal). Pass it as ``scale`` to
    :func:`estimate_swap_deltas` and add noise :math:`s\,Lz`, :math:`z \sim \mathcal{N}(0, I)`.

    Parameters
    ----------
    estimator : estimator instance
        The learner, unfitted; ``random_state`` parameters that are not integers are fixed
        to one seed drawn from ``random_state`` (as in :func:`estimate_swap_deltas`).
    X : array_like or sparse matrix of shape (n_samples, n_features)
        The whole dataset :math:`\mathcal{D}`.
    y : array_like, default=None
        Targets, for supervised learners.
    train_size : int or float, default=None
        :math:`k`, as in :func:`estimate_swap_deltas` (``None``: :math:`\lfloor n/2\rfloor`).
    n_subsets : int, default=256
        Random subsets fitted.
    shrinkage : bool, default=True
        Ledoit-Wolf shrinkage of the correlation matrix toward the identity (i.e. of the
        covariance toward its diagonal), which keeps the factor well conditioned when the
        number of parameters approaches ``n_subsets``. ``False`` uses the sample covariance.
    params : "auto", list of str, or ParamAdapter, default="auto"
        How parameters are read.
    random_state : None, int or Generator, default=None
        Seeds the subsets (drawn up front; results do not depend on ``n_jobs``).
    n_jobs : int, default=None
        Fits run in parallel through joblib.
    fit_params : dict, default=None
        Passed to ``fit``; per-row arrays are subset.
    polish : bool, default=False
        Fit every subset to the exact minimiser of the registered smooth loss, by Newton's
        method from a polished fit on all of D (the learner :func:`estimate_swap_deltas`
        analyses with ``polish=True``; several times cheaper than the estimator's solver).
    verbose : int, default=0
        ``> 0`` prints progress after each chunk of subset fits; ``> 1`` adds joblib's own.

    Returns
    -------
    ndarray of shape (n_params, n_params)
        Lower-triangular :math:`L`, invertible. A coordinate that is constant over the
        subsets gets the smallest positive standard deviation on the diagonal (a swap does
        not move it, so its noise is immaterial).

    Raises
    ------
    ValueError
        If ``n_subsets < 2``; ``X`` or ``y`` holds NaN or inf, or they differ in length; a
        subset's fit gives non-finite parameters; or the sample covariance is singular with
        ``shrinkage=False``. (A classifier's subset that lacks a class of ``y`` is redrawn: a
        noise shape may be any function of the data; :class:`~skmip.exceptions.MissingClassError`
        only if 65 draws in a row lack one.)

    Notes
    -----
    Any shape fixed given :math:`\mathcal{D}` is valid for the coupling bound; the shape
    only decides how much utility a given eta costs. A diagonal shape spends noise on every
    coordinate separately; on correlated features the parameters vary mostly along a few
    directions, and the full shape puts the noise where they vary anyway. On
    ``load_breast_cancer`` with ``LogisticRegression(C=0.1)`` at eta = 0.1 the full shape
    keeps 0.91 test accuracy against 0.83 for the diagonal one (docs/coupling.md). The
    subsets must be drawn from :math:`\mathcal{D}`, independently of
    :math:`\mathcal{D}_{train}` and of the rounds of :func:`estimate_swap_deltas`.

    The subsets are drawn and fitted by the machinery :func:`~skmip.calibration.spread.moments.estimate_sigma` uses
    (:mod:`skmip.calibration.spread.subsets`): seeds drawn up front, fits in 16 chunks
    whatever ``n_jobs``, so the result does not depend on ``n_jobs`` or the joblib backend.

    References
    ----------
    Ledoit, O., Wolf, M. (2004). "A well-conditioned estimator for large-dimensional
    covariance matrices". Izzo et al., Algorithm 1 (the spread over random subsets).

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 3)); y = X @ [1.0, -1.0, 0.5] + rng.normal(size=60)
    >>> L = estimate_noise_factor(Ridge(), X, y, n_subsets=64, random_state=0)
    >>> L.shape, bool(np.allclose(L, np.tril(L)))
    ((4, 4), True)
    """
    from sklearn.covariance import ledoit_wolf

    from skmip.calibration.swap.rounds import _resolve_k

    owner = _OWNER
    fit_params = {} if fit_params is None else dict(fit_params)
    X, y, n = check_data(owner, X, y)
    k = _resolve_k(owner, train_size, n)
    n_subsets = check_n_subsets(owner, "n_subsets", n_subsets)
    rng = resolve_rng(random_state)
    estimator = fix_inner_random_state(clone(estimator), draw_seed(rng))
    adapter = get_adapter(estimator, params)
    subsets = RandomSubsets([draw_seed(rng) for _ in range(n_subsets)], n, k, rows_by_permutation, "subset")
    subsets.cover_classes(estimator, y)
    # The warm start: a polished fit on the first subset (same size as every other one).
    fitter = _make_fitter(estimator, adapter, X, y, fit_params, polish, subsets.rows(0))
    thetas = _fit_subsets(fitter, subsets, n_jobs, verbose)
    sd = thetas.std(axis=0, ddof=1)
    # A spread at rounding level (a coefficient of a column that no subset uses, 1e-17) is a
    # constant coordinate: whitening by it would turn rounding into huge distances.
    moving = sd > 1e-9 * sd.max() if sd.max() > 0 else sd > 0
    cov = np.zeros((sd.size, sd.size))
    if moving.any():
        Z = (thetas[:, moving] - thetas[:, moving].mean(axis=0)) / sd[moving]
        if shrinkage:
            # Ledoit-Wolf toward a multiple of the identity on standardized vectors, then
            # renormalised to unit diagonal: (1 - rho) times the sample correlations.
            shrunk = ledoit_wolf(Z, assume_centered=True)[0]
            d = np.sqrt(np.diag(shrunk))
            corr = shrunk / np.outer(d, d)
        else:
            corr = np.atleast_2d(np.cov(Z.T, ddof=1))
        cov[np.ix_(moving, moving)] = corr * np.outer(sd[moving], sd[moving])
    floor = sd[moving].min() if moving.any() else 1.0
    cov[~moving, ~moving] = floor**2
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"{owner}: the covariance of the {sd.size} parameters over {n_subsets} subsets is "
            "singular; use shrinkage=True or more subsets."
        ) from None
