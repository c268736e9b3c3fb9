"""One round of the influence engines (``"newton"`` and first order ``"influence"``)."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ._common import _fit_vector
from .multinomial import _multi_margin_distances
from .newton import _n_refine, _ops, _pair_coefficients, _refine_target
from .polish import _check_solver_error, _factor, _polish, _solver_step
from .rounds import _jensen_summary, _round_design

#: Elements of one (e x targets) cross matrix computed at a time (memory cap).
_CHUNK_ELEMENTS = 2**20


def _prepare(block, factor, rows, whitener, newton):
    """Per-row quantities of one block for the pair distances.

    ``U``: the whitened per-row vectors whose combination is the swap's change: beta_i =
    H^-1 g_i (first order) or xi_i = H^-1 x_i (Newton, generalised-linear blocks), with
    ``Uraw`` their raw values on zero-scale coordinates. Newton also keeps the features,
    the leverage h_ii = x_i' H^-1 x_i, the loss derivatives at the fit and the margins.
    """
    if not newton:
        beta = linalg.cho_solve(factor, block.gradients[rows].T, check_finite=False).T
        return {"U": whitener.apply(beta, block.index), "Uraw": whitener.raw(beta, block.index)}
    glm = block.glm
    feats = glm.features[rows]
    xi = linalg.cho_solve(factor, feats.T, check_finite=False).T
    return {
        "rows": np.asarray(rows),
        "feats": feats,
        "xi": xi,
        "U": whitener.apply(xi, block.index),
        "Uraw": whitener.raw(xi, block.index),
        "h": (feats * xi).sum(1),
        "u0": glm.margins[rows],
        "d1": glm.dloss(glm.margins[rows], rows),
        "d2": glm.d2loss(glm.margins[rows], rows),
    }


def _take(prep, idx):
    return {key: value[idx] for key, value in prep.items()}


def _assemble_sq(terms, cross, orthogonal):
    """Squared whitened norm of sum_b (c_e,b U_e,b - c_x,b U_x,b) for each pair.

    ``terms``: per block (pe, px, c_e, c_x). Blocks are ``orthogonal`` when the whitening is
    diagonal (they hold disjoint coordinates); a full whitening matrix couples them.
    """
    dot, col_e, row_x = _ops(cross)
    sq = 0.0
    pairs = [(i, i) for i in range(len(terms))] if orthogonal else [
        (i, j) for i in range(len(terms)) for j in range(len(terms))
    ]
    for i, j in pairs:
        pe_i, px_i, ce_i, cx_i = terms[i]
        pe_j, px_j, ce_j, cx_j = terms[j]
        sq = sq + (
            ce_i * ce_j * col_e((pe_i["U"] * pe_j["U"]).sum(1))
            + cx_i * cx_j * row_x((px_i["U"] * px_j["U"]).sum(1))
            - 2.0 * ce_i * cx_j * dot(pe_i["U"], px_j["U"])
        )
    sq = np.maximum(sq, 0.0)
    for pe, px, ce, cx in terms:  # zero-scale coordinates (diagonal whitening only)
        if pe["Uraw"].shape[1]:
            if cross:
                raw = ce[:, :, None] * pe["Uraw"][:, None, :] - cx[:, :, None] * px["Uraw"][None, :, :]
            else:
                raw = ce[:, None] * pe["Uraw"] - cx[:, None] * px["Uraw"]
            sq = np.where((raw != 0).any(axis=-1), np.inf, sq)
    return sq


def _influence_round(estimator, adapter, loss, X, Xd, y, fit_params, sample_weight, n, k, seed,
                     p, whitener, all_pairs, summary_size, newton, refine, polish=False):
    rng, fit_sets, owner = _round_design(seed, n, k)
    out = np.empty((n, min(summary_size, k) if all_pairs else p))
    for j, H in enumerate(fit_sets):
        fitted, theta = _fit_vector(estimator, adapter, X, y, H, fit_params, n)
        if polish:
            theta = _polish(fitted, loss, adapter, Xd, y, H, sample_weight)
        blocks = loss.blocks(fitted, Xd, y, H, sample_weight)
        del fitted
        targets = np.flatnonzero(owner == j)
        preps = []
        step = np.zeros(theta.size)
        multi = newton and blocks[0].multi is not None  # K margins per row: multinomial.py
        for b in blocks:
            factor = _factor(b)
            step[b.index] = _solver_step(b, factor, H)
            if not multi:
                preps.append((_prepare(b, factor, H, whitener, newton), _prepare(b, factor, targets, whitener, newton), b.glm))
        # Zero-scale coordinates are left out of the solver check (they carry no noise).
        step[whitener.zero] = 0.0
        solver_error = float(whitener.norms(step))
        del theta
        if multi:  # --- hook: the target-exact engine with K margins (multinomial.py) ---
            pos = None if all_pairs else (
                np.stack([rng.choice(k, size=p, replace=False) for _ in targets]) if targets.size else np.empty((0, p), np.intp))
            dist = _multi_margin_distances(blocks[0], factor, H, targets, pos, whitener)
            out[targets] = _jensen_summary(dist, out.shape[1]) if all_pairs else dist
            _check_solver_error(solver_error, out[targets], k)
            continue  # --- end hook ---
        # Refining the most exposed targets needs one generalised-linear block.
        refine_here = refine if (newton and len(blocks) == 1) else 0.0
        if all_pairs:
            # Chunk the targets so that each (k x chunk) cross matrix stays small.
            width = max(1, _CHUNK_ELEMENTS // k)
            for start in range(0, targets.size, width):
                chunk = np.arange(start, min(start + width, targets.size))
                terms = []
                for pe, px, glm in preps:
                    pxc = _take(px, chunk)
                    terms.append((pe, pxc) + _pair_coefficients(pe, pxc, glm, newton, cross=True))
                dist = np.sqrt(_assemble_sq(terms, True, whitener.diagonal))
                for col in np.argsort(-dist.mean(axis=0))[: _n_refine(refine_here, chunk.size)]:
                    better = _refine_target(blocks[0], H, targets[chunk[col]], H, whitener)
                    if better is not None:
                        dist[:, col] = better
                out[targets[chunk]] = _jensen_summary(dist.T, out.shape[1])
        else:
            # Positions in H of p distinct e per target, drawn uniformly.
            pos = np.stack([rng.choice(k, size=p, replace=False) for _ in targets]) if targets.size else None
            for col in range(p):
                terms = []
                for pe, px, glm in preps:
                    pec = _take(pe, pos[:, col])
                    terms.append((pec, px) + _pair_coefficients(pec, px, glm, newton, cross=False))
                out[targets, col] = np.sqrt(_assemble_sq(terms, False, whitener.diagonal))
            if targets.size:
                for t in np.argsort(-out[targets].mean(axis=1))[: _n_refine(refine_here, targets.size)]:
                    better = _refine_target(blocks[0], H, targets[t], H[pos[t]], whitener)
                    if better is not None:
                        out[targets[t]] = better
        _check_solver_error(solver_error, out[targets], k)
    return out
