"""Gaussian models: the estimators of ``sklearn.covariance`` and ``GaussianMixture``. Their
free parameters are locations and the free entries of symmetric matrices; a release projects
the matrices to positive definite ones and recomputes the inverses from them.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from skmip.utils.validation import check_option

from skmip.params._base import _BlockAdapter, _like, _require
from skmip.params._linalg import (
    _default_floor,
    _pack_symmetric,
    _project_psd,
    _project_simplex,
    _unpack_symmetric,
)


class CovarianceAdapter(_BlockAdapter):
    """Estimators of ``sklearn.covariance``: ``location_`` and one symmetric matrix.

    Covers ``EmpiricalCovariance``, ``ShrunkCovariance``, ``LedoitWolf``, ``OAS``,
    ``MinCovDet``, ``GraphicalLasso(CV)`` and ``EllipticEnvelope`` (which also releases
    its decision threshold ``offset_``, a parameter computed on the data).

    Parameters
    ----------
    eigenvalue_floor : float or None, default=None
        :meth:`project` clips the eigenvalues of the released matrix to at least this value.
        ``None``: ``sqrt(eps)`` times the largest eigenvalue magnitude of the noised
        matrix (a function of released values only, so still post-processing).
    matrix : {"auto", "covariance", "precision"}, default="auto"
        Which matrix carries the free parameters; the other is its inverse
        (``scipy.linalg.pinvh``). ``"auto"``: ``"precision"`` for ``GraphicalLasso`` and
        ``GraphicalLassoCV``, whose estimate *is* the (sparse) precision and whose
        ``covariance_`` is its inverse only up to the solver tolerance; ``"covariance"``
        for the others.

    Notes
    -----
    The vector is ``location_`` (left out with ``assume_centered=True``, where it is the
    constant zero), then the matrix's entries ``[i, j]`` for ``i <= j`` row by row, then
    ``offset_`` for ``EllipticEnvelope``. Each free entry appears once because
    (1) independent noise on ``(i, j)`` and ``(j, i)`` would make the released matrix
    asymmetric, and (2) sigma is estimated per coordinate and the noise of Izzo Theorem 9
    (density proportional to ``exp(-||x|| / (c sigma))`` in ``d`` dimensions) has a radius
    that grows with ``d``: a duplicated coordinate adds noise everywhere and no information.

    :meth:`set_vector` recomputes the other matrix from the written one (``precision_``
    is ``None`` with ``store_precision=False``), so no un-noised matrix survives.
    :meth:`project` symmetrises, clips the eigenvalues to ``eigenvalue_floor`` (the nearest
    such matrix in Frobenius norm, Higham 1988) and recomputes the inverse, so
    ``mahalanobis``, ``score``, ``error_norm`` and ``EllipticEnvelope.predict`` work on the
    released object. :meth:`scrub` removes ``dist_`` and ``support_`` (one value per
    training sample), ``raw_*``, ``shrinkage_``, ``costs_``, ``n_iter_`` and
    cross-validation results.

    References
    ----------
    N. J. Higham, "Computing a nearest symmetric positive semidefinite matrix", Linear
    Algebra Appl. 103 (1988) 103-118.

    Examples
    --------
    >>> from sklearn.covariance import LedoitWolf
    >>> from sklearn.datasets import load_wine
    >>> X, _ = load_wine(return_X_y=True)
    >>> est = LedoitWolf().fit(X)
    >>> adapter = CovarianceAdapter()
    >>> adapter.get_vector(est).shape  # 13 + 13 * 14 / 2
    (104,)
    >>> noisy = adapter.get_vector(est).copy()
    >>> noisy[13] = -1.0  # a negative variance: invalid
    >>> import numpy as np
    >>> est = adapter.project(adapter.set_vector(est, noisy))
    >>> bool(np.linalg.eigvalsh(est.covariance_).min() > 0)
    True
    """

    def __init__(self, *, eigenvalue_floor: float | None = None, matrix: str = "auto"):
        self.eigenvalue_floor = eigenvalue_floor
        self.matrix = matrix

    def _names(self, estimator):
        """(free matrix attribute, derived matrix attribute)."""
        matrix = check_option(
            type(self).__name__, "matrix", self.matrix, ("auto", "covariance", "precision")
        )
        if matrix == "auto":
            from sklearn.covariance import GraphicalLasso, GraphicalLassoCV

            is_glasso = isinstance(estimator, (GraphicalLasso, GraphicalLassoCV))
            matrix = "precision" if is_glasso else "covariance"
        return ("precision_", "covariance_") if matrix == "precision" else ("covariance_", "precision_")

    @staticmethod
    def _has_location(estimator):
        return not getattr(estimator, "assume_centered", False)

    def _read(self, estimator):
        free, _ = self._names(estimator)
        _require(type(self).__name__, estimator, ("location_", free))
        if getattr(estimator, free) is None:
            raise ValueError(
                f"{type(self).__name__}: this {type(estimator).__name__} stores no {free} "
                "(store_precision=False); use matrix='covariance'."
            )
        blocks = []
        if self._has_location(estimator):
            blocks.append(np.asarray(estimator.location_, dtype=np.float64).ravel())
        blocks.append(_pack_symmetric(getattr(estimator, free)))
        if "offset_" in vars(estimator):
            blocks.append(np.atleast_1d(np.asarray(estimator.offset_, dtype=np.float64)))
        return blocks

    def _write(self, estimator, blocks):
        blocks = list(blocks)
        free, _ = self._names(estimator)
        if self._has_location(estimator):
            estimator.location_ = _like(estimator.location_, blocks.pop(0))
        old = getattr(estimator, free)
        setattr(estimator, free, _like(old, _unpack_symmetric(blocks.pop(0), np.shape(old)[0])))
        if "offset_" in vars(estimator):
            estimator.offset_ = _like(estimator.offset_, blocks.pop(0))
        self._refresh(estimator)

    def _refresh(self, estimator):
        free, derived = self._names(estimator)
        inverse = scipy.linalg.pinvh(getattr(estimator, free))
        inverse = 0.5 * (inverse + inverse.T)  # pinvh is symmetric only up to rounding
        if derived == "precision_" and not getattr(estimator, "store_precision", True):
            estimator.precision_ = None
        elif getattr(estimator, derived, None) is None:
            setattr(estimator, derived, inverse)
        else:
            setattr(estimator, derived, _like(getattr(estimator, derived), inverse))

    def project(self, estimator):
        """Symmetric matrix with eigenvalues >= the floor; its inverse recomputed."""
        free, _ = self._names(estimator)
        _require(type(self).__name__, estimator, (free,))
        mat = np.asarray(getattr(estimator, free), dtype=np.float64)
        mat = 0.5 * (mat + mat.T)
        floor = self.eigenvalue_floor
        if floor is None:
            floor = _default_floor(np.linalg.eigvalsh(mat))
        setattr(estimator, free, _like(getattr(estimator, free), _project_psd(mat, floor)))
        self._refresh(estimator)
        return estimator

    def _released(self, estimator):
        return {"location_", "covariance_", "precision_", "offset_"}

    def __repr__(self):
        return (
            f"{type(self).__name__}(eigenvalue_floor={self.eigenvalue_floor!r}, matrix={self.matrix!r})"
        )


def _is_covariance(estimator):
    from sklearn.covariance import EmpiricalCovariance

    return isinstance(estimator, EmpiricalCovariance)


class GaussianMixtureAdapter(_BlockAdapter):
    """``GaussianMixture`` (every ``covariance_type``): weights, means, covariances.

    Parameters
    ----------
    min_weight : float or None, default=None
        :meth:`project` projects the weights onto ``{w : w_k >= min_weight, sum w = 1}``.
        ``None`` means ``10 * eps``, the guard scikit-learn itself adds to component masses
        during EM, so that no released weight is exactly zero (``score_samples`` takes its
        logarithm). ``0.0`` gives the plain probability simplex.

    Notes
    -----
    The vector is ``weights_`` (k), ``means_`` (k * d, row by row), then the free
    covariance entries: ``full``, the upper triangle of each component's matrix
    (k * d(d+1)/2); ``tied``, the upper triangle of the shared matrix; ``diag``, all k * d
    variances; ``spherical``, the k variances. Symmetric entries appear once for the reasons
    given in :class:`CovarianceAdapter`.

    :meth:`canonicalize` sorts the components lexicographically by their mean (first
    coordinate, ties by the next); mixture components are exchangeable, so sigma over split
    fits is meaningless without a canonical order.

    :meth:`project` maps the weights to the simplex by Euclidean projection (Held, Wolfe
    & Crowder 1974), the covariances to symmetric matrices with eigenvalues (variances for
    ``diag``/``spherical``) at least ``reg_covar`` -- the floor scikit-learn's EM adds
    itself -- and recomputes ``precisions_cholesky_`` and ``precisions_`` with numpy/scipy
    (``L = cholesky(cov)``, ``precisions_cholesky_ = inv(L).T``, as scikit-learn's
    private ``_compute_precision_cholesky``), so ``predict``, ``predict_proba``,
    ``score_samples`` and ``sample`` work on the released model. :meth:`set_vector` removes
    the precisions when the written covariances are not positive definite, until
    :meth:`project` recomputes them. :meth:`scrub` removes ``lower_bound_``,
    ``lower_bounds_``, ``n_iter_`` and ``converged_``.

    References
    ----------
    M. Held, P. Wolfe, H. P. Crowder, "Validation of subgradient optimization",
    Math. Programming 6 (1974) 62-88. J. Duchi, S. Shalev-Shwartz, Y. Singer, T. Chandra,
    "Efficient projections onto the l1-ball for learning in high dimensions", ICML 2008.

    Examples
    --------
    >>> from sklearn.mixture import GaussianMixture
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> gm = GaussianMixture(3, covariance_type="diag", random_state=0).fit(X)
    >>> adapter = GaussianMixtureAdapter()
    >>> adapter.get_vector(gm).shape  # 3 + 3 * 4 + 3 * 4
    (27,)
    >>> means = adapter.canonicalize(gm).means_[:, 0]
    >>> bool((means[:-1] <= means[1:]).all())
    True
    """

    def __init__(self, *, min_weight: float | None = None):
        self.min_weight = min_weight

    _PARAMS = ("weights_", "means_", "covariances_")

    def _read(self, estimator):
        _require(type(self).__name__, estimator, self._PARAMS)
        cov = np.asarray(estimator.covariances_, dtype=np.float64)
        kind = estimator.covariance_type
        if kind == "full":
            cov_block = np.concatenate([_pack_symmetric(c) for c in cov])
        elif kind == "tied":
            cov_block = _pack_symmetric(cov)
        else:
            cov_block = cov.ravel()
        return [
            np.asarray(estimator.weights_, dtype=np.float64).ravel(),
            np.asarray(estimator.means_, dtype=np.float64).ravel(),
            cov_block,
        ]

    def _write(self, estimator, blocks):
        weights, means, cov_block = blocks
        estimator.weights_ = _like(estimator.weights_, weights)
        estimator.means_ = _like(estimator.means_, means)
        kind, old = estimator.covariance_type, estimator.covariances_
        if kind == "full":
            k, d = np.shape(old)[:2]
            size = d * (d + 1) // 2
            cov = np.stack(
                [_unpack_symmetric(cov_block[i * size : (i + 1) * size], d) for i in range(k)]
            )
        elif kind == "tied":
            cov = _unpack_symmetric(cov_block, np.shape(old)[0])
        else:
            cov = cov_block
        estimator.covariances_ = _like(old, cov)
        self._refresh(estimator, strict=False)

    @staticmethod
    def _refresh(estimator, *, strict):
        """Recompute the precisions from ``covariances_``; drop them if it is impossible."""
        cov = np.asarray(estimator.covariances_, dtype=np.float64)
        kind = estimator.covariance_type
        try:
            if kind in ("full", "tied"):
                mats = cov[None] if kind == "tied" else cov
                chol = np.empty_like(mats)
                eye = np.eye(mats.shape[-1])
                for i, c in enumerate(mats):
                    lower = scipy.linalg.cholesky(c, lower=True)
                    chol[i] = scipy.linalg.solve_triangular(lower, eye, lower=True).T
                prec = chol @ np.swapaxes(chol, -1, -2)
                if kind == "tied":
                    chol, prec = chol[0], prec[0]
            else:
                if np.any(cov <= 0):
                    raise np.linalg.LinAlgError("non-positive variance")
                chol = 1.0 / np.sqrt(cov)
                prec = 1.0 / cov
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
            if strict:
                raise
            for name in ("precisions_cholesky_", "precisions_"):
                if name in vars(estimator):
                    delattr(estimator, name)
            return
        dtype = np.asarray(estimator.covariances_).dtype
        estimator.precisions_cholesky_ = chol.astype(dtype, copy=False)
        estimator.precisions_ = prec.astype(dtype, copy=False)

    def canonicalize(self, estimator):
        """Sort the components lexicographically by mean (first coordinate first)."""
        _require(type(self).__name__, estimator, self._PARAMS)
        means = np.asarray(estimator.means_)
        order = np.lexsort(means.T[::-1])
        estimator.weights_ = estimator.weights_[order]
        estimator.means_ = estimator.means_[order]
        per_component = ["covariances_", "precisions_cholesky_", "precisions_"]
        if estimator.covariance_type != "tied":
            for name in per_component:
                if name in vars(estimator):
                    setattr(estimator, name, getattr(estimator, name)[order])
        return estimator

    def project(self, estimator):
        """Simplex weights, covariances floored at ``reg_covar``, precisions recomputed."""
        _require(type(self).__name__, estimator, self._PARAMS)
        k = np.size(estimator.weights_)
        floor = 10 * np.finfo(np.float64).eps if self.min_weight is None else float(self.min_weight)
        if not 0.0 <= floor * k < 1.0:
            raise ValueError(
                f"{type(self).__name__}: min_weight must be in [0, 1/n_components) = [0, {1 / k:g}); "
                f"got {self.min_weight!r}. The weights of {k} components must sum to one."
            )
        estimator.weights_ = _like(estimator.weights_, _project_simplex(estimator.weights_, floor))
        cov = np.asarray(estimator.covariances_, dtype=np.float64)
        kind = estimator.covariance_type
        reg = float(getattr(estimator, "reg_covar", 0.0))
        if kind in ("full", "tied"):
            mats = cov[None] if kind == "tied" else cov
            out = np.empty_like(mats)
            for i, c in enumerate(mats):
                sym = 0.5 * (c + c.T)
                floor_i = reg if reg > 0 else _default_floor(np.linalg.eigvalsh(sym))
                out[i] = _project_psd(sym, floor_i)
            cov = out[0] if kind == "tied" else out
        else:
            cov = np.maximum(cov, reg if reg > 0 else _default_floor(cov))
        estimator.covariances_ = _like(estimator.covariances_, cov)
        self._refresh(estimator, strict=True)
        return estimator

    def _released(self, estimator):
        return {"weights_", "means_", "covariances_", "precisions_cholesky_", "precisions_"}

    def __repr__(self):
        return f"{type(self).__name__}(min_weight={self.min_weight!r})"


def _is_gaussian_mixture(estimator):
    from sklearn.mixture import GaussianMixture

    return isinstance(estimator, GaussianMixture)
