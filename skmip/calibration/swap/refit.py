"""The ``"refit"`` engine: any estimator, A(D_in) refitted for each sampled swap."""

from __future__ import annotations

import numpy as np

from skmip.calibration.swap._common import _fit_vector
from skmip.calibration.swap.rounds import _jensen_summary, _round_design, _usable


def _refit_round(estimator, adapter, X, y, fit_params, n, k, seed, p, whitener, all_pairs,
                 n_keep, cover=None):
    """Distances of one round, shape (n, n_keep). A pair whose D_out or D_in lacks a class of
    a classifier's ``y`` (``cover``) scores 0 and is not fitted (:mod:`..class_cover`)."""
    rng, fit_sets, owner = _round_design(seed, n, k)
    out = np.empty((n, n_keep))
    for j, H in enumerate(fit_sets):
        targets = np.flatnonzero(owner == j)
        # The same draws of e as the influence engines (so that they can be compared pair
        # by pair): p positions in H per target, independent and uniform.
        pos = rng.integers(0, k, size=(targets.size, p)) if (targets.size and not all_pairs) else None
        if not _usable(H, cover):
            out[targets] = 0.0
            continue
        _, theta_h = _fit_vector(estimator, adapter, X, y, H, fit_params, n)
        for i, x in enumerate(targets):
            es = H if all_pairs else H[pos[i]]
            good = np.ones(es.size, dtype=bool) if cover is None else cover.swaps_hold_all(H, es, x)
            values = np.zeros(es.size)
            for col in np.flatnonzero(good):
                e = es[col]
                rows = np.sort(np.r_[H[H != e], x])
                _, theta_in = _fit_vector(estimator, adapter, X, y, rows, fit_params, n)
                values[col] = whitener.norms(theta_h - theta_in)
            out[x] = _jensen_summary(values[None, :], n_keep)[0]
    return out


def _refit_rounds(seeds, *args, cover=None):
    """Several rounds in one job (shape (n, len(seeds), n_keep))."""
    return np.stack([_refit_round(*args[:7], seed, *args[7:], cover=cover) for seed in seeds], axis=1)
