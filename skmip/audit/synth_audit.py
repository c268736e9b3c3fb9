"""Auditing a synthesizer: the membership game with a synthesizer as the trained object.

``SynthesizerAuditor(synth).fit(X)`` draws ``n_models`` independent random halves of the
pool ``X`` (Definition 1 of Izzo et al. with k = n/2), fits a clone of ``synth`` on each
half, samples synthetic records from it, and scores every record of the pool against every
fitted synthesizer with the attacks of :mod:`skmip.audit.attacks.synthetic` -- the density ratio
of DOMIAS, the distance to the closest synthetic record, and for marginal synthesizers the
likelihood of the released noisy tables. It reports the model audit's metrics
(:mod:`skmip.audit.metrics`) per attack and checks the synthesizer's stated promise along each ROC.
:class:`CopyingSynthesizer` is the leaky control an audit must catch.
"""

from __future__ import annotations

import copy
import numbers
import time
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, clone
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

from skmip.utils.rng import draw_seed, fix_inner_random_state, resolve_rng
from skmip.utils.validation import check_int, check_interval, check_n_jobs
from skmip.audit.attacks.synthetic import (
    CERTAIN,
    MarginalLikelihoodAttack,
    RecordEncoder,
    get_synthetic_attack,
)
from skmip.bounds.empirical import clopper_pearson_interval
from skmip.exceptions import PrivacyWarning
from skmip.promise import stated_promise
from skmip.audit.metrics import (
    check_mip_bound,
    empirical_epsilon,
    membership_advantage,
    mi_roc_auc,
    mi_roc_curve,
)

__all__ = ["SynthesizerAuditor", "SyntheticAttackResult", "CopyingSynthesizer", "synthesizer_promise"]

_OWNER = "SynthesizerAuditor"
_AUTO = ("density_ratio", "closest_record", "marginal_likelihood")
_FITTED = (
    "membership_", "scores_", "attacks_", "results_", "attack_", "roc_auc_", "tpr_at_fpr_",
    "advantage_", "empirical_epsilon_", "bound_", "bound_promised_", "bound_holds_", "bound_check_",
    "n_synthetic_", "n_features_in_", "feature_names_in_",
)


# ----------------------------------------------------------------------------- the control
class CopyingSynthesizer(BaseEstimator):
    """A deliberately non-private control: its "synthetic" records are training records.

    Audit it beside a private synthesizer with the same game and attacks: an audit that
    cannot tell this one leaks (the closest-record attack finds every sampled member) has no
    teeth. It states no promise.

    Examples
    --------
    >>> s = CopyingSynthesizer().fit(np.eye(3))
    >>> bool(np.all(np.isin(s.sample(4, random_state=0), np.eye(3))))
    True
    """

    def fit(self, X: ArrayLike, y=None) -> "CopyingSynthesizer":
        """Keep a copy of ``X`` (this is the leak); any column types."""
        X = np.asarray(X)
        self.rows_ = X.astype(np.float64) if X.dtype.kind in "biuf" else X.copy()
        return self

    def sample(self, n_samples: int = 1, random_state=None) -> np.ndarray:
        """Draw ``n_samples`` training records with replacement."""
        check_is_fitted(self)
        rng = resolve_rng(random_state)
        return self.rows_[rng.choice(len(self.rows_), size=n_samples)]


# ----------------------------------------------------------------------------- promises
def synthesizer_promise(fitted):
    """The eta-MIP promise a fitted synthesizer states (a :class:`skmip.promise.Promise`), or None.

    Read through the synthesizer's ``stated_promise()`` (:func:`skmip.promise.stated_promise`),
    as :class:`~skmip.audit.scoring.MIAttackScorer` reads models: ``mip_bound_`` for the MIP
    synthesizers (or, fitted with ``train_size=1.0``, the ``target_eta_`` their noise was
    calibrated to, with ``promised=False``); ``dp_to_mip(epsilon, delta)`` for
    :class:`~skmip.DPMarginalSynthesizer` (Izzo et al., Theorem 4).

    Examples
    --------
    >>> synthesizer_promise(CopyingSynthesizer().fit([[0.0]])) is None
    True
    """
    return stated_promise(fitted)


# ----------------------------------------------------------------------------- results
@dataclass(frozen=True)
class SyntheticAttackResult:
    """The metrics of one attack over all (synthesizer, record) trials of the game.

    Attributes
    ----------
    attack : str
        The attack's name.
    roc_auc : float
        Area under the ROC.
    fpr : ndarray
        The false-positive rates at which TPR is read.
    tpr : ndarray
        The largest TPR among thresholds with FPR at most each ``fpr`` (no interpolation).
    tpr_interval : (ndarray, ndarray)
        Two-sided Clopper-Pearson interval of each TPR at the auditor's ``confidence``
        (binomial in the member trials).
    advantage : float
        ``max(TPR - FPR)``; eta-MIP promises at most ``2 eta``.
    empirical_epsilon : float
        Clopper-Pearson lower bound on a DP epsilon (threshold chosen on half the trials),
        at the per-attack confidence (Bonferroni over the attacks).
    bound_check : skmip.audit.metrics.BoundCheck or None
        The promise checked along the ROC, at the per-attack confidence.
    """

    attack: str
    roc_auc: float
    fpr: np.ndarray
    tpr: np.ndarray
    tpr_interval: tuple
    advantage: float
    empirical_epsilon: float
    bound_check: object = None


def _tpr_with_interval(membership, scores, fprs, confidence):
    f, t, _ = mi_roc_curve(membership, scores)
    n_pos = int(np.sum(membership))
    idx = np.searchsorted(f, fprs, side="right") - 1
    tpr = t[idx]
    tp = np.rint(tpr * n_pos).astype(np.int64)
    low, high = clopper_pearson_interval(tp, n_pos, confidence=confidence)
    return tpr, (np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64))


# ----------------------------------------------------------------------------- the game
def _play_one(synthesizer, X, rows, seed, n_synthetic, attacks, states):
    model = clone(synthesizer)
    if "train_size" in model.get_params():
        # The game's half is D_train (Definition 1): the synthesizer must not subsample it.
        model.set_params(train_size=1.0)
    fix_inner_random_state(model, seed)
    with warnings.catch_warnings():
        # The auditor fixes the noise seed (reproducible audits; the attacks never use it)
        # and asks for train_size=1.0 on purpose: both warnings would only be noise here.
        warnings.simplefilter("ignore", PrivacyWarning)
        model.fit(X[rows])
    synthetic = np.asarray(model.sample(n_synthetic, random_state=seed))
    scores = {}
    for attack, state in zip(attacks, states):
        s = np.asarray(attack.score(model, synthetic, X, state), dtype=np.float64)
        if s.shape != (X.shape[0],):
            raise ValueError(f"{_OWNER}: attack {attack.name} returned shape {s.shape}; expected ({X.shape[0]},).")
        scores[attack.name] = np.clip(np.nan_to_num(s, nan=0.0, posinf=CERTAIN, neginf=-CERTAIN), -CERTAIN, CERTAIN)
    return scores, synthesizer_promise(model)


class SynthesizerAuditor(BaseEstimator):
    """Membership-inference audit of a synthesizer: the game, synthetic-data attacks, metrics, promise.

    ``fit(X)`` plays the membership game of :class:`~skmip.audit.scoring.MIAttackScorer` with a
    synthesizer as the trained object: ``n_models`` independent uniform halves of the pool
    ``X`` (Definition 1, k = n/2), a clone of ``synthesizer`` fitted on each (with
    ``train_size=1.0`` when it has that parameter, so that the game's half *is* its
    ``D_train``), ``n_synthetic`` records sampled from each, and every record of the pool
    scored against every fitted synthesizer by each attack.

    Parameters
    ----------
    synthesizer : estimator with ``fit(X)`` and ``sample(n_samples, random_state=...)``
        The synthesizer to audit (cloned; the object itself is not touched).
    attacks : "auto" or list of str or SyntheticAttack, default="auto"
        Aliases of :data:`skmip.audit.attacks.synthetic.SYNTHETIC_ATTACKS` or attack objects.
        ``"auto"``: ``density_ratio`` and ``closest_record`` for every synthesizer, and
        ``marginal_likelihood`` for the marginal synthesizers.
    n_models : int, default=16
        Synthesizers in the game (>= 2); each costs one fit and one sample.
    n_synthetic : int, default=None
        Records sampled from each synthesizer; ``None``: as many as the pool has rows.
    fpr : float or sequence of float, default=(0.01, 0.001)
        False-positive rates at which TPR is reported.
    delta : float, default=1e-5
        The delta of the empirical epsilon.
    confidence : float, default=0.95
        Confidence of the Clopper-Pearson intervals, the empirical epsilon and the promise
        check. With several attacks each is run at ``1 - (1 - confidence) / n_attacks``
        (Bonferroni), so that the strongest of them is stated at ``confidence``.
    random_state : None, int or Generator, default=None
        Seeds the game: the halves and one seed per synthesizer (its noise and its sample).
    n_jobs : int, default=None
        Synthesizers fitted in parallel through joblib.
    verbose : int, default=0
        Progress per synthesizer (with the time left) when > 0.

    Attributes
    ----------
    membership_ : ndarray of bool, shape (n_models, n_samples)
        Whether row i was in synthesizer k's half.
    scores_ : dict of str to ndarray of shape (n_models, n_samples)
        Each attack's scores (larger = member).
    attacks_ : list of str
        The attacks run, in order.
    results_ : dict of str to SyntheticAttackResult
        Each attack's metrics and promise check.
    attack_ : str
        The attack with the largest advantage; ``roc_auc_``, ``tpr_at_fpr_`` and
        ``advantage_`` are its figures.
    roc_auc_ : float
    tpr_at_fpr_ : ndarray
        TPR at each of ``fpr``.
    advantage_ : float
    empirical_epsilon_ : float
        The largest empirical epsilon over the attacks (valid at ``confidence`` by the
        Bonferroni split).
    bound_ : float or None
        The eta the synthesizer states (``mip_bound_``; for ``train_size=1.0``, which
        promises nothing, ``target_eta_``; for a DP synthesizer ``dp_to_mip(epsilon, delta)``).
    bound_promised_ : bool or None
        False when ``bound_`` is a calibration target rather than a promise.
    bound_holds_ : bool or None
        False when some attack's ROC refutes ``TPR <= FPR + 2 eta`` at ``confidence``.
    bound_check_ : skmip.audit.metrics.BoundCheck or None
        The check with the largest margin.
    n_synthetic_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        When ``X`` has string column names.

    Notes
    -----
    The attacks use no shadow synthesizer: they know D (Definition 1's attacker does),
    optionally reference records from the population (``X_reference``), and see one
    release. Each synthesizer of the game is a target once; the ROC is over all
    ``n_models x n_samples`` trials, whose binomial statements treat them as independent
    (they share synthesizers and records: read them as approximate, as for models).

    References
    ----------
    Izzo et al., Definition 1 and Theorem 8 (corrected: TPR <= FPR + 2 eta). Van Breugel
    et al., AISTATS 2023 (DOMIAS). Houssiau et al., "TAPAS", 2022 (threat models).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 2))
    >>> audit = SynthesizerAuditor(CopyingSynthesizer(), attacks=["dcr"], n_models=4,
    ...                            random_state=0).fit(X)
    >>> bool(audit.roc_auc_ > 0.9), audit.bound_ is None
    (True, True)
    """

    def __init__(self, synthesizer=None, *, attacks="auto", n_models: int = 16, n_synthetic: int | None = None,
                 fpr=(0.01, 0.001), delta: float = 1e-5, confidence: float = 0.95, random_state=None,
                 n_jobs: int | None = None, verbose: int = 0):
        self.synthesizer = synthesizer
        self.attacks = attacks
        self.n_models = n_models
        self.n_synthetic = n_synthetic
        self.fpr = fpr
        self.delta = delta
        self.confidence = confidence
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # ------------------------------------------------------------------ helpers
    def _resolve_attacks(self):
        from skmip.release.marginals import DPMarginalSynthesizer, MIPMarginalSynthesizer

        marginal = isinstance(self.synthesizer, (MIPMarginalSynthesizer, DPMarginalSynthesizer))
        if isinstance(self.attacks, str) and self.attacks == "auto":
            names = [a for a in _AUTO if a != "marginal_likelihood" or marginal]
            return [get_synthetic_attack(a) for a in names]
        items = [self.attacks] if isinstance(self.attacks, str) else list(self.attacks)
        if not items:
            raise ValueError(f"{_OWNER}: attacks is empty; pass 'auto' or a list of attacks.")
        attacks = []
        for item in items:
            try:
                attack = get_synthetic_attack(item)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"{_OWNER}: attacks: {exc}") from None
            if isinstance(attack, MarginalLikelihoodAttack) and not marginal:
                raise ValueError(
                    f"{_OWNER}: attack 'marginal_likelihood' reads the noisy tables of a marginal "
                    f"synthesizer (MIPMarginalSynthesizer, DPMarginalSynthesizer); "
                    f"{type(self.synthesizer).__name__} releases none. Use 'density_ratio' or 'closest_record'."
                )
            if attack.name in {a.name for a in attacks}:
                raise ValueError(f"{_OWNER}: attack {attack.name!r} is listed twice.")
            attacks.append(attack)
        return attacks

    def _validate(self):
        if self.synthesizer is None:
            raise ValueError(
                f"{_OWNER}: synthesizer is None. Pass the synthesizer to audit, e.g. "
                "SynthesizerAuditor(MIPMarginalSynthesizer(eta=0.1)).fit(X)."
            )
        for method in ("fit", "sample", "get_params"):
            if not callable(getattr(self.synthesizer, method, None)):
                raise TypeError(
                    f"{_OWNER}: synthesizer must be a scikit-learn style estimator with fit(X) and "
                    f"sample(n_samples, random_state=...); {type(self.synthesizer).__name__} has no {method}."
                )
        check_int(_OWNER, "n_models", self.n_models, 2, None,
                  why="the ROC pools every synthesizer of the game; one synthesizer gives one draw of its noise.")
        if self.n_synthetic is not None:
            check_int(_OWNER, "n_synthetic", self.n_synthetic, 1, None)
        fprs = np.atleast_1d(np.asarray(self.fpr, dtype=np.float64))
        if fprs.ndim != 1 or fprs.size == 0 or np.any(~((fprs > 0) & (fprs < 1))):
            raise ValueError(f"{_OWNER}: fpr must be a rate or rates in (0, 1); got {self.fpr!r}.")
        check_interval(_OWNER, "delta", self.delta, 0, 1, closed="left")
        check_interval(_OWNER, "confidence", self.confidence, 0, 1, closed="neither")
        check_n_jobs(_OWNER, self.n_jobs)
        if not isinstance(self.verbose, numbers.Integral):
            raise TypeError(f"{_OWNER}: verbose must be an integer; got {self.verbose!r}.")
        return self._resolve_attacks(), fprs

    def _log(self, message):
        if self.verbose:
            print(f"[{_OWNER}] {message}", flush=True)

    # ------------------------------------------------------------------ API
    def fit(self, X: ArrayLike, y=None, *, X_reference: ArrayLike | None = None) -> "SynthesizerAuditor":
        """Play the membership game with clones of ``synthesizer`` on the pool ``X`` and attack it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_columns)
            The pool D (numeric or categorical columns, as the synthesizer takes them).
        y : ignored
            Append a label to ``X`` as a column to synthesise it.
        X_reference : array-like of shape (n_reference, n_columns), default=None
            Records from the population, disjoint from the pool, for the density-ratio
            attack's reference density; ``None``: the pool itself.

        Returns
        -------
        self : SynthesizerAuditor

        Raises
        ------
        ValueError
            For an invalid parameter, a pool of fewer than 4 rows, or a reference with
            other columns.
        TypeError
            For a synthesizer without ``fit`` / ``sample``.
        """
        attacks, fprs = self._validate()
        probe = copy.copy(self)
        validate_data(probe, X, skip_check_array=True, reset=True)
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[0] < 4:
            raise ValueError(f"{_OWNER}: X must be a 2-D pool of at least 4 rows; got shape {X.shape}.")
        if X_reference is not None:
            X_reference = np.asarray(X_reference)
            if X_reference.ndim != 2 or X_reference.shape[1] != X.shape[1] or X_reference.shape[0] < 2:
                raise ValueError(
                    f"{_OWNER}: X_reference must have the pool's {X.shape[1]} columns and at least 2 rows; "
                    f"got shape {X_reference.shape}."
                )
        n = X.shape[0]
        n_synthetic = n if self.n_synthetic is None else int(self.n_synthetic)
        n_models = int(self.n_models)
        start = time.perf_counter()
        encoder = RecordEncoder(X)
        self._log(f"preparing {len(attacks)} attack(s) on the {n}-row pool: {', '.join(a.name for a in attacks)}")
        states = [a.prepare(X, X_reference, encoder) for a in attacks]
        rng = resolve_rng(self.random_state)
        members = np.zeros((n_models, n), dtype=bool)
        for j in range(n_models):
            members[j, rng.choice(n, size=n // 2, replace=False)] = True
        seeds = [draw_seed(rng) for _ in range(n_models)]
        jobs = Parallel(n_jobs=self.n_jobs, return_as="generator")(
            delayed(_play_one)(self.synthesizer, X, np.flatnonzero(members[j]), seeds[j], n_synthetic,
                               attacks, states)
            for j in range(n_models)
        )
        outcomes = []
        for j, out in enumerate(jobs, start=1):
            outcomes.append(out)
            elapsed = time.perf_counter() - start
            self._log(f"synthesizer {j}/{n_models} fitted, sampled and attacked; {elapsed:.1f} s elapsed, "
                      f"about {elapsed / j * (n_models - j):.0f} s left")
        names = [a.name for a in attacks]
        scores = {name: np.vstack([o[0][name] for o in outcomes]) for name in names}
        stated = [o[1] for o in outcomes if o[1] is not None]
        fitted = {
            **self._summarise(members, scores, stated, fprs),
            "n_synthetic_": n_synthetic,
            "n_features_in_": probe.n_features_in_,
        }
        if hasattr(probe, "feature_names_in_"):
            fitted["feature_names_in_"] = probe.feature_names_in_
        for name in _FITTED:
            self.__dict__.pop(name, None)
        self.__dict__.update(fitted)
        self._log(f"done in {time.perf_counter() - start:.1f} s; strongest attack {self.attack_}: "
                  f"advantage {self.advantage_:.3f}")
        return self

    def _summarise(self, members, scores, stated, fprs):
        """The fitted attributes that read the game: each attack's metrics, the strongest, the promise."""
        names = list(scores)
        eta = max(b.value for b in stated) if stated else None
        promised = None if not stated else all(b.details.get("promised", True) for b in stated)
        level = 1.0 - (1.0 - self.confidence) / len(names)
        results = {}
        for name in names:
            s = scores[name]
            tpr, interval = _tpr_with_interval(members, s, fprs, level)
            check = None if eta is None else check_mip_bound(members, s, eta, confidence=level)
            results[name] = SyntheticAttackResult(
                attack=name, roc_auc=mi_roc_auc(members, s), fpr=fprs, tpr=tpr, tpr_interval=interval,
                advantage=membership_advantage(members, s),
                empirical_epsilon=empirical_epsilon(members, s, delta=self.delta, confidence=level),
                bound_check=check,
            )
        strongest = max(names, key=lambda a: results[a].advantage)
        checks = [r.bound_check for r in results.values() if r.bound_check is not None]
        worst = max(checks, key=lambda c: c.margin) if checks else None
        return {
            "membership_": members,
            "scores_": scores,
            "attacks_": names,
            "results_": results,
            "attack_": strongest,
            "roc_auc_": results[strongest].roc_auc,
            "tpr_at_fpr_": results[strongest].tpr,
            "advantage_": results[strongest].advantage,
            "empirical_epsilon_": max(r.empirical_epsilon for r in results.values()),
            "bound_": eta,
            "bound_promised_": promised,
            "bound_holds_": None if worst is None else bool(all(c.holds for c in checks)),
            "bound_check_": worst,
        }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        tags.target_tags.required = False
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags
