r"""The exact minimiser of a learner's objective on every training set, independently computed.

The exact audit (:mod:`skmip.audit.attacks.exact_audit`) refits the learner on **every**
subset of a tiny :math:`D` with :func:`exact_minimiser`: batched Newton on the objective
scikit-learn documents, to a gradient of 1e-9. It never calls
:mod:`skmip.calibration.swap` or :mod:`skmip.bounds`, so the audit shares no code with the
calibration it checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, log_expit, logsumexp

__all__ = ["exact_minimiser"]

_OWNER = "exact_audit"
#: Largest gradient (max-norm, relative to 1 + |objective scale|) accepted at a minimiser.
_GRAD_TOL = 1e-9


# ----------------------------------------------------------------------------- learners
#
# Each learner is "a smooth convex objective F_S(theta) = sum_{i in S} c_i l(u_i, y_i)
# + theta' R theta / 2 with margins u = X~ theta", minimised for every subset at once by
# Newton's method with a backtracking line search. The objectives are scikit-learn's
# documented ones, written out here, not taken from skmip.calibration.swap.


def _logistic_terms(t):
    def f(u):
        return -log_expit(t * u)

    def d1(u):
        return -t * expit(-t * u)

    def d2(u):
        p = expit(u)
        return p * (1.0 - p)

    return f, d1, d2


def _sq_hinge_terms(t):
    def f(u):
        return np.maximum(0.0, 1.0 - t * u) ** 2

    def d1(u):
        return -2.0 * t * np.maximum(0.0, 1.0 - t * u)

    def d2(u):
        return 2.0 * (t * u < 1.0)

    return f, d1, d2


def _squares_terms(y, factor):
    # factor * (u - y)^2
    def f(u):
        return factor * (u - y) ** 2

    def d1(u):
        return 2.0 * factor * (u - y)

    def d2(u):
        return np.full_like(u, 2.0 * factor)

    return f, d1, d2


def _tweedie_log_terms(y, power):
    """scikit-learn's half Tweedie deviance with the log link, up to terms in y only."""
    p = float(power)
    if p == 1.0:
        return (lambda u: np.exp(u) - y * u, lambda u: np.exp(u) - y, lambda u: np.exp(u))
    if p == 2.0:
        return (lambda u: y * np.exp(-u) + u, lambda u: 1.0 - y * np.exp(-u), lambda u: y * np.exp(-u))
    return (
        lambda u: -y * np.exp((1 - p) * u) / (1 - p) + np.exp((2 - p) * u) / (2 - p),
        lambda u: np.exp((2 - p) * u) - y * np.exp((1 - p) * u),
        lambda u: np.exp((1 - p) * u) * ((2 - p) * np.exp(u) - (1 - p) * y),
    )


@dataclass
class _Problem:
    """One convex problem per block: F(theta) = c * sum_rows mask * l(X~ theta) + theta'R theta/2."""

    design: np.ndarray  # (n, p) with the intercept column (or synthetic feature) appended
    terms: tuple  # (l, l', l'') elementwise on (H, n) margins
    weight: float  # c
    penalty: np.ndarray  # (p,) diagonal of R


def _newton(problem, masks, max_iter=200):
    """Minimise the problem for every mask (row of 0/1) at once; returns (H, p)."""
    Xd, (f, d1, d2), c, r = problem.design, problem.terms, problem.weight, problem.penalty
    H, p = masks.shape[0], Xd.shape[1]
    theta = np.zeros((H, p))

    def objective(th):
        return c * np.sum(masks * f(th @ Xd.T), axis=1) + 0.5 * np.sum(r * th**2, axis=1)

    F = objective(theta)
    done = np.zeros(H, dtype=bool)
    for _ in range(max_iter):
        U = theta @ Xd.T
        G = c * (masks * d1(U)) @ Xd + r * theta
        scale = 1.0 + np.abs(F)
        done |= np.max(np.abs(G), axis=1) <= 1e-12 * scale
        if done.all():
            break
        W = c * masks * d2(U)
        Hs = np.einsum("hi,ij,ik->hjk", W, Xd, Xd) + np.eye(p) * r
        try:
            step = np.linalg.solve(Hs, G[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = np.stack([np.linalg.lstsq(h, g, rcond=None)[0] for h, g in zip(Hs, G)])
        step[done] = 0.0
        # Backtracking (Armijo) per subset; the objective is convex, so t = 1 is accepted
        # near the minimiser and convergence is quadratic (finite for piecewise quadratics).
        slope = -np.sum(G * step, axis=1)
        t = np.ones(H)
        active = ~done
        for _ in range(60):
            cand = theta - t[:, None] * step
            Fc = objective(cand)
            ok = (Fc <= F + 1e-4 * t * slope) | ~active | (np.abs(Fc - F) <= 1e-15 * scale)
            if ok.all():
                break
            t = np.where(ok, t, 0.5 * t)
        theta = theta - t[:, None] * step
        Fn = objective(theta)
        stalled = (np.abs(F - Fn) <= 1e-16 * scale) & (t < 1e-6)
        F = Fn
        done |= stalled
    U = theta @ Xd.T
    G = c * (masks * d1(U)) @ Xd + r * theta
    return theta, np.max(np.abs(G), axis=1) / (1.0 + np.abs(F))


def _check_grad(owner, gnorm, ok):
    bad = ok & ~(gnorm <= _GRAD_TOL)
    if bad.any():
        raise ArithmeticError(
            f"{owner}: Newton's method did not reach a gradient of {_GRAD_TOL:g} on "
            f"{int(bad.sum())} subset(s) (worst {np.nanmax(gnorm[bad]):.2e}); the objective may "
            "have no minimiser there."
        )


def _augment(X, fit_intercept, value=1.0):
    return np.hstack([X, np.full((X.shape[0], 1), value)]) if fit_intercept else X


def _classes_ok(y_idx, subsets, n_classes):
    """Per subset: the set of classes it misses, as an int bitmask (0 = none missing)."""
    present = np.zeros((len(subsets), n_classes), dtype=bool)
    for c in range(n_classes):
        present[:, c] = np.any(y_idx[subsets] == c, axis=1)
    return ((~present) * (1 << np.arange(n_classes))).sum(axis=1)


def exact_minimiser(estimator, X: ArrayLike, y: ArrayLike, subsets: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""The exact minimiser of the learner's objective on every subset, independently computed.

    Written from scikit-learn's documented objectives (scikit-learn 1.9), minimised by
    batched Newton's method with a line search to a gradient max-norm of 1e-9 (checked; an
    error otherwise). The vector is in :mod:`skmip.params`' layout: ``coef_.ravel()`` then
    the intercept(s).

    * ``LogisticRegression``: :math:`C\sum_S \text{logloss} + \|W\|^2/2`, intercepts free
      (multinomial: the softmax loss, intercepts summing to 0, as the solver started at 0
      leaves them);
    * ``Ridge``, ``LinearRegression``: :math:`\sum_S (y - u)^2 + \alpha\|w\|^2`
      (:math:`\alpha = 0`), intercept free;
    * ``PoissonRegressor``, ``GammaRegressor``, ``TweedieRegressor``:
      :math:`\sum_S \text{half-deviance} + \alpha k\|w\|^2/2`, log link
      (``TweedieRegressor(power=0)``: identity link), intercept free;
    * ``LinearSVC`` (squared hinge), per class (one against the rest):
      :math:`C\sum_S \max(0, 1 - t u)^2 + \|w\|^2/2 + b^2/(2s^2)` with
      :math:`s` = ``intercept_scaling``.

    Parameters
    ----------
    estimator : estimator instance
        Unfitted; only its hyper-parameters are read.
    X : array_like of shape (n, d)
    y : array_like of shape (n,)
    subsets : array_like of int, shape (H, k)
        Row indices of each training set.

    Returns
    -------
    thetas : ndarray of shape (H, p)
        The minimiser per subset (NaN where ``failed``).
    failed : ndarray of int, shape (H,)
        0 where the learner fits; for a classifier, a positive bitmask of the classes the
        subset misses (scikit-learn and the wrappers refuse to fit there, so the release is
        that failure).
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    subsets = np.asarray(subsets, dtype=np.intp)
    n, d = X.shape
    H, k = subsets.shape
    masks = np.zeros((H, n))
    np.put_along_axis(masks, subsets, 1.0, axis=1)
    est = estimator
    name = type(est).__name__
    params = est.get_params()
    fit_intercept = bool(params.get("fit_intercept", True))

    if type(est) in (LogisticRegression, LinearSVC):
        return _classifier_minimiser(est, params, X, y, subsets, masks, fit_intercept)

    failed = np.zeros(H, dtype=np.int64)
    if y.ndim != 1:
        raise ValueError(f"{_OWNER}: only a 1-D target is audited.")
    y = y.astype(np.float64)
    Xa = _augment(X, fit_intercept)
    problem = _regression_problem(est, params, Xa, y, d, k, fit_intercept)
    th, g = _newton(problem, masks)
    _check_grad(name, g, np.ones(H, dtype=bool))
    return th, failed


def _classifier_minimiser(est, params, X, y, subsets, masks, fit_intercept):
    """``LogisticRegression`` and ``LinearSVC``: ``(thetas, failed)``, see :func:`exact_minimiser`."""
    from sklearn.linear_model import LogisticRegression

    name = type(est).__name__
    d = X.shape[1]
    H = subsets.shape[0]
    classes, y_idx = np.unique(y, return_inverse=True)
    K = classes.size
    failed = _classes_ok(y_idx, subsets, K)
    ok = failed == 0
    thetas = np.full((H, (d + fit_intercept) * (1 if K == 2 else K)), np.nan)
    C = float(params["C"])
    if type(est) is LogisticRegression:
        if params.get("penalty", "l2") not in ("l2", "deprecated") or params.get("l1_ratio") not in (None, 0, 0.0):
            raise ValueError(f"{_OWNER}: only the L2-penalised LogisticRegression is audited.")
        if params.get("class_weight") is not None:
            raise ValueError(f"{_OWNER}: class_weight is not audited.")
        Xa = _augment(X, fit_intercept)
        pen = np.r_[np.ones(d), np.zeros(int(fit_intercept))]
        if K == 2:
            t = np.where(y_idx == 1, 1.0, -1.0)
            th, g = _newton(_Problem(Xa, _logistic_terms(t), C, pen), masks[ok])
            _check_grad(name, g, np.ones(len(th), dtype=bool))
            thetas[ok] = th
        else:
            thetas[ok] = _multinomial(Xa, y_idx, K, C, fit_intercept, masks[ok], d)
        return thetas, failed
    # LinearSVC, squared hinge, L2, liblinear's synthetic intercept feature.
    if params.get("loss") != "squared_hinge" or params.get("penalty") != "l2" or params.get("multi_class", "ovr") != "ovr":
        raise ValueError(f"{_OWNER}: only LinearSVC(loss='squared_hinge', penalty='l2') is audited.")
    if params.get("class_weight") is not None:
        raise ValueError(f"{_OWNER}: class_weight is not audited.")
    s = float(params.get("intercept_scaling", 1.0))
    Xa = _augment(X, fit_intercept)
    pen = np.r_[np.ones(d), np.full(int(fit_intercept), 1.0 / s**2)]
    blocks = [1] if K == 2 else list(range(K))
    coefs, icpts = [], []
    for c in blocks:
        t = np.where(y_idx == c, 1.0, -1.0)
        th, g = _newton(_Problem(Xa, _sq_hinge_terms(t), C, pen), masks[ok])
        _check_grad(name, g, np.ones(len(th), dtype=bool))
        coefs.append(th[:, :d])
        icpts.append(th[:, d:])
    thetas[ok] = np.hstack(coefs + icpts)
    return thetas, failed


def _regression_problem(est, params, Xa, y, d, k, fit_intercept):
    """The objective of a linear regressor (squares or half Tweedie deviance), see :func:`exact_minimiser`."""
    from sklearn.linear_model import GammaRegressor, LinearRegression, PoissonRegressor, Ridge, TweedieRegressor

    if type(est) in (Ridge, LinearRegression):
        alpha = float(params.get("alpha", 0.0)) if type(est) is Ridge else 0.0
        if params.get("positive"):
            raise ValueError(f"{_OWNER}: positive=True is not audited.")
        return _Problem(Xa, _squares_terms(y, 1.0), 1.0, np.r_[np.full(d, 2.0 * alpha), np.zeros(int(fit_intercept))])
    if type(est) in (PoissonRegressor, GammaRegressor, TweedieRegressor):
        alpha = float(params["alpha"])
        power = {PoissonRegressor: 1.0, GammaRegressor: 2.0}.get(type(est), params.get("power"))
        link = params.get("link", "auto")
        pen = np.r_[np.full(d, alpha * k), np.zeros(int(fit_intercept))]
        if type(est) is TweedieRegressor and (link == "identity" or (link == "auto" and power <= 0)):
            if power != 0:
                raise ValueError(f"{_OWNER}: the identity link is audited with power=0 only.")
            return _Problem(Xa, _squares_terms(y, 0.5), 1.0, pen)
        if not 1.0 <= power <= 2.0:
            raise ValueError(f"{_OWNER}: the log link is audited for 1 <= power <= 2; got {power}.")
        return _Problem(Xa, _tweedie_log_terms(y, power), 1.0, pen)
    raise TypeError(f"{_OWNER}: no independent objective for {type(est).__name__}.")


def _multinomial(Xa, y_idx, K, C, fit_intercept, masks, d, max_iter=200):
    """Softmax loss C sum logloss + ||W||^2/2, intercepts free with sum_c b_c = 0.

    The softmax is invariant under b -> b + const: among the minimisers the solver (L-BFGS
    from 0, then Newton steps orthogonal to that direction) keeps sum_c b_c = 0, which the
    extra term (sum_c b_c)^2 / 2 selects without moving the minimum.
    """
    n, p = Xa.shape
    H = masks.shape[0]
    T = np.eye(K)[y_idx]  # (n, K)
    pen = np.r_[np.ones(d), np.zeros(int(fit_intercept))]
    R = np.tile(pen, K)  # class-major (c, f)
    u = np.zeros(K * p)
    if fit_intercept:
        u[p - 1 :: p] = 1.0
    Th = np.zeros((H, K, p))

    def objective(th):
        Z = np.einsum("hkp,ip->hik", th, Xa)
        lse = logsumexp(Z, axis=2)
        loss = np.sum(masks * (lse - np.einsum("hik,ik->hi", Z, T)), axis=1)
        flat = th.reshape(H, -1)
        return C * loss + 0.5 * np.sum(R * flat**2, axis=1) + 0.5 * (flat @ u) ** 2

    def grad_hess(th):
        Z = np.einsum("hkp,ip->hik", th, Xa)
        P = np.exp(Z - logsumexp(Z, axis=2, keepdims=True))
        Rr = C * masks[:, :, None] * (P - T)  # (H, n, K)
        G = np.einsum("hik,ip->hkp", Rr, Xa).reshape(H, -1)
        flat = th.reshape(H, -1)
        G = G + R * flat + (flat @ u)[:, None] * u
        W = C * masks[:, :, None, None] * (np.einsum("hia,ab->hiab", P, np.eye(K)) - np.einsum("hia,hib->hiab", P, P))
        Hs = np.einsum("hiab,ip,iq->hapbq", W, Xa, Xa).reshape(H, K * p, K * p)
        Hs = Hs + np.diag(R) + np.outer(u, u)
        return G, Hs

    F = objective(Th)
    done = np.zeros(H, dtype=bool)
    for _ in range(max_iter):
        G, Hs = grad_hess(Th)
        scale = 1.0 + np.abs(F)
        done |= np.max(np.abs(G), axis=1) <= 1e-12 * scale
        if done.all():
            break
        step = np.linalg.solve(Hs, G[:, :, None])[:, :, 0]
        step[done] = 0.0
        slope = -np.sum(G * step, axis=1)
        t = np.ones(H)
        for _ in range(60):
            cand = Th - (t[:, None] * step).reshape(H, K, p)
            Fc = objective(cand)
            ok = (Fc <= F + 1e-4 * t * slope) | done | (np.abs(Fc - F) <= 1e-15 * scale)
            if ok.all():
                break
            t = np.where(ok, t, 0.5 * t)
        Th = Th - (t[:, None] * step).reshape(H, K, p)
        F = objective(Th)
    G, _ = grad_hess(Th)
    _check_grad("LogisticRegression (multinomial)", np.max(np.abs(G), axis=1) / (1.0 + np.abs(F)), np.ones(H, dtype=bool))
    # Adapter layout: coef_ (K, d) ravelled, then intercept_ (K,).
    coef = Th[:, :, :d].reshape(H, -1)
    return np.hstack([coef, Th[:, :, d]]) if fit_intercept else coef
