r"""An exact membership audit of Gaussian releases, independent of the calibration code.

Definition 1 (Izzo et al.) on a dataset :math:`D` of :math:`n` rows: the training set
:math:`S` is uniform among the :math:`\binom{n}{k}` subsets of size :math:`k`, and the
release is :math:`\hat\theta = \mathcal{A}(S) + sLz` with :math:`z \sim \mathcal{N}(0, I)`,
the shape :math:`L` and scale :math:`s` fixed given :math:`D`. For a target :math:`x^*` the
prior of membership is :math:`q = k/n` and the promise is that the Bayes-optimal attacker's
accuracy is at most :math:`\max(q, 1-q) + \eta`.

On a tiny :math:`D` everything is enumerable: this module refits the learner on **every**
subset with its own exact minimiser (:func:`exact_minimiser`, batched Newton on the
objective scikit-learn documents, to a gradient of 1e-9; it never calls
:mod:`skmip.calibration.swap` or :mod:`skmip.bounds`), computes the posterior of membership
exactly for each release, and takes the expectation over releases by Monte Carlo
(:func:`gaussian_membership_audit`). What it reads from a fitted object is only what
defines the mechanism as run: the published scale ``noise_scale_``, the published promise,
``n_train_``, and the noise shape :math:`L`, captured at the noise draw
(:func:`capture_gaussian_noise`), because the wrappers do not keep it. In the audit setting
the attacker knows :math:`D`, and :math:`L` is computed from :math:`D` and randomness
independent of :math:`S`, so conditioning on it is the game of Definition 1.

The public entry points audit a fitted release end to end:
:func:`audit_mip_noise_wrapper` (``MIPNoiseWrapper`` and ``MIPNoiseWrapperCV``),
:func:`audit_gaussian_synthesizer` and :func:`audit_marginal_synthesizer`.
``benchmarks/bench_exact_audit.py`` searches worst-case datasets with them and
``docs/exact_audits.md`` ("Adversarial exact audit of the printed eta") reports the results.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import warnings
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, log_expit, logsumexp
from sklearn.pipeline import Pipeline

from skmip.utils.rng import resolve_rng

__all__ = [
    "MembershipAuditResult",
    "RouteError",
    "enumerate_subsets",
    "exact_minimiser",
    "gaussian_membership_audit",
    "capture_gaussian_noise",
    "audit_mip_noise_wrapper",
    "audit_gaussian_synthesizer",
    "audit_synthetic_route",
    "audit_marginal_synthesizer",
]

_OWNER = "exact_audit"
_MAX_SUBSETS = 20_000
#: Elements of the (draws x subsets x whitened dims) difference array per Monte-Carlo chunk.
_CHUNK_ELEMENTS = 2**22
#: Largest gradient (max-norm, relative to 1 + |objective scale|) accepted at a minimiser.
_GRAD_TOL = 1e-9


# ----------------------------------------------------------------------------- result


@dataclass(frozen=True, eq=False)
class MembershipAuditResult:
    r"""The exact Bayes-optimal attacker's accuracy per target, against a printed bound.

    Attributes
    ----------
    targets : ndarray of shape (T,)
        Audited rows of :math:`D`.
    accuracy : ndarray of shape (T,)
        Monte-Carlo estimate of the Bayes-optimal accuracy
        :math:`\mathbb{E}\max(P(\mathrm{in}\mid\hat\theta), P(\mathrm{out}\mid\hat\theta))`.
    baseline : float
        :math:`\max(q, 1-q)` with :math:`q = k/n`: the accuracy of guessing the prior.
    advantage : ndarray of shape (T,)
        ``accuracy - baseline``, the quantity Definition 1 bounds by eta.
    std_error : ndarray of shape (T,)
        Monte-Carlo standard error of ``accuracy`` (and of ``advantage``).
    n : int
        Rows of :math:`D`.
    k : int
        Training-set size.
    n_subsets : int
        :math:`\binom{n}{k}`, all enumerated.
    n_mc : int
        Releases drawn.
    atom_mass : float
        Probability that the mechanism fails (e.g. a classifier's training set misses a
        class); a failure is treated as a release of its own, which tells the attacker the
        missing classes.
    bound : float or None
        The printed bound the advantage is checked against.
    details : dict
        What else the audit recorded (the printed attributes, the learner, the retries).
    """

    targets: np.ndarray
    accuracy: np.ndarray
    baseline: float
    advantage: np.ndarray
    std_error: np.ndarray
    n: int
    k: int
    n_subsets: int
    n_mc: int
    atom_mass: float
    bound: float | None = None
    details: dict = field(default_factory=dict)

    def z_scores(self, bound: float | None = None) -> np.ndarray:
        """``(advantage - bound) / std_error`` per target (``+inf`` where the error is 0)."""
        b = self._bound(bound)
        gap = self.advantage - b
        # A zero standard error means every release gave the same posterior (e.g. no noise
        # where eta >= min(q, 1 - q) makes the promise vacuous): the estimate is exact.
        exact = np.where(np.abs(gap) <= 1e-12, 0.0, np.where(gap > 0, np.inf, -np.inf))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.std_error > 0, gap / np.where(self.std_error > 0, self.std_error, 1.0), exact)

    def violations(self, bound: float | None = None, z: float = 3.0) -> np.ndarray:
        r"""Targets whose advantage exceeds ``bound`` by more than ``z`` standard errors.

        One-sided: with the true advantage at most ``bound``, each target is flagged with
        probability at most :math:`1 - \Phi(z)` (0.00135 at ``z = 3``) by the central limit
        theorem on the i.i.d. per-release values in [1/2, 1].
        """
        return self.targets[self.z_scores(bound) > z]

    def worst(self, bound: float | None = None) -> tuple[int, float, float]:
        """``(target, advantage / bound, std_error / bound)`` at the largest ratio."""
        b = self._bound(bound)
        i = int(np.argmax(self.advantage))
        return int(self.targets[i]), float(self.advantage[i] / b), float(self.std_error[i] / b)

    def _bound(self, bound):
        b = self.bound if bound is None else bound
        if b is None:
            raise ValueError(f"{_OWNER}: no bound to compare with; pass bound=.")
        return float(b)


# ----------------------------------------------------------------------------- subsets


def enumerate_subsets(n: int, k: int) -> np.ndarray:
    """All ``C(n, k)`` subsets of ``range(n)`` of size ``k``, one sorted row each.

    Parameters
    ----------
    n, k : int
        ``1 <= k < n`` and ``C(n, k) <= 20,000``.

    Returns
    -------
    ndarray of shape (C(n, k), k)

    Examples
    --------
    >>> enumerate_subsets(4, 2).tolist()
    [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]
    """
    if not (1 <= k < n):
        raise ValueError(f"{_OWNER}: need 1 <= k < n; got n={n}, k={k}.")
    if math.comb(n, k) > _MAX_SUBSETS:
        raise ValueError(
            f"{_OWNER}: C({n}, {k}) = {math.comb(n, k):,} subsets is more than the "
            f"{_MAX_SUBSETS:,} an exact audit enumerates; use a smaller dataset."
        )
    return np.array(list(itertools.combinations(range(n), k)), dtype=np.intp).reshape(-1, k)


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
    from sklearn.linear_model import (
        GammaRegressor,
        LinearRegression,
        LogisticRegression,
        PoissonRegressor,
        Ridge,
        TweedieRegressor,
    )
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

    failed = np.zeros(H, dtype=np.int64)
    if y.ndim != 1:
        raise ValueError(f"{_OWNER}: only a 1-D target is audited.")
    y = y.astype(np.float64)
    Xa = _augment(X, fit_intercept)
    if type(est) in (Ridge, LinearRegression):
        alpha = float(params.get("alpha", 0.0)) if type(est) is Ridge else 0.0
        if params.get("positive"):
            raise ValueError(f"{_OWNER}: positive=True is not audited.")
        problem = _Problem(Xa, _squares_terms(y, 1.0), 1.0, np.r_[np.full(d, 2.0 * alpha), np.zeros(int(fit_intercept))])
    elif type(est) in (PoissonRegressor, GammaRegressor, TweedieRegressor):
        alpha = float(params["alpha"])
        power = {PoissonRegressor: 1.0, GammaRegressor: 2.0}.get(type(est), params.get("power"))
        link = params.get("link", "auto")
        pen = np.r_[np.full(d, alpha * k), np.zeros(int(fit_intercept))]
        if type(est) is TweedieRegressor and (link == "identity" or (link == "auto" and power <= 0)):
            if power != 0:
                raise ValueError(f"{_OWNER}: the identity link is audited with power=0 only.")
            problem = _Problem(Xa, _squares_terms(y, 0.5), 1.0, pen)
        else:
            if not 1.0 <= power <= 2.0:
                raise ValueError(f"{_OWNER}: the log link is audited for 1 <= power <= 2; got {power}.")
            problem = _Problem(Xa, _tweedie_log_terms(y, power), 1.0, pen)
    else:
        raise TypeError(f"{_OWNER}: no independent objective for {name}.")
    th, g = _newton(problem, masks)
    _check_grad(name, g, np.ones(H, dtype=bool))
    return th, failed


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


# ----------------------------------------------------------------------------- the attacker


def _whitening(scale, noise_scale, d):
    """(project (d, r), projected_noise_std (r,), perp (d, d - r)): theta -> whitened coords."""
    L = np.asarray(scale, dtype=np.float64)
    s = float(noise_scale)
    if L.ndim == 1:
        if L.shape != (d,):
            raise ValueError(f"{_OWNER}: scale has {L.size} entries for {d} parameters.")
        active = (L > 0) & (s > 0)
        eye = np.eye(d)
        return eye[:, active] / (s * L[active]), eye[:, ~active]
    if L.shape != (d, d):
        raise ValueError(f"{_OWNER}: scale has shape {L.shape} for {d} parameters.")
    U, sv, _ = np.linalg.svd(L)
    r = int(np.sum(sv > sv.max() * 1e-12)) if s > 0 and sv.max() > 0 else 0
    # noise s L z = s U diag(sv) V'z: along U_r it is s sv N(0, 1) per coordinate, along
    # the rest of U it is exactly 0 (the attacker sees those coordinates without noise).
    return U[:, :r] / (s * sv[:r]), U[:, r:]


def _groups(perp_values, ok):
    """Subsets whose noiseless coordinates agree share a group (-1 for failed subsets)."""
    g = np.full(len(ok), -1, dtype=np.int64)
    if not ok.any():
        return g
    v = perp_values[ok]
    if v.shape[1] == 0:
        g[ok] = 0
        return g
    tol = 1e-9 * (1.0 + np.max(np.abs(v)))
    key = np.round(v / tol).astype(np.int64)
    g[ok] = np.unique(key, axis=0, return_inverse=True)[1].reshape(-1)
    return g


def gaussian_membership_audit(
    outputs: ArrayLike,
    subsets: ArrayLike,
    n: int,
    *,
    scale: ArrayLike,
    noise_scale: float,
    failed: ArrayLike | None = None,
    target: int | ArrayLike | None = None,
    n_mc: int = 20_000,
    random_state=None,
) -> MembershipAuditResult:
    r"""Bayes-optimal membership accuracy for the release :math:`\mathcal{A}(S) + sLz`.

    :math:`S` is uniform over the given subsets (all :math:`\binom{n}{k}` of them for
    Definition 1). For a release :math:`\hat\theta` the posterior of "x* in S" is exact:

    .. math::

        P(x^* \in S \mid \hat\theta) =
        \frac{\sum_{S \ni x^*} \varphi(\hat\theta; \mathcal{A}(S))}{\sum_S \varphi(\hat\theta; \mathcal{A}(S))},

    with :math:`\varphi` the Gaussian density of covariance :math:`s^2 LL^\top` (computed
    after whitening by :math:`L`, in log space). The accuracy is
    :math:`\mathbb{E}\max(P, 1 - P)` over releases drawn from the mechanism (a uniform
    :math:`S`, then the noise): an unbiased mean of i.i.d. values in [1/2, 1], reported with
    its standard error. With the prior :math:`q = k/n` this equals
    :math:`\int\max(q p_{in}, (1-q) p_{out})`, the accuracy Definition 1 bounds by
    :math:`\max(q, 1-q) + \eta`.

    Parameters
    ----------
    outputs : array_like of shape (H, d)
        :math:`\mathcal{A}(S)` per subset (ignored where ``failed``).
    subsets : array_like of int, shape (H, k)
        The training sets, equally likely.
    n : int
        Rows of :math:`D`.
    scale : array_like of shape (d,) or (d, d)
        The noise shape: a vector :math:`w` (noise :math:`s\,w\odot z`; zeros are noiseless
        coordinates) or a factor :math:`L` (noise :math:`sLz`; any rank: coordinates outside
        its range are released without noise and the attacker uses them exactly).
    noise_scale : float
        :math:`s`.
    failed : array_like of int, shape (H,), optional
        Non-zero marks a subset on which the mechanism fails; equal codes are the same
        observable failure (an atom of the release law).
    target : int or array_like of int, optional
        Rows to audit; all by default.
    n_mc : int, default=20000
        Releases drawn.
    random_state : None, int or Generator
        Seeds the Monte Carlo.

    Returns
    -------
    MembershipAuditResult

    Examples
    --------
    Two records, one in the training set: the release tells which, blurred by the noise;
    the exact accuracy is :math:`\Phi(\Delta/2s)` for outputs :math:`\Delta` apart.

    >>> import numpy as np
    >>> from scipy.stats import norm
    >>> res = gaussian_membership_audit([[0.0], [1.0]], [[0], [1]], 2, scale=[1.0],
    ...                                 noise_scale=0.5, n_mc=20000, random_state=0)
    >>> bool(abs(res.accuracy[0] - norm.cdf(1.0)) < 4 * res.std_error[0]), res.baseline
    (True, 0.5)
    """
    outputs = np.asarray(outputs, dtype=np.float64)
    subsets = np.asarray(subsets, dtype=np.intp)
    H, k = subsets.shape
    if outputs.ndim != 2 or outputs.shape[0] != H:
        raise ValueError(f"{_OWNER}: outputs must have one row per subset; got {outputs.shape} for {H}.")
    d = outputs.shape[1]
    failed = np.zeros(H, dtype=np.int64) if failed is None else np.asarray(failed, dtype=np.int64)
    ok = failed == 0
    if not np.all(np.isfinite(outputs[ok])):
        raise ValueError(f"{_OWNER}: outputs are not finite on some subsets that did not fail.")
    targets = np.arange(n) if target is None else np.atleast_1d(np.asarray(target, dtype=np.intp))
    members = np.zeros((H, n))
    np.put_along_axis(members, subsets, 1.0, axis=1)
    members = members[:, targets]

    project, perp = _whitening(scale, noise_scale, d)
    W = np.where(ok[:, None], np.nan_to_num(outputs) @ project, 0.0)  # (H, r)
    r = W.shape[1]
    group = _groups(np.nan_to_num(outputs) @ perp, ok)
    # Failed subsets: one group per failure code (no continuous part).
    codes = np.unique(failed[~ok])
    for code in codes:
        group[failed == code] = group.max(initial=-1) + 1
    n_groups = np.unique(group).size
    half_sq = np.sum(W**2, axis=1)
    rng = resolve_rng(random_state)
    per_draw = max(1, H * 4)
    m_chunk = int(max(1, min(n_mc, _CHUNK_ELEMENTS // per_draw)))
    values = []
    drawn = 0
    while drawn < n_mc:
        m = min(m_chunk, n_mc - drawn)
        h = rng.integers(H, size=m)
        z = rng.standard_normal((m, r))
        R = W[h] + z
        # -||R - W_v||^2 / 2 up to a term constant in v (it cancels in the posterior).
        logl = R @ W.T - 0.5 * half_sq[None, :]
        atom = ~ok[h]
        logl[atom] = 0.0  # a failure: every subset with the same failure is equally likely
        if n_groups > 1:
            logl = np.where(group[h][:, None] == group[None, :], logl, -np.inf)
        logl -= logl.max(axis=1, keepdims=True)
        e = np.exp(logl)
        post = (e @ members) / e.sum(axis=1, keepdims=True)
        values.append(np.maximum(post, 1.0 - post))
        drawn += m
    g = np.concatenate(values, axis=0)
    q = k / n
    baseline = max(q, 1.0 - q)
    acc = g.mean(axis=0)
    return MembershipAuditResult(
        targets=targets,
        accuracy=acc,
        baseline=baseline,
        advantage=acc - baseline,
        std_error=g.std(axis=0, ddof=1) / math.sqrt(n_mc),
        n=n,
        k=k,
        n_subsets=H,
        n_mc=n_mc,
        atom_mass=float(np.mean(~ok)),
    )


# ----------------------------------------------------------------------------- capture


class RouteError(RuntimeError):
    """The audited release route refused the dataset (for every seed tried) or crashed."""


class BelowPrecision(ValueError):
    """The release's noise is at the precision of the audit's own refits (whitened by the
    noise, their rounding is not negligible): the exact attacker cannot be computed here."""


class NoPromise(ValueError):
    """The fitted object states no eta (``mip_bound_`` is None): there is nothing to break.

    skmip prints no promise where it cannot prove one (``train_size=1.0``; coupling distances
    that are estimates, e.g. the multinomial and squared-hinge losses)."""



@contextlib.contextmanager
def capture_gaussian_noise():
    """Record every Gaussian noise draw of the wrappers: ``(shape, scale, noise)`` tuples.

    Wraps ``skmip.defend._noise_method.sample_gaussian_noise`` (the one place the coupling
    calibration draws its noise ``s L z``) for the duration of the block and appends the
    shape ``L`` (or ``w``), the scale ``s`` and the noise drawn to the yielded list. The
    draw itself is unchanged. The wrappers keep neither ``L`` nor the noise.

    Yields
    ------
    list of tuple
    """
    import skmip.defend._noise_method as noise_module

    original = noise_module.sample_gaussian_noise
    records = []

    def spy(scale, noise_scale, **kwargs):
        out = original(scale, noise_scale, **kwargs)
        records.append((np.array(scale, dtype=np.float64, copy=True), float(noise_scale), np.array(out)))
        return out

    noise_module.sample_gaussian_noise = spy
    try:
        yield records
    finally:
        noise_module.sample_gaussian_noise = original


def _printed_bound(fitted):
    """The tightest eta the fitted object prints (and all it prints)."""
    printed = {}
    for name in ("mip_bound_", "coupling_eta_upper_", "coupling_eta_"):
        value = getattr(fitted, name, None)
        if value is not None:
            printed[name] = float(value)
    inner = getattr(fitted, "best_estimator_", None)
    if inner is not None:
        for name in ("coupling_eta_upper_",):
            value = getattr(inner, name, None)
            if value is not None:
                printed[f"best_estimator_.{name}"] = float(value)
    if not printed:
        raise NoPromise(f"{_OWNER}: {type(fitted).__name__} prints no eta (mip_bound_).")
    return min(printed.values()), printed


def _fit_retrying(make, X, y, seeds, capture, max_seconds=None):
    """Fit ``make(seed)`` on (X, y) for the first seed whose calibration succeeds.

    A failed calibration (e.g. a calibration subset that misses a class) happens before and
    independently of the draw of D_train's released fit, so retrying with a fresh seed does
    not condition the release on D_train.
    """
    import time

    errors = []
    start = time.perf_counter()
    for seed in seeds:
        if max_seconds is not None and errors and time.perf_counter() - start > max_seconds:
            break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cm = capture_gaussian_noise() if capture else contextlib.nullcontext([])
            with cm as records:
                try:
                    obj = make(seed)
                    obj.fit(X) if y is None else obj.fit(X, y)
                except ValueError as exc:
                    errors.append(str(exc).splitlines()[0][:200])
                    continue
                except Exception as exc:  # a crash of the route, not of the audit
                    raise RouteError(f"{type(exc).__name__} in fit: {str(exc)[:200]}") from exc
        return obj, list(records), len(errors)
    raise RouteError(f"every calibration failed ({len(errors)} seeds); last: {errors[-1]}")


def audit_mip_noise_wrapper(
    make_wrapper,
    X: ArrayLike,
    y: ArrayLike,
    *,
    seeds=range(20),
    target: int | ArrayLike | None = None,
    n_mc: int = 20_000,
    random_state=0,
    check_release: bool = True,
    max_seconds: float | None = None,
) -> MembershipAuditResult:
    r"""Exact membership audit of a ``MIPNoiseWrapper`` (or ``MIPNoiseWrapperCV``) release.

    Fits ``make_wrapper(seed)`` on ``(X, y)`` (the next seed when the calibration fails),
    capturing the noise law it draws the release from (:func:`capture_gaussian_noise`; for
    ``MIPNoiseWrapperCV`` the last draw, which is the released refit), reads the published
    ``n_train_`` (k), ``noise_scale_`` and the printed promise (the smallest of
    ``mip_bound_`` and ``coupling_eta_upper_``), refits the learner on all
    :math:`\binom{n}{k}` training sets with :func:`exact_minimiser`, and runs
    :func:`gaussian_membership_audit` for every target.

    Parameters
    ----------
    make_wrapper : callable
        ``seed -> unfitted wrapper`` (the seed is its ``random_state``).
    X, y : array_like
        The dataset D.
    seeds : iterable of int, default=range(20)
        Seeds tried in turn.
    target : int or array_like of int, optional
        Rows to audit; all by default.
    n_mc : int, default=20000
        Releases drawn in the Monte Carlo.
    random_state : None, int or Generator, default=0
        Seeds the Monte Carlo.
    check_release : bool, default=True
        Check that the released parameters minus the captured noise equal
        :func:`exact_minimiser` on some training set (the audited map is the released
        one), to 1e-6 relative.
    max_seconds : float, optional
        Stop trying further seeds once this many seconds have passed.

    Returns
    -------
    MembershipAuditResult
        With ``bound`` the printed promise and ``details`` holding everything printed, the
        retries and the distance of the release to the audited map.
    """
    from skmip.params import get_adapter

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    fitted, records, retries = _fit_retrying(make_wrapper, X, y, seeds, capture=True, max_seconds=max_seconds)
    wrapper = getattr(fitted, "best_estimator_", fitted)
    if getattr(wrapper, "method_", None) != "coupling" or not records:
        raise ValueError(f"{_OWNER}: the audit covers the coupling calibration (Gaussian noise); got method_={getattr(wrapper, 'method_', None)!r}.")
    shape, s, noise = records[-1]
    if not math.isclose(s, wrapper.noise_scale_, rel_tol=1e-12):
        raise AssertionError(f"{_OWNER}: the captured scale {s} is not the published noise_scale_ {wrapper.noise_scale_}.")
    n, k = len(X), int(wrapper.n_train_)
    subsets = enumerate_subsets(n, k)
    learner, features, last = wrapper.estimator, X, wrapper.estimator_
    if isinstance(learner, Pipeline):
        features, learner, last = _transformed_by_d(wrapper, X, y)
    outputs, failed = exact_minimiser(learner, features, y, subsets)
    bound, printed = _printed_bound(fitted)
    details = {"printed": printed, "retries": retries, "learner": repr(wrapper.estimator),
               "engine": getattr(wrapper, "sensitivity_engine_", None)}
    if check_release:
        published = get_adapter(last).get_vector(last)
        released = published - noise
        ok = failed == 0
        gap = np.min(np.max(np.abs(outputs[ok] - released), axis=1)) / (1.0 + np.max(np.abs(released)))
        details["release_gap"] = float(gap)
        # Subtracting the noise loses about eps * |noise| (a huge noise hides theta in rounding).
        rounding = 8 * np.finfo(float).eps * np.max(np.abs(published)) / (1.0 + np.max(np.abs(released)))
        if not gap <= 1e-6 + rounding:
            raise AssertionError(
                f"{_OWNER}: the released parameters minus the noise are {gap:.2e} (relative) from "
                "the exact minimiser on every training set: the audited map is not the released one."
            )
    # The refits are exact to a gradient of _GRAD_TOL (relative ~1e-9 of the parameters): where
    # the noise is comparable, whitened by the noise their rounding is itself a signal that the
    # released map (solved to machine precision) does not carry.
    L = np.atleast_2d(np.asarray(shape, dtype=np.float64))
    L = np.diag(L[0]) if L.shape[0] == 1 else L
    precision = 0.0
    if s > 0:  # (s = 0: no noise is needed, the promise is vacuous and the audit exact)
        precision = 1e-8 * (1.0 + np.max(np.abs(outputs[failed == 0]))) * np.linalg.norm(np.linalg.pinv(L), 2) / s
    if not precision < 1e-2:
        raise BelowPrecision(f"{_OWNER}: the noise (scale {s:.3g} of its shape) is at the precision of the "
                             f"audit's refits (whitened rounding {precision:.2g}); this release cannot be audited.")
    res = gaussian_membership_audit(outputs, subsets, n, scale=shape, noise_scale=s, failed=failed,
                                    target=target, n_mc=n_mc, random_state=random_state)
    return _with(res, bound, details)


def _transformed_by_d(wrapper, X, y):
    """A pipeline's release: transformers fitted on all of D, then the last step on S.

    The audit fits the transformers on ``(X, y)`` itself (scikit-learn's own ``fit``), checks
    that the released transformers map D to the same rows (so they are those of D, the same
    for every training set S, and carry no membership signal), and returns the transformed
    rows, the unfitted last step and the released last step.
    """
    from sklearn.base import clone

    own = clone(wrapper.estimator[:-1]).fit(X, y)
    features = _dense(own.transform(X))
    released = _dense(wrapper.estimator_[:-1].transform(X))
    if features.shape != released.shape or not np.allclose(features, released, rtol=1e-12, atol=1e-12):
        raise AssertionError(
            f"{_OWNER}: the released pipeline's transformers do not map D as transformers fitted on "
            "all of D do: they depend on the training set, which this audit does not cover."
        )
    return features, wrapper.estimator.steps[-1][1], wrapper.estimator_.steps[-1][1]


def _dense(Z):
    return np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z, dtype=np.float64)


def _with(res, bound, details):
    return MembershipAuditResult(**{**res.__dict__, "bound": bound, "details": details})


def audit_gaussian_synthesizer(
    make_synthesizer, X: ArrayLike, *, seeds=range(20), target=None, n_mc: int = 20_000, random_state=0,
    max_seconds: float | None = None,
) -> MembershipAuditResult:
    r"""Exact membership audit of ``MIPGaussianSynthesizer(method="coupling")``.

    The synthesizer releases the mean over :math:`S` of :math:`\phi(x) = (x,
    \mathrm{upper}(xx^\top))` (``center=True``; ``upper(x x^T)`` alone otherwise) plus
    :math:`sLz`, with :math:`L` the Cholesky factor of the Ledoit-Wolf covariance of
    :math:`\phi` over all of :math:`D` (plus :math:`10^{-12}` times its mean variance on
    the diagonal) -- a function of :math:`D` alone, which is how the release is defined,
    so the audit recomputes it (with scikit-learn's ``ledoit_wolf``); everything published
    afterwards (covariance, square root, samples) is post-processing. The released mean
    is checked to be :math:`\mathcal{A}(S) + (sLz)_{1..d}` for the noise the synthesizer
    drew (captured from its random generator) on some :math:`S`, to 1e-8.

    Parameters
    ----------
    make_synthesizer : callable
        ``seed -> unfitted MIPGaussianSynthesizer``.
    X : array_like of shape (n, d)
    seeds, target, n_mc, random_state, max_seconds
        As in :func:`audit_mip_noise_wrapper`.

    Returns
    -------
    MembershipAuditResult
    """
    from sklearn.covariance import ledoit_wolf

    import skmip.release.gaussian as synthetic_module

    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    draws = []
    original = synthetic_module.resolve_rng

    class _Recorder:
        def __init__(self, rng):
            self._rng = rng

        def __getattr__(self, name):
            return getattr(self._rng, name)

        def standard_normal(self, *args, **kwargs):
            out = self._rng.standard_normal(*args, **kwargs)
            draws.append(np.array(out))
            return out

    synthetic_module.resolve_rng = lambda state: _Recorder(original(state))
    try:
        synth, _, retries = _fit_retrying(make_synthesizer, X, None, seeds, capture=False,
                                          max_seconds=max_seconds)
    finally:
        synthetic_module.resolve_rng = original
    if synth.method_ != "coupling":
        raise ValueError(f"{_OWNER}: only method='coupling' releases Gaussian noise; got {synth.method_!r}.")
    rows, cols = np.triu_indices(d)
    second = X[:, rows] * X[:, cols]
    features = np.hstack([X, second]) if synth.center else second
    shape = ledoit_wolf(features)[0]
    spread = float(np.trace(shape)) / len(shape)
    shape[np.diag_indices_from(shape)] += 1e-12 * spread if spread > 0 else 1.0
    L = np.linalg.cholesky(shape)
    k = int(synth.n_train_)
    subsets = enumerate_subsets(n, k)
    outputs = features[subsets].mean(axis=1)
    s = float(synth.noise_scale_)
    details = {"printed": _printed_bound(synth)[1], "retries": retries, "learner": repr(synth)}
    if synth.center and draws:
        noise = s * (L @ draws[-1])
        gap = np.min(np.max(np.abs(outputs[:, :d] + noise[:d] - synth.mean_), axis=1))
        details["release_gap"] = float(gap)
        if not gap <= 1e-8 * (1.0 + np.max(np.abs(synth.mean_))):
            raise AssertionError(f"{_OWNER}: the released mean is {gap:.2e} from every A(S) + noise.")
    res = gaussian_membership_audit(outputs, subsets, n, scale=L, noise_scale=s, target=target,
                                    n_mc=n_mc, random_state=random_state)
    return _with(res, _printed_bound(synth)[0], details)


def audit_marginal_synthesizer(
    make_synthesizer, X: ArrayLike, *, seeds=range(20), target=None, n_mc: int = 20_000, random_state=0,
    max_seconds: float | None = None,
) -> MembershipAuditResult:
    r"""Exact membership audit of ``MIPMarginalSynthesizer``'s noisy marginal tables.

    The release is the vector of cell fractions over :math:`S` of the published tables
    ``marginals_`` (on the published ``categories_``, both functions of :math:`D` when
    ``train_size < 1``) plus :math:`s z`, :math:`z \sim \mathcal{N}(0, I)`, with
    :math:`s` = ``noise_scale_``; the consistent tables and every sample are post-processing
    of it.

    Parameters
    ----------
    make_synthesizer : callable
        ``seed -> unfitted MIPMarginalSynthesizer``.
    X : array_like of shape (n, c)
        Categorical columns.
    seeds, target, n_mc, random_state, max_seconds
        As in :func:`audit_mip_noise_wrapper`.

    Returns
    -------
    MembershipAuditResult
    """
    X = np.asarray(X)
    synth, _, retries = _fit_retrying(make_synthesizer, X, None, seeds, capture=False,
                                          max_seconds=max_seconds)
    codes = np.stack(
        [np.searchsorted(cats, X[:, j]) for j, cats in enumerate(synth.categories_)], axis=1
    )
    for j, cats in enumerate(synth.categories_):
        if not np.array_equal(cats[codes[:, j]], X[:, j]):
            raise AssertionError(f"{_OWNER}: categories_ of column {j} do not cover D.")
    sizes = [len(c) for c in synth.categories_]
    return _audit_cell_fractions(synth, synth, codes, sizes, synth.marginals_, retries, target, n_mc,
                                 random_state)


def _audit_cell_fractions(printed_by, synth, codes, sizes, marginals, retries, target, n_mc, random_state):
    """The exact audit of noisy cell fractions of ``marginals`` over every k-subset of coded D."""
    n = codes.shape[0]
    k = int(synth.n_train_)
    if k >= n:
        raise ValueError(f"{_OWNER}: train_size=1.0 has no D to audit against (n_train_ = n).")
    subsets = enumerate_subsets(n, k)
    blocks = []
    for m in marginals:
        shape = tuple(sizes[j] for j in m)
        cell = np.ravel_multi_index(tuple(codes[:, j] for j in m), shape)
        onehot = np.eye(int(np.prod(shape)))[cell]  # (n, cells)
        blocks.append(onehot)
    phi = np.hstack(blocks)
    outputs = phi[subsets].mean(axis=1)
    s = float(synth.noise_scale_)
    details = {"printed": _printed_bound(printed_by)[1], "retries": retries, "learner": repr(printed_by),
               "marginals": [tuple(int(j) for j in m) for m in marginals]}
    res = gaussian_membership_audit(outputs, subsets, n, scale=np.ones(phi.shape[1]), noise_scale=s,
                                    target=target, n_mc=n_mc, random_state=random_state)
    return _with(res, _printed_bound(printed_by)[0], details)


def audit_synthetic_route(
    make_wrapper, X: ArrayLike, y: ArrayLike, *, seeds=range(20), target=None, n_mc: int = 20_000,
    random_state=0, max_seconds: float | None = None,
) -> MembershipAuditResult:
    r"""Exact membership audit of ``MIPNoiseWrapper``'s synthetic route (``method_="synthetic"``).

    The wrapper trains its estimator on records sampled from ``synthesizer_``, a
    ``MIPTabularSynthesizer`` of the table ``(X, y)``: the release is the vector of cell
    fractions over :math:`S` of the coded records (codes by the published ``domains_``,
    functions of :math:`D` when ``train_size < 1``) on the published ``marginals_``, plus
    :math:`s z` with :math:`s` = ``noise_scale_``; the tables, the samples and the model
    trained on them are post-processing of it. Each categorical code is checked to decode
    to the value it codes.

    Parameters
    ----------
    make_wrapper : callable
        ``seed -> unfitted MIPNoiseWrapper`` whose estimator takes the synthetic route.
    X : array_like of shape (n, c)
    y : array_like of shape (n,)
    seeds, target, n_mc, random_state, max_seconds
        As in :func:`audit_mip_noise_wrapper`.

    Returns
    -------
    MembershipAuditResult
    """
    X = np.asarray(X)
    wrapper, _, retries = _fit_retrying(make_wrapper, X, y, seeds, capture=False, max_seconds=max_seconds)
    if wrapper.method_ != "synthetic":
        raise ValueError(f"{_OWNER}: the wrapper took method_={wrapper.method_!r}, not the synthetic route.")
    synth = wrapper.synthesizer_
    columns = [X[:, j] for j in range(X.shape[1])] + ([np.asarray(y)] if synth.has_target_ else [])
    codes = np.stack([d.encode(c) for d, c in zip(synth.domains_, columns)], axis=1)
    for d, c, code in zip(synth.domains_, columns, codes.T):
        values = d.categories if d.kind == "categorical" else d.atoms
        if len(values) and code.max() < len(values) and not np.array_equal(values[code], c):
            raise AssertionError(f"{_OWNER}: the domain of column {d.name!r} does not code D one to one.")
    sizes = [d.size for d in synth.domains_]
    return _audit_cell_fractions(wrapper, synth, codes, sizes, synth.marginals_, retries, target, n_mc,
                                 random_state)
