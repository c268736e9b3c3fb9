r"""The coupling bound: how much Gaussian noise eta-MIP needs, in any dimension.

Setting (Definition 1 of Izzo et al.). A dataset :math:`\mathcal{D}` of :math:`n` rows, a
training set :math:`\mathcal{D}_{train}` drawn uniformly among the subsets of size :math:`k`,
a learner :math:`\mathcal{A}` that is deterministic given its data, and Gaussian noise
:math:`X \sim \mathcal{N}(0, s^2 \operatorname{diag}(w)^2)` whose shape :math:`w` and scale
:math:`s` are fixed given :math:`\mathcal{D}`. For a target :math:`x^*` let
:math:`P_{in}, P_{out}` be the laws of :math:`\mathcal{A}(\mathcal{D}_{train}) + X` given
:math:`x^* \in` / :math:`\notin \mathcal{D}_{train}`.

**Coupling.** Draw :math:`D_{out}` uniformly among the :math:`k`-subsets of
:math:`\mathcal{D} \setminus \{x^*\}`, then :math:`e` uniformly in :math:`D_{out}`, and put
:math:`D_{in} = D_{out} - \{e\} + \{x^*\}`. A given :math:`D_{in}` arises from exactly
:math:`n - k` equally likely pairs, so :math:`D_{in}` is uniform among the :math:`k`-subsets
that contain :math:`x^*`: :math:`P_{in}` and :math:`P_{out}` are mixtures over the same
:math:`(D_{out}, e)`.

**Joint convexity** of total variation then gives

.. math::

    \mathrm{TV}(P_{in}, P_{out}) \le \mathbb{E}_{D_{out}, e}\,
    \mathrm{TV}\big(\mathcal{N}(a, S), \mathcal{N}(a', S)\big)
    = \mathbb{E}\,\big[2\Phi(\Delta/2) - 1\big],
    \qquad \Delta = \frac{\|(\mathcal{A}(D_{out}) - \mathcal{A}(D_{in})) / w\|}{s}.

**Bayes risk.** With prior :math:`q = k/n` on membership, the Bayes-optimal attacker's
accuracy is :math:`\int \max(q\,p_{in}, (1-q)\,p_{out}) \le \max(q, 1-q) + \min(q, 1-q)\,
\mathrm{TV}(P_{in}, P_{out})` (Izzo et al., Proposition 2; an equality with
:math:`\tfrac12 + \tfrac12\mathrm{TV}` at :math:`q = 1/2`). The mechanism is therefore
eta-MIP as soon as, for every :math:`x^* \in \mathcal{D}`,

.. math::

    \min(q, 1-q)\; \mathbb{E}_{D_{out}, e}\big[2\Phi(\Delta_{x^*}/2) - 1\big] \le \eta .

No dimension-dependent constant enters (compare Theorem 9's :math:`6.16/\eta` and its
tail step). The expectation is over the real :math:`\mathcal{D}` and :math:`k`; it is
estimated from draws of :math:`(D_{out}, e)` (see :mod:`skmip.calibration.swap`), and this module
attaches a confidence statement to the estimate: an empirical-Bernstein upper bound
(Maurer & Pontil 2009, Theorem 4) with a union bound over the targets.

The parts live beside it: the per-draw values and their Jensen upper bounds in
:mod:`skmip.bounds.coupling_draws`, the empirical-Bernstein terms in
:mod:`skmip.bounds.bernstein`, the calibrated scale :func:`coupling_noise_scale` in
:mod:`skmip.bounds.coupling_scale`; every public name is importable from here.

Array convention. ``deltas`` holds whitened swap distances
:math:`\|(\mathcal{A}(D_{out}) - \mathcal{A}(D_{in}))/w\|` (noise scale :math:`s = 1`):

- shape ``(n_draws,)``: one target;
- shape ``(n_targets, n_draws)``: one distance per independent draw of
  :math:`(D_{out}, e)`;
- shape ``(n_targets, n_draws, n_pairs)``: per independent draw of :math:`D_{out}`, several
  values whose average of :math:`\mathrm{TV}` is the draw's variable (several :math:`e`
  drawn in the same :math:`D_{out}`, or a compressed summary of all of them, see
  :func:`skmip.calibration.swap.estimate_swap_deltas`).

Draws must be independent across axis 1 (for the confidence bound); values within a draw
may be dependent. ``inf`` is allowed (a change in a coordinate the noise does not cover:
total variation 1).

References
----------
Izzo, Z., Yoon, J., Arik, S. O., Zou, J. "Provable Membership Inference Privacy",
Definition 1 and Proposition 2 (``shared/papers/izzo-provable-membership-inference-privacy.txt``).

Maurer, A., Pontil, M. (2009). "Empirical Bernstein Bounds and Sample Variance
Penalization", COLT 2009, Theorem 4.

Devroye, L., Mehrabian, A., Reddad, T. (2018). "The total variation distance between
high-dimensional Gaussians" (TV between Gaussians with a common covariance).
"""


from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from skmip.utils.validation import check_option

from skmip.bounds.bernstein import _ucb_per_target
from skmip.bounds.coupling_draws import (
    _BOUNDS,
    _JensenBounds,
    _alpha,
    _betting_log_thresholds,
    _check_deltas,
    _check_draws,
    _check_scale,
    _check_shares,
    _check_weights,
    _draw_values,
    _prior_weight,
    gaussian_tv,
)
from skmip.bounds.coupling_scale import CouplingCalibration, coupling_noise_scale

__all__ = [
    "gaussian_tv",
    "coupling_eta_per_target",
    "coupling_eta",
    "coupling_eta_upper",
    "coupling_noise_scale",
    "CouplingCalibration",
]


def coupling_eta_per_target(
    deltas: ArrayLike, noise_scale: float, *, train_fraction: float = 0.5,
    weights: ArrayLike | None = None,
) -> np.ndarray:
    r"""Point estimate of the coupling bound on the MIP advantage, per target.

    Parameters
    ----------
    deltas : array_like of shape (n_draws,), (n_targets, n_draws) or (n_targets, n_draws, n_pairs)
        Whitened swap distances (module docstring), ``>= 0``.
    noise_scale : float
        :math:`s > 0`: the noise is :math:`\mathcal{N}(0, s^2\operatorname{diag}(w)^2)`.
    train_fraction : float, default=0.5
        :math:`q = k/n`; the advantage bound carries the factor :math:`\min(q, 1-q)`.
    weights : array_like of the shape of ``deltas`` (3-D), optional
        Probability of each value within its (target, draw), summing to 1 over axis 2:
        exhaustive deltas stored once per distinct value, with its multiplicity
        (:func:`skmip.calibration.swap.statistic_swap_deltas`). ``None``: equal weights.

    Returns
    -------
    ndarray of shape (n_targets,)
        :math:`\min(q,1-q)` times the average of :math:`2\Phi(\Delta/(2s)) - 1` over each
        target's draws: the empirical mean of the quantity the coupling bound needs below
        :math:`\eta`. Exact when ``deltas`` enumerates every :math:`(D_{out}, e)` with equal
        weight (``engine="exact"`` in :mod:`skmip.calibration.swap`), an unbiased estimate when the
        draws are random.

    Raises
    ------
    ValueError
        If ``deltas`` has a bad shape or negative/NaN values, ``noise_scale <= 0``, or
        ``train_fraction`` is outside (0, 1).

    Notes
    -----
    Coupling + joint convexity of TV + Proposition 2 (module docstring). Valid in every
    dimension; assumes a learner that is deterministic given its data and noise whose
    covariance does not depend on :math:`\mathcal{D}_{train}`.

    References
    ----------
    Izzo et al., Definition 1 and Proposition 2; this module's docstring for the coupling.

    Examples
    --------
    >>> coupling_eta_per_target([[1.0, 1.0], [0.0, 2.0]], 1.0).round(4).tolist()
    [0.1915, 0.1707]
    """
    owner = "coupling_eta_per_target"
    arr = _check_deltas(owner, deltas)
    s = _check_scale(owner, noise_scale)
    weight = _prior_weight(owner, train_fraction)
    return _draw_values(arr, s, weight, _check_weights(owner, weights, arr)).mean(axis=1)


def coupling_eta(
    deltas: ArrayLike, noise_scale: float, *, train_fraction: float = 0.5,
    weights: ArrayLike | None = None,
) -> float:
    r"""Point estimate of the coupling bound on the MIP level: the maximum over targets.

    Parameters
    ----------
    deltas : array_like of shape (n_draws,), (n_targets, n_draws) or (n_targets, n_draws, n_pairs)
        Whitened swap distances (module docstring).
    noise_scale : float
        :math:`s > 0`.
    train_fraction : float, default=0.5
        :math:`q = k/n`.
    weights : array_like, optional
        Pair weights, as in :func:`coupling_eta_per_target`.

    Returns
    -------
    float
        :math:`\max_{x^*} \min(q,1-q)\,\widehat{\mathbb{E}}[2\Phi(\Delta_{x^*}/(2s)) - 1]`.
        Definition 1 asks for every :math:`x^* \in \mathcal{D}`, hence the maximum. This is a
        *point estimate* when the draws are random; :func:`coupling_eta_upper` is the bound
        that holds with a stated confidence.

    Raises
    ------
    ValueError
        As :func:`coupling_eta_per_target`.

    Notes
    -----
    See :func:`coupling_eta_per_target`.

    References
    ----------
    Izzo et al., Definition 1 and Proposition 2.

    Examples
    --------
    Two targets: every swap of the first moves the output by one unit of :math:`w`; the
    swaps of the second move it by 0 or 2 units. The first is the more exposed (the
    bound is concave in the distance), and four times the noise cuts its bound about four
    times:

    >>> round(coupling_eta([[1.0, 1.0], [0.0, 2.0]], 1.0), 4)   # Phi(1/2) - 1/2
    0.1915
    >>> round(coupling_eta([[1.0, 1.0], [0.0, 2.0]], 4.0), 4)   # Phi(1/8) - 1/2
    0.0497
    """
    return float(
        coupling_eta_per_target(deltas, noise_scale, train_fraction=train_fraction, weights=weights).max()
    )


def coupling_eta_upper(
    deltas: ArrayLike,
    noise_scale: float,
    *,
    confidence: float = 0.95,
    train_fraction: float = 0.5,
    bound: str = "betting",
    target_shares: ArrayLike | None = None,
) -> float:
    r"""Upper confidence bound on the coupling MIP level, simultaneous over all targets.

    Parameters
    ----------
    deltas : array_like of shape (n_targets, n_draws) or (n_targets, n_draws, n_pairs)
        Whitened swap distances; the draws (axis 1) must be independent and identically
        distributed per target, each draw of :math:`D_{out}` with the law of the coupling.
        At least 2 draws.
    noise_scale : float
        :math:`s > 0`, fixed before looking at ``deltas`` (to choose ``s`` from the same
        ``deltas`` use :func:`coupling_noise_scale`, whose search keeps the guarantee).
    confidence : float, default=0.95
        Probability, over the random draws, that the returned value bounds every target's
        expectation at once.
    train_fraction : float, default=0.5
        :math:`q = k/n`.
    bound : {"betting", "maurer-pontil"}, default="betting"
        The confidence bound on each target's mean: ``"betting"``, the capital-process
        bound of :func:`skmip.bounds.betting_mean_upper` at :math:`\delta = \alpha/n_t`
        (about half the excess over the mean when the draws vary little, the coupling
        calibration's case), or ``"maurer-pontil"``, the empirical Bernstein bound below.
    target_shares : array_like of shape (n_targets,), optional
        How the error probability :math:`\alpha` is spent over the targets (a weighted union
        bound): target :math:`x` is bounded at :math:`\delta = \alpha\pi_x` with the shares
        normalised to :math:`\sum_x\pi_x = 1`; each must be > 0. They must be fixed before
        the draws (a function of :math:`\mathcal{D}`, e.g.
        :func:`skmip.calibration.noise_shape.design_target_shares`). ``None``: :math:`\alpha/n_t` each.

    Returns
    -------
    float
        ``"betting"``: :math:`\max_{x^*} U_{x^*}` with :math:`U` the betting bound of each
        target's draw values at :math:`\delta = \alpha / n_t`, capped at :math:`c`.
        ``"maurer-pontil"``: :math:`\max_{x^*} U_{x^*}` with, for the :math:`m` draw values
        :math:`Y_r \in [0, c]`, :math:`c = \min(q, 1-q)`,
        :math:`U = \bar Y + \sqrt{2 V \ln(2n_t/\alpha)/m} + 7c\ln(2n_t/\alpha)/(3(m-1))`,
        :math:`V` the unbiased sample variance, :math:`n_t` the number of targets and
        :math:`\alpha = 1 -` ``confidence``; capped at :math:`c`.

    Raises
    ------
    ValueError
        On bad ``deltas``, ``noise_scale``, ``confidence`` or ``train_fraction``, or fewer
        than 2 draws.

    Notes
    -----
    Maurer & Pontil (2009), Theorem 4: for i.i.d. :math:`Z_i \in [0, 1]`, :math:`m \ge 2`,
    with probability at least :math:`1 - \delta`,
    :math:`\mathbb{E}Z \le \bar Z + \sqrt{2V_m\ln(2/\delta)/m} + 7\ln(2/\delta)/(3(m-1))`.
    Applied to :math:`Z = Y/c` and rescaled (the range term picks up :math:`c`, the variance
    term is scale-equivariant), at :math:`\delta = \alpha/n_t` per target; the union bound
    makes the statement simultaneous, as Definition 1's "for every :math:`x^*`" requires.
    It covers the estimation error of the per-target means given :math:`\mathcal{D}`; the
    coupling bound itself (exact in every dimension) is what the means enter.

    References
    ----------
    Maurer & Pontil (2009), Theorem 4; Izzo et al., Definition 1 and Proposition 2.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> deltas = rng.uniform(0, 1, size=(50, 2000))
    >>> point = coupling_eta(deltas, 2.0)
    >>> upper = coupling_eta_upper(deltas, 2.0, confidence=0.95)
    >>> bool(point < upper < point + 0.02)
    True
    """
    owner = "coupling_eta_upper"
    arr = _check_deltas(owner, deltas)
    s = _check_scale(owner, noise_scale)
    weight = _prior_weight(owner, train_fraction)
    alpha = _alpha(owner, confidence)
    check_option(owner, "bound", bound, _BOUNDS)
    _check_draws(owner, arr)
    shares = _check_shares(owner, target_shares, arr.shape[0])
    if bound == "betting":
        return float(_JensenBounds(arr).max_upper(s, weight, _betting_log_thresholds(shares, alpha)))
    return float(_ucb_per_target(arr, s, weight, alpha, shares)[0].max())
