r"""The ``"newton"`` engine's rounds as stacked arrays: the fits of a chunk of rounds at once.

On small problems (a few hundred rows, tens of parameters) a round of the per-fit path
(:func:`_influence_round`) is thousands of numpy and scipy calls on tiny matrices, and
their fixed cost, not the arithmetic, is the time. Here the fits of a chunk of rounds go
through each step together:

1. the warm-started Newton fits, :meth:`MinimiserFits.vectors` (a stack of row sets);
2. for every fit :math:`b`, the Hessian :math:`\mathbf{H}_b = \sum_{i \in H_b}
   \ell''_i(u_i) x_i x_i^\top + P` at its minimiser :math:`\theta_b`, its Cholesky factor,
   the solver check's Newton step :math:`\mathbf{H}_b^{-1}\nabla F_{H_b}(\theta_b)`,
   :math:`\xi_{b,i} = \mathbf{H}_b^{-1}x_i` and the leverages of every row, and the other
   per-row quantities (:func:`_glm_rows`: whitened, the loss derivatives) of the rows its
   pairs read;
3. the target-exact distances of the sampled pairs of every fit, one flat list of
   (fit, target) pairs (:func:`_matched_distances`);
4. the refinement of every fit's most exposed targets, one (fits x targets) grid
   (:func:`_refine_targets`), and the Jensen summary.

The formulas are the per-fit path's, shared, and so are the random draws (per round
:func:`_round_design`, then per fit the positions of its targets' e), so the distances
agree to rounding. The batch applies in the default case: the ``"newton"`` engine with
sampled pairs, polished fits warm-started from a template (:class:`MinimiserFits`) with one
generalised-linear block, small enough that Newton's method runs from the start
(:math:`kD^2` up to ``_CHORD_MIN_WORK``; beyond that the arithmetic dominates and the
per-fit path loses nothing). The fits use the template's objective (as
:meth:`MinimiserFits._chord` does); the registered loss is checked to give that same
objective on the first fit of every batch, else the chunk runs fit by fit. A fit the
stacked iteration does not converge is redone by :class:`MinimiserFits`'s fallbacks; a
target whose refinement does not converge keeps its one-step value, as in the per-fit path.
"""

from __future__ import annotations

import copy

import numpy as np

from skmip.calibration.swap.kept import kept_pairs, pass_values
from skmip.calibration.swap.lazy import tightened
from skmip.calibration.swap.pair_certifier import make_certifier
from skmip.calibration.swap.stacked_certifier import StackCertifier
from skmip.calibration.swap.influence import (
    _E_KEYS,
    _X_KEYS,
    _certified_matched,
    _closed_form_matched,
    _glm_rows,
    exact_cache,
    _influence_round,
    _matched_distances,
)
from skmip.calibration.swap.newton import _REFINE_MAX, _n_refine, _refine_targets
from skmip.calibration.swap.polish import (
    _CHORD_MIN_WORK,
    _STACK_ELEMENTS,
    MinimiserFits,
    _check_solver_error,
    _not_convex,
)
from skmip.calibration.swap.rounds import _jensen_summary, _round_design, _usable
from skmip.calibration.swap.stacks import _cho_inverse, _cholesky, _data_hessian

#: False forces the per-fit path everywhere (the tests compare the two).
_ENABLED = True


def _influence_rounds(seeds, fitter, loss, Xd, y, sample_weight, n, k, p, whitener, all_pairs,
                      n_keep, newton, refine, certify=False, cover=None, keep=None):
    """Several rounds in one job (shape (n, len(seeds), n_keep)): fewer, larger jobs. All
    their fits at once where the batch applies (module docstring), else round by round.
    ``certify``: certified upper bounds instead of estimates (:mod:`.certify`); ``cover``: the
    classes of a classifier's ``y`` (a fit set lacking one scores 0, :mod:`..class_cover`);
    ``keep``: the batches kept between the passes of lazy certification (:mod:`.kept`)."""
    # A cache of exact minimisers of this job's own (exact_cache): jobs that share the
    # fitter (threads) must not see each other's, or a result would depend on their timing.
    fitter = copy.copy(fitter)
    fitter.__dict__["_certified_minimisers"] = {}
    data = (fitter, loss, Xd, y, sample_weight, n, k)
    out = None
    if _batchable(fitter, newton, all_pairs, k):
        out = _batched_rounds(seeds, *data, p, whitener, n_keep, refine, certify, cover, keep)
    if out is None:
        out = np.empty((n, len(seeds), n_keep))
        for i, seed in enumerate(seeds):
            out[:, i] = _influence_round(*data, seed, p, whitener, all_pairs, n_keep, newton, refine, certify,
                                         cover, keep)
    # Computed with the rounded whitening: upper bounds in the exact one (whitening.py).
    return whitener.outward(out)


def _batchable(fitter, newton, all_pairs, k):
    chord = getattr(fitter, "chord", None)
    return bool(_ENABLED and newton and not all_pairs and isinstance(fitter, MinimiserFits)
                and chord is not None and len(chord) == 1
                and k * chord[0][0].size ** 2 <= _CHORD_MIN_WORK)


def _fit_design(seeds, n, k, p, cover=None):
    """The fits of the rounds ``seeds``, drawn as in :func:`_influence_round`: (round, H,
    targets, positions in H of each target's e) for every fit that has targets, and (round,
    targets) of each fit set that lacks a class (its pairs score 0)."""
    fits, unfitted = [], []
    for r, seed in enumerate(seeds):
        rng, fit_sets, owner = _round_design(seed, n, k)
        for j, H in enumerate(fit_sets):
            targets = np.flatnonzero(owner == j)
            if targets.size:
                pos = rng.integers(0, k, size=(targets.size, p))
                if _usable(H, cover):
                    fits.append((r, H, targets, pos))
                else:
                    unfitted.append((r, targets))
    return fits, unfitted


def _batched_rounds(seeds, fitter, loss, Xd, y, sample_weight, n, k, p, whitener, n_keep, refine, certify,
                    cover=None, keep=None):
    """:func:`_influence_rounds` in batches of fits; ``None`` if the registered loss does not
    give the template's objective (the caller then runs the per-fit path). A batch is kept
    (``keep``) under its rounds' seeds and its place among them."""
    fits, unfitted = _fit_design(seeds, n, k, p, cover)
    out = np.empty((n, len(seeds), n_keep))
    for r, targets in unfitted:
        out[targets, r] = 0.0
    if not fits:
        return out
    # Per fit: its rows' quantities (n, D), the refinement grid (q k, D), the pairs (T p, D).
    D = fitter.chord[0][0].size
    width = max(1, _STACK_ELEMENTS // (D * max(n, _REFINE_MAX * k, max(f[2].size for f in fits) * p)))
    for start in range(0, len(fits), width):
        # Estimates refined past the closed form are not kept (no pass of lazy takes them).
        store = keep if certify or not refine else None
        if not _batch(fits[start:start + width], fitter, loss, Xd, y, sample_weight, n, k, whitener,
                      n_keep, refine, out, certify, store, (tuple(seeds), start)):
            return None
    return out


def _batch(fits, fitter, loss, Xd, y, sample_weight, n, k, whitener, n_keep, refine, out, certify, keep=None,
           key=None):
    """The fits ``fits`` (of :func:`_fit_design`) at once; their summaries into ``out``.
    Returns False, with nothing written, if the loss disagrees with the template's objective.
    ``keep`` (a :class:`~.kept.KeptBatches`): the batch's fits, row sums and closed-form bounds
    are taken from it under ``key`` if there, else computed and kept, so that a pass of lazy
    certification adds only the later stages of the targets it tightens."""
    kept = keep.get(key) if keep is not None else None
    if kept is None:
        fitted = _fitted_batch(fits, fitter, loss, Xd, y, sample_weight, n, whitener)
        if fitted is None:
            return False
        if fitted["glm"].gsc is None or keep is None:
            _unkept_batch(fits, fitted, fitter, k, whitener, n_keep, refine, out, certify)
            return True
        kept = _certified_batch(fits, fitted, fitter, whitener)
        keep.share(fitted["glm"], fitted["P"], exact_cache(fitter))
        keep.put(key, kept)
    _write_batch(kept, certify, n_keep, k, out)
    return True


def _fitted_batch(fits, fitter, loss, Xd, y, sample_weight, n, whitener):
    """The fits of a batch, their Hessians, :math:`K^{-1}`, solver checks and per-row
    quantities, and every (fit, target) pair's rows (a dict); ``None`` if the registered loss
    does not give the template's objective."""
    index, _, P, r0, glm = fitter.chord[0]
    B = len(fits)
    H = np.stack([f[1] for f in fits])  # (B, k)
    thetas = fitter.vectors(H)
    theta = thetas[:, index]
    margins = theta @ glm.features.T  # (B, n)
    FH = glm.features[H]  # (B, k, D)
    mH = np.take_along_axis(margins, H, axis=1)
    hessian = _data_hessian(FH, glm.d2loss(mH, H)) + P
    reg0 = theta @ P + r0  # the regulariser's gradient at each fit
    if not _same_objective(fitter, loss, Xd, y, sample_weight, H[0], thetas[0], margins[0], hessian[0], reg0[0]):
        return None
    L, ok = _cholesky(hessian, np.ones(B, dtype=bool))
    if not ok.all():
        raise _not_convex()
    # The solver check: each fit's Newton step, zero-scale coordinates left out.
    grad = (np.swapaxes(FH, 1, 2) @ glm.dloss(mH, H)[..., None])[..., 0] + reg0
    Hinv = _cho_inverse(L)
    step = np.zeros((B, whitener.size))
    step[:, index] = (Hinv @ grad[..., None])[..., 0]
    step[:, whitener.zero] = 0.0
    xi = glm.features @ Hinv  # (B, n, D)
    h = (glm.features * xi).sum(-1)  # (B, n): each row's x_j' K^-1 x_j at each fit
    # Every (fit, target) pair of the batch in one list: fit b_of, target x, its e rows.
    sizes = np.array([f[2].size for f in fits])
    b_of = np.repeat(np.arange(B), sizes)[:, None] * n
    x = np.concatenate([f[2] for f in fits])
    e = np.concatenate([f[1][f[3]] for f in fits])
    # The pairs' per-row quantities (_glm_rows) from their own rows only: row j of fit b is
    # row b n + j of the flattened xi, margins and leverages (no (B, n, D) arrays beyond xi;
    # a row's leverage is the same sum of the same products in h as in _glm_rows).
    flat_xi, flat_m, flat_h = xi.reshape(B * n, -1), margins.ravel(), h.ravel()

    def pair_rows(rows, keys):
        at = b_of + rows
        feats = glm.features[rows] if "feats" in keys else None
        prep = _glm_rows(feats, flat_xi[at], flat_m[at], rows, glm, whitener, index, h=flat_h[at])
        return {key: prep[key] for key in keys}

    side = (pair_rows(e, _E_KEYS), pair_rows(x[:, None], _X_KEYS), glm)
    return dict(glm=glm, index=index, P=P, H=H, theta=theta, margins=margins, FH=FH, reg0=reg0, grad=grad,
                Hinv=Hinv, xi=xi, h=h, side=side, sizes=sizes, x=x, e=e,
                solver_error=whitener.norms(step))


def _certified_batch(fits, fitted, fitter, whitener):
    """``(pairs, rounds, sizes, solver_error)`` of a batch: its :class:`~.kept.KeptPairs` (the
    certifier, every pair's estimate and closed-form bound, each pair certified with its own
    fit's Hessian, residual and rows), each target's round in the chunk, each fit's count of
    targets and its own distance to its minimiser."""
    f = fitted
    cert = StackCertifier(f["glm"], f["theta"], f["reg0"], f["P"], f["Hinv"], f["H"], f["grad"], whitener,
                          f["index"], f["xi"], f["h"], cache=exact_cache(fitter), FH=f["FH"])
    fit = np.repeat(np.arange(len(fits)), f["sizes"])[:, None]
    dist, bound, c_e, c_x, _ = _closed_form_matched(cert, f["side"], whitener, fit=fit)
    cert.release_closed_form()
    rounds = np.repeat([b[0] for b in fits], f["sizes"])
    return kept_pairs(cert, dist, bound, f["x"], f["e"], c_e, c_x, fit), rounds, f["sizes"], f["solver_error"]


def _write_batch(kept, certify, n_keep, k, out):
    """The summaries of a batch (:func:`_certified_batch`) into ``out``: this pass's values
    (:func:`~.kept.pass_values`), checked against each fit's solver error."""
    pairs, rounds, sizes, solver_error = kept
    summary = _jensen_summary(pass_values(pairs, certify), n_keep)
    starts = np.cumsum(sizes) - sizes
    for b, a in enumerate(starts):
        _check_solver_error(solver_error[b], summary[a:a + sizes[b]], k)
    out[pairs.x, rounds] = summary


def _unkept_batch(fits, f, fitter, k, whitener, n_keep, refine, out, certify):
    """:func:`_batch` without a kept batch: the estimates, refined where asked, or the
    certified distances (a loss with no self-concordance constant, the squared hinge: its
    own certificate, fit by fit, make_certifier)."""
    glm, theta, H, sizes, side, e, x = f["glm"], f["theta"], f["H"], f["sizes"], f["side"], f["e"], f["x"]
    B = len(fits)
    starts = np.cumsum(sizes) - sizes
    if certify and glm.gsc is not None:
        # Each pair certified with its own fit's Hessian, residual and rows, all fits at once.
        cert = StackCertifier(glm, theta, f["reg0"], f["P"], f["Hinv"], H, f["grad"], whitener, f["index"], f["xi"],
                              f["h"], cache=exact_cache(fitter), targets=tightened(certify), FH=f["FH"])
        dist = _certified_matched(cert, side, whitener, fit=np.repeat(np.arange(B), sizes)[:, None])
        refine = 0.0  # refinement is not certified
    elif certify:
        dist = np.empty(e.shape)
        for b in range(B):
            part = slice(starts[b], starts[b] + sizes[b])
            cert = make_certifier(glm, theta[b], f["reg0"][b], f["P"], f["Hinv"][b], H[b], f["grad"][b], whitener,
                                  f["index"], cache=exact_cache(fitter), targets=tightened(certify))
            pe, px = ({key: value[part] for key, value in d.items()} for d in side[:2])
            dist[part] = _certified_matched(cert, (pe, px, glm), whitener)
        refine = 0.0  # refinement is not certified
    else:
        dist = _matched_distances([side], whitener, True)
    n_ref = [_n_refine(refine, size) for size in sizes]
    if max(n_ref):
        # The (fits x targets) grid of the most exposed targets; short rows repeat their first.
        q = max(n_ref)
        sel = np.empty((B, q), dtype=np.intp)
        for b in range(B):
            top = starts[b] + np.argsort(-dist[starts[b]:starts[b] + sizes[b]].mean(axis=1))[:n_ref[b]]
            sel[b] = np.r_[top, np.full(q - top.size, top[0])]
        valid = np.arange(q)[None, :] < np.array(n_ref)[:, None]
        xs, bq = x[sel], np.arange(B)[:, None]
        better, ok = _refine_targets(glm, f["FH"], H, f["P"], theta, f["reg0"], f["Hinv"], xs, f["xi"][bq, xs],
                                     f["h"][bq, xs], f["margins"][bq, xs], e[sel], whitener, f["index"])
        ok &= valid
        dist[sel[ok]] = better[ok]
    summary = _jensen_summary(dist, n_keep)
    for b in range(B):
        _check_solver_error(f["solver_error"][b], summary[starts[b]:starts[b] + sizes[b]], k)
    out[x, np.repeat([fit[0] for fit in fits], sizes)] = summary


def _same_objective(fitter, loss, Xd, y, sample_weight, H, theta, margins, hessian, reg0):
    """Whether the registered loss, at the fit ``theta`` on ``H``, has the margins, Hessian and
    regulariser gradient of the template's objective that the batch uses (to rounding)."""
    fitted = copy.deepcopy(fitter.template)
    fitter.adapter.set_vector(fitted, theta)
    blocks = loss.blocks(fitted, Xd, y, H, sample_weight)
    if len(blocks) != 1 or blocks[0].glm is None or not np.array_equal(blocks[0].index, fitter.chord[0][0]):
        return False
    block = blocks[0]

    def close(a, b):
        return np.allclose(a, b, rtol=1e-9, atol=1e-12 * max(1.0, float(np.abs(b).max())))

    return close(block.glm.margins, margins) and close(block.hessian, hessian) and close(
        block.regularizer_gradient, reg0)
