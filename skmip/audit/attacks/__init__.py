"""Membership-inference attacks, one per module, and the registry of their string aliases.

Game-based attacks (:class:`LossAttack`, :class:`LiRA`, :class:`RMIA`) score a
:class:`skmip.audit.game.MembershipGame`; each is also available as a plain function of arrays
(:func:`loss_scores`, :func:`lira_scores`, :func:`rmia_scores`). :func:`glir_scores` works on
gradients, not on a game, and :func:`exact_mip_advantage` (:mod:`skmip.audit.attacks.bayes`) is
the exact Bayes-optimal attacker of small enumerable problems (Izzo et al., Proposition 2).
Resolve a string alias or an attack object with :func:`get_attack`;
add your own with :func:`register_attack`.

==================  ==========================================  =============================
alias               attack                                      paper
==================  ==========================================  =============================
``"loss"``          :class:`LossAttack` (alias ``"yeom"``)       Yeom et al.; Nasr et al. D1
``"lira"``          ``LiRA()`` online (``"lira_online"``)        Carlini et al. 2022
``"lira_offline"``  ``LiRA(online=False)``                       Carlini et al. 2022
``"lira_global"``   ``LiRA(global_variance=True)``               Carlini et al. 2022
``"lira_local"``    ``LiRA(global_variance=False)``              Carlini et al. 2022
``"rmia"``          ``RMIA()`` online                            Zarifzadeh et al. 2024
``"rmia_offline"``  ``RMIA(online=False)``                       Zarifzadeh et al. 2024
==================  ==========================================  =============================
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from skmip.audit.attacks._base import MembershipAttack
from skmip.audit.attacks.bayes import ExactAuditResult, exact_mip_advantage
from skmip.audit.attacks.glir import glir_scores, logistic_per_sample_gradients, simulate_glir_gaussian
from skmip.audit.attacks.lira import LiRA, lira_min_models, lira_scores
from skmip.audit.attacks.loss import LossAttack, loss_scores
from skmip.audit.attacks.rmia import RMIA, rmia_scores

__all__ = [
    "MembershipAttack",
    "exact_mip_advantage",
    "ExactAuditResult",
    "LossAttack",
    "LiRA",
    "RMIA",
    "loss_scores",
    "lira_scores",
    "lira_min_models",
    "rmia_scores",
    "glir_scores",
    "simulate_glir_gaussian",
    "logistic_per_sample_gradients",
    "get_attack",
    "register_attack",
    "available_attacks",
]

_REGISTRY: dict[str, Callable[[], object]] = {
    "loss": LossAttack,
    "yeom": LossAttack,
    "lira": LiRA,
    "lira_online": LiRA,
    "lira_offline": partial(LiRA, online=False),
    "lira_global": partial(LiRA, global_variance=True),
    "lira_local": partial(LiRA, global_variance=False),
    "rmia": RMIA,
    "rmia_offline": partial(RMIA, online=False),
}


def available_attacks() -> list[str]:
    """Sorted string aliases accepted by :func:`get_attack`.

    Examples
    --------
    >>> "lira" in available_attacks()
    True
    """
    return sorted(_REGISTRY)


def register_attack(name: str, factory: Callable[[], object]) -> None:
    """Make ``factory()`` available as ``attack=name`` everywhere skmip takes an attack.

    Parameters
    ----------
    name : str
        The alias (overrides an existing one of the same name).
    factory : callable
        Returns an object with ``score(game) -> (n_models, n_samples)`` scores (larger =
        member) and, optionally, ``validate(estimator, *, n_models, member_rate)``.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_attack: name must be a non-empty string; got {name!r}.")
    if not callable(factory):
        raise TypeError(f"register_attack: factory must be callable; got {factory!r}.")
    _REGISTRY[name] = factory


def get_attack(attack) -> object:
    """Resolve ``attack`` -- a registered alias or an attack object -- to an attack object.

    Parameters
    ----------
    attack : str or object with a ``score(game)`` method
        See the table in :mod:`skmip.audit.attacks` for the aliases.

    Returns
    -------
    object
        An attack with ``score(game)`` (a fresh instance for an alias).

    Raises
    ------
    ValueError
        For an unknown alias, naming the known ones.
    TypeError
        For an object without a ``score`` method.

    Examples
    --------
    >>> get_attack("lira_offline")
    LiRA(online=False, global_variance='auto')
    """
    if isinstance(attack, str):
        if attack not in _REGISTRY:
            raise ValueError(
                f"get_attack: unknown attack {attack!r}; known: {', '.join(available_attacks())}. "
                "Pass an attack object (e.g. LiRA(global_variance=True)) or register one with "
                "skmip.audit.attacks.register_attack."
            )
        return _REGISTRY[attack]()
    if callable(getattr(attack, "score", None)):
        return attack
    raise TypeError(
        f"get_attack: attack must be a string alias or an object with a score(game) method; got {attack!r}."
    )
