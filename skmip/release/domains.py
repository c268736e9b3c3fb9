"""Column domains of a mixed table: bins for numeric columns, category lists, missing values.

A marginal synthesizer counts records in cells, so every column needs a finite domain: the
categories of a categorical column, the bins of a numeric one, and one more cell for a
missing value. :func:`infer_domains` chooses them -- from the whole dataset D or from what
the user gives -- and :class:`ColumnDomain` encodes values to cell codes and decodes codes
back to values (a numeric code to a value drawn inside its bin).

Under Definition 1 (Izzo et al.) D is fixed and only membership in the random subset
D_train is protected, so domains computed from D are outside the attacker's signal: they
change nothing in the promise. They are released with the synthesizer, though, and say
something about D itself (that a category occurs, the range of a column). Domains given by
the user from public knowledge say nothing about D.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["ColumnDomain", "infer_domains", "missing_mask"]


def missing_mask(values) -> np.ndarray:
    """Which entries are missing: ``None``, float NaN, ``pandas.NA`` / ``NaT``.

    Examples
    --------
    >>> missing_mask(np.array(["a", None, float("nan")], dtype=object)).tolist()
    [False, True, True]
    """
    values = np.asarray(values)
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind in "iub":
        return np.zeros(values.shape, dtype=bool)
    try:
        import pandas

        return np.asarray(pandas.isna(values), dtype=bool)
    except ImportError:  # pragma: no cover - pandas is optional
        return np.array([v is None or (isinstance(v, float) and v != v) for v in values.ravel()],
                        dtype=bool).reshape(values.shape)


def _as_float(values):
    """``values`` as floats, or ``None`` when some entry is not a number."""
    if values.dtype.kind in "fiu":
        return values.astype(np.float64)
    if values.dtype.kind == "b":
        return None  # booleans are categories
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return None


@dataclass
class ColumnDomain:
    """The finite domain of one column and its encoding into cell codes.

    Codes ``0 .. size - 1``: for a categorical column, the index in ``categories``, then one
    cell shared by the ``pooled`` categories; for a numeric one, the atoms first (values held by a large share of D, each a cell of its
    own) and then the intervals ``[edges[i], edges[i + 1])`` (the last one closed); the last
    code is "missing" when ``missing`` is True.

    Attributes
    ----------
    name : object
        Column name (or index).
    kind : {"categorical", "numeric"}
    categories : ndarray or None
        Categorical columns: the categories with a cell of their own.
    pooled : ndarray
        Categorical columns: rare categories sharing one cell (decoded uniformly among them).
    edges : ndarray or None
        Numeric columns: increasing interval edges, outermost included (empty when the
        column has atoms only).
    atoms : ndarray
        Numeric columns: values that form a cell of their own.
    integer : bool
        Numeric columns: decode to integers (the column holds integers in D).
    missing : bool
        Whether a cell for missing values exists.
    source : {"data", "given"}
        Whether the domain was computed from D or given by the user.
    """

    name: object
    kind: str
    categories: np.ndarray | None = None
    pooled: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=object))
    edges: np.ndarray | None = None
    atoms: np.ndarray = field(default_factory=lambda: np.empty(0))
    integer: bool = False
    missing: bool = False
    source: str = "data"

    @property
    def n_values(self) -> int:
        """Number of codes for non-missing values."""
        if self.kind == "categorical":
            return len(self.categories) + int(len(self.pooled) > 0)
        return len(self.atoms) + max(len(self.edges) - 1, 0)

    @property
    def size(self) -> int:
        """Number of codes (cells), the missing cell included."""
        return self.n_values + int(self.missing)

    def encode(self, values, owner="ColumnDomain") -> np.ndarray:
        """Cell code of each value; a value outside a given domain raises ``ValueError``."""
        values = np.asarray(values)
        miss = missing_mask(values)
        codes = np.full(values.shape[0], self.n_values, dtype=np.int64)
        if miss.any() and not self.missing:
            raise ValueError(
                f"{owner}: column {self.name!r} has missing values but its domain has no missing "
                "cell; add one (missing=True) or fill the values in."
            )
        present = values[~miss]
        if self.kind == "categorical":
            lookup = {v: i for i, v in enumerate(self.categories.tolist())}
            lookup.update((v, len(self.categories)) for v in self.pooled.tolist())
            try:
                codes[~miss] = [lookup[v] for v in present.tolist()]
            except KeyError as exc:
                raise ValueError(
                    f"{owner}: column {self.name!r} holds {exc.args[0]!r}, which is not among its "
                    f"categories {self.categories.tolist()[:20]}; add it to the categories you gave."
                ) from None
            return codes
        x = _as_float(present)
        if x is None:
            raise ValueError(f"{owner}: numeric column {self.name!r} holds values that are not numbers.")
        out = np.empty(x.shape[0], dtype=np.int64)
        is_atom = np.isin(x, self.atoms)
        out[is_atom] = np.searchsorted(self.atoms, x[is_atom])
        if (~is_atom).any():
            if len(self.edges) < 2:
                raise ValueError(f"{owner}: numeric column {self.name!r} holds a value outside its atoms.")
            rest = x[~is_atom]
            if self.source == "given" and (rest.min() < self.edges[0] or rest.max() > self.edges[-1]):
                raise ValueError(
                    f"{owner}: numeric column {self.name!r} holds values in [{rest.min()!r}, "
                    f"{rest.max()!r}], outside the bins you gave, [{self.edges[0]!r}, {self.edges[-1]!r}]. "
                    "Widen the outer edges."
                )
            inner = np.searchsorted(self.edges[1:-1], rest, side="right")
            out[~is_atom] = len(self.atoms) + inner
        codes[~miss] = out
        return codes

    def cell_names(self) -> list[str]:
        """A readable name per code: the category (``"other"`` for the pooled cell), the atom,
        the interval ``[lo, hi)``, and ``"?"`` for the missing cell.

        Examples
        --------
        >>> ColumnDomain("x", "numeric", edges=np.array([1.0, 4.0, 9.0]), atoms=np.array([0.0]),
        ...              missing=True).cell_names()
        ['0', '[1, 4)', '[4, 9]', '?']
        """
        if self.kind == "categorical":
            names = [str(c) for c in self.categories] + (["other"] if len(self.pooled) else [])
        else:
            e = self.edges
            names = [f"{a:g}" for a in self.atoms] + [
                f"[{e[i]:g}, {e[i + 1]:g}" + ("]" if i == len(e) - 2 else ")") for i in range(len(e) - 1)]
        return names + (["?"] if self.missing else [])

    def decode(self, codes, rng) -> np.ndarray:
        """Values for ``codes``: a category, an atom, or a uniform draw inside the interval.

        Integer columns draw a uniform integer among those the interval contains, atoms
        excepted (an atom decodes from its own cell, so every decoded value encodes back to
        the code it came from). The missing cell decodes to NaN, which pandas and
        scikit-learn's encoders read as missing. Post-processing of the released codes: ``rng`` costs no privacy.
        """
        codes = np.asarray(codes)
        miss = codes == self.n_values
        if self.kind == "categorical":
            out = np.empty(codes.shape[0], dtype=object)
            own = codes < len(self.categories)
            out[own] = self.categories[codes[own]]
            pool = ~own & ~miss
            if pool.any():
                out[pool] = self.pooled[rng.integers(0, len(self.pooled), int(pool.sum()))]
            out[miss] = np.nan
            return out
        out = np.full(codes.shape[0], np.nan)
        n_atoms = len(self.atoms)
        atom = (codes < n_atoms) & ~miss
        out[atom] = self.atoms[codes[atom]]
        interval = (codes >= n_atoms) & ~miss
        if interval.any():
            i = codes[interval] - n_atoms
            lo, hi = self.edges[i], self.edges[i + 1]
            last = i == len(self.edges) - 2
            if self.integer:
                first = np.ceil(lo)
                # [lo, hi) holds the integers first .. ceil(hi) - 1; the last interval is closed.
                stop = np.where(last, np.floor(hi) + 1, np.ceil(hi))
                # The integers that are atoms have cells of their own: an interval draws among
                # the others (when it holds any), so that decoding and re-encoding agree.
                inside = [(a >= first) & (a < stop) for a in self.atoms]
                free = stop - first - (np.sum(inside, axis=0) if inside else 0)
                skip = free >= 1
                count = np.where(skip, free, np.maximum(stop - first, 1))
                value = first + np.floor(rng.random(i.size) * count)
                for a, a_inside in zip(self.atoms, inside):  # increasing: the r-th free integer
                    value = value + (skip & a_inside & (value >= a))
                out[interval] = value
            else:
                out[interval] = lo + rng.random(i.size) * (hi - lo)
        return out


def _numeric_domain(x, n_bins):
    """Atoms and quantile intervals of the finite values ``x`` of D (a function of D only)."""
    values, counts = np.unique(x, return_counts=True)
    if values.size <= n_bins:
        return np.array([], dtype=np.float64), values.astype(np.float64)
    # A value held by at least a 1/n_bins share of D would swallow whole quantile bins: it
    # becomes a cell of its own, so that e.g. a column that is 0 for 90% of D keeps its 0.
    atoms = values[counts >= x.size / n_bins]
    rest = x[~np.isin(x, atoms)]
    n_intervals = max(n_bins - atoms.size, 1)
    edges = np.unique(np.quantile(rest, np.linspace(0.0, 1.0, n_intervals + 1)))
    if edges.size < 2:  # the rest is one value: an atom too
        return np.array([], dtype=np.float64), np.union1d(atoms, rest).astype(np.float64)
    return edges.astype(np.float64), atoms.astype(np.float64)


def _pool(cats, present, min_frequency):
    """``(own, pooled)``: categories held by at least ``min_frequency`` of the rows, and the rest
    (pooled only when at least two are rare: one rare category keeps its own cell)."""
    if min_frequency <= 0 or cats.size < 3:
        return cats, np.empty(0, dtype=object)
    lookup = {v: i for i, v in enumerate(cats.tolist())}
    counts = np.bincount([lookup[v] for v in present.tolist()], minlength=cats.size)
    rare = counts < min_frequency * len(present)
    if rare.sum() < 2:
        return cats, np.empty(0, dtype=object)
    return cats[~rare], cats[rare]


def infer_domains(columns, names, *, n_bins=10, bins=None, categories=None, kinds=None, min_frequency=0.0,
                  keep=(), owner="infer_domains") -> list[ColumnDomain]:
    """One :class:`ColumnDomain` per column: given by the user, or computed from D.

    Parameters
    ----------
    columns : list of ndarray
        The columns of the whole dataset D.
    names : list
        Their names (strings for a DataFrame, indices otherwise).
    n_bins : int, default=10
        Numeric columns computed from D: at most this many cells -- atoms (values held by at
        least ``1/n_bins`` of the rows) and intervals between quantiles of the other values.
        A numeric column with at most ``n_bins`` distinct values is kept exactly (its values
        are atoms).
    bins : dict, optional
        ``{name: edges}``: a numeric column's interval edges, outermost included (values of D
        outside them raise an error).
    categories : dict, optional
        ``{name: list}``: a categorical column's categories (values of D not listed raise an
        error).
    kinds : dict, optional
        ``{name: "categorical" or "numeric"}`` for columns without a given domain; otherwise
        a column is numeric when all its values are numbers (booleans are categories).
    min_frequency : float, default=0.0
        Categorical columns computed from D: categories held by fewer than this share of the
        rows share one cell (``pooled``), so that a column with many rare categories does not
        spread the same records over many noisy cells.
    keep : collection, default=()
        Names of columns whose categories are never pooled (e.g. the class label).

    Returns
    -------
    list of ColumnDomain

    Examples
    --------
    >>> x = np.r_[np.zeros(80), np.arange(1.0, 21.0)]
    >>> d = infer_domains([x], [0], n_bins=4)[0]
    >>> d.atoms.tolist(), d.edges.tolist()
    ([0.0], [1.0, 7.333333333333333, 13.666666666666666, 20.0])
    """
    bins, categories, kinds = dict(bins or {}), dict(categories or {}), dict(kinds or {})
    both = set(bins) & set(categories)
    if both:
        raise ValueError(f"{owner}: column(s) {sorted(map(str, both))} are given both bins and categories; "
                         "give one of them.")
    known = {str(n) for n in names} | set(names)
    unknown = [k for k in list(bins) + list(categories) if k not in known]
    if unknown:
        raise ValueError(f"{owner}: bins/categories name column(s) {unknown!r}, which are not columns of X "
                         f"({list(names)[:20]}).")
    out = []
    for name, col in zip(names, columns):
        col = np.asarray(col)
        miss = missing_mask(col)
        present = col[~miss]
        given_bins = bins.get(name, bins.get(str(name)))
        given_cats = categories.get(name, categories.get(str(name)))
        if given_cats is not None:
            cats = np.asarray(list(given_cats), dtype=object)
            if len(set(cats.tolist())) != len(cats) or len(cats) == 0:
                raise ValueError(f"{owner}: the categories given for column {name!r} must be distinct and "
                                 f"non-empty; got {list(given_cats)!r}.")
            dom = ColumnDomain(name, "categorical", categories=cats, missing=bool(miss.any()), source="given")
        elif given_bins is not None:
            edges = np.asarray(given_bins, dtype=np.float64)
            if edges.ndim != 1 or edges.size < 2 or not np.all(np.diff(edges) > 0) or not np.all(np.isfinite(edges)):
                raise ValueError(f"{owner}: the bins given for column {name!r} must be at least 2 finite, "
                                 f"strictly increasing edges (outermost included); got {given_bins!r}.")
            x = _as_float(present)
            integer = x is not None and x.size > 0 and bool(np.all(x == np.round(x)))
            dom = ColumnDomain(name, "numeric", edges=edges, integer=integer, missing=bool(miss.any()),
                               source="given")
        else:
            kind = kinds.get(name, kinds.get(str(name)))
            x = _as_float(present)
            if kind not in (None, "categorical", "numeric"):
                raise ValueError(f"{owner}: kinds[{name!r}] must be 'categorical' or 'numeric'; got {kind!r}.")
            if kind == "numeric" and x is None:
                raise ValueError(f"{owner}: column {name!r} is declared numeric but holds values that are not numbers.")
            if kind == "categorical" or x is None:
                if present.size == 0:
                    cats = np.empty(0, dtype=object)
                else:
                    try:
                        cats = np.unique(present)
                    except TypeError:  # values of mixed types: sort by their text
                        cats = np.array(sorted(set(present.tolist()), key=repr), dtype=object)
                cats, pooled = _pool(cats.astype(object), present, min_frequency if name not in keep else 0.0)
                dom = ColumnDomain(name, "categorical", categories=cats, pooled=pooled, missing=bool(miss.any()))
            else:
                if not np.all(np.isfinite(x)):
                    raise ValueError(f"{owner}: numeric column {name!r} holds an infinite value; clip or drop it.")
                edges, atoms = _numeric_domain(x, n_bins)
                integer = bool(np.all(x == np.round(x)))
                dom = ColumnDomain(name, "numeric", edges=edges, atoms=atoms, integer=integer,
                                   missing=bool(miss.any()))
        if dom.size == 0:
            raise ValueError(f"{owner}: column {name!r} has no value at all in D; drop it.")
        out.append(dom)
    return out
