"""The entry point :func:`estimate_swap_deltas`: validation, engine choice, rounds in parallel."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse
from sklearn.base import clone
from sklearn.utils.parallel import delayed

from skmip.utils.rng import draw_seed, fix_inner_random_state, resolve_rng
from skmip.utils.rows import n_rows
from skmip.utils.validation import check_int, check_interval, check_option
from skmip.params import get_adapter

from skmip.calibration.swap._common import _OWNER, _fit_vector
from skmip.calibration.swap._result import SwapDeltas
from skmip.calibration.swap.exact import _exact_distances
from skmip.calibration.swap.batched import _influence_rounds
from skmip.calibration.swap.kept import KeptBatches
from skmip.calibration.swap.compact import COMPACT_VALUES
from skmip.calibration.swap.influence import certifiable
from skmip.calibration.swap.lazy import pays as lazy_pays, settled_rounds
from skmip.calibration.losses.registry import augmented_design_cache, get_smooth_loss
from skmip.calibration.swap.polish import MinimiserFits, SolverFits, _polish
from skmip.calibration.swap.refit import _refit_rounds
from skmip.calibration.swap.rounds import _SUMMARY_SIZE, _resolve_k, run_rounds
from skmip.calibration.swap.closed_form import _statistic_features, statistic_swap_deltas
from skmip.calibration.swap.whitening import _Whitener
from skmip.calibration.class_cover import class_cover
from skmip.calibration.spread.subsets import rows_by_permutation

_ENGINES = ("auto", "refit", "newton", "influence", "exact", "closed_form")
#: Sampled pairs per target and round (influence engines). The round-to-round spread of a
#: target's average comes from D_out, not from e: on load_breast_cancer 4 sampled e give
#: the noise scale of all 213 (docs/coupling.md, "Cost and scaling").
_SAMPLED_PAIRS = 8
#: ... with certified distances, whose later stages cost O(k D) per pair: 1. Two (the previous
#: default) gave the same grid point of the noise scale on breast cancer and on the adult
#: pipeline at 4,000 rows, one or two grid steps less noise (1-2%) on German credit and diabetes,
#: at 1.2-1.7x the CPU; the same CPU buys more rounds, which give more (docs/coupling.md,
#: "Cost and scaling").
_CERTIFIED_PAIRS = 1
#: Most values kept in memory for the whole (n, n_rounds, n_keep) array (1 GiB of float64).
_MAX_VALUES = 2**27


def estimate_swap_deltas(
    estimator,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    scale: ArrayLike,
    n_rounds: int = 1000,
    train_size: int | float | None = None,
    engine: str = "auto",
    pairs_per_target: int | str | None = None,
    summary_size: int = _SUMMARY_SIZE,
    refine: float = 0.05,
    polish: bool = False,
    certify: bool = True,
    params="auto",
    random_state=None,
    n_jobs: int | None = None,
    verbose: int = 0,
    fit_params: dict | None = None,
    tighten_for=None,
) -> SwapDeltas:
    r"""Draw whitened swap distances for every row of :math:`\mathcal{D}` (coupling bound).

    Parameters
    ----------
    estimator : estimator instance
        The learner :math:`\mathcal{A}`, unfitted; it must be deterministic given its data.
        Any ``random_state`` parameter that is not an integer is fixed to one seed (drawn
        from ``random_state``) shared by every fit.
    X : array_like or sparse matrix of shape (n_samples, n_features)
        The whole dataset :math:`\mathcal{D}` (not only :math:`\mathcal{D}_{train}`): every row
        is a target.
    y : array_like of shape (n_samples,) or (n_samples, n_outputs), default=None
        Targets, for supervised learners.
    scale : array_like of shape (n_params,) or (n_params, n_params)
        The shape of the Gaussian noise, fixed given :math:`\mathcal{D}` (never computed
        from :math:`\mathcal{D}_{train}`), in the layout of the parameter adapter. A vector
        :math:`w` (e.g. ``sigma`` from :func:`skmip.calibration.spread.moments.estimate_sigma`) means noise
        :math:`s\,w\odot z` and distances :math:`\|\Delta/w\|`; a coordinate with
        :math:`w_j = 0` gets no noise, so a swap that changes it gives ``inf``. A square
        invertible matrix :math:`L` means noise :math:`s\,Lz` (covariance
        :math:`s^2LL^\top`, e.g. the Cholesky factor of the covariance of the parameters
        over random subsets) and distances :math:`\|L^{-1}\Delta\|`.
    n_rounds : int, default=1000
        Independent rounds; each gives every row one draw of :math:`D_{out}`. The
        confidence term of :func:`skmip.bounds.coupling_noise_scale` falls like
        :math:`\ln(2n/\alpha)/n_{rounds}`; see the Notes for what is enough.
    train_size : int or float, default=None
        :math:`k`: an integer number of rows, or a fraction of :math:`n` (rounded).
        ``None`` means :math:`\lfloor n/2 \rfloor`, Definition 1's choice.
    engine : {"auto", "refit", "newton", "influence", "exact", "closed_form"}, default="auto"
        How :math:`\mathcal{A}(D_{in})` is obtained (module docstring); ``"closed_form"``
        is exact for a :class:`~skmip.release.statistic.Statistic` that is a mean of per-row
        features (:func:`statistic_swap_deltas`; ``n_rounds`` is then unused). ``"auto"``:
        ``"newton"`` if the registered smooth loss is generalised-linear, else
        ``"influence"`` if one is registered, else ``"refit"``.
    pairs_per_target : int, "all" or None, default=None
        Values of :math:`e` per target and round: an integer draws that many independently
        and uniformly in :math:`D_{out}` (with replacement: each value is an unbiased draw of
        the average over :math:`e`); ``"all"`` uses every :math:`e` (summarised as in the
        module docstring; :math:`O(k(n-k))` pairs a round, so for small data only).
        ``None``: 1 for ``"refit"``, 8 for the influence engines (linear in :math:`n`; the
        spread of a target's round averages comes from :math:`D_{out}`, not from :math:`e`),
        1 for certified ``"newton"`` distances (their certificates cost far more per pair).
    summary_size : int, default=4
        Values kept per target and round: the sorted-block means of its distances (an upper
        bound by Jensen, module docstring). Lowered further, down to 1 (the mean), so that
        the whole array stays within 1 GiB.
    refine : float, default=0.05
        ``"newton"`` engine, one-block models with one margin per row (not the multinomial
        one): the fraction of each fit's targets with the largest distances (at most 4 a fit) whose own addition is solved to convergence
        (damped Newton or chord steps on the objective of :math:`H + \{x^*\}`) before each
        :math:`e`'s removal is linearised at that solution. These outlying targets decide
        the maximum over targets, and their addition moves the fit furthest from where the
        one-step model was expanded.
    polish : bool, default=False
        ``"newton"`` and ``"influence"`` engines: carry every fit to the exact minimiser of
        the registered objective (:func:`polish_to_minimiser`) instead of requiring the
        solver to be converged. The learner analysed is then that minimiser, so the model
        released with these distances must be polished too (``result.polished``).
    params : "auto", list of str, or ParamAdapter, default="auto"
        How parameters are read (:func:`skmip.params.get_adapter`).
    random_state : None, int or Generator, default=None
        Seeds the permutations and the sampled :math:`e`; per-round seeds are drawn up
        front, so results do not depend on ``n_jobs``.
    n_jobs : int, default=None
        Rounds run in parallel through joblib (any joblib backend, e.g. dask).
    verbose : int, default=0
        Progress messages.
    fit_params : dict, default=None
        Passed to ``fit``; arrays with one entry per row (``sample_weight``) are subset with
        the rows.
    tighten_for : skmip.bounds.coupling_binding.BindingTargets, optional
        Certified ``"newton"`` distances: take the certificates past the closed form only
        for the targets that can decide the noise scales these calibrations will give
        (:func:`~skmip.calibration.swap.lazy.settled_rounds`); the others keep their
        closed-form upper bounds. Those scales are then exactly the ones of full
        certification (docs/coupling.md, *Certify only what can move the printed number*).
        Used where it pays (:func:`~skmip.calibration.swap.lazy.pays`: large fits, or from
        ``lazy.MIN_ROWS`` training rows on), and not when the rounds are stored in half
        precision (very large ``n``). Each pass keeps its fits for the next
        (:mod:`~skmip.calibration.swap.kept`).

    Returns
    -------
    SwapDeltas
        ``distances`` of shape ``(n_samples, n_rounds, n_pairs)`` (for ``"exact"``:
        ``(n_samples, C(n-1, k), k)``), ``n_train``, ``engine`` and ``pairs``.

    Raises
    ------
    ValueError
        On invalid arguments, a ``scale`` of the wrong length, a fit that leaves the
        modelled objective (influence engines), or too many subsets for ``"exact"``.
    TypeError
        If ``engine`` names an influence engine for an estimator with no registered loss.

    Notes
    -----
    *What is enough.* With :math:`m` rounds and :math:`n` targets at confidence
    :math:`1-\alpha` the Maurer-Pontil range term is :math:`7\cdot\tfrac12\ln(2n/\alpha)
    /(3(m-1))`: for :math:`n = 569`, :math:`\alpha = 0.05` it is 0.012 at :math:`m = 1000`
    and 0.047 at :math:`m = 250`, to be compared with eta. The influence engines make
    :math:`m = 1000` cheap (two fits per round); the refit engine costs
    :math:`n \times` ``pairs_per_target`` fits per round and is meant for small problems or
    for validating the others.

    *Exactness.* ``"refit"`` and ``"exact"`` measure the learner itself. ``"newton"`` and
    ``"influence"`` assume that the learner returns the exact minimiser of the registered
    objective and approximate the swapped fit; ``benchmarks/bench_influence.py`` measures
    their error against refits. Each fit's distance to that minimiser (its whitened Newton
    step) must be below 1% of half the median swap distance, else a ``ValueError`` asks for
    a tighter solver tolerance: scikit-learn's default ``LogisticRegression(tol=1e-4)``
    stops about 0.06 w from the minimiser on standardized ``load_breast_cancer``, as far as
    a typical swap moves it, and the learner whose swaps are measured must be the learner
    that is released.

    References
    ----------
    Izzo et al., Definition 1 and Proposition 2; Koh & Liang (2017) for influence functions.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3)); y = X @ [1.0, -1.0, 0.5] + rng.normal(size=40)
    >>> res = estimate_swap_deltas(Ridge(alpha=1.0), X, y, scale=np.full(4, 0.1),
    ...                            n_rounds=20, random_state=0)
    >>> res
    SwapDeltas(n_samples=40, n_train=20, n_rounds=20, n_pairs=4, engine='newton', pairs='sampled')
    >>> bool(np.all(res.distances > 0))
    True
    """
    check_option(_OWNER, "engine", engine, _ENGINES)
    fit_params = {} if fit_params is None else dict(fit_params)
    n = n_rows(X)
    if y is not None and n_rows(y) != n:
        raise ValueError(f"{_OWNER}: X has {n} rows but y has {n_rows(y)}.")
    if n < 2:
        raise ValueError(f"{_OWNER}: the dataset needs at least 2 rows; got {n}.")
    k = _resolve_k(_OWNER, train_size, n)
    n_rounds = check_int(_OWNER, "n_rounds", n_rounds, 1, None)
    summary_size = check_int(_OWNER, "summary_size", summary_size, 1, None)
    refine = check_interval(_OWNER, "refine", refine, 0.0, 1.0, why="It is a fraction of the targets of each fit.")
    whitener = _Whitener(scale)

    with augmented_design_cache():  # one augmented copy of X for all the fits (losses.py)
        return _estimate(estimator, X, y, n, k, n_rounds, summary_size, refine, scale, whitener, engine,
                         pairs_per_target, polish, certify, params, random_state, n_jobs, verbose, fit_params,
                         tighten_for)


def _estimate(estimator, X, y, n, k, n_rounds, summary_size, refine, scale, whitener, engine, pairs_per_target,
              polish, certify, params, random_state, n_jobs, verbose, fit_params, tighten_for=None):
    rng = resolve_rng(random_state)
    estimator = fix_inner_random_state(clone(estimator), draw_seed(rng))
    adapter = get_adapter(estimator, params)
    if engine == "closed_form":  # a mean of per-row features: exact, no rounds (statistic.py)
        return statistic_swap_deltas(_statistic_features(estimator, adapter, X), scale=scale, train_size=k)
    loss = get_smooth_loss(estimator)
    engine = _resolve_engine(estimator, loss, engine)

    seeds = [draw_seed(rng) for _ in range(n_rounds)]
    # One probe fit validates the scale's length (and, for the influence engines, the
    # objective) before the budget is spent.
    probe_rows = np.sort(rng.permutation(n)[:k])
    # A classifier fitted on rows lacking a class has another layout: the probe holds every
    # class (redrawn if not), and the rounds score 0 the pairs of a set lacking one (class_cover).
    cover = class_cover(estimator, y)
    if cover is not None and not cover.holds_all(probe_rows):
        probe_rows = cover.covering_seed(draw_seed(rng), rows_by_permutation, n, k)[1]
    probe, theta0 = _fit_vector(estimator, adapter, X, y, probe_rows, fit_params, n)
    _check_scale_size(whitener, theta0)
    Xd = yd = sw = None
    multi = False  # K margins per row: every pair certified in full (no lazy passes, multi_certify.py)
    if engine != "refit" and engine != "exact":
        Xd = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
        yd = None if y is None else np.asarray(y)
        sw = fit_params.get("sample_weight")
        engine, certify, multi = _model_engine(estimator, loss, adapter, probe, probe_rows, theta0, Xd, yd, sw,
                                               engine, polish, certify, whitener)

    if engine == "exact":
        if pairs_per_target not in (None, "all"):
            raise ValueError(
                f"{_OWNER}: engine='exact' uses every pair; got pairs_per_target={pairs_per_target!r}."
            )
        dist = _exact_distances(estimator, adapter, X, y, fit_params, n, k, whitener, n_jobs, verbose, cover)
        return SwapDeltas(dist, k, "exact", "exhaustive")

    all_pairs, p = _pairs_per_target(engine, pairs_per_target, certify, n, k)
    # Values kept per target and round: the Jensen summary of the round's p distances
    # (module docstring), within a memory budget for the whole (n, n_rounds, .) array.
    n_keep = max(1, min(p, summary_size, _MAX_VALUES // (n * n_rounds)))
    # A large array is kept in half precision, every value rounded up (compact.py).
    compact = n * n_rounds * n_keep > COMPACT_VALUES

    if verbose:
        print(f"{_OWNER}: {n_rounds} rounds, engine={engine!r}, k={k} of n={n}, "
              f"{'all' if all_pairs else p} pair(s) per target, {n_keep} value(s) kept", flush=True)
    if engine == "refit":
        rounds = run_rounds(
            lambda chunk: delayed(_refit_rounds)(
                chunk, estimator, adapter, X, y, fit_params, n, k, p, whitener, all_pairs, n_keep, cover=cover,
            ),
            seeds, n_jobs, verbose, compact=compact, values_per_round=n * n_keep,
        )
        return SwapDeltas(rounds, k, engine, "all" if all_pairs else "sampled")
    if polish:
        fitter = MinimiserFits(estimator, adapter, X, yd, fit_params, loss, Xd, probe, probe_rows)
    else:
        fitter = SolverFits(estimator, adapter, X, y, fit_params)
    del probe, theta0

    keep = _lazy_store(certify, tighten_for, engine, multi, compact, k, whitener.size)

    def run(cert, steer=False):
        return run_rounds(
            lambda chunk: delayed(_influence_rounds)(
                chunk, fitter, loss, Xd, yd, sw, n, k, p, whitener, all_pairs, n_keep,
                engine == "newton", 0.0 if steer else refine, cert, cover, keep,
            ),
            # Threads: the rounds are array arithmetic that releases the GIL, and threads share
            # X and the fits' design instead of copying them into every worker (memory at large n).
            seeds, n_jobs, verbose, compact=compact, values_per_round=n * n_keep, prefer="threads",
        )

    rounds = run(certify) if keep is None else settled_rounds(run, tighten_for, k / n, n)
    return SwapDeltas(rounds, k, engine, "all" if all_pairs else "sampled", polished=polish,
                      certified=bool(certify))


def _lazy_store(certify, tighten_for, engine, multi, compact, k, n_params):
    """The store of lazy certification's passes (:class:`~.kept.KeptBatches`: each pass keeps
    its fits, their closed form and the pairs it tightened for the next) where the passes pay
    (:func:`~.lazy.pays`), else ``None``: every pair certified in one pass (always for the
    multinomial rounds and for rounds in half precision)."""
    lazy = bool(certify) and tighten_for is not None and engine == "newton" and not (multi or compact)
    return KeptBatches() if lazy and lazy_pays(k, n_params) else None


def _resolve_engine(estimator, loss, engine):
    """``engine`` checked against the registered ``loss``; ``"auto"`` becomes ``"refit"``
    without one, else ``"influence?"`` (settled by :func:`_model_engine` on the probe fit)."""
    if engine in ("newton", "influence") and loss is None:
        raise TypeError(
            f"{_OWNER}: engine={engine!r} needs the objective of {type(estimator).__name__}; "
            "none is registered. Use engine='refit', or register one with "
            "skmip.calibration.swap.register_smooth_loss."
        )
    if engine == "auto":
        engine = "refit" if loss is None else "influence?"
    if engine in ("newton", "influence", "influence?"):
        loss.check(estimator)
    return engine


def _model_engine(estimator, loss, adapter, probe, probe_rows, theta0, Xd, yd, sw, engine, polish, certify,
                  whitener):
    """``(engine, certify, multi)`` of the influence engines, read from the loss's blocks at the
    probe fit: ``"newton"`` where every block is generalised-linear (or one multinomial block,
    ``multi``), ``"influence"`` otherwise; certified only where the certificate applies
    (polished fits)."""
    if polish:
        theta0 = _polish(probe, loss, adapter, Xd, yd, probe_rows, sw)
    blocks = loss.blocks(probe, Xd, yd, probe_rows, sw)
    _check_layout(blocks, theta0, estimator)
    # Multinomial blocks (K margins per row, multinomial.py): "newton" too.
    multi = len(blocks) == 1 and blocks[0].multi is not None
    glm = multi or all(b.glm is not None for b in blocks)
    # The certificate bounds distances between exact minimisers: the fits (and the
    # release) must be carried there (polish).
    certify = bool(certify) and polish and certifiable(
        blocks, engine in ("newton", "influence?") and glm, whitener)
    if engine == "influence?":
        engine = "newton" if glm else "influence"
    elif engine == "newton" and not glm:
        raise ValueError(
            f"{_OWNER}: engine='newton' needs a loss whose rows each depend on one margin "
            "(generalised-linear) or on one margin per class (multinomial), which this "
            f"{type(estimator).__name__}'s registered loss does not declare. Use "
            "engine='influence' (first order) or 'refit'."
        )
    return engine, certify, multi


def _pairs_per_target(engine, pairs_per_target, certify, n, k):
    """``(all_pairs, p)``: every pair of D_out, or ``p`` sampled pairs per target and round
    (the engine's default when ``pairs_per_target`` is None)."""
    if pairs_per_target is None:
        if engine == "refit":
            return False, 1
        if certify and engine == "newton":
            return False, min(_CERTIFIED_PAIRS, k)
        return False, min(_SAMPLED_PAIRS, k)
    if pairs_per_target == "all":
        return True, k
    return False, check_int(_OWNER, "pairs_per_target", pairs_per_target, 1, k,
                            why=f"e is drawn among the k={k} rows of D_out.")


def _check_layout(blocks, theta, estimator):
    index = np.concatenate([b.index for b in blocks])
    ok = index.size == np.unique(index).size and index.size and index.max() < theta.size
    if ok:
        ok = all(np.allclose(theta[b.index], b.theta, rtol=1e-10, atol=1e-12) for b in blocks)
    if not ok:
        raise ValueError(
            f"{_OWNER}: the smooth loss registered for {type(estimator).__name__} does not match "
            "the parameter adapter's layout (block indices or values differ); fix the loss's "
            "LossBlock.index, or use engine='refit'."
        )


def _check_scale_size(whitener, theta):
    if whitener.size != theta.size:
        raise ValueError(
            f"{_OWNER}: scale has {whitener.size} entries per axis but the estimator has "
            f"{theta.size} parameters in the adapter's layout; pass the sigma vector (or noise "
            "factor) of the same adapter."
        )
