"""Privacy amplification by subsampling: the guarantee of a DP learner run on a random subsample.

One formula, used by the positive-accuracy promise of :class:`skmip.SubsampledDPClassifier` as
the audit reads it and by the one-run audit's comparison with a subsampled learner's budget.
"""

from __future__ import annotations

import numpy as np

__all__ = ["poisson_amplification"]


def poisson_amplification(epsilon, delta, sampling_rate):
    r"""(epsilon', delta') of an (epsilon, delta)-DP learner run on a Poisson subsample at rate ``T``.

    Parameters
    ----------
    epsilon : float
        The learner's epsilon, >= 0 (``inf`` allowed).
    delta : float
        The learner's delta, in [0, 1].
    sampling_rate : float
        ``T``: each record is kept independently with this probability, in [0, 1].

    Returns
    -------
    tuple of float
        :math:`(\log(1 + T(e^\epsilon - 1)), T\delta)`: the pipeline's guarantee as a function of
        the data it subsamples, for adding or removing one record.

    References
    ----------
    Balle, Barthe & Gaboardi, "Privacy amplification by subsampling" (NeurIPS 2018),
    Theorem 8 (Poisson subsampling, add/remove); used by Thudi et al., Section 3.

    Examples
    --------
    >>> eps, delta = poisson_amplification(1.0, 1e-5, 0.5)
    >>> round(eps, 4), delta
    (0.6201, 5e-06)
    >>> round(poisson_amplification(1024.0, 0.0, 0.5)[0], 4)   # eps + log T, no overflow
    1023.3069
    """
    eps, t = float(epsilon), float(sampling_rate)
    if not np.isfinite(eps) or t in (0.0, 1.0):
        return (eps if t == 1.0 else (0.0 if t == 0.0 else np.inf)), t * float(delta)
    # log(1 - T + T e^eps) without overflow: e^eps overflows past eps ~ 709.
    eps_out = float(np.log1p(t * np.expm1(eps))) if eps < 30 else float(np.logaddexp(np.log1p(-t), np.log(t) + eps))
    return eps_out, t * float(delta)
