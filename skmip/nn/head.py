r"""Private heads on public backbones: a softmax/logistic head solved exactly on frozen features.

A torch network whose lower layers are fixed given the data -- pretrained on *public* data,
or random and frozen -- and whose head is a linear layer trained to the exact minimiser of a
regularised convex loss is a generalised linear model on fixed features
:math:`\phi(x)`. :class:`PrivateHeadClassifier` is that learner: ``fit`` maps the rows
through a frozen copy of the backbone and solves the head exactly (scikit-learn's
``LogisticRegression``, Newton-Cholesky, on :math:`\phi(X)`). Importing this module
registers, for it,

* a parameter adapter whose vector is the head only (:func:`skmip.params.get_adapter`): the
  backbone is a hyper-parameter, not a fitted parameter, so it is never noised, and
* a smooth loss (:func:`skmip.calibration.swap.get_smooth_loss`) whose blocks are the logistic
  blocks on the features, so that :class:`skmip.defend.MIPNoiseWrapper` calibrates the
  head's noise by the coupling bound (``docs/coupling.md``): the target-exact ``"newton"``
  engine, with one margin for two classes and K margins (multinomial loss) for more.

Whether the backbone is public is the user's responsibility (see the class Notes); what can
be checked -- that ``fit`` leaves every tensor of the backbone unchanged -- is checked.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from skmip.utils.validation import check_int, check_interval
from skmip.params import get_adapter, register_adapter
from skmip.calibration.swap import get_smooth_loss, register_smooth_loss

__all__ = ["PrivateHeadClassifier"]

_OWNER = "PrivateHeadClassifier"
#: Rows per backbone forward pass (bounds the memory of the feature map, not its values).
_CHUNK = 4096


def _backbone_dtype(backbone):
    for tensor in backbone.parameters():
        if tensor.is_floating_point():
            return tensor.dtype
    return torch.float64  # a parameter-free map (Identity, Flatten): keep the data's precision


def _state(module):
    return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}


def _changed(before, module):
    after = module.state_dict()
    names = sorted(set(before) ^ set(after))
    names += [n for n in before if n in after and not torch.equal(before[n], after[n].detach())]
    return names


class PrivateHeadClassifier(ClassifierMixin, BaseEstimator):
    r"""A linear softmax head trained to the exact minimiser on a frozen torch backbone.

    ``fit`` computes the features :math:`\phi(x)` with a frozen, evaluation-mode copy of
    ``backbone`` and fits the head to the exact minimiser of

    .. math:: C \sum_i s_i \,\mathrm{logloss}(y_i, W\phi(x_i) + b) + \tfrac12 \|W\|_F^2

    (intercept unpenalised; binary: one row of :math:`W`, multiclass: the multinomial
    loss), scikit-learn's ``LogisticRegression`` objective on the features. Wrapped in
    :class:`skmip.defend.MIPNoiseWrapper`, only the head is noised, with Gaussian noise
    calibrated by the coupling bound.

    Parameters
    ----------
    backbone : torch.nn.Module
        The frozen lower layers: maps a float tensor of shape ``(n, n_features)`` to
        features of shape ``(n, ...)`` (flattened per row). It must be fixed given the
        private data -- trained on public data only, or random and fixed (see Notes). It is
        deep-copied by ``fit``, put in evaluation mode (dropout off, batch norm on its
        running statistics) and never trained.
    C : float, default=1.0
        Inverse regularisation strength of the head, > 0 (``LogisticRegression``'s ``C``).
    fit_intercept : bool, default=True
        Fit an unpenalised intercept per class.
    tol : float, default=1e-10
        Tolerance of the Newton-Cholesky solver. The coupling calibration describes the
        exact minimiser, and :class:`~skmip.defend.MIPNoiseWrapper` polishes the head to
        it, but a tight tolerance makes the split fits themselves exact.
    max_iter : int, default=100
        Newton iterations of the solver.

    Attributes
    ----------
    backbone_ : torch.nn.Module
        The frozen, evaluation-mode copy of ``backbone`` used by ``predict``; public, like
        ``backbone``.
    head_ : sklearn.linear_model.LogisticRegression
        The head fitted on the features; the only parameters computed from the data.
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    n_features_in_ : int
        Number of input features.
    n_backbone_features_ : int
        Dimension of the features :math:`\phi(x)`.
    n_iter_ : ndarray of shape (1,)
        Solver iterations (a training diagnostic: removed from a release).

    Raises
    ------
    ValueError
        From ``fit``, if the backbone's tensors (parameters or buffers) differ after the
        feature pass from what they were (a module whose forward updates its own state,
        e.g. running statistics, would make the features depend on the private data), or if
        the features are not finite.

    Notes
    -----
    *Why the head alone can be noised.* The learner analysed by the coupling bound is
    :math:`D_{train} \mapsto (W, b)`; the backbone enters it as a fixed feature map, like a
    public preprocessing step (``docs/coupling.md``, "The bound": the learner must be
    deterministic given its data and everything else fixed given :math:`\mathcal{D}`). The
    release (backbone, noised head) is then eta-MIP *provided the backbone does not depend
    on* :math:`\mathcal{D}`: trained on data disjoint from it, downloaded, or random with a
    seed chosen independently. That is the user's responsibility: skmip cannot see where a
    backbone's weights came from. What it checks is that ``fit`` itself leaves every tensor
    of the backbone unchanged (it compares the state before and after the feature pass).

    *Exactness.* The features are computed in the backbone's own dtype and cast to float64;
    the head is solved in float64, and the coupling engines see the same features (the
    registered loss recomputes them with ``backbone_``), so the model they analyse is the
    model released.

    References
    ----------
    Izzo et al., "Provable Membership Inference Privacy", Definition 1; ``docs/coupling.md``
    (the coupling bound); ``docs/nn.md`` ("Private heads on public backbones").

    Examples
    --------
    >>> import torch
    >>> from sklearn.datasets import load_iris
    >>> X, y = load_iris(return_X_y=True)
    >>> _ = torch.manual_seed(0)
    >>> backbone = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh())
    >>> clf = PrivateHeadClassifier(backbone, C=10.0).fit(X, y)
    >>> clf.head_.coef_.shape, clf.n_backbone_features_
    ((3, 8), 8)
    >>> bool(torch.equal(clf.backbone_[0].weight, backbone[0].weight))
    True
    """

    def __init__(self, backbone, *, C: float = 1.0, fit_intercept: bool = True, tol: float = 1e-10,
                 max_iter: int = 100):
        self.backbone = backbone
        self.C = C
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter

    def _head_template(self):
        """The unfitted head: the objective of the class docstring, solved by Newton-Cholesky."""
        return LogisticRegression(C=self.C, fit_intercept=self.fit_intercept, tol=self.tol,
                                  max_iter=self.max_iter, solver="newton-cholesky")

    def _validate_hyperparameters(self):
        if not isinstance(self.backbone, torch.nn.Module):
            raise TypeError(
                f"{_OWNER}: backbone must be a torch.nn.Module mapping rows to features; got "
                f"{type(self.backbone).__name__}. For the layers of a skorch net pass its "
                "module_ (or the submodule below the head)."
            )
        check_interval(_OWNER, "C", self.C, 0, np.inf, closed="neither",
                       why="it is the inverse strength of the head's L2 penalty; the coupling "
                       "engines need a strictly convex objective.")
        check_interval(_OWNER, "tol", self.tol, 0, np.inf, closed="neither",
                       why="it is the solver's stopping tolerance; use 1e-10.")
        check_int(_OWNER, "max_iter", self.max_iter, 1, None)
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise ValueError(f"{_OWNER}: fit_intercept must be True or False; got {self.fit_intercept!r}.")

    def _features(self, X, backbone=None):
        """phi(X) as a float64 array, one row per row of X (X already validated)."""
        backbone = self.backbone_ if backbone is None else backbone
        dtype = _backbone_dtype(backbone)
        device = next((t.device for t in backbone.parameters()), torch.device("cpu"))
        X = np.asarray(X)
        out = []
        with torch.no_grad():
            for start in range(0, max(X.shape[0], 1), _CHUNK):
                chunk = torch.tensor(X[start : start + _CHUNK], dtype=dtype, device=device)  # a copy
                out.append(backbone(chunk).reshape(chunk.shape[0], -1).to("cpu", torch.float64).numpy())
        feats = np.concatenate(out) if len(out) > 1 else out[0]
        if not np.isfinite(feats).all():
            raise ValueError(
                f"{_OWNER}: the backbone returned non-finite features; check its weights and the "
                "scale of X."
            )
        return feats

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None):
        """Compute the features with the frozen backbone and solve the head exactly.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (the backbone's input).
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-row weights :math:`s_i` of the loss.

        Returns
        -------
        self : PrivateHeadClassifier
            The fitted classifier.

        Raises
        ------
        TypeError
            If ``backbone`` is not a ``torch.nn.Module``.
        ValueError
            For invalid hyper-parameters or data, non-finite features, or a backbone
            whose tensors changed during the feature pass.
        """
        self._validate_hyperparameters()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        backbone = copy.deepcopy(self.backbone)
        before = _state(self.backbone)
        backbone.eval()
        backbone.requires_grad_(False)
        feats = self._features(X, backbone)
        changed = _changed(before, backbone)
        if changed:
            raise ValueError(
                f"{_OWNER}: the backbone's tensors {changed[:5]} changed while computing the "
                "features, so they would depend on the private rows. The backbone must be "
                "frozen: use a module whose forward is a pure function of its input (no updates "
                "of its own parameters or buffers, even in eval mode)."
            )
        # LogisticRegression validates sample_weight itself.
        head = self._head_template().fit(feats, y, sample_weight=sample_weight)
        self.backbone_ = backbone
        self.head_ = head
        self.classes_ = head.classes_
        self.n_backbone_features_ = feats.shape[1]
        self.n_iter_ = head.n_iter_
        return self

    def _phi(self, X):
        """Validated rows of X through the fitted backbone: the head's input."""
        check_is_fitted(self)
        return self._features(validate_data(self, X, dtype=np.float64, reset=False))

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Logits of the head on the backbone's features, shape (n_samples,) or (n_samples, n_classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        """
        phi = self._phi(X)  # raises NotFittedError first
        return self.head_.decision_function(phi)

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities, shape (n_samples, n_classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        """
        phi = self._phi(X)  # raises NotFittedError first
        return self.head_.predict_proba(phi)

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Log class probabilities, shape (n_samples, n_classes).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        """
        phi = self._phi(X)  # raises NotFittedError first
        return self.head_.predict_log_proba(phi)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Most probable class, shape (n_samples,).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        """
        phi = self._phi(X)  # raises NotFittedError first
        return self.head_.predict(phi)


class _HeadAdapter:
    """The head's parameters only: ``head_``'s linear-model vector (coef_ class-major, then
    intercept_); the backbone is a hyper-parameter and is never read, noised or scrubbed."""

    @staticmethod
    def _head(estimator):
        check_is_fitted(estimator, "head_")
        return estimator.head_

    def get_vector(self, estimator) -> np.ndarray:
        head = self._head(estimator)
        return get_adapter(head).get_vector(head)

    def set_vector(self, estimator, vector):
        head = self._head(estimator)
        get_adapter(head).set_vector(head, vector)
        return estimator

    def canonicalize(self, estimator):
        return estimator

    def project(self, estimator):
        head = self._head(estimator)
        get_adapter(head).project(head)
        return estimator

    def scrub(self, estimator):
        # The solver diagnostics (n_iter_) are computed on the private rows; the rest of
        # the estimator's fitted state is public (backbone_, classes_, sizes).
        head = self._head(estimator)
        get_adapter(head).scrub(head)
        vars(estimator).pop("n_iter_", None)
        return estimator

    def __repr__(self):
        return f"{type(self).__name__}()"


class _HeadLoss:
    """scikit-learn's logistic objective (:func:`get_smooth_loss` of the head) on phi(X)."""

    def check(self, estimator):
        template = estimator._head_template()
        get_smooth_loss(template).check(template)

    def blocks(self, estimator, X, y, fit_rows, sample_weight):
        # Same backbone, same dtype path as fit: the engines see exactly the fitted features.
        feats = estimator._features(X)
        return get_smooth_loss(estimator.head_).blocks(estimator.head_, feats, y, fit_rows, sample_weight)


register_adapter(PrivateHeadClassifier, lambda est: _HeadAdapter())
register_smooth_loss(PrivateHeadClassifier, lambda est: _HeadLoss())
