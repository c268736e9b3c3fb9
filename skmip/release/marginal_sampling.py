"""From noisy marginal tables to records: consistent tables, then a sampler along the tables.

Everything here is post-processing of the released noisy tables (Izzo et al., Theorem 3):
:func:`_consistent_tables` makes them non-negative and mutually consistent, and the sampler
draws records table by table along a forest of the marginals (:func:`_sampling_plan`,
:func:`_draw_codes`, in the spirit of MST, McKenna et al. 2021). When the marginals close
cycles, candidate records are weighted to fit every noisy table (:func:`_fit_weights`),
resampled (:func:`_systematic_resample`) and rounded towards the weighted tables
(:func:`_round_counts`). :class:`~skmip.release.marginals.MIPMarginalSynthesizer` and
:class:`~skmip.release.marginals.DPMarginalSynthesizer` share them.
"""

from __future__ import annotations

import math

import numpy as np

_IPF_ITERATIONS = 50

def _sampling_plan(owner, marginals):
    """``(plan, extra)``: order of the marginals the sampler draws from, and the rest.

    Greedy: next, the marginal with the most columns already drawn among those that bring
    a new one. Each table then gives the conditional law of its new columns given the
    columns it shares with those already drawn (a forest of pairs: a tree-shaped model as in
    MST; triples sharing a label column: a tree-augmented naive Bayes model). A marginal
    that brings no new column closes a cycle, which a one-pass sampler cannot honour: it is
    returned in ``extra`` (indices), and :meth:`_MarginalSynthesizer.sample` honours it by
    reweighting the drawn records (:func:`_fit_weights`).
    """
    done, plan, extra, left = set(), [], [], list(range(len(marginals)))
    while left:
        best = max(left, key=lambda i: (len(set(marginals[i]) & done) if set(marginals[i]) - done else -1, -i))
        new = [j for j in marginals[best] if j not in done]
        left.remove(best)
        if not new:
            extra.append(best)
            continue
        plan.append((best, new))
        done |= set(new)
    return plan, sorted(extra)


# ----------------------------------------------------------------------------- post-processing
def _fit_margins(T, margins):
    """Iterative proportional fitting of a non-negative table to its 1-way margins."""
    for _ in range(_IPF_ITERATIONS):
        for axis, target in enumerate(margins):
            other = tuple(a for a in range(T.ndim) if a != axis)
            current = T.sum(axis=other)
            factor = np.divide(target, current, out=np.zeros_like(target), where=current > 0)
            T = T * np.expand_dims(factor, other)
    total = T.sum()
    if total > 0:
        return T / total
    out = margins[0]
    for p in margins[1:]:
        out = np.multiply.outer(out, p)
    return out


def _simplex(v):
    """Euclidean projection onto the probability simplex (Duchi et al. 2008, Fig. 1)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    rho = np.nonzero(u - css / np.arange(1, v.size + 1) > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1.0), 0.0)


def _consistent_tables(marginals, noisy, sizes):
    """Non-negative tables summing to 1 whose 1-way margins agree column by column.

    Every cell carries noise of one variance, so a column's 1-way law estimated from a table
    by summing over the other column has variance proportional to the number of cells
    summed: the consensus is the inverse-variance average over all tables that contain the
    column, projected onto the simplex. Each 2-way table is then moved to these margins by
    the least-squares correction ``T + (r - T 1) 1^T / b + 1 (c - 1^T T) / a - (1 - sum T) / (ab)``,
    clipped at zero and brought back to the margins by iterative proportional fitting.
    Everything here is post-processing of the noisy tables (Izzo et al., Theorem 3).
    """
    one_way = []
    for j, size in enumerate(sizes):
        num, den = np.zeros(size), 0.0
        for m, table in zip(marginals, noisy):
            if j not in m:
                continue
            axis = m.index(j)
            est = table.sum(axis=tuple(a for a in range(table.ndim) if a != axis))
            n_summed = table.size // table.shape[axis]
            num, den = num + est / n_summed, den + 1.0 / n_summed
        one_way.append(_simplex(num / den))
    tables = []
    for m, table in zip(marginals, noisy):
        if len(m) == 1:
            tables.append(one_way[m[0]].copy())
            continue
        if len(m) > 2:
            tables.append(_fit_margins(np.maximum(table, 0.0), [one_way[j] for j in m]))
            continue
        r, c = one_way[m[0]], one_way[m[1]]
        a, b = table.shape
        T = (table + (r - table.sum(1))[:, None] / b + (c - table.sum(0))[None, :] / a
             - (1.0 - table.sum()) / (a * b))
        tables.append(_fit_margins(np.maximum(T, 0.0), [r, c]))
    return tables, one_way


def _draw_codes(plan, marginals, tables, one_way, sizes, n_samples, rng):
    """Codes of ``n_samples`` records drawn table by table along ``plan`` (:func:`_sampling_plan`)."""
    codes = np.full((n_samples, len(sizes)), -1, dtype=np.int64)
    for index, new in plan:
        m, table = marginals[index], tables[index]
        old = [j for j in m if j not in new]
        # Axes: the columns already drawn first, then the new ones (flattened).
        moved = np.moveaxis(table, [m.index(j) for j in old], list(range(len(old))))
        flat = moved.reshape(moved.shape[: len(old)] + (-1,))
        cond = flat[tuple(codes[:, j] for j in old)] if old else np.broadcast_to(flat, (n_samples, flat.size))
        mass = cond.sum(axis=1, keepdims=True)
        fallback = one_way[new[0]]
        for j in new[1:]:
            fallback = np.outer(fallback, one_way[j]).ravel()
        cond = np.where(mass > 0, cond / np.where(mass > 0, mass, 1.0), fallback)
        drawn = np.unravel_index(_draw(rng, cond), tuple(sizes[j] for j in new))
        for j, values in zip(new, drawn):
            codes[:, j] = values
    return codes


def _draw(rng, probs):
    """One category per row of ``probs`` (rows sum to 1) by inverse CDF."""
    cdf = np.cumsum(probs, axis=1)
    u = rng.random((probs.shape[0], 1)) * cdf[:, -1:]
    return np.minimum((u > cdf).sum(axis=1), probs.shape[1] - 1)


#: Candidate records drawn per requested record when the marginals close cycles.
_CANDIDATES = 5
_MIN_CANDIDATES = 10_000
#: Mirror-descent steps of the least-squares fit of the candidates' weights.
_FIT_ITERATIONS = 150


def _fit_weights(candidates, marginals, noisy, iterations=None):
    """Weights on candidate records whose marginals fit the noisy tables in least squares.

    Minimises ``sum_i ||A_i w - y_i||^2`` over the probability simplex, ``A_i w`` the
    weighted cell fractions of the candidates in marginal ``i`` and ``y_i`` its noisy table
    (negative cells and all): the least-squares estimation of Private-PGM (McKenna, Sheldon
    & Miklau 2019), with the distribution restricted to the candidates' support instead of a
    graphical model. Every cell carries noise of one variance, so this is the maximum
    likelihood estimate on that support. Solved by entropic mirror descent (multiplicative
    updates, exponentiated gradient) with a step halved until the loss decreases and doubled
    after each step. Uses the noisy tables only: post-processing (Izzo et al., Theorem 3).
    """
    iterations = _FIT_ITERATIONS if iterations is None else iterations
    cells = [np.ravel_multi_index(tuple(candidates[:, j] for j in m), t.shape) for m, t in zip(marginals, noisy)]
    targets = [np.asarray(t, dtype=np.float64).ravel() for t in noisy]
    n = candidates.shape[0]

    def loss_grad(w):
        loss, grad = 0.0, np.zeros(n)
        for cell, y in zip(cells, targets):
            r = np.bincount(cell, weights=w, minlength=y.size) - y
            loss += float(r @ r)
            grad += 2.0 * r[cell]
        return loss, grad

    log_w = np.full(n, -math.log(n))
    w = np.exp(log_w)
    loss, grad = loss_grad(w)
    step = 1.0
    for _ in range(iterations):
        while True:
            z = log_w - step * grad
            z -= z.max()
            z -= math.log(np.exp(z).sum())
            w_new = np.exp(z)
            loss_new, grad_new = loss_grad(w_new)
            if loss_new <= loss or step < 1e-12:
                break
            step *= 0.5
        if loss_new > loss:
            break
        log_w, w, loss, grad = z, w_new, loss_new, grad_new
        step *= 2.0
    return w


def _systematic_resample(candidates, weights, n_samples, rng):
    """Indices of ``n_samples`` draws with probabilities ``weights`` by stratified systematic resampling.

    The candidates are sorted lexicographically by their codes and cut by ``n_samples``
    evenly spaced points with one uniform offset (Kitagawa 1996): each candidate is drawn
    ``floor`` or ``ceil`` of ``n_samples * weight`` times, and every group of records that
    agree on the leading columns gets its expected number of draws within one, so the
    samples' marginals vary less than with independent draws. The draws are returned in a
    random order.
    """
    order = np.lexsort(candidates.T[::-1])
    cdf = np.cumsum(weights[order])
    points = (rng.random() + np.arange(n_samples)) / n_samples * cdf[-1]
    drawn = order[np.minimum(np.searchsorted(cdf, points, side="right"), weights.size - 1)]
    return drawn[rng.permutation(n_samples)]


#: Rounds of the local search that brings the drawn counts' marginals to the weighted candidates'.
_ROUND_ITERATIONS = 200
#: Most tables the rounding matches: every pair of columns while that fits, else the released ones.
_ROUND_MAX_TABLES = 200


def _rounding_marginals(marginals, n_columns):
    """Marginals whose weighted-candidate tables :func:`_round_counts` matches.

    The released marginals, plus every other pair of columns while that makes at most
    ``_ROUND_MAX_TABLES`` tables: the samples then keep the weighted candidates' 2-way laws
    (which the evaluation of issue 22 scores), not only those of the released tables.
    """
    tables = [tuple(m) for m in marginals]
    seen = {frozenset(m) for m in tables}
    pairs = [(a, b) for a in range(n_columns) for b in range(a + 1, n_columns) if frozenset((a, b)) not in seen]
    return tables + pairs if len(tables) + len(pairs) <= _ROUND_MAX_TABLES else tables


def _round_counts(candidates, weights, drawn, marginals, shapes, iterations=None):
    """Improve a draw so that its marginals match the weighted candidates' (a rounding step).

    ``drawn`` (indices into ``candidates``, e.g. from :func:`_systematic_resample`) gives
    integer counts ``c`` with ``sum(c) = n``; this minimises ``sum_i ||A_i c / n - A_i w||^2``
    (``A_i`` the cell indicator of marginal ``i``, ``w`` the weights) over such counts by a
    greedy exchange: each round, every candidate is scored by its summed residual over its
    cells (the gradient), one copy of each of the ``k`` most over-represented drawn
    candidates is traded for one copy of each of the ``k`` most under-represented
    candidates, and the trade is kept only when the loss falls. ``k`` starts at ``n/100``,
    doubles (up to that) after a kept trade and halves after a rejected one; the search
    stops when a trade with ``k = 1`` is rejected or after ``iterations`` rounds. The loss never rises. Deterministic given
    ``drawn``, and uses the release only through ``w``: post-processing (Theorem 3).
    """
    iterations = _ROUND_ITERATIONS if iterations is None else iterations
    n, n_cand = drawn.size, candidates.shape[0]
    cells = [np.ravel_multi_index(tuple(candidates[:, j] for j in m), s) for m, s in zip(marginals, shapes)]
    sizes = [int(np.prod(s)) for s in shapes]
    targets = [np.bincount(c, weights=weights, minlength=m) / weights.sum() for c, m in zip(cells, sizes)]
    counts = np.bincount(drawn, minlength=n_cand).astype(np.float64)

    def residuals(cnt):
        return [np.bincount(c, weights=cnt, minlength=m) / n - t for c, m, t in zip(cells, sizes, targets)]

    res = residuals(counts)
    loss = sum(float(r @ r) for r in res)
    k = max(1, n // 100)
    for _ in range(iterations):
        score = sum(r[c] for r, c in zip(res, cells))
        present = np.flatnonzero(counts)
        kk = min(k, present.size, n_cand)
        out = present[np.argsort(-score[present], kind="stable")[:kk]]
        inn = np.argsort(score, kind="stable")[:kk]
        keep = score[out] > score[inn]
        if not keep.any():
            break
        trial = counts.copy()
        np.subtract.at(trial, out[keep], 1.0)
        np.add.at(trial, inn[keep], 1.0)
        res_new = residuals(trial)
        loss_new = sum(float(r @ r) for r in res_new)
        if loss_new < loss:
            counts, res, loss = trial, res_new, loss_new
            k = min(2 * k, max(1, n // 100))
        elif k == 1:
            break
        else:
            k //= 2
    return np.repeat(np.arange(n_cand), counts.astype(np.int64))
