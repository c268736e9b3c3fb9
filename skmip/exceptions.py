"""Warnings and errors of skmip."""

from __future__ import annotations

__all__ = ["PrivacyWarning", "check_privacy_seed", "warn_not_cryptographic"]


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


#: Owners already warned by :func:`warn_not_cryptographic` in this process.
_WARNED_NOT_CRYPTOGRAPHIC: set = set()


def warn_not_cryptographic(owner: str) -> None:
    """Warn once per process and owner that the noise generator is not cryptographic.

    The default (``secure_mode=False``, ``random_state=None``) draws a release's noise with
    numpy's PCG64 seeded with 128 bits of fresh OS entropy: the seed cannot be enumerated,
    but PCG64 is not a cryptographically secure generator and textbook Gaussian samplers on
    floating point leak through their least significant bits (Mironov 2012; Holohan &
    Braghin 2021). ``secure_mode=True`` draws from ``os.urandom`` with a hardened sampler.
    """
    if owner in _WARNED_NOT_CRYPTOGRAPHIC:
        return
    _WARNED_NOT_CRYPTOGRAPHIC.add(owner)
    import warnings

    warnings.warn(
        f"{owner}: the privacy noise and batches come from numpy's PCG64 generator seeded with "
        "128 bits of fresh OS entropy. The seed cannot be guessed, but PCG64 is not a "
        "cryptographically secure generator and a floating-point Gaussian sampler can leak "
        "through its last bits. For a release facing a strong attacker pass secure_mode=True "
        "(draws from os.urandom, hardened against floating-point attacks). Shown once per process.",
        PrivacyWarning,
        stacklevel=4,
    )
