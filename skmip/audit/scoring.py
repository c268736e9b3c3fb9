"""MIAttackScorer: audit a training algorithm by membership inference, as an estimator or a scorer.

``MIAttackScorer(estimator).fit(X, y)`` plays the membership game with clones of
``estimator`` on the pool ``(X, y)``, attacks every model with the others as references, and
records the attack's ROC metrics and, when the estimator states a privacy bound (its
``stated_promise()``, :mod:`skmip.promise`), whether the measured ROC respects it. ``scorer(estimator, X, y)`` does the same with the estimator it is
given and returns one number, greater-is-better (the leakage negated), so it drops into
``GridSearchCV(..., scoring={"accuracy": ..., "mi": scorer})``.
"""

from __future__ import annotations

import copy
import numbers
import time

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.utils import get_tags
from sklearn.utils.validation import validate_data

from skmip.promise import Promise, stated_promise
from skmip.utils.rows import n_rows
from skmip.utils.validation import check_int, check_interval, check_n_jobs, check_option, check_sample_weight
from skmip.audit.attacks.suite import bonferroni_confidence, resolve_attacks
from skmip.audit.game import play_membership_game
from skmip.audit.verdict import attack_results, metric_value, stated_bound, verdict_attributes

__all__ = ["MIAttackScorer", "make_mi_scorer", "StatedBound"]

#: The promise type of :mod:`skmip.promise`, by its 0.1 name (the scorer reads every promise
#: through :func:`skmip.promise.stated_promise`).
StatedBound = Promise

_OWNER = "MIAttackScorer"
_METRICS = ("auc", "tpr_at_fpr", "advantage", "positive_accuracy", "empirical_epsilon")
_SAMPLING = ("exact", "bernoulli")
_FITTED = (
    "scores_", "membership_", "attack_", "best_attack_", "attack_results_", "attack_confidence_",
    "training_issues_", "roc_auc_", "tpr_at_fpr_", "advantage_",
    "positive_accuracy_", "empirical_epsilon_", "bound_", "bound_holds_", "bound_check_",
    "n_features_in_", "feature_names_in_",
)


def _metric_name(metric):
    name = metric[4:] if isinstance(metric, str) and metric.startswith("neg_") else metric
    check_option(
        _OWNER, "metric", name, _METRICS,
        why="Each is a leakage measure; the scorer returns it negated (greater is better), "
        "so 'neg_auc' is accepted as a synonym of 'auc'.",
    )
    return name


class MIAttackScorer(BaseEstimator):
    """Membership-inference audit: the game, an attack, its metrics, and the stated bound.

    Use it as a meta-estimator (``fit`` audits ``estimator`` on a pool and stores the
    results) or as a scikit-learn scorer (``scorer(estimator, X, y)`` returns the negated
    leakage of ``estimator``'s training algorithm on ``(X, y)``).

    Parameters
    ----------
    estimator : estimator instance, default=None
        The training algorithm to audit (``fit`` only; the scorer call audits the
        estimator it is given). Clones are fitted; the estimator itself is not touched.
    attack : "auto", str, attack object, or list of those, default="auto"
        ``"auto"``: every strong attack that applies to the estimator -- RMIA online and
        offline, LiRA online and offline, and LOSS as the floor
        (:mod:`skmip.audit.attacks.suite` says which apply to what) -- all on the *same* shadow
        models; the strongest by ``metric`` is reported (``best_attack_``) and the confidence
        statements are corrected for the choice (see Notes). A registered alias
        (``"lira"``, ``"rmia"``, ``"loss"``, ...; see :mod:`skmip.audit.attacks`) or an attack
        object such as ``LiRA(global_variance=True)`` runs that attack alone; a list runs
        those and reports the strongest.
    n_models : int, default=16
        Models in the game; each is the target once with the other ``n_models - 1`` as
        references. The game costs ``n_models`` fits.
    member_rate : float, default=0.5
        Probability that a row is in a model's training set. Definition 1 (eta-MIP) uses 0.5.
    metric : str, default="auc"
        The number that ranks attacks (the strongest has the largest) and that the scorer
        call returns, negated so that greater is better:
        ``"auc"``, ``"tpr_at_fpr"`` (at ``fpr``), ``"advantage"`` (max TPR - FPR),
        ``"positive_accuracy"`` (Thudi's quantile thresholds) or ``"empirical_epsilon"``.
        The ``"neg_"``-prefixed names are synonyms.
    fpr : float, default=0.001
        False-positive rate of ``tpr_at_fpr_`` and of ``metric="tpr_at_fpr"``.
    sampling : {"exact", "bernoulli"}, default="exact"
        How member sets are drawn (:func:`skmip.audit.game.play_membership_game`): exact-size
        uniform subsets (Izzo et al.'s Definition 1) or independent per-row draws (the
        Poisson sampling Thudi et al.'s Theorem 3.3 assumes).
    delta : float, default=1e-5
        The delta of ``empirical_epsilon_``.
    confidence : float, default=0.95
        Confidence of ``empirical_epsilon_`` and of the bound check.
    random_state : None, int, numpy Generator or RandomState, default=None
        Seeds the game (member sets and per-model seeds) and nothing else.
    n_jobs : int, default=None
        Models fitted in parallel through joblib.
    verbose : int, default=0
        Progress messages when > 0: each fitted model with the time left, each attack's
        scoring time, the strongest attack.

    Attributes
    ----------
    scores_ : ndarray of shape (n_models, n_samples)
        Score of the strongest attack for every (target model, row) pair; larger means
        "member".
    membership_ : ndarray of bool, shape (n_models, n_samples)
        Whether row i was in model k's training set.
    attack_ : object
        The strongest attack (the only one, when one was asked for).
    best_attack_ : str
        Its name: the alias (``"rmia"``, ...) or the attack object's repr.
    attack_results_ : dict
        For every attack run, by name: ``roc_auc``, ``tpr_at_fpr``, ``advantage``,
        ``positive_accuracy``, ``empirical_epsilon`` (at ``attack_confidence_``),
        ``bound_holds``, ``bound_check`` and ``metric`` (the ranking value).
    attack_confidence_ : float
        The confidence of each attack's statements: ``1 - (1 - confidence) / n_attacks``
        (Bonferroni), so that the statements about the strongest hold at ``confidence``.
    training_issues_ : list of str
        What the training check warned about (models that mostly did not converge, some that
        predict a constant); empty when the models trained well. See
        :mod:`skmip.audit.training_check`: models that did not train at all raise
        :class:`~skmip.exceptions.TrainingFailedError` instead.
    roc_auc_ : float
        Area under the strongest attack's ROC over all trials.
    tpr_at_fpr_ : float
        True-positive rate at false-positive rate ``fpr``.
    advantage_ : float
        ``max(TPR - FPR)`` (the best membership advantage; eta-MIP promises <= 2 eta).
    positive_accuracy_ : float
        Best precision over the top-i*2.5% quantile thresholds (Thudi et al., Sec. 4.2).
    empirical_epsilon_ : float
        Clopper--Pearson lower bound on a DP epsilon at ``delta`` and ``confidence``
        (threshold chosen on half of the trials, certified on the other half): the largest
        over the attacks, each bound computed at ``attack_confidence_``.
    bound_ : float or None
        The bound the estimator states through its ``stated_promise()`` (the contract of
        :mod:`skmip.promise`), translated to the game: eta for an eta-MIP estimator, or the
        positive-accuracy bound for the game's members (see Notes); None when it states none.
        For an eta-MIP estimator with ``train_size=1.0``, which promises nothing, the eta its
        noise was calibrated to (a promise with ``promised=False``): the check then tests the
        calibration, not a guarantee.
    bound_holds_ : bool or None
        False when some attack refutes ``bound_`` at ``confidence`` (each tested at
        ``attack_confidence_``); None when there is no bound or the game cannot test it.
    bound_check_ : skmip.audit.metrics.BoundCheck or None
        Details of the test of the attack that comes closest to refuting it (margin,
        threshold).
    n_features_in_ : int
        Number of features of the audit pool.
    feature_names_in_ : ndarray of str
        Feature names of the pool, when ``X`` has them.

    Notes
    -----
    **Auditing eta-MIP (Izzo et al., Definition 1).** Definition 1 draws ``D_train`` uniformly
    among the k-subsets of ``D`` and bounds every attacker's accuracy by
    ``max(k/n, 1-k/n) + eta``; the game draws halves (``member_rate=0.5``), where this is
    ``1/2 + eta``, i.e. ``TPR <= FPR + 2 eta`` at every threshold (Theorem 8, corrected; see
    :func:`skmip.bounds.mip_tpr_bound`). With ``sampling="exact"``, ``member_rate=0.5`` and
    ``MIPNoiseWrapper(learner, train_size=1.0)`` each model of the game is one run of
    Algorithm 1 on ``D = (X, y)`` whose ``D_train`` is the game's member set, so the game is
    Definition 1 and the check is exact -- of the calibration's target: in that mode the
    noise is calibrated on halves of the game's member set, a function of ``D_train``, and
    the wrapper promises nothing (``mip_bound_ = None``); ``bound_`` is its
    ``target_eta_``. ``bound_holds_`` is False iff at some threshold the
    one-sided Clopper--Pearson lower bound on TPR minus the upper bound on FPR exceeds
    ``2 eta`` (Bonferroni over all thresholds: :func:`skmip.audit.metrics.check_mip_bound`). A
    wrapper with ``train_size < 1`` subsamples the game's members again; the scorer then
    warns that the check is not Definition 1.

    **Auditing subsampled DP (Thudi et al., Theorem 3.3).** ``SubsampledDPClassifier``
    states a bound on ``P(x* in D_sub | S)`` for its *own* Poisson subsample ``D_sub`` of the
    data it is given -- here the game's member set. As a function of that member set the
    classifier is (log(1 + T(e^eps - 1)), T delta)-DP (amplification by subsampling at rate
    ``T``), so with independent game sampling at rate ``r`` Theorem 3.3 bounds the game's
    positive accuracy by ``positive_accuracy_bound(eps', sampling_rate=r, ...)``; ``bound_``
    is that number and the check (:func:`skmip.audit.metrics.check_positive_accuracy_bound`)
    compares the attack's precision at Thudi's 40 quantile thresholds with it. Use
    ``sampling="bernoulli"``: Theorem 3.3 assumes independent sampling.

    **The strongest of several attacks.** With ``attack="auto"`` (or a list) the game is
    played once and every attack scores the same ``n_models x n_samples`` trials. The point
    figures (``roc_auc_``, ``tpr_at_fpr_``, ``advantage_``, ``positive_accuracy_``,
    ``scores_``) are those of ``best_attack_``, the attack with the largest ``metric``: a
    maximum over attacks, which can only overstate the leakage, the safe side for an audit.
    The confidence statements are corrected for the choice: each attack's epsilon lower
    bound and bound test are made at level ``1 - (1 - confidence) / A`` for ``A`` attacks,
    so with probability at least ``confidence`` all ``A`` hold at once (union bound), and
    with them ``empirical_epsilon_`` (their maximum) and ``bound_holds_`` (False if any
    refutes). GLiR is not among the candidates: it attacks one step's averaged gradient,
    which the game does not release.

    **No false all-clear.** Before any attack runs, the game checks that its models trained
    (:mod:`skmip.audit.training_check`): non-finite parameters or outputs, or most models predicting
    one output for every row, raise :class:`~skmip.exceptions.TrainingFailedError`; most
    models not converging, or a few constant ones, raise an
    :class:`~skmip.exceptions.AuditWarning` kept in ``training_issues_``.

    **Regressors** are audited on minus the squared residual: LiRA (online and offline)
    fits Gaussians to it per row, LOSS thresholds the squared error; RMIA needs a
    likelihood and does not apply.

    The binomial confidence statements treat the ``n_models x n_samples`` trials as
    independent; they share models and rows, so read them as approximate.

    **Privacy hygiene.** The scorer is an auditor's tool: ``membership_`` and ``scores_``
    describe the random splits of the audit pool. Do not publish them with a model.

    References
    ----------
    Carlini et al., "Membership Inference Attacks From First Principles", IEEE S&P 2022.
    Zarifzadeh, Liu, Shokri, "Low-Cost High-Power Membership Inference Attacks", ICML 2024.
    Izzo et al., "Provable Membership Inference Privacy", Definition 1, Theorem 8, Algorithm 1.
    Thudi et al., "Bounding Membership Inference", TMLR 2024, Theorem 3.3 and Section 4.2.
    Nasr et al., "Adversary instantiation", IEEE S&P 2021, Section IV-A.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> audit = MIAttackScorer(DecisionTreeClassifier(), attack="loss", n_models=4,
    ...                        random_state=0).fit(X, y)
    >>> audit.scores_.shape, audit.bound_ is None
    ((4, 569), True)
    >>> bool(audit.roc_auc_ > 0.5)
    True

    With ``attack="auto"`` (the default) every applicable attack scores the same models:

    >>> audit = MIAttackScorer(DecisionTreeClassifier(), n_models=8, random_state=0).fit(X, y)
    >>> sorted(audit.attack_results_) == sorted(["rmia", "rmia_offline", "lira", "lira_offline", "loss"])
    True
    >>> audit.best_attack_ in audit.attack_results_, round(audit.attack_confidence_, 3)
    (True, 0.99)
    """

    def __init__(
        self,
        estimator=None,
        *,
        attack="auto",
        n_models: int = 16,
        member_rate: float = 0.5,
        metric: str = "auc",
        fpr: float = 0.001,
        sampling: str = "exact",
        delta: float = 1e-5,
        confidence: float = 0.95,
        random_state=None,
        n_jobs: int | None = None,
        verbose: int = 0,
    ):
        self.estimator = estimator
        self.attack = attack
        self.n_models = n_models
        self.member_rate = member_rate
        self.metric = metric
        self.fpr = fpr
        self.sampling = sampling
        self.delta = delta
        self.confidence = confidence
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------ helpers
    def _validate(self, estimator):
        n_models = check_int(_OWNER, "n_models", self.n_models, 2, None,
                             why="each model is attacked with the others as references.")
        member_rate = check_interval(_OWNER, "member_rate", self.member_rate, 0, 1, closed="neither")
        metric = _metric_name(self.metric)
        check_interval(_OWNER, "fpr", self.fpr, 0, 1, closed="neither")
        check_option(_OWNER, "sampling", self.sampling, _SAMPLING)
        check_interval(_OWNER, "delta", self.delta, 0, 1, closed="left")
        check_interval(_OWNER, "confidence", self.confidence, 0, 1, closed="neither")
        check_n_jobs(_OWNER, self.n_jobs)
        if not isinstance(self.verbose, numbers.Integral):
            raise TypeError(f"{_OWNER}: verbose must be an integer; got {self.verbose!r}.")
        attacks = resolve_attacks(self.attack, estimator, n_models=n_models, member_rate=member_rate, owner=_OWNER)
        return attacks, metric

    def _log(self, message):
        if self.verbose:
            print(f"[{_OWNER}] {message}", flush=True)

    def _play(self, estimator, X, y, fit_params, attacks):
        names = ", ".join(attacks)
        self._log(f"membership game: {self.n_models} models, attack(s) {names}")
        game = play_membership_game(
            estimator, X, y, n_models=self.n_models, member_rate=self.member_rate,
            sampling=self.sampling, random_state=self.random_state, n_jobs=self.n_jobs,
            verbose=self.verbose, fit_params=fit_params, inspect=stated_promise,
        )
        scores = {}
        for name, attack in attacks.items():
            start = time.perf_counter()
            s = np.asarray(attack.score(game), dtype=np.float64)
            if s.shape != game.membership.shape:
                raise ValueError(
                    f"{_OWNER}: the attack {name} returned scores of shape {s.shape}; expected "
                    f"{game.membership.shape} (n_models, n_samples)."
                )
            scores[name] = s
            self._log(f"attack {name}: scored every (target, row) pair in {time.perf_counter() - start:.1f} s")
        return game, scores

    def _stated(self, game):
        """The game's stated bound as ``(kind, value)``, or None; warns once when the check is inexact."""
        return stated_bound(game.inspected, game.membership, member_rate=self.member_rate,
                            sampling=self.sampling, owner=_OWNER, stacklevel=4)

    # ------------------------------------------------------------------ API
    def fit(self, X: ArrayLike, y: ArrayLike | None = None, **fit_params):
        """Play the membership game with clones of ``estimator`` on ``(X, y)`` and attack it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The audit pool.
        y : array-like of shape (n_samples,), default=None
            Targets.
        **fit_params : dict
            Passed to every fit of the estimator.

        Returns
        -------
        self : MIAttackScorer

        Raises
        ------
        ValueError
            If ``estimator`` is None, a parameter is invalid, or a member set lacks a class.
        TypeError
            If the attack cannot use the estimator (e.g. LiRA without ``predict_proba``).
        """
        if self.estimator is None:
            raise ValueError(
                f"{_OWNER}: estimator is None. Pass the training algorithm to audit, "
                "MIAttackScorer(estimator).fit(X, y), or call the scorer as scorer(estimator, X, y)."
            )
        attacks, metric = self._validate(self.estimator)
        # Record n_features_in_ / feature_names_in_ without converting X (the audited
        # estimator may need a DataFrame), on a copy: nothing is set before the audit succeeds.
        probe = copy.copy(self)
        validate_data(probe, X, skip_check_array=True, reset=True)
        check_sample_weight(_OWNER, fit_params, n_rows(X))
        game, scores = self._play(self.estimator, X, y, fit_params, attacks)
        self._log("metrics and bound check")
        stated = self._stated(game)
        results, best, level = attack_results(
            game.membership, scores, metric=metric, fpr=self.fpr, delta=self.delta,
            confidence=self.confidence, stated=stated,
        )
        if len(results) > 1:
            self._log(f"strongest attack by {metric}: {best} ({results[best]['metric']:.4g})")
        fitted = verdict_attributes(scores, game.membership, attacks, results, best, level, stated, game.issues)
        fitted["n_features_in_"] = probe.n_features_in_
        if hasattr(probe, "feature_names_in_"):
            fitted["feature_names_in_"] = probe.feature_names_in_
        for name in _FITTED:
            self.__dict__.pop(name, None)
        self.__dict__.update(fitted)
        return self

    def __call__(self, estimator, X: ArrayLike, y: ArrayLike | None = None) -> float:
        """Scorer protocol: the negated leakage of ``estimator``'s training algorithm on ``(X, y)``.

        Parameters
        ----------
        estimator : estimator instance
            Fitted or not: clones (unfitted, same parameters) play the game on ``(X, y)``.
        X, y : array-like
            The pool (in cross-validation, the held-out fold).

        Returns
        -------
        float
            ``-metric``: greater is better (less leakage), as scikit-learn scorers require.
        """
        attacks, metric = self._validate(estimator)
        game, scores = self._play(estimator, X, y, {}, attacks)
        level = bonferroni_confidence(self.confidence, len(scores))
        return -max(
            metric_value(metric, game.membership, s, fpr=self.fpr, delta=self.delta, confidence=level)
            for s in scores.values()
        )

    @property
    def name(self) -> str:
        """The scorer's name in scikit-learn's convention, e.g. ``"neg_mi_auc"``."""
        return f"neg_mi_{_metric_name(self.metric)}"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.target_tags.required = False
        if self.estimator is not None:
            inner = get_tags(self.estimator)
            tags.input_tags.sparse = inner.input_tags.sparse
            tags.input_tags.allow_nan = inner.input_tags.allow_nan
            tags.target_tags.required = inner.target_tags.required
        return tags


def make_mi_scorer(
    attack="auto",
    *,
    metric: str = "auc",
    n_models: int = 16,
    member_rate: float = 0.5,
    fpr: float = 0.001,
    sampling: str = "exact",
    delta: float = 1e-5,
    confidence: float = 0.95,
    random_state=None,
    n_jobs: int | None = None,
    verbose: int = 0,
) -> MIAttackScorer:
    """A membership-inference scorer for ``GridSearchCV`` / ``cross_validate``.

    Returns ``MIAttackScorer(estimator=None, ...)``: called as ``scorer(estimator, X, y)``
    it plays the membership game with clones of ``estimator`` on ``(X, y)`` and returns the
    chosen leakage metric of the strongest attack negated (greater is better). Parameters are those of
    :class:`MIAttackScorer`.

    Notes
    -----
    In cross-validation the game is played on each held-out fold, so every model of the
    game trains on ``member_rate`` of a fold: the leakage measured is that of the training
    algorithm at that data size. ``random_state=None`` draws a fresh game at every call; fix
    it to compare candidates on the same member sets.

    Examples
    --------
    >>> make_mi_scorer("loss", metric="advantage", n_models=8)
    MIAttackScorer(attack='loss', metric='advantage', n_models=8)
    >>> make_mi_scorer(metric="tpr_at_fpr").name
    'neg_mi_tpr_at_fpr'
    """
    return MIAttackScorer(
        None, attack=attack, n_models=n_models, member_rate=member_rate, metric=metric,
        fpr=fpr, sampling=sampling, delta=delta, confidence=confidence,
        random_state=random_state, n_jobs=n_jobs, verbose=verbose,
    )
