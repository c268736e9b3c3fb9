"""What every calibration route is: its knobs, their checks, whether it applies, what it costs.

A *route* is one way :class:`~skmip.defend.MIPNoiseWrapper` turns a target eta into a release
(docs/design.md, "Calibration routes"). It is a small scikit-learn-style object: ``__init__``
only stores its knobs, so ``get_params``/``set_params``/``clone`` work and a grid search tunes
them through the wrapper (``method__n_rounds``). Everything a route knows about itself lives on
it: the checks of its knobs (:meth:`CalibrationRoute.validate`), whether it applies to an
estimator (:meth:`CalibrationRoute.applies`), a rough cost in seconds from the shape of D
(:meth:`CalibrationRoute.cost`), and the theorem its promise rests on (``promise``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from sklearn.base import BaseEstimator

from skmip.exceptions import PrivacyWarning

__all__ = ["CalibrationRoute", "Cost", "MAX_SECONDS", "MAX_BYTES", "VACUOUS_MESSAGE", "check_cost",
           "n_train_of", "warn_if_vacuous"]

#: The words that end the warning of a vacuous promise (a search filters its folds' copies).
VACUOUS_MESSAGE = "so it bounds nothing"

#: A fit projected to run longer than this is refused before any work (issue 31, item 8): one
#: day of one core. The projection is rough and optimistic (the full adult split by coupling is
#: projected at 872 s and measured at 2,000-5,300 s of CPU; docs/design.md, "Refusals,
#: measured"), so the limit stops only what cannot finish, never a run that is merely long.
MAX_SECONDS = 86_400.0

#: A fit projected to hold more than this in one array is refused before any work: 16 GiB.
MAX_BYTES = 16 * 2**30

#: Floating-point operations per second of one core that the projections assume (numpy on a
#: laptop core reaches 1-10 GFLOP/s on the dense kernels the fits run; the low end is taken).
FLOPS = 1e9

#: Seconds of Python overhead per fit of a small model (warm-started Newton steps through
#: scikit-learn's validation): what dominates the cost of the fits on small data.
SECONDS_PER_FIT = 2e-3


@dataclass(frozen=True)
class Cost:
    """A route's rough projection for one fit: seconds of one core, the largest array's bytes,
    and the knob that drives each (named in a refusal)."""

    seconds: float
    seconds_driver: str
    bytes: float = 0.0
    bytes_driver: str = ""


def fit_seconds(n_rows, n_params, n_fits):
    """Seconds for ``n_fits`` fits of a smooth model with ``n_params`` parameters on ``n_rows``
    rows: a few Newton steps, each ``O(n d^2 + d^3)``, plus the per-fit overhead."""
    flops = 3.0 * (n_rows * n_params**2 + n_params**3)
    return float(n_fits) * (SECONDS_PER_FIT + flops / FLOPS)


class CalibrationRoute(BaseEstimator):
    """Base of the calibration routes: knobs as ``__init__`` parameters, nothing else there.

    Subclasses set ``name`` (the wrapper's ``method_``), ``promise`` (the theorem the printed
    bound rests on) and implement :meth:`validate`, :meth:`applies` and :meth:`cost`.
    """

    #: The route's name: the string alias of ``method`` and the fitted ``method_``.
    name = ""
    #: The theorem the promise of a release by this route rests on, in words.
    promise = ""

    def validate(self, owner):
        """Check every knob; raise naming ``owner``, the knob, its value and the fix."""
        return self

    def applies(self, estimator, params):
        """``None`` when the route can release ``estimator`` with ``params``, else the reason.

        The noise routes' rule: a parameter adapter reads the estimator (:mod:`skmip.params`).
        """
        from skmip.params import get_adapter

        try:
            get_adapter(estimator, params)
        except TypeError as err:
            return f"no parameter adapter reads it ({err})"
        return None

    def cost(self, n_samples, n_features, n_train, estimator):
        """A rough :class:`Cost` of one fit on D of ``n_samples`` x ``n_features`` with
        ``n_train`` rows in D_train (the shape of D only: nothing about its rows)."""
        return Cost(0.0, "")


def calibrated_estimator(estimator, params):
    """The estimator whose parameters a coupling calibration reads: the last step of a
    :class:`~sklearn.pipeline.Pipeline` of two or more steps ending in a registered smooth
    loss (with ``params="auto"``; its transformers are fitted on all of D:
    :mod:`skmip.defend.preprocessing`), else ``None``."""
    from sklearn.pipeline import Pipeline

    from skmip.calibration.swap import get_smooth_loss

    if not isinstance(estimator, Pipeline) or len(estimator.steps) < 2:
        return None
    if not (isinstance(params, str) and params == "auto"):
        return None
    last = estimator.steps[-1][1]
    if last is None or isinstance(last, str) or get_smooth_loss(last) is None:
        return None
    return last


def check_cost(owner, route, n_samples, n_features, n_train, estimator):
    """Refuse, before any work, a fit the route projects beyond :data:`MAX_SECONDS` or
    :data:`MAX_BYTES`, naming the knob that drives it.

    The projection reads the shape of D and the knobs only, so the refusal (like every message
    of the wrapper) says nothing about which rows D_train holds.

    Raises
    ------
    ValueError
        When the projection exceeds a limit.
    """
    cost = route.cost(n_samples, n_features, n_train, estimator)
    where = f"{owner}: the {route.name!r} calibration on D of {n_samples} rows x {n_features} columns"
    if cost.seconds == math.inf:
        raise ValueError(f"{where} cannot run: {cost.seconds_driver}.")
    if cost.bytes > MAX_BYTES:
        raise ValueError(
            f"{where} would hold about {_size(cost.bytes)} in one array (limit {_size(MAX_BYTES)}), "
            f"driven by {cost.bytes_driver}. Reduce it or choose another route (docs/design.md, "
            "\"Calibration routes\")."
        )
    if cost.seconds > MAX_SECONDS:
        raise ValueError(
            f"{where} is projected at about {_duration(cost.seconds)} of one core (limit "
            f"{_duration(MAX_SECONDS)}), driven by {cost.seconds_driver}. Reduce it or choose "
            "another route (docs/design.md, \"Calibration routes\")."
        )
    return cost


def n_train_of(train_size, n_samples):
    """``k``, the rows of D_train: ``round(train_size * n)``, or all ``n`` with ``train_size=1.0``
    (the data given already is the random training subset)."""
    return n_samples if train_size == 1.0 else int(round(train_size * n_samples))


def warn_if_vacuous(owner, eta, n_train, n_samples, stacklevel=3):
    """Warn (:class:`~skmip.exceptions.PrivacyWarning`) when Definition 1's promise is vacuous.

    The promise bounds the attacker's accuracy by ``max(k/n, 1-k/n) + eta``
    (:func:`skmip.bounds.mip_promise`); when that is at least 1 it bounds nothing, however much
    noise is added. The test reads ``eta``, ``k`` and ``n`` only: decided before D_train is drawn.
    """
    q = n_train / n_samples
    if n_train < n_samples and max(q, 1 - q) + eta >= 1:
        warnings.warn(
            f"{owner}: the promise 'accuracy <= max(k/n, 1-k/n) + eta = {max(q, 1 - q):.3g} + "
            f"{eta:g}' with k = {n_train} of n = {n_samples} is at least 1, {VACUOUS_MESSAGE}: "
            f"an attacker who always answers 'member' (or always 'non-member') is right "
            f"{max(q, 1 - q):.3g} of the time already. Use an eta below min(k/n, 1-k/n) = "
            f"{min(q, 1 - q):.3g}, or a train_size nearer 0.5.",
            PrivacyWarning, stacklevel=stacklevel,
        )


def _size(n_bytes):
    return f"{n_bytes / 2**30:,.0f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:,.0f} MiB"


def _duration(seconds):
    if not math.isfinite(seconds):
        return "forever"
    if seconds >= 86_400 * 365:
        return f"{seconds / (86_400 * 365):,.0f} years"
    if seconds >= 86_400:
        return f"{seconds / 86_400:,.1f} days"
    return f"{seconds / 3600:,.1f} hours" if seconds >= 3600 else f"{seconds:,.0f} s"
