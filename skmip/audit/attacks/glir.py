"""GLiR, the gradient likelihood-ratio attack of Leemann et al. (Algorithm 1).

The attacker sees the averaged gradient ``m`` of a training step over a batch of ``n``
records and asks whether a query record's gradient ``theta`` was in the batch. Without the
record, ``m`` is a mean of ``n`` independent gradients, so by the central limit theorem
``n (m - theta)^T Sigma^{-1} (m - theta)`` is non-central chi-square with ``d`` degrees of
freedom and non-centrality ``n K``, ``K = ||Sigma^{-1/2} (theta - mu)||^2``; with the record
in the batch it is smaller. The attack reports the log p-value of that test (summed over
steps). It needs per-sample gradients: :func:`logistic_per_sample_gradients` gives them in
closed form for logistic regression; any other source (e.g. torch) works as well.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.rng import resolve_rng
from skmip.utils.validation import check_int, check_interval, check_option

__all__ = ["glir_scores", "logistic_per_sample_gradients", "simulate_glir_gaussian"]

_STATISTICS = ("theorem", "paper")
# log p-values below this are clipped (scipy returns -inf far in the tail); exp(-745) is the
# smallest positive double, so nothing representable is lost.
_LOG_P_FLOOR = -745.0


def _as_steps(owner, mean_gradient, query_gradients, background_gradients):
    m = np.asarray(mean_gradient, dtype=np.float64)
    q = np.asarray(query_gradients, dtype=np.float64)
    single = m.ndim == 1
    if single:
        m, q = m[None], q[None]
    if m.ndim != 2 or q.ndim != 3 or q.shape[0] != m.shape[0] or q.shape[2] != m.shape[1]:
        raise ValueError(
            f"{owner}: expected mean_gradient (d,) with query_gradients (n_queries, d), or "
            f"(T, d) with (T, n_queries, d); got {np.shape(mean_gradient)} and "
            f"{np.shape(query_gradients)}."
        )
    b = None
    if background_gradients is not None:
        b = np.asarray(background_gradients, dtype=np.float64)
        if single:
            b = b[None]
        if b.ndim != 3 or b.shape[0] != m.shape[0] or b.shape[2] != m.shape[1]:
            raise ValueError(
                f"{owner}: background_gradients must be (m, d) (or (T, m, d) for T steps) with "
                f"d = {m.shape[1]}; got {np.shape(background_gradients)}."
            )
    for name, a in (("mean_gradient", m), ("query_gradients", q), ("background_gradients", b)):
        if a is not None and not np.all(np.isfinite(a)):
            raise ValueError(f"{owner}: {name} contains NaN or inf.")
    return m, q, b


def _whitener(owner, cov, ridge):
    """Sigma^{-1/2} (symmetric) from a covariance matrix, with an optional ridge."""
    d = cov.shape[0]
    if ridge > 0:
        cov = cov + ridge * np.trace(cov) / d * np.eye(d)
    w, v = np.linalg.eigh(cov)
    if w.min() <= 1e-12 * max(w.max(), 1e-300):
        raise ValueError(
            f"{owner}: the gradient covariance is singular (smallest eigenvalue "
            f"{w.min():.3g}, largest {w.max():.3g}): its inverse, which the test statistic "
            "needs, does not exist. Pass more background gradients than parameters (m > d), "
            "or ridge > 0 to regularise the estimate."
        )
    return (v / np.sqrt(w)) @ v.T


def glir_scores(
    mean_gradient: ArrayLike,
    query_gradients: ArrayLike,
    background_gradients: ArrayLike | None = None,
    *,
    batch_size: int,
    mean: ArrayLike | None = None,
    covariance: ArrayLike | None = None,
    statistic: str = "theorem",
    ridge: float = 0.0,
    return_log_p: bool = False,
) -> np.ndarray:
    r"""GLiR membership scores of query records from the averaged gradients of training steps.

    Parameters
    ----------
    mean_gradient : array_like of shape (d,) or (T, d)
        The published averaged gradient :math:`m_t` of each of the T steps.
    query_gradients : array_like of shape (n_queries, d) or (T, n_queries, d)
        Per-sample gradient :math:`\theta` of each query record at each step's parameters.
    background_gradients : array_like of shape (m, d) or (T, m, d), default=None
        Per-sample gradients of records drawn from the data distribution (not the batch), used
        to estimate the gradient mean :math:`\hat\mu` and covariance :math:`\hat\Sigma`
        (Algorithm 1, lines 3-6). Not needed if ``mean`` and ``covariance`` are given.
    batch_size : int
        The number n of records averaged into each :math:`m_t` (>= 2).
    mean, covariance : array_like of shape (d,) and (d, d), default=None
        The true gradient mean and covariance when known (e.g. in simulations; Leemann et al.,
        Figure 2a); they override the background estimates.
    statistic : {"theorem", "paper"}, default="theorem"
        Scale of the test statistic; see Notes. ``"theorem"``:
        :math:`\hat S = n (m - \theta)^\top\hat\Sigma^{-1}(m - \theta)`; ``"paper"``:
        :math:`(n-1)(\dots)` as Algorithm 1 prints it.
    ridge : float, default=0.0
        Adds ``ridge * trace(Sigma) / d`` to the diagonal of the covariance before inverting;
        needed when there are fewer background gradients than parameters.
    return_log_p : bool, default=False
        Return the summed log p-values (small = member) instead of scores.

    Returns
    -------
    ndarray of shape (n_queries,)
        Scores :math:`-\sum_t \log p_t` (larger means "member"), or the summed log p-values.

    Raises
    ------
    ValueError
        For inconsistent shapes, non-finite inputs, ``batch_size < 2``, or a singular
        covariance.

    Notes
    -----
    Leemann et al., Algorithm 1 (GLiR) and Theorem 5.1. Line 10 of Algorithm 1 prints
    :math:`p = \log F^{-1}_{\chi^2_d(n\hat K)}(\hat S)`, the *inverse* CDF; the p-value of the
    test -- the probability, for a record that is **not** in the batch, of a statistic at most
    :math:`\hat S` -- is the CDF, :math:`p = F_{\chi^2_d(n\hat K)}(\hat S)`, which is also what
    the authors' code computes (``ncx2.logcdf``). Members give small :math:`\hat S` and thus
    small p; "Train if p_total < eta" (line 13).

    **Scale of the statistic.** If the record is not in the batch, :math:`m` is the mean of
    :math:`n` gradients independent of :math:`\theta`, so :math:`m - \theta` has mean
    :math:`\mu - \theta` and covariance :math:`\Sigma/n`; hence
    :math:`n (m-\theta)^\top \Sigma^{-1} (m-\theta) \sim \chi^2_d(nK)` exactly for Gaussian
    gradients. This is the statistic behind Theorem 5.1's trade-off curve (Eq. 8: with it,
    a member gives :math:`\frac{n-1}{n}\chi^2_d((n-1)K)`, whence the factor
    :math:`\frac{n}{n-1}` there). Algorithm 1 (and the authors' code) scale by :math:`n-1`
    instead while keeping the non-centrality :math:`nK`; their p-values are then not uniform
    for non-members. ``statistic="theorem"`` (default) uses :math:`n`; ``"paper"`` keeps the
    printed :math:`n-1`. The difference vanishes as n grows.

    :math:`\hat K = \|\hat\Sigma^{-1/2}(\theta - \hat\mu)\|^2` (line 9); :math:`\hat\Sigma` is
    the unbiased sample covariance of the background gradients. Log p-values are floored at
    -745 (the log of the smallest double) so that scores stay finite.

    References
    ----------
    Leemann, Pawelczyk, Kasneci, "Gaussian Membership Inference Privacy", NeurIPS 2023:
    Algorithm 1, Theorem 5.1 and Eq. (8)
    (``shared/papers/leemann-gaussian-membership-inference-privacy.txt``).

    Examples
    --------
    One step with known N(0, I) gradients in d = 50 and batch size 10 (Corollary 5.1 gives
    mu = 2.2 for K = d): the batch's own records get much smaller p-values than outsiders.

    >>> rng = np.random.default_rng(0)
    >>> d, n = 50, 10
    >>> batch = rng.normal(size=(n, d))
    >>> outsiders = rng.normal(size=(n, d))
    >>> log_p = glir_scores(batch.mean(0), np.vstack([batch, outsiders]), batch_size=n,
    ...                     mean=np.zeros(d), covariance=np.eye(d), return_log_p=True)
    >>> bool(np.median(log_p[:n]) < np.median(log_p[n:]) - 2)
    True
    """
    owner = "glir_scores"
    n = check_int(owner, "batch_size", batch_size, 2, None,
                  why="it is the number of records averaged into the gradient.")
    check_option(owner, "statistic", statistic, _STATISTICS)
    ridge = check_interval(owner, "ridge", ridge, 0, None)
    m, q, b = _as_steps(owner, mean_gradient, query_gradients, background_gradients)
    T, d = m.shape
    known = mean is not None and covariance is not None
    if not known and b is None:
        raise ValueError(
            f"{owner}: pass background_gradients (to estimate the gradient distribution) or "
            "both mean and covariance."
        )
    if known:
        mu_known = np.asarray(mean, dtype=np.float64).reshape(d)
        cov_known = np.asarray(covariance, dtype=np.float64).reshape(d, d)
        white_known = _whitener(owner, cov_known, ridge)
    scale = n if statistic == "theorem" else n - 1
    log_p = np.zeros(q.shape[1])
    for t in range(T):
        if known:
            mu, white = mu_known, white_known
        else:
            if b.shape[1] < 2:
                raise ValueError(f"{owner}: need at least 2 background gradients per step.")
            mu = b[t].mean(axis=0)
            cov = np.atleast_2d(np.cov(b[t], rowvar=False))
            white = _whitener(owner, cov, ridge)
        log_p += _step_log_p(m[t][None, :], q[t], mu, white, n, scale)
    return log_p if return_log_p else -log_p


def _step_log_p(m, q, mu, white, n, scale):
    """Log p-values of one GLiR step (Algorithm 1, lines 8-10) for query rows ``q``.

    ``m`` is the averaged gradient, (1, d) for one step shared by all queries or (k, d)
    with one averaged gradient per query row (independent simulated steps).
    """
    from scipy.stats import ncx2

    d = q.shape[1]
    s_hat = scale * np.sum(((m - q) @ white) ** 2, axis=1)
    k_hat = np.sum(((q - mu[None, :]) @ white) ** 2, axis=1)
    step = ncx2.logcdf(s_hat, d, n * k_hat)
    return np.maximum(np.nan_to_num(step, nan=_LOG_P_FLOOR, neginf=_LOG_P_FLOOR), _LOG_P_FLOOR)


def logistic_per_sample_gradients(estimator_or_coef, X: ArrayLike, y: ArrayLike, *, intercept=None) -> np.ndarray:
    r"""Per-sample gradients of the logistic (cross-entropy) loss, in closed form.

    Parameters
    ----------
    estimator_or_coef : fitted LogisticRegression-like estimator or array_like
        An estimator with ``coef_`` (shape ``(1, d)`` for two classes, ``(C, d)`` for C >= 3
        multinomial classes), ``intercept_`` and ``classes_``; or the coefficient array itself
        (shape ``(d,)``/``(1, d)`` binary or ``(C, d)`` multinomial).
    X : array_like of shape (n_samples, d)
        Records.
    y : array_like of shape (n_samples,)
        Labels: class labels for an estimator; 0/1 (binary) or ``0..C-1`` for an array.
    intercept : array_like, default=None
        The intercept for an array ``estimator_or_coef`` (omitted from the gradient if None).

    Returns
    -------
    ndarray of shape (n_samples, n_params)
        Gradient of each record's loss :math:`\ell_i = -\log p(y_i | x_i)` with respect to the
        parameters, laid out as :class:`skmip.params.LinearModelAdapter` does:
        ``coef_.ravel()`` then ``intercept_`` (if any).

    Notes
    -----
    Binary: :math:`p = \sigma(w^\top x + b)`, :math:`\nabla_{w,b}\ell = (p - y)\,(x, 1)`.
    Multinomial (softmax over C classes): :math:`\nabla_{W_c}\ell = (p_c - [y = c])\,x`,
    :math:`\nabla_{b_c}\ell = p_c - [y = c]`. The regulariser is not per-sample and is
    left out (it does not depend on any record). These are the per-sample gradients that
    GLiR (Leemann et al., Algorithm 1, lines 4 and 7) needs for a logistic model.

    Examples
    --------
    >>> logistic_per_sample_gradients(np.array([0.0, 0.0]), [[1.0, 2.0]], [1], intercept=[0.0])
    array([[-0.5, -1. , -0.5]])
    """
    from scipy.special import expit, softmax

    owner = "logistic_per_sample_gradients"
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{owner}: X must be 2-D; got shape {X.shape}.")
    y = np.asarray(y)
    if hasattr(estimator_or_coef, "coef_"):
        est = estimator_or_coef
        coef = np.atleast_2d(np.asarray(est.coef_, dtype=np.float64))
        b = np.atleast_1d(np.asarray(getattr(est, "intercept_", 0.0), dtype=np.float64))
        has_b = bool(getattr(est, "fit_intercept", True))
        classes = np.asarray(est.classes_)
        labels = np.searchsorted(classes, y)
        if np.any(labels >= classes.size) or np.any(classes[np.minimum(labels, classes.size - 1)] != y):
            raise ValueError(f"{owner}: y contains labels not in the estimator's classes_ {classes.tolist()}.")
    else:
        coef = np.atleast_2d(np.asarray(estimator_or_coef, dtype=np.float64))
        has_b = intercept is not None
        b = np.atleast_1d(np.asarray(intercept, dtype=np.float64)) if has_b else np.zeros(coef.shape[0])
        labels = y.astype(int)
    if coef.shape[1] != X.shape[1]:
        raise ValueError(f"{owner}: coef has {coef.shape[1]} features but X has {X.shape[1]}.")
    if b.shape[0] != coef.shape[0]:
        raise ValueError(f"{owner}: intercept has {b.shape[0]} entries for {coef.shape[0]} coefficient rows.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"{owner}: X has {X.shape[0]} rows but y has {y.shape[0]}.")
    z = X @ coef.T + b[None, :]
    if coef.shape[0] == 1:
        if np.any((labels != 0) & (labels != 1)):
            raise ValueError(f"{owner}: binary labels must be 0/1; got {np.unique(labels)[:5].tolist()}.")
        resid = expit(z[:, 0]) - labels
        grad_w = resid[:, None] * X
        grad_b = resid[:, None]
    else:
        C = coef.shape[0]
        if np.any((labels < 0) | (labels >= C)):
            raise ValueError(f"{owner}: labels must be in 0..{C - 1}.")
        resid = softmax(z, axis=1)
        resid[np.arange(X.shape[0]), labels] -= 1.0
        grad_w = (resid[:, :, None] * X[:, None, :]).reshape(X.shape[0], -1)
        grad_b = resid
    return np.hstack([grad_w, grad_b]) if has_b else grad_w


def simulate_glir_gaussian(
    n: int,
    d: int,
    *,
    K: float | None = None,
    n_trials: int = 1000,
    mean: ArrayLike | None = None,
    covariance: ArrayLike | None = None,
    statistic: str = "theorem",
    random_state=None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""GLiR log p-values on simulated one-step trials with Gaussian gradients (Leemann Fig. 2a).

    Each trial draws a target gradient :math:`\theta'` of susceptibility exactly ``K`` and
    an averaged gradient :math:`m` of ``n`` Gaussian gradients; in a *member* trial
    :math:`\theta'` is one of the ``n``, in a *non-member* trial it is not. GLiR
    (:func:`glir_scores` with the true mean and covariance) then tests each trial.

    Parameters
    ----------
    n : int
        Batch size (>= 2).
    d : int
        Gradient dimension (>= 1).
    K : float, default=None
        Susceptibility :math:`\|\Sigma^{-1/2}(\theta' - \mu)\|^2` of every target (> 0);
        ``None`` means ``K = d``, as in Leemann Fig. 2.
    n_trials : int, default=1000
        Independent trials per hypothesis.
    mean : array_like of shape (d,), default=None
        Gradient mean :math:`\mu` (zeros if None).
    covariance : array_like of shape (d, d), default=None
        Gradient covariance :math:`\Sigma`, symmetric positive definite (identity if None).
    statistic : {"theorem", "paper"}, default="theorem"
        Scale of the GLiR statistic, see :func:`glir_scores`.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of the simulated gradients.

    Returns
    -------
    log_p_out : ndarray of shape (n_trials,)
        GLiR log p-values of the non-member trials.
    log_p_in : ndarray of shape (n_trials,)
        GLiR log p-values of the member trials. The attack at level :math:`\alpha` says
        "member" when :math:`p < \alpha`, so its FPR is ``mean(exp(log_p_out) < alpha)`` and
        its TPR ``mean(exp(log_p_in) < alpha)``.

    Raises
    ------
    ValueError
        If ``n < 2``, ``d < 1``, ``K <= 0``, ``n_trials < 1``, shapes disagree with ``d``,
        or the covariance is not positive definite.

    Notes
    -----
    Theorem 5.1 of Leemann et al. is exact, not only asymptotic, in this model: the sum of
    the other gradients is drawn directly from its law :math:`N(k\mu, k\Sigma)` (``k`` =
    ``n`` or ``n - 1`` other records), so the batch mean is Gaussian for any ``n`` and the
    cost does not grow with ``n``; the target is
    :math:`\theta' = \mu + L\sqrt{K}u` with :math:`\Sigma = LL^\top` and :math:`u` uniform on
    the unit sphere, so :math:`\|\Sigma^{-1/2}(\theta' - \mu)\|^2 = K` exactly. With
    ``statistic="theorem"`` the non-member p-values are then exactly uniform and the
    member trials' TPR at level :math:`\alpha` is exactly :math:`1 - \beta(\alpha)` of
    Eq. 8 (:func:`skmip.bounds.gmip_tradeoff` with ``tau = 0``): the bound is tight when
    the attacker knows :math:`\mu` and :math:`\Sigma` (Leemann §6.1, Fig. 2a). Real
    gradients need neither be Gaussian nor have known parameters; see
    :func:`skmip.nn.glir_audit` for audits of trained nets (Fig. 2b/2c).

    Trials are independent, so the empirical FPR and TPR at a fixed level are binomial
    proportions over ``n_trials``.

    References
    ----------
    Leemann, Pawelczyk, Kasneci, "Gaussian Membership Inference Privacy", NeurIPS 2023:
    Theorem 5.1, Eq. (8), Algorithm 1, §6.1 and Figure 2a.

    Examples
    --------
    n = 100 records of d = 100 parameters, K = d (Corollary 5.1: mu_step = 0.998). At level
    0.1 the FPR is 0.1 and the TPR is 1 - Eq. 8 = 0.3896, up to Monte-Carlo error
    (binomial standard errors 0.007 and 0.011 for 2000 trials).

    >>> from skmip.bounds import gmip_tradeoff
    >>> out, members = simulate_glir_gaussian(100, 100, n_trials=2000, random_state=0)
    >>> round(1 - float(gmip_tradeoff(0.1, 100, 100)), 4)
    0.3896
    >>> float(np.mean(np.exp(out) < 0.1)), float(np.mean(np.exp(members) < 0.1))
    (0.0945, 0.3895)
    """
    owner = "simulate_glir_gaussian"
    n = check_int(owner, "n", n, 2, None, why="it is the number of records averaged into the gradient.")
    d = check_int(owner, "d", d, 1, None)
    K = float(d) if K is None else check_interval(
        owner, "K", K, 0, None, closed="neither",
        why="it is the target's squared whitened distance from the gradient mean.",
    )
    n_trials = check_int(owner, "n_trials", n_trials, 1, None)
    check_option(owner, "statistic", statistic, _STATISTICS)
    mu = np.zeros(d) if mean is None else np.asarray(mean, dtype=np.float64)
    cov = np.eye(d) if covariance is None else np.asarray(covariance, dtype=np.float64)
    if mu.shape != (d,) or cov.shape != (d, d):
        raise ValueError(
            f"{owner}: mean must have shape ({d},) and covariance ({d}, {d}); got "
            f"{mu.shape} and {cov.shape}."
        )
    try:
        root = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        raise ValueError(
            f"{owner}: covariance must be symmetric positive definite (Cholesky failed); "
            "add a multiple of the identity."
        ) from None
    white = _whitener(owner, cov, 0.0)
    rng = resolve_rng(random_state)
    scale = n if statistic == "theorem" else n - 1
    out = []
    for member in (0, 1):
        u = rng.normal(size=(n_trials, d))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        theta = mu + np.sqrt(K) * u @ root.T
        k = n - member  # the other records in the batch
        others = k * mu + np.sqrt(k) * rng.normal(size=(n_trials, d)) @ root.T
        m = (others + member * theta) / n
        out.append(_step_log_p(m, theta, mu, white, n, scale))
    return out[0], out[1]
