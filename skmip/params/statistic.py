"""Released statistics: :class:`skmip.release.statistic.Statistic` (a vector, a symmetric or a
positive semidefinite matrix computed from the data)."""

from __future__ import annotations

import numpy as np

from skmip.params._base import _BlockAdapter, _is_instance, _like, _require
from skmip.params._linalg import _pack_symmetric, _project_psd, _unpack_symmetric


class StatisticAdapter(_BlockAdapter):
    """:class:`skmip.release.statistic.Statistic`: its ``statistic_``, laid out by ``structure_``.

    Notes
    -----
    ``structure_ == "vector"``: every entry of ``statistic_`` (C order), no projection.
    ``"symmetric"``: the upper triangle (diagonal included) of the square matrix, each free
    entry once (see :class:`CovarianceAdapter` for why). ``"psd"``: the same, and
    :meth:`project` clips negative eigenvalues to zero -- the nearest positive semidefinite
    matrix in Frobenius norm (Higham 1988) -- e.g. for the second-moment matrix of Izzo
    et al., Section 5.2.

    Examples
    --------
    >>> from skmip.params import get_adapter
    >>> from skmip.release.statistic import Statistic
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> stat = Statistic("second_moment").fit(X)
    >>> get_adapter(stat).get_vector(stat).shape  # 4 * 5 / 2
    (10,)
    """

    def _read(self, estimator):
        _require(type(self).__name__, estimator, ("statistic_", "structure_"))
        if estimator.structure_ == "vector":
            return [np.asarray(estimator.statistic_, dtype=np.float64).ravel()]
        return [_pack_symmetric(estimator.statistic_)]

    def _write(self, estimator, blocks):
        old = estimator.statistic_
        if estimator.structure_ == "vector":
            estimator.statistic_ = _like(old, blocks[0])
        else:
            estimator.statistic_ = _like(old, _unpack_symmetric(blocks[0], np.shape(old)[0]))

    def project(self, estimator):
        """Nearest positive semidefinite matrix for ``structure_ == "psd"``."""
        _require(type(self).__name__, estimator, ("statistic_", "structure_"))
        if estimator.structure_ == "psd":
            mat = np.asarray(estimator.statistic_, dtype=np.float64)
            estimator.statistic_ = _like(estimator.statistic_, _project_psd(mat, 0.0))
        return estimator

    def _released(self, estimator):
        return {"statistic_", "structure_"}


def _is_statistic(estimator):
    # skmip.release.statistic sits above this package: recognised by import path, never imported.
    return _is_instance(estimator, "skmip.release.statistic.Statistic")
