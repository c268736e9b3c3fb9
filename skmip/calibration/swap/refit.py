"""The ``"refit"`` engine: any estimator, A(D_in) refitted for each sampled swap."""

from __future__ import annotations

import numpy as np

from skmip.calibration.swap._common import _fit_vector
from skmip.calibration.swap.rounds import _jensen_summary, _round_design


def _refit_round(estimator, adapter, X, y, fit_params, n, k, seed, p, whitener, all_pairs,
                 n_keep):
    rng, fit_sets, owner = _round_design(seed, n, k)
    out = np.empty((n, n_keep))
    for j, H in enumerate(fit_sets):
        _, theta_h = _fit_vector(estimator, adapter, X, y, H, fit_params, n)
        targets = np.flatnonzero(owner == j)
        # The same draws of e as the influence engines (so that they can be compared pair
        # by pair): p positions in H per target, independent and uniform.
        pos = rng.integers(0, k, size=(targets.size, p)) if (targets.size and not all_pairs) else None
        for i, x in enumerate(targets):
            es = H if all_pairs else H[pos[i]]
            values = np.empty(es.size)
            for col, e in enumerate(es):
                rows = np.sort(np.r_[H[H != e], x])
                _, theta_in = _fit_vector(estimator, adapter, X, y, rows, fit_params, n)
                values[col] = whitener.norms(theta_h - theta_in)
            out[x] = _jensen_summary(values[None, :], n_keep)[0]
    return out


def _refit_rounds(seeds, *args):
    """Several rounds in one job (shape (n, len(seeds), n_keep))."""
    return np.stack([_refit_round(*args[:7], seed, *args[7:]) for seed in seeds], axis=1)
