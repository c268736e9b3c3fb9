r"""The exact Bayes-optimal membership attacker for small, enumerable problems.

For a dataset :math:`\mathcal{D}` of :math:`n \le 16` records, Definition 1 (with
:math:`k = n/2`) draws the training set :math:`S` uniformly among the
:math:`H = \binom{n}{n/2}` halves and releases :math:`\hat\theta = \mathcal{A}(S) + X` with
additive noise :math:`X` of known density :math:`p`. Proposition 2 says the best any attacker
can do on a target :math:`x^*` is to guess the more probable of "in" and "out" given
:math:`\hat\theta`, and that its accuracy is
:math:`\mathbb{E}_{\hat\theta}\max\{P(x^*\in S \mid \hat\theta), P(x^*\notin S\mid\hat\theta)\}`.
With everything enumerable this posterior is exact, and only the outer expectation needs
Monte Carlo. This module computes it, per target, with a standard error: the ground truth
against which the MIP noise (and any other additive-noise mechanism) is audited.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike
from sklearn.utils.parallel import Parallel, delayed

from skmip.utils.rng import resolve_rng
from skmip.utils.validation import check_int, check_interval, check_moment, check_option
from skmip.calibration.noise_laws import MIPNoiseLaw

__all__ = ["ExactAuditResult", "exact_mip_advantage"]

_OWNER = "exact_mip_advantage"
_MAX_N = 16
# Doubles per Monte-Carlo chunk in the (rows x outputs x d) difference array. Fixed, so the
# chunking (and hence the random stream of each chunk) never depends on n_jobs.
_CHUNK_ELEMENTS = 2**21
_HALVES_PER_BATCH = 512
_STRATIFY_MAX_OUTPUTS = 16


@dataclass(frozen=True, eq=False)
class ExactAuditResult:
    r"""Per-target advantage of the exact Bayes-optimal attacker.

    Attributes
    ----------
    targets : ndarray of shape (T,)
        Indices (rows of ``data``) of the audited target records :math:`x^*`.
    advantage : ndarray of shape (T,)
        Monte-Carlo estimate of the optimal attacker's accuracy minus 1/2; unbiased, and
        the quantity Definition 1 bounds by eta.
    std_error : ndarray of shape (T,)
        Its standard error (sample standard deviation of the i.i.d. per-draw values over
        :math:`\sqrt{n_{mc}}`).
    n_mc : int
        Number of independent noise draws.
    n_halves : int
        :math:`\binom{n}{n/2}`, the number of equally likely training sets.
    n_outputs : int
        Number of distinct outputs :math:`\mathcal{A}(S)` over the halves.
    sigma : ndarray of shape (d,) or None
        The noise scales used (the exact per-coordinate M-th central moments over halves
        when not given); ``None`` for a generic noise.
    stratified : bool
        Whether every draw of the noise was evaluated at every distinct output (exact
        average over the training set) or at one sampled output.
    """

    targets: np.ndarray
    advantage: np.ndarray
    std_error: np.ndarray
    n_mc: int
    n_halves: int
    n_outputs: int
    sigma: np.ndarray | None
    stratified: bool

    @property
    def accuracy(self) -> np.ndarray:
        """The optimal attacker's accuracy, ``0.5 + advantage``."""
        return 0.5 + self.advantage

    def upper_confidence_bound(self, confidence: float = 0.999) -> np.ndarray:
        """One-sided normal upper confidence bound ``advantage + z_confidence * std_error``.

        The per-draw values are bounded in [0, 1/2] and i.i.d., so the central limit
        theorem applies to their mean; with a few thousand draws the normal quantile is
        accurate. ``upper_confidence_bound(c) < eta`` is the test "the mechanism keeps its
        eta-MIP promise on this dataset" at level ``1 - c``.
        """
        from scipy.stats import norm

        conf = check_interval(
            "ExactAuditResult.upper_confidence_bound", "confidence", confidence, 0.5, 1.0,
            closed="left",
        )
        return self.advantage + norm.ppf(conf) * self.std_error


# --------------------------------------------------------------------------- enumeration


def _n_records(data):
    if isinstance(data, tuple):
        if not data:
            raise ValueError(f"{_OWNER}: data is an empty tuple; pass an array or (X, y).")
        lengths = {len(a) for a in data}
        if len(lengths) != 1:
            raise ValueError(
                f"{_OWNER}: the arrays in data must have the same length (one row per "
                f"record); got lengths {sorted(lengths)}."
            )
        return lengths.pop()
    return len(data)


def _take(data, idx):
    if isinstance(data, tuple):
        return tuple(_take(a, idx) for a in data)
    if hasattr(data, "iloc"):  # pandas, without importing it
        return data.iloc[idx]
    return data[idx]


def _as_indexable(data):
    if isinstance(data, tuple):
        return tuple(_as_indexable(a) for a in data)
    if hasattr(data, "iloc") or isinstance(data, np.ndarray):
        return data
    return np.asarray(data)


def _run_batch(algorithm, data, halves):
    """Outputs of ``algorithm`` on a batch of halves, deduplicated: (unique rows, inverse)."""
    outs = []
    for idx in halves:
        args = _take(data, idx)
        out = algorithm(*args) if isinstance(data, tuple) else algorithm(args)
        out = np.asarray(out, dtype=np.float64).reshape(-1)
        if not np.all(np.isfinite(out)):
            raise ValueError(
                f"{_OWNER}: algorithm returned non-finite values on the half {idx.tolist()}; "
                "the audited output must be a finite real vector."
            )
        outs.append(out)
    if len({o.size for o in outs}) != 1:
        raise ValueError(
            f"{_OWNER}: algorithm returned vectors of different lengths "
            f"{sorted({o.size for o in outs})}; its output must have a fixed dimension."
        )
    # "+ 0.0" turns -0.0 into 0.0 so that equal outputs are equal byte for byte.
    return np.unique(np.stack(outs) + 0.0, axis=0, return_inverse=True)


def _enumerate(algorithm, data, n, n_jobs):
    """Distinct outputs (U, d), their half counts (U,) and in-counts (U, n)."""
    k = n // 2
    halves = np.array(list(itertools.combinations(range(n), k)), dtype=np.intp)
    batches = [halves[i : i + _HALVES_PER_BATCH] for i in range(0, len(halves), _HALVES_PER_BATCH)]
    results = Parallel(n_jobs=n_jobs, return_as="generator")(
        delayed(_run_batch)(algorithm, data, b) for b in batches
    )
    index, rows, half_out = {}, [], []
    for uniq, inverse in results:
        if rows and uniq.shape[1] != rows[0].size:
            raise ValueError(
                f"{_OWNER}: algorithm returned vectors of different lengths "
                f"({rows[0].size} and {uniq.shape[1]}); its output must have a fixed dimension."
            )
        local = np.empty(len(uniq), dtype=np.intp)
        for j, row in enumerate(uniq):
            key = row.tobytes()
            if key not in index:
                index[key] = len(rows)
                rows.append(row)
            local[j] = index[key]
        half_out.append(local[inverse.reshape(-1)])
    half_out = np.concatenate(half_out)
    outputs = np.stack(rows)
    counts = np.bincount(half_out, minlength=len(rows)).astype(np.float64)
    cnt_in = np.zeros((len(rows), n))
    np.add.at(cnt_in, (np.repeat(half_out, k), halves.reshape(-1)), 1.0)
    return outputs, counts, cnt_in, len(halves)


def _exact_sigma(outputs, weights, moment):
    r"""Per-coordinate :math:`(\mathbb{E}_S|\mathcal{A}(S)_i - \mathbb{E}_S\mathcal{A}(S)_i|^M)^{1/M}`.

    Constant coordinates are set to exactly 0 (the weighted mean of equal values may differ
    from them by a rounding error, which would otherwise count them as noised).
    """
    mean = weights @ outputs
    sigma = (weights @ np.abs(outputs - mean) ** moment) ** (1.0 / moment)
    sigma[np.ptp(outputs, axis=0) == 0] = 0.0
    return sigma


# --------------------------------------------------------------------------- noise


class _GenericNoise:
    """A user's (sampler, logpdf) pair, with the shapes checked (the interface of
    :class:`~skmip.calibration.noise_laws.MIPNoiseLaw`: ``sample(n, rng)``, ``logpdf(x)``)."""

    def __init__(self, sampler, logpdf, d):
        self.sampler, self.log_density, self.d = sampler, logpdf, d

    def sample(self, n, rng):
        x = np.asarray(self.sampler(n, rng), dtype=np.float64)
        if x.shape != (n, self.d):
            raise ValueError(
                f"{_OWNER}: noise_sampler(n_samples, rng) must return an array of shape "
                f"(n_samples, d) = ({n}, {self.d}); got shape {x.shape}."
            )
        return x

    def logpdf(self, x):
        out = np.asarray(self.log_density(x), dtype=np.float64)
        if out.shape != (x.shape[0],):
            raise ValueError(
                f"{_OWNER}: noise_logpdf(x) must return one log-density per row of x, shape "
                f"({x.shape[0]},); got shape {out.shape}."
            )
        return out


# --------------------------------------------------------------------------- Monte Carlo


def _audit_chunk(noise, outputs, weights, cnt_in, cnt_out, n_draws, stratified, seed):
    r"""Per-draw values :math:`|P(\mathrm{in}|\hat\theta) - \tfrac12|`, shape (n_draws, T).

    With :math:`\ell_v = \log p(\hat\theta - a_v)`, the posterior of "in" for target t is
    :math:`\sum_v n^{in}_{vt} e^{\ell_v} / \sum_v n_v e^{\ell_v}` (uniform prior over halves,
    each distinct output :math:`a_v` weighted by the number of halves producing it). With
    :math:`\lambda = \log\sum_v n^{in}_{vt} e^{\ell_v} - \log\sum_v n^{out}_{vt} e^{\ell_v}`,
    :math:`\max(P_{in}, P_{out}) - \tfrac12 = \tfrac12|\tanh(\lambda/2)|`, which stays
    accurate when the advantage is tiny (no cancellation of two numbers near 1/2).
    """
    rng = np.random.default_rng(seed)
    n_out, d = outputs.shape
    x = noise.sample(n_draws, rng)
    if stratified:
        # Every draw of X at every output a_u: theta - a_v = X + (a_u - a_v).
        shift = outputs[:, None, :] - outputs[None, :, :]  # (u, v, d)
        diff = x[:, None, None, :] + shift[None]  # (m, u, v, d)
    else:
        u = rng.choice(n_out, size=n_draws, p=weights)
        diff = (x + outputs[u])[:, None, :] - outputs[None, :, :]  # (m, v, d)
    rows = diff.size // (n_out * d)
    loglik = noise.logpdf(diff.reshape(-1, d)).reshape(rows, n_out)
    top = loglik.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(loglik - top)
    if not np.all(np.isfinite(e)):
        raise FloatingPointError(
            f"{_OWNER}: the noise log-density is NaN or +inf at sampled noise values; it "
            "must be finite (or -inf) wherever the sampler puts mass."
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        llr = np.log(e @ cnt_in) - np.log(e @ cnt_out)
    g = 0.5 * np.abs(np.tanh(0.5 * llr))  # (rows, T)
    if stratified:
        g = np.einsum("mut,u->mt", g.reshape(n_draws, n_out, -1), weights)
    return g


def _check_records(data, target):
    """``n`` (even, in [2, 16]) and the target rows as a 1-D integer array."""
    n = check_int(
        _OWNER, "len(data)", _n_records(data), 2, _MAX_N,
        why=f"All C(n, n/2) halves are enumerated, which is feasible up to n={_MAX_N} "
        "(12,870 halves).",
    )
    if n % 2:
        raise ValueError(
            f"{_OWNER}: len(data) must be even (Definition 1 with k = n/2); got {n}. Drop or "
            "duplicate a record."
        )
    if target is None:
        return n, np.arange(n)
    targets = np.atleast_1d(np.asarray(target))
    if targets.ndim != 1 or not np.issubdtype(targets.dtype, np.integer) or targets.size == 0:
        raise TypeError(
            f"{_OWNER}: target must be an int or a 1-D array of row indices; got {target!r}."
        )
    if np.any((targets < 0) | (targets >= n)):
        raise ValueError(
            f"{_OWNER}: target must be row indices in [0, {n - 1}]; got {targets.tolist()}."
        )
    return n, targets


def _check_noise_spec(eta, sigma, noise_sampler, noise_logpdf):
    """Whether a generic noise is given (else the MIP noise, which needs ``eta``)."""
    generic = noise_sampler is not None or noise_logpdf is not None
    if generic:
        if noise_sampler is None or noise_logpdf is None:
            raise ValueError(
                f"{_OWNER}: a generic noise needs both noise_sampler and noise_logpdf; got "
                f"only {'noise_sampler' if noise_logpdf is None else 'noise_logpdf'}."
            )
        if eta is not None or sigma is not None:
            raise ValueError(
                f"{_OWNER}: give either the MIP noise (eta, sigma) or a generic noise "
                "(noise_sampler, noise_logpdf), not both."
            )
    elif eta is None:
        raise ValueError(
            f"{_OWNER}: eta is required for the MIP noise (or pass noise_sampler and "
            "noise_logpdf for a generic noise)."
        )
    return generic


def exact_mip_advantage(
    algorithm: Callable,
    data,
    *,
    eta: float | None = None,
    sigma: ArrayLike | None = None,
    moment: float = 2,
    radius: str = "gamma",
    noise_sampler: Callable | None = None,
    noise_logpdf: Callable | None = None,
    target: int | ArrayLike | None = None,
    n_mc: int = 4000,
    stratify: bool | str = "auto",
    random_state=None,
    n_jobs: int | None = None,
) -> ExactAuditResult:
    r"""Advantage of the exact Bayes-optimal membership attacker (Proposition 2).

    Enumerates all :math:`\binom{n}{n/2}` training halves :math:`S` of ``data``, evaluates
    ``algorithm`` on each, and estimates, for each target record :math:`x^*`,

    .. math::

        \mathrm{adv}(x^*) = \mathbb{E}_{S, X}\,
        \max\{P(x^*\in S \mid \hat\theta), P(x^*\notin S \mid \hat\theta)\} - \tfrac12,
        \qquad \hat\theta = \mathcal{A}(S) + X,

    with the posterior computed exactly and the expectation by Monte Carlo. Definition 1
    calls the release :math:`\eta`-MIP on ``data`` iff :math:`\mathrm{adv}(x^*) \le \eta`
    for every :math:`x^*`.

    Parameters
    ----------
    algorithm : callable
        Deterministic map from the rows of a half to a real vector of fixed length d:
        ``algorithm(data[idx])``, or ``algorithm(X[idx], y[idx], ...)`` when ``data`` is a
        tuple of arrays.
    data : array_like or tuple of array_like
        The :math:`n` records (even :math:`n`, :math:`2 \le n \le 16`), indexed by row.
    eta : float, optional
        MIP level of the MIP noise (:func:`skmip.calibration.noise_laws.sample_mip_noise`). Required
        unless a generic noise is given.
    sigma : array_like of shape (d,), optional
        Noise scales of the MIP noise. ``None`` uses the exact ones: per coordinate the
        M-th root of the M-th central moment of :math:`\mathcal{A}(S)` over the uniform
        law on halves (what Corollary 10 asks of :math:`\sigma_i`, with equality).
    moment : float, default=2
        :math:`M \ge 2`, for the MIP noise and the exact sigma.
    radius : {"gamma", "laplace"}, default="gamma"
        Radius law of the MIP noise. Auditing ``"laplace"`` emits no warning.
    noise_sampler, noise_logpdf : callable, optional
        A generic additive noise instead of the MIP noise (give both, and not ``eta``):
        ``noise_sampler(n_samples, rng) -> (n_samples, d)`` with ``rng`` a
        ``numpy.random.Generator``, and ``noise_logpdf(x) -> (m,)`` its log-density
        (up to a constant) at the rows of ``x`` of shape (m, d).
    target : int or array_like of int, optional
        Rows of ``data`` to audit; ``None`` audits every record.
    n_mc : int, default=4000
        Number of independent noise draws.
    stratify : bool or "auto", default="auto"
        ``True``: each noise draw is evaluated at every distinct output (the average over
        the training set is exact; cost ``n_mc * U**2 * d`` for U distinct outputs).
        ``False``: one training half is sampled per draw (cost ``n_mc * U * d``).
        ``"auto"``: stratify when ``U <= 16``.
    random_state : None, int, numpy.random.Generator or RandomState, default=None
        Seeds the Monte Carlo. Chunk seeds are drawn up front, so the result does not
        depend on ``n_jobs``.
    n_jobs : int, optional
        Parallel jobs (joblib, via :class:`sklearn.utils.parallel.Parallel`) for the
        enumeration and the Monte Carlo.

    Returns
    -------
    ExactAuditResult
        Per-target ``advantage`` and ``std_error``, plus the sigma used.

    Raises
    ------
    ValueError, TypeError
        If ``n`` is odd or outside [2, 16], the noise is specified inconsistently, a
        target is out of range, or ``algorithm`` returns vectors of varying length or
        non-finite values.

    Notes
    -----
    **Posterior (Proposition 2, proof).** With :math:`S` uniform over halves and
    :math:`p` the noise density, :math:`\hat\theta` has density
    :math:`\binom{n}{n/2}^{-1}\sum_S p(\hat\theta - \mathcal{A}(S))` and

    .. math::

        P(x^* \in S \mid \hat\theta) =
        \frac{\sum_{S \ni x^*} p(\hat\theta - \mathcal{A}(S))}
             {\sum_{S} p(\hat\theta - \mathcal{A}(S))}.

    Since :math:`k = n/2`, exactly half of the halves contain :math:`x^*`: the prior is
    1/2 and the optimal accuracy is :math:`\tfrac12 + \mathrm{adv}`. Halves with the same
    output are merged (weights = counts), sums are taken in log space (log-sum-exp), and
    :math:`\max(P_{in}, P_{out}) - \tfrac12` is computed as :math:`\tfrac12|\tanh(\lambda/2)|`
    with :math:`\lambda` the log posterior odds, so advantages of order :math:`10^{-6}` are
    not lost to cancellation. Only the noise density's shape matters: a constant factor
    cancels.

    **Monte Carlo.** The per-draw values are i.i.d. in [0, 1/2]; their mean is unbiased
    and its standard error is the sample standard deviation over :math:`\sqrt{n_{mc}}`.
    The same noise draws serve all targets (common random numbers), so estimates for
    different targets are correlated. For a test of the promise use
    :meth:`ExactAuditResult.upper_confidence_bound`: the one-sided normal bound
    :math:`\widehat{\mathrm{adv}} + z_{0.999}\,\mathrm{se} < \eta` rejects "the advantage is
    at least eta" at level 0.001.

    **The strongest dataset for mean estimation.** For any algorithm, Jensen's inequality on
    the convex :math:`\|\cdot\|^M` gives
    :math:`\|\mathbb{E}[\theta\mid\mathrm{in}] - \mathbb{E}[\theta\mid\mathrm{out}]\|/2 \le
    (\mathbb{E}\|\theta - \mathbb{E}\theta\|^M)^{1/M}`, with equality iff :math:`\theta` is a
    deterministic function of membership. One outlying record among identical ones (the
    half mean is :math:`v/k` with the outlier, 0 without) attains it: the output separates
    in from out by the most the moment budget allows, and the attack reduces to the test
    between two shifted copies of the noise.

    **Scope.** Exact enumeration limits :math:`n` to 16 (12,870 halves). The audit assumes
    the noise is additive and independent of :math:`S`, and that the algorithm is
    deterministic (a random algorithm would need its randomness in the posterior). With
    an estimated sigma (Algorithm 1) pass that sigma to audit the actual release.

    References
    ----------
    Izzo et al., Definition 1 (k = n/2), Proposition 2 and its proof (optimal attacker),
    Theorem 9 and Corollary 10 (the noise audited).

    Examples
    --------
    One outlier among four records, 1-D mean: the two outputs :math:`1/2` and :math:`0`
    are :math:`2\sigma` apart and for :math:`d = 1` the noise is Laplace with scale
    :math:`c\sigma`, so the optimal advantage on the outlier is
    :math:`(1 - e^{-1/c})/2` exactly.

    >>> import numpy as np
    >>> from skmip.bounds import mip_noise_constant
    >>> data = np.array([[1.0], [0.0], [0.0], [0.0]])
    >>> res = exact_mip_advantage(lambda s: s.mean(axis=0), data, eta=0.1, target=0,
    ...                           n_mc=20000, random_state=0)
    >>> res.sigma.tolist(), res.n_halves, res.n_outputs
    ([0.25], 6, 2)
    >>> exact = (1 - np.exp(-1 / mip_noise_constant(0.1))) / 2
    >>> round(float(exact), 8)  # far below eta = 0.1
    0.00013175
    >>> bool(abs(res.advantage[0] - exact) < 4 * res.std_error[0])
    True
    """
    n, targets = _check_records(data, target)
    n_mc = check_int(_OWNER, "n_mc", n_mc, 2, None, why="A standard error needs 2 draws.")
    if not (isinstance(stratify, bool) or stratify == "auto"):
        check_option(_OWNER, "stratify", stratify, ("auto", True, False))
    generic = _check_noise_spec(eta, sigma, noise_sampler, noise_logpdf)
    rng = resolve_rng(random_state)
    data = _as_indexable(data)

    # -- exact enumeration
    outputs, counts, cnt_in, n_halves = _enumerate(algorithm, data, n, n_jobs)
    n_out, d = outputs.shape
    weights = counts / n_halves

    if generic:
        noise, sigma_used = _GenericNoise(noise_sampler, noise_logpdf, d), None
    else:
        if sigma is None:
            sigma = _exact_sigma(outputs, weights, check_moment(_OWNER, moment))
        noise = MIPNoiseLaw(sigma, eta=eta, moment=moment, radius=radius, owner=_OWNER)
        sigma_used = noise.sigma
        if sigma_used.size != d:
            raise ValueError(
                f"{_OWNER}: sigma has {sigma_used.size} coordinates but algorithm returns "
                f"{d}; pass one scale per output coordinate."
            )

    # -- Monte Carlo over the noise (and the half, unless stratified)
    stratified = n_out <= _STRATIFY_MAX_OUTPUTS if stratify == "auto" else bool(stratify)
    per_draw = n_out * (n_out if stratified else 1) * d
    draws_per_chunk = int(min(n_mc, max(1, _CHUNK_ELEMENTS // per_draw)))
    sizes = [draws_per_chunk] * (n_mc // draws_per_chunk)
    if n_mc % draws_per_chunk:
        sizes.append(n_mc % draws_per_chunk)
    seeds = rng.integers(np.iinfo(np.int64).max, size=len(sizes))
    c_in = cnt_in[:, targets]
    c_out = counts[:, None] - c_in
    parts = Parallel(n_jobs=n_jobs)(
        delayed(_audit_chunk)(noise, outputs, weights, c_in, c_out, m, stratified, s)
        for m, s in zip(sizes, seeds)
    )
    g = np.concatenate(parts, axis=0)
    return ExactAuditResult(
        targets=targets,
        advantage=g.mean(axis=0),
        std_error=g.std(axis=0, ddof=1) / math.sqrt(n_mc),
        n_mc=n_mc,
        n_halves=n_halves,
        n_outputs=n_out,
        sigma=sigma_used,
        stratified=stratified,
    )
