r"""Swap sensitivity: how far one row moves a learner's output, for the coupling bound.

The coupling bound (:mod:`skmip.bounds.coupling`) needs, for every target row :math:`x^*` of
the dataset :math:`\mathcal{D}`, the law of the whitened swap distance

.. math::

    \delta = \big\|\big(\mathcal{A}(D_{out}) - \mathcal{A}(D_{out} - \{e\} + \{x^*\})\big) / w\big\|,

with :math:`D_{out}` uniform among the :math:`k`-subsets of :math:`\mathcal{D}\setminus\{x^*\}`
and :math:`e` uniform in :math:`D_{out}`. :func:`estimate_swap_deltas` draws it.

**Design of the draws.** A *round* draws one permutation :math:`\pi` of the :math:`n` rows,
cuts it into :math:`r = \lceil n/(n-k) \rceil` held-out blocks of :math:`h = n-k` consecutive
positions (the last one wraps around), and fits :math:`\mathcal{A}` on each complement
:math:`H_j = \mathcal{D} \setminus B_j` (:math:`k` rows). The row at position :math:`p` is a
target of block :math:`\lfloor p/h \rfloor`. Given its position, the other positions hold a
uniformly random permutation of :math:`\mathcal{D}\setminus\{x^*\}`, so its :math:`H_j` is
uniform among the :math:`k`-subsets without :math:`x^*`: exactly the coupling's
:math:`D_{out}`. Every row gets one draw per round, rounds are independent, and a round
costs :math:`r` fits (2 when :math:`k = n/2`).

**Engines.**

``"refit"``
    Any estimator: :math:`\mathcal{A}(D_{in})` is refitted for ``pairs_per_target`` random
    :math:`e` per target and round. Exact; costs :math:`n \times` ``pairs_per_target`` fits
    per round.
``"newton"``
    Generalised-linear losses (each row's loss a function of one margin
    :math:`\tilde x_i^\top\theta`: binary :class:`~sklearn.linear_model.LogisticRegression`,
    :class:`~sklearn.linear_model.Ridge`, :class:`~sklearn.linear_model.LinearRegression`,
    one block per output). Everything but the target is expanded to second order at
    :math:`\mathcal{A}(H)`, with :math:`e`'s gradient and curvature removed exactly; the
    target's loss is kept exact, which leaves one scalar equation per pair (see
    ``_pair_coefficients``). Exact for least squares; for logistic regression it is what
    keeps the error small on the outlying targets that decide the maximum (a plain Newton
    step overshoots there, because a badly fitted target has almost no curvature at
    :math:`\mathcal{A}(H)`). For the most exposed targets of each fit (``refine``, 5% by
    default) the target's addition is solved to convergence by Newton's method and only
    :math:`e`'s removal is linearised: these targets decide the maximum over targets, and
    on ``load_breast_cancer`` this brings the calibrated noise within 0.1% of the value
    exact refits give (``benchmarks/bench_influence.py``). Every :math:`(x^*, e)` pair of a
    round costs one fit plus :math:`O(k(n-k)D)` arithmetic.
``"influence"``
    The first-order influence function :math:`\mathcal{A}(H - e + x^*) - \mathcal{A}(H)
    \approx \mathbf{H}^{-1}(\nabla\ell_e - \nabla\ell_{x^*})` with the regularised Hessian of
    the objective on :math:`H` (for any registered smooth loss, e.g. multinomial logistic
    regression).
``"exact"``
    For tiny problems (:math:`\binom{n}{k} \le 20\,000`): fits every :math:`k`-subset and
    lists every :math:`(D_{out}, e)` pair; the means over the result are the exact
    expectations, and no confidence statement is needed.

**Keeping every pair at the cost of a few numbers.** With ``pairs_per_target="all"`` the
influence engines compute the distances to all :math:`k` rows :math:`e \in H_j` and store,
per target and round, the means of ``summary_size`` consecutive blocks of their sorted
values. Since :math:`t \mapsto 2\Phi(t/2s) - 1` is concave on :math:`t \ge 0`, Jensen's
inequality makes the average of the TV over each block at most the TV of the block's mean:
the stored summary *upper-bounds* the round's exact average over :math:`e` for every noise
scale at once, and is exact where the TV is linear (small distances).

Privacy hygiene: the result holds per-row sensitivities of the private data. It is an
intermediate for calibration, never something to release.

References
----------
Izzo et al., "Provable Membership Inference Privacy", Definition 1 and Proposition 2.
Koh, P. W., Liang, P. (2017). "Understanding Black-box Predictions via Influence
Functions", ICML (the first-order approximation).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike
from scipy import linalg, sparse
from sklearn.base import clone
from sklearn.utils.parallel import Parallel, delayed

from skmip._random import draw_seed, fix_inner_random_state, resolve_rng
from skmip._rows import fit_on_rows, n_rows
from skmip._threads import single_threaded_blas
from skmip._validation import check_int, check_interval, check_option
from skmip.params import get_adapter

__all__ = [
    "SwapDeltas",
    "estimate_swap_deltas",
    "polish_to_minimiser",
    "estimate_noise_factor",
    "LossBlock",
    "GLMTerms",
    "SmoothLoss",
    "register_smooth_loss",
    "get_smooth_loss",
]

_OWNER = "estimate_swap_deltas"
_ENGINES = ("auto", "refit", "newton", "influence", "exact")
#: Default number of sorted-block means kept per target and round with pairs_per_target="all".
_SUMMARY_SIZE = 4
#: Above this many (e, x*) pairs per fit, "auto" pairs switch from all pairs to a sample.
_ALL_PAIRS_MAX = 2**22
#: Sampled pairs per target and round when all pairs would be too many.
_SAMPLED_PAIRS = 16
#: Elements of one (e x targets) cross matrix computed at a time (memory cap).
_CHUNK_ELEMENTS = 2**20
#: Most subsets the exact engine fits.
_MAX_EXACT_FITS = 20_000
#: Largest solver error, relative to the median swap distance of a fit, that the influence
#: engines accept (they model the exact minimiser).
_SOLVER_RTOL = 1e-2


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, repr=False, eq=False)
class SwapDeltas:
    r"""Whitened swap distances, per target row of :math:`\mathcal{D}`.

    Attributes
    ----------
    distances : ndarray of shape (n_samples, n_rounds, n_pairs)
        ``distances[i, r]`` are the values of round ``r`` for target row ``i``: distances
        :math:`\|(\mathcal{A}(D_{out}) - \mathcal{A}(D_{in}))/w\|` for sampled :math:`e`, or
        the sorted-block summary of all of them (module docstring). Rounds are independent.
        ``inf`` marks a change in a coordinate whose scale is 0.
    n_train : int
        :math:`k`, the size of the training subsets.
    engine : str
        The engine that produced the distances (``"refit"``, ``"newton"``, ``"influence"``
        or ``"exact"``).
    pairs : str
        ``"sampled"`` (independent uniform :math:`e` per value, unbiased), ``"all"`` (the
        sorted-block summary, an upper bound for the average over every :math:`e`) or
        ``"exhaustive"`` (engine ``"exact"``: every :math:`(D_{out}, e)`; the mean over
        axes 1 and 2 *is* the expectation).
    polished : bool
        True when every fit was carried to the exact minimiser of the registered objective
        (:func:`polish_to_minimiser`): the distances then describe that minimiser, and the
        released model must be polished the same way.

    Notes
    -----
    Feed ``distances`` to :func:`skmip.bounds.coupling_noise_scale` with
    ``train_fraction=result.train_fraction``; use ``confidence=None`` only when
    ``result.exhaustive``. The object holds sensitivities of private rows: do not release it.

    Examples
    --------
    >>> from skmip.statistic import Statistic
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> res = estimate_swap_deltas(Statistic("mean"), X, scale=[1.0], engine="exact")
    >>> res.exhaustive, res.distances.shape   # C(3, 2) subsets D_out x k = 2 rows e
    (True, (4, 3, 2))
    >>> sorted(res.distances[0].ravel().tolist())  # |e - x*| / k for x* = 0, each e twice
    [0.5, 0.5, 1.0, 1.0, 1.5, 1.5]
    """

    distances: np.ndarray
    n_train: int
    engine: str
    pairs: str
    polished: bool = False

    @property
    def n_samples(self) -> int:
        """:math:`n`, the number of rows (and targets)."""
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
        """Whether the distances enumerate every :math:`(D_{out}, e)` (exact means)."""
        return self.pairs == "exhaustive"

    def __repr__(self):
        return (
            f"SwapDeltas(n_samples={self.n_samples}, n_train={self.n_train}, "
            f"n_rounds={self.n_rounds}, n_pairs={self.distances.shape[2]}, "
            f"engine={self.engine!r}, pairs={self.pairs!r})"
        )


# --------------------------------------------------------------------------- smooth losses


class GLMTerms(NamedTuple):
    r"""Generalised-linear structure of a block: row :math:`i`'s loss is :math:`\ell_i(u_i)`.

    With :math:`u_i = \tilde x_i^\top \theta` for a fixed feature vector :math:`\tilde x_i`
    (the row with a 1 appended for an intercept), row :math:`i`'s gradient is
    :math:`\ell_i'(u_i)\tilde x_i` and its Hessian :math:`\ell_i''(u_i)\tilde x_i\tilde x_i^\top`.
    This is what lets the ``"newton"`` engine keep the target's loss exact.

    Attributes
    ----------
    features : ndarray of shape (n_samples, D_b)
        :math:`\tilde x_i` in the block's coordinates.
    margins : ndarray of shape (n_samples,)
        :math:`u_i = \tilde x_i^\top\hat\theta_H` at the fit.
    dloss, d2loss : callable
        ``dloss(u, rows)`` and ``d2loss(u, rows)``: :math:`\ell'_{rows}(u)` and
        :math:`\ell''_{rows}(u) \ge 0`, elementwise; ``rows`` is an integer array that
        broadcasts against ``u`` (row-specific labels and weights are looked up with it).
    """

    features: np.ndarray
    margins: np.ndarray
    dloss: Callable
    d2loss: Callable


class LossBlock(NamedTuple):
    r"""One independent block of a smooth objective, evaluated at the fit on :math:`H`.

    The objective is :math:`F_H(\theta) = \sum_{i \in H} \ell_i(\theta) + R(\theta)`; a block
    is a set of coordinates on which it separates (one block for a binary logistic
    regression, one per output of a multi-output ridge).

    Attributes
    ----------
    index : ndarray of int, shape (D_b,)
        Positions of the block's coordinates in the adapter's parameter vector. Coordinates
        in no block are taken to be constant.
    theta : ndarray of shape (D_b,)
        :math:`\hat\theta_H` in the block's coordinates; checked against the adapter's
        vector at ``index``, which catches a layout mismatch.
    gradients : ndarray of shape (n_samples, D_b)
        :math:`\nabla\ell_i(\hat\theta_H)` for *every* row of :math:`\mathcal{D}`.
    hessian : ndarray of shape (D_b, D_b)
        :math:`\nabla^2 F_H(\hat\theta_H)`, positive definite.
    regularizer_gradient : ndarray of shape (D_b,)
        :math:`\nabla R(\hat\theta_H)`; with the gradients on :math:`H` it checks that the
        fit is (numerically) the minimiser of this objective.
    glm : GLMTerms or None
        The generalised-linear form, when the loss has one (enables ``"newton"``).
    """

    index: np.ndarray
    theta: np.ndarray
    gradients: np.ndarray
    hessian: np.ndarray
    regularizer_gradient: np.ndarray
    glm: GLMTerms | None = None


@runtime_checkable
class SmoothLoss(Protocol):
    """The objective an estimator minimises, for the influence engines.

    ``blocks(estimator, X, y, fit_rows, sample_weight)`` receives the estimator fitted on
    ``X[fit_rows]``, all rows of ``X`` (dense float array) and ``y``, and returns a list of
    :class:`LossBlock`. ``check(estimator)`` raises ``ValueError`` (saying what to change)
    if the estimator's settings leave the modelled objective.
    """

    def check(self, estimator) -> None: ...

    def blocks(self, estimator, X, y, fit_rows, sample_weight) -> list[LossBlock]: ...


def _augment(X, fit_intercept):
    return np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X


def _weights(n, sample_weight):
    return np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)


def _expit(u):
    return 0.5 * (1.0 + np.tanh(0.5 * u))  # overflow-free logistic function


class _LogisticLoss:
    r"""scikit-learn's :class:`~sklearn.linear_model.LogisticRegression` objective.

    :math:`F(\theta) = C\sum_i s_i\,\ell_i(\theta) + \tfrac12\|w\|^2` with :math:`\ell` the
    log-loss (binary: ``HalfBinomialLoss``; multinomial: ``HalfMultinomialLoss``), the
    intercept unpenalised and :math:`s_i` the sample weight times the class weight
    (scikit-learn 1.9, ``_logistic_regression_path``: its solvers minimise the mean loss
    plus :math:`\|w\|^2/(2C\sum_i s_i)`, the same minimiser). ``C=inf`` drops the penalty.
    The binary model is generalised-linear; the multinomial one is not (first order only).
    """

    def check(self, est):
        if est.solver == "liblinear":
            raise ValueError(
                f"{_OWNER}: LogisticRegression(solver='liblinear') penalises the intercept "
                "(intercept_scaling), an objective the influence engines do not model. Use "
                "solver='lbfgs' or 'newton-cholesky', or engine='refit'."
            )
        penalty = getattr(est, "penalty", "deprecated")
        l1 = getattr(est, "l1_ratio", 0.0)
        smooth = penalty is None or (penalty in ("deprecated", "l2") and (l1 in (0, None) or est.C == np.inf))
        if not smooth:
            raise ValueError(
                f"{_OWNER}: LogisticRegression with an L1 part (l1_ratio={l1!r}, "
                f"penalty={penalty!r}) is not smooth; the influence engines need l1_ratio=0. "
                "Use engine='refit'."
            )
        if isinstance(est.class_weight, str):
            raise ValueError(
                f"{_OWNER}: class_weight={est.class_weight!r} makes the weights depend on the "
                "class counts of each subset, which a swap changes; pass a dict of class "
                "weights or use engine='refit'."
            )

    def blocks(self, est, X, y, fit_rows, sample_weight):
        classes = est.classes_
        n, d = X.shape
        s = _weights(n, sample_weight)
        if est.class_weight is not None:
            cw = np.array([est.class_weight.get(c, 1.0) for c in classes])
            s = s * cw[np.searchsorted(classes, y)]
        penalised = getattr(est, "penalty", "deprecated") is not None and np.isfinite(est.C)
        # Without a penalty the minimiser of C * sum(loss) does not depend on C.
        cs = (float(est.C) if penalised else 1.0) * s
        fit_intercept = bool(est.fit_intercept)
        Xa = _augment(X, fit_intercept)
        da = Xa.shape[1]
        coef = np.atleast_2d(est.coef_)
        intercept = np.asarray(est.intercept_, dtype=np.float64).ravel()
        n_coef = coef.size  # adapter layout: coef_.ravel() (class-major), then intercept_
        reg = np.zeros(da)
        if penalised:
            reg[:d] = 1.0
        if coef.shape[0] == 1:  # binary: one row of coefficients, for classes_[1]
            theta = np.r_[coef[0], intercept] if fit_intercept else coef[0]
            u0 = Xa @ theta
            t = (y == classes[1]).astype(np.float64)

            def dloss(u, rows):
                return cs[rows] * (_expit(u) - t[rows])

            def d2loss(u, rows):
                p = _expit(u)
                return cs[rows] * p * (1.0 - p)

            all_rows = np.arange(n)
            grads = dloss(u0, all_rows)[:, None] * Xa
            curv = d2loss(u0[fit_rows], fit_rows)
            hess = (Xa[fit_rows].T * curv) @ Xa[fit_rows] + np.diag(reg)
            index = np.arange(d) if not fit_intercept else np.r_[np.arange(d), n_coef]
            return [LossBlock(index, theta, grads, hess, reg * theta, GLMTerms(Xa, u0, dloss, d2loss))]
        # Multinomial: theta[c] = (w_c, b_c); layout positions c*d + f and n_coef + c.
        K = coef.shape[0]
        Theta = np.hstack([coef, intercept[:, None]]) if fit_intercept else coef
        Z = Xa @ Theta.T
        Z -= Z.max(axis=1, keepdims=True)
        P = np.exp(Z)
        P /= P.sum(axis=1, keepdims=True)
        T = (y[:, None] == classes[None, :]).astype(np.float64)
        R = cs[:, None] * (P - T)  # (n, K)
        grads = (R[:, :, None] * Xa[:, None, :]).reshape(n, K * da)  # class-major (c, f)
        Pf, Xf, sf = P[fit_rows], Xa[fit_rows], cs[fit_rows]
        # Hessian of C s_i * softmax loss: (diag p - p p^T) kron x x^T, class-major blocks.
        hess = np.empty((K, da, K, da))
        for a in range(K):
            for b in range(a, K):
                coeff = sf * Pf[:, a] * (float(a == b) - Pf[:, b])
                block = (Xf.T * coeff) @ Xf
                hess[a, :, b, :] = block
                hess[b, :, a, :] = block.T
        hess = hess.reshape(K * da, K * da) + np.diag(np.tile(reg, K))
        # Softmax is invariant to adding one vector to every class: along sum_c e_c (x) u for
        # an unpenalised coordinate u the objective is flat. The gradients have no component
        # there, so the solver never moves along it; adding the projector onto those
        # directions makes the Hessian invertible without changing the solution for such
        # right-hand sides.
        for f in np.flatnonzero(reg == 0):
            u = np.zeros(K * da)
            u[f::da] = 1.0 / math.sqrt(K)
            hess += np.outer(u, u)
        index = np.empty(K * da, dtype=np.intp)
        for c in range(K):
            index[c * da : c * da + d] = c * d + np.arange(d)
            if fit_intercept:
                index[c * da + d] = n_coef + c
        return [LossBlock(index, Theta.ravel(), grads, hess, np.tile(reg, K) * Theta.ravel())]


class _LeastSquaresLoss:
    r"""Least squares: :class:`~sklearn.linear_model.Ridge` and :class:`~sklearn.linear_model.LinearRegression`.

    :math:`F(\theta) = \sum_i s_i (y_i - x_i^\top w - b)^2 + \alpha\|w\|^2` per output, the
    intercept unpenalised (scikit-learn's documented Ridge objective; ``alpha = 0`` for
    LinearRegression). One generalised-linear block per output; quadratic, so the
    ``"newton"`` engine is exact.
    """

    def check(self, est):
        if getattr(est, "positive", False):
            raise ValueError(
                f"{_OWNER}: {type(est).__name__}(positive=True) is a constrained problem; the "
                "influence engines need an unconstrained smooth objective. Use engine='refit'."
            )

    def blocks(self, est, X, y, fit_rows, sample_weight):
        n, d = X.shape
        s = _weights(n, sample_weight)
        fit_intercept = bool(est.fit_intercept)
        Xa = _augment(X, fit_intercept)
        da = Xa.shape[1]
        coef = np.atleast_2d(est.coef_)
        n_out = coef.shape[0]
        Y = np.asarray(y, dtype=np.float64).reshape(n, -1)
        intercept = np.broadcast_to(np.asarray(est.intercept_, dtype=np.float64).ravel(), (n_out,))
        alpha = np.broadcast_to(np.asarray(getattr(est, "alpha", 0.0), dtype=np.float64).ravel(), (n_out,))
        n_coef = coef.size
        gram = (Xa[fit_rows].T * (2.0 * s[fit_rows])) @ Xa[fit_rows]
        out = []
        for t in range(n_out):
            theta = np.r_[coef[t], intercept[t]] if fit_intercept else coef[t]
            u0 = Xa @ theta
            yt = Y[:, t]

            def dloss(u, rows, yt=yt):
                return -2.0 * s[rows] * (yt[rows] - u)

            def d2loss(u, rows):
                return np.broadcast_to(2.0 * s[rows], np.shape(u))

            grads = dloss(u0, np.arange(n))[:, None] * Xa
            reg = np.zeros(da)
            reg[:d] = 2.0 * alpha[t]
            index = t * d + np.arange(d)
            if fit_intercept:
                index = np.r_[index, n_coef + t]
            out.append(LossBlock(index, theta, grads, gram + np.diag(reg), reg * theta, GLMTerms(Xa, u0, dloss, d2loss)))
        return out


def _is_logistic(est):
    from sklearn.linear_model import LogisticRegression

    return type(est) is LogisticRegression


def _is_least_squares(est):
    from sklearn.linear_model import LinearRegression, Ridge

    return type(est) in (Ridge, LinearRegression)


# Registry: (predicate, factory) pairs, most recently registered first.
_LOSSES: list[tuple[Callable[[object], bool], Callable[[object], SmoothLoss]]] = [
    (_is_logistic, lambda est: _LogisticLoss()),
    (_is_least_squares, lambda est: _LeastSquaresLoss()),
]


def register_smooth_loss(predicate, factory) -> Callable:
    r"""Teach the influence engines the objective of an estimator type.

    Parameters
    ----------
    predicate : type or callable
        A class (matched exactly, since a subclass may change the objective) or
        ``callable(estimator) -> bool``.
    factory : callable
        ``factory(estimator) -> SmoothLoss``.

    Returns
    -------
    callable
        ``factory``, unchanged.

    Raises
    ------
    TypeError
        If ``factory`` is not callable.

    Notes
    -----
    The objective must be the one the estimator minimises *exactly* (scaling included:
    the Hessian and the gradients must use the same one), smooth and strictly convex at
    the fit, with a quadratic regulariser. Each fit is checked against the declared
    objective: the Newton step :math:`\mathbf{H}^{-1}\nabla F_H(\hat\theta_H)`, whitened,
    must be below 1% of half the median swap distance, which catches a wrong scaling and a
    solver stopped early; the blocks' ``index`` and ``theta`` are checked against the
    parameter adapter. Blocks with :class:`GLMTerms` enable the ``"newton"`` engine, the
    others get the first-order ``"influence"`` engine. Registered entries take precedence
    over the built-in ones.

    References
    ----------
    Koh & Liang (2017) for the influence function the ``"influence"`` engine uses.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> class MyRidge(Ridge):
    ...     pass
    >>> get_smooth_loss(MyRidge()) is None  # a subclass is not trusted by default
    True
    >>> _ = register_smooth_loss(MyRidge, lambda est: get_smooth_loss(Ridge()))
    >>> get_smooth_loss(MyRidge()) is not None
    True
    >>> _ = _LOSSES.pop(0)  # undo, for the doctest
    """
    if not callable(factory):
        raise TypeError(f"register_smooth_loss: factory must be callable; got {factory!r}.")
    if isinstance(predicate, type):
        cls = predicate
        predicate = lambda est, cls=cls: type(est) is cls  # noqa: E731
    _LOSSES.insert(0, (predicate, factory))
    return factory


def get_smooth_loss(estimator) -> SmoothLoss | None:
    """The registered :class:`SmoothLoss` for ``estimator``, or ``None``.

    Parameters
    ----------
    estimator : estimator instance

    Returns
    -------
    SmoothLoss or None
        Built in: scikit-learn's ``LogisticRegression`` (binary: generalised-linear;
        multinomial: first order only), ``Ridge`` and ``LinearRegression`` (exact classes,
        not subclasses).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> get_smooth_loss(LogisticRegression()) is not None, get_smooth_loss(DecisionTreeClassifier())
    (True, None)
    """
    for predicate, factory in _LOSSES:
        if predicate(estimator):
            return factory(estimator)
    return None


def _fit_vector(estimator, adapter, X, y, rows, fit_params, n):
    """Fit a clone on ``rows`` (sorted) and return (fitted, parameter vector)."""
    fitted = fit_on_rows(estimator, X, y, rows, fit_params)
    adapter.canonicalize(fitted)
    return fitted, np.asarray(adapter.get_vector(fitted), dtype=np.float64).ravel()


def _polish(fitted, loss, adapter, Xd, y, rows, sample_weight, max_iter=50, rtol=1e-13):
    """Newton's method on the registered objective from the solver's output, in place.

    Returns the polished parameter vector. Newton's method converges quadratically from a
    point as close as a solver's output, so a handful of steps reach machine precision --
    that of the estimator's own storage (float32 parameters stall near 1e-7; the steps then
    stop shrinking, which is where we stop).
    """
    theta = np.asarray(adapter.get_vector(fitted), dtype=np.float64).ravel()
    previous = np.inf
    for _ in range(max_iter):
        step = np.zeros_like(theta)
        for b in loss.blocks(fitted, Xd, y, rows, sample_weight):
            step[b.index] = _solver_step(b, _factor(b), rows)
        size, scale = np.linalg.norm(step), 1.0 + np.linalg.norm(theta)
        if size <= rtol * scale or (size >= 0.5 * previous and size <= 1e-5 * scale):
            return np.asarray(adapter.get_vector(fitted), dtype=np.float64).ravel()
        theta = theta - step
        adapter.set_vector(fitted, theta)
        previous = size
    raise ValueError(
        f"{_OWNER}: Newton's method on the registered objective of {type(fitted).__name__} did "
        f"not converge in {max_iter} steps from the solver's output; check the estimator "
        "minimises that objective, or use engine='refit'."
    )


def polish_to_minimiser(fitted, X, y=None, *, sample_weight=None, params="auto"):
    r"""Carry a fitted smooth convex model to the exact minimiser of its objective, in place.

    A solver stops at a tolerance (``LogisticRegression``'s default ``tol=1e-4``), so its
    output is the minimiser plus an error that depends on the data. The ``"newton"`` and
    ``"influence"`` engines of :func:`estimate_swap_deltas` describe the exact minimiser;
    polishing every fit they make, and the released fit, makes the learner *be* that
    minimiser, so the engines' model is the algorithm. Newton steps on the registered
    objective (:func:`get_smooth_loss`) from the solver's output converge quadratically.

    Parameters
    ----------
    fitted : estimator instance
        A fitted estimator with a registered smooth loss.
    X : array_like of shape (n_samples, n_features)
        The rows it was fitted on.
    y : array_like, default=None
        Their targets.
    sample_weight : array_like, default=None
        The weights it was fitted with.
    params : "auto", list of str, or ParamAdapter, default="auto"
        How parameters are read and written.

    Returns
    -------
    estimator
        ``fitted``, its parameters now the exact minimiser (to ~1e-13 relative).

    Raises
    ------
    TypeError
        If no smooth loss is registered for the estimator.
    ValueError
        If Newton's method does not converge (the estimator minimises another objective).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> rough = LogisticRegression(C=0.1, tol=1e-2).fit(X, y)
    >>> exact = LogisticRegression(C=0.1, solver="newton-cholesky", tol=1e-12).fit(X, y)
    >>> bool(abs(polish_to_minimiser(rough, X, y).coef_ - exact.coef_).max() < 1e-9)
    True
    """
    loss = get_smooth_loss(fitted)
    if loss is None:
        raise TypeError(
            f"polish_to_minimiser: no smooth loss is registered for {type(fitted).__name__}; "
            "register one with skmip.sensitivity.register_smooth_loss."
        )
    adapter = get_adapter(fitted, params)
    Xd = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
    rows = np.arange(Xd.shape[0])
    _polish(fitted, loss, adapter, Xd, None if y is None else np.asarray(y), rows, sample_weight)
    return fitted


class _Whitener:
    r"""Maps parameter changes to the noise's whitened coordinates.

    A vector ``scale`` :math:`w` means noise :math:`s\,w \odot z` and whitening
    :math:`\Delta / w`; a coordinate with :math:`w_j = 0` gets no noise, so a change there is
    seen exactly (distance ``inf``). A square matrix :math:`L` means noise :math:`s L z`
    (covariance :math:`s^2 LL^\top`) and whitening :math:`L^{-1}\Delta`.
    """

    def __init__(self, scale):
        arr = np.asarray(scale, dtype=np.float64)
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{_OWNER}: scale must be finite; got {int((~np.isfinite(arr)).sum())} non-finite entries.")
        if arr.ndim == 1:
            if (arr < 0).any():
                raise ValueError(f"{_OWNER}: a vector scale (the noise shape w) must be >= 0; got {arr.min()!r}.")
            self.diagonal = True
            self.zero = arr == 0
            self.inv = np.where(self.zero, 0.0, 1.0 / np.where(self.zero, 1.0, arr))
            self.size = arr.size
        elif arr.ndim == 2 and arr.shape[0] == arr.shape[1]:
            self.diagonal = False
            self.size = arr.shape[0]
            self.zero = np.zeros(self.size, dtype=bool)
            try:
                if np.allclose(arr, np.tril(arr)):
                    self.linv = linalg.solve_triangular(arr, np.eye(self.size), lower=True)
                else:
                    self.linv = linalg.inv(arr)
            except (linalg.LinAlgError, ValueError):
                self.linv = None
            if self.linv is None or not np.all(np.isfinite(self.linv)) or np.linalg.cond(arr) > 1e12:
                raise ValueError(
                    f"{_OWNER}: a matrix scale L (noise s L z) must be invertible; got a singular "
                    "or ill-conditioned one. A coordinate that never changes (e.g. an intercept "
                    "fitted with fit_intercept=False) can be given any positive scale."
                )
        else:
            raise ValueError(
                f"{_OWNER}: scale must be a vector w of shape (n_params,) or a square matrix L of "
                f"shape (n_params, n_params); got shape {arr.shape}."
            )

    def norms(self, diff):
        """Whitened norms of the rows of ``diff`` (shape (..., D)); ``inf`` where a zero-scale
        coordinate changed."""
        if not self.diagonal:
            return np.linalg.norm(diff @ self.linv.T, axis=-1)
        out = np.linalg.norm(diff * self.inv, axis=-1)
        if self.zero.any():
            out = np.where((diff[..., self.zero] != 0).any(axis=-1), np.inf, out)
        return out

    def apply(self, V, index):
        """Whiten rows of ``V`` given in the coordinates ``index`` of one block."""
        if self.diagonal:
            return V * self.inv[index]  # blocks stay in their own (disjoint) coordinates
        return V @ self.linv[:, index].T  # the full whitened space couples the blocks

    def raw(self, V, index):
        """The rows' values on zero-scale coordinates (none for a matrix scale)."""
        return V[:, self.zero[index]] if self.diagonal else V[:, :0]


def _round_design(seed, n, k):
    """Permutation, held-out blocks and block assignment of one round (module docstring)."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    h = n - k
    r = -(-n // h)
    blocks = [perm[(j * h + np.arange(h)) % n] for j in range(r)]
    owner = np.empty(n, dtype=np.intp)
    owner[perm] = np.minimum(np.arange(n) // h, r - 1)
    fit_sets = []
    for block in blocks:
        keep = np.ones(n, dtype=bool)
        keep[block] = False
        fit_sets.append(np.flatnonzero(keep))
    return rng, fit_sets, owner


def _jensen_summary(values, size):
    r"""Sorted-block means of each row of ``values`` (shape (T, k)) -> (T, size).

    Block ``j`` averages the empirical quantile function over ``((j-1)/size, j/size]``
    (fractional weights at the edges), so every block has weight ``1/size`` exactly and,
    for a concave non-decreasing ``g``, ``mean(g(values)) <= mean(g(summary))``.
    """
    T, k = values.shape
    if size >= k:
        return np.sort(values, axis=1)
    v = np.sort(values, axis=1)
    finite = np.where(np.isfinite(v), v, 0.0)
    csum = np.concatenate([np.zeros((T, 1)), np.cumsum(finite, axis=1)], axis=1)
    edges = np.arange(size + 1) * (k / size)  # positions in units of rows
    lo_i = np.floor(edges).astype(np.intp)
    frac = edges - lo_i
    # integral of the quantile function from 0 to edge, times k
    idx = np.minimum(lo_i, k - 1)
    integ = csum[:, lo_i] + frac * finite[:, idx]
    out = (integ[:, 1:] - integ[:, :-1]) * (size / k)
    # A block that contains any infinite value (with positive weight) has an infinite mean.
    n_inf = np.isinf(v).sum(axis=1)  # infinities sit at the end of each sorted row
    first_inf = k - n_inf
    out[edges[None, 1:] > first_inf[:, None]] = np.inf
    return out


# --------------------------------------------------------------------------- engines


def _refit_round(estimator, adapter, X, y, fit_params, n, k, seed, p, whitener, all_pairs,
                 summary_size):
    rng, fit_sets, owner = _round_design(seed, n, k)
    out = np.empty((n, min(summary_size, k) if all_pairs else p))
    for j, H in enumerate(fit_sets):
        _, theta_h = _fit_vector(estimator, adapter, X, y, H, fit_params, n)
        for x in np.flatnonzero(owner == j):
            es = H if all_pairs else rng.choice(H, size=p, replace=False)
            values = np.empty(es.size)
            for col, e in enumerate(es):
                rows = np.sort(np.r_[H[H != e], x])
                _, theta_in = _fit_vector(estimator, adapter, X, y, rows, fit_params, n)
                values[col] = whitener.norms(theta_h - theta_in)
            out[x] = _jensen_summary(values[None, :], out.shape[1])[0] if all_pairs else values
    return out


def _solver_step(block, factor, fit_rows):
    """Newton step H^-1 grad F_H(theta_H): how far the fit is from the minimiser of the
    declared objective (solver tolerance, or a wrong objective)."""
    grad = block.gradients[fit_rows].sum(axis=0) + block.regularizer_gradient
    return linalg.cho_solve(factor, grad, check_finite=False)


def _check_solver_error(err, values, k):
    """Raise if the fit's own error is not negligible next to the swap distances."""
    scale = float(np.median(values[np.isfinite(values)])) if np.isfinite(values).any() else 0.0
    # Two fits enter each distance, so their errors can add up to 2 err.
    if scale > 0 and 2.0 * err > _SOLVER_RTOL * scale:
        raise ValueError(
            f"{_OWNER}: the fit on {k} rows is {err:.3g} (in units of the scale w) from the "
            f"minimiser of the objective the influence engines model, against a median swap "
            f"distance of {scale:.3g}. The engines describe the exact minimiser, so the solver's "
            "own error must be negligible: fit to convergence (e.g. tol=1e-10, or "
            "solver='newton-cholesky' for LogisticRegression), check that the estimator "
            "minimises the registered objective, or use engine='refit'."
        )


def _factor(block):
    try:
        return linalg.cho_factor(block.hessian, lower=True, check_finite=False)
    except linalg.LinAlgError:
        raise ValueError(
            f"{_OWNER}: the objective's Hessian at the fit is not positive definite (e.g. an "
            "unpenalised model on separable or collinear data); the influence engines need "
            "a strictly convex objective. Add regularisation or use engine='refit'."
        ) from None


def _prepare(block, factor, rows, whitener, newton):
    """Per-row quantities of one block for the pair distances.

    ``U``: the whitened per-row vectors whose combination is the swap's change: beta_i =
    H^-1 g_i (first order) or xi_i = H^-1 x_i (Newton, generalised-linear blocks), with
    ``Uraw`` their raw values on zero-scale coordinates. Newton also keeps the features,
    the leverage h_ii = x_i' H^-1 x_i, the loss derivatives at the fit and the margins.
    """
    if not newton:
        beta = linalg.cho_solve(factor, block.gradients[rows].T, check_finite=False).T
        return {"U": whitener.apply(beta, block.index), "Uraw": whitener.raw(beta, block.index)}
    glm = block.glm
    feats = glm.features[rows]
    xi = linalg.cho_solve(factor, feats.T, check_finite=False).T
    return {
        "rows": np.asarray(rows),
        "feats": feats,
        "xi": xi,
        "U": whitener.apply(xi, block.index),
        "Uraw": whitener.raw(xi, block.index),
        "h": (feats * xi).sum(1),
        "u0": glm.margins[rows],
        "d1": glm.dloss(glm.margins[rows], rows),
        "d2": glm.d2loss(glm.margins[rows], rows),
    }


def _take(prep, idx):
    return {key: value[idx] for key, value in prep.items()}


def _solve_margin(a, b, glm, rows):
    """Root of u + a * l'_rows(u) = b (elementwise; a >= 0, l'' >= 0 so the map increases).

    Safeguarded Newton: since the derivative is >= 1, [b - f(b), b] or [b, b - f(b)]
    brackets the root; a Newton step that leaves the bracket is replaced by bisection.
    Only the entries not yet converged are iterated.
    """
    shape = np.shape(a)
    a, b, rows = a.ravel(), b.ravel(), np.broadcast_to(rows, shape).ravel()
    fb = a * glm.dloss(b, rows)
    lo = np.where(fb > 0, b - fb, b)
    hi = np.where(fb > 0, b, b - fb)
    u = b - fb / (1.0 + a * glm.d2loss(b, rows))
    active = np.arange(u.size)
    for _ in range(100):
        ua, aa, ba, ra = u[active], a[active], b[active], rows[active]
        la, ha = lo[active], hi[active]
        ua = np.where((ua < la) | (ua > ha), 0.5 * (la + ha), ua)
        fu = ua + aa * glm.dloss(ua, ra) - ba
        la = np.where(fu <= 0, ua, la)
        ha = np.where(fu >= 0, ua, ha)
        new = ua - fu / (1.0 + aa * glm.d2loss(ua, ra))
        new = np.where((new < la) | (new > ha), 0.5 * (la + ha), new)
        u[active], lo[active], hi[active] = new, la, ha
        moving = np.abs(new - ua) > 1e-12 * (1.0 + np.abs(ua))
        active = active[moving]
        if active.size == 0:
            break
    return u.reshape(shape)


def _ops(cross):
    """Inner products and broadcasting for all pairs (cross) or matched pairs."""
    if cross:
        return (lambda A, B: A @ B.T), (lambda v: v[:, None]), (lambda v: v[None, :])
    return (lambda A, B: (A * B).sum(1)), (lambda v: v), (lambda v: v)


def _pair_coefficients(pe, px, glm, newton, cross):
    r"""Coefficients (c_e, c_x) with Delta = c_e U_e - c_x U_x for each pair.

    First order: Delta = H^-1 (g_e - g_x) = beta_e - beta_x, so c_e = c_x = 1.

    Newton (generalised-linear blocks): the objective after the swap is modelled as the
    second-order expansion at the fit of everything but the target, whose loss is kept
    exact: F_H - l_e ~ quadratic with gradient -g_e and Hessian A = H - l''_e x_e x_e',
    plus l_x(x_x' theta). Its minimiser is Delta = A^-1 (g_e - l'_x(u) x_x) where the
    target's new margin u solves the scalar equation u + a l'_x(u) = b with
    a = x_x' A^-1 x_x and b = u0_x + x_x' A^-1 g_e. By Sherman-Morrison,
    A^-1 = H^-1 + kappa_e xi_e xi_e' / (1 - kappa_e h_ee), xi = H^-1 x, so Delta is a
    combination of xi_e and xi_x, and all pairs need one cross product h_ex = x_e' H^-1 x_x.
    Exact for least squares (the expansion is exact there).
    """
    dot, col_e, row_x = _ops(cross)
    if not newton:
        one = np.ones((pe["U"].shape[0], px["U"].shape[0])) if cross else np.ones(pe["U"].shape[0])
        return one, one
    h_ex = dot(pe["feats"], px["xi"])  # x_e' H^-1 x_x
    kappa, lam = col_e(pe["d2"]), col_e(pe["d1"])
    den = 1.0 - kappa * col_e(pe["h"])  # > 0 when A = H - kappa x_e x_e' is positive definite
    rho = lam / den  # A^-1 g_e = rho xi_e
    tau = kappa * h_ex / den  # A^-1 x_x = xi_x + tau xi_e
    a = row_x(px["h"]) + tau * h_ex
    b = row_x(px["u0"]) + rho * h_ex
    rows = np.broadcast_to(row_x(px["rows"]), np.shape(a))
    mu = glm.dloss(_solve_margin(a, b, glm, rows), rows)  # l'_x at the new margin
    return rho - mu * tau, mu  # Delta = (rho - mu tau) xi_e - mu xi_x


def _assemble_sq(terms, cross, orthogonal):
    """Squared whitened norm of sum_b (c_e,b U_e,b - c_x,b U_x,b) for each pair.

    ``terms``: per block (pe, px, c_e, c_x). Blocks are ``orthogonal`` when the whitening is
    diagonal (they hold disjoint coordinates); a full whitening matrix couples them.
    """
    dot, col_e, row_x = _ops(cross)
    sq = 0.0
    pairs = [(i, i) for i in range(len(terms))] if orthogonal else [
        (i, j) for i in range(len(terms)) for j in range(len(terms))
    ]
    for i, j in pairs:
        pe_i, px_i, ce_i, cx_i = terms[i]
        pe_j, px_j, ce_j, cx_j = terms[j]
        sq = sq + (
            ce_i * ce_j * col_e((pe_i["U"] * pe_j["U"]).sum(1))
            + cx_i * cx_j * row_x((px_i["U"] * px_j["U"]).sum(1))
            - 2.0 * ce_i * cx_j * dot(pe_i["U"], px_j["U"])
        )
    sq = np.maximum(sq, 0.0)
    for pe, px, ce, cx in terms:  # zero-scale coordinates (diagonal whitening only)
        if pe["Uraw"].shape[1]:
            if cross:
                raw = ce[:, :, None] * pe["Uraw"][:, None, :] - cx[:, :, None] * px["Uraw"][None, :, :]
            else:
                raw = ce[:, None] * pe["Uraw"] - cx[:, None] * px["Uraw"]
            sq = np.where((raw != 0).any(axis=-1), np.inf, sq)
    return sq


def _refine_target(block, H, x, e_rows, whitener):
    """Distances for target ``x`` with its own addition solved to convergence.

    Newton's method on F_H + l_x (the exact objective of H + {x}, quadratic regulariser)
    from the target-exact estimate, then the removal of each e in ``e_rows`` linearised at
    that solution: theta(H - e + x) ~ theta_{H+x} + (H' - l''_e x_e x_e')^-1 g'_e with H',
    g'_e the Hessian and e's gradient at theta_{H+x} (Sherman-Morrison). Returns ``None`` if
    Newton's method does not converge (the caller keeps the one-step value).
    """
    glm = block.glm
    F = glm.features
    theta0 = block.theta
    rows = np.r_[H, x]
    Xr = F[rows]
    # The regulariser's Hessian (constant for the quadratic penalties of the built-in
    # losses): the block's Hessian minus the data part on H.
    P = block.hessian - (F[H].T * glm.d2loss(glm.margins[H], H)) @ F[H]
    P = 0.5 * (P + P.T)
    factor = _factor(block)
    xi_x = linalg.cho_solve(factor, F[x], check_finite=False)
    a = float(F[x] @ xi_x)
    u = _solve_margin(np.array([a]), np.array([glm.margins[x]]), glm, np.array([x]))
    theta = theta0 - glm.dloss(u, np.array([x]))[0] * xi_x
    for _ in range(50):
        margins = Xr @ theta
        grad = Xr.T @ glm.dloss(margins, rows) + block.regularizer_gradient + P @ (theta - theta0)
        hess = (Xr.T * glm.d2loss(margins, rows)) @ Xr + P
        try:
            step = linalg.solve(hess, grad, assume_a="pos", check_finite=False)
        except (linalg.LinAlgError, ValueError):
            return None
        theta = theta - step
        if np.linalg.norm(step) <= 1e-12 * (1.0 + np.linalg.norm(theta)):
            break
    else:
        return None
    margins = F @ theta
    hess = (Xr.T * glm.d2loss(margins[rows], rows)) @ Xr + P
    try:
        fac = linalg.cho_factor(hess, lower=True, check_finite=False)
    except linalg.LinAlgError:
        return None
    xi_e = linalg.cho_solve(fac, F[e_rows].T, check_finite=False).T
    kappa = glm.d2loss(margins[e_rows], e_rows)
    rho = glm.dloss(margins[e_rows], e_rows) / (1.0 - kappa * (F[e_rows] * xi_e).sum(1))
    v = theta - theta0
    vw = whitener.apply(v[None, :], block.index)[0]
    xw = whitener.apply(xi_e, block.index)
    sq = vw @ vw + 2.0 * rho * (xw @ vw) + rho**2 * (xw**2).sum(1)
    out = np.sqrt(np.maximum(sq, 0.0))
    vraw = whitener.raw(v[None, :], block.index)
    if vraw.shape[1]:
        raw = vraw + rho[:, None] * whitener.raw(xi_e, block.index)
        out = np.where((raw != 0).any(axis=1), np.inf, out)
    return out


def _n_refine(fraction, n_targets):
    return min(n_targets, math.ceil(fraction * n_targets)) if fraction > 0 else 0


def _influence_round(estimator, adapter, loss, X, Xd, y, fit_params, sample_weight, n, k, seed,
                     p, whitener, all_pairs, summary_size, newton, refine, polish=False):
    rng, fit_sets, owner = _round_design(seed, n, k)
    out = np.empty((n, min(summary_size, k) if all_pairs else p))
    for j, H in enumerate(fit_sets):
        fitted, theta = _fit_vector(estimator, adapter, X, y, H, fit_params, n)
        if polish:
            theta = _polish(fitted, loss, adapter, Xd, y, H, sample_weight)
        blocks = loss.blocks(fitted, Xd, y, H, sample_weight)
        del fitted
        targets = np.flatnonzero(owner == j)
        preps = []
        step = np.zeros(theta.size)
        for b in blocks:
            factor = _factor(b)
            step[b.index] = _solver_step(b, factor, H)
            preps.append((_prepare(b, factor, H, whitener, newton), _prepare(b, factor, targets, whitener, newton), b.glm))
        # Zero-scale coordinates are left out of the solver check (they carry no noise).
        step[whitener.zero] = 0.0
        solver_error = float(whitener.norms(step))
        del theta
        # Refining the most exposed targets needs one generalised-linear block.
        refine_here = refine if (newton and len(blocks) == 1) else 0.0
        if all_pairs:
            # Chunk the targets so that each (k x chunk) cross matrix stays small.
            width = max(1, _CHUNK_ELEMENTS // k)
            for start in range(0, targets.size, width):
                chunk = np.arange(start, min(start + width, targets.size))
                terms = []
                for pe, px, glm in preps:
                    pxc = _take(px, chunk)
                    terms.append((pe, pxc) + _pair_coefficients(pe, pxc, glm, newton, cross=True))
                dist = np.sqrt(_assemble_sq(terms, True, whitener.diagonal))
                for col in np.argsort(-dist.mean(axis=0))[: _n_refine(refine_here, chunk.size)]:
                    better = _refine_target(blocks[0], H, targets[chunk[col]], H, whitener)
                    if better is not None:
                        dist[:, col] = better
                out[targets[chunk]] = _jensen_summary(dist.T, out.shape[1])
        else:
            # Positions in H of p distinct e per target, drawn uniformly.
            pos = np.stack([rng.choice(k, size=p, replace=False) for _ in targets]) if targets.size else None
            for col in range(p):
                terms = []
                for pe, px, glm in preps:
                    pec = _take(pe, pos[:, col])
                    terms.append((pec, px) + _pair_coefficients(pec, px, glm, newton, cross=False))
                out[targets, col] = np.sqrt(_assemble_sq(terms, False, whitener.diagonal))
            if targets.size:
                for t in np.argsort(-out[targets].mean(axis=1))[: _n_refine(refine_here, targets.size)]:
                    better = _refine_target(blocks[0], H, targets[t], H[pos[t]], whitener)
                    if better is not None:
                        out[targets[t]] = better
        _check_solver_error(solver_error, out[targets], k)
    return out


def _exact_distances(estimator, adapter, X, y, fit_params, n, k, whitener, n_jobs, verbose):
    n_subsets = math.comb(n, k)
    if n_subsets > _MAX_EXACT_FITS:
        raise ValueError(
            f"{_OWNER}: engine='exact' fits every one of C({n}, {k}) = {n_subsets} subsets, more "
            f"than {_MAX_EXACT_FITS}. Use engine='refit' or an influence engine with random rounds."
        )
    subsets = np.array(list(itertools.combinations(range(n), k)), dtype=np.intp)
    vectors = Parallel(n_jobs=n_jobs, verbose=max(0, verbose - 1))(
        delayed(_fit_only_vector)(estimator, adapter, X, y, rows, fit_params, n) for rows in subsets
    )
    theta = np.stack(vectors)
    bits = (np.int64(1) << subsets.astype(np.int64)).sum(axis=1)
    order = np.argsort(bits)
    sorted_bits = bits[order]
    out = np.empty((n, math.comb(n - 1, k), k))
    for x in range(n):
        without = np.flatnonzero(((bits >> x) & 1) == 0)
        for col in range(k):
            # e = the col-th member of each D_out; D_in = D_out - e + x* (all pairs, once).
            e = subsets[without, col]
            swapped = bits[without] - (np.int64(1) << e) + (np.int64(1) << x)
            partner = order[np.searchsorted(sorted_bits, swapped)]
            out[x, :, col] = whitener.norms(theta[without] - theta[partner])
    return out


def _fit_only_vector(estimator, adapter, X, y, rows, fit_params, n):
    return _fit_vector(estimator, adapter, X, y, rows, fit_params, n)[1]


# --------------------------------------------------------------------------- entry point


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
    params="auto",
    random_state=None,
    n_jobs: int | None = None,
    verbose: int = 0,
    fit_params: dict | None = None,
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
        :math:`w` (e.g. ``sigma`` from :func:`skmip.moments.estimate_sigma`) means noise
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
    engine : {"auto", "refit", "newton", "influence", "exact"}, default="auto"
        How :math:`\mathcal{A}(D_{in})` is obtained (module docstring). ``"auto"``:
        ``"newton"`` if the registered smooth loss is generalised-linear, else
        ``"influence"`` if one is registered, else ``"refit"``.
    pairs_per_target : int, "all" or None, default=None
        Values of :math:`e` per target and round: an integer draws that many uniformly in
        :math:`D_{out}` without replacement; ``"all"`` uses every :math:`e` (summarised as in
        the module docstring). ``None``: 1 for ``"refit"``; ``"all"`` for the influence
        engines unless a round has more than :math:`2^{22}` pairs, then 16.
    summary_size : int, default=4
        Sorted-block means kept per target and round with ``pairs_per_target="all"``.
    refine : float, default=0.05
        ``"newton"`` engine, one-block models: the fraction of each fit's targets with the
        largest distances whose own addition is solved to convergence (Newton's method on
        the objective of :math:`H + \{x^*\}`) before each :math:`e`'s removal is linearised
        at that solution. These outlying targets decide the maximum over targets, and their
        addition moves the fit furthest from where the one-step model was expanded.
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
    SwapDeltas(n_samples=40, n_train=20, n_rounds=20, n_pairs=4, engine='newton', pairs='all')
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

    rng = resolve_rng(random_state)
    estimator = fix_inner_random_state(clone(estimator), draw_seed(rng))
    adapter = get_adapter(estimator, params)
    loss = get_smooth_loss(estimator)
    if engine in ("newton", "influence") and loss is None:
        raise TypeError(
            f"{_OWNER}: engine={engine!r} needs the objective of {type(estimator).__name__}; "
            "none is registered. Use engine='refit', or register one with "
            "skmip.sensitivity.register_smooth_loss."
        )
    if engine == "auto":
        engine = "refit" if loss is None else "influence?"
    if engine in ("newton", "influence", "influence?"):
        loss.check(estimator)

    seeds = [draw_seed(rng) for _ in range(n_rounds)]
    # One probe fit validates the scale's length (and, for the influence engines, the
    # objective) before the budget is spent.
    probe_rows = np.sort(rng.permutation(n)[:k])
    probe, theta0 = _fit_vector(estimator, adapter, X, y, probe_rows, fit_params, n)
    _check_scale_size(whitener, theta0)
    Xd = yd = sw = None
    if engine != "refit" and engine != "exact":
        Xd = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
        yd = None if y is None else np.asarray(y)
        sw = fit_params.get("sample_weight")
        blocks = loss.blocks(probe, Xd, yd, probe_rows, sw)
        _check_layout(blocks, theta0, estimator)
        glm = all(b.glm is not None for b in blocks)
        if engine == "influence?":
            engine = "newton" if glm else "influence"
        elif engine == "newton" and not glm:
            raise ValueError(
                f"{_OWNER}: engine='newton' needs a generalised-linear loss (each row's loss a "
                f"function of one margin), which this {type(estimator).__name__} does not have "
                "(e.g. a multinomial model). Use engine='influence' (first order) or 'refit'."
            )
        del blocks
    del probe, theta0

    if engine == "exact":
        if pairs_per_target not in (None, "all"):
            raise ValueError(
                f"{_OWNER}: engine='exact' uses every pair; got pairs_per_target={pairs_per_target!r}."
            )
        dist = _exact_distances(estimator, adapter, X, y, fit_params, n, k, whitener, n_jobs, verbose)
        return SwapDeltas(dist, k, "exact", "exhaustive")

    if pairs_per_target is None:
        all_pairs = engine != "refit" and k * (n - k) <= _ALL_PAIRS_MAX
        p = 1 if engine == "refit" else (k if all_pairs else min(_SAMPLED_PAIRS, k))
    elif pairs_per_target == "all":
        all_pairs, p = True, k
    else:
        p = check_int(_OWNER, "pairs_per_target", pairs_per_target, 1, k,
                      why=f"e is drawn without replacement among the k={k} rows of D_out.")
        all_pairs = False

    if verbose:
        print(f"{_OWNER}: {n_rounds} rounds, engine={engine!r}, k={k} of n={n}", flush=True)
    if engine == "refit":
        jobs = (
            delayed(_refit_round)(
                estimator, adapter, X, y, fit_params, n, k, seed, p, whitener, all_pairs,
                summary_size,
            )
            for seed in seeds
        )
    else:
        jobs = (
            delayed(_influence_round)(
                estimator, adapter, loss, X, Xd, yd, fit_params, sw, n, k, seed, p, whitener,
                all_pairs, summary_size, engine == "newton", refine, polish,
            )
            for seed in seeds
        )
    with single_threaded_blas():
        rounds = Parallel(n_jobs=n_jobs, verbose=max(0, verbose - 1))(jobs)
    dist = np.stack(rounds, axis=1)
    return SwapDeltas(dist, k, engine, "all" if all_pairs else "sampled",
                      polished=polish and engine != "refit")


def _subset_vectors(estimator, adapter, X, y, fit_params, n, k, seeds):
    out = []
    for seed in seeds:
        rows = np.sort(np.random.default_rng(seed).permutation(n)[:k])
        out.append(_fit_vector(estimator, adapter, X, y, rows, fit_params, n)[1])
    return np.array(out)


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

    Returns
    -------
    ndarray of shape (n_params, n_params)
        Lower-triangular :math:`L`, invertible. A coordinate that is constant over the
        subsets gets the smallest positive standard deviation on the diagonal (a swap does
        not move it, so its noise is immaterial).

    Raises
    ------
    ValueError
        If ``n_subsets < 2``, or the sample covariance is singular with ``shrinkage=False``.

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

    owner = "estimate_noise_factor"
    fit_params = {} if fit_params is None else dict(fit_params)
    n = n_rows(X)
    k = _resolve_k(owner, train_size, n)
    n_subsets = check_int(owner, "n_subsets", n_subsets, 2, None)
    rng = resolve_rng(random_state)
    estimator = fix_inner_random_state(clone(estimator), draw_seed(rng))
    adapter = get_adapter(estimator, params)
    seeds = [draw_seed(rng) for _ in range(n_subsets)]
    chunks = np.array_split(np.arange(n_subsets), min(16, n_subsets))
    parts = Parallel(n_jobs=n_jobs)(
        delayed(_subset_vectors)(estimator, adapter, X, y, fit_params, n, k, [seeds[i] for i in c])
        for c in chunks
    )
    thetas = np.concatenate(parts)
    sd = thetas.std(axis=0, ddof=1)
    moving = sd > 0
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


def _resolve_k(owner, train_size, n):
    if train_size is None:
        k = n // 2
    elif isinstance(train_size, numbers.Integral) and not isinstance(train_size, bool):
        k = int(train_size)
    elif isinstance(train_size, numbers.Real) and 0 < train_size < 1:
        k = int(round(float(train_size) * n))
    else:
        raise ValueError(
            f"{owner}: train_size must be an integer number of rows or a fraction in (0, 1); "
            f"got {train_size!r}."
        )
    return check_int(
        owner, "train_size", k, 1, n - 1,
        why=f"k rows are drawn into D_train out of n={n}; a target must be able to be in or out.",
    )


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
