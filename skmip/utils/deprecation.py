"""Renamed parameters and moved names of skmip 0.2: the old spelling works, with a warning.

Every rename goes through :func:`renamed_parameter` (the old name's value is used with a
``FutureWarning``; both names set is an error), every estimator with a renamed parameter
unpickles from 0.1 through :class:`RenamedParametersMixin`, and a module whose names moved
answers for them through :func:`moved_names`. The old spellings go in 0.3 (``CHANGELOG.md``).
Moved *modules* are handled once for the package by ``skmip/_moved.py``.
"""

from __future__ import annotations

import importlib
import warnings

import numpy as np

#: The default of a renamed parameter's old name: "not set" (scikit-learn's convention).
DEPRECATED = "deprecated"


def is_unset(value):
    """Whether a renamed parameter's old name is left at its ``"deprecated"`` default."""
    return isinstance(value, str) and value == DEPRECATED


def renamed_parameter(owner, old_name, old_value, new_name, new_value, new_default, *, warn=True,
                      stacklevel=3, instead=None):
    """The value to use for a parameter renamed in skmip 0.2: ``new_value``, or the old one.

    When the old name is set (not ``"deprecated"``) its value is used. With ``warn`` (at
    ``fit``) that comes with a ``FutureWarning`` naming the new name, and setting both names
    is an error; without it (a look-up before ``fit``) the value is only returned.
    ``instead``, for a parameter that moved into another object rather than being renamed,
    is what to pass instead (``"method=CouplingRoute(n_rounds=50)"``); the warning then says
    that ``old_name`` moved to ``new_name``.

    Raises
    ------
    ValueError
        With ``warn``, if ``old_value`` is set and ``new_value`` differs from ``new_default``.
    """
    if is_unset(old_value):
        return new_value
    if not warn:
        return old_value
    if not (new_value is new_default or (np.isscalar(new_value) and new_value == new_default)):
        raise ValueError(
            f"{owner}: {old_name}={old_value!r} and {new_name}={new_value!r} were both set; "
            f"{old_name} is the deprecated name of {new_name}. Pass only {new_name}."
        )
    verb, instead = ("was renamed", f"{new_name}={old_value!r}") if instead is None else ("moved to", instead)
    warnings.warn(
        f"{owner}: {old_name} {verb} {new_name} in skmip 0.2 and will be removed in 0.3; "
        f"pass {instead} instead (its value is used).",
        FutureWarning,
        stacklevel=stacklevel,
    )
    return old_value


class RenamedParametersMixin:
    """Unpickles an estimator saved by skmip 0.1 under the parameter names of 0.2.

    ``_renamed_parameters`` maps each old name to its new one. A pickle from 0.1 holds the
    old name's value and no new name: the value moves to the new name and the old one is
    left ``"deprecated"``, so ``get_params``, ``clone`` and ``fit`` work on it unchanged.
    """

    _renamed_parameters: dict = {}

    def __setstate__(self, state):
        state = dict(state)
        for old, new in self._renamed_parameters.items():
            if new not in state and old in state:
                state[new], state[old] = state[old], DEPRECATED
        super().__setstate__(state)


def moved_names(module, moved):
    """A module ``__getattr__`` that answers for names now defined elsewhere, with a warning.

    Parameters
    ----------
    module : str
        The module that installs it (for the error on any other name).
    moved : dict
        Name -> the module that defines it now; imported on first access, so the old home
        imports nothing of the new one.
    """

    def __getattr__(name):
        if name not in moved:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} moved to {moved[name]} in skmip 0.2; import it from there "
            "(the old path goes in 0.3).",
            FutureWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(moved[name]), name)

    return __getattr__
