r"""Certified batches kept between the passes of lazy certification: :class:`KeptBatches`.

Lazy certification (:mod:`.lazy`) runs the rounds several times over the same seeds: the
engine's estimates, the closed form for every pair, then the later stages for the targets
that can move the printed scale. What a batch of fits computes before the later stages —
the fits, their Hessians and :math:`K^{-1}`, the row sums, the
:class:`~.certify.FitCertificate` constants, every pair's estimate and closed-form bound —
does not depend on which targets are tightened. :class:`KeptBatches` keeps it (the
:class:`KeptPairs` of a batch of fits, :mod:`.batched`, or of one large fit,
:mod:`.influence`) so that a later pass adds only the second and third stages of the pairs
it tightens, each pair once (:func:`pass_values`). The closed form is the same computation
on the same arrays; the later stages run on fewer pairs at a time.

Memory is bounded: a batch is kept only while the store holds at most :func:`keep_budget`
(2 GiB, or an eighth of the machine's memory where that is less); a batch not kept is
computed again by the passes that need it (the result is the same). The store is shared
by the jobs of one calibration run in threads (the default); a copy sent to another process
(a process or cluster backend) arrives empty, so nothing large travels and each pass there
recomputes, as without the store.
"""

from __future__ import annotations

import os
import threading
from typing import NamedTuple

import numpy as np

from skmip.calibration.swap.lazy import tightened

#: Bytes kept per calibration at most (adult, 4,000 rows, 400 rounds: about 390 MiB, every fit
#: kept; the full 22,792-row split about 1.5 GiB: with 512 MiB two thirds of its fits were
#: fitted again in every pass, 682 s of CPU against 299 s; breast cancer: not lazy,
#: lazy.pays), and at most this share of the machine's memory (:func:`keep_budget`).
_KEEP_BYTES = 2**31
_KEEP_SHARE = 8


class KeptPairs(NamedTuple):
    """The pairs of one call of a certifier (a batch of fits, or a chunk of one fit's targets)
    before the later stages, and how far the passes took them.

    ``cert`` the :class:`~.pair_certifier.PairCertifier` (or
    :class:`~.stacked_certifier.StackCertifier`); per pair, laid out (T, p) as the certifier
    took them: ``dist`` the engine's estimates, ``e_rows``, ``c_e``, ``c_x``
    (:func:`~.newton._pair_coefficients`), ``done`` whether a pass took it past the closed
    form and ``values`` its bound so far (the closed form's, tightened where ``done``); ``x``
    (T,) each row's target; ``fit`` (T, 1) each pair's fit in a stack, or ``None`` for one fit.
    """

    cert: object
    dist: np.ndarray
    x: np.ndarray
    e_rows: np.ndarray
    c_e: np.ndarray
    c_x: np.ndarray
    fit: object
    done: np.ndarray
    values: np.ndarray


def kept_pairs(cert, dist, bound, x, e_rows, c_e, c_x, fit=None):
    """:class:`KeptPairs` of pairs no pass has taken past the closed form yet (``bound``: their
    closed-form bounds, kept, not copied)."""
    return KeptPairs(cert, dist, x, e_rows, c_e, c_x, fit, np.zeros(dist.shape, dtype=bool), bound)


def pass_values(kept, certify):
    """The values of the pairs ``kept`` in a pass of lazy certification: the estimates
    (``certify`` false: they only steer), or the certified bounds, past the closed form for
    the pairs of the targets ``certify`` names (:class:`~.lazy.Tighten`; every pair for
    ``True``) and every unbounded pair. A pair is tightened once, by the first pass that asks
    for it, from its closed-form bound; the certifier is the one full certification runs,
    limited to these pairs."""
    if not certify:
        return kept.dist
    targets = tightened(certify)
    # Where not done, ``values`` holds the closed form: the certifier reads only those pairs.
    new = ~kept.done & (~np.isfinite(kept.values) | (True if targets is None else targets[kept.x][:, None]))
    if new.any():
        kept.cert.pairs = new  # the certifier is its job's alone: passes run one after another
        fit = {} if kept.fit is None else {"fit": kept.fit}
        got = kept.cert.tighten(kept.dist, kept.values, kept.x[:, None], kept.e_rows, kept.c_e, kept.c_x, None,
                                **fit)
        kept.cert.pairs = None
        kept.cert.release_stage()
        kept.values[new] = got[new]
        kept.done[new] = True
    return kept.values


def _nbytes(value, seen):
    """Bytes of the arrays reachable from ``value`` (containers and object attributes), each
    counted once, but none of those whose ids are in ``seen``."""
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v, seen) for v in value)
    if isinstance(value, dict):
        return sum(_nbytes(v, seen) for v in value.values())
    if hasattr(value, "__dict__") and not callable(value):
        return sum(_nbytes(v, seen) for v in vars(value).values())
    return 0


def keep_budget():
    """Bytes the store may keep: ``_KEEP_BYTES``, or an eighth of the machine's physical memory
    where that is less (and where the platform says: POSIX ``sysconf``)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return _KEEP_BYTES
    return min(_KEEP_BYTES, max(memory // _KEEP_SHARE, 2**28))


class KeptBatches:
    """What each batch or fit of one calibration keeps between passes, by key, within
    ``budget`` bytes (module docstring)."""

    def __init__(self, budget=None):
        self.budget, self.used = keep_budget() if budget is None else budget, 0
        self._items, self._lock = {}, threading.Lock()
        # What the batches reference but do not own (the data's rows), held so that their ids
        # stay theirs.
        self._shared = {}

    def share(self, *values):
        """Count ``values`` (what the batches reference but do not own: the data's rows) as
        not kept here."""
        with self._lock:
            self._shared.update((id(v), v) for v in values)

    def get(self, key):
        """What ``key`` keeps, or ``None``."""
        with self._lock:
            return self._items.get(key)

    def put(self, key, batch):
        """Keep ``batch`` under ``key`` if the budget allows its arrays; returns whether it was
        kept."""
        with self._lock:
            size = _nbytes(batch, set(self._shared))
            if self.used + size > self.budget:
                return False
            self._items[key] = batch
            self.used += size
            return True

    def __reduce__(self):
        # A copy for another process starts empty (module docstring).
        return (KeptBatches, (self.budget,))
