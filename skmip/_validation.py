"""A small parameter validator of our own (scikit-learn's is private API).

Every message names the owner, the parameter, what is allowed, the value received and,
where there is one, the fix.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["check_interval", "check_option", "check_int", "check_eta", "check_moment", "ETA_WHY"]


def _describe(low, high, closed):
    left = "[" if closed in ("both", "left") else "("
    right = "]" if closed in ("both", "right") else ")"
    lo = "-inf" if low is None else repr(low)
    hi = "inf" if high is None else repr(high)
    return f"{left}{lo}, {hi}{right}"


def check_interval(owner, name, value, low=None, high=None, *, closed="both", why=""):
    """Return ``float(value)`` if it is a real number within the interval, else raise.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If it is NaN or outside the interval; the message says ``why`` the range matters.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{owner}: {name} must be a real number in {_describe(low, high, closed)}; "
            f"got {value!r} of type {type(value).__name__}."
        )
    v = float(value)
    ok = not np.isnan(v)
    if ok and low is not None:
        ok = v >= low if closed in ("both", "left") else v > low
    if ok and high is not None:
        ok = v <= high if closed in ("both", "right") else v < high
    if not ok:
        msg = f"{owner}: {name} must be in {_describe(low, high, closed)}; got {value!r}."
        if why:
            msg += " " + why
        raise ValueError(msg)
    return v


def check_int(owner, name, value, low=None, high=None, *, why=""):
    """Return ``int(value)`` for an integral value within ``[low, high]``, else raise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{owner}: {name} must be an integer in {_describe(low, high, 'both')}; "
            f"got {value!r} of type {type(value).__name__}."
        )
    check_interval(owner, name, int(value), low, high, closed="both", why=why)
    return int(value)


def check_option(owner, name, value, options, *, why=""):
    """Return ``value`` if it is one of ``options`` (strings), else raise ``ValueError``."""
    if value not in options:
        allowed = ", ".join(repr(o) for o in options)
        msg = f"{owner}: {name} must be one of {allowed}; got {value!r}."
        if why:
            msg += " " + why
        raise ValueError(msg)
    return value


#: Why a MIP promise eta must lie in (0, 0.5] (Izzo et al., Definition 1): every check says it.
ETA_WHY = (
    "eta is the attacker's accuracy advantage over 1/2, so values above 0.5 promise nothing "
    "and 0 would need infinite noise."
)


def check_eta(owner, eta, name="eta"):
    """Return ``float(eta)`` for a MIP promise in (0, 0.5], else raise with :data:`ETA_WHY`."""
    return check_interval(owner, name, eta, 0, 0.5, closed="right", why=ETA_WHY)


def check_moment(owner, moment):
    """Validate the order M of a central moment: a finite real number >= 2.

    Theorem 9 / Corollary 10 of Izzo et al. need M >= 2 (Corollary 14's constant 6.16 is
    proved for M >= 2).
    """
    m = check_interval(
        owner, "moment", moment, 2, None, closed="left",
        why="Izzo et al.'s Theorem 9 and Corollary 10 need a central moment of order M >= 2; "
        "use moment=2 (variance) if unsure.",
    )
    if not np.isfinite(m):
        raise ValueError(f"{owner}: moment must be a finite real number >= 2; got {moment!r}.")
    return m
