"""The rule of ``method="auto"`` for an estimator with a registered smooth loss: coupling or noisy gradients.

Both routes release such an estimator (bare, or as a pipeline's last step) with a certified
eta-MIP promise where their theorems apply; which one keeps more utility depends on the data's
shape. :func:`choose_smooth_route` decides from :class:`DataShape` -- the size of D, its width (after
a pipeline's transformers, fitted on D), the size of D_train, D's labels and the target eta --
and the estimator, **never from D_train**: the choice is made before D_train is drawn, so it (and
every message it leads to) is the same whichever rows are drawn. The evidence for each branch is
in docs/pipelines.md ("Which route `method="auto"` takes"), measured by ``benchmarks/bench_auto.py``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.base import is_classifier

__all__ = ["DataShape", "AUTO_BUDGET_SECONDS", "COUPLING_MAX_TRAIN", "coupling_certifies", "choose_smooth_route"]

#: The most one-core seconds ``"auto"`` lets the coupling route's projection
#: (:meth:`CouplingRoute.cost`) reach before it takes noisy gradients instead. The projection is
#: optimistic by about 8x on adult (4,000 rows: projected 51 s, measured 419 s of CPU; issue 32),
#: so 40 projected seconds are about five minutes of CPU.
AUTO_BUDGET_SECONDS = 40.0

#: The largest D_train on which ``"auto"`` prefers coupling to noisy gradients when both state a
#: promise and both fit the budget: below it coupling kept as much or more accuracy in
#: ``benchmarks/bench_auto.py``; above it the noisy-gradient noise is small (its multiplier falls
#: with the number of steps per epoch) and coupling costs minutes (docs/pipelines.md).
COUPLING_MAX_TRAIN = 300


@dataclass(frozen=True)
class DataShape:
    """What ``"auto"`` may read: facts about D (public under Definition 1) and the target.

    Parameters
    ----------
    n_samples : int
        Rows of D.
    n_features : int
        Columns the estimator is fitted on (after a pipeline's transformers, fitted on D).
    n_train : int
        Rows of D_train, ``round(train_size * n)``: a function of n and ``train_size``.
    classes : ndarray or None
        The labels of D (classifiers), never D_train's.
    eta : float
        The target MIP level (the smallest of a path).
    """

    n_samples: int
    n_features: int
    n_train: int
    classes: object
    eta: float


def coupling_certifies(estimator, n_features, classes=None):
    """Whether the coupling route's swap distances for ``estimator`` are certified upper bounds.

    Read from the registered loss's blocks on the public release template (the estimator fitted
    on all-zero rows with D's labels: :func:`skmip.calibration.noisy_gradient.release_template`):
    one generalised-linear block declaring its self-concordance constant (binary logistic,
    least squares, Poisson/Gamma/Tweedie), generalised-linear blocks declaring a Lipschitz
    derivative (the squared hinge of ``LinearSVC``: one block when binary, one per class one
    against the rest), or one block of several margins (multinomial logistic regression), is
    certified; multi-output ridge (one least-squares block per output) is not, and the coupling
    route then states no promise (``mip_bound_ = None``; docs/coupling.md, "Certified
    distances").

    Parameters
    ----------
    estimator : estimator instance
        With a registered smooth loss.
    n_features : int
        Columns of the design matrix.
    classes : array-like or None, default=None
        The labels of D (classifiers).

    Returns
    -------
    bool

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.svm import LinearSVC
    >>> coupling_certifies(LogisticRegression(), 3, [0, 1]), coupling_certifies(LogisticRegression(), 3, [0, 1, 2])
    (True, True)
    >>> coupling_certifies(LinearSVC(), 3, [0, 1, 2])
    True
    """
    return _certificate(estimator, n_features, classes) is not None


def _certificate(estimator, n_features, classes):
    """Which certificate the coupling route's distances get: ``"glm"`` (self-concordant, one
    margin), ``"hinge"`` (the squared hinge: one block, or one per class), ``"multi"`` (several
    margins), or ``None``."""
    from skmip.calibration.losses.registry import get_smooth_loss
    from skmip.calibration.noisy_gradient import release_template

    loss = get_smooth_loss(estimator)
    if loss is None:
        return None
    try:
        loss.check(estimator)  # settings outside the modelled objective (crammer_singer, ...)
    except ValueError:
        return None
    template = release_template(estimator, n_features, classes=classes)
    y0 = np.asarray(classes) if classes is not None else np.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # notes about the zero template's fit
        blocks = loss.blocks(template, np.zeros((len(y0), n_features)), y0, np.arange(len(y0)), None)
    if all(b.glm is not None and b.glm.gsc is None and b.glm.lipschitz is not None for b in blocks):
        return "hinge"  # strongly convex blocks, one or one per class (hinge_certify.py)
    if len(blocks) != 1:
        return None
    glm, multi = blocks[0].glm, blocks[0].multi
    if glm is not None:
        return "glm" if glm.gsc is not None else None
    return "multi" if multi is not None and multi.gsc is not None and multi.penalty is not None else None


def outside_objective(estimator):
    """The reason ``"auto"`` trains ``estimator`` on synthetic records, or ``None``: an estimator
    with a registered smooth loss configured outside it (an L1 penalty, the plain hinge,
    ``crammer_singer``, liblinear's penalised intercept), which neither coupling's influence
    engines (they check the same objective) nor noisy gradients model. A fact about the
    estimator alone, so ``"auto"`` decides it before reading D."""
    from skmip.calibration.routes.noisy_gradient import NoisyGradientRoute

    why = NoisyGradientRoute().applies(estimator, "auto")
    if why is None or why.startswith("no smooth loss"):
        return None
    return (f"{why}, which neither coupling's influence engines nor noisy gradients model: it trains "
            "on MIP synthetic records (method='moments' noises its own parameters instead)")


def choose_smooth_route(estimator, shape, coupling):
    """``(route, reason)``: coupling or noisy gradients for a smooth-loss estimator on D of ``shape``.

    Parameters
    ----------
    estimator : estimator instance
        The estimator with the registered loss (a pipeline's last step).
    shape : DataShape
        Facts about D and the target; nothing about D_train's rows.
    coupling : CouplingRoute
        The coupling route ``"auto"`` resolved to before the data was read (it may carry knobs
        set through the 0.2 spelling); returned as is when coupling is chosen.

    Returns
    -------
    route : CalibrationRoute
    reason : str
        One sentence: why this route.

    Notes
    -----
    In order: (1) an estimator configured outside its registered objective (an L1 penalty, the
    plain hinge, ``crammer_singer``, a penalised intercept), which neither coupling's influence
    engines nor noisy gradients model: the synthetic route; (2) where coupling would state no promise (its distances
    uncertified for the loss), or would certify them only through the slower certificates for
    several margins or the squared hinge (docs/coupling.md; on standardized digits their noise
    kept 0.129 accuracy against noisy gradients' 0.902 for the multinomial logistic regression,
    0.078 against 0.847 for ``LinearSVC``): noisy gradients; (3) a regressor: coupling (the noisy
    descent's clipped steps do not reach coefficients far from unit scale); for a
    classifier, (4) where coupling's projected cost exceeds :data:`AUTO_BUDGET_SECONDS`: noisy
    gradients; (5) where D_train has at most :data:`COUPLING_MAX_TRAIN` rows: coupling, else
    noisy gradients. Every input is public under
    Definition 1 (D, its labels, eta, the estimator), so the choice carries no membership signal.
    """
    from skmip.calibration.routes.noisy_gradient import NoisyGradientRoute

    from skmip.calibration.routes.synthetic import SyntheticRoute

    name = type(estimator).__name__
    noisy = NoisyGradientRoute()
    outside = outside_objective(estimator)
    if outside is not None:
        return SyntheticRoute(), outside
    certificate = _certificate(estimator, shape.n_features, shape.classes)
    if certificate in ("multi", "hinge"):
        what, kept = (("several margins", "0.129 against 0.902") if certificate == "multi"
                      else ("the squared hinge", "0.078 against 0.847"))
        return noisy, (f"coupling certifies this {name} only through its slower certificate for {what}, "
                       f"whose noise kept far less accuracy where measured (standardized digits: {kept} "
                       "by noisy gradients); pass method='coupling' to choose it")
    if certificate is None:
        return noisy, (f"coupling would state no promise for this {name} (its swap distances are not "
                       "certified for the loss); noisy gradients promise eta")
    if not is_classifier(estimator):
        return coupling, (f"{name} is a regressor: coupling keeps the target's own scale, while noisy gradients' "
                          "clipped steps need a target of unit scale (diabetes, raw target: R^2 0.35 against 0.03)")
    cost = coupling.cost(shape.n_samples, shape.n_features, shape.n_train, estimator).seconds
    if cost > AUTO_BUDGET_SECONDS:
        return noisy, (f"coupling is projected at {cost:.0f} s of one core on D of {shape.n_samples} x "
                       f"{shape.n_features}, above the {AUTO_BUDGET_SECONDS:.0f} s budget of 'auto'")
    if shape.n_train <= COUPLING_MAX_TRAIN:
        return coupling, (f"D_train has {shape.n_train} <= {COUPLING_MAX_TRAIN} rows, where coupling "
                          "kept more accuracy than noisy gradients at the same eta")
    return noisy, (f"D_train has {shape.n_train} > {COUPLING_MAX_TRAIN} rows, where noisy gradients kept "
                   "as much accuracy as coupling at the same eta, in less time")
