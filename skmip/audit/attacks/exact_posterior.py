r"""The exact Bayes-optimal membership attacker on a Gaussian release, over every training set.

Definition 1 (Izzo et al.) on a dataset :math:`D` of :math:`n` rows: the training set
:math:`S` is uniform among the :math:`\binom{n}{k}` subsets of size :math:`k`
(:func:`enumerate_subsets`), and the release is :math:`\hat\theta = \mathcal{A}(S) + sLz`
with :math:`z \sim \mathcal{N}(0, I)`. Given :math:`\mathcal{A}(S)` for every subset,
:func:`gaussian_membership_audit` computes the posterior of membership exactly for each
release and takes the expectation over releases by Monte Carlo; the result
(:class:`MembershipAuditResult`) compares the advantage with a printed bound in Monte-Carlo
standard errors. :mod:`skmip.audit.attacks.exact_audit` feeds it the releases of fitted
defences.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.rng import resolve_rng

__all__ = ["MembershipAuditResult", "enumerate_subsets", "gaussian_membership_audit"]

_OWNER = "exact_audit"
_MAX_SUBSETS = 20_000
#: Elements of the (draws x subsets x whitened dims) difference array per Monte-Carlo chunk.
_CHUNK_ELEMENTS = 2**22


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
