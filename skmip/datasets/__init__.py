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

__all__ = ["load_dataset", "DATASETS", "load_csv"]

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


def _load_adult():
    rows = [r for r in _read_rows("adult.data.gz", ",") if len(r) == 15]
    X, names = _encode([r[:14] for r in rows], _ADULT_COLUMNS)
    y = np.array([r[14].rstrip(".") == ">50K" for r in rows], dtype=int)
    return X, y, names, ["<=50K", ">50K"], "UCI Adult (census income), CC BY 4.0"


def _load_german():
    rows = _read_rows("german.data.gz", " ")
    X, names = _encode([r[:20] for r in rows], _GERMAN_COLUMNS)
    y = np.array([r[20] == "2" for r in rows], dtype=int)  # 1 = bad credit risk
    return X, y, names, ["good", "bad"], "UCI Statlog German credit, CC BY 4.0"


def load_dataset(name: str, *, n_samples: int | None = None, random_state=0) -> Bunch:
    """Load a real dataset that ships with skmip or scikit-learn.

    Parameters
    ----------
    name : str
        One of :data:`DATASETS`.
    n_samples : int, default=None
        Keep a uniformly random subset of this many rows (for quick runs); ``None`` keeps all.
    random_state : int, default=0
        Seed of that subset (the choice of rows is not a privacy mechanism).

    Returns
    -------
    Bunch
        ``data`` (float array), ``target``, ``feature_names``, ``target_names``, ``description``.

    Raises
    ------
    ValueError
        For an unknown name, listing the known ones.

    Examples
    --------
    >>> d = load_dataset("german_credit")
    >>> d.data.shape, int(d.target.sum())
    ((1000, 61), 300)
    """
    if name in _SKLEARN:
        import sklearn.datasets

        b = getattr(sklearn.datasets, _SKLEARN[name])()
        X, y = np.asarray(b.data, dtype=np.float64), np.asarray(b.target)
        names = list(b.feature_names) if hasattr(b, "feature_names") else [f"x{i}" for i in range(X.shape[1])]
        target_names = list(getattr(b, "target_names", []))
        description = f"scikit-learn load_{name}"
    elif name == "adult":
        X, y, names, target_names, description = _load_adult()
    elif name == "german_credit":
        X, y, names, target_names, description = _load_german()
    else:
        raise ValueError(f"load_dataset: unknown dataset {name!r}; choose one of {', '.join(DATASETS)}.")
    if n_samples is not None and n_samples < len(X):
        rows = np.sort(np.random.default_rng(random_state).choice(len(X), n_samples, replace=False))
        X, y = X[rows], y[rows]
    return Bunch(data=X, target=y, feature_names=names, target_names=target_names, description=description)


def load_csv(path: str, target: str) -> Bunch:
    """Load a numeric CSV file with a header row; ``target`` names the label column.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If the file is empty or malformed, the target column is missing, a feature is not
        numeric (the message names the column and row), or values are missing.
    """
    with open(path, newline="") as fh:
        try:
            rows = list(csv.reader(fh))
        except csv.Error as exc:
            raise ValueError(f"{path}: not a readable CSV file ({exc}).") from exc
    rows = [r for r in rows if any(c.strip() for c in r)]
    if len(rows) < 2:
        raise ValueError(f"{path}: needs a header row and at least one data row; found {len(rows)} row(s).")
    header = [h.strip() for h in rows[0]]
    if target not in header:
        raise ValueError(f"{path}: no column named {target!r}; columns are {header}. Pass --target COLUMN.")
    t = header.index(target)
    data = np.empty((len(rows) - 1, len(header) - 1))
    labels = []
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}: row {i} has {len(row)} fields but the header has {len(header)}.")
        labels.append(row[t].strip())
        for k, j in enumerate(jj for jj in range(len(header)) if jj != t):
            try:
                data[i - 2, k] = float(row[j])
            except ValueError:
                raise ValueError(
                    f"{path}: column {header[j]!r} row {i} is not numeric ({row[j]!r}); encode "
                    "categorical features as numbers first."
                ) from None
    if not np.isfinite(data).all():
        raise ValueError(f"{path}: features contain NaN or infinite values; impute them first.")
    _, y = np.unique(labels, return_inverse=True)
    return Bunch(
        data=data, target=y, feature_names=[h for j, h in enumerate(header) if j != t],
        target_names=sorted(set(labels)), description=f"CSV file {path}",
    )
