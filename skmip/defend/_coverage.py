r"""Classes that a random subset may lack: decided from D before ``D_train`` is drawn, and paid for.

A classifier cannot be fitted on a subset that lacks a class of ``y`` (scikit-learn fits only
the classes it sees, another parameter layout). Whether the random ``D_train`` lacks one is a
fact about ``D_train``: a refusal that happens exactly then says which rows were drawn (issue
31: a class of one row is absent from ``D_train`` exactly when that row is not a member). So
everything decidable is decided from D, before the draw (:func:`class_coverage`):

* the probability :math:`p` that a uniformly random subset of :math:`k` of the :math:`n` rows
  lacks some class (:func:`miss_probability`, an upper bound, rounded up), and the slack
  :math:`\delta = p / \max(q, 1-q)` with :math:`q = k/n` (with ``sigma_from="train"`` the
  halves of ``D_train`` are added, :math:`2B` subsets of :math:`\lfloor k/2 \rfloor` rows);
* if :math:`\delta \ge \eta` no noise can keep the promise: refused, in words that name D's
  class counts only;
* otherwise the noise is calibrated to :math:`\eta - \delta` (rounded down) and the promise
  :math:`\eta` is stated: the rare fit whose ``D_train`` (or one of its halves) lacks a class is
  refused after the draw, in one fixed wording, and the proof counts that refusal as an
  output like any other (docs/coupling.md, "Subsets that lack a class").

For regressors and unsupervised estimators, and with ``train_size=1.0`` (no promise), there is
nothing to decide: :math:`\delta = 0` and the calibration is untouched.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from sklearn.base import is_classifier

__all__ = ["miss_probability", "class_coverage", "ClassCoverage"]

#: A relative margin far above the error of ``math.lgamma`` (a few ulps) on each term.
_LGAMMA_MARGIN = 1e-12


def _up(value) -> float:
    """The smallest float at or above the exact rational ``value``."""
    value = Fraction(value)
    f = float(value)
    return f if Fraction(f) >= value else float(np.nextafter(f, np.inf))


def _down(value) -> float:
    """The largest float at or below the exact rational ``value``."""
    value = Fraction(value)
    f = float(value)
    return f if Fraction(f) <= value else float(np.nextafter(f, -np.inf))


def _miss_one(n, m, size):
    """An upper bound on ``C(n - m, size) / C(n, size)``: a random ``size``-subset lacks all
    ``m`` rows of one class."""
    if n - m < size:
        return 0.0
    terms = (math.lgamma(n - m + 1), math.lgamma(n - m - size + 1), math.lgamma(n + 1), math.lgamma(n - size + 1))
    log_p = terms[0] - terms[1] - terms[2] + terms[3]
    bound = math.exp(min(0.0, log_p + _LGAMMA_MARGIN * (1.0 + sum(abs(t) for t in terms))))
    return bound if bound > 0 else 5e-324  # an underflow is rounded up, never to zero


def miss_probability(y, size) -> float:
    """An upper bound on the probability that a uniformly random subset of ``size`` rows lacks
    some class of ``y`` (in some output), rounded up.

    Parameters
    ----------
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Class labels of D.
    size : int
        Rows of the subset.

    Returns
    -------
    float
        :math:`\\sum_c \\binom{n - m_c}{k} / \\binom{n}{k}` over the classes :math:`c` of every
        output (:math:`m_c` rows each; the union bound), at most 1.

    Examples
    --------
    A class of one row is missed by a random half of 60 rows with probability 1/2:

    >>> round(miss_probability([0] * 30 + [1] * 29 + [2], 30), 9)
    0.5
    """
    y = np.asarray(y)
    columns = y.reshape(y.shape[0], -1)
    n = columns.shape[0]
    total = Fraction(0)
    for j in range(columns.shape[1]):
        _, counts = np.unique(columns[:, j], return_counts=True)
        for m in counts:
            total += Fraction(_miss_one(n, int(m), int(size)))
    return min(1.0, _up(total))


class ClassCoverage:
    """What :func:`class_coverage` decided from D: the slack, and how the calibration pays it.

    Attributes
    ----------
    slack : float
        :math:`\\delta`, an upper bound on what the refusals of subsets lacking a class add to
        the attacker's advantage; 0 when no subset can lack a class or none is checked.
    miss : float
        :math:`p` for ``D_train``.
    message : str
        The fixed wording of the refusal when ``D_train`` (or one of its halves) lacks a class.
    """

    def __init__(self, slack=0.0, miss=0.0, message=""):
        self.slack, self.miss, self.message = float(slack), float(miss), message

    def calibration_eta(self, eta):
        """The eta the noise is calibrated to: :math:`\\eta - \\delta`, rounded down."""
        return float(eta) if self.slack == 0 else _down(Fraction(float(eta)) - Fraction(self.slack))

    def stated(self, value):
        """A level computed by the calibration, plus the slack, rounded up (``None`` stays)."""
        return value if value is None or self.slack == 0 else _up(Fraction(float(value)) + Fraction(self.slack))

    def calibration_etas(self, etas):
        """:meth:`calibration_eta` of each eta."""
        return [self.calibration_eta(eta) for eta in etas]

    def check_subset(self, y_subset, classes):
        """Refuse, in the fixed wording, when ``y_subset`` lacks one of ``classes``."""
        if classes is not None and self.message and np.setdiff1d(classes, np.unique(y_subset)).size:
            raise ValueError(self.message)

    def wrap(self, law):
        """The noise law, drawing at the calibration eta and stating levels with the slack."""
        return law if self.slack == 0 else _PaidLaw(law, self)


class _PaidLaw:
    """A noise law prepared at :math:`\\eta - \\delta` for each eta; its stated levels + delta."""

    def __init__(self, law, coverage):
        self.law, self.coverage = law, coverage

    @property
    def promises(self):
        """Whether the wrapped coupling law's bound is a theorem (certified, fixed given D)."""
        return self.law.promises

    def draw(self, eta, rng):
        noise, attrs = self.law.draw(self.coverage.calibration_eta(eta), rng)
        for key in ("coupling_eta_upper_", "coupling_eta_point_"):
            if key in attrs:
                attrs[key] = self.coverage.stated(attrs[key])
        return noise, attrs


def _counts(y):
    labels, counts = np.unique(np.asarray(y).reshape(len(y), -1)[:, 0], return_counts=True)
    return ", ".join(f"{label!r}: {count}" for label, count in zip(labels.tolist(), counts.tolist()))


def class_coverage(owner, wrapper, route, y, n_train, etas):
    """Decide from D, before ``D_train`` is drawn, what subsets lacking a class cost.

    Parameters
    ----------
    owner : str
        First word of the messages.
    wrapper : MIPNoiseWrapper
        Read for ``train_size`` and whether it is a classifier.
    route : CalibrationRoute
        Read for ``sigma_from`` and ``n_subsets`` (the spread's :math:`B`), where it has them.
    y : array-like
        Targets of D.
    n_train : int
        Rows of ``D_train`` (:math:`k`).
    etas : sequence of float
        The etas to be stated.

    Returns
    -------
    ClassCoverage

    Raises
    ------
    ValueError
        When the slack is at least the smallest eta: a random subset lacks a class so often
        that no noise keeps the promise. The message names D's class counts only.

    Notes
    -----
    A function of D and the parameters: the same whichever rows are drawn.
    """
    if not is_classifier(wrapper) or y is None or wrapper.train_size == 1.0:
        return ClassCoverage()
    n = len(y)
    miss = miss_probability(y, n_train)
    total = Fraction(miss)
    if getattr(route, "sigma_from", "dataset") == "train":
        # Halves of D_train are uniform subsets of D of that size; 2B of them, counted apart.
        total += 2 * route.n_subsets * Fraction(miss_probability(y, n_train // 2))
    slack = _up(total * n / max(n_train, n - n_train))
    counts = _counts(y)
    if slack >= min(float(e) for e in etas):
        raise ValueError(
            f"{owner}: a random subset of {n_train} of the {n} rows (train_size="
            f"{wrapper.train_size}) lacks a class with probability up to {miss:.3g} (class counts "
            f"{counts}), and a classifier must see every class. Whether D_train lacked one would say "
            f"which rows were drawn, and accounting for it costs {slack:.3g} of eta, no less than "
            f"eta={min(float(e) for e in etas):g}. Pass more rows of the rare classes, merge or drop "
            "them, or raise train_size. (Decided from D alone, before D_train is drawn.)"
        )
    message = (
        f"{owner}: the random D_train of {n_train} of the {n} rows lacks a class (class counts "
        f"in D: {counts}), so no classifier is "
        f"released. This happens with probability at most {miss:.3g} for this D, and the promise "
        f"accounts for it (the noise is calibrated to eta - {slack:.3g}). Pass more rows of the "
        "rare classes or raise train_size."
    )
    return ClassCoverage(slack, miss, message)
