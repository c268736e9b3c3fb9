"""Parameter adapters: the one place that knows how a fitted estimator stores its parameters.

An adapter turns a fitted estimator into a 1-D float vector and back, puts
permutation-symmetric parameters in a canonical order, projects noised parameters back to
valid ones, and scrubs what was computed on the private data besides the parameters.
Everything else in skmip asks the adapter; nothing else special-cases ``coef_``.

The release protocol every skmip defence follows is::

    adapter = get_adapter(estimator)
    adapter.canonicalize(fitted)          # same order for every split fit
    theta = adapter.get_vector(fitted)    # free parameters, each exactly once
    adapter.set_vector(fitted, theta + noise)
    adapter.project(fitted)               # valid parameters, derived attributes refreshed
    adapter.scrub(fitted)                 # nothing else computed on the private data survives

Projection and scrubbing are post-processing: they use only the released (noised) parameters
and public information, so they keep eta-MIP (Izzo et al., Theorem 3). ``set_vector`` refreshes
every attribute derived from the parameters (precisions, ``var_``, ...), so that no attribute
computed from the un-noised parameters survives a release even if ``project`` is forgotten.

Built-in adapters (resolved by :func:`get_adapter` with ``params="auto"``), with the free
parameters that make up the vector:

* :class:`LinearModelAdapter` -- scikit-learn linear models, ``LinearSVC``/``LinearSVR``:
  ``coef_`` and the fitted intercept.
* :class:`MLPAdapter` -- ``MLPClassifier``/``MLPRegressor``: ``coefs_``, ``intercepts_``.
* :class:`CovarianceAdapter` -- ``sklearn.covariance``: ``location_`` and the upper
  triangle of the covariance (of the precision for the graphical lasso).
* :class:`GaussianMixtureAdapter` -- ``GaussianMixture``: weights, means, covariances.
* :class:`StandardScalerAdapter`, :class:`MinMaxScalerAdapter`, :class:`MaxAbsScalerAdapter`,
  :class:`RobustScalerAdapter` -- the statistics those scalers keep; :class:`StatelessAdapter`
  -- transformers without data-dependent state (no parameters).
* :class:`PipelineAdapter` -- ``Pipeline``: the vectors of all its steps, concatenated.
* :class:`StatisticAdapter` -- :class:`skmip.statistic.Statistic`: ``statistic_``.

References
----------
.. [Izzo] Z. Izzo, J. Yoon, S. O. Arik, J. Zou. "Provable Membership Inference Privacy".
   Theorem 3 (post-processing), Theorem 9 and Corollary 10 (noise), Algorithm 1.
"""

from __future__ import annotations

import functools
import numbers
import sys
import warnings
from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np
import scipy.linalg
import scipy.sparse
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from skmip._validation import check_option

__all__ = [
    "ParamAdapter",
    "AttributeAdapter",
    "LinearModelAdapter",
    "MLPAdapter",
    "CovarianceAdapter",
    "GaussianMixtureAdapter",
    "StandardScalerAdapter",
    "MinMaxScalerAdapter",
    "MaxAbsScalerAdapter",
    "RobustScalerAdapter",
    "StatelessAdapter",
    "PipelineAdapter",
    "StatisticAdapter",
    "get_adapter",
    "register_adapter",
    "scrub_diagnostics",
    "DIAGNOSTIC_ATTRIBUTES",
    "PUBLIC_ATTRIBUTES",
]

#: Fitted attributes that describe the training run on the private data rather than the
#: model: losses and scores, iteration counts, selected regularisation, per-sample masks and
#: distances, optimiser state. :func:`scrub_diagnostics` removes them wherever they appear;
#: the built-in adapters go further and keep only what they know to be released.
DIAGNOSTIC_ATTRIBUTES = (
    # losses, scores and convergence of the run on the private data
    "loss_",
    "loss_curve_",
    "best_loss_",
    "validation_scores_",
    "best_validation_score_",
    "n_iter_",
    "t_",
    "history_",
    "lower_bound_",
    "lower_bounds_",
    "converged_",
    "n_steps_",
    "costs_",
    "scores_",
    "best_score_",
    "dual_gap_",
    "eps_",
    "mse_path_",
    "cv_results_",
    "cv_alphas_",
    "criterion_",
    "noise_variance_",
    # hyper-parameters selected on the private data (CV estimators, robust fits)
    "alpha_",
    "alphas_",
    "l1_ratio_",
    "C_",
    "Cs_",
    "coefs_paths_",
    "coef_path_",
    "active_",
    "shrinkage_",
    "breakdown_",
    "n_nonzero_coefs_",
    # spectra and per-sample quantities of the training data
    "singular_",
    "rank_",
    "dist_",
    "support_",
    "outliers_",
    "inlier_mask_",
    "raw_location_",
    "raw_covariance_",
    "raw_support_",
    "n_samples_seen_",
    # optimiser state (SGD averaging, MLP solvers) computed on the private data
    "_average_coef",
    "_average_intercept",
    "_standard_coef",
    "_standard_intercept",
    "_expanded_class_weight",
    "_optimizer",
    "_best_coefs",
    "_best_intercepts",
    "_no_improvement_count",
    "_random_state",
    "_coef_indptr",
    "_intercept_indptr",
)

#: Fitted attributes that carry public information (the label set, the input schema) and
#: that predictions need. Adapters keep them.
PUBLIC_ATTRIBUTES = ("classes_", "n_features_in_", "feature_names_in_", "n_outputs_")

# Construction-time configuration that scikit-learn copies in ``clone``; never data.
_CONFIG_ATTRIBUTES = ("_sklearn_output_config", "_metadata_request", "_skl_callbacks")


@runtime_checkable
class ParamAdapter(Protocol):
    """What skmip needs to know about a fitted estimator's parameters.

    Every method works in place on a *fitted* estimator and returns it (or the vector).
    An adapter holds no state about a particular estimator, so one adapter serves every
    clone fitted during sigma estimation.
    """

    def get_vector(self, estimator) -> np.ndarray:
        """The fitted parameters as a 1-D float64 vector (a copy)."""

    def set_vector(self, estimator, vector) -> object:
        """Write ``vector`` (same layout as :meth:`get_vector`) back into ``estimator``."""

    def canonicalize(self, estimator) -> object:
        """Reorder permutation-symmetric parts (mixture components, hidden units)."""

    def project(self, estimator) -> object:
        """Map parameters to valid ones after noise (PSD, simplex) and recompute derived
        attributes (precisions, ...)."""

    def scrub(self, estimator) -> object:
        """Remove training diagnostics computed on the private data."""


def scrub_diagnostics(estimator, names: Sequence[str] = DIAGNOSTIC_ATTRIBUTES):
    """Delete the listed fitted attributes from ``estimator`` where present.

    Parameters
    ----------
    estimator : object
        Any object; modified in place.
    names : sequence of str, default=DIAGNOSTIC_ATTRIBUTES
        Attribute names to delete.

    Returns
    -------
    estimator : object
        The same object.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LogisticRegression(max_iter=1000).fit(X, y)
    >>> hasattr(scrub_diagnostics(clf), "n_iter_")
    False
    """
    for name in names:
        if name in vars(estimator):
            delattr(estimator, name)
    return estimator


# ---------------------------------------------------------------------------------------
# Small numerical helpers shared by the adapters.
# ---------------------------------------------------------------------------------------


def _pack_symmetric(matrix):
    """Upper triangle (diagonal included) of a square matrix, row by row."""
    matrix = np.asarray(matrix, dtype=np.float64)
    return matrix[np.triu_indices(matrix.shape[-1])]


def _unpack_symmetric(values, dim):
    """Inverse of :func:`_pack_symmetric`: the symmetric matrix with that upper triangle."""
    out = np.zeros((dim, dim))
    rows, cols = np.triu_indices(dim)
    out[rows, cols] = values
    out[cols, rows] = values
    return out


def _project_psd(matrix, floor):
    """Nearest (Frobenius) symmetric matrix whose eigenvalues are all >= ``floor``.

    For a symmetric matrix the nearest matrix with spectrum in ``[floor, inf)`` keeps the
    eigenvectors and clips the eigenvalues (Higham 1988, Theorem 2.1, shifted by ``floor``).
    """
    sym = 0.5 * (matrix + matrix.T)
    eigval, eigvec = np.linalg.eigh(sym)
    out = (eigvec * np.maximum(eigval, floor)) @ eigvec.T
    return 0.5 * (out + out.T)


def _project_simplex(values, floor=0.0):
    """Euclidean projection onto ``{w : w_i >= floor, sum(w) = 1}``.

    Shifting by ``floor`` turns the set into a scaled simplex of mass ``1 - k * floor``,
    onto which the sort-based algorithm of Held, Wolfe & Crowder (1974) projects exactly
    (also Duchi et al. 2008, Fig. 1).
    """
    values = np.asarray(values, dtype=np.float64)
    k = values.size
    mass = 1.0 - k * floor
    shifted = values - floor
    u = np.sort(shifted)[::-1]
    css = np.cumsum(u) - mass
    ind = np.arange(1, k + 1)
    rho = ind[u - css / ind > 0][-1]
    theta = css[rho - 1] / rho
    return np.maximum(shifted - theta, 0.0) + floor


def _handle_zeros_in_scale(scale):
    """scikit-learn's rule for near-zero scales: below ``10 * eps`` means "do not scale".

    Re-implemented because ``sklearn.preprocessing._data._handle_zeros_in_scale`` is private.
    Noise can push a released scale to zero or below; the same rule maps it to 1.0.
    """
    scale = np.array(scale, dtype=np.float64, copy=True)
    scale[scale < 10 * np.finfo(np.float64).eps] = 1.0
    return scale


def _like(old, new):
    """``new`` (float64 values) in the container type, shape and float dtype of ``old``."""
    new = np.asarray(new, dtype=np.float64)
    if isinstance(old, np.generic):
        return (
            type(old)(new.reshape(()).item())
            if np.issubdtype(type(old), np.floating)
            else new.reshape(())[()]
        )
    if isinstance(old, (float, int)) and not isinstance(old, bool):
        return float(new.reshape(()))
    if scipy.sparse.issparse(old):
        # Noise makes every entry non-zero; a dense array is the honest container.
        return new.reshape(old.shape)
    old = np.asarray(old)
    dtype = old.dtype if np.issubdtype(old.dtype, np.floating) else np.float64
    return new.reshape(old.shape).astype(dtype, copy=False)


def _as_float_array(value):
    if scipy.sparse.issparse(value):
        value = value.toarray()
    return np.asarray(value, dtype=np.float64)


def _construction_attributes(estimator):
    """Attribute names an unfitted copy of ``estimator`` has (hyper-parameters, config)."""
    try:
        with warnings.catch_warnings():
            # Cloning only to list attribute names; deprecation notices are not news here.
            warnings.simplefilter("ignore")
            return set(vars(clone(estimator))) | set(_CONFIG_ATTRIBUTES)
    except Exception:  # not clonable: fall back to scikit-learn's naming convention
        names = set(_CONFIG_ATTRIBUTES)
        if hasattr(estimator, "get_params"):
            names |= set(estimator.get_params(deep=False))
        return names | {k for k in vars(estimator) if not (k.endswith("_") or k.startswith("_"))}


def _scrub_all_but(estimator, keep):
    """Delete every fitted attribute of ``estimator`` that is not named in ``keep``.

    Fitted attributes are those an unfitted clone does not have. An allow-list rather than
    a deny-list: a new scikit-learn version that caches something else computed on the data
    (a private ``_something``) is removed without anyone having to know its name.
    """
    keep = set(keep) | set(PUBLIC_ATTRIBUTES) | _construction_attributes(estimator)
    for name in list(vars(estimator)):
        if name not in keep:
            delattr(estimator, name)
    return estimator


def _require(owner, estimator, names):
    missing = [n for n in names if not hasattr(estimator, n)]
    if missing:
        raise NotFittedError(
            f"{owner}: this {type(estimator).__name__} has no fitted attribute(s) {missing}. "
            "Fit it first; adapters read and write fitted parameters."
        )


# ---------------------------------------------------------------------------------------
# Base class: free-parameter blocks <-> one flat vector.
# ---------------------------------------------------------------------------------------


class _BlockAdapter:
    """Adapters as a list of 1-D float64 blocks of free parameters.

    Subclasses implement ``_read(est) -> list[ndarray]``, ``_write(est, blocks)`` (which must
    refresh every derived attribute) and ``_released(est) -> set[str]`` (the attributes a
    release keeps besides :data:`PUBLIC_ATTRIBUTES` and the hyper-parameters).
    """

    def _read(self, estimator):  # pragma: no cover - abstract
        raise NotImplementedError

    def _write(self, estimator, blocks):  # pragma: no cover - abstract
        raise NotImplementedError

    def _released(self, estimator):  # pragma: no cover - abstract
        raise NotImplementedError

    def get_vector(self, estimator) -> np.ndarray:
        """The free parameters of ``estimator`` as one 1-D float64 vector (a copy).

        Parameters
        ----------
        estimator : fitted estimator

        Returns
        -------
        vector : ndarray of shape (n_params,)
        """
        blocks = self._read(estimator)
        if not blocks:
            return np.empty(0)
        return np.concatenate([np.asarray(b, dtype=np.float64).ravel() for b in blocks])

    def set_vector(self, estimator, vector):
        """Write ``vector`` (laid out as :meth:`get_vector`) into ``estimator``, in place.

        Attributes derived from the parameters are recomputed from the written values (or
        removed until :meth:`project` can recompute them), never left as they were.

        Parameters
        ----------
        estimator : fitted estimator
        vector : array-like of shape (n_params,)

        Returns
        -------
        estimator : the same estimator

        Raises
        ------
        ValueError
            If ``vector`` does not have one entry per free parameter.
        """
        vector = np.asarray(vector, dtype=np.float64).ravel()
        sizes = [np.size(b) for b in self._read(estimator)]
        if vector.size != sum(sizes):
            raise ValueError(
                f"{type(self).__name__}: vector has {vector.size} entries but this "
                f"{type(estimator).__name__} has {sum(sizes)} free parameters; pass a vector "
                "laid out as get_vector returns it."
            )
        blocks = np.split(vector, np.cumsum(sizes)[:-1]) if sizes else []
        self._write(estimator, [b.copy() for b in blocks])
        return estimator

    def canonicalize(self, estimator):
        """Put permutation-symmetric parameters in canonical order (identity here)."""
        return estimator

    def project(self, estimator):
        """Map the parameters to valid ones (identity here: every real vector is valid)."""
        return estimator

    def scrub(self, estimator):
        """Delete every fitted attribute that is neither a parameter nor public information.

        Returns
        -------
        estimator : the same estimator, safe to publish together with its parameters
        """
        return _scrub_all_but(estimator, self._released(estimator))

    def __repr__(self):
        return f"{type(self).__name__}()"


# ---------------------------------------------------------------------------------------
# Named attributes and linear models.
# ---------------------------------------------------------------------------------------


class AttributeAdapter(_BlockAdapter):
    """Adapter over a list of named array attributes, concatenated in the given order.

    Parameters
    ----------
    attributes : sequence of str
        Names of fitted array attributes (``"coef_"``, ``"intercept_"``, ...). Each is
        flattened in C order; shapes, float dtypes and scalar types (``float``, numpy
        scalars) are taken from the estimator at hand and restored by :meth:`set_vector`.
    keep : sequence of str or None, default=None
        How :meth:`scrub` treats the estimator's other fitted attributes.
        ``None``: delete only the known diagnostics (:data:`DIAGNOSTIC_ATTRIBUTES`) and
        release every other fitted attribute as it is. A list: delete every fitted attribute
        except ``attributes``, ``keep`` and :data:`PUBLIC_ATTRIBUTES` (an allow-list).

    Notes
    -----
    With ``keep=None`` the adapter cannot know what else an unknown estimator computed on
    the private data. Use it only for estimators whose other fitted state is public, or name
    what prediction needs in ``keep`` so that everything else is removed.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.datasets import load_diabetes
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = Ridge().fit(X, y)
    >>> adapter = AttributeAdapter(["coef_", "intercept_"])
    >>> adapter.get_vector(reg).shape
    (11,)
    >>> type(adapter.set_vector(reg, adapter.get_vector(reg)).intercept_).__name__
    'float64'
    """

    def __init__(self, attributes: Sequence[str], *, keep: Sequence[str] | None = None):
        if isinstance(attributes, str):
            attributes = [attributes]
        self.attributes = tuple(attributes)
        self.keep = None if keep is None else tuple(keep)

    def _names(self, estimator):
        return self.attributes

    def _read(self, estimator):
        names = self._names(estimator)
        _require(type(self).__name__, estimator, names)
        return [_as_float_array(getattr(estimator, n)).ravel() for n in names]

    def _write(self, estimator, blocks):
        for name, block in zip(self._names(estimator), blocks, strict=True):
            setattr(estimator, name, _like(getattr(estimator, name), block))

    def _released(self, estimator):
        return set(self._names(estimator)) | set(self.keep or ())

    def scrub(self, estimator):
        """Remove what was computed on the private data besides the parameters.

        See the ``keep`` parameter for what is removed.
        """
        if self.keep is None:
            return scrub_diagnostics(estimator)
        return super().scrub(estimator)

    def __repr__(self):
        keep = "" if self.keep is None else f", keep={list(self.keep)!r}"
        return f"{type(self).__name__}({list(self.attributes)!r}{keep})"


class LinearModelAdapter(AttributeAdapter):
    """Every scikit-learn linear model: ``coef_``, the fitted intercept, ``offset_``.

    Covers the classes of ``sklearn.linear_model`` that have ``coef_`` (all but
    ``RANSACRegressor``) and ``sklearn.svm.LinearSVC`` / ``LinearSVR``.

    Notes
    -----
    * With ``fit_intercept=False`` the intercept is a constant (``0.0`` or zeros), not a
      parameter computed on the data: it is left out of the vector and stays exactly as
      it is, so no noise turns a model through the origin into one with an intercept.
    * Scalar intercepts keep their type: a Python ``float`` stays a ``float``, a numpy
      scalar (single-target regressors) stays a numpy scalar, float32 stays float32.
    * ``SGDOneClassSVM`` stores its intercept as ``offset_``; it is a parameter.
    * A sparsified ``coef_`` (``SGDClassifier.sparsify()``) is read densely and written
      back dense: noise makes every entry non-zero.
    * :meth:`scrub` keeps ``coef_``, the intercept, :data:`PUBLIC_ATTRIBUTES` and the loss
      object that ``PoissonRegressor``/``GammaRegressor``/``TweedieRegressor`` rebuild from
      their hyper-parameters; it removes everything else fitted, e.g. ``n_iter_``,
      ``LinearRegression.singular_`` (singular values of X), ``HuberRegressor.outliers_``
      (one flag per training sample), ``alpha_`` selected by cross-validation, the SGD
      averaging state, and ``BayesianRidge``'s posterior (``sigma_``, ``X_offset_``), so
      ``predict(return_std=True)`` is not available on a released Bayesian model.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = LogisticRegression(max_iter=1000).fit(X, y)
    >>> adapter = LinearModelAdapter()
    >>> adapter.get_vector(clf).shape  # 3 classes x 4 features + 3 intercepts
    (15,)
    >>> sorted(vars(adapter.scrub(clf)).keys() & {"coef_", "intercept_", "n_iter_"})
    ['coef_', 'intercept_']
    """

    # Fitted helpers that prediction needs and that are functions of hyper-parameters
    # (GLM link/loss objects) or of the public label set (RidgeClassifier's binarizer).
    _HELPERS = ("_base_loss", "_label_binarizer")

    def __init__(self):
        super().__init__(("coef_", "intercept_"), keep=self._HELPERS)

    def _names(self, estimator):
        names = ["coef_"]
        fitted_intercept = getattr(estimator, "fit_intercept", True) is not False
        if fitted_intercept and "intercept_" in vars(estimator):
            names.append("intercept_")
        if fitted_intercept and "offset_" in vars(estimator):
            names.append("offset_")
        return tuple(names)

    def _released(self, estimator):
        # A constant intercept (fit_intercept=False) is not in the vector but is kept.
        return {"coef_", "intercept_", "offset_"} | set(self._HELPERS)

    def __repr__(self):
        return f"{type(self).__name__}()"


@functools.lru_cache(maxsize=None)
def _linear_model_classes():
    import sklearn.linear_model as lm
    from sklearn.svm import LinearSVC, LinearSVR

    classes = [getattr(lm, n) for n in lm.__all__ if isinstance(getattr(lm, n), type)]
    # RANSACRegressor has no coef_: it wraps a fitted estimator_ and keeps one inlier flag
    # per training sample.
    classes = [c for c in classes if c.__name__ != "RANSACRegressor" and hasattr(c, "fit")]
    return tuple(classes) + (LinearSVC, LinearSVR)


def _is_linear_model(estimator):
    return isinstance(estimator, _linear_model_classes())


# ---------------------------------------------------------------------------------------
# Multi-layer perceptrons.
# ---------------------------------------------------------------------------------------


class MLPAdapter(_BlockAdapter):
    """``MLPClassifier`` / ``MLPRegressor``: ``coefs_`` and ``intercepts_``, layer by layer.

    The vector is ``coefs_[0].ravel(), intercepts_[0], coefs_[1].ravel(), ...``.

    Parameters
    ----------
    sort_units : bool or "auto", default="auto"
        :meth:`canonicalize` sorts the hidden units of each layer (see Notes). ``"auto"``
        sorts unless the estimator's ``random_state`` is a fixed integer, in which case
        every fit starts from the same initialisation and the units are already aligned.
    fix_signs : bool or "auto", default="auto"
        :meth:`canonicalize` also removes the sign symmetry of ``tanh`` and ``logistic``
        units (see Notes); no effect for ``relu`` and ``identity``. ``"auto"`` as for
        ``sort_units``.

    Notes
    -----
    Hidden units of a layer can be permuted, together with the rows of the next layer's
    weight matrix, without changing the network's function. Two fits on overlapping data
    that start from different initialisations land on the same function with units in an
    arbitrary order; per-coordinate sigma over split fits (Izzo, Algorithm 1) would then
    measure that order, not the data. Sorting puts, layer by layer from the input, the
    units in increasing Euclidean norm of their incoming weights and bias (invariant to the
    order of the previous layer), ties broken by the bias and then the incoming weights
    (the previous layer being already in canonical order). The same permutation is applied
    to the outgoing weights, so predictions are unchanged.

    Sign fixing makes every bias non-negative: a ``tanh`` unit with a negative bias has its
    incoming weights, bias and outgoing weights negated (tanh is odd); a ``logistic`` unit
    has its incoming weights and bias negated, its outgoing weights negated and added to
    the next layer's bias (``sigmoid(-z) = 1 - sigmoid(z)``). Both are exact symmetries.
    ``relu`` units also have a positive scaling symmetry and ``identity`` layers a full
    linear one; neither is removed.

    Either way the guarantee is unaffected: canonicalisation is a fixed function applied
    to every split fit and to the final fit alike, part of the algorithm whose sigma is
    estimated. It changes how much noise is needed, and the right choice depends on the
    initialisation. skmip fits every split from the same initialisation seed, and then the
    units stay aligned by the shared start while sorting by norm swaps units whose norms
    are close: on breast cancer and wine (one hidden layer of 8 units, lbfgs, 32
    half-splits) the mean per-coordinate standard deviation over split fits was 1.6-2.4
    times *larger* with sorting than in training order, and sign fixing did not help. With
    a different seed per fit, sorting lowered it by 3-10% and sign fixing by up to 8% more.
    Hence ``"auto"``.

    :meth:`scrub` keeps ``coefs_``, ``intercepts_``, the shape information
    (``n_layers_``, ``n_outputs_``, ``out_activation_``), the label binarizer (the public
    label set) and :data:`PUBLIC_ATTRIBUTES`; it removes the loss curve, validation
    scores, iteration counts, the best-so-far copies of the parameters (un-noised!),
    the optimiser state and the advanced random state. A released MLP predicts; it cannot
    be trained further with ``partial_fit`` or ``warm_start``.

    Examples
    --------
    >>> from sklearn.neural_network import MLPClassifier
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> mlp = MLPClassifier((5,), solver="lbfgs", max_iter=300, random_state=0).fit(X, y)
    >>> adapter = MLPAdapter(sort_units=True)
    >>> adapter.get_vector(mlp).shape  # (4*5 + 5) + (5*3 + 3)
    (43,)
    >>> before = mlp.predict_proba(X)
    >>> import numpy as np
    >>> bool(np.allclose(adapter.canonicalize(mlp).predict_proba(X), before))
    True
    """

    def __init__(self, *, sort_units: bool | str = "auto", fix_signs: bool | str = "auto"):
        self.sort_units = sort_units
        self.fix_signs = fix_signs

    def _resolve(self, name, estimator):
        value = getattr(self, name)
        if isinstance(value, str):
            check_option(type(self).__name__, name, value, ("auto",), why="Or pass True/False.")
            seed = getattr(estimator, "random_state", None)
            # A fixed integer seed means a shared initialisation: units are already aligned.
            return not (isinstance(seed, numbers.Integral) and not isinstance(seed, bool))
        return bool(value)

    def _read(self, estimator):
        _require(type(self).__name__, estimator, ("coefs_", "intercepts_"))
        blocks = []
        for w, b in zip(estimator.coefs_, estimator.intercepts_, strict=True):
            blocks += [np.asarray(w, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64)]
        return blocks

    def _write(self, estimator, blocks):
        coefs, intercepts = [], []
        for i, (w, b) in enumerate(zip(estimator.coefs_, estimator.intercepts_, strict=True)):
            coefs.append(_like(w, blocks[2 * i]))
            intercepts.append(_like(b, blocks[2 * i + 1]))
        estimator.coefs_, estimator.intercepts_ = coefs, intercepts

    def canonicalize(self, estimator):
        """Canonical order (and, optionally, signs) of the hidden units; see Notes."""
        _require(type(self).__name__, estimator, ("coefs_", "intercepts_"))
        coefs = [np.array(w) for w in estimator.coefs_]
        intercepts = [np.array(b) for b in estimator.intercepts_]
        activation = getattr(estimator, "activation", None)
        sort_units = self._resolve("sort_units", estimator)
        fix_signs = self._resolve("fix_signs", estimator)
        for layer in range(len(coefs) - 1):  # every layer but the output one is hidden
            w_in, b_in, w_out = coefs[layer], intercepts[layer], coefs[layer + 1]
            if fix_signs and activation in ("tanh", "logistic"):
                flip = b_in < 0
                if activation == "logistic":
                    intercepts[layer + 1] = intercepts[layer + 1] + w_out[flip].sum(axis=0)
                w_in[:, flip] *= -1
                b_in[flip] *= -1
                w_out[flip] *= -1
            if sort_units:
                norm = np.sqrt(
                    (w_in.astype(np.float64) ** 2).sum(axis=0) + b_in.astype(np.float64) ** 2
                )
                # np.lexsort sorts by the last key first: norm, then bias, then weights.
                keys = list(w_in[::-1]) + [b_in, norm]
                order = np.lexsort(keys)
                w_in, b_in, w_out = w_in[:, order], b_in[order], w_out[order]
            coefs[layer], intercepts[layer], coefs[layer + 1] = w_in, b_in, w_out
        estimator.coefs_, estimator.intercepts_ = coefs, intercepts
        return estimator

    def _released(self, estimator):
        return {"coefs_", "intercepts_", "n_layers_", "out_activation_", "_label_binarizer"}

    def __repr__(self):
        return f"{type(self).__name__}(sort_units={self.sort_units!r}, fix_signs={self.fix_signs!r})"


def _is_mlp(estimator):
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    return isinstance(estimator, (MLPClassifier, MLPRegressor))


# ---------------------------------------------------------------------------------------
# Covariance estimators.
# ---------------------------------------------------------------------------------------


def _default_floor(eigval):
    # sqrt(eps) relative to the largest |eigenvalue|: caps the condition number of the
    # released covariance near 7e7, so precision_ is a well-conditioned inverse.
    return np.sqrt(np.finfo(np.float64).eps) * max(float(np.max(np.abs(eigval), initial=0.0)), 1.0e-300)


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


# ---------------------------------------------------------------------------------------
# Gaussian mixtures.
# ---------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------
# Preprocessing steps fitted on the private data.
# ---------------------------------------------------------------------------------------


class _NamedArraysAdapter(_BlockAdapter):
    """A fitted preprocessing step whose free parameters are named arrays (``_FIELDS``).

    Fields that the estimator leaves ``None`` (``with_mean=False``, ...) are skipped;
    ``_refresh`` recomputes the derived attributes after every write.
    """

    _FIELDS: tuple = ()

    def _names(self, estimator):
        return [n for n in self._FIELDS if getattr(estimator, n, None) is not None]

    def _read(self, estimator):
        _require(type(self).__name__, estimator, self._FIELDS)
        return [
            np.asarray(getattr(estimator, n), dtype=np.float64).ravel() for n in self._names(estimator)
        ]

    def _write(self, estimator, blocks):
        for name, block in zip(self._names(estimator), blocks, strict=True):
            setattr(estimator, name, _like(getattr(estimator, name), block))
        self._refresh(estimator)

    @staticmethod
    def _refresh(estimator):
        """Recompute attributes derived from the free parameters (none by default)."""


class StandardScalerAdapter(_NamedArraysAdapter):
    """``StandardScaler``: ``mean_`` and ``scale_`` (either absent when switched off).

    Notes
    -----
    ``scale_`` is the free parameter because ``transform`` divides by it; ``var_`` is
    derived, ``var_ = scale_ ** 2``, after :meth:`set_vector`. :meth:`project` applies
    scikit-learn's own rule for near-zero scales to the noised ones: a scale below
    ``10 * eps`` (noise can make it zero or negative) becomes 1.0, "do not scale". For a
    feature that was constant in the training data scikit-learn reports ``var_ = 0`` and
    ``scale_ = 1``; the released scaler reports ``var_ = scale_ ** 2``. :meth:`scrub` removes
    ``n_samples_seen_`` (not needed to transform).

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.datasets import load_wine
    >>> X, _ = load_wine(return_X_y=True)
    >>> adapter = StandardScalerAdapter()
    >>> adapter.get_vector(StandardScaler().fit(X)).shape
    (26,)
    """

    _FIELDS = ("mean_", "scale_")

    @staticmethod
    def _refresh(estimator):
        if getattr(estimator, "var_", None) is not None:
            estimator.var_ = _like(estimator.var_, np.asarray(estimator.scale_, dtype=np.float64) ** 2)

    def project(self, estimator):
        """Scales below ``10 * eps`` become 1.0 (scikit-learn's rule); ``var_`` refreshed."""
        if getattr(estimator, "scale_", None) is not None:
            estimator.scale_ = _like(estimator.scale_, _handle_zeros_in_scale(estimator.scale_))
            self._refresh(estimator)
        return estimator

    def _released(self, estimator):
        return {"mean_", "scale_", "var_"}


class MinMaxScalerAdapter(_NamedArraysAdapter):
    """``MinMaxScaler``: ``data_min_`` and ``data_max_`` (minima and maxima of the data!).

    Notes
    -----
    ``data_range_``, ``scale_`` and ``min_`` are recomputed from the two free parameters
    with scikit-learn's formulas. :meth:`project` orders each (min, max) pair, and a
    range below ``10 * eps`` means "do not scale", as in scikit-learn.

    Examples
    --------
    >>> from sklearn.preprocessing import MinMaxScaler
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> MinMaxScalerAdapter().get_vector(MinMaxScaler().fit(X)).shape
    (8,)
    """

    _FIELDS = ("data_min_", "data_max_")

    @staticmethod
    def _refresh(estimator):
        lo, hi = estimator.feature_range
        data_min = np.asarray(estimator.data_min_, dtype=np.float64)
        data_range = np.asarray(estimator.data_max_, dtype=np.float64) - data_min
        scale = (hi - lo) / _handle_zeros_in_scale(data_range)
        estimator.data_range_ = _like(estimator.data_min_, data_range)
        estimator.scale_ = _like(estimator.data_min_, scale)
        estimator.min_ = _like(estimator.data_min_, lo - data_min * scale)

    def project(self, estimator):
        """Each feature's (min, max) in increasing order; derived attributes refreshed."""
        a = np.asarray(estimator.data_min_, dtype=np.float64)
        b = np.asarray(estimator.data_max_, dtype=np.float64)
        estimator.data_min_ = _like(estimator.data_min_, np.minimum(a, b))
        estimator.data_max_ = _like(estimator.data_max_, np.maximum(a, b))
        self._refresh(estimator)
        return estimator

    def _released(self, estimator):
        return {"data_min_", "data_max_", "data_range_", "scale_", "min_"}


class MaxAbsScalerAdapter(_NamedArraysAdapter):
    """``MaxAbsScaler``: ``max_abs_``; ``scale_`` is derived.

    Notes
    -----
    :meth:`project` clips ``max_abs_`` at zero (the Euclidean projection onto its valid
    set); a value below ``10 * eps`` gives ``scale_ = 1``, as in scikit-learn.

    Examples
    --------
    >>> from sklearn.preprocessing import MaxAbsScaler
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> MaxAbsScalerAdapter().get_vector(MaxAbsScaler().fit(X)).shape
    (4,)
    """

    _FIELDS = ("max_abs_",)

    @staticmethod
    def _refresh(estimator):
        estimator.scale_ = _like(estimator.max_abs_, _handle_zeros_in_scale(estimator.max_abs_))

    def project(self, estimator):
        """``max_abs_`` clipped at zero; ``scale_`` refreshed."""
        self._write(estimator, [np.maximum(np.asarray(estimator.max_abs_, dtype=np.float64), 0.0)])
        return estimator

    def _released(self, estimator):
        return {"max_abs_", "scale_"}


class RobustScalerAdapter(_NamedArraysAdapter):
    """``RobustScaler``: ``center_`` (medians) and ``scale_`` (quantile ranges), where used.

    Notes
    -----
    :meth:`project` applies scikit-learn's near-zero rule to the noised ``scale_``.

    Examples
    --------
    >>> from sklearn.preprocessing import RobustScaler
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> RobustScalerAdapter().get_vector(RobustScaler().fit(X)).shape
    (8,)
    """

    _FIELDS = ("center_", "scale_")

    def project(self, estimator):
        """Scales below ``10 * eps`` become 1.0 (scikit-learn's rule)."""
        if getattr(estimator, "scale_", None) is not None:
            estimator.scale_ = _like(estimator.scale_, _handle_zeros_in_scale(estimator.scale_))
        return estimator

    def _released(self, estimator):
        return {"center_", "scale_"}


class StatelessAdapter(_BlockAdapter):
    """Transformers whose fitted state is a function of hyper-parameters and input width.

    ``FunctionTransformer``, ``Normalizer``, ``Binarizer``, ``PolynomialFeatures``: no free
    parameter (an empty vector); :meth:`scrub` removes only :data:`DIAGNOSTIC_ATTRIBUTES`.

    Examples
    --------
    >>> from sklearn.preprocessing import Normalizer
    >>> StatelessAdapter().get_vector(Normalizer().fit([[1.0, 2.0]])).shape
    (0,)
    """

    def _read(self, estimator):
        return []

    def _write(self, estimator, blocks):
        pass

    def scrub(self, estimator):
        """Remove the known diagnostics; the rest is not computed from data values."""
        return scrub_diagnostics(estimator)


def _is_stateless_transformer(estimator):
    from sklearn.preprocessing import (
        Binarizer,
        FunctionTransformer,
        Normalizer,
        PolynomialFeatures,
    )

    return isinstance(estimator, (FunctionTransformer, Normalizer, Binarizer, PolynomialFeatures))


def _scaler_adapter(estimator):
    from sklearn.preprocessing import (
        MaxAbsScaler,
        MinMaxScaler,
        RobustScaler,
        StandardScaler,
    )

    for cls, adapter in (
        (StandardScaler, StandardScalerAdapter),
        (MinMaxScaler, MinMaxScalerAdapter),
        (MaxAbsScaler, MaxAbsScalerAdapter),
        (RobustScaler, RobustScalerAdapter),
    ):
        if isinstance(estimator, cls):
            return adapter()
    return None


# ---------------------------------------------------------------------------------------
# Pipelines.
# ---------------------------------------------------------------------------------------


class PipelineAdapter(_BlockAdapter):
    """A ``Pipeline``: the vectors of all its steps, concatenated in step order.

    Parameters
    ----------
    steps : list of (str, ParamAdapter)
        One adapter per step that is not ``"passthrough"``/``None``, by step name.
        :func:`get_adapter` builds it from the pipeline.

    Notes
    -----
    Every step of a pipeline is fitted on the private data and released with it: a
    ``StandardScaler``'s ``mean_`` and ``scale_`` are statistics of the training data just
    like the final model's ``coef_``. They are therefore noised together with the final
    estimator's parameters (one vector, one sigma per coordinate), and :func:`get_adapter`
    refuses a pipeline with a step it cannot adapt rather than release that step's state
    un-noised. Steps without data-dependent state (``FunctionTransformer``, ``Normalizer``,
    ...) contribute no coordinates. ``canonicalize``, ``project`` and ``scrub`` act on each
    step.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.datasets import load_breast_cancer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    >>> adapter = get_adapter(pipe)
    >>> adapter
    PipelineAdapter([('standardscaler', StandardScalerAdapter()),
                     ('logisticregression', LinearModelAdapter())])
    >>> adapter.get_vector(pipe).shape  # 30 means + 30 scales + 30 coefficients + 1
    (91,)
    """

    def __init__(self, steps: Sequence[tuple[str, ParamAdapter]]):
        self.steps = list(steps)

    def _pairs(self, pipeline):
        named = dict(pipeline.steps)
        missing = [name for name, _ in self.steps if name not in named]
        if missing:
            raise ValueError(
                f"{type(self).__name__}: the pipeline has no step(s) {missing}; build the adapter "
                "with get_adapter(pipeline) for this pipeline."
            )
        return [(adapter, named[name]) for name, adapter in self.steps]

    def _read(self, pipeline):
        return [adapter.get_vector(step) for adapter, step in self._pairs(pipeline)]

    def _write(self, pipeline, blocks):
        for (adapter, step), block in zip(self._pairs(pipeline), blocks, strict=True):
            adapter.set_vector(step, block)

    def canonicalize(self, pipeline):
        """Canonical order of every step."""
        for adapter, step in self._pairs(pipeline):
            adapter.canonicalize(step)
        return pipeline

    def project(self, pipeline):
        """Project every step."""
        for adapter, step in self._pairs(pipeline):
            adapter.project(step)
        return pipeline

    def scrub(self, pipeline):
        """Scrub every step (the pipeline object itself holds no fitted state)."""
        for adapter, step in self._pairs(pipeline):
            adapter.scrub(step)
        return pipeline

    def __repr__(self):
        return f"{type(self).__name__}({self.steps!r})"


def _pipeline_adapter(pipeline):
    adapters = []
    for name, step in pipeline.steps:
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        try:
            adapters.append((name, get_adapter(step)))
        except TypeError as exc:
            raise TypeError(
                f"Pipeline step {name!r} ({type(step).__name__}) has no parameter adapter. Every "
                "step is fitted on the private data and released with the pipeline, so its fitted "
                "state must be noised too. Register an adapter for it with "
                "skmip.params.register_adapter, or fit that step on public data outside the "
                f"pipeline. ({exc})"
            ) from exc
    return PipelineAdapter(adapters)


def _is_pipeline(estimator):
    from sklearn.pipeline import Pipeline

    return isinstance(estimator, Pipeline)


# ---------------------------------------------------------------------------------------
# skmip.statistic.Statistic.
# ---------------------------------------------------------------------------------------


class StatisticAdapter(_BlockAdapter):
    """:class:`skmip.statistic.Statistic`: its ``statistic_``, laid out by ``structure_``.

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
    >>> from skmip.statistic import Statistic
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
    # skmip.statistic sits above this module; no Statistic can exist unless it was imported.
    module = sys.modules.get("skmip.statistic")
    return module is not None and isinstance(estimator, module.Statistic)


# ---------------------------------------------------------------------------------------
# Registry and resolution.
# ---------------------------------------------------------------------------------------

# Registry: (predicate, factory) pairs, most recently registered first.
_REGISTRY: list[tuple[Callable[[object], bool], Callable[[object], ParamAdapter]]] = []


def register_adapter(predicate, factory, *, first: bool = True):
    """Teach skmip how to read an estimator type.

    Parameters
    ----------
    predicate : type or callable
        A class (matched with ``isinstance``) or ``callable(estimator) -> bool``. It sees
        unfitted estimators too.
    factory : callable
        ``factory(estimator) -> ParamAdapter``.
    first : bool, default=True
        Put the entry ahead of the built-in ones, so users can override them.

    Returns
    -------
    factory : callable
        The factory, unchanged (so ``register_adapter`` can be used as a decorator helper).

    Examples
    --------
    Release only the coefficients of a ``Ridge`` subclass, never its intercept:

    >>> from sklearn.linear_model import Ridge
    >>> class NoInterceptRidge(Ridge):
    ...     pass
    >>> _ = register_adapter(NoInterceptRidge, lambda est: AttributeAdapter(["coef_"]))
    >>> get_adapter(NoInterceptRidge())
    AttributeAdapter(['coef_'])
    """
    if isinstance(predicate, type):
        cls = predicate
        predicate = lambda est, cls=cls: isinstance(est, cls)  # noqa: E731
    entry = (predicate, factory)
    if first:
        _REGISTRY.insert(0, entry)
    else:
        _REGISTRY.append(entry)
    return factory


register_adapter(_is_linear_model, lambda est: LinearModelAdapter(), first=False)
register_adapter(_is_mlp, lambda est: MLPAdapter(), first=False)
register_adapter(_is_covariance, lambda est: CovarianceAdapter(), first=False)
register_adapter(_is_gaussian_mixture, lambda est: GaussianMixtureAdapter(), first=False)
register_adapter(lambda est: _scaler_adapter(est) is not None, _scaler_adapter, first=False)
register_adapter(_is_stateless_transformer, lambda est: StatelessAdapter(), first=False)
register_adapter(_is_pipeline, _pipeline_adapter, first=False)
register_adapter(_is_statistic, lambda est: StatisticAdapter(), first=False)


def _is_skorch_net(estimator):
    # Subclasses count too (skmip.nn's seeded nets, a user's own NeuralNet subclass).
    return any(cls.__module__.split(".")[0] == "skorch" for cls in type(estimator).__mro__)


def _skorch_adapter(estimator):
    # Imported lazily: skmip.nn is the optional torch leaf, never imported by the root.
    from skmip.nn.params import SkorchAdapter

    return SkorchAdapter()


register_adapter(_is_skorch_net, _skorch_adapter, first=False)

# Estimators that skmip refuses on purpose, with the reason the error message gives.
_STORES_TRAINING_DATA = (
    "keeps training records in the fitted model ({}); releasing it releases them, and "
    "params=[...] cannot help because the records are the model"
)
_REFUSED = {
    **{
        n: _STORES_TRAINING_DATA.format("support_vectors_") + ". Use LinearSVC or LinearSVR"
        for n in ("SVC", "NuSVC", "SVR", "NuSVR", "OneClassSVM")
    },
    **{
        n: _STORES_TRAINING_DATA.format("_fit_X")
        for n in (
            "KNeighborsClassifier",
            "KNeighborsRegressor",
            "RadiusNeighborsClassifier",
            "RadiusNeighborsRegressor",
            "NearestNeighbors",
            "KernelDensity",
            "LocalOutlierFactor",
        )
    },
    "KernelRidge": _STORES_TRAINING_DATA.format("X_fit_"),
    "GaussianProcessRegressor": _STORES_TRAINING_DATA.format("X_train_"),
    "GaussianProcessClassifier": _STORES_TRAINING_DATA.format("X_train_"),
    "RANSACRegressor": "keeps one inlier flag per training sample; adapt its estimator_ instead",
    "BayesianGaussianMixture": (
        "predicts from weight_concentration_ and posterior parameters, not weights_; "
        "use GaussianMixture"
    ),
    **{
        n: "splits on thresholds taken between training values; these are not continuous parameters "
        "that noise can protect"
        for n in (
            "DecisionTreeClassifier",
            "DecisionTreeRegressor",
            "ExtraTreeClassifier",
            "ExtraTreeRegressor",
            "RandomForestClassifier",
            "RandomForestRegressor",
            "ExtraTreesClassifier",
            "ExtraTreesRegressor",
            "GradientBoostingClassifier",
            "GradientBoostingRegressor",
            "HistGradientBoostingClassifier",
            "HistGradientBoostingRegressor",
        )
    },
}


def get_adapter(estimator, params="auto") -> ParamAdapter:
    """Resolve the ``params`` option of an skmip estimator to a :class:`ParamAdapter`.

    Parameters
    ----------
    estimator : estimator instance
        The (possibly unfitted) estimator whose parameters will be read.
    params : "auto", list of str, or ParamAdapter, default="auto"
        ``"auto"`` looks the estimator up in the registry (user registrations first,
        then the built-in adapters listed in the module docstring); a list of attribute
        names builds an :class:`AttributeAdapter`; an adapter instance is used as given.

    Returns
    -------
    adapter : ParamAdapter

    Raises
    ------
    TypeError
        If no registered adapter understands the estimator, naming the ways out (and, for
        estimators refused on purpose, why), or if ``params`` has the wrong type.
    ValueError
        If ``params`` is a string other than ``"auto"``.

    Examples
    --------
    >>> from sklearn.mixture import GaussianMixture
    >>> get_adapter(GaussianMixture())
    GaussianMixtureAdapter(min_weight=None)
    >>> get_adapter(GaussianMixture(), ["means_"])
    AttributeAdapter(['means_'])
    """
    if isinstance(params, str):
        if params != "auto":
            raise ValueError(
                f"params must be 'auto', a list of attribute names or a ParamAdapter; got {params!r}."
            )
        for predicate, factory in _REGISTRY:
            if predicate(estimator):
                return factory(estimator)
        name = type(estimator).__name__
        reason = _REFUSED.get(name)
        if reason is not None:
            raise TypeError(f"skmip cannot release a noised {name}: it {reason}.")
        raise TypeError(
            f"skmip does not know how {name} stores its parameters. "
            "Pass params=['attr_', ...] naming its fitted array attributes, or register an "
            "adapter with skmip.params.register_adapter(EstimatorClass, factory)."
        )
    if isinstance(params, (list, tuple)) and params and all(isinstance(p, str) for p in params):
        return AttributeAdapter(params)
    if all(
        hasattr(params, m) for m in ("get_vector", "set_vector", "canonicalize", "project", "scrub")
    ):
        return params
    raise TypeError(
        f"params must be 'auto', a non-empty list of attribute names or a ParamAdapter; got {params!r}."
    )
