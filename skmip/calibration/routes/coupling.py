"""The coupling route: Gaussian noise whose scale the coupling bound on swap distances sets.

Noise ``s L z`` with ``L`` a shape fixed given D and ``s`` the smallest scale whose coupling
bound (:func:`skmip.bounds.coupling_noise_scale`) meets eta (docs/coupling.md). The route owns
its knobs (:class:`CouplingRoute`) and its noise law (:class:`CouplingNoise`), prepared once per
fit (the swap distances) and drawn for any number of eta.
"""

from __future__ import annotations

import math

import numpy as np

from skmip.bounds import coupling_noise_scale
from skmip.calibration import noise_laws
from skmip.calibration.routes.base import CalibrationRoute, Cost, calibrated_estimator, fit_seconds
from skmip.calibration.routes.moments import SIGMA_FROM, check_n_subsets
from skmip.utils.validation import check_int, check_interval, check_moment, check_option

__all__ = ["CouplingRoute", "CouplingNoise", "MAX_FITS_PER_ROUND", "NOISE_SHAPES", "OUTLIER_RATIO", "outlying_records"]

NOISE_SHAPES = ("auto", "design", "full", "diagonal")

#: The most fits one round of swap distances may take. A round holds out ``n - k`` rows at a
#: time and fits the estimator on each complement, ``ceil(n / (n - k))`` fits: 2 at the default
#: ``train_size=0.5``, 64 at ``train_size`` near 0.984. Beyond, the rounds alone cost more than 32
#: times the default's (``train_size=0.995`` on 200 rows: 200 fits a round, 80,000 at the
#: default ``n_rounds``, past 400 s), for a promise whose prior ``max(k/n, 1-k/n)`` is above
#: 0.984, so that any eta above 0.016 promises nothing.
MAX_FITS_PER_ROUND = 64

#: Values of ``e`` drawn per target and round by the influence engines (their default), and the
#: values kept of them per target and round (the sorted-block summary): what the rounds cost and hold.
_PAIRS, _KEPT = 8, 4


class CouplingRoute(CalibrationRoute):
    """Gaussian noise calibrated by the coupling bound on swap distances (docs/coupling.md).

    Parameters
    ----------
    confidence : float or None, default=0.95
        Probability that the estimated swap distances do not understate the bound (a betting
        confidence bound per row, Waudby-Smith & Ramdas, with a union bound over all rows;
        :func:`skmip.bounds.coupling_eta_upper`). ``None`` calibrates the point estimate and
        warns: the stated eta is then an estimate.
    n_rounds : int, default=400
        Independent rounds of swap distances (each costs ``ceil(n / (n - k))`` fits of the
        estimator, two when ``k = n/2``, by warm-started Newton steps, plus arithmetic linear
        in n). Fewer rounds widen the confidence term of the betting bound, about
        ``ln(6n/alpha) / (1.9 n_rounds)`` when the draws vary little; an eta below it raises an
        error saying how many rounds it needs. On ``load_breast_cancer`` at eta = 0.1, 400
        rounds cost 1.18x the point estimate's noise and 1000 rounds 1.07x (docs/coupling.md,
        "Cost and scaling").
    noise_shape : {"auto", "design", "full", "diagonal"}, default="auto"
        The shape of the Gaussian noise, fixed given D (any such shape is private; the shape
        decides the utility). ``"design"``: the shape that minimises the predicted excess loss
        of the release when every record's predicted swap distance is held to one bound, from
        one fit on all of D (:func:`skmip.calibration.noise_shape.design_noise_factor`; needs a
        registered smooth loss; memory O(n d + d^2)); ``"full"``: the Cholesky factor of the
        (shrunk) covariance of the fit over ``n_subsets`` random subsets of D
        (:func:`skmip.calibration.spread.noise_factor.estimate_noise_factor`); ``"diagonal"``:
        the spread of order ``moment`` per coordinate over ``n_subsets`` subsets (memory O(d)).
        ``"auto"``: ``"design"`` where a smooth loss is registered, else ``"full"``. At eta = 0.1
        the design keeps 0.842 test accuracy on the full adult data against 0.822 for
        ``"full"`` (docs/coupling.md, "Noise shape designed for utility").
    n_subsets : int, default=128
        ``noise_shape="full"`` or ``"diagonal"``: the random subsets over which the covariance
        (or the spread) of the fit is measured. Unused by the ``"design"`` shape.
    moment : float, default=2
        ``noise_shape="diagonal"``: the order M >= 2 of the central moment measured per
        coordinate. Unused by the other shapes.
    sigma_from : {"dataset", "train"}, default="dataset"
        Where the shape and the swap distances are measured. ``"dataset"``: over random subsets
        of D of the size of D_train, a function of D only (Definition 1). ``"train"``: over
        random halves of D_train, as Algorithm 1 prints it; the noise law then depends on
        D_train, outside the coupling theorem, and no eta is stated (``mip_bound_`` None).

    Notes
    -----
    The promise: for a target ``x*`` couple ``D_out`` (uniform among the k-subsets without
    ``x*``) with ``D_in = D_out - e + x*``; joint convexity of total variation bounds the
    Bayes-optimal attacker's advantage by ``min(q, 1-q) E[2 Phi(Delta / 2s) - 1]``
    (Izzo et al., Proposition 2; docs/coupling.md), bounded at ``confidence`` by a betting
    confidence bound. A promise is stated only when every distance is a proven upper bound
    (``coupling_certified_``).

    Examples
    --------
    >>> from skmip.calibration.routes import CouplingRoute
    >>> CouplingRoute(n_rounds=200).get_params()["n_rounds"]
    200
    """

    name = "coupling"
    promise = ("eta-MIP (Definition 1) by the coupling bound on certified swap distances, "
               "at the stated confidence (Izzo et al., Proposition 2; docs/coupling.md)")

    def __init__(self, confidence=0.95, n_rounds=400, noise_shape="auto", n_subsets=128, moment=2,
                 sigma_from="dataset"):
        self.confidence = confidence
        self.n_rounds = n_rounds
        self.noise_shape = noise_shape
        self.n_subsets = n_subsets
        self.moment = moment
        self.sigma_from = sigma_from

    def validate(self, owner):
        """Check every knob; raise naming ``owner``, the knob, its value and the fix."""
        if self.confidence is not None:
            check_interval(
                owner, "confidence", self.confidence, 0, 1, closed="neither",
                why="it is the probability that the coupling bound's estimate holds; 0.95 is "
                "the default, None calibrates the point estimate (not a guarantee).",
            )
        check_int(owner, "n_rounds", self.n_rounds, 2, None,
                  why="each round draws one swap distance per row for the coupling calibration.")
        check_option(owner, "noise_shape", self.noise_shape, NOISE_SHAPES)
        check_n_subsets(owner, self.n_subsets)
        check_moment(owner, self.moment)
        check_option(owner, "sigma_from", self.sigma_from, SIGMA_FROM)
        return self

    def resolve_shape(self, owner, smooth):
        """The noise shape: ``"auto"`` is the design where a smooth loss is registered
        (``smooth``), else the covariance over subsets."""
        if self.noise_shape == "auto":
            return "design" if smooth else "full"
        if self.noise_shape == "design" and not smooth:
            raise ValueError(
                f"{owner}: noise_shape='design' needs a smooth loss registered for the estimator "
                "(skmip.calibration.swap.register_smooth_loss) to predict each record's influence; use "
                "noise_shape='full' or 'auto'."
            )
        return self.noise_shape

    def applies(self, estimator, params):
        """``None`` when a parameter adapter reads ``estimator``, or when it is a pipeline whose
        last step has a registered smooth loss (its transformers, a ``ColumnTransformer``
        included, are fitted on all of D and the last step is calibrated:
        :mod:`skmip.defend.preprocessing`); else the reason."""
        if calibrated_estimator(estimator, params) is not None:
            return None
        return super().applies(estimator, params)

    def cost(self, n_samples, n_features, n_train, estimator):
        """Rough seconds and bytes: ``n_rounds * ceil(n / (n - k))`` fits of ``k`` rows, the
        arithmetic of the pairs, the shape's fits, and the rounds' store of distances."""
        n, d = n_samples, n_features + 1
        # train_size=1.0: the rounds run on halves of the data given.
        k = n // 2 if n_train >= n else max(n_train, 1)
        fits_per_round = math.ceil(n / (n - k))
        rounds = fit_seconds(k, d, self.n_rounds * fits_per_round)
        rounds += self.n_rounds * n * _PAIRS * d / 1e8  # the pairs' arithmetic, O(n p d) a round
        shape_fits = 1 if self.noise_shape in ("auto", "design") else self.n_subsets
        seconds = rounds + fit_seconds(k, d, shape_fits)
        stored = float(n) * self.n_rounds * _KEPT * 8.0
        matrices = 8.0 * d * d
        if fits_per_round > MAX_FITS_PER_ROUND:  # refused whatever the projection
            seconds = math.inf
            driver = (f"train_size (k = {k} of n = {n}: every round of swap distances refits the "
                      f"estimator ceil(n / (n - k)) = {fits_per_round} times, more than "
                      f"{MAX_FITS_PER_ROUND}; use a train_size nearer 0.5)")
        else:
            n_fits = self.n_rounds * fits_per_round
            driver = (f"n_rounds={self.n_rounds!r}: {n_fits:,} fits of {k} rows, about "
                      f"{fit_seconds(k, d, 1):.2g} s each with {n_features} columns")
        if stored >= matrices:
            return Cost(seconds, driver, stored, f"n_rounds={self.n_rounds!r} (the rounds' swap distances)")
        return Cost(seconds, driver, matrices, f"the {n_features} columns (d x d matrices)")


#: A record whose mean swap distance exceeds this multiple of the 99th percentile's sets the
#: coupling noise almost alone. Measured (LogisticRegression(C=0.1), full shape): 16x on
#: standardized load_digits (pixels that are almost always 0; 4x on a 400-row subset) with
#: the first-order engine, which overstated those records: the K-margin target-exact engine
#: finds 1.2x on the 400-row subset; 1.0-1.9x on standardized breast cancer, adult and wine
#: and on [0, 1]-scaled digits. A record with features 30 times the others' range: 3x or more.
OUTLIER_RATIO = 3.0


def outlying_records(distances):
    """``(count, ratio)`` when a few records set the coupling noise, else ``None``.

    ``count`` records have a mean swap distance above ``OUTLIER_RATIO`` times the 99th
    percentile of all records' means, and ``ratio`` is the largest mean over that percentile.
    Needs at least 100 records (below that the 99th percentile is the maximum itself).
    """
    if hasattr(distances, "blocks"):  # the rounds' compact store, read a block at a time
        per_row = np.concatenate([block.reshape(len(block), -1).mean(axis=1) for _, block in distances.blocks()])
    else:
        per_row = np.asarray(distances, dtype=float).reshape(len(distances), -1).mean(axis=1)
    if per_row.size < 100:
        return None
    p99 = float(np.quantile(per_row, 0.99))
    if not p99 > 0 or per_row.max() <= OUTLIER_RATIO * p99:
        return None
    return int(np.sum(per_row > OUTLIER_RATIO * p99)), float(per_row.max() / p99)


class CouplingNoise:
    """Gaussian noise s * L z (or s * w * z) with s the smallest scale whose coupling bound
    meets eta, for a shape L (or w) fixed given the dataset."""

    def __init__(self, route, scale, deltas, shares=None, etas=(), fixed_given_D=True):
        self.scale, self.confidence = scale, route.confidence
        self.engine = deltas.engine
        self.certified = deltas.certified  # proven upper bounds (or exact), not estimates
        # The coupling bound is a theorem for a noise law fixed given D; measured on halves of
        # D_train (sigma_from="train") the law depends on D_train, and no eta is promised.
        self.promises = self.certified and fixed_given_D
        # eta -> calibration, each distinct eta once (a path repeats eta for fresh draws).
        # All are computed here, so the swap distances (per-record sensitivities of private
        # rows, and at large n the biggest array of the fit) are not kept.
        self._calibrations = {
            eta: coupling_noise_scale(deltas.distances, eta, confidence=self.confidence,
                                      train_fraction=deltas.train_fraction, target_shares=shares)
            for eta in dict.fromkeys(etas)
        }

    def draw(self, eta, rng):
        cal = self._calibrations[eta]
        # Drawn through the public noise law, looked up at the draw: the exact audit observes
        # it there (skmip.audit.attacks.exact_audit.capture_gaussian_noise).
        noise = noise_laws.sample_gaussian_noise(self.scale, cal.noise_scale, random_state=rng)
        return noise, {
            "noise_scale_": float(cal.noise_scale),
            "noise_scale_point_": float(cal.noise_scale_point),
            "coupling_eta_upper_": None if cal.eta_upper is None or not self.promises else float(cal.eta_upper),
            "coupling_certified_": bool(self.certified),
            "coupling_eta_point_": float(cal.eta_point),
            "sensitivity_engine_": self.engine,
        }
