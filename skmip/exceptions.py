"""Warnings and errors of skmip."""

from __future__ import annotations

__all__ = [
    "PrivacyWarning",
    "AuditWarning",
    "DegenerateReleaseWarning",
    "TrainingFailedError",
    "MissingClassError",
    "check_privacy_seed",
    "warn_not_cryptographic",
    "warn_no_promise_on_given_subset",
]


class PrivacyWarning(UserWarning):
    """A setting weakens or voids the privacy guarantee the library would otherwise state.

    Raised, for example, when the noise of a privacy mechanism is drawn from a fixed
    ``random_state``: whoever knows the seed can regenerate the noise and subtract it,
    so the released parameters are no more private than the un-noised ones.
    Fixed seeds are right for tests and reproducible experiments, never for a release.
    """


class AuditWarning(UserWarning):
    """An audit ran, but something about it weakens what its figures mean.

    Raised, for example, when most models of a membership game stopped before their
    optimiser converged, or when some of them predict the same output for every row: an
    attack then finds little, and a low measured leakage says less about the training
    algorithm than it seems. The scorer keeps the messages in ``training_issues_`` and the
    ``skmip`` command repeats them under its table.
    """


class DegenerateReleaseWarning(UserWarning):
    """A defence released a model that predicts one output for every row of D.

    The privacy promise still holds (a model that says the same thing about everyone reveals
    nothing about anyone), but the release is useless: a classifier that predicts one class,
    a regressor that predicts one value. It happens when the noise swamps what the learner
    found (a small ``eta`` on little data) or when the learner found almost nothing (features
    of tiny magnitude against the regularisation). The check reads only the release and D,
    so the warning is a post-processing of the release and reveals nothing more than it
    (docs/mip_noise.md, "A release that did not learn"). Not a :class:`PrivacyWarning`: no
    setting weakened the promise.
    """


class TrainingFailedError(ValueError):
    """A model did not train, so neither an audit of it nor a promise about it would mean anything.

    Raised by the audit before any attack scores a membership game when a model has
    non-finite parameters or outputs, or when most models predict the same output for every
    row (an audit would then report AUC 0.5 -- "no leakage" -- about models that learned
    nothing); and by the defences when the learner fitted on all of D, before ``D_train`` is
    drawn, gives non-finite parameters or outputs or the same output for every row of D, or
    when the released model's parameters or outputs are not finite.

    Attributes
    ----------
    issues : list of str
        What was found, one sentence each.
    """

    def __init__(self, message, *, issues=()):
        super().__init__(message)
        self.issues = list(issues)


class MissingClassError(ValueError):
    """A random subset drawn to calibrate a classifier's noise lacks a class of ``y``.

    A classifier fitted without some class has a different parameter layout (scikit-learn
    fits only the classes it sees), so the spread or the swap distances over subsets cannot be
    measured. The calibration scores such subsets 0 or redraws them
    (:mod:`skmip.calibration.class_cover`); raised only when a subset that holds every class
    is too rare to draw.

    Attributes
    ----------
    missing : list
        The absent class labels.
    subset_size : int
        Rows in the subset.
    n_samples : int
        Rows of the data the subset was drawn from.
    """

    def __init__(self, message, *, missing, subset_size, n_samples):
        super().__init__(message)
        self.missing = list(missing)
        self.subset_size = int(subset_size)
        self.n_samples = int(n_samples)


#: Part of :func:`check_privacy_seed`'s message (for reports that state the fixed seed once,
#: e.g. the ``skmip`` command's audit, and list every other warning of a fit).
FIXED_SEED_MESSAGE = "fixes the privacy noise"


def check_privacy_seed(owner: str, random_state) -> None:
    """Warn with :class:`PrivacyWarning` when ``random_state`` is not ``None``.

    ``None`` means fresh operating-system entropy (``numpy.random.default_rng()``), the
    only setting under which the noise is unknown to an attacker.
    """
    if random_state is not None:
        import warnings

        warnings.warn(
            f"{owner}: random_state={random_state!r} {FIXED_SEED_MESSAGE}. Anyone who "
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
