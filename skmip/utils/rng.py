"""Randomness plumbing shared by skmip's estimators.

One ``random_state`` per estimator, resolved once in ``fit``; child seeds drawn up front;
never the global numpy RNG.

Two kinds of randomness, kept apart:

* **Release randomness** (which rows form D_train, the privacy noise, DP-SGD's batches,
  a synthesizer's noise and samples): drawn from generators that carry the full entropy of
  their root ``SeedSequence`` (128 bits of OS entropy when ``random_state=None``). Child
  streams come from :func:`spawn_generators` (``SeedSequence.spawn``), never through an
  integer seed: a 31-bit seed can be enumerated (2^31 candidates, tens of core-hours) and
  the noise subtracted.
* **Learner seeds** (:func:`draw_seed`, :func:`fix_inner_random_state`): integers that make
  a learner deterministic given its data, as scikit-learn's ``random_state`` needs. They
  never seed a release's noise.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["resolve_rng", "spawn_generators", "draw_seed", "fix_inner_random_state"]


def resolve_rng(random_state) -> np.random.Generator:
    """A :class:`numpy.random.Generator` for ``random_state``.

    ``None`` gives fresh operating-system entropy (what a private release needs); an int or
    a ``SeedSequence`` a reproducible stream; a ``Generator`` is used as is; a legacy
    ``RandomState`` (scikit-learn's convention) seeds a new Generator from one draw.
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        # 128 bits from the user's (already seeded, so reproducible) RandomState.
        return np.random.default_rng(random_state.randint(0, 2**32, size=4, dtype=np.uint64).tolist())
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    raise TypeError(
        f"random_state must be None, an int, a numpy Generator or RandomState; got {random_state!r}."
    )


def spawn_generators(rng: np.random.Generator, n: int) -> list[np.random.Generator]:
    """``n`` independent child generators of ``rng`` with its full entropy (``SeedSequence.spawn``).

    The children's streams depend on ``rng``'s seed sequence (all of its entropy) and on a
    spawn counter, not on a draw from ``rng``: for ``random_state=None`` each child carries
    the 128 bits of OS entropy of the root. Use them for every draw that reaches a release.

    Examples
    --------
    >>> a, b = spawn_generators(resolve_rng(0), 2)
    >>> c, _ = spawn_generators(resolve_rng(0), 2)
    >>> bool(a.random() == c.random()), a.bit_generator.seed_seq.spawn_key
    (True, (0,))
    """
    return list(rng.spawn(int(n)))


def draw_seed(rng: np.random.Generator) -> int:
    """An integer seed for a learner (fits in int32, as scikit-learn requires).

    Only for making a learner deterministic given its data; never for the randomness of a
    release (use :func:`spawn_generators`).
    """
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
