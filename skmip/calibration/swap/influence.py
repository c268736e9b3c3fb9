"""One round of the influence engines (``"newton"`` and first order ``"influence"``)."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from skmip.calibration.swap._common import _OWNER
from skmip.calibration.swap.kept import kept_pairs, pass_values
from skmip.calibration.swap.lazy import tightened
from skmip.calibration.swap.hinge_certify import strong_certifier
from skmip.calibration.swap.pair_certifier import make_certifier
from skmip.calibration.swap.row_sums import fit_row_scalars
from skmip.calibration.losses.registry import gradient_sum
from skmip.calibration.swap.multinomial import _multi_margin_distances
from skmip.calibration.swap.newton import (
    _n_refine,
    _ops,
    _pair_coefficients,
    _refine_targets,
)
from skmip.calibration.swap.polish import _check_solver_error, _factor, _solver_step
from skmip.calibration.swap.rounds import _jensen_summary, _round_design, _usable

#: Elements of one (e x targets) cross matrix computed at a time (memory cap).
_CHUNK_ELEMENTS = 2**20
#: Elements of one gathered (targets x pairs x D) array of sampled pairs (cache-sized chunks).
_GATHER_ELEMENTS = 2**19


def _prepare(block, factor, rows, whitener, newton):
    """Per-row quantities of one block for the pair distances.

    ``U``: the whitened per-row vectors whose combination is the swap's change: beta_i =
    H^-1 g_i (first order) or xi_i = H^-1 x_i (Newton, generalised-linear blocks:
    :func:`_glm_rows`), with ``Uraw`` their raw values on zero-scale coordinates.
    """
    if not newton:
        beta = linalg.cho_solve(factor, block.gradients[rows].T, check_finite=False).T
        return {"U": whitener.apply(beta, block.index), "Uraw": whitener.raw(beta, block.index)}
    glm = block.glm
    feats = glm.features[rows]
    # xi_i = K^-1 x_i through the (D, D) inverse: one matrix product (a triangular solve
    # with n right-hand sides is several times slower), as the batched engine does.
    xi = feats @ linalg.cho_solve(factor, np.eye(feats.shape[1]), check_finite=False)
    return _glm_rows(feats, xi, glm.margins[rows], np.asarray(rows), glm, whitener, block.index)


def _glm_rows(feats, xi, margins, rows, glm, whitener, index, h=None):
    """The Newton engine's per-row quantities, for rows (..., ) of one fit or of a stack of fits.

    The features x_i, xi_i = H^-1 x_i (whitened: ``U``, raw on zero-scale coordinates:
    ``Uraw``), the leverage h_ii = x_i' H^-1 x_i, the margins u0 at the fit and the loss
    derivatives there. ``h``: the leverages where the caller has them (the same products and
    sums, row by row; ``feats`` may then be ``None`` if no one reads them).
    """
    return {
        "rows": rows,
        "feats": feats,
        "xi": xi,
        "U": whitener.apply(xi, index),
        "Uraw": whitener.raw(xi, index),
        "h": (feats * xi).sum(-1) if h is None else h,
        "u0": margins,
        "d1": glm.dloss(margins, rows),
        "d2": glm.d2loss(margins, rows),
    }


#: What a pair needs of its e and of its target (the Newton engine's keys; first order has U).
_E_KEYS = ("U", "Uraw", "feats", "h", "d1", "d2", "rows")
_X_KEYS = ("U", "Uraw", "xi", "h", "u0", "rows")


def _take(prep, idx, keys=None):
    """The rows ``idx`` (an integer array of any shape) of the per-row quantities ``keys``."""
    return {key: np.take(value, idx, axis=0) for key, value in prep.items() if keys is None or key in keys}


def _assemble_sq(terms, cross, orthogonal):
    """Squared whitened norm of sum_b (c_e,b U_e,b - c_x,b U_x,b) for each pair.

    ``terms``: per block (pe, px, c_e, c_x). Blocks are ``orthogonal`` when the whitening is
    diagonal (they hold disjoint coordinates); a full whitening matrix couples them.
    """
    dot, col_e, row_x = _ops(cross)
    sq = 0.0
    norm_sq = lambda A, B: np.einsum("...i,...i->...", A, B)  # noqa: E731
    pairs = [(i, i) for i in range(len(terms))] if orthogonal else [
        (i, j) for i in range(len(terms)) for j in range(len(terms))
    ]
    for i, j in pairs:
        pe_i, px_i, ce_i, cx_i = terms[i]
        pe_j, px_j, ce_j, cx_j = terms[j]
        sq = sq + (
            ce_i * ce_j * col_e(norm_sq(pe_i["U"], pe_j["U"]))
            + cx_i * cx_j * row_x(norm_sq(px_i["U"], px_j["U"]))
            - 2.0 * ce_i * cx_j * dot(pe_i["U"], px_j["U"])
        )
    sq = np.maximum(sq, 0.0)
    for pe, px, ce, cx in terms:  # zero-scale coordinates (diagonal whitening only)
        if pe["Uraw"].shape[1]:
            if cross:
                raw = ce[:, :, None] * pe["Uraw"][:, None, :] - cx[:, :, None] * px["Uraw"][None, :, :]
            else:
                raw = ce[..., None] * pe["Uraw"] - cx[..., None] * px["Uraw"]
            sq = np.where((raw != 0).any(axis=-1), np.inf, sq)
    return sq


def _matched_distances(sides, whitener, newton):
    """Distances of matched pairs from each block's (e side (T, p, .), target side (T, 1, .),
    glm): the (T, p) whitened norms of the swaps' changes."""
    terms = [(pe, px) + _pair_coefficients(pe, px, glm, newton, cross=False) for pe, px, glm in sides]
    return np.sqrt(_assemble_sq(terms, False, whitener.diagonal))


def _certified_matched(cert, side, whitener, **fit):
    """Certified distances of matched pairs (one generalised-linear block): :mod:`.certify`.
    ``fit``: each pair's fit, for a :class:`~.stacked_certifier.StackCertifier`."""
    return _certified_pairs(cert, [side], whitener, False, **fit)


def _closed_form_matched(cert, side, whitener, **fit):
    """``(dist, bound, c_e, c_x, det)`` of matched pairs of one block: the engine's estimates,
    their closed-form bounds (stage 1 of :mod:`.certify`) and the pairs' coefficients
    (:func:`_pair_coefficients`), which the later stages take (:func:`_certified_matched`)."""
    return _closed_form_pairs(cert, [side], whitener, False, **fit)[:5]


def _certified_pairs(cert, sides, whitener, cross, **fit):
    """Certified distances of pairs, matched (e side (T, p, .), target side (T, 1, .)) or all
    (``cross``: e on axis 0, the targets on axis 1), from each block's (e side, target side,
    glm): one block's certifier, or a :class:`~.hinge_certify.StrongCertifier` over a stack
    of blocks (one against the rest), which reads each block's coefficients."""
    dist, bound, c_e, c_x, det, e_rows, x_rows = _closed_form_pairs(cert, sides, whitener, cross, **fit)
    return cert.tighten(dist, bound, x_rows, e_rows, c_e, c_x, det, **fit)


def _closed_form_pairs(cert, sides, whitener, cross, **fit):
    """``(dist, bound, c_e, c_x, det, e_rows, x_rows)``: :func:`_certified_pairs` before its
    later stages (the estimates, their closed-form bounds, the pairs' coefficients and rows)."""
    terms = [(pe, px) + _pair_coefficients(pe, px, glm, True, cross=cross, details=True) for pe, px, glm in sides]
    dist = np.sqrt(_assemble_sq([t[:4] for t in terms], cross, whitener.diagonal))
    pe, px = terms[0][:2]
    lay_e, lay_x = (lambda v: v[:, None], lambda v: v[None, :]) if cross else (lambda v: v, lambda v: v)
    e_rows, x_rows = lay_e(pe["rows"]), lay_x(px["rows"])
    if len(terms) == 1:
        c_e, c_x, det = terms[0][2:]
        bound = cert.bound(dist, lay_e(_norms(pe)), lay_x(_norms(px)), c_e, c_x, det, e_rows, x_rows, **fit)
    else:
        c_e, c_x, det = [t[2] for t in terms], [t[3] for t in terms], None
        bound = cert.bound(dist, None, None, c_e, c_x, det, e_rows, x_rows, **fit)
    return dist, bound, c_e, c_x, det, e_rows, x_rows


def _refine_fit(block, factor, P, H, px, cols, e_rows, whitener):
    """:func:`_refine_targets` for the targets ``cols`` of ``px`` (one fit on ``H``), each with
    its rows ``e_rows`` (len(cols), p): ``(dist, ok)``."""
    glm = block.glm
    Hinv = linalg.cho_solve(factor, np.eye(block.theta.size), check_finite=False)
    F, H, theta, reg0, Hinv = (v[None] for v in (glm.features[H], H, block.theta, block.regularizer_gradient, Hinv))
    targets = [v[None] for v in (px["rows"][cols], px["xi"][cols], px["h"][cols], px["u0"][cols], e_rows)]
    dist, ok = _refine_targets(glm, F, H, P, theta, reg0, Hinv, *targets, whitener, block.index)
    return dist[0], ok[0]


def certifiable(blocks, newton, whitener):
    """Whether the Newton engine's distances of these blocks can be certified: one
    generalised-linear block whose loss declares its self-concordance constant
    (:mod:`.certify`), one block of several margins per row that declares its constant and
    its regulariser (:mod:`.multi_certify`), or generalised-linear blocks (one or one per class)
    whose losses declare a Lipschitz, non-decreasing derivative (:mod:`.hinge_certify`); and a
    noise shape with no zero-scale coordinate."""
    if not newton or not blocks or whitener.zero.any():
        return False
    if all(b.glm is not None and b.glm.gsc is None and b.glm.lipschitz is not None for b in blocks):
        return True  # strongly convex, one block or a stack that separates (hinge_certify.py)
    if len(blocks) != 1:
        return False
    glm, multi = blocks[0].glm, blocks[0].multi
    if glm is not None:  # self-concordant (certify.py)
        return glm.gsc is not None
    return multi is not None and multi.gsc is not None and multi.penalty is not None


def _strong_stack(blocks, factors, fitter, H, whitener):
    """The :class:`~.hinge_certify.StrongCertifier` of one fit of several strongly convex
    blocks (one against the rest)."""
    return strong_certifier([(b.glm, b.theta, fitter.regulariser_hessian(b, H),
                              linalg.cho_solve(f, np.eye(b.theta.size), check_finite=False), np.asarray(H), b.index)
                             for b, f in zip(blocks, factors)], whitener)


def _certifier(block, hinv, fitter, H, whitener, prep=None, certify=True, fill=None):
    """The fit's :class:`~.pair_certifier.PairCertifier` (a
    :class:`~.hinge_certify.StrongCertifier` for a loss that declares no self-concordance
    constant but a Lipschitz derivative, the squared hinge). ``prep`` = (H side, target side) of
    :func:`_prepare`: the rows' quantities the engine computed, all summed at once; without
    it the H side's scalars are computed here and the row sums filled as the rows come.
    ``certify``: ``True`` or a :class:`~.lazy.Tighten` (the targets tightened past stage 1).
    ``prep`` = (H side,) gives the H side's scalars and sums its rows (with ``fill``, only
    those at the positions ``fill``: the rows the pairs draw as e); the targets' rows are then
    filled as they come."""
    P = fitter.regulariser_hessian(block, H)
    if block.glm.gsc is None:  # the squared hinge: strong convexity (hinge_certify.py)
        return make_certifier(block.glm, block.theta, None, P, hinv, np.asarray(H), None, whitener, block.index)
    residual = gradient_sum(block, H) + block.regularizer_gradient
    if prep is None:
        rows = fit_row_scalars(block.glm, block.theta, H, hinv, lambda V: whitener.apply(V, block.index))
    else:
        rows = (prep[0]["h"], _norms(prep[0]), prep[0]["d2"])
    cert = make_certifier(block.glm, block.theta, block.regularizer_gradient, P, hinv, np.asarray(H),
                          residual, whitener, block.index, cache=exact_cache(fitter), rows=rows,
                          targets=tightened(certify))
    if prep is not None:
        for side in prep:
            at = slice(None) if fill is None else fill
            cert.sums.fill(side["rows"][at], side["xi"][at], side["h"][at])
    return cert


def _glm_prep(glm, rows, hinv, whitener, index):
    """:func:`_glm_rows` for ``rows`` (any shape) of a generalised-linear block."""
    feats = glm.features[rows]
    return _glm_rows(feats, feats @ hinv, glm.margins[rows], rows, glm, whitener, index)


def _streamed_pairs(block, factor, fitter, H, targets, pos, whitener, certify, refine, keep=False):
    """Distances (T, p) of the sampled pairs of one fit of one generalised-linear block, and
    with ``keep`` (lazy certification of a self-concordant loss) the :class:`~.kept.KeptPairs`
    of each chunk of targets (else ``None``), for the next pass.

    The per-row quantities of the targets and of their sampled e (positions ``pos`` in
    ``H``) are formed a chunk of targets at a time, so the fit's memory is O(chunk D) and
    the rows' scalars, not O(n D): the same arithmetic as :func:`_prepare` on all rows.
    """
    glm, index = block.glm, block.index
    hinv = linalg.cho_solve(factor, np.eye(block.theta.size), check_finite=False)
    chunks = [] if keep and glm.gsc is not None else None
    # The rows of H once (O(k D) memory, as the fit itself): each e side is a gather of them,
    # and the certificate's scalars of H are theirs.
    ph = _glm_prep(glm, H, hinv, whitener, index)
    # Row sums only of the rows drawn as e: the pairs read no others.
    cert = (_certifier(block, hinv, fitter, H, whitener, prep=(ph,), certify=certify, fill=np.unique(pos))
            if certify or chunks is not None else None)
    T, p = pos.shape
    dist = np.empty((T, p))
    width = max(1, _GATHER_ELEMENTS // (p * glm.features.shape[1]))
    for a in range(0, T, width):
        c = slice(a, a + width)
        px = _glm_prep(glm, targets[c], hinv, whitener, index)
        pe = _take(ph, pos[c], _E_KEYS)
        if cert is not None:
            cert.sums.fill(px["rows"], px["xi"], px["h"])
        side = (pe, {key: px[key][:, None] for key in _X_KEYS}, glm)
        if chunks is not None:
            d, bound, c_e, c_x, _ = _closed_form_matched(cert, side, whitener)
            chunks.append(kept_pairs(cert, d, bound, targets[c], pe["rows"], c_e, c_x))
            dist[c] = pass_values(chunks[-1], certify)
        elif cert is not None:
            dist[c] = _certified_matched(cert, side, whitener)
        else:
            dist[c] = _matched_distances([side], whitener, True)
    if chunks is not None:
        cert.release_closed_form()  # every pair has its closed form: kept for the later stages only
    n_refine = _n_refine(refine if cert is None else 0.0, T)
    if n_refine:
        top = np.argsort(-dist.mean(axis=1))[:n_refine]
        px = _glm_prep(glm, targets[top], hinv, whitener, index)
        P = fitter.regulariser_hessian(block, H)
        better, ok = _refine_fit(block, factor, P, H, px, np.arange(top.size), H[pos[top]], whitener)
        dist[top[ok]] = better[ok]
    return dist, chunks


def exact_cache(fitter):
    """The job's exact minimisers by training set, kept on the fitter (:mod:`.certify`)."""
    return fitter.__dict__.setdefault("_certified_minimisers", {})


def _norms(prep):
    return np.linalg.norm(prep["U"], axis=-1)


def _influence_round(fitter, loss, Xd, y, sample_weight, n, k, seed, p, whitener, all_pairs,
                     n_keep, newton, refine, certify=False, cover=None, keep=None):
    """Distances of one round, shape (n, n_keep): every row is the target of one fit.

    ``fitter(rows)`` returns ``(fitted, theta)`` for the learner on ``rows``. With sampled
    pairs each target gets ``p`` values of e drawn independently and uniformly in its
    D_out (with replacement: each value is then an unbiased draw of the average over e),
    computed in one vectorised pass over all (target, e) pairs of the fit. A fit set that
    lacks a class of a classifier's ``y`` (``cover``) is not fitted: its pairs score 0.
    ``keep`` (:class:`~.kept.KeptBatches`): the streamed fits' pairs before the later stages
    are kept for the next pass of lazy certification, or taken from it (not fitted again).
    """
    rng, fit_sets, owner = _round_design(seed, n, k)
    keep = keep if certify or not refine else None  # refined estimates are not kept
    out = np.empty((n, n_keep))
    for j, H in enumerate(fit_sets):
        if not _usable(H, cover):
            targets = np.flatnonzero(owner == j)
            if targets.size and not all_pairs:
                rng.integers(0, k, size=(targets.size, p))  # the draws of e a fit would take
            out[targets] = 0.0
            continue
        kept = None if keep is None else keep.get((seed, j))
        if kept is not None:  # kept by an earlier pass (kept.py): its draws of e, then its values
            targets = np.flatnonzero(owner == j)
            rng.integers(0, k, size=(targets.size, p))
            out[targets] = _jensen_summary(np.concatenate([pass_values(c, certify) for c in kept[0]]), n_keep)
            _check_solver_error(kept[1], out[targets], k)
            continue
        fitted, theta = fitter(H)
        if theta.size != whitener.size:  # e.g. a classifier fitted on a subset lacking a class
            raise ValueError(
                f"{_OWNER}: the fit on {H.size} of {n} rows has {theta.size} parameters but the "
                f"noise shape has {whitener.size}; the layout must not depend on the subset."
            )
        blocks = loss.blocks(fitted, Xd, y, H, sample_weight)
        del fitted
        targets = np.flatnonzero(owner == j)
        multi = newton and blocks[0].multi is not None  # K margins per row: multinomial.py
        # Sampled pairs of one generalised-linear block (the default): streamed by chunks.
        stream = newton and not all_pairs and not multi and len(blocks) == 1 and blocks[0].glm is not None
        preps, factors, solver_error = _block_steps(blocks, theta.size, H, targets, whitener, newton,
                                                    prepare=not multi and not stream)
        del theta
        if multi:  # --- hook: the target-exact engine with K margins (multinomial.py) ---
            # The same draws of e as the one-margin engines: p positions in H per target.
            pos = None if all_pairs else rng.integers(0, k, size=(targets.size, p))
            dist = _multi_margin_distances(blocks[0], factors[-1], H, targets, pos, whitener, bool(certify))
            out[targets] = _jensen_summary(dist, n_keep)
        elif stream:
            if targets.size:
                pos = rng.integers(0, k, size=(targets.size, p))  # positions in H of each target's e
                dist, chunks = _streamed_pairs(blocks[0], factors[0], fitter, H, targets, pos, whitener, certify,
                                               refine, keep is not None)
                out[targets] = _jensen_summary(dist, n_keep)
                if chunks:
                    keep.share(blocks[0].glm.features, exact_cache(fitter))
                    keep.put((seed, j), (chunks, solver_error))
        else:
            _prepared_pairs(out, rng, fitter, blocks, preps, factors, H, targets, k, p, n_keep, Xd, whitener,
                            all_pairs, newton, refine, certify)
        _check_solver_error(solver_error, out[targets], k)
    return out


def _block_steps(blocks, n_params, H, targets, whitener, newton, prepare):
    """``(preps, factors, solver_error)`` of one fit: each block's Hessian factor; with
    ``prepare``, each block's (H side, target side, glm) of :func:`_prepare`; and the
    whitened norm of the solver's step to the modelled minimiser (zero-scale coordinates,
    which carry no noise, left out), for :func:`_check_solver_error`."""
    preps, factors = [], []
    step = np.zeros(n_params)
    for b in blocks:
        factor = _factor(b)
        factors.append(factor)
        step[b.index] = _solver_step(b, factor, H)
        if prepare:
            preps.append((_prepare(b, factor, H, whitener, newton), _prepare(b, factor, targets, whitener, newton), b.glm))
    # Zero-scale coordinates are left out of the solver check (they carry no noise).
    step[whitener.zero] = 0.0
    return preps, factors, float(whitener.norms(step))


def _prepared_pairs(out, rng, fitter, blocks, preps, factors, H, targets, k, p, n_keep, Xd, whitener, all_pairs,
                    newton, refine, certify):
    """Fill ``out[targets]`` from the prepared rows of one fit: every pair (``all_pairs``),
    certified or refined where asked, or ``p`` sampled pairs per target."""
    # Certified distances replace the (uncertified) refinement of the most exposed targets.
    cert = None
    if certify and len(blocks) > 1:  # one strongly convex block per class (hinge_certify.py)
        cert = _strong_stack(blocks, factors, fitter, H, whitener)
    elif certify:
        cert = _certifier(blocks[0], linalg.cho_solve(factors[0], np.eye(blocks[0].theta.size), check_finite=False),
                          fitter, H, whitener, preps[0][:2], certify)
    # Refining the most exposed targets needs one generalised-linear block.
    n_refine = _n_refine(refine if (newton and len(blocks) == 1 and cert is None) else 0.0, targets.size)
    P = fitter.regulariser_hessian(blocks[0], H) if n_refine else None
    if all_pairs:
        _all_pairs(out, blocks, preps, factors, cert, P, n_refine, H, targets, k, n_keep, whitener, newton)
    elif targets.size:
        out[targets] = _sampled_pairs(rng, preps, targets, k, p, n_keep, Xd, whitener, newton, cert)


def _all_pairs(out, blocks, preps, factors, cert, P, n_refine, H, targets, k, n_keep, whitener, newton):
    """Every pair of one fit, a chunk of targets at a time so that each (k x chunk) cross
    matrix stays small; certified (``cert``) or refined (``n_refine``) where asked."""
    width = max(1, _CHUNK_ELEMENTS // k)
    for start in range(0, targets.size, width):
        chunk = np.arange(start, min(start + width, targets.size))
        if cert is not None:
            sides = [(pe, _take(px, chunk), glm) for pe, px, glm in preps]
            out[targets[chunk]] = _jensen_summary(_certified_pairs(cert, sides, whitener, True).T, n_keep)
            continue
        terms = []
        for pe, px, glm in preps:
            pxc = _take(px, chunk)
            terms.append((pe, pxc) + _pair_coefficients(pe, pxc, glm, newton, cross=True))
        dist = np.sqrt(_assemble_sq(terms, True, whitener.diagonal))
        if n_refine:
            cols = np.argsort(-dist.mean(axis=0))[:n_refine]
            better, ok = _refine_fit(blocks[0], factors[0], P, H, preps[0][1], chunk[cols],
                                     np.broadcast_to(H, (cols.size, k)), whitener)
            dist[:, cols[ok]] = better[ok].T
        out[targets[chunk]] = _jensen_summary(dist.T, n_keep)


def _sampled_pairs(rng, preps, targets, k, p, n_keep, Xd, whitener, newton, cert=None):
    """The Jensen summary (T, n_keep) of ``p`` pairs per target, e drawn uniformly in H;
    certified by ``cert`` where given (one strongly convex block per class).

    (Several blocks or first order: one generalised-linear block is streamed by
    :func:`_streamed_pairs`, and certified or refined there.)
    """
    T = targets.size
    pos = rng.integers(0, k, size=(T, p))  # positions in H of each target's e
    dist = np.empty((T, p))
    # e-side (chunk, p, .) gathered, in chunks that stay in cache; target side
    # (chunk, 1, .) broadcast, not copied.
    width = max(1, _GATHER_ELEMENTS // (p * Xd.shape[1]))
    for c in (slice(a, a + width) for a in range(0, T, width)):
        sides = [(_take(pe, pos[c], _E_KEYS), {key: value[c, None] for key, value in px.items() if key in _X_KEYS},
                  glm) for pe, px, glm in preps]
        if cert is not None:
            dist[c] = _certified_pairs(cert, sides, whitener, False)
        else:
            dist[c] = _matched_distances(sides, whitener, newton)
    return _jensen_summary(dist, n_keep)
