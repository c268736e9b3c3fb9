"""The moments route: Izzo et al.'s Corollary 10 noise, scaled by the per-coordinate spread.

Noise ``X = r U`` with density ``exp(-||x||_{sigma,M} / c)``, ``c = (6.16/eta)**(1 + 2/M)``
and ``sigma`` the spread of order M of the fit over random subsets (Theorem 9). The route owns
its knobs (:class:`MomentsRoute`) and its noise law (:class:`MomentsNoise`).
"""

from __future__ import annotations

from skmip.bounds import mip_noise_constant
from skmip.calibration.noise_laws import sample_mip_noise
from skmip.calibration.routes.base import CalibrationRoute, Cost, fit_seconds
from skmip.utils.validation import check_int, check_moment, check_option

__all__ = ["MomentsRoute", "MomentsNoise", "RADII", "SIGMA_FROM", "check_n_subsets"]

RADII = ("gamma", "laplace")
SIGMA_FROM = ("dataset", "train")


def check_n_subsets(owner, value, name="n_subsets"):
    """``value`` as an int >= 2 (the spread over random subsets needs two), else raise."""
    return check_int(
        owner, name, value, 2, None,
        why="sigma is a spread over random subsets and needs at least 2 of them; the paper uses 128.",
    )


class MomentsRoute(CalibrationRoute):
    """Izzo et al.'s Corollary 10: noise of density ``exp(-||x||_{sigma,M} / c)``.

    Parameters
    ----------
    moment : float, default=2
        Order M >= 2 of the central moment that measures the parameters' spread (Corollary 10).
        Larger M needs less noise (the constant is ``(6.16/eta)**(1 + 2/M)``) but a
        heavier-tailed estimate of the spread.
    n_subsets : int, default=128
        Number of random subsets B over which the spread ``sigma_`` is estimated
        (:func:`skmip.calibration.spread.moments.estimate_sigma`).
    radius : {"gamma", "laplace"}, default="gamma"
        Law of the noise radius. ``"gamma"`` gives exactly the density
        ``exp(-||x||_{sigma,M} / c)`` that Theorem 9 assumes; ``"laplace"`` is Corollary 10 /
        Algorithm 1 as printed, which does not have that density for d > 1 and is kept only to
        reproduce the paper (it emits a :class:`~skmip.exceptions.PrivacyWarning`).
    sigma_from : {"dataset", "train"}, default="dataset"
        Where the spread is measured. ``"dataset"``: over random subsets of ``D`` of the size
        of ``D_train`` -- exactly the law of the fitted parameters that Theorem 9's moment
        bound is about, and a function of ``D`` only. ``"train"``: over random halves of
        ``D_train``, as Algorithm 1 prints it.

    Notes
    -----
    The promise: Theorem 9 of Izzo et al. makes ``theta + X`` eta-MIP when ``sigma`` bounds
    the M-th central moment of each coordinate; ``sigma`` is estimated, not known, so the
    guarantee holds to the extent the estimate bounds the true moment (Algorithm 1 makes the
    same assumption). The noise is large: docs/mip_noise.md.

    Examples
    --------
    >>> from skmip.calibration.routes import MomentsRoute
    >>> MomentsRoute(moment=4).set_params(n_subsets=16).get_params()["n_subsets"]
    16
    """

    name = "moments"
    promise = ("eta-MIP (Definition 1) by Theorem 9 / Corollary 10 of Izzo et al., to the extent "
               "sigma_ bounds the M-th central moment of the fit")

    def __init__(self, moment=2, n_subsets=128, radius="gamma", sigma_from="dataset"):
        self.moment = moment
        self.n_subsets = n_subsets
        self.radius = radius
        self.sigma_from = sigma_from

    def validate(self, owner):
        """Check every knob; raise naming ``owner``, the knob, its value and the fix."""
        check_moment(owner, self.moment)
        check_n_subsets(owner, self.n_subsets)
        check_option(owner, "radius", self.radius, RADII)
        check_option(owner, "sigma_from", self.sigma_from, SIGMA_FROM)
        return self

    def cost(self, n_samples, n_features, n_train, estimator):
        """Rough seconds and bytes: ``n_subsets`` fits of ``k`` rows; the subsets' parameters."""
        d = n_features + 1
        seconds = fit_seconds(max(n_train, 1), d, self.n_subsets + 1)
        return Cost(seconds, f"n_subsets={self.n_subsets!r}", 8.0 * self.n_subsets * d,
                    f"n_subsets={self.n_subsets!r} and the {n_features} columns")


class MomentsNoise:
    """Corollary 10: X = r U, radius Gamma(d, c) (or the printed Laplace(c))."""

    def __init__(self, route, sigma):
        self.moment, self.radius, self.sigma = route.moment, route.radius, sigma

    def draw(self, eta, rng):
        noise = sample_mip_noise(self.sigma, eta=eta, moment=self.moment, radius=self.radius, random_state=rng)
        return noise, {"noise_constant_": float(mip_noise_constant(eta, self.moment))}
