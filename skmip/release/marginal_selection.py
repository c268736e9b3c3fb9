"""Which marginal tables to release: the Chow-Liu tree, AIM's pair selection, the checks of a list.

Every choice here is a function of the whole dataset D only (Definition 1 of Izzo et al.
conditions on D), so it costs no privacy: :func:`chow_liu_tree` (the maximum spanning tree
of pairwise mutual information, optionally given a label column) and :func:`select_pairs`
(the pairs that tree models worst on D, relative to the noise their tables would carry).
:class:`~skmip.release.marginals.MIPMarginalSynthesizer` releases the chosen tables.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.typing import ArrayLike

from skmip.release.marginal_sampling import _consistent_tables, _draw_codes, _sampling_plan

__all__ = ["chow_liu_tree", "select_pairs"]


# ----------------------------------------------------------------------------- structure
def _mutual_information(a, b, na, nb):
    joint = np.bincount(a * nb + b, minlength=na * nb).reshape(na, nb) / a.size
    outer = joint.sum(1, keepdims=True) * joint.sum(0, keepdims=True)
    nz = joint > 0
    return float(np.sum(joint[nz] * np.log(joint[nz] / outer[nz])))


def _conditional_mutual_information(a, b, na, nb, given):
    """I(A; B | C) = sum_c P(c) I(A; B | C = c)."""
    total = 0.0
    for value in np.unique(given):
        rows = given == value
        total += rows.mean() * _mutual_information(a[rows], b[rows], na, nb)
    return total


def chow_liu_tree(codes: ArrayLike, given: int | None = None) -> list[tuple[int, int]]:
    """The maximum spanning tree of pairwise mutual information between categorical columns.

    The Chow-Liu tree (Chow & Liu 1968): among all tree-shaped models of the joint law, the
    one whose 2-way marginals are these edges is closest to the data in Kullback-Leibler
    divergence. With ``given`` the weights are the mutual informations conditional on that
    column, and the tree spans the other columns: the tree-augmented naive Bayes structure
    of Friedman, Geiger & Goldszmidt (1997), in which every column also depends on ``given``.

    Parameters
    ----------
    codes : array_like of int, shape (n_samples, n_columns)
        Category codes (``0 .. n_categories - 1`` per column).
    given : int, optional
        A column (e.g. the label) to condition on; it is left out of the tree.

    Returns
    -------
    list of (int, int)
        The edges ``(i, j)`` with ``i < j``, in the order Prim's algorithm adds them from
        the first column of the tree.

    References
    ----------
    C. Chow, C. Liu (1968), "Approximating discrete probability distributions with
    dependence trees", IEEE Trans. Information Theory 14(3).

    Examples
    --------
    >>> codes = np.array([[0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]])
    >>> chow_liu_tree(codes)
    [(0, 1), (0, 2)]
    """
    C = np.asarray(codes)
    c = C.shape[1]
    sizes = C.max(axis=0) + 1
    nodes = [j for j in range(c) if j != given]
    mi = np.zeros((c, c))
    for i in nodes:
        for j in nodes:
            if i < j:
                args = (C[:, i], C[:, j], sizes[i], sizes[j])
                mi[i, j] = mi[j, i] = (_mutual_information(*args) if given is None
                                       else _conditional_mutual_information(*args, C[:, given]))
    in_tree, edges = nodes[:1], []
    while len(in_tree) < len(nodes):
        out = [j for j in nodes if j not in in_tree]
        sub = mi[np.ix_(in_tree, out)]
        i, j = np.unravel_index(np.argmax(sub), sub.shape)
        a, b = in_tree[i], out[j]
        edges.append((min(a, b), max(a, b)))
        in_tree.append(b)
    return edges


#: ``marginals="select"``: a pair is measured when the tree's error on it exceeds this many
#: times the error the noise is expected to put on its table.
_SELECT_MARGIN = 0.3
#: Records drawn from the tree of D to estimate its 2-way laws (fixed seed: a function of D).
_SELECT_DRAWS = 200_000
#: Sweeps of proportional fitting that update the model after each chosen pair.
_SELECT_SWEEPS = 3


def _table(codes, m, sizes):
    shape = tuple(sizes[j] for j in m)
    cell = np.ravel_multi_index(tuple(codes[:, j] for j in m), shape)
    return (np.bincount(cell, minlength=int(np.prod(shape))) / codes.shape[0]).reshape(shape)


def select_pairs(codes: ArrayLike, base, *, eta: float, train_size: int, sizes=None) -> list[tuple[int, int]]:
    """Pairs of columns to measure beyond ``base``, chosen greedily on the whole dataset D.

    AIM's selection rule (McKenna et al. 2022) without its privacy cost: the model of the
    tables ``base`` (typically the Chow-Liu tree), fitted *without noise on D*, is compared
    with D on every pair of columns that no table of ``base`` contains; the pair where the
    model errs most (total variation) relative to the error the noise is expected to put on
    its table is measured next, as long as that error exceeds ``_SELECT_MARGIN`` times the
    noise's. The noise of ``m`` tables is estimated by the small-noise form of the coupling
    bound for a record that differs from all others on every table,
    ``s = min(q, 1-q) sqrt(m / pi) / (k eta)`` per cell, and its expected total variation on
    a table of ``C`` cells by ``C s / sqrt(2 pi)``: an approximation that only guides the
    choice; the released noise is then calibrated exactly over the chosen tables.

    The choice is a function of D alone (it never sees ``D_train``; its draws use a fixed
    seed): under Definition 1 it is fixed given D, like the tree, and costs no privacy.

    Parameters
    ----------
    codes : array_like of int, shape (n_samples, n_columns)
        Category codes of the whole dataset D.
    base : list of tuple of int
        The tables already measured (e.g. the label-conditioned Chow-Liu tree); they must
        admit a sampling plan that covers every column.
    eta : float
        The MIP level the noise will be calibrated to.
    train_size : int
        ``k``, the number of rows of ``D_train``.
    sizes : sequence of int, optional
        Number of categories per column (default: the largest code plus one).

    Returns
    -------
    list of (int, int)
        The chosen pairs, in the order chosen.

    References
    ----------
    R. McKenna, B. Mullins, D. Sheldon, G. Miklau (2022), "AIM: An Adaptive and Iterative
    Mechanism for Differentially Private Synthetic Data", PVLDB 15(11). Izzo et al.,
    Definition 1.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 20000)
    >>> b = a ^ (rng.random(20000) < 0.1)
    >>> c = a ^ b ^ (rng.random(20000) < 0.05)   # depends on the pair (a, b), on neither alone
    >>> select_pairs(np.c_[a, b, c], [(0, 1), (1, 2)], eta=0.1, train_size=10000)
    [(0, 2)]
    """
    C = np.asarray(codes, dtype=np.int64)
    n, c = C.shape
    sizes = list(C.max(axis=0) + 1) if sizes is None else list(sizes)
    base = [tuple(m) for m in base]
    plan, _ = _sampling_plan("select_pairs", base)
    exact = [_table(C, m, sizes) for m in base]
    tables, one_way = _consistent_tables(base, exact, sizes)
    model = _draw_codes(plan, base, tables, one_way, sizes, _SELECT_DRAWS, np.random.default_rng(0))
    weights = np.full(_SELECT_DRAWS, 1.0 / _SELECT_DRAWS)
    covered = {p for m in base for p in itertools.combinations(m, 2)}
    left = [p for p in itertools.combinations(range(c), 2) if p not in covered]
    model_cells = {p: model[:, p[0]] * sizes[p[1]] + model[:, p[1]] for p in left}
    data = {p: _table(C, p, sizes).ravel() for p in left}
    q = train_size / n
    chosen = []
    while left:
        s = min(q, 1.0 - q) * math.sqrt((len(base) + len(chosen) + 1) / math.pi) / (train_size * eta)
        excess = {}
        for p in left:
            fitted = np.bincount(model_cells[p], weights=weights, minlength=data[p].size)
            gap = 0.5 * float(np.abs(fitted - data[p]).sum())
            excess[p] = gap - _SELECT_MARGIN * data[p].size * s / math.sqrt(2.0 * math.pi)
        best = max(left, key=lambda p: (excess[p], -p[0], -p[1]))
        if excess[best] <= 0:
            break
        chosen.append(best)
        left.remove(best)
        # The model of the tables chosen so far: the draws reweighted to D's tables of the
        # chosen pairs (iterative proportional fitting; the base tables hold by construction).
        for _ in range(_SELECT_SWEEPS):
            for p in chosen:
                fitted = np.bincount(model_cells[p], weights=weights, minlength=data[p].size)
                ratio = np.divide(data[p], fitted, out=np.zeros_like(fitted), where=fitted > 0)
                weights = weights * ratio[model_cells[p]]
                weights /= weights.sum()
    return chosen


def _column_index(owner, col, n_columns, names, where):
    lookup = {} if names is None else {str(nm): i for i, nm in enumerate(names)}
    if isinstance(col, str) and col in lookup:
        return lookup[col]
    if isinstance(col, (int, np.integer)) and 0 <= col < n_columns:
        return int(col)
    raise ValueError(
        f"{owner}: {where} names column {col!r}, which is not a column index in [0, {n_columns}) "
        "nor a column name of X."
    )


def _check_marginals(owner, marginals, n_columns, names):
    """Marginals as sorted tuples of column indices that cover every column."""
    out = []
    for m in marginals:
        m = (m,) if isinstance(m, (str, int, np.integer)) else tuple(m)
        idx = [_column_index(owner, col, n_columns, names, f"marginal {m!r}") for col in m]
        if len(idx) not in (1, 2, 3) or len(set(idx)) != len(idx):
            raise ValueError(
                f"{owner}: each marginal is one column or a pair or triple of distinct columns; "
                f"got {m!r}."
            )
        out.append(tuple(sorted(idx)))
    if not out:
        raise ValueError(f"{owner}: marginals is empty; give at least one marginal.")
    missing = sorted(set(range(n_columns)) - {j for m in out for j in m})
    if missing:
        raise ValueError(
            f"{owner}: column(s) {missing} are in no marginal, so they could not be sampled. "
            "Add their 1-way marginals or an edge that contains them."
        )
    return out
