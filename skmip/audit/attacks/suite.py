"""Several attacks on one game: which apply to a model, and the Bonferroni level that covers the best.

``MIAttackScorer(attack="auto")`` trains the shadow models once and scores them with every
strong attack that applies to the audited estimator, then reports the strongest. This module
decides which attacks those are (:func:`resolve_attacks`) and at which confidence each one's
statement must be made so that the statement about the best of them keeps the confidence the
user asked for (:func:`bonferroni_confidence`).

``"auto"`` runs, when they apply (each attack's ``validate`` decides, before any model is fitted):

======================  ==================================================================
attack                  applies to
======================  ==================================================================
``"rmia"``              classifiers with ``predict_proba``; density estimators
``"rmia_offline"``      classifiers with ``predict_proba``
``"lira"``              classifiers with ``predict_proba``, density estimators, regressors
                        (on minus the squared residual)
``"lira_offline"``      the same
``"loss"``              every model: the floor (needs no reference model)
======================  ==================================================================

GLiR (:func:`skmip.audit.attacks.glir_scores`) is not among them: it tests whether a record's
gradient is in the *averaged gradient of one training step*, which the membership game does
not observe -- the game releases final models. It applies to an audit of the training
transcript of noisy SGD (:func:`skmip.nn.glir_audit`).
"""

from __future__ import annotations

from skmip.audit.attacks._base import MembershipAttack

__all__ = ["AUTO_ATTACKS", "OFFLINE_ATTACKS", "resolve_attacks", "bonferroni_confidence"]

#: The candidates of ``attack="auto"``, strongest first on typical models (ties go to the first).
AUTO_ATTACKS = ("rmia", "rmia_offline", "lira", "lira_offline", "loss")
#: ``"auto"`` when no reference model trained on the audited rows (:func:`skmip.audit.audit_fitted`):
#: the attacks that need OUT references only.
OFFLINE_ATTACKS = ("rmia_offline", "lira_offline", "loss")


def _name(attack, alias=None):
    if alias is not None:
        return alias
    return repr(attack) if isinstance(attack, MembershipAttack) else type(attack).__name__


def resolve_attacks(attack, estimator, *, n_models: int, member_rate: float, owner: str,
                    candidates=AUTO_ATTACKS) -> dict:
    """The attacks to run: ``{name: attack object}``, in order.

    Parameters
    ----------
    attack : "auto", str, attack object, or list of those
        ``"auto"``: every attack of :data:`AUTO_ATTACKS` whose ``validate`` accepts the
        estimator and the game size. A string or object: that attack alone. A list or tuple:
        those attacks (each must apply).
    estimator : estimator instance or None
        The audited estimator (None: validated later, when it is known).
    n_models, member_rate :
        Of the game; some attacks need enough reference models.
    owner : str
        First word of the error messages.
    candidates : tuple of str, default=AUTO_ATTACKS
        The aliases ``"auto"`` tries, in order.

    Returns
    -------
    dict
        Attack name (the alias, or the object's repr) -> attack object.

    Raises
    ------
    ValueError
        For an empty list, a duplicate, an unknown alias, or an attack that cannot run here;
        or ``"auto"`` with no applicable attack.
    TypeError
        For an attack the estimator cannot feed (e.g. LiRA without ``predict_proba``).
    """
    from skmip.audit.attacks import get_attack

    def validated(a):
        validate = getattr(a, "validate", None)
        if validate is not None:
            validate(estimator, n_models=n_models, member_rate=member_rate)
        return a

    if isinstance(attack, str) and attack == "auto":
        out, refused = {}, []
        for alias in candidates:
            try:
                out[alias] = validated(get_attack(alias))
            except (TypeError, ValueError) as exc:
                refused.append(f"{alias}: {exc}")
        if not out:
            raise ValueError(f"{owner}: attack='auto' found no attack that applies: {' | '.join(refused)}")
        return out
    items = list(attack) if isinstance(attack, (list, tuple)) else [attack]
    if not items:
        raise ValueError(f"{owner}: attack is an empty list; pass 'auto', an alias or a list of aliases.")
    out = {}
    for item in items:
        if isinstance(item, str) and item == "auto":
            raise ValueError(f"{owner}: 'auto' cannot be mixed with other attacks in a list; pass attack='auto'.")
        name = _name(item, item if isinstance(item, str) else None)
        if name in out:
            raise ValueError(f"{owner}: attack {name!r} is listed twice.")
        out[name] = validated(get_attack(item))
    return out


def bonferroni_confidence(confidence: float, n_attacks: int) -> float:
    """The confidence of each attack's statement so that the best one's holds at ``confidence``.

    Each of ``A`` attacks makes its confidence statement (an empirical-epsilon lower bound, a
    test of the stated bound) at level ``1 - (1 - confidence) / A``. Each statement fails
    with probability at most ``(1 - confidence) / A``; by the union bound all ``A`` hold
    together with probability at least ``confidence``, and then so does any statement about
    the best of them, however the best was chosen (see ``docs/auditing.md``).

    Examples
    --------
    >>> bonferroni_confidence(0.95, 5)
    0.99
    >>> bonferroni_confidence(0.95, 1)
    0.95
    """
    return 1.0 - (1.0 - float(confidence)) / int(n_attacks)
