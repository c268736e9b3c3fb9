"""What an adapter is: the :class:`ParamAdapter` protocol, the block-vector base class every
built-in adapter derives from, and :class:`AttributeAdapter` (named array attributes, what
``params=[...]`` builds). Also how a class is recognised by its import path without importing
it (for classes above this package or in optional libraries).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse
from sklearn.exceptions import NotFittedError

from skmip.params.scrub import _scrub_all_but, scrub_diagnostics


def _is_instance(estimator, class_path):
    """``isinstance(estimator, cls)`` for the class at import path ``class_path``, importing nothing.

    No instance of a class can exist before its module has been imported, so a module missing
    from ``sys.modules`` answers ``False`` at no cost. The registry recognises classes of
    modules above it (``skmip.release.statistic``) or of optional libraries (skorch) this way, without
    an upward or a heavy import.
    """
    module_name, _, name = class_path.rpartition(".")
    module = sys.modules.get(module_name)
    return module is not None and isinstance(estimator, getattr(module, name))


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


def _require(owner, estimator, names):
    missing = [n for n in names if not hasattr(estimator, n)]
    if missing:
        raise NotFittedError(
            f"{owner}: this {type(estimator).__name__} has no fitted attribute(s) {missing}. "
            "Fit it first; adapters read and write fitted parameters."
        )


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
