"""What every game-based attack shares: a name, a readable repr, input checks."""

from __future__ import annotations

import inspect

import numpy as np

__all__ = ["MembershipAttack"]


class MembershipAttack:
    """Base of the attacks that score a :class:`~skmip.audit.game.MembershipGame`.

    An attack is a small strategy object (MAPIE-style): ``__init__`` stores its options,
    :meth:`score` maps a game to a ``(n_models, n_samples)`` score matrix -- entry ``[k, i]``
    scores row ``i`` against model ``k`` as the target, using only the *other* models as
    references, larger meaning "member" -- and :meth:`validate` rejects, before any model is
    fitted, an estimator or game size the attack cannot work with.
    """

    #: String alias under which the attack is registered (see :func:`skmip.audit.attacks.get_attack`).
    name: str = ""

    def validate(self, estimator, *, n_models: int, member_rate: float) -> None:
        """Raise a clear error if the attack cannot run on this estimator / game size."""

    def score(self, game) -> np.ndarray:  # pragma: no cover - abstract
        """Score matrix of shape ``(n_models, n_samples)`` for ``game``."""
        raise NotImplementedError

    def _params(self):
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self"}

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other):
        return type(self) is type(other) and self._params() == other._params()

    def __hash__(self):
        return hash((type(self).__name__, repr(self)))


def check_matrix(owner, name, value, shape=None):
    """A finite float64 matrix (n_models, n_samples)."""
    a = np.asarray(value, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{owner}: {name} must be a (n_models, n_samples) matrix; got shape {a.shape}.")
    if shape is not None and a.shape != shape:
        raise ValueError(f"{owner}: {name} has shape {a.shape}; expected {shape}.")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{owner}: {name} contains NaN or inf.")
    return a


def check_membership(owner, membership):
    m = np.asarray(membership)
    if m.ndim != 2:
        raise ValueError(f"{owner}: membership must be a (n_models, n_samples) matrix; got shape {m.shape}.")
    if m.dtype != bool:
        if not np.all((m == 0) | (m == 1)):
            raise ValueError(f"{owner}: membership must be boolean or 0/1.")
        m = m.astype(bool)
    if m.shape[0] < 2:
        raise ValueError(f"{owner}: need at least 2 models (a target and a reference); got {m.shape[0]}.")
    return m
