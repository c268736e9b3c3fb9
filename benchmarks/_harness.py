"""Set-up shared by the benchmarks: real data split and scaled on the training part, timing,
markdown tables and log-log slopes. One copy here instead of one per script."""

from __future__ import annotations

import time

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from skmip.datasets import load_dataset

SCALERS = {"standard": StandardScaler, "minmax": MinMaxScaler}


def split_scaled(name, *, scaler="standard", test_size=0.3, n_samples=None, seed=0):
    """``(X_tr, X_te, y_tr, y_te)`` of a bundled dataset, stratified, the scaler fitted on the
    training part only (a public preprocessing choice for the release)."""
    d = load_dataset(name, n_samples=n_samples, random_state=seed)
    X_tr, X_te, y_tr, y_te = train_test_split(
        d.data, d.target, test_size=test_size, random_state=seed, stratify=d.target
    )
    s = SCALERS[scaler]().fit(X_tr)
    return s.transform(X_tr), s.transform(X_te), y_tr, y_te


def timed(fn, *args, **kwargs):
    """``(result, seconds)`` of one call, wall clock."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def median_time(fn, repeats=20):
    """Median wall time of ``repeats`` calls (small, fast operations), after one untimed call
    (the first call in a process pays for imports and caches)."""
    fn()
    return float(np.median([timed(fn)[1] for _ in range(repeats)]))


def loglog_slope(x, y):
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


def markdown_table(header, rows):
    """A GitHub-flavoured markdown table from a header and rows of cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def load_frame(name, n_samples=None, seed=0):
    """``(DataFrame, y)`` of a bundled tabular dataset with its categorical columns as strings.

    The bundled copies are one-hot encoded (``"column=value"`` blocks, public category lists);
    this undoes that encoding, so that a synthesizer sees the table as it was published.
    """
    import pandas as pd

    d = load_dataset(name, n_samples=n_samples, random_state=seed)
    names = [str(n) for n in d.feature_names]
    columns, order = {}, []
    for i, n in enumerate(names):
        col = n.split("=", 1)[0]
        if col not in order:
            order.append(col)
        if "=" in n:
            columns.setdefault(col, []).append(i)
    frame = {}
    for col in order:
        if col in columns:
            block = columns[col]
            labels = np.array([names[i].split("=", 1)[1] for i in block], dtype=object)
            frame[col] = labels[np.argmax(d.data[:, block], axis=1)]
        else:
            frame[col] = d.data[:, names.index(col)]
    return pd.DataFrame(frame), d.target
