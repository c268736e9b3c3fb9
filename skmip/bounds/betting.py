r"""Upper confidence bounds on the mean of bounded i.i.d. variables, by betting.

For :math:`Y_1, \dots, Y_m` i.i.d. in :math:`[0, c]` with mean :math:`\mu`, and a bet
:math:`\lambda \in [0, 1/c)` fixed in advance, the *capital* of a gambler who bets against
"the mean is :math:`\mu'`"

.. math::

    W_m(\mu') = \prod_{i=1}^m \big(1 + \lambda(\mu' - Y_i)\big)

is positive, and at the true mean :math:`\mathbb{E}\,W_m(\mu) = \prod_i \mathbb{E}[1 +
\lambda(\mu - Y_i)] = 1` by independence. Markov's inequality gives
:math:`P(W_m(\mu) \ge 1/\delta) \le \delta`. :math:`W_m` is increasing in :math:`\mu'`, so
with :math:`U` the root of :math:`\log W_m(U) = \ln(1/\delta)` (or :math:`c` if there is
none below :math:`c`), :math:`\mu > U` implies :math:`W_m(\mu) \ge 1/\delta`:

.. math::

    P(\mu > U) \le \delta .

A union bound over :math:`K` bets fixed in advance (:data:`BET_FRACTIONS`, :math:`\lambda_j
= \theta_j / c`) keeps the best of them at the price :math:`\ln K`. Expanding :math:`\log(1 +
z) \approx z - z^2/2` shows what each bet buys: :math:`U - \bar Y \approx
\ln(1/\delta)/(m\lambda) + \lambda V/2`, i.e. :math:`\sqrt{2V\ln(1/\delta)/m}` at the best
:math:`\lambda` (the variance term of empirical Bernstein bounds), and
:math:`c\ln(1/\delta)/(0.95\,m)` when the variance is tiny and the largest bet binds --
against :math:`7c\ln(2/\delta)/(3(m-1))` for Maurer & Pontil's Theorem 4, whose range term
dominates the coupling calibration (``docs/coupling.md``, "The confidence statement").

**Monotone in the data.** With the bets fixed, :math:`U` is non-decreasing in every
:math:`Y_i` (lowering a :math:`Y_i` raises :math:`W_m(\mu')` for every :math:`\mu'`). The
coupling calibration relies on it: its variables are non-increasing in the noise scale, so
the bound is too, and a search over the scale needs no monotone relaxation.

References
----------
Waudby-Smith, I., Ramdas, A. (2024). "Estimating means of bounded random variables by
betting", JRSS-B 86(1): the capital process and its confidence sets (here with constant
bets, a finite union over them, and a fixed sample size).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from skmip.bounds.rounding import relative_error

__all__ = ["BET_FRACTIONS", "betting_mean_upper"]

#: Bets as fractions of the largest admissible one, :math:`\lambda_j = \theta_j / c`: fixed
#: in advance (the union bound needs it), from 0.95 down by halves. The largest binds when the
#: variance is small (the coupling calibration's case); the smallest is right for a standard
#: deviation of about :math:`c\sqrt{2\ln(1/\delta)/m}/0.03`.
BET_FRACTIONS = 0.95 * 0.5 ** np.arange(6)

#: Elements of one (targets x draws) block processed at a time (memory cap).
_CHUNK = 2**22


def _log_capital(y, level, upper, fraction):
    """sum_i log(1 + (fraction / upper) (level - y_i)) per row of ``y``; ``level`` per row."""
    return np.log1p((fraction / upper) * (level[:, None] - y)).sum(axis=1)


def _rows(n_rows, m):
    step = max(1, _CHUNK // max(m, 1))
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def betting_passes(y, level, upper, log_threshold):
    """Whether each row's bound is at most ``level``: some bet's capital at ``level`` reaches
    ``exp(log_threshold)`` (then every mean above ``level`` is rejected too). ``level`` and
    ``log_threshold`` are scalars or one value per row."""
    y = np.asarray(y, dtype=np.float64)
    level = np.broadcast_to(np.asarray(level, dtype=np.float64), (y.shape[0],))
    log_threshold = np.broadcast_to(np.asarray(log_threshold, dtype=np.float64), (y.shape[0],))
    out = np.zeros(y.shape[0], dtype=bool)
    # A level passes only if the computed capital beats the threshold by its round-off bound,
    # so the exact capital beats it too: the returned bound is never below the exact one.
    pad = _capital_error(y.shape[1])
    for rows in _rows(y.shape[0], y.shape[1]):
        block, lv, th = y[rows], level[rows], log_threshold[rows]
        ok = np.zeros(block.shape[0], dtype=bool)
        for fraction in BET_FRACTIONS:
            todo = ~ok
            if not todo.any():
                break
            ok[todo] = _log_capital(block[todo], lv[todo], upper, fraction) >= th[todo] + pad
        out[rows] = ok
    return out


def _capital_error(m):
    """Round-off bound on a computed log-capital of ``m`` draws (:mod:`skmip.bounds.rounding`).

    Each term ``log1p(z)`` with ``|z| <= 0.95`` is at most ``L = -log(0.05)`` in size; three
    roundings of ``z`` move it by at most ``z / ((1 + z) log1p(z)) <= 6.4`` times their
    relative error, ``log1p`` adds two ulps: 22 ulps of each term. Their sum adds
    ``gamma_(m-1)`` of the sum of sizes, at most ``m L``.
    """
    return relative_error(m + 22) * m * -np.log1p(-BET_FRACTIONS[0])


def betting_mean_upper(samples: ArrayLike, *, upper: float, delta: float, tol: float = 1e-10) -> np.ndarray:
    r"""Upper confidence bound on the mean of i.i.d. draws in ``[0, upper]``, per row.

    Parameters
    ----------
    samples : array_like of shape (m,) or (n_rows, m)
        Independent draws (axis -1) of a variable in ``[0, upper]``; one row per variable.
    upper : float
        :math:`c > 0`, an a-priori bound on every draw.
    delta : float
        Error probability of each row's bound, in (0, 1).
    tol : float, default=1e-10
        Absolute accuracy of the returned bound (rounded up).

    Returns
    -------
    ndarray of shape (n_rows,)
        :math:`U` with :math:`P(\mu > U) \le \delta` for each row: the smallest level that
        some bet of :data:`BET_FRACTIONS` rejects at :math:`\delta / K` (module docstring).

    Raises
    ------
    ValueError
        If a draw is outside ``[0, upper]``, or ``upper``/``delta`` are out of range.

    Notes
    -----
    Markov's inequality on the capital process :math:`\prod_i(1 + \lambda(\mu - Y_i))`
    (mean one at the true mean), a union bound over the :math:`K` fixed bets, and the
    monotonicity of the capital in the level (module docstring).

    References
    ----------
    Waudby-Smith & Ramdas (2024), JRSS-B, the capital process with constant bets.

    Examples
    --------
    A variable that never moves: with 1000 draws of 0.05 in [0, 0.5], the bound exceeds the
    mean by about :math:`c\ln(K/\delta)/(0.95\,m)`; Maurer & Pontil's range term alone is
    :math:`7c\ln(2/\delta)/(3(m-1))`:

    >>> u = betting_mean_upper(np.full(1000, 0.05), upper=0.5, delta=0.05)
    >>> round(float(u[0]), 4), round(float(7 * 0.5 * np.log(2 / 0.05) / (3 * 999)), 4)
    (0.0525, 0.0043)
    """
    y = np.atleast_2d(np.asarray(samples, dtype=np.float64))
    c = float(upper)
    if not (c > 0 and np.isfinite(c)):
        raise ValueError(f"betting_mean_upper: upper must be a finite number > 0; got {upper!r}.")
    if not 0.0 < float(delta) < 1.0:
        raise ValueError(f"betting_mean_upper: delta must be in (0, 1); got {delta!r}.")
    if y.size == 0 or np.isnan(y).any() or (y < 0).any() or (y > c).any():
        raise ValueError(
            f"betting_mean_upper: every sample must lie in [0, upper={c}]; got values in "
            f"[{np.nanmin(y) if y.size else 'none'}, {np.nanmax(y) if y.size else 'none'}]."
        )
    return _upper(y, c, float(np.log(len(BET_FRACTIONS) / float(delta))), tol)


def _upper(y, c, log_threshold, tol=1e-10):
    """Per-row bound by bisection on the level (every row's test is monotone in it);
    ``log_threshold`` a scalar or one per row."""
    log_threshold = np.broadcast_to(np.asarray(log_threshold, dtype=np.float64), (y.shape[0],))
    lo = y.mean(axis=1)  # the capital at the sample mean is at most 1 (Jensen): never rejected
    hi = np.full(y.shape[0], c)
    undecided = betting_passes(y, hi, c, log_threshold)
    lo, hi = lo[undecided], hi[undecided]
    idx = np.flatnonzero(undecided)
    while idx.size and np.max(hi - lo) > tol:
        mid = 0.5 * (lo + hi)
        ok = betting_passes(y[idx], mid, c, log_threshold[idx])
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    out = np.full(y.shape[0], c)
    out[undecided] = hi
    return out
