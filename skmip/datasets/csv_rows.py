"""The rows of a CSV file: delimiter sniffed, BOM stripped, a random subset kept while reading.

Subsampling happens during the read (a first pass counts the rows, a second keeps the chosen
ones), so memory is bounded by the rows kept, not by the size of the file.
"""

from __future__ import annotations

import csv
import itertools

import numpy as np

__all__ = ["DELIMITERS", "sniff_delimiter", "read_csv_rows"]

#: The delimiters recognised, in order of preference when several fit equally well.
DELIMITERS = (",", ";", "\t")
_SNIFF_LINES = 50
# "utf-8-sig" reads UTF-8 and drops a leading byte-order mark (Excel writes one), which would
# otherwise become part of the first column's name.
_ENCODING = "utf-8-sig"


def _open(path):
    return open(path, newline="", encoding=_ENCODING)


def sniff_delimiter(path: str) -> str:
    """The delimiter of ``path`` among :data:`DELIMITERS`.

    The one that splits the first non-empty lines into the same number of fields, and the most
    fields (failing that, the one that splits the header into the most fields, so that a
    ragged row is reported as such); ``","`` when none splits the header.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "semi.csv")
    >>> _ = open(path, "w").write("a;b;label\\n1,5;2;0\\n")
    >>> sniff_delimiter(path)
    ';'
    """
    with _open(path) as fh:
        lines = [line for line in itertools.islice(fh, _SNIFF_LINES * 2) if line.strip()]
    lines = lines[:_SNIFF_LINES]
    best, best_score = ",", (False, 1)
    for delimiter in DELIMITERS:
        try:
            counts = [len(row) for row in csv.reader(lines, delimiter=delimiter)]
        except csv.Error:  # e.g. an over-long field: the read names it with its line
            continue
        if not counts:
            break
        score = (len(set(counts)) == 1, counts[0])
        if counts[0] > 1 and score > best_score:
            best, best_score = delimiter, score
    return best


def _rows(fh, delimiter, path):
    """``(line number, fields)`` of every non-empty row."""
    reader = csv.reader(fh, delimiter=delimiter)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise _unreadable(path, reader.line_num, exc) from None
        if any(cell.strip() for cell in row):
            yield reader.line_num, row


def _unreadable(path, line, exc):
    """The reader's error, said with its line and what to do (issue 31: an over-long field)."""
    if "field larger than field limit" in str(exc):
        return ValueError(
            f"{path}: line {line}: a field is longer than {csv.field_size_limit():,} characters, "
            "the CSV reader's limit. Such a field is almost always a quote (\") left open, which "
            "swallows the lines after it: check the quotes up to that line. A value that long is "
            "not a tabular feature: drop its column."
        )
    return ValueError(f"{path}: line {line}: not readable as CSV ({exc}).")


def read_csv_rows(path: str, *, n_samples: int | None = None, random_state=0):
    """The header and the data rows of a CSV file, or a uniformly random subset of the rows.

    Parameters
    ----------
    path : str
        The file (UTF-8, with or without a byte-order mark; delimiter ``,``, ``;`` or tab).
    n_samples : int, default=None
        Keep this many data rows, chosen uniformly at random without replacement; ``None``
        (or a number at least the file's row count) keeps all. Only the kept rows are ever
        held in memory.
    random_state : int, default=0
        Seed of the choice of rows (the choice is not a privacy mechanism).

    Returns
    -------
    header : list of str or None
        The first non-empty row, ``None`` for an empty file.
    body : list of (int, list of str)
        The kept data rows in file order, each with its line number in the file.
    delimiter : str

    Raises
    ------
    ValueError
        If the file is not readable as CSV.
    """
    delimiter = sniff_delimiter(path)
    try:
        with _open(path) as fh:
            rows = _rows(fh, delimiter, path)
            header = next(rows, (0, None))[1]
            if n_samples is None:
                return header, list(rows), delimiter
            count = sum(1 for _ in rows)
        keep = None
        if n_samples < count:
            keep = np.sort(np.random.default_rng(random_state).choice(count, n_samples, replace=False))
        with _open(path) as fh:
            rows = _rows(fh, delimiter, path)
            next(rows, None)
            if keep is None:
                return header, list(rows), delimiter
            body, wanted = [], iter(keep.tolist())
            target = next(wanted, None)
            for position, item in enumerate(rows):
                if position == target:
                    body.append(item)
                    target = next(wanted, None)
                    if target is None:
                        break
        return header, body, delimiter
    except csv.Error as exc:
        raise ValueError(f"{path}: not a readable CSV file ({exc}).") from exc
