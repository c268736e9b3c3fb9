r"""Swap distances kept in half precision, each rounded *up*: the rounds' array at large n.

The rounds of :func:`~skmip.calibration.swap.estimate_swap_deltas` give every row of
:math:`\mathcal{D}` one value per round: :math:`n \times 400` values, 3.2 GB in double
precision at a million rows. Above ``COMPACT_VALUES`` values they are stored as IEEE half
floats times :math:`2^{-E_r}`, one exponent per round, chosen so that the round's largest
finite value lands just below :math:`2^{15}` (no overflow; the 11 significant bits then hold
every value within a relative :math:`2^{-10}`, and values below :math:`2^{-39}` of the
round's largest lose bits to subnormals but stay upper bounds, off by at most
:math:`2^{-24-E_r}`, absolute).

**Why rounding up keeps the guarantee.** Every stored value is at least the distance it
stands for: the half float is rounded to nearest, compared with the exact double (scaling by
a power of two is exact), and moved one step up where it fell below. The coupling bound is
an expectation of :math:`\mathrm{TV}(\Delta/s) = \operatorname{erf}(\Delta/(s\sqrt8))`,
non-decreasing in every distance, and the betting bound on it is non-decreasing in every
draw (:mod:`skmip.bounds.betting`); so whatever :func:`~skmip.bounds.coupling_noise_scale`
certifies for the stored values it certifies for the distances. The price is a noise scale
at most :math:`2^{-10} \approx 0.1\%` larger.
"""

from __future__ import annotations

import math

import numpy as np

#: Above this many values (n x rounds x kept values) the rounds are stored compact
#: (2**25 doubles: 256 MiB; in half precision 64 MiB: full adult, 18 million values, stays in
#: double precision, where lazy certification applies, skmip.calibration.swap.lazy).
COMPACT_VALUES = 2**25
#: Targets encoded or decoded at a time (bounds the temporaries).
_BLOCK_VALUES = 2**22
#: The largest finite value of a round is scaled below 2**_TOP (half floats reach 65504).
_TOP = 15


def _check(values):
    if np.isnan(values).any() or (values < 0).any():
        raise ValueError(
            "estimate_swap_deltas: a swap distance is NaN or negative; distances must be >= 0 "
            "(inf allowed). This is a bug in the engine or a non-finite fit: please report it."
        )


def encode_rounds(values):
    """``(codes, exponents)`` for ``values`` of shape (n, rounds, kept): half-float codes of
    ``values * 2**E_r`` rounded up, one exponent per round (module docstring)."""
    values = np.asarray(values, dtype=np.float64)
    _check(values)
    n, m = values.shape[:2]
    exponents = np.zeros(m)
    for r in range(m):
        finite = values[:, r][np.isfinite(values[:, r])]
        top = float(finite.max()) if finite.size else 0.0
        exponents[r] = _TOP - math.ceil(math.log2(top)) if top > 0 else 0.0
    codes = np.empty(values.shape, dtype=np.float16)
    scale = np.exp2(exponents)[None, :, None]
    step = max(1, _BLOCK_VALUES // max(1, values[0].size))
    for a in range(0, n, step):
        scaled = values[a:a + step] * scale  # exact: a power of two
        half = scaled.astype(np.float16)
        low = half.astype(np.float64) < scaled
        half[low] = np.nextafter(half[low], np.float16(np.inf))
        codes[a:a + step] = half
    return codes, exponents


class CompactDistances:
    """A ``(n_targets, n_rounds, n_pairs)`` array of distances stored by :func:`encode_rounds`.

    Indexing its first axis (an integer, a slice or an integer array) returns the decoded
    doubles of those targets, each at least the distance it stands for (module docstring);
    ``np.asarray`` decodes all of it. :meth:`put` stores the encoded rounds of a chunk.
    """

    ndim = 3
    dtype = np.dtype(np.float64)

    def __init__(self, n, m, keep):
        self.codes = np.zeros((n, m, keep), dtype=np.float16)
        self.exponents = np.zeros(m)
        self.shape = (n, m, keep)
        self.size = n * m * keep

    def put(self, start, codes, exponents):
        """Store the encoded rounds ``start, start + 1, ...`` of :func:`encode_rounds`."""
        stop = start + codes.shape[1]
        self.codes[:, start:stop] = codes
        self.exponents[start:stop] = exponents

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, idx):
        return self.codes[idx].astype(np.float64) * np.exp2(-self.exponents)[:, None]

    def __array__(self, dtype=None, copy=None):
        out = self[:]
        return out if dtype is None else out.astype(dtype, copy=False)

    def blocks(self):
        """``(slice, decoded)`` over the targets, a block at a time."""
        step = max(1, _BLOCK_VALUES // max(1, self.shape[1] * self.shape[2]))
        for a in range(0, self.shape[0], step):
            idx = slice(a, a + step)
            yield idx, self[idx]

    @property
    def nbytes(self):
        return self.codes.nbytes + self.exponents.nbytes
