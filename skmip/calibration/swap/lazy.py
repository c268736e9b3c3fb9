r"""Lazy certification: tighten only the targets whose distances can move the printed scale.

Every distance the closed form certifies (stage 1, docs/coupling.md "Certified distances")
is an upper bound already; the second and third stages only make it smaller, and they are
most of the time of a certified calibration on one-hot data. The noise scale is decided by
the few targets whose bound binds, so :func:`settled_rounds` runs the rounds with the later
stages only for those (:class:`Tighten`) and checks, with
:meth:`skmip.bounds.coupling_binding.BindingTargets.settled`, that the scale is the one
full certification gives, and with :meth:`~skmip.bounds.coupling_binding.BindingTargets.upper_open`
that so is the printed ``eta_upper``; else it tightens the targets a check names and runs
again, and after ``_PASSES`` tries it certifies every pair. The proof is in
docs/coupling.md, *Certify only what can move the printed number*.

The passes: (0) the engine's uncertified estimates, which only steer (they locate the
scale); (1) the closed form alone for every pair; the targets that fail under these
bounds at ``_MARGIN`` times the estimates' scale are tightened in (2), and the checks
decide. The passes run over the same seeds (the same fits and pairs), and each keeps its
fits, their closed form and the pairs it tightened for the next (:mod:`.kept`): together
they fit once and take each pair past the closed form at most once. Steering by the closed
form's own scale instead (its infinite bounds read as 0) would save pass (0)'s estimates,
but on adult (4,000 rows) the closed form's scale lies well above the one certified, so the
first check failed and the passes repeated.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from skmip.calibration.swap.polish import _CHORD_MIN_WORK

#: Tightening passes tried before every pair is certified in full (each adds only its new
#: targets' later stages where the fits are kept, kept.py).
_PASSES = 6
#: The targets tightened are those that fail at this fraction of the scale expected.
_MARGIN = 0.85
#: Lazy from this many rows per fit on, or on fits large enough for the per-fit path (k D^2
#: above ``polish._CHORD_MIN_WORK``: the second stage is most of their time). Below, on the
#: batched small fits, the closed form leaves mostly unbounded pairs, which every pass must
#: tighten, and the passes' own cost (a calibration and a sweep over the kept batches each)
#: outweighs the rest (breast cancer, k = 213, D = 31, fits kept: 2.7 s against 2.2 s of CPU).
MIN_ROWS = 1500


def pays(k, n_params):
    """Whether lazy passes pay for fits on ``k`` rows with ``n_params`` parameters
    (``MIN_ROWS``)."""
    return k >= MIN_ROWS or k * n_params**2 > _CHORD_MIN_WORK


class Tighten(NamedTuple):
    """Certify every pair; past the closed form only those whose target is in ``targets``
    (a boolean mask over the rows of D). Truthy, like ``certify=True``."""

    targets: np.ndarray


def tightened(certify):
    """The mask of targets to tighten that ``certify`` carries (``None``: all of them)."""
    return certify.targets if isinstance(certify, Tighten) else None


def settled_rounds(run, binding, train_fraction, n):
    r"""The certified rounds, tightened only where the scales of ``binding`` need it.

    Parameters
    ----------
    run : callable
        ``run(certify, steer)`` returns the rounds' distances, shape (n, rounds, kept):
        ``certify`` is ``False`` (estimates), ``True`` or a :class:`Tighten`; ``steer``
        says that the pass only steers (no refinement).
    binding : BindingTargets
        The calibrations the result must leave unchanged.
    train_fraction : float
        :math:`k/n`.
    n : int
        The number of targets.

    Returns
    -------
    ndarray or CompactDistances
        Distances whose scales under ``binding`` equal those of full certification; each
        value is a certified upper bound.
    """
    try:
        expected = binding.scales(np.asarray(run(False, True)), train_fraction)
    except ValueError:  # the estimates cannot be calibrated: no scale to steer by
        return run(True, False)
    tight = binding.near(np.asarray(run(Tighten(np.zeros(n, dtype=bool)), True)), train_fraction,
                         expected, _MARGIN)
    for _ in range(_PASSES):
        rounds = run(Tighten(tight), False)
        arr = np.asarray(rounds)
        try:
            ok, scales = binding.settled(arr, train_fraction, tight)
        except ValueError:  # some target not yet tightened keeps the bound off eta
            ok, scales = False, expected
        if ok:
            # The scale is settled; tighten too the targets that could move eta_upper's digits.
            more = binding.upper_open(arr, train_fraction, tight, scales)
            if not more.any():
                return rounds
        else:
            more = binding.near(arr, train_fraction, scales, _MARGIN)
        if not (more & ~tight).any():
            break
        tight |= more
    return run(True, False)
