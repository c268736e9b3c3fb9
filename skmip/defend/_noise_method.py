"""How MIPNoiseWrapper turns a target eta into noise: one strategy per calibration method.

``"moments"``: Izzo et al.'s Corollary 10 noise, scaled by the per-coordinate spread sigma.
``"coupling"``: Gaussian noise of shape sigma, its scale calibrated by the coupling bound on
the swap sensitivity (``docs/coupling.md``; :mod:`skmip.bounds.coupling`).

A strategy is prepared once per fit (the expensive part: swap distances for the coupling) and
then draws noise for any number of eta, so :func:`~skmip.defend.mip_noise_path` shares it.
Nothing a strategy computes from the private data outlives the fit except the fitted
attributes it returns.
"""

from __future__ import annotations

import numpy as np

from skmip.bounds import coupling_noise_scale, mip_noise_constant
from skmip.calibration import noise_laws
from skmip.calibration.noise_laws import sample_mip_noise

METHODS = ("auto", "coupling", "moments")


def resolve_method(method, estimator, params):
    """``"auto"``: the coupling calibration where skmip computes swap sensitivities without
    refitting (a registered smooth loss and the estimator's own parameter layout, or the last
    step of a pipeline whose transformers are fitted on D); training
    on MIP synthetic data where no parameter adapter reads the estimator (trees, forests,
    boosting, k-NN: :mod:`skmip.defend.synthetic_route`); else the moments calibration."""
    if method != "auto":
        return method
    from skmip.calibration.swap import get_smooth_loss
    from skmip.defend.preprocessing import preprocessing_route
    from skmip.defend.synthetic_route import SYNTHETIC, has_parameter_adapter

    # A pipeline whose last step has a smooth loss: its transformers are fitted on D and the
    # last step is calibrated by coupling (skmip.defend.preprocessing), adapter or not.
    if preprocessing_route(estimator, method, params) is not None:
        return "coupling"
    if params == "auto" and not has_parameter_adapter(estimator, params):
        return SYNTHETIC

    return "coupling" if (params == "auto" and get_smooth_loss(estimator) is not None) else "moments"


class MomentsNoise:
    """Corollary 10: X = r U, radius Gamma(d, c) (or the printed Laplace(c))."""

    def __init__(self, wrapper, sigma):
        self.moment, self.radius, self.sigma = wrapper.moment, wrapper.radius, sigma

    def draw(self, eta, rng):
        noise = sample_mip_noise(self.sigma, eta=eta, moment=self.moment, radius=self.radius, random_state=rng)
        return noise, {"noise_constant_": float(mip_noise_constant(eta, self.moment))}


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

    def __init__(self, wrapper, scale, deltas, shares=None, etas=()):
        self.scale, self.confidence = scale, wrapper.confidence
        self.engine = deltas.engine
        self.certified = deltas.certified  # proven upper bounds (or exact), not estimates
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
            "coupling_eta_upper_": None if cal.eta_upper is None or not self.certified else float(cal.eta_upper),
            "coupling_certified_": bool(self.certified),
            "coupling_eta_point_": float(cal.eta_point),
            "sensitivity_engine_": self.engine,
        }
