r"""The built-in smooth losses of scikit-learn's linear models: logistic regression and least squares.

``LogisticRegression`` (binary: generalised-linear; multinomial: one margin per class),
``Ridge`` and ``LinearRegression`` (one generalised-linear block per output), each the exact
objective scikit-learn minimises. :mod:`skmip.calibration.losses.registry` registers them.
"""

from __future__ import annotations

import math

import numpy as np

from skmip.calibration.losses.mismatch import ObjectiveMismatch
from skmip.calibration.losses.terms import (
    _OWNER,
    GLMTerms,
    LossBlock,
    RowGradients,
    augment,
    check_fixed_class_weight,
    row_weights,
    softmax_terms,
    weighted_gram,
)


def _expit(u):
    """The logistic function, overflow-free: 0.5 (1 + tanh(u / 2)), in one new array (the
    second stage calls it on (fits, rows, pairs) stacks; the same operations, each in place)."""
    out = np.multiply(u, 0.5)
    if not isinstance(out, np.ndarray) or out.dtype != np.float64:
        return 0.5 * (1.0 + np.tanh(out))
    np.tanh(out, out=out)
    out += 1.0
    out *= 0.5
    return out


def _in_place(p, v, op):
    """``op(p, v)`` into ``p`` (a new float64 array of :func:`_expit`) where the result has
    p's shape, else a new array: the same values either way."""
    if isinstance(p, np.ndarray) and p.dtype == np.float64:
        try:
            return op(p, v, out=p)
        except ValueError:  # v broadcasts the result beyond p's shape (checked before any write)
            pass
    return op(p, v)


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
            raise ObjectiveMismatch(
                _OWNER, "LogisticRegression(solver='liblinear') penalises the intercept "
                "(intercept_scaling), an objective the influence engines do not model.",
                "use solver='lbfgs' or 'newton-cholesky'")
        penalty = getattr(est, "penalty", "deprecated")
        l1 = getattr(est, "l1_ratio", 0.0)
        smooth = penalty is None or (penalty in ("deprecated", "l2") and (l1 in (0, None) or est.C == np.inf))
        if not smooth:
            raise ObjectiveMismatch(
                _OWNER, f"LogisticRegression with an L1 part (l1_ratio={l1!r}, penalty={penalty!r}) is "
                "not smooth, and the influence engines need a smooth objective.", "use l1_ratio=0")
        check_fixed_class_weight(est)

    def blocks(self, est, X, y, fit_rows, sample_weight):
        classes = est.classes_
        n, d = X.shape
        s = row_weights(n, sample_weight)
        if est.class_weight is not None:
            cw = np.array([est.class_weight.get(c, 1.0) for c in classes])
            s = s * cw[np.searchsorted(classes, y)]
        penalised = getattr(est, "penalty", "deprecated") is not None and np.isfinite(est.C)
        # Without a penalty the minimiser of C * sum(loss) does not depend on C.
        cs = (float(est.C) if penalised else 1.0) * s
        fit_intercept = bool(est.fit_intercept)
        Xa = augment(X, fit_intercept)
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
                return _in_place(_in_place(_expit(u), t[rows], np.subtract), cs[rows], np.multiply)

            def d2loss(u, rows):
                p = _expit(u)
                q = 1.0 - p  # before p is scaled in place: (c p)(1 - p), in that order
                return _in_place(_in_place(p, cs[rows], np.multiply), q, np.multiply)

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
        penalty = np.diag(np.tile(reg, K))
        # Softmax is invariant to adding one vector to every class: along sum_c e_c (x) u for
        # an unpenalised coordinate u the objective is flat. The gradients have no component
        # there, so the solver never moves along it; adding the projector onto those
        # directions makes the Hessian invertible without changing the solution for such
        # right-hand sides. It is the Hessian of the objective plus (u'theta)^2 / 2, whose
        # minimiser is the one with u'theta = 0 (scikit-learn centres the intercepts): the
        # objective the certificate describes (docs/coupling.md, "Certified distances").
        for f in np.flatnonzero(reg == 0):
            u = np.zeros(K * da)
            u[f::da] = 1.0 / math.sqrt(K)
            penalty += np.outer(u, u)
        hess = hess.reshape(K * da, K * da) + penalty
        index = np.empty(K * da, dtype=np.intp)
        for c in range(K):
            index[c * da : c * da + d] = c * d + np.arange(d)
            if fit_intercept:
                index[c * da + d] = n_coef + c
        multi = softmax_terms(Xa, Xa @ Theta.T, T, cs, penalty)
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
            raise ObjectiveMismatch(
                _OWNER, f"{type(est).__name__}(positive=True) is a constrained problem; the influence "
                "engines need an unconstrained smooth objective.")

    def blocks(self, est, X, y, fit_rows, sample_weight):
        n, d = X.shape
        s = row_weights(n, sample_weight)
        fit_intercept = bool(est.fit_intercept)
        Xa = augment(X, fit_intercept)
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


#: (predicate, factory) pairs the registry starts from.
BUILTIN = [
    (_is_logistic, lambda est: _LogisticLoss()),
    (_is_least_squares, lambda est: _LeastSquaresLoss()),
]
