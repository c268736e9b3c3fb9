r"""The noise multiplier a noisy-gradient fit needs for a target eta, and the eta it prints.

The engine's steps are Poisson-subsampled Gaussian sums of clipped row gradients of D_train,
composed adaptively; :func:`skmip.bounds.dpsgd_eta` turns their replace-one privacy profile at
epsilon = 0 (a pessimistic privacy loss distribution: an upper bound on the total variation of
the worst pair of same-size D_train's differing in one row) into the MIP level
:math:`\eta = \delta_{\mathrm{replace}}(0)/2` of Definition 1 (its proof is
:func:`skmip.bounds.profile_to_mip`'s). This module only searches that function; it restates no
formula. The printed bound is ``dpsgd_eta`` of the run's ``(sigma, q, n_steps)`` itself, at the
accountant's reporting grid, and the search returns a sigma at which it is at most the target.

**Which sampling rate.** ``q`` is the probability that a row *of D_train* is in a step's batch,
``q = batch_size / k`` with ``k = |D_train|``. The accountant's mechanism is the training run on
a fixed dataset of ``k`` rows, and ``profile_to_mip`` couples the two worlds of Definition 1 (the
target in, or out of, the uniformly drawn D_train) as replace-one neighbours of that size. No
amplification is claimed from D_train itself being a random half of D (the rate relative to D
would be ``q k / n``): the bound is valid, and conservative by that much.
"""

from __future__ import annotations

from skmip.bounds.accounting import SEARCH_DISCRETIZATION, dpsgd_eta, smallest_passing_noise
from skmip.utils.validation import check_eta, check_int, check_interval

__all__ = ["noise_multiplier_for_eta"]

#: Relative width to which the smallest passing noise multiplier is bracketed.
RELATIVE_TOLERANCE = 1e-3

#: The largest noise multiplier searched (beyond it the steps carry no signal).
MAX_NOISE_MULTIPLIER = 1e4

#: Below this noise multiplier the search stops going down (the privacy loss distributions
#: grow without bound as sigma -> 0; no target eta < 0.5 is met there at any useful run).
_MIN_NOISE_MULTIPLIER = 1e-2


def noise_multiplier_for_eta(eta, sample_rate, n_steps) -> tuple[float, float]:
    r"""The smallest noise multiplier (to 0.1%) whose rigorous MIP level is at most ``eta``.

    Parameters
    ----------
    eta : float
        Target MIP level in (0, 0.5].
    sample_rate : float
        :math:`q` in (0, 1]: Poisson rate of a row of D_train per step.
    n_steps : int
        Noisy steps, >= 1.

    Returns
    -------
    noise_multiplier : float
        :math:`\sigma` (0 when even no noise keeps ``eta``, i.e. ``eta = 0.5``).
    eta_bound : float
        ``dpsgd_eta(noise_multiplier, sample_rate, n_steps)``, the printed bound, ``<= eta``.

    Raises
    ------
    ValueError
        For a parameter out of range, or if no noise multiplier up to 1e4 reaches ``eta``.

    Notes
    -----
    :func:`skmip.bounds.dpsgd_eta` decreases in :math:`\sigma` (more noise, smaller total
    variation). A first search on a coarse privacy-loss grid (pessimistic, hence never below
    the fine value) finds where to look; the answer is then bracketed and bisected on
    :math:`\log\sigma` on the reporting grid until the bracket is within 0.1%, and its upper
    end is returned with ``dpsgd_eta`` evaluated there: the guarantee never rests on the coarse
    grid nor on an interpolation.

    References
    ----------
    Izzo et al., Definition 1; :func:`skmip.bounds.dpsgd_eta`, :func:`skmip.bounds.profile_to_mip`.

    Examples
    --------
    Ten epochs of batches of 64 expected rows out of 350 (German credit's D_train):

    >>> sigma, bound = noise_multiplier_for_eta(0.1, 64 / 350, 50)
    >>> bool(bound <= 0.1), round(sigma, 2)
    (True, 5.09)
    """
    owner = "noise_multiplier_for_eta"
    target = check_eta(owner, eta)
    q = check_interval(owner, "sample_rate", sample_rate, 0, 1, closed="right",
                       why="it is the probability that a row of D_train joins a step's batch.")
    steps = check_int(owner, "n_steps", n_steps, 1, None)
    zero = dpsgd_eta(0.0, q, steps)
    if zero <= target:
        return 0.0, zero
    def too_much():
        return ValueError(
            f"{owner}: no noise multiplier up to {MAX_NOISE_MULTIPLIER:g} reaches eta={eta!r} "
            f"at sample_rate={q!r} and n_steps={steps}; take fewer steps or a smaller rate."
        )

    search = dict(floor=_MIN_NOISE_MULTIPLIER, limit=MAX_NOISE_MULTIPLIER, too_much=too_much)
    # Steer on the coarse grid (pessimistic, so its answer is at or above the fine one) ...
    coarse = smallest_passing_noise(lambda s: dpsgd_eta(s, q, steps, discretization=SEARCH_DISCRETIZATION) <= target,
                                    1.0, tolerance=1e-2, **search)
    # ... then bracket and bisect on the reported grid, whose values alone are returned.
    fine = smallest_passing_noise(lambda s: dpsgd_eta(s, q, steps) <= target, coarse,
                                  tolerance=RELATIVE_TOLERANCE, **search)
    return float(fine), float(dpsgd_eta(fine, q, steps))
