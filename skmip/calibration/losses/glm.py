r"""Smooth losses of scikit-learn's Tweedie family: ``PoissonRegressor``, ``GammaRegressor``, ``TweedieRegressor``.

scikit-learn 1.9 (``sklearn/linear_model/_glm/glm.py``) fits these by minimising

.. math::

    \frac{1}{2\sum_{i} s_i}\sum_{i} s_i\,\mathrm{deviance}(y_i, h(u_i))
    + \frac{\alpha}{2}\|w\|^2, \qquad u_i = x_i^\top w + b,

with the intercept :math:`b` unpenalised and the half deviance written with a log link
(``HalfTweedieLoss``; ``HalfPoissonLoss`` and ``HalfGammaLoss`` are its limits
:math:`p = 1, 2`):

.. math::

    \ell(u) = -\frac{y\,e^{(1-p)u}}{1-p} + \frac{e^{(2-p)u}}{2-p} + \text{const},\quad
    \ell'(u) = e^{(2-p)u} - y\,e^{(1-p)u},\quad
    \ell''(u) = (2-p)\,e^{(2-p)u} - (1-p)\,y\,e^{(1-p)u}

(the same expressions hold at :math:`p = 1`: :math:`e^u - y`, and at :math:`p = 2`:
:math:`1 - y e^{-u}`). With unit (or constant) weights, multiplying by :math:`\sum_{i\in H} s_i
= s\,|H|` gives the equivalent objective :math:`\sum_{i\in H} s\,\ell_i(u_i) +
\tfrac{\alpha s|H|}{2}\|w\|^2`: the penalty depends on the *number* of training rows, which a
swap keeps. Every row's loss depends on one margin, so these are generalised-linear blocks and
the ``"newton"`` engine applies.

**Convexity.** :math:`\ell''(u) = e^{(1-p)u}\big((2-p)e^u - (1-p)y\big) \ge 0` for every
:math:`u` and every :math:`y \ge 0` iff :math:`1 \le p \le 2`: for :math:`p < 1` it is negative
where :math:`e^u < (1-p)y/(2-p)`, for :math:`p > 2` where :math:`e^u > (p-1)y/(p-2)`.
With the identity link only :math:`p = 0` (least squares, ``HalfSquaredError``) is smooth on
the whole line. Other settings are refused (``engine="refit"`` measures any of them).
"""

from __future__ import annotations

import numpy as np

from skmip.calibration.losses.mismatch import ObjectiveMismatch
from skmip.calibration.losses.terms import _OWNER, GLMTerms, LossBlock, RowGradients, augment, weighted_gram


def _tweedie_power(est):
    """(power, link) of the fitted loss: Poisson p = 1 and Gamma p = 2 use the log link."""
    from sklearn.linear_model import GammaRegressor, PoissonRegressor

    if type(est) is PoissonRegressor:
        return 1.0, "log"
    if type(est) is GammaRegressor:
        return 2.0, "log"
    power = float(est.power)
    link = est.link if est.link != "auto" else ("identity" if power <= 0 else "log")
    return power, link


class _TweedieLoss:
    r"""The objective of :class:`~sklearn.linear_model.PoissonRegressor`,
    :class:`~sklearn.linear_model.GammaRegressor` and :class:`~sklearn.linear_model.TweedieRegressor`.

    :math:`F_H(\theta) = \sum_{i \in H}\ell_i(u_i) + \tfrac{\alpha|H|}{2}\|w\|^2` with the
    half Tweedie deviance of the module docstring (scikit-learn's objective times
    :math:`|H|`, same minimiser); log link with :math:`1 \le p \le 2`, or the identity link
    with :math:`p = 0`.
    """

    def check(self, est):
        power, link = _tweedie_power(est)
        if link == "log" and not 1.0 <= power <= 2.0:
            raise ObjectiveMismatch(
                _OWNER, f"{type(est).__name__}(power={power!r}) with the log link has a half deviance "
                "that is not convex in the linear predictor (its second derivative changes sign), so "
                "the influence engines' expansion has no guarantee.", "use 1 <= power <= 2 (Poisson to Gamma)")
        if link == "identity" and power != 0.0:
            raise ObjectiveMismatch(
                _OWNER, f"{type(est).__name__}(power={power!r}, link='identity') needs a positive "
                "linear predictor, a constrained problem the influence engines do not model.",
                "use link='log' with 1 <= power <= 2, or power=0 (least squares)")

    def blocks(self, est, X, y, fit_rows, sample_weight):
        n, d = X.shape
        if sample_weight is not None:
            s = np.asarray(sample_weight, dtype=np.float64)
            if not np.all(s == s[0]):
                raise ObjectiveMismatch(
                    _OWNER, f"{type(est).__name__} scales its penalty by the total sample weight of the "
                    "training rows, which a swap of two rows with different weights changes; the "
                    "influence engines model a fixed penalty.", "use unit (or equal) weights")
            w = float(s[0])
        else:
            w = 1.0
        power, link = _tweedie_power(est)
        yv = np.asarray(y, dtype=np.float64).ravel()
        fit_intercept = bool(est.fit_intercept)
        Xa = augment(X, fit_intercept)
        theta = np.r_[np.ravel(est.coef_), np.ravel(est.intercept_)] if fit_intercept else np.ravel(est.coef_)
        theta = theta.astype(np.float64)
        u0 = Xa @ theta

        if link == "identity":  # power 0: HalfSquaredError, l = (y - u)^2 / 2

            def dloss(u, rows):
                return w * (u - yv[rows])

            def d2loss(u, rows):
                return np.full(np.broadcast(u, rows).shape, w)

        else:

            def dloss(u, rows):
                return w * (np.exp((2.0 - power) * u) - yv[rows] * np.exp((1.0 - power) * u))

            def d2loss(u, rows):
                return w * ((2.0 - power) * np.exp((2.0 - power) * u)
                            - (1.0 - power) * yv[rows] * np.exp((1.0 - power) * u))

        reg = np.zeros(Xa.shape[1])
        reg[:d] = float(est.alpha) * w * len(fit_rows)  # alpha/2 ||w||^2 times sum_H s_i
        grads = RowGradients(Xa, dloss(u0, np.arange(n)))
        curv = d2loss(u0[fit_rows], np.asarray(fit_rows))
        hess = weighted_gram(Xa, fit_rows, curv) + np.diag(reg)
        index = np.arange(Xa.shape[1])  # adapter layout: coef_, then the scalar intercept_
        # l'' is a sum of nonnegative exponentials in u with rates 2 - p and 1 - p (or a
        # constant): |l'''| <= max(2 - p, p - 1) l'' (generalised self-concordance).
        gsc = 0.0 if link == "identity" else max(2.0 - power, power - 1.0)
        glm = GLMTerms(Xa, u0, dloss, d2loss, gsc=gsc)
        return [LossBlock(index, theta, grads, hess, reg * theta, glm)]


def _is_tweedie(est):
    from sklearn.linear_model import GammaRegressor, PoissonRegressor, TweedieRegressor

    return type(est) in (PoissonRegressor, GammaRegressor, TweedieRegressor)


#: Built-in (predicate, factory) entries, registered by :mod:`skmip.calibration.losses.registry`.
BUILTIN = [(_is_tweedie, lambda est: _TweedieLoss())]
