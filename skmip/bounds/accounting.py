r"""Rigorous accounting of noisy SGD (DP-SGD) with privacy loss distributions.

Every figure here is an **upper bound** on the true privacy profile of the mechanism as run:
Google's ``dp_accounting`` builds the privacy loss distribution (PLD) of one step with its
*pessimistic* connect-the-dots discretisation (rounding errs on the safe side) and composes
it exactly by FFT. No central limit theorem, no asymptotics.

Two samplings, two neighbouring relations:

``sampling="poisson"``
    Every row joins every batch independently with probability ``q`` (Opacus'
    ``DPDataLoader``). ``adjacency="add_remove"`` is the usual DP-SGD accounting (Abadi et
    al.; one record added or removed); ``adjacency="replace_one"`` the relation of
    same-size datasets (one record replaced), whose dominating pair ``dp_accounting``
    implements as :math:`(qN(-1,\sigma^2)+(1-q)N(0,\sigma^2),\ qN(1,\sigma^2)+(1-q)N(0,\sigma^2))`.
``sampling="fixed"``
    Every step a batch of exactly ``B = q n`` rows drawn uniformly without replacement
    (Dong et al.'s NoisySGD, Leemann Eq. 10). Only replace-one is defined (``n`` is
    public). One step is, by Dong, Roth & Su's Theorem 4.2, :math:`C_q(f)`-DP with
    :math:`f = G_{2/\sigma}` (replacing a clipped gradient moves the sum by up to
    :math:`2C`) and :math:`C_q(f) = \min\{f_q, f_q^{-1}\}^{**}`, :math:`f_q = q f + (1-q)\mathrm{Id}`.
    The privacy profile of :math:`C_q(f)` is the pointwise maximum of the profiles of
    :math:`f_q` and :math:`f_q^{-1}` (the convex conjugate of a convex hull of a minimum
    is the maximum of the conjugates; Zhu, Dong & Wang 2022, §5). :math:`f_q^{-1}` and
    :math:`f_q` are the "remove" and "add" pairs of a Poisson-subsampled Gaussian of noise
    multiplier :math:`\sigma/2`; we take both one-step PLDs from ``dp_accounting``
    (pessimistic), form the maximum of their profiles on the PLD grid and turn that
    profile back into one *symmetric* PLD with the pessimistic connect-the-dots
    construction (Doroshenko et al. 2022, Algorithm 1), then compose. Composing the
    "remove" and "add" PLDs separately and taking the larger delta, as one would for
    add/remove neighbours, is **not** an upper bound here: it is the value of a
    dataset pair that exists (all other gradients equal to the replacement's), a lower
    bound.

The MIP level of Izzo et al. follows from the replace-one profile at epsilon = 0, the total
variation of the worst pair: :func:`skmip.bounds.profile_to_mip`.

References
----------
Abadi et al. "Deep Learning with Differential Privacy". CCS 2016.
Dong, J., Roth, A., Su, W. J. "Gaussian Differential Privacy". JRSS-B 84(1), 2022:
Theorem 3.2 (composition), Theorem 4.2 (subsampling without replacement).
Zhu, Y., Dong, J., Wang, Y.-X. "Optimal Accounting of Differential Privacy via
Characteristic Function". AISTATS 2022: dominating pairs, §5 (subsampling).
Doroshenko, V., Ghazi, B., Kamath, P., Kumar, R., Manurangsi, P. "Connect the Dots: Tighter
Discrete Approximations of Privacy Loss Distributions". PETS 2022.
Google ``dp_accounting`` (``pip install dp-accounting``): ``PLDAccountant``.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from skmip.bounds.rounding import relative_error, round_up
from skmip.utils.validation import check_int, check_interval, check_option

__all__ = ["dpsgd_epsilon", "dpsgd_delta", "dpsgd_eta", "dpsgd_noise_multiplier", "smallest_passing_noise",
           "SEARCH_DISCRETIZATION"]

_ADJACENCIES = ("add_remove", "replace_one")
_SAMPLINGS = ("poisson", "fixed")

#: Width of the PLD grid (privacy-loss units). The pessimistic rounding keeps every figure an
#: upper bound at any width; 1e-4 is dp_accounting's default and costs about a second for
#: a thousand steps.
DISCRETIZATION = 1e-4

#: A coarse grid that steers the searches for a noise multiplier (:func:`dpsgd_noise_multiplier`,
#: :func:`skmip.calibration.noisy_gradient.noise_multiplier_for_eta`); their answer is then
#: bracketed again on the fine grid, which is what is reported. Pessimistic, so a multiplier
#: that passes on it passes on the fine grid.
SEARCH_DISCRETIZATION = 1e-2


def _dp_accounting():
    try:
        import dp_accounting
        from dp_accounting.pld import pld_pmf, privacy_loss_distribution
    except ImportError as exc:  # pragma: no cover - depends on an optional package
        raise ImportError(
            "skmip's DP-SGD accounting needs Google's dp_accounting package, which is not "
            'installed. Install it with: pip install "skmip[torch]" (or pip install dp-accounting).'
        ) from exc
    return dp_accounting, pld_pmf, privacy_loss_distribution


def _check(owner, noise_multiplier, sample_rate, n_steps, sampling, adjacency):
    sigma = check_interval(owner, "noise_multiplier", noise_multiplier, 0, None, closed="left",
                           why="it is the noise std on the clipped-gradient sum over the clip norm.")
    q = check_interval(owner, "sample_rate", sample_rate, 0, 1, closed="right",
                       why="it is the probability that a row is in a batch (batch_size / n).")
    steps = check_int(owner, "n_steps", n_steps, 0, None)
    check_option(owner, "sampling", sampling, _SAMPLINGS)
    check_option(owner, "adjacency", adjacency, _ADJACENCIES)
    if sampling == "fixed" and adjacency != "replace_one":
        raise ValueError(
            f"{owner}: sampling='fixed' is defined for adjacency='replace_one' only; got "
            f"adjacency={adjacency!r}. A fixed batch of B = q n rows changes its rate when a row "
            "is added or removed; pass adjacency='replace_one'."
        )
    return sigma, q, steps


def _profile_on_grid(pmf, grid, discretization):
    """delta(eps) of a dense dp_accounting PMF at every eps = grid * discretization (sorted).

    ``inf_mass + sum_{l > eps} p(l) (1 - e^(eps - l))``, with the two sums accumulated from
    the right: the same quantity as ``pmf.get_delta_for_epsilon`` without its Python loop.
    """
    losses = (np.arange(pmf.size) + pmf._lower_loss) * discretization
    probs = np.asarray(pmf._probs, dtype=np.float64)
    upper = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])
    lower = np.concatenate([np.cumsum((probs * np.exp(-losses))[::-1])[::-1], [0.0]])
    # First loss strictly above each eps (integer grid: compare the integer indices).
    first = np.clip(grid - pmf._lower_loss + 1, 0, pmf.size)
    eps = grid * discretization
    return pmf._infinity_mass + np.maximum(upper[first] - np.exp(eps) * lower[first], 0.0)


def _symmetrized_step_pmf(sigma, q, discretization):
    """One step of fixed-size sampling under replace-one: the PLD of C_q(G_{2/sigma})."""
    dp_accounting, pld_pmf, pld = _dp_accounting()
    step = pld.from_gaussian_mechanism(
        standard_deviation=sigma / 2.0, sensitivity=1.0, sampling_prob=q,
        value_discretization_interval=discretization, pessimistic_estimate=True,
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    )
    # The grid spans the supports of both one-step PLDs ("remove" and "add").
    pmfs = [step._pmf_remove.to_dense_pmf(), step._pmf_add.to_dense_pmf()]
    lo = min(p._lower_loss for p in pmfs)
    hi = max(p._lower_loss + p.size for p in pmfs)
    grid = np.arange(lo, hi + 1)
    deltas = np.maximum(*(_profile_on_grid(p, grid, discretization) for p in pmfs))
    # Hockey-stick divergences are non-increasing in epsilon; round-off may break that by
    # 1e-16, and a running minimum would then *lower* a delta: take the running maximum
    # from the right instead, which only raises deltas (pessimistic).
    deltas = np.minimum(np.maximum.accumulate(deltas[::-1])[::-1], 1.0)
    return pld_pmf.create_pmf_pessimistic_connect_dots(discretization, grid, deltas)


@functools.lru_cache(maxsize=64)
def _composed(sigma, q, steps, sampling, adjacency, discretization):
    """The composed PLD (or None when a step has no noise: no finite guarantee)."""
    dp_accounting, _, pld = _dp_accounting()
    if sigma == 0:
        return None
    if sampling == "fixed":
        pmf = _symmetrized_step_pmf(sigma, q, discretization).self_compose(steps)
        return pld.PrivacyLossDistribution(pmf)
    relation = (
        dp_accounting.NeighboringRelation.REPLACE_ONE
        if adjacency == "replace_one"
        else dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    )
    step = pld.from_gaussian_mechanism(
        standard_deviation=sigma, sensitivity=1.0, sampling_prob=q,
        value_discretization_interval=discretization, pessimistic_estimate=True,
        neighboring_relation=relation,
    )
    return step.self_compose(steps)


def dpsgd_delta(noise_multiplier, sample_rate, n_steps, epsilon, *, sampling="poisson",
                adjacency="add_remove", discretization=DISCRETIZATION) -> float:
    r"""An upper bound on the delta of noisy SGD at ``epsilon`` (its privacy profile).

    Parameters
    ----------
    noise_multiplier : float
        :math:`\sigma`, noise std on the sum of clipped gradients over the clip norm, >= 0.
    sample_rate : float
        :math:`q`: the Poisson rate, or ``B / n`` for fixed-size batches, in (0, 1].
    n_steps : int
        Noisy steps, >= 0.
    epsilon : float
        Where to read the profile; any real (``0`` gives the total variation).
    sampling : {"poisson", "fixed"}, default="poisson"
        How batches are drawn (module docstring).
    adjacency : {"add_remove", "replace_one"}, default="add_remove"
        Neighbouring relation; ``"fixed"`` sampling needs ``"replace_one"``.
    discretization : float, default=1e-4
        Width of the privacy-loss grid; the pessimistic rounding keeps the result an upper
        bound at any width, a finer grid only makes it tighter.

    Returns
    -------
    float
        :math:`\delta(\epsilon)`, an upper bound (1.0 without noise).

    Raises
    ------
    ValueError
        For a parameter out of range, or fixed-size sampling under add/remove.
    ImportError
        Without the ``dp_accounting`` package.

    Notes
    -----
    The hockey-stick divergence :math:`\sup_{D \sim D'} \sup_S P(M(D) \in S) -
    e^\epsilon P(M(D') \in S)` of the composed mechanism, from the PLD of the module
    docstring.

    References
    ----------
    Zhu, Dong & Wang (2022); Doroshenko et al. (2022); ``dp_accounting.pld``.

    Examples
    --------
    One epoch of batches of 10 out of 1,000 rows with sigma = 2: the total variation of
    replace-one neighbours is below 0.04:

    >>> tv = dpsgd_delta(2.0, 0.01, 100, 0.0, adjacency="replace_one")
    >>> bool(0.03 < tv < 0.05)
    True
    """
    owner = "dpsgd_delta"
    sigma, q, steps = _check(owner, noise_multiplier, sample_rate, n_steps, sampling, adjacency)
    eps = check_interval(owner, "epsilon", epsilon, None, None)
    if steps == 0:
        return 0.0
    composed = _composed(sigma, q, steps, sampling, adjacency, float(discretization))
    if composed is None:
        return 1.0
    return round_up(max(0.0, composed.get_delta_for_epsilon(eps)), abs_err=_round_off(composed, steps), upper=1.0)


def _round_off(composed, steps):
    r"""Round-off bound on a delta read from a composed PLD (:mod:`skmip.bounds.rounding`).

    The pessimistic PLD is an upper bound in exact arithmetic. In floating point, with
    :math:`N` grid points and :math:`T` steps: the one-step probabilities and the final
    delta (a sum of at most :math:`N` of them, weights in [0, 1], total mass 1) are sums of
    non-negative terms, off by at most :math:`\gamma_N` absolutely. The composition is
    ``ifft(fft(p)**T)``: the forward transform errs by :math:`c \log_2 N\,u` relative in
    2-norm (Higham, Thm 24.2), the :math:`T`-th power of values of modulus :math:`\le 1`
    multiplies that by :math:`T`, and the inverse by :math:`1/\sqrt N` in 2-norm (Parseval);
    Cauchy-Schwarz turns a 2-norm error into at most :math:`\sqrt N` times it summed over
    the grid: :math:`\sqrt N\,(T + 4\log_2 N + 16)\,u` in all, taken eight times.
    """
    n = max(p.size for p in (composed._pmf_remove, composed._pmf_add) if p is not None)
    fft = math.sqrt(n) * relative_error(steps + 4.0 * math.log2(max(n, 2)) + 16.0)
    return 8.0 * (relative_error(n) + fft)


def dpsgd_epsilon(noise_multiplier, sample_rate, n_steps, delta, *, sampling="poisson",
                  adjacency="add_remove", discretization=DISCRETIZATION) -> float:
    r"""An upper bound on the epsilon of noisy SGD at ``delta`` (rigorous, PLD).

    Parameters
    ----------
    noise_multiplier, sample_rate, n_steps, sampling, adjacency, discretization
        As in :func:`dpsgd_delta`.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    float
        The smallest epsilon >= 0 whose delta (upper bound) is at most ``delta``; ``inf``
        without noise.

    Raises
    ------
    ValueError
        For a parameter out of range.
    ImportError
        Without the ``dp_accounting`` package.

    Notes
    -----
    Replace-one epsilon is at least the add/remove one for Poisson sampling (replacing is
    removing then adding), and at most twice it (group privacy of size 2 at a larger
    delta). Theorem 4 of Izzo et al. (:func:`skmip.bounds.dp_to_mip`) needs the replace-one
    epsilon; Thudi et al.'s Theorem 3.3 (:func:`skmip.bounds.positive_accuracy_bound`) the
    add/remove one.

    References
    ----------
    Abadi et al. (2016); ``dp_accounting.pld.PLDAccountant``.

    Examples
    --------
    sigma = 1, batches of 10 out of 1,000 rows, 100 steps, delta = 1e-5 (the central limit
    theorem says 4.53, :func:`skmip.bounds.gdp_to_dp` of :func:`skmip.bounds.gdp_mu`):

    >>> round(dpsgd_epsilon(1.0, 0.01, 100, 1e-5, sampling="fixed", adjacency="replace_one"), 2)
    6.64
    """
    owner = "dpsgd_epsilon"
    sigma, q, steps = _check(owner, noise_multiplier, sample_rate, n_steps, sampling, adjacency)
    d = check_interval(owner, "delta", delta, 0, 1, closed="neither")
    if steps == 0:
        return 0.0
    composed = _composed(sigma, q, steps, sampling, adjacency, float(discretization))
    if composed is None:
        return math.inf
    # The computed profile may sit below the exact one by its round-off: ask for the delta
    # less that, so the exact delta at the returned epsilon is at most the target.
    d_safe = d - _round_off(composed, steps)
    if d_safe <= 0:
        return math.inf
    return float(max(0.0, composed.get_epsilon_for_delta(d_safe)))


def dpsgd_eta(noise_multiplier, sample_rate, n_steps, *, sampling="poisson",
              discretization=DISCRETIZATION) -> float:
    r"""The MIP level eta of noisy SGD: half the replace-one total variation (rigorous).

    Parameters
    ----------
    noise_multiplier, sample_rate, n_steps, sampling, discretization
        As in :func:`dpsgd_delta` (the adjacency is replace-one, as Izzo et al.'s
        Definition 1 needs).

    Returns
    -------
    float
        :math:`\eta = \delta_{\mathrm{replace}}(0) / 2` in [0, 0.5]: no attacker guesses
        whether a record of D is in the uniformly drawn D_train with accuracy above
        :math:`\max(k/n, 1 - k/n) + \eta`.

    Raises
    ------
    ValueError
        For a parameter out of range.
    ImportError
        Without the ``dp_accounting`` package.

    Notes
    -----
    :func:`skmip.bounds.profile_to_mip` of :func:`dpsgd_delta` at epsilon = 0. Smaller than
    Izzo et al.'s Theorem 4 applied to any (epsilon, delta) of the same mechanism, since
    that theorem bounds the same total variation through one point of the profile.

    References
    ----------
    Izzo et al., Definition 1 and Theorem 4; :func:`skmip.bounds.profile_to_mip`.

    Examples
    --------
    The cell sigma = 2, q = 0.01, 1,000 steps of the soundness review (Theorem 4 on the
    replace-one epsilon at delta = 1e-5 gives 0.270):

    >>> round(dpsgd_eta(2.0, 0.01, 1000), 3)
    0.063
    """
    from skmip.bounds.mip import profile_to_mip

    tv = dpsgd_delta(noise_multiplier, sample_rate, n_steps, 0.0, sampling=sampling,
                     adjacency="replace_one", discretization=discretization)
    return float(profile_to_mip(tv))


def dpsgd_noise_multiplier(epsilon, delta, sample_rate, n_steps, *, sampling="poisson",
                           adjacency="add_remove", discretization=DISCRETIZATION) -> float:
    r"""The smallest noise multiplier (to 0.1%) whose rigorous epsilon is at most ``epsilon``.

    Parameters
    ----------
    epsilon : float
        Target epsilon, > 0.
    delta : float
        Target delta in (0, 1).
    sample_rate, n_steps, sampling, adjacency, discretization
        As in :func:`dpsgd_delta`.

    Returns
    -------
    float
        :math:`\sigma` with ``dpsgd_epsilon(sigma, ...) <= epsilon`` on the reported grid.

    Raises
    ------
    ValueError
        For a parameter out of range, or if no noise below 1e6 reaches the target.
    ImportError
        Without the ``dp_accounting`` package.

    Notes
    -----
    Bisection on a coarse grid (fast; epsilon decreases in sigma), then a second bisection
    on the reported grid around its answer, so the guarantee never rests on the coarse grid
    and the result is within 0.1% of the smallest passing sigma.

    References
    ----------
    ``dp_accounting.mechanism_calibration`` does the same search.

    Examples
    --------
    >>> s = dpsgd_noise_multiplier(2.0, 1e-5, 0.01, 1000)
    >>> bool(dpsgd_epsilon(s, 0.01, 1000, 1e-5) <= 2.0), round(s, 2)
    (True, 0.96)
    """
    owner = "dpsgd_noise_multiplier"
    target = check_interval(owner, "epsilon", epsilon, 0, None, closed="neither")
    d = check_interval(owner, "delta", delta, 0, 1, closed="neither")
    _check(owner, 1.0, sample_rate, n_steps, sampling, adjacency)
    if n_steps == 0:
        return 0.0

    def eps(s, grid):
        return dpsgd_epsilon(s, sample_rate, n_steps, d, sampling=sampling, adjacency=adjacency,
                             discretization=grid)

    def too_much():
        return ValueError(f"{owner}: no noise multiplier below 1e6 reaches epsilon={epsilon!r}.")

    # Steered on the coarse grid (pessimistic: its answer is at or above the fine one), then
    # bracketed and bisected again on the reported grid, whose values alone decide.
    coarse = smallest_passing_noise(lambda s: eps(s, SEARCH_DISCRETIZATION) <= target, 1.0, limit=1e6,
                                    too_much=too_much)
    return smallest_passing_noise(lambda s: eps(s, float(discretization)) <= target, coarse, limit=1e6,
                                  too_much=too_much)


def smallest_passing_noise(passes, start, *, tolerance=1e-3, floor=0.0, limit, too_much) -> float:
    """The smallest noise multiplier that passes a monotone test, to ``tolerance`` (relative).

    The searches for a noise multiplier share it: ``passes(sigma)`` holds from some sigma on
    (more noise, a smaller privacy loss), and the result is the upper end ``hi`` of a bracket
    ``[lo, hi]`` with ``passes(hi)`` true, ``passes(lo)`` false and ``hi - lo <= tolerance * hi``
    (or ``lo`` below ``floor``): the returned value itself passed, so a guarantee read at it
    never rests on an interpolation.

    Parameters
    ----------
    passes : callable
        ``passes(sigma) -> bool``, non-decreasing in ``sigma``.
    start : float
        Where the bracket starts (> 0): grown by 1.25 until it passes, then shrunk.
    tolerance : float, default=1e-3
        Relative width of the final bracket.
    floor : float, default=0.0
        The search stops going down below it.
    limit : float
        The largest multiplier tried.
    too_much : callable
        ``too_much()`` returns the exception raised when nothing up to ``limit`` passes.

    Returns
    -------
    float

    Examples
    --------
    >>> round(smallest_passing_noise(lambda s: s >= 3.0, 1.0, limit=10.0, too_much=ValueError), 2)
    3.0
    """
    hi = float(start)
    while not passes(hi):
        hi *= 1.25
        if hi > limit:
            raise too_much()
    lo = hi / 1.25
    while lo > floor and passes(lo):
        hi, lo = lo, lo / 1.25
    while hi - lo > tolerance * hi:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if passes(mid) else (mid, hi)
    return float(hi)
