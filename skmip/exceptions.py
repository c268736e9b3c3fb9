"""Warnings and errors of skmip."""

from __future__ import annotations

__all__ = ["PrivacyWarning", "check_privacy_seed", "warn_no_promise_on_given_subset"]


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


#: The start of :func:`warn_no_promise_on_given_subset`'s message (for filters that keep
#: one warning per fit when an estimator fits another that would warn again).
NO_PROMISE_MESSAGE = "train_size=1.0 prints no Definition-1 promise"


def warn_no_promise_on_given_subset(owner: str, derived: str) -> None:
    """Warn that ``train_size=1.0`` promises nothing, and say why (one wording for all).

    With ``train_size=1.0`` the data passed to ``fit`` is ``D_train`` itself and the whole
    dataset D it was drawn from is unknown. Definition 1 (Izzo et al.) covers only what is
    fixed given D; here ``derived`` (the noise scale, shape, domains, structure ...) is
    computed from ``D_train`` and released with, or through, the model, so it is inside the
    attacker's signal and no theorem bounds what it reveals. The estimator then sets
    ``mip_bound_ = None``.

    Parameters
    ----------
    owner : str
        The class name, first word of the message.
    derived : str
        What the estimator computes from the data in this mode, in words.
    """
    import warnings

    warnings.warn(
        f"{owner}: {NO_PROMISE_MESSAGE} (mip_bound_ = None). In this mode the data passed to fit "
        f"is D_train itself, and {derived} are computed from it: they are functions of D_train, "
        "not of a fixed dataset D, so they can reveal which records D_train holds and no "
        "theorem bounds the attacker's accuracy. The noise is still calibrated to eta on halves "
        "of the data (target_eta_), which an audit can test, but it is not a guarantee. To "
        "release with a promise, pass the whole dataset D and train_size < 1 (e.g. 0.5): "
        "D_train is then drawn inside fit and everything else is computed from D.",
        PrivacyWarning,
        stacklevel=3,
    )
