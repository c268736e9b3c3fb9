r"""The smooth-loss registry: the objective an estimator minimises, for the influence engines.

A :class:`SmoothLoss` turns an estimator fitted on rows :math:`H` into :class:`LossBlock`
objects (gradients of every row, the Hessian on :math:`H`, and, for generalised-linear
losses, :class:`GLMTerms`; with one margin per class, :class:`MultiMarginTerms`). Built in:
scikit-learn's ``LogisticRegression`` (binary and multinomial), ``Ridge`` and
``LinearRegression``, the Tweedie family (:mod:`.glm_losses`) and ``LinearSVC`` with the
squared hinge (:mod:`.svm_losses`); :func:`register_smooth_loss` adds others.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from collections.abc import Callable
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from skmip.calibration.swap._common import _OWNER
from skmip.calibration.swap.multinomial import MultiMarginTerms, _softmax_terms


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
    gsc : float or None
        A constant :math:`R` with :math:`|\ell_i'''(u)| \le R\,\ell_i''(u)` for every
        :math:`u` and row (generalised self-concordance, Bach 2010), which lets the
        ``"newton"`` engine certify its distances (:mod:`.certify`); ``None`` if the loss
        declares none (its distances are then estimates, not bounds).
    """

    features: np.ndarray
    margins: np.ndarray
    dloss: Callable
    d2loss: Callable
    gsc: float | None = None


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
    gradients : ndarray of shape (n_samples, D_b) or RowGradients
        :math:`\nabla\ell_i(\hat\theta_H)` for *every* row of :math:`\mathcal{D}` (built-in
        generalised-linear losses give a :class:`RowGradients`, formed on demand).
    hessian : ndarray of shape (D_b, D_b)
        :math:`\nabla^2 F_H(\hat\theta_H)`, positive definite.
    regularizer_gradient : ndarray of shape (D_b,)
        :math:`\nabla R(\hat\theta_H)`; with the gradients on :math:`H` it checks that the
        fit is (numerically) the minimiser of this objective.
    glm : GLMTerms or None
        The generalised-linear form, when the loss has one (enables ``"newton"``).
    multi : MultiMarginTerms or None
        The form with :math:`K` margins per row (multinomial models; enables ``"newton"``).
    """

    index: np.ndarray
    theta: np.ndarray
    gradients: np.ndarray
    hessian: np.ndarray
    regularizer_gradient: np.ndarray
    glm: GLMTerms | None = None
    multi: MultiMarginTerms | None = None


class RowGradients:
    r"""The rows' gradients :math:`\ell_i'(u_i)\,\tilde x_i` of a generalised-linear block,
    formed on demand: indexing rows returns their ``(len(rows), D_b)`` array, and
    ``np.asarray`` all of them; :meth:`sum_rows` sums rows a chunk at a time. The influence
    engines use only sums over fit sets, so no ``(n, D_b)`` array is stored per fit.
    """

    #: Rows per chunk of :meth:`sum_rows`.
    _CHUNK = 2**14

    def __init__(self, features, d1):
        self.features, self.d1 = features, d1
        self.shape = features.shape
        self.ndim = 2

    def __getitem__(self, rows):
        return self.d1[rows][..., None] * self.features[rows]

    def __array__(self, dtype=None, copy=None):
        out = self.d1[:, None] * self.features
        return out if dtype is None else out.astype(dtype, copy=False)

    def __len__(self):
        return self.shape[0]

    @property
    def T(self):
        return np.asarray(self).T

    def sum(self, axis=None):
        """As ``np.asarray(self).sum(axis)``; over the rows (axis 0) without forming them all."""
        if axis == 0:
            return self.sum_rows(np.arange(self.shape[0]))
        return np.asarray(self).sum(axis=axis)

    def sum_rows(self, rows):
        """The sum of the gradients of ``rows``: the derivatives of the other rows set to 0,
        then contiguous chunks of the design (no gather of the rows), elementwise products
        and an ordered sum (the same rounding whatever the memory layout)."""
        w = np.zeros(self.shape[0])
        w[rows] = self.d1[rows]
        total = np.zeros(self.shape[1])
        for a in range(0, w.size, self._CHUNK):
            total += np.add.reduce(w[a:a + self._CHUNK, None] * self.features[a:a + self._CHUNK], axis=0)
        return total


def gradient_sum(block, rows):
    r""":math:`\sum_{i \in rows} \nabla\ell_i` of a :class:`LossBlock` (array or
    :class:`RowGradients` gradients)."""
    grads = block.gradients
    return grads.sum_rows(rows) if isinstance(grads, RowGradients) else grads[rows].sum(axis=0)


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


#: The last augmented design, ``(weak reference to X, X's shape, Xa)``, kept while a
#: :func:`augmented_design_cache` is open: the engines call ``blocks`` once per fit on the
#: same X, and one copy of it with a column of ones then serves all.
_AUGMENTED = [None]
_CACHE_OPEN = [0]


@contextlib.contextmanager
def augmented_design_cache():
    """Within it, :func:`_augment` returns one read-only augmented copy per (unchanged) X
    instead of a fresh copy per call (an ``(n, d+1)`` copy per fit would dominate the memory
    of the rounds at large n); on leaving it the copy is dropped."""
    _CACHE_OPEN[0] += 1
    try:
        yield
    finally:
        _CACHE_OPEN[0] -= 1
        if not _CACHE_OPEN[0]:
            _AUGMENTED[0] = None


def _augment(X, fit_intercept):
    """``X`` with a column of ones appended (``fit_intercept``); inside an
    :func:`augmented_design_cache`, the same read-only array again for the same, unchanged
    ``X``."""
    if not fit_intercept:
        return X
    if not _CACHE_OPEN[0]:
        return np.hstack([X, np.ones((X.shape[0], 1))])
    cached = _AUGMENTED[0]
    # Checked against X's values too (one pass, no allocation): X may have been changed in place.
    if cached is not None and cached[0]() is X and cached[1] == X.shape and np.array_equal(cached[2][:, :-1], X):
        return cached[2]
    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    Xa.flags.writeable = False
    try:
        ref = weakref.ref(X)
    except TypeError:  # an object without weak references: no caching
        return Xa
    _AUGMENTED[0] = (ref, X.shape, Xa)
    # Forget it with X, so that no copy of the data outlives the fit.
    weakref.finalize(X, _forget_augmented, ref)
    return Xa


def _forget_augmented(ref):
    cached = _AUGMENTED[0]
    if cached is not None and cached[0] is ref:
        _AUGMENTED[0] = None


def weighted_gram(Xa, rows, weights):
    r""":math:`\sum_{i \in rows} w_i x_i x_i^\top` (``weights`` aligned with ``rows``), a
    chunk of rows at a time (no ``(len(rows), D)`` temporary at large n)."""
    rows = np.asarray(rows)
    weights = np.broadcast_to(np.asarray(weights, dtype=np.float64), rows.shape)
    out = np.zeros((Xa.shape[1], Xa.shape[1]))
    for a in range(0, rows.size, _GRAM_CHUNK):
        F = Xa[rows[a:a + _GRAM_CHUNK]]
        out += (F.T * weights[a:a + _GRAM_CHUNK]) @ F
    return out


#: Rows per chunk of :func:`weighted_gram`.
_GRAM_CHUNK = 2**15


def _weights(n, sample_weight):
    return np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)


def _check_fixed_class_weight(est):
    if isinstance(est.class_weight, str):
        raise ValueError(
            f"{_OWNER}: class_weight={est.class_weight!r} makes the weights depend on the "
            "class counts of each subset, which a swap changes; pass a dict of class "
            "weights or use engine='refit'."
        )


def _expit(u):
    return 0.5 * (1.0 + np.tanh(0.5 * u))  # overflow-free logistic function


class _LogisticLoss:
    r"""scikit-learn's :class:`~sklearn.linear_model.LogisticRegression` objective.

    :math:`F(\theta) = C\sum_i s_i\,\ell_i(\theta) + \tfrac12\|w\|^2` with :math:`\ell` the
    log-loss (binary: ``HalfBinomialLoss``; multinomial: ``HalfMultinomialLoss``), the
    intercept unpenalised and :math:`s_i` the sample weight times the class weight
    (scikit-learn 1.9, ``_logistic_regression_path``: its solvers minimise the mean loss
    plus :math:`\|w\|^2/(2C\sum_i s_i)`, the same minimiser). ``C=inf`` drops the penalty.
    The binary model is generalised-linear; the multinomial one has one margin per class
    (:class:`MultiMarginTerms`).
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
        _check_fixed_class_weight(est)

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
            grads = RowGradients(Xa, dloss(u0, all_rows))
            curv = d2loss(u0[fit_rows], fit_rows)
            hess = weighted_gram(Xa, fit_rows, curv) + np.diag(reg)
            index = np.arange(d) if not fit_intercept else np.r_[np.arange(d), n_coef]
            # l'' = c p (1 - p), l''' = c p (1 - p)(1 - 2p): |l'''| <= l'' (R = 1).
            glm = GLMTerms(Xa, u0, dloss, d2loss, gsc=1.0)
            return [LossBlock(index, theta, grads, hess, reg * theta, glm)]
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
        multi = _softmax_terms(Xa, Xa @ Theta.T, T, cs)
        return [LossBlock(index, Theta.ravel(), grads, hess, np.tile(reg, K) * Theta.ravel(), multi=multi)]


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
        gram = weighted_gram(Xa, fit_rows, 2.0 * s[fit_rows])
        out = []
        for t in range(n_out):
            theta = np.r_[coef[t], intercept[t]] if fit_intercept else coef[t]
            u0 = Xa @ theta
            yt = Y[:, t]

            def dloss(u, rows, yt=yt):
                return -2.0 * s[rows] * (yt[rows] - u)

            def d2loss(u, rows):
                return np.broadcast_to(2.0 * s[rows], np.shape(u))

            grads = RowGradients(Xa, dloss(u0, np.arange(n)))
            reg = np.zeros(da)
            reg[:d] = 2.0 * alpha[t]
            index = t * d + np.arange(d)
            if fit_intercept:
                index = np.r_[index, n_coef + t]
            out.append(LossBlock(index, theta, grads, gram + np.diag(reg), reg * theta, GLMTerms(Xa, u0, dloss, d2loss, gsc=0.0)))
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
    parameter adapter. Blocks with :class:`GLMTerms` (one margin per row) or a single block
    with :class:`MultiMarginTerms` (one margin per class) enable the ``"newton"`` engine, the
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
        multinomial: one margin per class), ``Ridge``, ``LinearRegression``,
        ``PoissonRegressor``, ``GammaRegressor``, ``TweedieRegressor`` and ``LinearSVC``
        (squared hinge) (exact classes, not subclasses).

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


# Built-in losses kept in their own modules; imported last because they build on this one.
from skmip.calibration.losses.glm import BUILTIN as _GLM_BUILTIN  # noqa: E402
from skmip.calibration.losses.svm import BUILTIN as _SVM_BUILTIN  # noqa: E402

_LOSSES.extend(_GLM_BUILTIN + _SVM_BUILTIN)
