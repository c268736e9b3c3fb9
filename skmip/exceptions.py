"""Warnings and errors of skmip."""

from __future__ import annotations

__all__ = ["PrivacyWarning", "check_privacy_seed"]


class PrivacyWarning(UserWarning):
    """A setting weakens or voids the privacy guarantee the library would otherwise state.

    Raised, for example, when the noise of a privacy mechanism is drawn from a fixed
    ``random_state``: whoever knows the seed can regenerate the noise and subtract it,
    so the released parameters are no more private than the un-noised ones.
    Fixed seeds are right for tests and reproducible experiments, never for a release.
    """


def check_privacy_seed(owner: str, random_state) -> None:
    """Warn with :class:`PrivacyWarning` when ``random_state`` is not ``None``.

    ``None`` means fresh operating-system entropy (``numpy.random.default_rng()``), the
    only setting under which the noise is unknown to an attacker.
    """
    if random_state is not None:
        import warnings

        warnings.warn(
            f"{owner}: random_state={random_state!r} fixes the privacy noise. Anyone who "
            "knows the seed can regenerate the noise and subtract it, which voids the "
            "guarantee. Use random_state=None (fresh OS entropy) for anything you release.",
            PrivacyWarning,
            stacklevel=3,
        )
