"""Randomness plumbing shared by skmip's estimators.

One ``random_state`` per estimator, resolved once in ``fit``; child seeds drawn up front;
never the global numpy RNG.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["resolve_rng", "draw_seed", "fix_inner_random_state"]


def resolve_rng(random_state) -> np.random.Generator:
    """A :class:`numpy.random.Generator` for ``random_state``.

    ``None`` gives fresh operating-system entropy (what a private release needs); an int or
    a ``SeedSequence`` a reproducible stream; a ``Generator`` is used as is; a legacy
    ``RandomState`` (scikit-learn's convention) seeds a new Generator from one draw.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int32).max))
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise TypeError(
        f"random_state must be None, an int, a numpy Generator or RandomState; got {random_state!r}."
    )


def draw_seed(rng: np.random.Generator) -> int:
    """An integer seed for a child computation (fits in int32, as scikit-learn requires)."""
    return int(rng.integers(np.iinfo(np.int32).max))


def fix_inner_random_state(estimator, seed: int):
    """Make ``estimator`` deterministic given its data, in place.

    Every ``random_state`` parameter (nested ones included, e.g. in a Pipeline) that is not
    already an integer is set to ``seed``. An integer the user chose is kept: it already
    makes the learner deterministic. Returns the estimator.
    """
    params = estimator.get_params(deep=True)
    updates = {
        key: seed
        for key, value in params.items()
        if (key == "random_state" or key.endswith("__random_state"))
        and not isinstance(value, numbers.Integral)
    }
    if updates:
        estimator.set_params(**updates)
    return estimator
