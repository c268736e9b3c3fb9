r"""The smooth loss of ``LinearSVC(loss="squared_hinge", penalty="l2")`` (liblinear's L2-loss SVC).

liblinear (``sklearn/svm/_base.py::_fit_liblinear``) minimises, per class :math:`c` (one
against the rest; binary: one problem for ``classes_[1]``),

.. math::

    \tfrac12\|\tilde w\|^2 + \sum_i C_i\,\max(0,\ 1 - t_i\,\tilde w^\top\tilde x_i)^2,
    \qquad \tilde x_i = (x_i, s), \quad t_i = \pm 1,

with :math:`C_i = C \times` ``sample_weight`` :math:`\times` a class weight (binary:
``class_weight[y_i]``; one against the rest: ``class_weight[c]`` on class :math:`c`'s rows, 1
on the others, as liblinear's ``train_one(Cp, Cn)`` does) and the
synthetic feature :math:`s` = ``intercept_scaling``; scikit-learn reports
``intercept_ = s * w_b``. In the adapter's coordinates :math:`(w, b)` the margin is
:math:`u = w^\top x + b` and the penalty :math:`\tfrac12\|w\|^2 + \tfrac{1}{2s^2}b^2`: the
intercept *is* penalised, by a known quadratic.

**Why the engines apply.** Row :math:`i`'s loss :math:`\ell_i(u) = C_i\max(0, 1 - t_iu)^2`
is convex and once differentiable: :math:`\ell_i'(u) = -2C_it_i\max(0, 1 - t_iu)` is
continuous, non-decreasing and piecewise linear, and its derivative
:math:`\ell_i''(u) = 2C_i\,[t_iu < 1]` exists except at the kink :math:`t_iu = 1` (there
we take the right-hand value 0 on the flat side, a valid element of the generalised
Hessian). The objective is 1-strongly convex with a Lipschitz gradient, so the minimiser is
unique and a Lipschitz function of the data, and the coupling bound (which needs only the
swap distances, never derivatives) applies unchanged. The objective is *piecewise
quadratic*: on the set where no row's sign of :math:`1 - t_iu` changes it is exactly
quadratic. Hence

* the ``"newton"`` engine's model of the swap (the others' loss expanded to second order at
  the fit, :math:`e`'s removed exactly, the target's kept exact) is **exact** for every
  pair whose swap moves no other row across its kink; the scalar equation for the target's
  margin has a continuous, strictly increasing left side, which ``_solve_margin``'s
  bracketed Newton solves;
* a pair that moves other rows across their kinks is approximated, like logistic
  regression's: the error is measured against refits (``benchmarks/bench_learners.py``),
  not bounded;
* polishing (generalised Newton from the solver's output) terminates exactly once the set
  of rows with :math:`t_iu < 1` is identified, which a converged solver's output does
  unless a row sits on its kink.

``loss="hinge"`` (not differentiable: a subgradient, no curvature) and ``penalty="l1"``
(not smooth) are refused, as is ``multi_class="crammer_singer"`` (a different objective).
"""

from __future__ import annotations

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
    weighted_gram,
)


class _SquaredHingeLoss:
    """The objective of :class:`~sklearn.svm.LinearSVC` with ``loss="squared_hinge"``, ``penalty="l2"``."""

    def check(self, est):
        if est.loss != "squared_hinge" or est.penalty != "l2":
            raise ObjectiveMismatch(
                _OWNER, f"LinearSVC(loss={est.loss!r}, penalty={est.penalty!r}) is not smooth (the hinge "
                "has no curvature, an L1 penalty has a kink at 0).", "use loss='squared_hinge', penalty='l2'")
        if est.multi_class != "ovr":
            raise ObjectiveMismatch(
                _OWNER, f"LinearSVC(multi_class={est.multi_class!r}) minimises a joint objective the "
                "influence engines do not model.", "use multi_class='ovr'")
        check_fixed_class_weight(est)

    def blocks(self, est, X, y, fit_rows, sample_weight):
        n, d = X.shape
        classes = est.classes_
        cs = float(est.C) * row_weights(n, sample_weight)
        cw = np.ones(classes.size)
        if est.class_weight is not None:
            cw = np.array([est.class_weight.get(c, 1.0) for c in classes])
        fit_intercept = bool(est.fit_intercept)
        Xa = augment(X, fit_intercept)
        reg = np.ones(Xa.shape[1])
        if fit_intercept:
            reg[-1] = 1.0 / float(est.intercept_scaling) ** 2  # b = s w_b, penalty w_b^2 / 2
        coef = np.atleast_2d(est.coef_)
        intercept = np.broadcast_to(np.asarray(est.intercept_, dtype=np.float64).ravel(), (coef.shape[0],))
        positive = [classes[1]] if coef.shape[0] == 1 else list(classes)
        fit_rows = np.asarray(fit_rows)
        out = []
        for c, label in enumerate(positive):
            t = np.where(y == label, 1.0, -1.0)
            # liblinear's train_one(Cp, Cn): binary, each row its own class's weight; one
            # against the rest, class c's weight on its rows and none on the others.
            if coef.shape[0] == 1:
                cs_c = cs * cw[np.searchsorted(classes, y)]
            else:
                cs_c = cs * np.where(y == label, cw[c], 1.0)
            theta = np.r_[coef[c], intercept[c]] if fit_intercept else coef[c].astype(np.float64)
            u0 = Xa @ theta

            def dloss(u, rows, t=t, cs_c=cs_c):
                return -2.0 * cs_c[rows] * t[rows] * np.maximum(0.0, 1.0 - t[rows] * u)

            def d2loss(u, rows, t=t, cs_c=cs_c):
                return 2.0 * cs_c[rows] * (t[rows] * u < 1.0)

            grads = RowGradients(Xa, dloss(u0, np.arange(n)))
            curv = d2loss(u0[fit_rows], fit_rows)
            hess = weighted_gram(Xa, fit_rows, curv) + np.diag(reg)
            index = c * d + np.arange(d)
            if fit_intercept:
                index = np.r_[index, coef.size + c]
            # l' = -2 C_i t_i max(0, 1 - t_i u) is non-decreasing and 2 C_i-Lipschitz, and the
            # penalty (intercept included) is positive definite: the strong-convexity certificate.
            glm = GLMTerms(Xa, u0, dloss, d2loss, lipschitz=2.0 * cs_c, penalty=np.diag(reg))
            out.append(LossBlock(index, theta, grads, hess, reg * theta, glm))
        return out


def _is_linear_svc(est):
    from sklearn.svm import LinearSVC

    return type(est) is LinearSVC


#: Built-in (predicate, factory) entries, registered by :mod:`skmip.calibration.losses.registry`.
BUILTIN = [(_is_linear_svc, lambda est: _SquaredHingeLoss())]
