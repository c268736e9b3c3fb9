r"""Uniform and Gaussian draws straight from the operating system's cryptographic generator.

:class:`OSRandomGenerator` is what ``secure_mode=True`` draws a release's randomness from:
every bit comes from ``os.urandom`` (the kernel's CSPRNG), with no generator state in the
process that an attacker could reconstruct from outputs, as one can for a Mersenne twister
or, with effort, a PCG. It implements the two methods skmip's private samplers use,
``random`` and ``standard_normal``, so it drops in where a ``numpy.random.Generator`` is
accepted by them.

Floating-point attacks
----------------------
Mironov (2012) showed that a textbook Laplace sampler on doubles leaks the un-noised value:
the set of doubles a sampler can return from ``x + noise`` is porous and depends on ``x``,
so one output can rule values of ``x`` in or out. Jin et al. (2021) and Holohan & Braghin
(2021) showed the same for Gaussian samplers (Box-Muller, polar, ziggurat), including the
one in Opacus before its fix. The defence used here is Holohan & Braghin's (§5.1), the one
Opacus' ``secure_mode`` adopted: each released standard normal is the normalised sum of
``2n = 4`` independent Box-Muller draws, :math:`(z_1 + z_2 + z_3 + z_4)/2`. A sum of
independent draws takes values on a far denser set of doubles than one draw, so
reconstructing the draws from an output costs about :math:`2^{p(2n-1)} = 2^{159}` work with
:math:`p = 53` mantissa bits, instead of :math:`2^{53}`. The law is exactly N(0, 1) in real
arithmetic (a sum of four independent N(0, 1) has variance 4).

The uniforms feeding Box-Muller are :math:`(k + 1/2)/2^{53}` for ``k`` uniform on 53 bits,
never 0 or 1, so ``log`` and the angle are always finite.

References
----------
Mironov, I. "On Significance of the Least Significant Bits for Differential Privacy". CCS 2012.
Holohan, N., Braghin, S. "Secure Random Sampling in Differential Privacy". ESORICS 2021, §5.1.
Jin, J., McMurtry, E., Rubinstein, B., Ohrimenko, O. "Are We There Yet? Timing and
Floating-Point Attacks on Differential Privacy Systems". IEEE S&P 2022.
Opacus, ``opacus.optimizers.optimizer._generate_noise`` (``secure_mode``).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["OSRandomGenerator"]

_MANTISSA = 53
#: Box-Muller draws summed per released normal (Holohan & Braghin's 2n with n = 2).
_SUMMANDS = 4


class OSRandomGenerator:
    """Uniform and Gaussian draws from ``os.urandom``, hardened against floating-point attacks.

    Cannot be seeded (that is the point); drawing is slower than numpy's generators (about
    8 bytes of kernel randomness per uniform, 64 per normal).

    Methods
    -------
    random(size=None)
        Uniform doubles in (0, 1).
    standard_normal(size=None)
        Standard normal doubles, each the sum of four Box-Muller draws over 2.

    Notes
    -----
    See the module docstring for the floating-point defence and its references.

    References
    ----------
    Holohan & Braghin (2021), §5.1; Mironov (2012).

    Examples
    --------
    >>> rng = OSRandomGenerator()
    >>> u = rng.random(1000)
    >>> bool(u.min() > 0 and u.max() < 1), rng.standard_normal((2, 3)).shape
    (True, (2, 3))
    """

    def __repr__(self):
        return "OSRandomGenerator()"

    @staticmethod
    def _count(size):
        return 1 if size is None else int(np.prod(size, dtype=np.int64))

    def random(self, size=None):
        """Uniform doubles in (0, 1): ``(k + 1/2) / 2^53``, ``k`` uniform on 53 bits from the OS."""
        m = self._count(size)
        k = np.frombuffer(os.urandom(8 * m), dtype=np.uint64) >> np.uint64(64 - _MANTISSA)
        u = (k.astype(np.float64) + 0.5) / float(2**_MANTISSA)
        return float(u[0]) if size is None else u.reshape(size)

    def standard_normal(self, size=None):
        """Standard normal doubles, each :math:`(z_1 + z_2 + z_3 + z_4)/2` of Box-Muller draws."""
        m = self._count(size)
        u1 = self.random((_SUMMANDS, m))
        u2 = self.random((_SUMMANDS, m))
        z = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
        out = z.sum(axis=0) / np.sqrt(_SUMMANDS)
        return float(out[0]) if size is None else out.reshape(size)
