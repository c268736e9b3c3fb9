"""A plain statistic of the data (a mean, a second-moment matrix) as a scikit-learn estimator.

Izzo et al.'s wrapper (Algorithm 1) privatises any algorithm whose output is a vector, "a
simple statistical query on D, such as mean estimation" (Section 4) as much as a trained
model. :class:`Statistic` turns a function ``X -> array`` into an estimator, so the same
machinery (sigma over half-splits, noise, projection) releases it; its parameter adapter is
:class:`skmip.params.StatisticAdapter`.
"""

from __future__ import annotations

import copy
from typing import Callable

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.utils.validation import validate_data

from skmip.utils.validation import check_option, input_errors

__all__ = ["Statistic", "column_mean", "second_moment", "mean_and_second_moment"]


def column_mean(X: ArrayLike) -> np.ndarray:
    """The mean of each column, ``(1/n) sum_i x_i``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    mean : ndarray of shape (n_features,)

    Examples
    --------
    >>> column_mean([[1.0, 2.0], [3.0, 6.0]])
    array([2., 4.])
    """
    return np.asarray(X, dtype=np.float64).mean(axis=0)


def second_moment(X: ArrayLike) -> np.ndarray:
    """The uncentred second-moment matrix ``(1/n) sum_i x_i x_i^T``.

    This is the target of the synthetic-data experiment of Izzo et al., Section 5.2, which
    learns ``A`` minimising ``||A - (1/n) sum_i x_i x_i^T||_F^2``; for zero-mean data it
    estimates the covariance ``Sigma``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    moment : ndarray of shape (n_features, n_features)
        Symmetric positive semidefinite.

    References
    ----------
    Z. Izzo, J. Yoon, S. O. Arik, J. Zou, "Provable Membership Inference Privacy",
    Section 5.2 (objective for ``A``).

    Examples
    --------
    >>> second_moment([[1.0, 0.0], [1.0, 2.0]])
    array([[1., 1.],
           [1., 2.]])
    """
    X = np.asarray(X, dtype=np.float64)
    return X.T @ X / X.shape[0]


def mean_and_second_moment(X: ArrayLike) -> np.ndarray:
    """The column means and the upper triangle of the uncentred second moment, as one vector.

    ``[mean (d entries), A[0, 0], A[0, 1], ..., A[d-1, d-1]]`` with
    ``A = (1/n) sum_i x_i x_i^T``. Unlike the centred covariance, every entry is a mean over
    the rows of a fixed feature map ``phi(x) = (x, upper(x x^T))``, so swapping one row moves
    it by exactly ``(phi(x*) - phi(e)) / n`` (the closed-form engine of
    :mod:`skmip.calibration.swap`); the covariance ``A - mean mean^T`` is post-processing.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_features + n_features * (n_features + 1) / 2,)

    Examples
    --------
    >>> mean_and_second_moment([[0.0, 1.0], [2.0, 3.0]])
    array([1., 2., 2., 3., 5.])
    """
    X = np.asarray(X, dtype=np.float64)
    moment = X.T @ X / X.shape[0]
    return np.concatenate([X.mean(axis=0), moment[np.triu_indices(X.shape[1])]])


# alias -> (function, structure of its output)
_ALIASES: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "mean": (column_mean, "vector"),
    "second_moment": (second_moment, "psd"),
    "mean_and_second_moment": (mean_and_second_moment, "vector"),
}
#: Aliases whose value on a subset is the mean of its rows' values on single rows: the
#: closed-form swap engine (skmip.calibration.swap.closed_form) is exact for them.
MEAN_OF_FEATURES = ("mean", "second_moment", "mean_and_second_moment")
_STRUCTURES = ("vector", "symmetric", "psd")


class Statistic(BaseEstimator):
    """A statistic of the training data, ``statistic_ = func(X)``, as an estimator.

    Parameters
    ----------
    func : {"mean", "second_moment", "mean_and_second_moment"}, callable or None, default=None
        The statistic. ``"mean"`` is :func:`column_mean`, ``"second_moment"`` is
        :func:`second_moment`, ``"mean_and_second_moment"`` is
        :func:`mean_and_second_moment` (these three are means of per-row features, for which
        ``estimate_swap_deltas(..., engine="closed_form")`` is exact); a callable ``func(X, **kw_args) -> array-like`` is used as
        given. ``None`` means ``"mean"``.
    kw_args : dict or None, default=None
        Extra keyword arguments for a callable ``func``.
    structure : {"vector", "symmetric", "psd"} or None, default=None
        How the released statistic is parameterised and projected
        (:class:`skmip.params.StatisticAdapter`): ``"vector"``, every entry is free;
        ``"symmetric"``, a symmetric matrix, its upper triangle is free; ``"psd"``, the same
        and the release is projected to the positive semidefinite cone. ``None``:
        ``"psd"`` for ``"second_moment"``, ``"vector"`` otherwise.

    Attributes
    ----------
    statistic_ : ndarray
        ``func(X)`` as float64, in the shape ``func`` returned.
    structure_ : str
        The resolved ``structure``.
    n_features_in_ : int
        Number of columns of ``X``.
    feature_names_in_ : ndarray of shape (n_features,)
        Column names of ``X``, when it has string column names.

    Raises
    ------
    ValueError
        From :meth:`fit`: unknown alias or structure, a ``"symmetric"``/``"psd"`` statistic
        that is not a symmetric matrix, or a statistic with non-finite entries.
    TypeError
        From :meth:`fit`: ``func`` neither a known alias nor callable.

    Notes
    -----
    Izzo et al.'s Algorithm 1 needs the output of a fixed algorithm on ``D_train`` as a
    vector; a statistic is the simplest such algorithm, and post-processing (Theorem 3)
    lets a privatised statistic drive a generator: Section 5.2 releases ``A`` close to the
    second moment and samples ``G(z) = W z`` with ``W = (A + A^T)^{1/2}``.

    The paper noises every entry of ``A`` (d^2 coordinates) and symmetrises afterwards.
    The default ``structure="psd"`` for ``"second_moment"`` noises each free entry once
    (d(d+1)/2 coordinates; the noise radius of Izzo Theorem 9 grows with the number of
    coordinates) and projects to the PSD cone, after which ``W`` is its square root. The
    paper's variant remains available as ``Statistic("second_moment", structure="vector")``.

    ``func`` is stored as given, so :func:`sklearn.base.clone` and ``get_params`` work with
    any callable; a ``lambda`` or a local function cannot be pickled (nor sent to
    ``joblib`` worker processes), a module-level function or an alias can.

    References
    ----------
    Z. Izzo, J. Yoon, S. O. Arik, J. Zou, "Provable Membership Inference Privacy",
    Section 4 (Algorithm 1), Theorem 3, Section 5.2.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> Statistic("mean").fit(X).statistic_.round(3)
    array([5.843, 3.057, 3.758, 1.199])
    >>> stat = Statistic("second_moment").fit(X)
    >>> stat.statistic_.shape, stat.structure_
    ((4, 4), 'psd')
    >>> import numpy as np
    >>> Statistic(np.median, kw_args={"axis": 0}).fit(X).statistic_
    array([5.8 , 3.  , 4.35, 1.3 ])
    """

    def __init__(
        self,
        func: str | Callable[..., ArrayLike] | None = None,
        *,
        kw_args: dict | None = None,
        structure: str | None = None,
    ):
        self.func = func
        self.kw_args = kw_args
        self.structure = structure

    def _resolve(self):
        func = "mean" if self.func is None else self.func
        if isinstance(func, str):
            check_option(
                type(self).__name__,
                "func",
                func,
                tuple(_ALIASES),
                why="Pass one of these names or a callable func(X) -> array.",
            )
            func, default = _ALIASES[func]
        elif callable(func):
            default = "vector"
        else:
            raise TypeError(
                f"{type(self).__name__}: func must be one of {sorted(_ALIASES)}, a callable "
                f"func(X) -> array, or None; got {self.func!r} of type {type(self.func).__name__}."
            )
        structure = default if self.structure is None else self.structure
        check_option(
            type(self).__name__,
            "structure",
            structure,
            _STRUCTURES,
            why="It tells the parameter adapter which entries are free.",
        )
        return func, structure

    def fit(self, X: ArrayLike, y=None) -> "Statistic":
        """Compute the statistic on ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : ignored

        Returns
        -------
        self : Statistic
        """
        func, structure = self._resolve()
        # Validate on a copy: nothing may be recorded on self before the whole fit succeeded.
        probe = copy.copy(self)
        with input_errors(type(self).__name__):
            X = validate_data(probe, X, dtype=np.float64)
        value = np.asarray(func(X, **(self.kw_args or {})), dtype=np.float64)
        if structure != "vector" and (value.ndim != 2 or value.shape[0] != value.shape[1]):
            raise ValueError(
                f"{type(self).__name__}: structure={structure!r} needs func to return a square "
                f"matrix; got shape {value.shape}. Use structure='vector' for other shapes."
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(
                f"{type(self).__name__}: func returned non-finite values {value!r}; a statistic "
                "with NaN or infinite entries cannot be noised."
            )
        if structure != "vector":
            if not np.allclose(value, value.T, rtol=1e-10, atol=1e-12 * np.abs(value).max()):
                raise ValueError(
                    f"{type(self).__name__}: structure={structure!r} needs a symmetric matrix; "
                    "func returned an asymmetric one. Use structure='vector' to release every entry."
                )
            # Remove rounding asymmetry so that the upper triangle is the whole statistic.
            value = 0.5 * (value + value.T)
        fitted = {"statistic_": value, "structure_": structure, "n_features_in_": probe.n_features_in_}
        if hasattr(probe, "feature_names_in_"):
            fitted["feature_names_in_"] = probe.feature_names_in_
        self.__dict__.pop("feature_names_in_", None)
        self.__dict__.update(fitted)
        return self
