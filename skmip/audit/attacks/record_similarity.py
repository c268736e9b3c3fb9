"""How close a record of D is to synthetic records: one encoding of D, distances, kernel densities.

Records are compared in one encoding fitted on D (a function of D only, public under
Definition 1 of Izzo et al.): numeric columns standardised, every other column categorical
with D's categories (:class:`RecordEncoder`). On it: the distance to the closest synthetic
record (:func:`closest_record_distance`, :func:`closest_record_signal`) and a product-kernel
density (:func:`kde_log_density`, bandwidth by likelihood cross-validation,
:func:`select_kde_bandwidth`). The attacks of :mod:`skmip.audit.attacks.synthetic` score with
them.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

__all__ = [
    "RecordEncoder",
    "closest_record_distance",
    "closest_record_signal",
    "kde_log_density",
    "select_kde_bandwidth",
]

#: Rows x synthetic records per block of a distance computation (memory ~ 8 bytes each).
_BLOCK = 2**22

# ----------------------------------------------------------------------------- encoding
def _numeric_column(col):
    try:
        values = np.asarray(col, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return values if np.all(np.isfinite(values)) else None


class RecordEncoder:
    """One encoding of records, fitted on the pool D: numeric columns and categorical codes.

    A column is numeric when every value of D converts to a finite float; it is then
    standardised with D's mean and standard deviation. Any other column is categorical
    with the sorted distinct values of D as its categories (code ``-1`` for a value D does
    not hold, e.g. a synthetic value). Both are functions of D only.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_columns)
        The pool D.

    Attributes
    ----------
    numeric : ndarray of int
        Indices of the numeric columns.
    categorical : ndarray of int
        Indices of the categorical columns.
    categories : list of ndarray
        Categories of each categorical column.

    Examples
    --------
    >>> enc = RecordEncoder(np.array([[1.0, "a"], [3.0, "b"]], dtype=object))
    >>> enc.transform(np.array([[2.0, "b"]], dtype=object))
    (array([[0.]]), array([[1]]))
    """

    def __init__(self, X: ArrayLike):
        X = np.asarray(X, dtype=object) if not isinstance(X, np.ndarray) else X
        if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
            raise ValueError(f"RecordEncoder: X must be a 2-D array with at least 2 rows; got shape {X.shape}.")
        numeric, categorical, self.mean, self.scale, self.categories = [], [], [], [], []
        for j in range(X.shape[1]):
            values = _numeric_column(X[:, j])
            if values is not None:
                numeric.append(j)
                self.mean.append(values.mean())
                sd = values.std()
                self.scale.append(sd if sd > 0 else 1.0)
            else:
                categorical.append(j)
                self.categories.append(np.unique(X[:, j].astype(str)))
        self.numeric = np.array(numeric, dtype=np.int64)
        self.categorical = np.array(categorical, dtype=np.int64)
        self.mean, self.scale = np.array(self.mean), np.array(self.scale)

    def transform(self, X: ArrayLike):
        """``(standardised numeric block (n, p), categorical codes (n, q))``; unknown values -> -1."""
        X = np.asarray(X)
        num = np.empty((X.shape[0], self.numeric.size))
        for i, j in enumerate(self.numeric):
            values = _numeric_column(X[:, j])
            if values is None:
                raise ValueError(
                    f"RecordEncoder: column {j} is numeric in D but the records to encode hold "
                    "non-numeric or non-finite values there; encode records of the same table."
                )
            num[:, i] = (values - self.mean[i]) / self.scale[i]
        codes = np.empty((X.shape[0], self.categorical.size), dtype=np.int64)
        for i, (j, cats) in enumerate(zip(self.categorical, self.categories)):
            col = X[:, j].astype(str)
            pos = np.minimum(np.searchsorted(cats, col), cats.size - 1)
            codes[:, i] = np.where(cats[pos] == col, pos, -1)
        return num, codes

    def one_hot(self, codes, weights=None):
        """Codes -> one-hot block (a code of -1 is the zero vector), optionally weighted per column."""
        sizes = [c.size for c in self.categories]
        out = np.zeros((codes.shape[0], int(sum(sizes))))
        start = 0
        for i, size in enumerate(sizes):
            ok = codes[:, i] >= 0
            out[np.flatnonzero(ok), start + codes[ok, i]] = 1.0 if weights is None else weights[i]
            start += size
        return out

    def embed(self, X):
        """Records as points of R^d: standardised numbers, one-hot categories scaled by 1/sqrt(2)
        (two different categories are at distance 1, the numbers' unit)."""
        num, codes = self.transform(X)
        return np.hstack([num, self.one_hot(codes) / math.sqrt(2.0)])


# ----------------------------------------------------------------------------- closest record
def closest_record_distance(X: ArrayLike, synthetic: ArrayLike) -> np.ndarray:
    """Euclidean distance from each row of ``X`` to its nearest row of ``synthetic``.

    Computed in blocks of rows (memory O(block), not O(n_rows x n_synthetic)).

    Parameters
    ----------
    X : array-like of shape (n_rows, d)
    synthetic : array-like of shape (n_synthetic, d)

    Returns
    -------
    ndarray of shape (n_rows,)

    Examples
    --------
    >>> closest_record_distance([[0.0, 0.0], [3.0, 4.0]], [[0.0, 0.0]]).tolist()
    [0.0, 5.0]
    """
    X = np.asarray(X, dtype=np.float64)
    S = np.asarray(synthetic, dtype=np.float64)
    s2 = np.sum(S**2, axis=1)
    out = np.empty(X.shape[0])
    step = max(1, _BLOCK // max(1, S.shape[0]))
    for a in range(0, X.shape[0], step):
        B = X[a:a + step]
        sq = np.sum(B**2, axis=1)[:, None] - 2 * B @ S.T + s2[None, :]
        out[a:a + step] = np.sqrt(np.maximum(sq.min(axis=1), 0.0))
    return out


def closest_record_signal(model, X: ArrayLike, y=None, *, n_samples: int = 1000, random_state=0) -> np.ndarray:
    """Distance-to-closest-record attack on a synthesizer: minus each row's distance to the
    nearest of ``n_samples`` synthetic records (larger = more likely a training record).

    Pass it as ``output=`` to :func:`skmip.audit.game.play_membership_game` (with
    ``functools.partial`` to change ``n_samples``). Any fitted object with
    ``sample(n_samples, random_state=...)`` works. Distances are Euclidean on the raw
    (numeric) columns; :class:`ClosestRecordAttack` is the same attack on the encoding of
    :class:`RecordEncoder` (mixed and categorical columns).

    Parameters
    ----------
    model : fitted synthesizer
    X : array-like of shape (n_rows, n_features)
        The records to score.
    y : ignored
    n_samples : int, default=1000
        Synthetic records drawn from ``model``.
    random_state : int, default=0
        Seed of the draw (post-processing of the release: fixing it costs no privacy).

    Returns
    -------
    ndarray of shape (n_rows,)

    Examples
    --------
    >>> from skmip.audit.synth_audit import CopyingSynthesizer
    >>> X = np.array([[0.0, 0.0], [3.0, 4.0]])
    >>> closest_record_signal(CopyingSynthesizer().fit(X[:1]), X, n_samples=5).tolist()
    [-0.0, -5.0]
    """
    synthetic = np.asarray(model.sample(n_samples, random_state=random_state), dtype=np.float64)
    return -closest_record_distance(X, synthetic)


# ----------------------------------------------------------------------------- densities
def _log_kernel_matrix(num_a, onehot_a, num_b, onehot_b, h, log_diff, log_gain):
    """log K(a_i, b_j) of the product kernel for blocks a, b (see :func:`kde_log_density`)."""
    out = np.full((num_a.shape[0], num_b.shape[0]), log_diff)
    if num_a.shape[1]:
        sq = np.sum(num_a**2, 1)[:, None] - 2 * num_a @ num_b.T + np.sum(num_b**2, 1)[None, :]
        out += -0.5 * np.maximum(sq, 0.0) / h**2 - num_a.shape[1] * math.log(math.sqrt(2 * math.pi) * h)
    if onehot_a.shape[1]:
        out += (onehot_a * log_gain) @ onehot_b.T
    return out


def kde_log_density(points, data, encoder: RecordEncoder, *, bandwidth: float = 0.5, smoothing: float = 0.1,
                    leave_one_out: bool = False) -> np.ndarray:
    r"""Log density of ``points`` under a product-kernel KDE of ``data``.

    The kernel is Gaussian with bandwidth ``h`` on the standardised numeric columns and the
    Aitchison-Aitken kernel on each categorical column with ``c`` categories,
    :math:`K(x, y) = 1 - \lambda` if :math:`x = y` and :math:`\lambda/(c - 1)` otherwise
    (a probability over the ``c`` categories), so the estimate is a density with respect to
    Lebesgue measure times counting measure on mixed data (Li & Racine 2003).

    Parameters
    ----------
    points, data : array-like of shape (n, n_columns)
        Records of the table ``encoder`` was fitted on.
    encoder : RecordEncoder
    bandwidth : float, default=0.5
        ``h`` (in standard deviations).
    smoothing : float, default=0.1
        ``lambda`` in (0, 1).
    leave_one_out : bool, default=False
        ``points`` is ``data`` and each point's own kernel is left out (for bandwidth selection).

    Returns
    -------
    ndarray of shape (n_points,)

    References
    ----------
    J. Aitchison, C. Aitken (1976), Biometrika 63(3). Q. Li, J. Racine (2003), "Nonparametric
    estimation of distributions with categorical and continuous data", J. Multivariate Anal. 86.
    """
    num_p, codes_p = encoder.transform(points)
    num_d, codes_d = encoder.transform(data)
    sizes = np.array([c.size for c in encoder.categories], dtype=np.float64)
    multi = sizes > 1
    # log K = sum_j log(lambda/(c_j-1)) + sum_j [x_j = y_j] log((1-lambda)(c_j-1)/lambda);
    # one-category columns carry no information (K = 1).
    log_diff = float(np.sum(np.log(smoothing / (sizes[multi] - 1)))) if multi.any() else 0.0
    gain = np.where(multi, np.log((1 - smoothing) * np.maximum(sizes - 1, 1) / smoothing), 0.0)
    oh_p, oh_d = encoder.one_hot(codes_p, gain), encoder.one_hot(codes_d)
    out = np.empty(num_p.shape[0])
    step = max(1, _BLOCK // max(1, num_d.shape[0]))
    for a in range(0, num_p.shape[0], step):
        L = _log_kernel_matrix(num_p[a:a + step], oh_p[a:a + step], num_d, oh_d, bandwidth, log_diff, 1.0)
        if leave_one_out:
            L[np.arange(L.shape[0]), np.arange(a, a + L.shape[0])] = -np.inf
        out[a:a + step] = logsumexp(L, axis=1)
    return out - math.log(num_d.shape[0] - (1 if leave_one_out else 0))


_BANDWIDTHS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5)
_SMOOTHINGS = (0.01, 0.03, 0.1, 0.2, 0.35, 0.5)


def select_kde_bandwidth(reference, encoder: RecordEncoder, *, max_rows: int = 1000, random_state=0):
    """``(bandwidth, smoothing)`` maximising the leave-one-out log-likelihood of ``reference``.

    Likelihood cross-validation (Duin 1976; Li & Racine 2003 for mixed data) over a fixed
    grid, on at most ``max_rows`` rows drawn with ``random_state``. A function of the
    reference data only.

    Returns
    -------
    (float, float)
    """
    reference = np.asarray(reference)
    if reference.shape[0] > max_rows:
        rows = np.random.default_rng(random_state).choice(reference.shape[0], max_rows, replace=False)
        reference = reference[np.sort(rows)]
    hs = _BANDWIDTHS if encoder.numeric.size else (1.0,)
    lams = _SMOOTHINGS if encoder.categorical.size else (0.1,)
    best, arg = -np.inf, (hs[0], lams[0])
    for h in hs:
        for lam in lams:
            ll = kde_log_density(reference, reference, encoder, bandwidth=h, smoothing=lam,
                                 leave_one_out=True).sum()
            if ll > best:
                best, arg = ll, (h, lam)
    return arg
