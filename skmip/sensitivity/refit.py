"""The ``"refit"`` engine: any estimator, A(D_in) refitted for each sampled swap."""

from __future__ import annotations

import numpy as np

from ._common import _fit_vector
from .rounds import _jensen_summary, _round_design


def _refit_round(estimator, adapter, X, y, fit_params, n, k, seed, p, whitener, all_pairs,
                 summary_size):
    rng, fit_sets, owner = _round_design(seed, n, k)
    out = np.empty((n, min(summary_size, k) if all_pairs else p))
    for j, H in enumerate(fit_sets):
        _, theta_h = _fit_vector(estimator, adapter, X, y, H, fit_params, n)
        for x in np.flatnonzero(owner == j):
            es = H if all_pairs else rng.choice(H, size=p, replace=False)
            values = np.empty(es.size)
            for col, e in enumerate(es):
                rows = np.sort(np.r_[H[H != e], x])
                _, theta_in = _fit_vector(estimator, adapter, X, y, rows, fit_params, n)
                values[col] = whitener.norms(theta_h - theta_in)
            out[x] = _jensen_summary(values[None, :], out.shape[1])[0] if all_pairs else values
    return out
