r"""One-run privacy auditing: which (epsilon, delta) claims a guessing game with m canaries refutes.

Setting of both theorems. ``m`` canaries; each is included in the training data
independently with probability 1/2 (``S_i`` uniform on {-1, +1}); the mechanism runs once;
an auditor that sees the output (and the canaries, never ``S``) guesses ``k`` of the ``S_i``
-- each guess "in" (+1) or "out" (-1), both kinds allowed -- and abstains on the rest, ``k``
fixed in advance; ``v`` guesses are right. If the mechanism is
(epsilon, delta)-DP with respect to adding or removing one canary (the rest of the data
fixed), the number of right guesses is small with high probability, so a large ``v`` refutes
the claim.

- :func:`steinke_p_value`: Steinke, Nasr & Jagielski (NeurIPS 2023), the main theorem:
  :math:`P[W \ge v] \le f(v) + 2 m \delta \max_{1 \le i \le v} (f(v - i) - f(v)) / i` with
  :math:`f(u) = P[\mathrm{Binomial}(k, e^\epsilon / (1 + e^\epsilon)) \ge u]`.
- :func:`fdp_refutes`: Mahloujifar, Melis & Chaudhuri (ICML 2025), the f-DP analysis of the
  same game: given the trade-off function ``f`` the mechanism is claimed to satisfy, a
  recursion over the number of right guesses bounds how much probability mass ``v`` right
  guesses out of ``k`` need; the claim is refuted at level ``alpha`` when that mass exceeds
  the ``k / m`` the game has.
- :func:`one_run_epsilon_bound`: the largest epsilon of a fixed grid below which every grid
  claim is refuted (a lower bound on the true epsilon at confidence ``1 - alpha``; see Notes).

Pure functions of numbers (numpy and scipy); :mod:`skmip.audit.one_run` turns canary scores
into the counts ``(m, k, v)``.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats
from scipy.special import expit

from skmip.bounds.gdp import dp_to_gdp_mu

__all__ = ["steinke_p_value", "fdp_refutes", "one_run_epsilon_bound", "EPSILON_GRID"]

#: The epsilons tested, fixed in advance (the validity argument needs a grid that does not
#: depend on the data): 0.01, 0.02, ..., 20.
EPSILON_GRID = np.round(np.arange(1, 2001) * 0.01, 2)
_TRADEOFFS = ("gaussian", "dp")
_BLOCK = 100
#: Relative margins that round every refutation against the auditor: the mu of a Gaussian
#: claim is raised (a weaker claim), the recursion's mass must exceed the guesses' share by
#: this much (its v <= m steps on non-negative numbers err by far less).
_MU_MARGIN = 1e-9
_MASS_MARGIN = 1e-9


def _check_counts(owner, m, k, v):
    m, k, v = int(m), int(k), int(v)
    if not (0 <= v <= k <= m and m >= 1):
        raise ValueError(f"{owner}: need 0 <= n_correct <= n_guesses <= m and m >= 1; got m={m}, "
                         f"n_guesses={k}, n_correct={v}.")
    return m, k, v


def steinke_p_value(m, n_guesses, n_correct, epsilon, delta):
    r"""Upper bound on ``P[at least n_correct right guesses]`` under an (epsilon, delta)-DP claim.

    Parameters
    ----------
    m : int
        Canaries, each included independently with probability 1/2.
    n_guesses : int
        Guesses ``k``, "in" or "out" (the auditor abstains on the other ``m - k``), fixed in
        advance.
    n_correct : int
        Right guesses ``v``.
    epsilon : float or array_like
        Claimed epsilon(s), >= 0.
    delta : float
        Claimed delta, in [0, 1].

    Returns
    -------
    ndarray
        The p-value of the claim at each epsilon, in [0, 1].

    Notes
    -----
    Steinke, Nasr & Jagielski, "Privacy auditing with one (1) training run" (NeurIPS 2023),
    main theorem: with :math:`q = e^\epsilon/(1+e^\epsilon)` and
    :math:`f(u) = P[\mathrm{Bin}(k, q) \ge u]`,
    :math:`P[W \ge v] \le f(v) + 2m\delta\max_{1\le i\le v}(f(v-i)-f(v))/i`, for guesses
    :math:`T \in \{-1, 0, +1\}^m` with ``k`` non-zero entries. Assumptions: independent
    inclusions with probability 1/2; guesses a function of the output only; the mechanism
    (epsilon, delta)-DP in each canary's inclusion (add/remove).

    Examples
    --------
    >>> float(steinke_p_value(100, 10, 10, 0.0, 0.0)[0])   # ten right coin flips
    0.0009765625
    """
    m, k, v = _check_counts("steinke_p_value", m, n_guesses, n_correct)
    eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
    q = expit(eps)
    beta = stats.binom.sf(v - 1, k, q)
    if delta == 0 or v == 0:
        return np.minimum(beta, 1.0)
    i = np.arange(1, v + 1)[:, None]
    gaps = (stats.binom.sf(v - i - 1, k, q[None, :]) - beta[None, :]) / i
    return np.minimum(beta + 2 * m * float(delta) * gaps.max(axis=0), 1.0)


@functools.lru_cache(maxsize=100_000)
def _gaussian_mu_one(epsilon, delta):
    return dp_to_gdp_mu(epsilon, delta)


def _gaussian_mu(epsilon, delta):
    """mu of the Gaussian mechanism that is exactly (epsilon, delta)-DP, at each epsilon (cached)."""
    return np.array([_gaussian_mu_one(float(e), delta) for e in np.ravel(epsilon)]).reshape(np.shape(epsilon))


def _least_mass(tradeoff, epsilon, delta):
    """``g(x)``: the least probability an event can have under one neighbour when it has ``x`` under the other.

    Gaussian: :math:`\\Phi(\\Phi^{-1}(x) - \\mu)` for the mu whose Gaussian mechanism is
    exactly (epsilon, delta)-DP, raised by a relative 1e-9 (``dp_to_gdp_mu`` solves to a
    relative 1e-12: a larger mu is a weaker claim, so rounding never tests a stronger one);
    ``"dp"``: the (epsilon, delta)-DP curve,
    :math:`\\max(0, e^{-\\epsilon}(x - \\delta), 1 - \\delta - e^{\\epsilon}(1 - x))`.
    Shrunk by a relative 1e-12 so that rounding never overstates it.
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    if tradeoff == "gaussian":
        mu = _gaussian_mu(eps, float(delta)) * (1 + _MU_MARGIN)
        return lambda x: stats.norm.cdf(stats.norm.ppf(x) - mu) * (1 - 1e-12)
    return lambda x: np.maximum.reduce([
        np.zeros_like(eps), np.exp(-eps) * (x - delta), 1 - delta - np.exp(eps) * (1 - x)]) * (1 - 1e-12)


def fdp_refutes(m, n_guesses, n_correct, alpha, epsilon, delta, tradeoff="dp"):
    r"""Whether ``n_correct`` right guesses of ``n_guesses`` refute the claim at level ``alpha``.

    Parameters
    ----------
    m, n_guesses, n_correct : int
        As in :func:`steinke_p_value`.
    alpha : float
        Level of the test, in (0, 1).
    epsilon : array_like
        Claimed epsilons, > 0; each is the claim that the mechanism's trade-off function is at
        least that of ``tradeoff`` at ``(epsilon, delta)``.
    delta : float
        Claimed delta, in (0, 1) for ``"gaussian"``, [0, 1) for ``"dp"``.
    tradeoff : {"dp", "gaussian"}, default="dp"
        ``"gaussian"``: the claim is mu-GDP with the mu of the Gaussian mechanism that is
        exactly (epsilon, delta)-DP (the hypothesised f-DP curve of DP-SGD and the Gaussian
        mechanism); ``"dp"``: the claim is (epsilon, delta)-DP itself (any mechanism).

    Returns
    -------
    ndarray of bool
        True where the claim is refuted.

    Notes
    -----
    Mahloujifar, Melis & Chaudhuri, "Auditing f-Differential Privacy in One Run" (ICML 2025):
    under an f-DP claim, with ``g(x)`` the least mass an event can have under one neighbour
    when it has ``x`` under the other, the probability of ``v`` right guesses among ``k`` is
    at most ``alpha`` unless the masses ``r_i`` (right) and ``h_i`` (wrong) forced by the
    recursion :math:`h_{i} = \max(h_{i+1}, g(r_{i+1}))`,
    :math:`r_{i} = \min(r_{i+1} + \tfrac{i}{k - i}(h_{i} - h_{i+1}), 1)` from
    :math:`r_v = \alpha v/m`, :math:`h_v = \alpha (k - v)/m` fit in the ``k / m`` the
    guesses have; the claim is refuted when :math:`r_0 + h_0 > k/m` (computed: by a relative
    1e-9 more, so floating point never refutes a claim that stands). Once ``h`` stops
    growing neither changes again, so the recursion stops there. Same assumptions as
    :func:`steinke_p_value`, with f-DP in each canary's inclusion. A guess names a value of
    the canary's bit, "in" or "out" (the paper's game with two options per canary); an "out"
    guess needs the claim from the other side of the neighbouring pair, which both curves
    here give (they are symmetric, and the add/remove relation is).

    Examples
    --------
    >>> bool(fdp_refutes(1000, 100, 100, 0.05, [1.0], 1e-5, "dp")[0])
    True
    >>> bool(fdp_refutes(1000, 100, 50, 0.05, [1.0], 1e-5, "dp")[0])
    False
    """
    m, k, v = _check_counts("fdp_refutes", m, n_guesses, n_correct)
    if tradeoff not in _TRADEOFFS:
        raise ValueError(f"fdp_refutes: tradeoff must be one of {_TRADEOFFS}; got {tradeoff!r}.")
    eps = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))
    g = _least_mass(tradeoff, eps, delta)
    r = np.full(eps.shape, alpha * v / m)
    h = np.full(eps.shape, alpha * (k - v) / m)
    for i in range(v - 1, -1, -1):
        h_new = np.maximum(h, g(r))
        if np.array_equal(h_new, h):
            break
        r = np.minimum(r + i / (k - i) * (h_new - h), 1.0)
        h = h_new
    return r + h > k / m * (1 + _MASS_MARGIN)


def one_run_epsilon_bound(m, n_guesses, n_correct, *, delta, alpha, method="fdp", tradeoff="dp"):
    """The largest grid epsilon below which every grid claim is refuted at level ``alpha``.

    Parameters
    ----------
    m, n_guesses, n_correct : int
        As in :func:`steinke_p_value`.
    delta : float
        The delta of the claims.
    alpha : float
        Level of each test, in (0, 1).
    method : {"fdp", "steinke"}, default="fdp"
    tradeoff : {"dp", "gaussian"}, default="dp"
        For ``method="fdp"`` (:func:`fdp_refutes`).

    Returns
    -------
    float
        ``EPSILON_GRID[j - 1]`` for the first grid point ``j`` whose claim stands (0 when the
        first stands).

    Notes
    -----
    **Validity.** Let the mechanism satisfy the claim at ``epsilon_0`` (so at every larger
    epsilon). If the bound exceeds ``epsilon_0``, the grid point just above ``epsilon_0`` --
    a point fixed before the data are seen -- was refuted, which happens with probability at
    most ``alpha`` (the test is valid at any epsilon the mechanism satisfies). So the bound is
    at most ``epsilon_0`` with probability at least ``1 - alpha``, whether or not the test is
    monotone in epsilon. It is rounded down to the grid (0.01).

    Examples
    --------
    >>> one_run_epsilon_bound(1000, 100, 100, delta=0.0, alpha=0.05, method="steinke")
    3.49
    """
    if method not in ("fdp", "steinke"):
        raise ValueError(f"one_run_epsilon_bound: method must be 'fdp' or 'steinke'; got {method!r}.")
    # The grid in blocks, from small epsilon up: the scan stops at the first claim that stands.
    for start in range(0, EPSILON_GRID.size, _BLOCK):
        eps = EPSILON_GRID[start:start + _BLOCK]
        if method == "steinke":
            refuted = steinke_p_value(m, n_guesses, n_correct, eps, delta) <= alpha * (1 - 1e-9)
        else:
            refuted = fdp_refutes(m, n_guesses, n_correct, alpha, eps, delta, tradeoff)
        stands = np.flatnonzero(~refuted)
        if stands.size:
            j = start + int(stands[0])
            return 0.0 if j == 0 else float(EPSILON_GRID[j - 1])
    return float(EPSILON_GRID[-1])
