"""Audit a model that is already trained: the target is read, never refit.

:func:`audit_fitted` takes a fitted estimator, a pool whose ``member`` mask says which rows
trained it, and population data from the same distribution. It trains ``n_reference_models``
clones on random halves of the population data, runs the offline attacks (RMIA offline, LiRA
offline, LOSS) with those clones as references, and reports what
:class:`~skmip.audit.scoring.MIAttackScorer` reports, computed by the same code
(:mod:`skmip.audit.verdict`).
"""

from __future__ import annotations

import copy

import numpy as np
from sklearn.base import is_classifier
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted, has_fit_parameter

from skmip.promise import stated_promise
from skmip.utils.rows import n_rows
from skmip.utils.validation import check_int, check_interval, check_option
from skmip.audit.attacks.rmia import RMIA
from skmip.audit.attacks.suite import AUTO_ATTACKS, OFFLINE_ATTACKS, resolve_attacks
from skmip.audit.game import play_fitted_game
from skmip.audit.verdict import attack_results, stated_bound, verdict_attributes

__all__ = ["FittedAudit", "audit_fitted"]

_OWNER = "audit_fitted"
_METRICS = ("auc", "tpr_at_fpr", "advantage", "positive_accuracy", "empirical_epsilon")
_LABELS = ("auto", "target", "true")


class FittedAudit:
    """The result of :func:`audit_fitted`: the figures of :class:`MIAttackScorer`, same names.

    Attributes
    ----------
    scores_, membership_ : ndarray of shape (1, n_samples)
        The strongest attack's score of every pool row against the target, and ``member``.
    attack_, best_attack_, attack_results_, attack_confidence_, training_issues_ :
        As in :class:`~skmip.audit.scoring.MIAttackScorer`.
    roc_auc_, tpr_at_fpr_, advantage_, positive_accuracy_, empirical_epsilon_ : float
        As in :class:`~skmip.audit.scoring.MIAttackScorer`, over the pool's rows.
    bound_, bound_holds_, bound_check_ :
        The model's stated promise (:func:`skmip.promise.stated_promise`) and its test.
    n_trainings_ : int
        Models trained by the audit: ``n_reference_models`` (the target is never refit).
    reference_labels_ : str
        What the references were trained on: ``"target"`` (the target's probabilities) or
        ``"true"`` (``y_reference``, or the pool's ``y``).
    attack, fpr, delta, confidence : the options the audit ran with.
    """

    def __init__(self, *, attack, fpr, delta, confidence):
        self.attack = attack
        self.fpr = fpr
        self.delta = delta
        self.confidence = confidence

    def __repr__(self):
        if not hasattr(self, "roc_auc_"):
            return "FittedAudit()"
        return (f"FittedAudit(best_attack_={self.best_attack_!r}, roc_auc_={self.roc_auc_:.4f}, "
                f"tpr_at_fpr_={self.tpr_at_fpr_:.4f}, empirical_epsilon_={self.empirical_epsilon_:.4g})")


def _check_member(member, n):
    m = np.asarray(member)
    if m.shape != (n,):
        raise ValueError(f"{_OWNER}: member must be a boolean mask of the pool's {n} rows; got shape {m.shape}.")
    if m.dtype != bool:
        if not np.all((m == 0) | (m == 1)):
            raise ValueError(f"{_OWNER}: member must be boolean or 0/1; got values {np.unique(m)[:5]!r}.")
        m = m.astype(bool)
    if m.all() or not m.any():
        raise ValueError(
            f"{_OWNER}: member has {int(m.sum())} members among {n} rows; the audit compares members "
            "with non-members, so the pool needs both. Add rows that did not train the model."
        )
    return m


def _check_model(model):
    try:
        check_is_fitted(model)
    except NotFittedError as exc:
        raise ValueError(
            f"{_OWNER}: the model {type(model).__name__} is not fitted ({exc}). audit_fitted audits a "
            "trained model; to audit a training algorithm use MIAttackScorer(estimator).fit(X, y)."
        ) from None
    except TypeError as exc:
        raise TypeError(f"{_OWNER}: model must be a fitted scikit-learn compatible estimator; {exc}") from None


def _can_distill(model):
    return is_classifier(model) and hasattr(model, "predict_proba") and has_fit_parameter(model, "sample_weight")


def _resolve_labels(reference_labels, model, references_see_pool):
    check_option(_OWNER, "reference_labels", reference_labels, _LABELS)
    if reference_labels == "auto":
        return "target" if _can_distill(model) and not references_see_pool else "true"
    if reference_labels == "target" and references_see_pool:
        raise ValueError(f"{_OWNER}: reference_labels='target' labels the reference rows by the target; with "
                         "references_see_pool=True the references train on the pool, whose members the "
                         "target memorised. Use reference_labels='true' there.")
    if reference_labels == "target" and not _can_distill(model):
        raise ValueError(f"{_OWNER}: reference_labels='target' needs a classifier with predict_proba whose fit "
                         f"takes sample_weight (the soft labels); {type(model).__name__} is not one. Use "
                         "reference_labels='true'.")
    return reference_labels


def _fixed_offline_a(attack):
    """RMIA offline with ``offline_a=0`` in place of ``"auto"``, for distilled references.

    ``"auto"`` tunes ``a`` by attacking a reference with the others; a distilled reference
    trained on the target's labels, not on the true labels the target trained on, so its
    members are no model of the target's.
    """
    if isinstance(attack, RMIA) and not attack.online and isinstance(attack.offline_a, str):
        attack = copy.copy(attack)
        attack.offline_a = 0.0
    return attack


def audit_fitted(model, X, y, member, *, X_reference, y_reference, n_reference_models=4,
                 attack="auto", fpr=0.01, confidence=0.95, random_state=None,
                 metric="auc", delta=1e-5, references_see_pool=False,
                 reference_labels="auto") -> FittedAudit:
    """Audit a fitted model by membership inference, without refitting it.

    Parameters
    ----------
    model : fitted estimator
        Any fitted scikit-learn estimator or pipeline, skorch net, or fitted skmip defence.
        Only its outputs (``predict_proba``, ``predict`` or ``score_samples``) and its stated
        promise are read; its ``fit`` is never called. Clones (``sklearn.base.clone``: same
        parameters, unfitted) are the reference models.
    X : array-like of shape (n_samples, n_features)
        The audit pool.
    y : array-like of shape (n_samples,)
        Its targets (None for a density estimator).
    member : array-like of bool, shape (n_samples,)
        ``member[i]`` is True when row i trained the model.
    X_reference, y_reference : array-like
        Population data from the pool's distribution, none of it used to train the model,
        of the same type as ``X, y``.
    n_reference_models : int, default=4
        Reference models, each trained on an independent uniformly random half of the
        reference data. The audit costs this many trainings.
    attack : "auto", str, attack object, or list, default="auto"
        ``"auto"``: RMIA offline, LiRA offline and LOSS (those that apply), the strongest by
        ``metric`` reported. Online attacks need reference models that trained on the pool's
        rows, which this audit does not have.
    fpr : float, default=0.01
        False-positive rate of ``tpr_at_fpr_``.
    confidence : float, default=0.95
        Of ``empirical_epsilon_`` and of the promise check (Bonferroni over the attacks).
    random_state : None, int or numpy Generator, default=None
        Seeds the reference halves and models.
    metric : str, default="auc"
        Ranks the attacks, as in :class:`MIAttackScorer`.
    delta : float, default=1e-5
        The delta of ``empirical_epsilon_``.
    references_see_pool : bool, default=False
        Train each reference on a uniformly random half of the *pool* instead, drawn
        independently of ``member`` (the auditor knows which pool rows each reference saw);
        the reference rows then serve only as RMIA's population. Every pool row is IN for
        about half of the references, as in the membership game, so the online attacks apply
        (``"auto"`` runs every attack of :class:`MIAttackScorer`), and the references share
        training rows with the target as the game's models do. The references train on the
        true labels (``reference_labels="auto"`` gives ``"true"`` here).
    reference_labels : {"auto", "target", "true"}, default="auto"
        What the references on reference halves learn. ``"target"`` (distilled references):
        each reference row once per class, weighted by the *target's* probability of that
        class (:func:`skmip.audit.game.distilled_fit_data`), so a reference copies how the
        target generalises around a pool row without training on it; needs a classifier with
        ``predict_proba`` whose ``fit`` takes ``sample_weight``. ``"true"``: ``y_reference``.
        ``"auto"``: ``"target"`` where it applies and ``references_see_pool`` is False, else
        ``"true"``. With distilled references RMIA offline uses ``offline_a=0``. On adult
        (random forest, 4,000-row pool, 4 references, seeds 0-2) the TPR at 1% FPR is
        0.93x-1.14x that of the 16-model game with ``"target"``, 0.42x-0.56x with ``"true"``
        (docs/auditing.md, "Auditing a model that is already trained").

    Returns
    -------
    FittedAudit

    Raises
    ------
    ValueError
        For an unfitted model, a mask that does not match the pool or lacks members or
        non-members, bad options, or a reference half that lacks a class.
    TypeError
        For a model none of whose outputs the attacks can read.

    Notes
    -----
    Each pool row is one trial: the target's membership of it against the attack's score.
    The reference models trained on none of the pool's rows, so they are OUT references for
    every row: RMIA offline (Zarifzadeh et al., Sec. 3.2) and LiRA offline (Carlini et al.,
    Sec. IV-C) score the target's output against them; LOSS needs none. RMIA's population
    rows are the reference rows.

    Distilled references read only the target's outputs on the reference rows, which did
    not train it: no attack uses ``member``, which serves only to count the trials.
    Training shadow models on an auxiliary set labelled by the target is the knowledge
    distillation of Liu et al. ("Membership inference attacks by exploiting loss
    trajectory", CCS 2022); here the distilled models are RMIA's OUT references.

    The confidence statements (``empirical_epsilon_``, ``bound_holds_``) are those of
    :class:`MIAttackScorer`, each attack at ``1 - (1 - confidence) / A``. They are exact
    statements about the mechanism only when ``member`` was drawn at random independently
    of the data: the check of an eta-MIP promise is Definition 1 of Izzo et al. when the
    model trained on a uniformly random half of the pool (``MIPNoiseWrapper`` fitted on the
    pool with ``train_size=0.5``: ``member`` is then its ``D_train``); a mask chosen by
    hand audits that choice, not the mechanism.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(400) < 0.5
    >>> model = DecisionTreeClassifier(random_state=0).fit(X[:400][member], y[:400][member])
    >>> audit = audit_fitted(model, X[:400], y[:400], member, X_reference=X[400:],
    ...                      y_reference=y[400:], n_reference_models=2, random_state=0)
    >>> sorted(audit.attack_results_), audit.n_trainings_
    (['lira_offline', 'loss', 'rmia_offline'], 2)
    >>> bool(audit.roc_auc_ > 0.5)
    True
    """
    _check_model(model)
    n = n_rows(X)
    m = _check_member(member, n)
    if y is not None and n_rows(y) != n:
        raise ValueError(f"{_OWNER}: X has {n} rows but y has {n_rows(y)}.")
    if (y is None) != (y_reference is None) or (y_reference is not None and n_rows(y_reference) != n_rows(X_reference)):
        raise ValueError(f"{_OWNER}: y_reference must give one target per row of X_reference (None iff y is None).")
    R = check_int(_OWNER, "n_reference_models", n_reference_models, 1, None,
                  why="the offline attacks compare the target with reference models.")
    check_int(_OWNER, "number of reference rows", n_rows(X_reference), 2, None,
              why="each reference model trains on half of them.")
    check_interval(_OWNER, "fpr", fpr, 0, 1, closed="neither")
    check_interval(_OWNER, "confidence", confidence, 0, 1, closed="neither")
    check_interval(_OWNER, "delta", delta, 0, 1, closed="left")
    check_option(_OWNER, "metric", metric, _METRICS)
    labels = _resolve_labels(reference_labels, model, references_see_pool)
    # Without the pool every reference is OUT on every pool row: a member rate of 0 for the
    # attacks' checks, and the offline attacks only.
    attacks = resolve_attacks(attack, model, n_models=1 + R, member_rate=0.5 if references_see_pool else 0.0,
                              owner=_OWNER, candidates=AUTO_ATTACKS if references_see_pool else OFFLINE_ATTACKS)
    if labels == "target":
        attacks = {name: _fixed_offline_a(a) for name, a in attacks.items()}
    game = play_fitted_game(model, X, y, m, X_reference, y_reference, n_reference_models=R,
                            random_state=random_state, inspect=stated_promise,
                            references_see_pool=bool(references_see_pool), reference_labels=labels)
    membership = m[None, :]
    scores = {name: np.asarray(a.score(game), dtype=np.float64)[:1, :n] for name, a in attacks.items()}
    # The share of members is 1/2 exactly when the pool's size is even and half trained it.
    rate = 0.5 if 2 * int(m.sum()) == n else float(m.mean())
    stated = stated_bound(game.inspected[:1], membership, member_rate=rate, sampling="given",
                          owner=_OWNER, stacklevel=3)
    results, best, level = attack_results(membership, scores, metric=metric, fpr=fpr, delta=delta,
                                          confidence=confidence, stated=stated)
    audit = FittedAudit(attack=attack, fpr=fpr, delta=delta, confidence=confidence)
    audit.__dict__.update(verdict_attributes(scores, membership, attacks, results, best, level, stated, game.issues))
    audit.n_trainings_ = R
    audit.reference_labels_ = labels
    return audit

