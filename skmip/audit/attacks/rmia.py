"""RMIA, the relative membership-inference attack of Zarifzadeh, Liu and Shokri (ICML 2024).

RMIA compares the target model's likelihood of a row ``x`` with its likelihood of population
rows ``z``, each normalised by the reference models' average likelihood:
``LR(x, z) = [P(x | theta) / P(x)] / [P(z | theta) / P(z)]``, and scores ``x`` by the
fraction of population rows it dominates, ``Pr_z(LR(x, z) >= gamma)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import is_classifier

from skmip.utils.rng import resolve_rng
from skmip.utils.validation import check_interval

from skmip.audit.attacks._base import MembershipAttack, check_matrix, check_membership

__all__ = ["RMIA", "rmia_scores"]

#: Grid of the offline coefficient a searched by ``offline_a="auto"``.
OFFLINE_A_GRID = np.round(np.arange(0.0, 1.01, 0.1), 1)


def _loo_log_mean(log_values, weights):
    """Leave-one-out log of the weighted mean of exp(log_values) along axis 0.

    Entry ``[k, i]`` is ``log(sum_{j != k} w[j, i] exp(v[j, i]) / sum_{j != k} w[j, i])`` (NaN
    where that weight is 0), for every k at once: prefix and suffix log-sums-of-exps
    (``np.logaddexp.accumulate``) joined around k, so all ``K`` leave-one-out means cost
    ``O(K n)`` -- not ``K`` separate sums over ``K - 1`` models, ``O(K^2 n)`` -- with no
    subtraction of exponentials (which would cancel when one model dominates a row).
    """
    w = np.asarray(weights, dtype=bool)
    v = np.where(w, log_values, -np.inf)
    pad = np.full((1, v.shape[1]), -np.inf)
    prefix = np.vstack([pad, np.logaddexp.accumulate(v, axis=0)[:-1]])             # models < k
    suffix = np.vstack([np.logaddexp.accumulate(v[::-1], axis=0)[::-1][1:], pad])  # models > k
    cnt = w.sum(0)[None, :] - w
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.logaddexp(prefix, suffix) - np.log(cnt)
    return np.where(cnt > 0, out, np.nan)


def _reference_means(ll, member, online):
    """Leave-one-out ``(log P_all(x), log P_OUT(x))`` of every target, each (K, n).

    Row k averages over the reference models ``j != k`` (Zarifzadeh et al., Sec. 3): over all
    of them, and (offline) over those that did not train on the row.
    """
    mean_all = _loo_log_mean(ll, np.ones(ll.shape, dtype=bool))
    if online:
        return mean_all, None
    mean_out = _loo_log_mean(ll, ~member)
    return mean_all, np.where(np.isnan(mean_out), mean_all, mean_out)


def _offline_prior(mean_out, a):
    """Offline ``log P(x)`` from the OUT references: ``((1 + a) P_OUT(x) + (1 - a)) / 2`` (Sec. 3.2)."""
    with np.errstate(divide="ignore"):
        return np.logaddexp(np.log((1 + a) / 2) + mean_out, np.log((1 - a) / 2))


def _dominance(log_ratio, population, log_gamma):
    """Fraction of population rows z (excluding x itself) with log_ratio[x] - log_ratio[z] >= log gamma."""
    z = np.sort(log_ratio[population])
    counts = np.searchsorted(z, log_ratio - log_gamma, side="right").astype(np.float64)
    denom = np.full(log_ratio.shape, float(z.size))
    # A row compared with itself has ratio 1: drop that comparison.
    self_hit = np.zeros(log_ratio.shape, dtype=bool)
    self_hit[population] = True
    counts[self_hit] -= 1.0 if 0.0 >= log_gamma else 0.0
    denom[self_hit] -= 1.0
    return counts / np.maximum(denom, 1.0)


def _auc(member, scores):
    from skmip.audit.metrics import mi_roc_auc

    if member.all() or not member.any():
        return np.nan
    return mi_roc_auc(member, scores)


def rmia_scores(
    log_likelihood: ArrayLike,
    membership: ArrayLike,
    *,
    online: bool = True,
    gamma: float = 1.0,
    offline_a: float | str = "auto",
    n_population: int | None = None,
    tie_break: bool = True,
    random_state=None,
    population: ArrayLike | None = None,
) -> np.ndarray:
    r"""RMIA scores for every (target model, row) pair, with the other models as references.

    Parameters
    ----------
    log_likelihood : array_like of shape (n_models, n_samples)
        ``log P(x | theta_k)``: the log-probability each model gives the true class of each
        row (:attr:`skmip.audit.game.MembershipGame.log_likelihood`), or a log-density.
    membership : array_like of bool, shape (n_models, n_samples)
        Which rows each model trained on.
    online : bool, default=True
        Online: ``P(x)`` is the average of ``P(x | theta_j)`` over all reference models.
        Offline: over the references that did not train on ``x`` only, corrected as
        ``P(x) = ((1 + a) P_OUT(x) + (1 - a)) / 2``; requires probabilities (<= 1).
    gamma : float, default=1.0
        Threshold on the pairwise likelihood ratio, ``> 0``.
    offline_a : float in [0, 1] or "auto", default="auto"
        The offline coefficient ``a``. ``"auto"`` picks, for each target, the value of
        ``0, 0.1, ..., 1`` that maximises the AUC of attacking one *reference* model with the
        remaining ones (the attacker knows its references' member sets), as Zarifzadeh et al.
        do. Ignored when ``online``.
    n_population : int, default=None
        Number of population rows ``z`` per target, drawn at random from the rows the target
        did *not* train on (fresh draws from the data distribution for that model). ``None``
        uses all of them.
    tie_break : bool, default=True
        Order rows with equal fractions by their normalised likelihood ratio
        ``P(x|theta)/P(x)``. The fraction takes at most ``|Z| + 1`` values, so with a few
        hundred population rows many members and non-members tie at 1.0 and no threshold
        reaches a low FPR. The tie-break adds less than the smallest gap between two
        distinct fractions, so every strict ordering of the paper's score is kept.
    random_state : None, int or Generator, default=None
        For the population subsample only.
    population : array_like of bool, shape (n_samples,), default=None
        The rows that may serve as population rows ``z`` (of a target: those of them it did
        not train on). ``None``: every row. A pool scored against population data it does
        not belong to (:func:`skmip.audit.audit_fitted`) treats members and non-members
        alike: when a non-member is itself a population row, its comparison with itself is
        dropped, which within a block of tied ratios ranks it just below a member of the
        same ratio.

    Returns
    -------
    ndarray of shape (n_models, n_samples)
        Entry ``[k, i]`` is :math:`\Pr_z[\mathrm{LR}_{\theta_k}(x_i, z) \ge \gamma]`, in [0, 1]
        (plus the tie-break), computed from the models ``j != k`` only. Larger means "member".

    Raises
    ------
    ValueError
        For mismatched shapes, non-finite inputs, bad options, or ``offline_a``/offline on
        log-likelihoods that are not log-probabilities.

    Notes
    -----
    Zarifzadeh, Liu, Shokri, "Low-Cost High-Power Membership Inference Attacks", ICML 2024,
    Section 3: the score :math:`\Pr_z(\mathrm{LR}(x, z) \ge \gamma)` with
    :math:`\mathrm{LR}(x,z) = \frac{P(x|\theta)}{P(x)} \big/ \frac{P(z|\theta)}{P(z)}`,
    :math:`P(x) = \frac1N\sum_j P(x|\theta_j)` over reference models, and the offline
    approximation of ``P(x)`` from OUT models with the linear coefficient ``a``. ``P(z)`` is
    computed like ``P(x)``. The comparison of ``x`` with itself (when ``x`` is one of the
    population rows) is excluded. Everything is computed in log space. ``gamma = 1``
    compares the two normalised likelihoods directly (the authors' released code uses it);
    ties at the threshold count as dominated (``>=``, as in the paper's definition).

    References
    ----------
    Zarifzadeh, S., Liu, P., Shokri, R. "Low-Cost High-Power Membership Inference Attacks".
    ICML 2024 (PMLR 235:58244-58282).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random((8, 200)) < 0.5
    >>> hardness = rng.normal(size=200)          # some rows are hard for every model
    >>> log_p = np.log(1 / (1 + np.exp(hardness - 1.5 * member)))
    >>> scores = rmia_scores(log_p, member)
    >>> bool(scores[member].mean() > scores[~member].mean())
    True
    """
    owner = "rmia_scores"
    m = check_membership(owner, membership)
    ll = check_matrix(owner, "log_likelihood", log_likelihood, m.shape)
    gamma = check_interval(owner, "gamma", gamma, 0, None, closed="neither")
    if not online:
        if np.any(ll > 1e-9):
            raise ValueError(
                f"{owner}: offline RMIA approximates P(x) from probabilities, but some "
                "log_likelihood values are > 0 (densities). Use online=True."
            )
        if not (isinstance(offline_a, str) and offline_a == "auto"):
            offline_a = check_interval(owner, "offline_a", offline_a, 0, 1)
    if n_population is not None:
        from skmip.utils.validation import check_int

        n_population = check_int(owner, "n_population", n_population, 2, None)
    K, n = m.shape
    pop = np.ones(n, dtype=bool) if population is None else np.asarray(population, dtype=bool)
    if pop.shape != (n,):
        raise ValueError(f"{owner}: population must be a boolean mask of the {n} rows; got shape {pop.shape}.")
    # Only the population subsample is random: no generator (and no OS entropy) without it.
    rng = resolve_rng(random_state) if n_population is not None else None
    # Distinct fractions a/p != b/q with p, q <= n differ by at least 1/n^2.
    tie_eps = 0.5 / float(n) ** 2 if tie_break else 0.0
    log_gamma = np.log(gamma)
    scores = np.empty((K, n))
    mean_all, mean_out = _reference_means(ll, m, online)
    tuning = None
    if not online and isinstance(offline_a, str) and K > 2:
        # The pseudo-target of target k is model 0 (model 1 for k = 0), attacked with the
        # models other than it and k: leave-one-out means over the models without model 0
        # give all of them at once (row k - 1 excludes k; row 0, model 1, serves k = 0 too).
        _, out_wo0 = _reference_means(ll[1:], m[1:], online=False)
        tuning = out_wo0
    for k in range(K):
        population = np.flatnonzero(~m[k] & pop)
        if n_population is not None and population.size > n_population:
            population = np.sort(rng.choice(population, size=n_population, replace=False))
        if online:
            log_prior = mean_all[k]
        else:
            a = offline_a
            if isinstance(offline_a, str):
                a = 0.5 if tuning is None else _tune_offline_a(
                    ll, m, 1 if k == 0 else 0, tuning[max(k - 1, 0)], log_gamma, n_population, rng, pop)
            log_prior = _offline_prior(mean_out[k], a)
        log_ratio = ll[k] - log_prior
        scores[k] = _dominance(log_ratio, population, log_gamma)
        if tie_eps:
            from scipy.special import expit

            scores[k] += tie_eps * expit(log_ratio)
    return scores


def _tune_offline_a(ll, m, pseudo, mean_out_others, log_gamma, n_population, rng, pop=None):
    """Best offline a for attacking one reference model (a pseudo-target) with the others.

    ``mean_out_others`` is the OUT log-mean of the remaining references (neither the target
    nor the pseudo-target). Costs ``len(OFFLINE_A_GRID)`` rankings of ``n`` rows, whatever K.
    """
    population = np.flatnonzero(~m[pseudo] if pop is None else ~m[pseudo] & pop)
    if n_population is not None and population.size > n_population:
        population = np.sort(rng.choice(population, size=n_population, replace=False))
    best_a, best_auc = 0.0, -np.inf
    for a in OFFLINE_A_GRID:
        log_ratio = ll[pseudo] - _offline_prior(mean_out_others, a)
        auc = _auc(m[pseudo], _dominance(log_ratio, population, log_gamma))
        if auc > best_auc:
            best_a, best_auc = float(a), auc
    return best_a


class RMIA(MembershipAttack):
    """RMIA on a membership game; aliases ``"rmia"`` (online) and ``"rmia_offline"``.

    Parameters
    ----------
    online : bool, default=True
    gamma : float, default=1.0
    offline_a : float or "auto", default="auto"
    n_population : int, default=None
    tie_break : bool, default=True
    random_state : None, int or Generator, default=None

    See :func:`rmia_scores` for their meaning.

    Examples
    --------
    >>> RMIA(gamma=2.0)
    RMIA(online=True, gamma=2.0, offline_a='auto', n_population=None, tie_break=True, random_state=None)
    """

    name = "rmia"

    def __init__(self, *, online: bool = True, gamma: float = 1.0, offline_a="auto",
                 n_population: int | None = None, tie_break: bool = True, random_state=None):
        self.online = online
        self.gamma = gamma
        self.offline_a = offline_a
        self.n_population = n_population
        self.tie_break = tie_break
        self.random_state = random_state

    def validate(self, estimator, *, n_models: int, member_rate: float) -> None:
        if estimator is None:
            return
        if is_classifier(estimator):
            if not hasattr(estimator, "predict_proba"):
                raise TypeError(
                    f"RMIA: {type(estimator).__name__} has no predict_proba; RMIA compares the "
                    "probabilities models give the true class. Use a probabilistic classifier "
                    "or attack='loss'."
                )
        elif not hasattr(estimator, "score_samples") or not self.online:
            raise TypeError(
                f"RMIA: needs P(x | model): a classifier with predict_proba (online or offline) "
                f"or a density estimator with score_samples (online only); got "
                f"{type(estimator).__name__}. Use attack='lira' or 'loss' for regressors."
            )

    def score(self, game) -> np.ndarray:
        """RMIA scores of ``game.log_likelihood``; see :func:`rmia_scores`."""
        if game.log_likelihood is None:
            raise TypeError(
                f"RMIA: the game recorded output={game.output!r}, which is not a likelihood; "
                "RMIA needs predict_proba (classifiers) or score_samples (density estimators)."
            )
        return rmia_scores(
            game.log_likelihood, game.membership, online=self.online, gamma=self.gamma,
            offline_a=self.offline_a, n_population=self.n_population,
            tie_break=self.tie_break, random_state=self.random_state,
            population=getattr(game, "population", None),
        )
