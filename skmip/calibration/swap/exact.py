"""The ``"exact"`` engine: every k-subset fitted, every (D_out, e) pair listed (tiny problems)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from skmip.calibration.swap._common import _OWNER, _fit_only_vector

#: Most subsets the exact engine fits.
_MAX_EXACT_FITS = 20_000


def _exact_distances(estimator, adapter, X, y, fit_params, n, k, whitener, n_jobs, verbose, cover=None):
    """Every pair's distance, shape (n, C(n-1, k), k). A pair whose D_out or D_in lacks a
    class of a classifier's ``y`` (``cover``) scores 0; such subsets are not fitted."""
    n_subsets = math.comb(n, k)
    if n_subsets > _MAX_EXACT_FITS:
        raise ValueError(
            f"{_OWNER}: engine='exact' fits every one of C({n}, {k}) = {n_subsets} subsets, more "
            f"than {_MAX_EXACT_FITS}. Use engine='refit' or an influence engine with random rounds."
        )
    subsets = np.array(list(itertools.combinations(range(n), k)), dtype=np.intp)
    usable = np.array([cover is None or cover.holds_all(rows) for rows in subsets], dtype=bool)
    vectors = Parallel(n_jobs=n_jobs, verbose=max(0, verbose - 1))(
        delayed(_fit_only_vector)(estimator, adapter, X, y, rows, fit_params, n) for rows in subsets[usable]
    )
    theta = np.full((subsets.shape[0], whitener.size), np.nan)
    theta[usable] = np.stack(vectors)
    bits = (np.int64(1) << subsets.astype(np.int64)).sum(axis=1)
    order = np.argsort(bits)
    sorted_bits = bits[order]
    out = np.empty((n, math.comb(n - 1, k), k))
    for x in range(n):
        without = np.flatnonzero(((bits >> x) & 1) == 0)
        for col in range(k):
            # e = the col-th member of each D_out; D_in = D_out - e + x* (all pairs, once).
            e = subsets[without, col]
            swapped = bits[without] - (np.int64(1) << e) + (np.int64(1) << x)
            partner = order[np.searchsorted(sorted_bits, swapped)]
            good = usable[without] & usable[partner]
            diff = theta[without] - theta[partner]
            diff[~good] = 0.0  # a bad pair scores 0
            out[x, :, col] = whitener.norms(diff)
    return out
