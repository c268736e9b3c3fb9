"""LiRA, the likelihood-ratio attack of Carlini et al. (2022), online and offline.

For each row, the attacker fits Gaussians to the reference models' outputs on that row --
over the models that trained on it (IN) and those that did not (OUT) -- and scores the
target model's output by the likelihood ratio (online) or by how far it lies in the upper
tail of the OUT Gaussian (offline). The output is the logit-scaled confidence of the true
class (:attr:`skmip.audit.game.MembershipGame.signal`), which is close to Gaussian.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import is_classifier

from skmip.audit.attacks._base import MembershipAttack, check_matrix, check_membership

__all__ = ["LiRA", "lira_scores", "lira_min_models"]


#: Below this many models ``global_variance="auto"`` pools the variance over rows.
GLOBAL_VARIANCE_BELOW = 64


def _use_global(global_variance, n_models):
    if isinstance(global_variance, str):
        return n_models < GLOBAL_VARIANCE_BELOW
    return bool(global_variance)


def lira_min_models(member_rate: float = 0.5, *, online: bool = True, global_variance: bool | str = False) -> int:
    """Fewest models for which a typical row has enough IN / OUT references.

    A row has on average ``(K - 1) * r`` IN and ``(K - 1) * (1 - r)`` OUT references. Online
    LiRA with per-row variances needs two of each (a variance needs two values); with a
    global variance one of each; offline LiRA only OUT references.

    Examples
    --------
    >>> lira_min_models(0.5), lira_min_models(0.5, global_variance=True), lira_min_models(0.5, online=False)
    (5, 3, 5)
    >>> lira_min_models(0.5, global_variance="auto")
    3
    """
    # "auto" pools below 64 models, so one reference per group is enough there.
    per_group = 1 if (global_variance == "auto" or global_variance is True) else 2
    rate = min(member_rate, 1 - member_rate) if online else 1 - member_rate
    return int(math.ceil(1 + per_group / rate - 1e-12))


def _reference_stats(s0, mask):
    """Leave-one-out count, mean and sum of squared deviations of the masked references.

    Entry [k, i] describes the models j != k with mask[j, i]; computed from column sums
    minus model k's own term, so all K targets cost O(K n).
    """
    w = mask.astype(np.float64)
    cnt = w.sum(0)[None, :] - w
    s1 = (s0 * w).sum(0)[None, :] - s0 * w
    s2 = (s0**2 * w).sum(0)[None, :] - s0**2 * w
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = np.where(cnt > 0, s1 / np.maximum(cnt, 1), np.nan)
        ss = np.where(cnt > 1, np.maximum(s2 - s1 * np.nan_to_num(mu), 0.0), 0.0)
    return cnt, mu, ss


def _pooled_variance(cnt, ss):
    """Per target: sum of squared deviations over rows / degrees of freedom (NaN if none)."""
    dof = np.maximum(cnt - 1, 0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(dof > 0, ss.sum(axis=1) / np.maximum(dof, 1), np.nan)


def lira_scores(
    signal: ArrayLike,
    membership: ArrayLike,
    *,
    online: bool = True,
    global_variance: bool | str = "auto",
) -> np.ndarray:
    r"""LiRA scores for every (target model, row) pair, with the other models as references.

    Parameters
    ----------
    signal : array_like of shape (n_models, n_samples)
        Per-row statistic of every model, e.g. the logit-scaled confidence
        :math:`\phi = \log\frac{p_y}{1 - p_y}` (:attr:`skmip.audit.game.MembershipGame.signal`).
    membership : array_like of bool, shape (n_models, n_samples)
        Which rows each model trained on.
    online : bool, default=True
        Online LiRA (Algorithm 1): Gaussians fitted to both IN and OUT references, score
        :math:`\log \mathcal{N}(\phi; \mu_{in}, \sigma^2_{in}) - \log \mathcal{N}(\phi; \mu_{out}, \sigma^2_{out})`.
        Offline: only OUT references, score :math:`-\log \Pr[Z > \phi]` with
        :math:`Z \sim \mathcal{N}(\mu_{out}, \sigma^2_{out})` (the one-sided test).
    global_variance : bool or "auto", default="auto"
        Use one variance per group (IN, OUT) pooled over all rows instead of one per row.
        ``"auto"`` pools when there are fewer than 64 models: a per-row variance from a
        handful of references is too noisy, and Carlini et al. find the fixed (global)
        variance stronger below 64 shadow models.

    Returns
    -------
    ndarray of shape (n_models, n_samples)
        Entry ``[k, i]``: score of row ``i`` against target model ``k``, computed from the
        models ``j != k`` only. Larger means "member". Finite.

    Raises
    ------
    ValueError
        For mismatched shapes, non-finite signals, or fewer than 2 models.

    Notes
    -----
    Carlini et al., "Membership Inference Attacks From First Principles" (IEEE S&P 2022),
    Section IV, Algorithm 1 and its offline variant (Section IV-C, "one-sided hypothesis
    test"), with the fixed-variance option of Section VI. Means are sample means and
    variances unbiased sample variances (Carlini et al.'s code uses medians and the
    uncentred standard deviation of all IN values for the global variance; we pool the
    per-row squared deviations, which is the maximum-likelihood global variance of a model
    with per-row means).

    Edge cases, all documented choices: a row with fewer than two references in a group uses
    that group's pooled variance; a row with no reference in a group (likely only with few
    models) takes the other group's mean shifted by the average IN - OUT gap over the rows
    that have both; variances are floored at :math:`10^{-12}` times the overall variance.
    Every score is invariant to adding a per-row constant to the signal (rows are centred
    before the sums are accumulated, for numerical accuracy).

    References
    ----------
    Carlini, Chien, Nasr, Song, Terzis, Tramer, "Membership Inference Attacks From First
    Principles", IEEE S&P 2022: Algorithm 1, Sections IV-B (logit scaling), IV-C (offline),
    VI-B (fixed variance).

    Examples
    --------
    Members sit at +1, non-members at -1 (plus noise); the target's own output is scored
    against the others:

    >>> rng = np.random.default_rng(0)
    >>> member = rng.random((16, 50)) < 0.5
    >>> signal = np.where(member, 1.0, -1.0) + 0.3 * rng.normal(size=(16, 50))
    >>> scores = lira_scores(signal, member, global_variance=True)
    >>> bool(scores[member].min() > scores[~member].max())
    True
    """
    owner = "lira_scores"
    m = check_membership(owner, membership)
    s = check_matrix(owner, "signal", signal, m.shape)
    if isinstance(global_variance, str) and global_variance != "auto":
        raise ValueError(f"{owner}: global_variance must be True, False or 'auto'; got {global_variance!r}.")
    global_variance = _use_global(global_variance, m.shape[0])
    s0 = s - s.mean(axis=0, keepdims=True)
    total_var = float(s0.var())
    floor = max(1e-12 * total_var, 1e-300)

    cnt_out, mu_out, ss_out = _reference_stats(s0, ~m)
    cnt_in, mu_in, ss_in = _reference_stats(s0, m)
    pool_out = _pooled_variance(cnt_out, ss_out)
    pool_in = _pooled_variance(cnt_in, ss_in)
    # Rows lacking one group (every reference on one side; likely only with few models)
    # borrow the other group's mean shifted by the average IN - OUT gap of the target's rows.
    both = (cnt_in > 0) & (cnt_out > 0)
    with np.errstate(invalid="ignore"):
        gap = np.where(both, mu_in - mu_out, 0.0).sum(1) / np.maximum(both.sum(1), 1)
    mu_in = np.where(cnt_in > 0, mu_in, mu_out + gap[:, None])
    mu_out = np.where(cnt_out > 0, mu_out, mu_in - gap[:, None])
    fallback = total_var if total_var > 0 else 1.0
    pool_in = np.where(np.isnan(pool_in), pool_out, pool_in)
    pool_out = np.where(np.isnan(pool_out), pool_in, pool_out)
    pool_in = np.where(np.isnan(pool_in), fallback, pool_in)
    pool_out = np.where(np.isnan(pool_out), fallback, pool_out)

    def variance(cnt, ss, pool):
        if global_variance:
            v = np.broadcast_to(pool[:, None], cnt.shape)
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                v = np.where(cnt > 1, ss / np.maximum(cnt - 1, 1), pool[:, None])
        return np.maximum(v, floor)

    v_out = variance(cnt_out, ss_out, pool_out)
    if online:
        v_in = variance(cnt_in, ss_in, pool_in)
        scores = 0.5 * (
            (s0 - mu_out) ** 2 / v_out + np.log(v_out) - (s0 - mu_in) ** 2 / v_in - np.log(v_in)
        )
    else:
        from scipy.stats import norm

        scores = -norm.logsf((s0 - mu_out) / np.sqrt(v_out))
    big = np.finfo(np.float64).max / 4
    return np.nan_to_num(scores, nan=0.0, posinf=big, neginf=-big)


class LiRA(MembershipAttack):
    """LiRA on a membership game; aliases ``"lira"``/``"lira_online"`` and ``"lira_offline"``.

    Parameters
    ----------
    online : bool, default=True
        Online (IN and OUT references) or offline (OUT references only).
    global_variance : bool or "auto", default="auto"
        One pooled variance per group instead of per row; ``"auto"`` below 64 models.

    Notes
    -----
    See :func:`lira_scores`. :meth:`validate` refuses a classifier without
    ``predict_proba`` (LiRA scores the confidence of the true class) and fewer models than
    :func:`lira_min_models` (Carlini et al. use 64 or more; 16 already beats LOSS on
    overfit models).

    Examples
    --------
    >>> LiRA(online=False)
    LiRA(online=False, global_variance='auto')
    """

    name = "lira"

    def __init__(self, *, online: bool = True, global_variance: bool | str = "auto"):
        self.online = online
        self.global_variance = global_variance

    def validate(self, estimator, *, n_models: int, member_rate: float) -> None:
        if estimator is not None and is_classifier(estimator) and not hasattr(estimator, "predict_proba"):
            raise TypeError(
                f"LiRA: {type(estimator).__name__} has no predict_proba; LiRA scores the "
                "logit-scaled confidence of the true class. Use a probabilistic classifier "
                "(SVC(probability=True), CalibratedClassifierCV(...)) or attack='loss'."
            )
        need = lira_min_models(member_rate, online=self.online, global_variance=self.global_variance)
        if n_models < need:
            kind = "online" if self.online else "offline"
            raise ValueError(
                f"LiRA: {kind} LiRA needs n_models >= {need} at member_rate={member_rate} so that a "
                f"typical row has enough IN/OUT reference models to fit Gaussians; got "
                f"n_models={n_models}. Use n_models=16 or more (Carlini et al. use 64-256), "
                "global_variance=True, or attack='lira_offline'."
            )

    def score(self, game) -> np.ndarray:
        """LiRA scores of ``game.signal``; see :func:`lira_scores`."""
        return lira_scores(game.signal, game.membership, online=self.online,
                           global_variance=self.global_variance)
