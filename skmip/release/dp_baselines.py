"""Differentially private estimates of a second-moment matrix, to compare with MIP at equal eta.

Two (epsilon, delta)-DP baselines for the synthetic-data experiment of Izzo et al., Section
5.2, each placed on the MIP axis by Theorem 4 (:func:`skmip.bounds.dp_to_mip`):

* :func:`analyze_gauss` -- the Gaussian mechanism on the second-moment matrix of clipped rows
  (Dwork, Talwar, Thakurta & Zhang 2014, "Analyze Gauss");
* :func:`dp_gradient_descent_second_moment` -- full-batch DP gradient descent on the
  objective ``||A - (1/n) sum_i x_i x_i^T||_F^2``, the DP method of Izzo et al.'s Figure 2
  (DP-SGD of Abadi et al. 2016 with the whole dataset as the batch).

Conventions
-----------
*Neighbouring datasets.* Theorem 4 converts DP into MIP through datasets of equal size that
differ by *replacing* one record (its proof pairs each training set containing the target
with one where another record takes its place, Lemma 12). ``neighbours="replace"`` (the
default) calibrates to that relation; ``"add_remove"`` (one record added or removed) is
what Dwork et al. analyse, and does not license :func:`~skmip.bounds.dp_to_mip` by itself.

*Public size.* Both functions divide sums by the number of rows ``n``. Under replace-one
neighbours ``n`` is the same for both datasets, so this is post-processing; under
add/remove neighbours ``n`` is treated as public, as in Abadi et al.

*Noise calibration.* ``calibration="analytic"`` (default) is the exact Gaussian-mechanism
calibration of Balle & Wang (2018), valid for every epsilon > 0 and never noisier than the
classical ``sqrt(2 ln(1.25/delta)) / epsilon`` (Dwork & Roth 2014, Theorem A.1), which is
kept as ``calibration="classical"`` and is valid only for epsilon < 1.

Pure numpy/scipy; randomness through an explicit ``random_state``.

References
----------
C. Dwork, K. Talwar, A. Thakurta, L. Zhang, "Analyze Gauss: optimal bounds for
privacy-preserving principal component analysis", STOC 2014, Algorithm 1.

B. Balle, Y.-X. Wang, "Improving the Gaussian mechanism for differential privacy:
analytical calibration and optimal denoising", ICML 2018, Theorem 8.

C. Dwork, A. Roth, "The Algorithmic Foundations of Differential Privacy", 2014,
Theorem A.1.

J. Dong, A. Roth, W. J. Su, "Gaussian Differential Privacy", JRSS-B 84(1), 2022,
Corollary 2.13 and Corollary 3.3.

M. Abadi et al., "Deep learning with differential privacy", CCS 2016.

Z. Izzo, J. Yoon, S. O. Arik, J. Zou, "Provable Membership Inference Privacy", Theorem 4,
Lemma 12, Section 5.2.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.rng import resolve_rng
from skmip.utils.validation import check_int, check_interval, check_option
from skmip.bounds import dp_to_gdp_mu
from skmip.params import nearest_psd as _project_psd

__all__ = [
    "gaussian_noise_scale",
    "clip_rows",
    "analyze_gauss",
    "second_moment_gradient_norms",
    "dp_gd_noise_multiplier",
    "dp_gradient_descent_second_moment",
]

_NEIGHBOURS = ("replace", "add_remove")
_CALIBRATIONS = ("analytic", "classical")


def _check_epsilon_delta(owner, epsilon, delta):
    epsilon = check_interval(
        owner, "epsilon", epsilon, 0, None, closed="neither",
        why="epsilon = 0 would need infinite noise; use skmip.bounds.mip_to_dp_epsilon(eta, delta) to get "
        "the epsilon that promises a given eta.",
    )
    if math.isinf(epsilon):
        raise ValueError(f"{owner}: epsilon must be finite; got {epsilon!r}. Infinite epsilon promises nothing.")
    delta = check_interval(
        owner, "delta", delta, 0, 1, closed="neither",
        why="The Gaussian mechanism needs delta > 0; use delta well below 1/n_samples.",
    )
    return epsilon, delta


def gaussian_noise_scale(
    epsilon: float, delta: float, sensitivity: float = 1.0, *, calibration: str = "analytic"
) -> float:
    r"""Noise standard deviation of the (epsilon, delta)-DP Gaussian mechanism.

    Parameters
    ----------
    epsilon : float
        Privacy loss, > 0 (< 1 for ``calibration="classical"``).
    delta : float
        Failure probability in (0, 1).
    sensitivity : float, default=1.0
        L2 sensitivity of the query between neighbouring datasets, > 0.
    calibration : {"analytic", "classical"}, default="analytic"
        ``"analytic"``: :math:`s = \Delta / \mu^*(\epsilon, \delta)` with
        :func:`skmip.bounds.dp_to_gdp_mu` (Balle & Wang 2018, exact). ``"classical"``:
        :math:`s = \Delta\sqrt{2\ln(1.25/\delta)}/\epsilon` (Dwork & Roth, Theorem A.1).

    Returns
    -------
    float
        The standard deviation of the Gaussian noise to add to each coordinate.

    Raises
    ------
    ValueError
        For epsilon, delta or sensitivity out of range, an unknown calibration, or
        ``calibration="classical"`` with ``epsilon >= 1`` (where Theorem A.1 does not hold).

    Notes
    -----
    The classical formula is proved for :math:`\epsilon < 1` only; the analytic one is
    exact for every epsilon and never larger (for epsilon < 1 it is typically 10-30%
    smaller).

    References
    ----------
    Dwork & Roth (2014), Theorem A.1; Balle & Wang (2018), Theorem 8.

    Examples
    --------
    >>> round(gaussian_noise_scale(0.5, 1e-5, calibration="classical"), 3)
    9.69
    >>> bool(gaussian_noise_scale(0.5, 1e-5) < 9.69)
    True
    """
    owner = "gaussian_noise_scale"
    epsilon, delta = _check_epsilon_delta(owner, epsilon, delta)
    sensitivity = check_interval(owner, "sensitivity", sensitivity, 0, None, closed="neither")
    check_option(owner, "calibration", calibration, _CALIBRATIONS)
    if calibration == "classical":
        if epsilon >= 1:
            raise ValueError(
                f"{owner}: calibration='classical' holds only for epsilon < 1 (Dwork & Roth, "
                f"Theorem A.1); got epsilon={epsilon!r}. Use calibration='analytic'."
            )
        return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    return sensitivity / dp_to_gdp_mu(epsilon, delta)


def clip_rows(X: ArrayLike, clip_norm: float) -> np.ndarray:
    """Scale every row of ``X`` with Euclidean norm above ``clip_norm`` down to that norm.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    clip_norm : float
        Largest row norm, > 0.

    Returns
    -------
    ndarray of shape (n_samples, n_features)
        ``x * min(1, clip_norm / ||x||)`` row by row (a new float64 array).

    Examples
    --------
    >>> clip_rows([[3.0, 4.0], [0.3, 0.4]], 1.0)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    clip_norm = check_interval("clip_rows", "clip_norm", clip_norm, 0, None, closed="neither")
    X = np.array(X, dtype=np.float64, ndmin=2)
    norms = np.linalg.norm(X, axis=1)
    scale = np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(np.float64).tiny))
    return X * scale[:, None]


def _check_X(owner, X):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{owner}: X must be a non-empty 2-D array; got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{owner}: X contains NaN or infinite values; impute or drop them first.")
    return X


def analyze_gauss(
    X: ArrayLike,
    *,
    epsilon: float,
    delta: float,
    clip_norm: float = 1.0,
    neighbours: str = "replace",
    calibration: str = "analytic",
    project_psd: bool = True,
    random_state=None,
) -> np.ndarray:
    r"""(epsilon, delta)-DP second-moment matrix ``(1/n) sum_i x_i x_i^T`` (Analyze Gauss).

    Rows are clipped to norm ``clip_norm``; Gaussian noise is added to each entry of the
    upper triangle (diagonal included) of the sum of :math:`x_i x_i^T` and mirrored, and
    the result is divided by ``n``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The private rows.
    epsilon : float
        Privacy loss, > 0.
    delta : float
        Failure probability in (0, 1); take it well below ``1 / n_samples``.
    clip_norm : float, default=1.0
        Rows longer than this are scaled down to it (Dwork et al. assume norm <= 1). Choose
        it from public knowledge, never from ``X``: a data-dependent bound is not DP.
    neighbours : {"replace", "add_remove"}, default="replace"
        Neighbouring relation the guarantee holds for (see the module Notes). Sensitivity
        of the packed upper triangle: :math:`\sqrt{2}C^2` for ``"replace"``,
        :math:`C^2` for ``"add_remove"``.
    calibration : {"analytic", "classical"}, default="analytic"
        See :func:`gaussian_noise_scale`.
    project_psd : bool, default=True
        Clip negative eigenvalues to zero afterwards (nearest PSD matrix in Frobenius norm;
        post-processing, so the guarantee is unchanged).
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of the noise; ``None`` (fresh OS entropy) for anything released.

    Returns
    -------
    ndarray of shape (n_features, n_features)
        Symmetric; positive semidefinite if ``project_psd``.

    Raises
    ------
    ValueError
        For invalid privacy parameters, clip norm or options, or a non-finite ``X``.

    Notes
    -----
    Sensitivity. For rows of norm at most :math:`C`, adding or removing a row changes the
    sum by :math:`xx^\top`, whose packed upper triangle has norm at most
    :math:`\|xx^\top\|_F = \|x\|^2 \le C^2`. Replacing :math:`x` by :math:`x'` changes it by
    :math:`xx^\top - x'x'^\top` with :math:`\|xx^\top - x'x'^\top\|_F^2 = \|x\|^4 + \|x'\|^4
    - 2(x^\top x')^2 \le 2C^4`, attained by orthogonal rows of norm :math:`C`; hence
    :math:`\sqrt{2}C^2` for the relation Theorem 4 of Izzo et al. needs. Dwork et al.'s
    Algorithm 1 (rows of norm <= 1, :math:`\omega = \sqrt{2\ln(1.25/\delta)}/\epsilon`) is
    ``neighbours="add_remove", calibration="classical", clip_norm=1``.

    Clipping biases the estimate when rows are longer than ``clip_norm``; rescaling the
    data so that most rows fit trades that bias against noise (the noise on the average
    scales as :math:`C^2 / n`).

    References
    ----------
    Dwork, Talwar, Thakurta & Zhang (2014), Algorithm 1; Balle & Wang (2018), Theorem 8;
    Izzo et al., Theorem 4 and Lemma 12 (replace-one neighbours).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100_000, 2)) * 0.3
    >>> A = analyze_gauss(X, epsilon=1.0, delta=1e-6, clip_norm=1.0, random_state=0)
    >>> A.round(2)
    array([[ 0.09, -0.  ],
           [-0.  ,  0.09]])
    """
    owner = "analyze_gauss"
    epsilon, delta = _check_epsilon_delta(owner, epsilon, delta)
    clip_norm = check_interval(
        owner, "clip_norm", clip_norm, 0, None, closed="neither",
        why="It bounds every row's norm; choose it from public knowledge of the data's scale.",
    )
    check_option(owner, "neighbours", neighbours, _NEIGHBOURS)
    X = _check_X(owner, X)
    n, d = X.shape
    rows = clip_rows(X, clip_norm)
    total = rows.T @ rows
    sensitivity = clip_norm**2 * (math.sqrt(2.0) if neighbours == "replace" else 1.0)
    scale = gaussian_noise_scale(epsilon, delta, sensitivity, calibration=calibration)
    rng = resolve_rng(random_state)
    iu = np.triu_indices(d)
    noise = np.zeros((d, d))
    noise[iu] = rng.normal(scale=scale, size=iu[0].size)
    # Mirror the upper triangle: one draw per free entry, so the released matrix is exactly
    # symmetric and the sensitivity above (of the packed triangle) is the one that counts.
    noise = noise + np.triu(noise, 1).T
    out = (total + noise) / n
    if project_psd:
        out = _project_psd(out, 0.0)
    return out


def second_moment_gradient_norms(A: ArrayLike, X: ArrayLike) -> np.ndarray:
    r"""Per-row gradient norms :math:`\|2(A - x_i x_i^\top)\|_F` of :math:`\|A - x_i x_i^\top\|_F^2`.

    Computed without forming the ``(n, d, d)`` gradients:
    :math:`\|A - xx^\top\|_F^2 = \|A\|_F^2 - 2x^\top A x + \|x\|^4`.

    Parameters
    ----------
    A : array-like of shape (n_features, n_features)
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples,)

    Examples
    --------
    >>> second_moment_gradient_norms([[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 2.0]])
    array([2., 8.])
    """
    A = np.asarray(A, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    sq = np.sum(A * A) - 2.0 * np.einsum("ij,jk,ik->i", X, A, X) + np.sum(X * X, axis=1) ** 2
    return 2.0 * np.sqrt(np.maximum(sq, 0.0))


def dp_gd_noise_multiplier(
    epsilon: float, delta: float, n_steps: int, *, neighbours: str = "replace"
) -> float:
    r"""Noise multiplier z of full-batch DP gradient descent for (epsilon, delta)-DP after T steps.

    Each step adds :math:`\mathcal{N}(0, z^2C^2 I)` to the sum of per-example gradients
    clipped to norm :math:`C`.

    Parameters
    ----------
    epsilon : float
        Privacy loss of the whole run, > 0.
    delta : float
        Failure probability in (0, 1).
    n_steps : int
        Number of gradient steps T (>= 1).
    neighbours : {"replace", "add_remove"}, default="replace"
        Sensitivity of the clipped-gradient sum: :math:`2C` or :math:`C`.

    Returns
    -------
    float
        :math:`z = (\Delta/C)\sqrt{T}/\mu^*(\epsilon, \delta)`.

    Notes
    -----
    Accounting by Gaussian differential privacy: one step is a Gaussian mechanism with
    :math:`\mu_{\text{step}} = \Delta/(zC)`; T adaptively composed steps are exactly
    :math:`\sqrt{T}\mu_{\text{step}}`-GDP (Dong, Roth & Su, Corollary 3.3), and
    :math:`\mu`-GDP is (epsilon, delta)-DP iff :math:`\mu \le \mu^*(\epsilon, \delta)`
    (their Corollary 2.13; :func:`skmip.bounds.dp_to_gdp_mu`). With the full batch there is no
    subsampling to amplify, so this composition is tight.

    References
    ----------
    Dong, Roth & Su (2022), Corollaries 2.13 and 3.3; Abadi et al. (2016).

    Examples
    --------
    >>> from skmip.bounds import gdp_to_dp
    >>> z = dp_gd_noise_multiplier(1.0, 1e-6, 100)
    >>> mu = 2.0 * 100**0.5 / z                      # sqrt(T) * Delta / (z C), Delta = 2C
    >>> round(gdp_to_dp(mu, 1e-6), 6)
    1.0
    """
    owner = "dp_gd_noise_multiplier"
    epsilon, delta = _check_epsilon_delta(owner, epsilon, delta)
    n_steps = check_int(owner, "n_steps", n_steps, 1, None)
    check_option(owner, "neighbours", neighbours, _NEIGHBOURS)
    ratio = 2.0 if neighbours == "replace" else 1.0
    return ratio * math.sqrt(n_steps) / dp_to_gdp_mu(epsilon, delta)


def dp_gradient_descent_second_moment(
    X: ArrayLike,
    *,
    epsilon: float,
    delta: float,
    clip_norm: float,
    n_steps: int = 20,
    learning_rate: float = 0.5,
    neighbours: str = "replace",
    init: ArrayLike | None = None,
    random_state=None,
) -> np.ndarray:
    r"""Full-batch DP gradient descent on :math:`\min_A \|A - \tfrac1n\sum_i x_ix_i^\top\|_F^2`.

    The DP baseline of Izzo et al.'s Figure 2: DP-SGD (Abadi et al. 2016) with the whole
    dataset as the batch. The objective is the average of the per-example losses
    :math:`\ell_i(A) = \|A - x_ix_i^\top\|_F^2` (equal up to a constant), whose gradients
    :math:`g_i = 2(A - x_ix_i^\top)` are clipped to Frobenius norm ``clip_norm``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        The private rows.
    epsilon : float
        Privacy loss of the whole run, > 0.
    delta : float
        Failure probability in (0, 1).
    clip_norm : float
        Per-example gradient clip C, > 0. Izzo et al. take the median of the unclipped
        gradient norms over training (Abadi et al.'s advice); computed on the private data
        that choice is itself not DP, so compute it on public data
        (:func:`second_moment_gradient_norms`) or fix it a priori.
    n_steps : int, default=20
        Number of full-batch steps T.
    learning_rate : float, default=0.5
        Step size; 0.5 solves the unclipped, noiseless problem in one step.
    neighbours : {"replace", "add_remove"}, default="replace"
        See :func:`dp_gd_noise_multiplier`.
    init : array-like of shape (n_features, n_features), default=None
        Starting point (public); ``None`` means zeros.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of the noise; ``None`` (fresh OS entropy) for anything released.

    Returns
    -------
    ndarray of shape (n_features, n_features)
        The last iterate :math:`A_T`, a full (not necessarily symmetric) matrix, as the paper
        learns it; symmetrise and project it as post-processing if needed.

    Raises
    ------
    ValueError
        For invalid privacy parameters, clip norm, step count, learning rate or options,
        a non-finite ``X`` or an ``init`` of the wrong shape.

    Notes
    -----
    Update: :math:`A_{t+1} = A_t - \frac{\text{lr}}{n}\big(\sum_i \mathrm{clip}_C(g_i(A_t))
    + \mathcal{N}(0, z^2C^2 I_{d^2})\big)` with :math:`z` from
    :func:`dp_gd_noise_multiplier` (accounting: Gaussian DP, exact composition of T
    Gaussian steps). The clipped sum is formed as
    :math:`2(A\sum_i f_i - X^\top \mathrm{diag}(f) X)` with clip factors :math:`f_i`, in
    :math:`O(n d^2)` per step. Only the last iterate is returned; every iterate is covered
    by the same guarantee.

    References
    ----------
    Izzo et al., Section 5.2 (objective and baseline); Abadi et al. (2016); Dong, Roth & Su
    (2022), Corollaries 2.13 and 3.3.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200_000, 2))
    >>> A = dp_gradient_descent_second_moment(X, epsilon=1.0, delta=1e-6, clip_norm=20.0,
    ...                                       random_state=0)
    >>> A.round(1)
    array([[ 1., -0.],
           [-0.,  1.]])
    """
    owner = "dp_gradient_descent_second_moment"
    epsilon, delta = _check_epsilon_delta(owner, epsilon, delta)
    clip_norm = check_interval(
        owner, "clip_norm", clip_norm, 0, None, closed="neither",
        why="It bounds every per-example gradient; choose it on public data.",
    )
    n_steps = check_int(owner, "n_steps", n_steps, 1, None)
    learning_rate = check_interval(owner, "learning_rate", learning_rate, 0, None, closed="neither")
    check_option(owner, "neighbours", neighbours, _NEIGHBOURS)
    X = _check_X(owner, X)
    n, d = X.shape
    if init is None:
        A = np.zeros((d, d))
    else:
        A = np.array(init, dtype=np.float64)
        if A.shape != (d, d):
            raise ValueError(f"{owner}: init must have shape {(d, d)}; got {A.shape}.")
    z = dp_gd_noise_multiplier(epsilon, delta, n_steps, neighbours=neighbours)
    rng = resolve_rng(random_state)
    for _ in range(n_steps):
        norms = second_moment_gradient_norms(A, X)
        factor = np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(np.float64).tiny))
        clipped_sum = 2.0 * (A * factor.sum() - (X * factor[:, None]).T @ X)
        noisy = clipped_sum + rng.normal(scale=z * clip_norm, size=(d, d))
        A = A - learning_rate * noisy / n
    return A
