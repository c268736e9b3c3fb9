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
parameters that make up the vector, by the module that holds them:

* ``linear`` -- :class:`LinearModelAdapter`: scikit-learn linear models,
  ``LinearSVC``/``LinearSVR``: ``coef_`` and the fitted intercept.
* ``neural`` -- :class:`MLPAdapter`: ``MLPClassifier``/``MLPRegressor``: ``coefs_``,
  ``intercepts_``.
* ``covariance`` -- :class:`CovarianceAdapter`: ``sklearn.covariance``: ``location_`` and
  the upper triangle of the covariance (of the precision for the graphical lasso);
  :class:`GaussianMixtureAdapter`: ``GaussianMixture``: weights, means, covariances.
* ``preprocessing`` -- :class:`StandardScalerAdapter`, :class:`MinMaxScalerAdapter`,
  :class:`MaxAbsScalerAdapter`, :class:`RobustScalerAdapter`: the statistics those scalers
  keep; :class:`StatelessAdapter`: transformers without data-dependent state (no
  parameters).
* ``pipeline`` -- :class:`PipelineAdapter`: ``Pipeline``: the vectors of all its steps,
  concatenated.
* ``statistic`` -- :class:`StatisticAdapter`: :class:`skmip.release.statistic.Statistic`:
  ``statistic_``.

The protocol, the block base class and :class:`AttributeAdapter` (what ``params=[...]``
builds) are in ``_base``; what a release keeps (:func:`scrub_diagnostics`) in ``scrub``;
the registry and :func:`get_adapter` in ``registry``; the symmetric-matrix helpers the
adapters and the synthesizers share (:func:`pack_symmetric`, :func:`unpack_symmetric`,
:func:`nearest_psd`) in ``_linalg``. Fitted skorch nets are adapted by
:class:`skmip.nn.SkorchAdapter`, which the optional torch leaf registers itself; this
package never imports torch (``registry`` says how ``get_adapter`` still finds it).

References
----------
.. [Izzo] Z. Izzo, J. Yoon, S. O. Arik, J. Zou. "Provable Membership Inference Privacy".
   Theorem 3 (post-processing), Theorem 9 and Corollary 10 (noise), Algorithm 1.
"""

from __future__ import annotations

from skmip.params._base import AttributeAdapter, ParamAdapter
from skmip.params._linalg import nearest_psd, pack_symmetric, unpack_symmetric
from skmip.params.covariance import CovarianceAdapter, GaussianMixtureAdapter
from skmip.params.linear import LinearModelAdapter
from skmip.params.neural import MLPAdapter
from skmip.params.pipeline import PipelineAdapter
from skmip.params.preprocessing import (
    MaxAbsScalerAdapter,
    MinMaxScalerAdapter,
    RobustScalerAdapter,
    StandardScalerAdapter,
    StatelessAdapter,
)
from skmip.params.registry import get_adapter, register_adapter
from skmip.params.scrub import DIAGNOSTIC_ATTRIBUTES, PUBLIC_ATTRIBUTES, scrub_diagnostics
from skmip.params.statistic import StatisticAdapter

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
    "pack_symmetric",
    "unpack_symmetric",
    "nearest_psd",
]
