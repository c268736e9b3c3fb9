"""Real datasets that ship offline: nothing is downloaded at run time.

* scikit-learn's bundled sets: ``"breast_cancer"``, ``"digits"``, ``"wine"``, ``"iris"``,
  ``"diabetes"`` (regression).
* Two tabular privacy benchmarks from the UCI Machine Learning Repository, shipped gzipped inside
  this package under their CC BY 4.0 licence (see ``skmip/datasets/data/LICENSE``):
  ``"adult"`` (Becker & Kohavi 1996; 32,561 rows, income > 50K) and ``"german_credit"``
  (Hofmann 1994; 1,000 rows, good/bad credit risk).

Categorical columns are one-hot encoded with the category lists fixed in this module (public
information), so the encoding does not depend on which rows are loaded.
"""

from __future__ import annotations

import csv
import gzip
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_dataset", "DATASETS", "load_csv", "label_classes"]

_SKLEARN = {
    "breast_cancer": "load_breast_cancer",
    "digits": "load_digits",
    "wine": "load_wine",
    "iris": "load_iris",
    "diabetes": "load_diabetes",
}

_ADULT_COLUMNS = [
    ("age", None), ("workclass", "cat"), ("fnlwgt", None), ("education", "cat"),
    ("education_num", None), ("marital_status", "cat"), ("occupation", "cat"),
    ("relationship", "cat"), ("race", "cat"), ("sex", "cat"), ("capital_gain", None),
    ("capital_loss", None), ("hours_per_week", None), ("native_country", "cat"),
]

_GERMAN_COLUMNS = [
    ("status", "cat"), ("duration", None), ("credit_history", "cat"), ("purpose", "cat"),
    ("credit_amount", None), ("savings", "cat"), ("present_employment", "cat"),
    ("installment_rate", None), ("status_sex", "cat"), ("other_debtors", "cat"),
    ("present_residence_since", None), ("property", "cat"), ("age", None),
    ("installment_plans", "cat"), ("housing", "cat"), ("number_of_existing_credits", None),
    ("job", "cat"), ("number_of_people_liable_for", None), ("telephone", "cat"),
    ("foreign_worker", "cat"),
]

DATASETS = tuple(_SKLEARN) + ("adult", "german_credit")


def _read_rows(filename, delimiter):
    path = resources.files("skmip.datasets").joinpath("data", filename)
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="ascii") as fh:
        if delimiter == " ":
            return [line.split() for line in fh if line.strip()]
        return [[c.strip() for c in row] for row in csv.reader(fh) if row]


def _frame(rows, columns):
    """The columns as a DataFrame: categorical ones as pandas categoricals with the sorted
    category list seen in the file (the list :func:`_encode` one-hot encodes), others as floats."""
    pd = _pandas()
    data = {}
    for j, (name, kind) in enumerate(columns):
        values = [r[j] for r in rows]
        data[name] = (pd.Categorical(values, categories=sorted(set(values))) if kind == "cat"
                      else np.asarray(values, dtype=np.float64))
    return pd.DataFrame(data)


def _pandas():
    try:
        import pandas
    except ImportError:  # pragma: no cover - depends on an optional package
        raise ImportError("load_dataset(as_frame=True) needs pandas: pip install pandas") from None
    return pandas


def _encode(rows, columns):
    """One-hot encode categorical columns with the sorted category list seen in the file."""
    blocks, names = [], []
    for j, (name, kind) in enumerate(columns):
        values = [r[j] for r in rows]
        if kind == "cat":
            cats = sorted(set(values))
            codes = np.searchsorted(cats, values)
            blocks.append(np.eye(len(cats))[codes])
            names += [f"{name}={c}" for c in cats]
        else:
            blocks.append(np.asarray(values, dtype=np.float64)[:, None])
            names.append(name)
    return np.hstack(blocks), names


def _features(rows, columns, as_frame):
    if as_frame:
        return _frame(rows, columns), [name for name, _ in columns]
    return _encode(rows, columns)


def _load_adult(as_frame=False):
    rows = [r for r in _read_rows("adult.data.gz", ",") if len(r) == 15]
    X, names = _features([r[:14] for r in rows], _ADULT_COLUMNS, as_frame)
    y = np.array([r[14].rstrip(".") == ">50K" for r in rows], dtype=int)
    return X, y, names, ["<=50K", ">50K"], "UCI Adult (census income), CC BY 4.0"


def _load_german(as_frame=False):
    rows = _read_rows("german.data.gz", " ")
    X, names = _features([r[:20] for r in rows], _GERMAN_COLUMNS, as_frame)
    y = np.array([r[20] == "2" for r in rows], dtype=int)  # 1 = bad credit risk
    return X, y, names, ["good", "bad"], "UCI Statlog German credit, CC BY 4.0"


def load_dataset(name: str, *, n_samples: int | None = None, random_state=0, as_frame: bool = False) -> Bunch:
    """Load a real dataset that ships with skmip or scikit-learn.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    n_samples : int, default=None
        Keep a uniformly random subset of this many rows (for quick runs); ``None`` keeps all.
    random_state : int, default=0
        Seed of that subset (the choice of rows is not a privacy mechanism).
    as_frame : bool, default=False
        As scikit-learn's loaders: ``data`` is a pandas DataFrame, ``target`` a Series named
        ``"target"``, and ``frame`` holds both. ``"adult"`` and ``"german_credit"`` then keep
        their original columns, categorical ones as pandas categoricals with the fixed
        category lists (what ``False`` one-hot encodes), for a ``ColumnTransformer`` of
        your own.

    Returns
    -------
    Bunch
        ``data`` (float array, or DataFrame), ``target`` (array, or Series),
        ``feature_names``, ``target_names``, ``description`` (and ``frame`` with
        ``as_frame=True``).

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.

    Examples
    --------
    >>> d = load_dataset("german_credit")
    >>> d.data.shape, int(d.target.sum())
    ((1000, 61), 300)
    >>> load_dataset("german_credit", as_frame=True).data.shape
    (1000, 20)
    """
    if not isinstance(as_frame, (bool, np.bool_)):
        raise TypeError(f"load_dataset: as_frame must be True or False; got {as_frame!r}.")
    if name in _SKLEARN:
        import sklearn.datasets

        b = getattr(sklearn.datasets, _SKLEARN[name])()
        X, y = np.asarray(b.data, dtype=np.float64), np.asarray(b.target)
        names = list(b.feature_names) if hasattr(b, "feature_names") else [f"x{i}" for i in range(X.shape[1])]
        target_names = list(getattr(b, "target_names", []))
        description = f"scikit-learn load_{name}"
        if as_frame:
            X = _pandas().DataFrame(X, columns=names)
    elif name == "adult":
        X, y, names, target_names, description = _load_adult(as_frame)
    elif name == "german_credit":
        X, y, names, target_names, description = _load_german(as_frame)
    else:
        raise ValueError(f"load_dataset: unknown dataset {name!r}; choose one of {', '.join(DATASETS)}.")
    if n_samples is not None and n_samples < len(X):
        rows = np.sort(np.random.default_rng(random_state).choice(len(X), n_samples, replace=False))
        X, y = (X.iloc[rows].reset_index(drop=True) if as_frame else X[rows]), y[rows]
    bunch = Bunch(data=X, target=y, feature_names=names, target_names=target_names, description=description)
    if as_frame:
        bunch.target = _pandas().Series(y, name="target")
        bunch.frame = X.assign(target=bunch.target)
    return bunch


#: Cells read as missing in a CSV file (compared case-insensitively, after stripping spaces).
MISSING_TOKENS = ("", "?", "na", "n/a", "nan", "null", "none")


def _is_missing(cell: str) -> bool:
    return cell.strip().lower() in MISSING_TOKENS


def load_csv(path: str, target: str, *, categorical=(), categories=None, n_samples=None,
             random_state=0) -> Bunch:
    """Load a CSV file with a header row; ``target`` names the label column.

    The delimiter (``,``, ``;`` or tab) is sniffed and a UTF-8 byte-order mark is dropped
    (:func:`skmip.datasets.csv_rows.read_csv_rows`).

    Numeric columns are read as floats. A column of labels (strings) must be declared, and
    is then one-hot encoded with a public category list: read from the file
    (``categorical``) or given by you (``categories``). Missing cells
    (:data:`MISSING_TOKENS`: empty, ``?``, ``NA``, ``NaN``, ``null``, ``None``) are kept as
    NaN in numeric columns and as an all-zero one-hot row in categorical ones.

    Parameters
    ----------
    path : str
        The file.
    target : str
        The label column: its classes are its distinct values after :func:`label_classes`
        (spaces stripped; numeric spellings such as ``1``, ``1.0`` and `` 1`` are one class).
    categorical : sequence of str, default=()
        Columns to one-hot encode with the sorted list of the values the file holds.
        The list is a function of the whole file, fixed before any model is trained (like
        the standardisation the ``skmip`` command applies), so it is not part of what the
        audit measures.
    categories : dict of str to sequence of str, default=None
        Columns to one-hot encode with a category list you give (e.g. from a data
        dictionary): the encoding then does not depend on the file at all. A value outside
        the list is an error.
    n_samples : int, default=None
        Keep a uniformly random subset of this many rows, chosen while reading: memory is
        bounded by the rows kept. ``None`` keeps all. Category lists read from the file
        (``categorical``) are then those of the kept rows.
    random_state : int, default=0
        Seed of that subset (the choice of rows is not a privacy mechanism).

    Returns
    -------
    Bunch
        ``data`` (float array; NaN where a numeric cell is missing), ``target``,
        ``feature_names`` (``"column=value"`` for one-hot columns), ``target_names``,
        ``description``, ``categories`` (the list used for each encoded column) and
        ``missing`` (numeric column name -> number of missing cells, for columns with any).

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If the file is empty or malformed, the header names a column twice (the message
        names the copies), a named column is missing, a label is missing,
        undeclared columns are not numeric (the message names every such column, with a row
        and value of each, and the two ways to declare them), or a value is outside its given
        category list.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "toy.csv")
    >>> _ = open(path, "w").write("age,colour,label\\n31,red,0\\n,blue,1\\n45,,1\\n")
    >>> d = load_csv(path, "label", categorical=["colour"])
    >>> d.feature_names, d.missing
    (['age', 'colour=blue', 'colour=red'], {'age': 1})
    >>> d.data[2].tolist()
    [45.0, 0.0, 0.0]
    """
    from skmip.datasets.csv_rows import read_csv_rows

    categories = {} if categories is None else {str(k): list(v) for k, v in categories.items()}
    categorical = [str(c) for c in categorical]
    header, numbered, delimiter = read_csv_rows(path, n_samples=n_samples, random_state=random_state)
    header = _checked_header(path, header, numbered, delimiter, target, [*categorical, *categories])
    t = header.index(target)
    lines = [line for line, _ in numbered]
    body = [row for _, row in numbered]
    del numbered
    _check_rows(path, header, lines, body, t, target)
    blocks, names, used, missing, text_columns = [], [], {}, {}, {}
    for j, name in enumerate(header):
        if j == t:
            continue
        cells = [row[j].strip() for row in body]
        if name in categories or name in categorical:
            block, used[name] = _one_hot_column(path, name, cells, lines, categories.get(name))
            blocks.append(block)
            names += [f"{name}={c}" for c in used[name]]
            continue
        column, text = _numeric_column(path, name, cells, lines)
        if text is not None:
            text_columns[name] = text  # reported with every other such column
            continue
        if np.isnan(column).any():
            missing[name] = int(np.isnan(column).sum())
        blocks.append(column[:, None])
        names.append(name)
    if text_columns:
        raise _undeclared_text_columns(path, text_columns)
    target_names, y = label_classes(row[t] for row in body)
    data = np.hstack(blocks) if blocks else np.empty((len(body), 0))
    return Bunch(
        data=data, target=y, feature_names=names, target_names=target_names,
        description=f"CSV file {path}", categories=used, missing=missing,
    )


def label_classes(labels):
    """The classes of a label column read as text, and each row's class index.

    The rule: a label is stripped of surrounding spaces; a label that reads as a finite
    number is that number, so ``1``, ``1.0``, `` 1`` and ``+1e0`` are one class, spelt
    ``"1"`` (an integer value prints as an integer, any other as Python's shortest float);
    any other label is its stripped text, compared exactly (case counts). Classes are sorted
    by value when every label is a number (``2`` before ``10``), by text otherwise.

    Parameters
    ----------
    labels : iterable of str
        The label column's cells.

    Returns
    -------
    target_names : list of str
        The classes, in order.
    y : ndarray of int
        Each row's index into ``target_names``.

    Examples
    --------
    >>> label_classes(["1", "1.0", " 1", "0", "10", "2"])
    (['0', '1', '2', '10'], array([1, 1, 1, 0, 3, 2]))
    >>> label_classes(["yes", " no", "Yes"])[0]
    ['Yes', 'no', 'yes']
    """
    values = [_label_value(c.strip()) for c in labels]
    numeric = all(isinstance(v, float) for v in values)
    distinct = sorted(set(values), key=None if numeric else _label_text)
    index = {v: k for k, v in enumerate(distinct)}
    return [_label_text(v) for v in distinct], np.array([index[v] for v in values], dtype=np.intp)


def _label_value(text):
    """A finite number for a numeric spelling (-0 is 0), else the text itself."""
    try:
        value = float(text)
    except ValueError:
        return text
    return value + 0.0 if np.isfinite(value) else text


def _label_text(value):
    if isinstance(value, str):
        return value
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _checked_header(path, header, numbered, delimiter, target, declared):
    """The header's stripped names, after checking the file has rows, ``target`` and ``declared``."""
    if header is None or not numbered:
        found = 0 if header is None else 1
        raise ValueError(f"{path}: needs a header row and at least one data row; found {found} row(s).")
    header = [h.strip() for h in header]
    repeated = {h: [k + 1 for k, g in enumerate(header) if g == h] for h in header if header.count(h) > 1}
    if repeated:
        where = "; ".join(f"{h!r} (columns {', '.join(map(str, cols))})" for h, cols in repeated.items())
        raise ValueError(
            f"{path}: the header names {len(repeated)} column(s) more than once: {where}. Every "
            "column needs its own name (a second copy of the label column would become a feature "
            "that gives the label away); rename or drop the copies."
        )
    if target not in header:
        raise ValueError(
            f"{path}: no column named {target!r}; columns are {header} (delimiter {delimiter!r}). "
            "Pass --target COLUMN."
        )
    for name in declared:
        if name not in header or name == target:
            raise ValueError(
                f"{path}: categorical column {name!r} is not a feature column of the file; "
                f"feature columns are {[h for h in header if h != target]}."
            )
    return header


def _check_rows(path, header, lines, body, t, target):
    """Every row has the header's number of fields and a label."""
    for i, row in zip(lines, body):
        if len(row) != len(header):
            raise ValueError(f"{path}: row {i} has {len(row)} fields but the header has {len(header)}.")
        if _is_missing(row[t]):
            raise ValueError(
                f"{path}: row {i} has no label in column {target!r}; drop unlabelled rows first "
                "(a classifier cannot train or be scored on them)."
            )


def _one_hot_column(path, name, cells, lines, given):
    """A categorical column one-hot encoded, and its categories: ``given``, or the sorted values held."""
    if given is not None:
        cats = [str(c) for c in given]
        for i, c in zip(lines, cells):
            if not _is_missing(c) and c not in cats:
                raise ValueError(
                    f"{path}: column {name!r} row {i} has the value {c!r}, which is not in its "
                    f"category list {cats}; add it to the list (--categories {name}=...)."
                )
    else:
        cats = sorted({c for c in cells if not _is_missing(c)})
    index = {c: k for k, c in enumerate(cats)}
    block = np.zeros((len(cells), len(cats)))
    for i, c in enumerate(cells):
        if c in index:  # a missing cell stays an all-zero row
            block[i, index[c]] = 1.0
    return block, cats


def _numeric_column(path, name, cells, lines):
    """The column as floats (NaN where missing), or ``(None, (line, value))`` at its first text cell."""
    column = np.empty(len(cells))
    for i, c in enumerate(cells):
        if _is_missing(c):
            column[i] = np.nan
            continue
        try:
            column[i] = float(c)
        except ValueError:
            return None, (lines[i], c)
    if not np.isfinite(column[~np.isnan(column)]).all():
        raise ValueError(f"{path}: column {name!r} holds infinite values; replace them first.")
    return column, None


def _undeclared_text_columns(path, text_columns):
    """One error naming every column that holds text but was not declared categorical."""
    names = list(text_columns)
    where = ", ".join(f"{n!r} (row {line}: {value!r})" for n, (line, value) in text_columns.items())
    read = " ".join(f"--categorical {n}" for n in names)
    given = " ".join(f"--categories {n}=A,B,..." for n in names)
    return ValueError(
        f"{path}: {len(names)} column(s) are not numeric: {where}. If they hold categories, "
        f"declare them: {read} (one-hot, categories read from the file) or {given} (one-hot, "
        f"your public lists); in Python load_csv(..., categorical={names!r}) or "
        "categories={COLUMN: [...]}."
    )
