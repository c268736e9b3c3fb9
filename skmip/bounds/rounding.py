r"""Outward rounding: a computed bound never falls below the exact value of its formula.

A bound evaluated in double precision carries round-off: a sum of :math:`n` non-negative
terms, each computed to a relative error :math:`\le k u` (:math:`u = 2^{-53}`, the unit
round-off), is within :math:`(n + k)\,u/(1 - (n + k)u)` of its exact value, relative to it
(Higham, *Accuracy and Stability of Numerical Algorithms*, 2002, Eq. 4.4 and Lemma 3.1).
Every printed bound adds such an a-priori error bound and steps one float up
(:func:`round_up`); a calibration that must *meet* a target compares the rounded-up value
with it, so the exact value meets it too.

References
----------
Higham, N. J. (2002), Chapter 3 (the :math:`\gamma_n` lemma) and Section 4.2 (summation).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["UNIT_ROUNDOFF", "format_up", "relative_error", "round_up", "round_down"]

#: :math:`u = 2^{-53}`, the unit round-off of IEEE double precision.
UNIT_ROUNDOFF = 2.0**-53


def relative_error(n_operations: float) -> float:
    r"""Higham's :math:`\gamma_n = n u / (1 - n u)`: the relative error bound of ``n`` roundings.

    Parameters
    ----------
    n_operations : float
        How many roundings (or ulps of error of library functions) the value went through,
        ``>= 0``; a sum of :math:`n` non-negative terms counts :math:`n - 1`.

    Returns
    -------
    float
        :math:`\gamma_n`, rounded up; ``inf`` when :math:`n u \ge 1/2` (no useful bound).

    Raises
    ------
    ValueError
        If ``n_operations`` is negative or NaN.

    Notes
    -----
    Higham (2002), Lemma 3.1: :math:`\prod_i (1 + \delta_i)^{\pm 1} = 1 + \theta_n` with
    :math:`|\theta_n| \le \gamma_n` when every :math:`|\delta_i| \le u`.

    Examples
    --------
    >>> relative_error(0)
    0.0
    >>> relative_error(10) > 10 * 2.0**-53
    True
    """
    n = float(n_operations)
    if not n >= 0:
        raise ValueError(f"relative_error: n_operations must be >= 0; got {n_operations!r}.")
    nu = n * UNIT_ROUNDOFF
    if nu >= 0.5:
        return math.inf
    return math.nextafter(nu / (1.0 - nu) * (1.0 + 4 * UNIT_ROUNDOFF), math.inf) if n else 0.0


def round_up(value, *, rel_err: float = 0.0, abs_err: float = 0.0, upper: float | None = None):
    r"""A float at least ``value`` plus its error bound: ``value (1 + rel_err) + abs_err``, one ulp up.

    Parameters
    ----------
    value : float or array_like
        A computed value whose exact counterpart :math:`v` satisfies
        :math:`|v - \text{value}| \le \text{rel\_err}\,|\text{value}| + \text{abs\_err}`.
    rel_err, abs_err : float, default=0
        The a-priori error bound (:func:`relative_error` for the relative part).
    upper : float, optional
        A value the exact quantity never exceeds (1 for a probability, ``c`` for a
        bounded mean): the result is capped there, which keeps it >= :math:`v`.

    Returns
    -------
    float or ndarray
        :math:`\ge v` (Python float for scalar input). ``inf``, NaN, and an exact 0 with
        ``abs_err=0`` (a relative bound keeps it exact) pass through.

    Notes
    -----
    The pad's own arithmetic rounds, so the sum is followed by one step up
    (:func:`numpy.nextafter`), which covers the last rounding.

    Examples
    --------
    >>> round_up(0.1) > 0.1
    True
    >>> round_up(0.9999999999999999, rel_err=1e-12, upper=1.0)
    1.0
    """
    x = np.asarray(value, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf * 0 for inf and NaN, which pass through below
        out = np.nextafter(x + np.abs(x) * rel_err + abs_err, np.inf)
    # inf and NaN pass; so does an exact 0 with no absolute error (a relative bound keeps it 0).
    out = np.where(np.isfinite(x) & ((x != 0) | (np.asarray(abs_err) != 0)), out, x)
    if upper is not None:
        out = np.minimum(out, upper)
    return float(out) if out.ndim == 0 else out


def round_down(value, *, rel_err: float = 0.0, abs_err: float = 0.0, lower: float | None = None):
    r"""A float at most ``value`` minus its error bound (the mirror of :func:`round_up`).

    Parameters
    ----------
    value : float or array_like
        A computed value, with the error bound of :func:`round_up`.
    rel_err, abs_err : float, default=0
        The a-priori error bound.
    lower : float, optional
        A value the exact quantity is never below: the result is floored there.

    Returns
    -------
    float or ndarray
        :math:`\le v` (Python float for scalar input).

    Examples
    --------
    >>> round_down(0.1) < 0.1
    True
    """
    x = np.asarray(value, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        out = np.nextafter(x - np.abs(x) * rel_err - abs_err, -np.inf)
    out = np.where(np.isfinite(x) & ((x != 0) | (np.asarray(abs_err) != 0)), out, x)
    if lower is not None:
        out = np.maximum(out, lower)
    return float(out) if out.ndim == 0 else out


def format_up(value: float, digits: int = 3) -> str:
    r"""``value`` printed with ``digits`` significant digits, rounded up (never below it).

    Parameters
    ----------
    value : float or fractions.Fraction
        A bound to print (a ``Fraction`` is printed from its exact value).
    digits : int, default=3
        Significant digits (as the ``g`` format).

    Returns
    -------
    str
        The shortest ``g``-style text of the smallest ``digits``-digit decimal
        :math:`\ge` ``repr(value)`` (exact decimal arithmetic); ``inf``/``nan`` as ``g``
        prints them.

    Notes
    -----
    ``f"{x:.3g}"`` rounds to nearest, so a printed bound of 0.6714... would read 0.671:
    below the theorem's value. This is the printed counterpart of :func:`round_up`. The float
    is read as its shortest round-trip decimal (``repr``): a target typed as ``eta=0.1``
    prints as 0.1; a computed bound is rounded up (:func:`round_up`) by at least one ulp,
    more than the half ulp between a float and its ``repr``.

    Examples
    --------
    >>> format_up(4 / 7 + 0.1), f"{4 / 7 + 0.1:.3g}"
    ('0.672', '0.671')
    >>> format_up(0.6)
    '0.6'
    >>> from fractions import Fraction
    >>> format_up(Fraction(1, 2) + Fraction(0.3)), format_up(Fraction(4, 9))
    ('0.8', '0.445')
    """
    from decimal import ROUND_CEILING, Decimal, localcontext
    from fractions import Fraction

    if isinstance(value, Fraction):  # an exact value: its decimal expansion, rounded up
        if value == 0:
            return "0"
        with localcontext() as ctx:
            ctx.prec, ctx.rounding = 60, ROUND_CEILING
            exact = Decimal(value.numerator) / Decimal(value.denominator)
    else:
        x = float(value)
        if not math.isfinite(x) or x == 0.0:
            return f"{x:g}"
        exact = Decimal(repr(x))
    step = Decimal(1).scaleb(exact.adjusted() - int(digits) + 1)
    up = exact.quantize(step, rounding=ROUND_CEILING)
    return f"{float(up):.{int(digits)}g}"
