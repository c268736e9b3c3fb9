r"""Per-example gradients of a scikit-learn GLM's own objective, in numpy, and their clipping.

The objective is the one the smooth-loss registry declares for the estimator
(:func:`skmip.calibration.losses.registry.get_smooth_loss`): row gradients come from the
registry's loss blocks evaluated on a *zero-parameter release template* of the estimator (the
user's class, its parameters written by the parameter adapter), so the noisy-gradient engine
descends exactly the loss and the regulariser the estimator minimises and never restates them.
The registry writes the objective on a training set :math:`H` as

.. math::

    F_H(\theta) = \sum_{i \in H} g_i(\theta) + R_{|H|}(\theta),
    \qquad R_{|H|}(\theta) = \tfrac12 \theta^\top \mathrm{diag}(r_{|H|})\,\theta,

with a quadratic regulariser whose weights :math:`r_{|H|}` may grow with :math:`|H|` (the Tweedie
family penalises :math:`\alpha|H|/2\,\|w\|^2`). :class:`RowObjective` reads :math:`r_k` for the
size :math:`k` of D_train from two public probes (``regularizer_gradient`` of the registry at
:math:`\theta = 1` on one and two all-zero rows, extrapolated affinely and checked on a third),
and works with the mean objective in *row units*

.. math::

    J(\theta) = \frac{1}{k\kappa}F_{D_\mathrm{train}}(\theta)
    = \frac1k\sum_{i} \frac{g_i(\theta)}{\kappa} + \frac{r_k}{k\kappa}\circ\theta ,

where :math:`\kappa` is the estimator's public loss scale (``C`` for ``LogisticRegression`` and
``LinearSVC``, whose objectives are :math:`C\sum_i \ell_i + \tfrac12\|w\|^2`; 1 otherwise), so a
clipping norm means the same thing for every ``C``: the norm of one row's gradient of its own
log-loss (squared error, half deviance, squared hinge). Dividing the objective by a constant
moves no minimiser.

Everything here is a function of the row it is evaluated on, of the current parameters and of
public settings: replacing one row of D_train changes one row gradient and nothing else, which
is the sensitivity the accountant is charged with (after :func:`clip_rows`).
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
from sklearn.base import clone, is_classifier

from skmip.calibration.losses.registry import get_smooth_loss
from skmip.params import get_adapter

__all__ = ["RowObjective", "clip_rows", "release_template", "loss_scale"]


def loss_scale(estimator) -> float:
    r"""The public factor :math:`\kappa` by which ``estimator``'s objective weights its rows' losses.

    Parameters
    ----------
    estimator : estimator instance
        A scikit-learn GLM with a registered smooth loss.

    Returns
    -------
    float
        ``C`` for ``LogisticRegression`` and ``LinearSVC`` with a finite, active penalty
        (scikit-learn minimises :math:`C\sum_i\ell_i + \tfrac12\|w\|^2`); 1 otherwise.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression, Ridge
    >>> loss_scale(LogisticRegression(C=0.1)), loss_scale(Ridge(alpha=3.0))
    (0.1, 1.0)
    """
    C = getattr(estimator, "C", None)
    penalised = getattr(estimator, "penalty", "l2") is not None
    if C is None or not penalised or not np.isfinite(float(C)):
        return 1.0
    return float(C)


def release_template(estimator, n_features, *, classes=None, n_outputs=None, feature_names=None):
    """A clone of ``estimator`` fitted on a public all-zero dataset, its parameters set to zero.

    The template carries every fitted attribute the user's class needs to predict
    (``classes_``, ``n_features_in_``, ``feature_names_in_``, GLM loss objects), all functions of
    public arguments: it is fitted on ``len(classes)`` (or two) rows of zeros labelled with each
    class once (regressors: the target 1, valid for every Tweedie power), then its parameter
    vector is zeroed and every other fitted diagnostic scrubbed by the parameter adapter.

    Parameters
    ----------
    estimator : estimator instance
        The user's estimator (not modified).
    n_features : int
        Columns of the design matrix.
    classes : array-like or None, default=None
        The labels of D (classifiers; required for them).
    n_outputs : int or None, default=None
        Regression targets per row (``None`` for a 1-D target).
    feature_names : array-like of str or None, default=None
        The design's column names, recorded as ``feature_names_in_``.

    Returns
    -------
    template : estimator
        Fitted clone whose parameter vector is all zeros.
    """
    template = clone(estimator)
    if is_classifier(estimator):
        y0 = np.asarray(classes)
    else:
        y0 = np.ones(2) if n_outputs is None else np.ones((2, int(n_outputs)))
    X0 = np.zeros((len(y0), int(n_features)))
    if feature_names is not None:
        import pandas as pd

        X0 = pd.DataFrame(X0, columns=list(feature_names))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of a fit on constant rows
        template.fit(X0, y0)
    adapter = get_adapter(template)
    adapter.set_vector(template, np.zeros(adapter.get_vector(template).size))
    adapter.scrub(template)
    return template


def clip_rows(G, clip_norm):
    r"""Scale each row of ``G`` to Euclidean norm at most ``clip_norm`` (Abadi et al.'s clipping).

    Parameters
    ----------
    G : ndarray of shape (m, D)
        Row gradients.
    clip_norm : float
        :math:`c > 0`.

    Returns
    -------
    ndarray of shape (m, D)
        :math:`g_i \min(1, c/\|g_i\|_2)`; a row with a non-finite entry (an overflowing
        exponential link) becomes zero, so every returned row has norm at most :math:`c`.

    Examples
    --------
    >>> clip_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0).tolist()
    [[0.6000000000000001, 0.8], [0.3, 0.4]]
    """
    G = np.asarray(G, dtype=np.float64)
    finite = np.all(np.isfinite(G), axis=1)
    G = np.where(finite[:, None], G, 0.0)
    norms = np.sqrt(np.einsum("ij,ij->i", G, G))
    factor = np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(np.float64).tiny))
    return G * factor[:, None]


class RowObjective:
    r"""The mean objective :math:`J` of the module docstring for one estimator and D_train size.

    Parameters
    ----------
    template : estimator
        A :func:`release_template` of the user's estimator.
    n_train : int
        :math:`k`, the number of rows of D_train (public: a function of ``n`` and ``train_size``).

    Raises
    ------
    TypeError
        If no smooth loss is registered for the template's class.
    ValueError
        If the estimator's settings leave the registered objective, or its regulariser is not
        affine in the number of rows.

    Attributes
    ----------
    adapter : ParamAdapter
        The estimator's parameter adapter (the vector layout).
    dim : int
        Length of the parameter vector.
    scale : float
        :math:`\kappa` (:func:`loss_scale`).
    regularizer : ndarray of shape (dim,)
        :math:`r_k / (k\kappa)`: the regulariser's gradient in row units is ``regularizer * theta``.
    """

    def __init__(self, template, n_train):
        self.loss = get_smooth_loss(template)
        if self.loss is None:
            raise TypeError(
                f"RowObjective: no smooth loss is registered for {type(template).__name__}; register its "
                "objective with skmip.calibration.losses.registry.register_smooth_loss."
            )
        self.loss.check(template)
        self.adapter = get_adapter(template)
        self.dim = self.adapter.get_vector(template).size
        self.scale = loss_scale(template)
        self._model = copy.deepcopy(template)
        self._X0, self._y0 = self._zero_rows(template)
        self.regularizer = self._regularizer_weights(int(n_train)) / (int(n_train) * self.scale)

    @staticmethod
    def _zero_rows(template):
        n = int(template.n_features_in_)
        if is_classifier(template):
            return np.zeros((1, n)), np.asarray(template.classes_)[:1]
        n_out = np.atleast_2d(template.coef_).shape[0] if np.ndim(template.coef_) == 2 else None
        return np.zeros((1, n)), (np.ones(1) if n_out is None else np.ones((1, n_out)))

    def _regularizer_at(self, m):
        """``diag(r_m)`` read from the registry at theta = 1 on ``m`` all-zero (public) rows."""
        self.adapter.set_vector(self._model, np.ones(self.dim))
        X = np.repeat(self._X0, m, axis=0)
        y = np.repeat(self._y0, m, axis=0)
        r = np.zeros(self.dim)
        for block in self.loss.blocks(self._model, X, y, np.arange(m), None):
            r[block.index] += block.regularizer_gradient
        return r

    def _regularizer_weights(self, k):
        """:math:`r_k`, affine in :math:`|H|` by the registry's objectives; checked on a third probe."""
        r1, r2, r3 = (self._regularizer_at(m) for m in (1, 2, 3))
        if not np.allclose(r3 - r2, r2 - r1, rtol=1e-12, atol=0.0):
            raise ValueError(
                f"RowObjective: the registered regulariser of {type(self._model).__name__} is not affine "
                "in the number of training rows; the noisy-gradient engine cannot scale it to D_train. "
                "Register an objective whose penalty is fixed or proportional to the rows."
            )
        return r1 + (k - 1) * (r2 - r1)

    def row_gradients(self, theta, X, y, sample_weight=None):
        r"""Per-row gradients :math:`\nabla g_i(\theta)/\kappa` of ``X``'s rows, in the adapter's layout.

        Parameters
        ----------
        theta : ndarray of shape (dim,)
            Parameter vector.
        X : ndarray of shape (m, n_features)
            Rows (dense).
        y : ndarray of shape (m,) or (m, n_outputs)
            Their labels or targets.
        sample_weight : ndarray of shape (m,) or None, default=None
            Their weights (multiply each row's loss, as in the estimator's objective).

        Returns
        -------
        ndarray of shape (m, dim)
        """
        self.adapter.set_vector(self._model, theta)
        m = X.shape[0]
        G = np.zeros((m, self.dim))
        if m == 0:
            return G
        for block in self.loss.blocks(self._model, X, y, np.arange(0), sample_weight):
            G[:, block.index] += np.asarray(block.gradients)
        return G / self.scale

    def regularizer_gradient(self, theta):
        r""":math:`\nabla R_k(\theta)/(k\kappa)`, the regulariser's share of :math:`\nabla J`."""
        return self.regularizer * theta
