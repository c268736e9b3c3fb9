r"""Where the noisy descent starts: zero, or the estimator's intercept-only fit to D's labels.

Abadi et al.'s DP-SGD starts from a fixed point, and so may this engine: any starting point that
is the same whichever D_train is drawn leaves the accountant's guarantee intact (the run is then
the same adaptive composition of subsampled Gaussian sums, from a different public constant).
:func:`prior_start` chooses the **null model of D**: the estimator fitted on all-zero rows with
the label distribution of D (a classifier: each class of D once, weighted by its count in D; a
regressor: the mean target of D). Every coefficient of that fit is zero, and its intercept is
the log class frequencies (logistic regression), the mean target (least squares), or the log of
the mean target (the Poisson, Gamma and Tweedie GLMs): a function of D's label frequencies or
mean target alone, never of D_train, and never of a fit of D's features to its labels.

Why it matters: a clipped row gradient spends most of its norm on the features (a standardised
row of 61 columns has norm about 8, the intercept's share of it is 1), so from zero the
intercept, which carries the class balance, is learned last and noisiest. On German credit (70%
of one class, 350 rows in D_train) the release from zero falls below the majority class; from the
prior it does not (docs/pipelines.md, "Noisy gradients for scikit-learn GLMs, without torch").

What it does not protect: D's class frequencies (or mean target) enter the release through its
intercept, as D's size and label set already do. Definition 1 treats D as known to the adversary
and randomises only D_train, so these facts about D as a whole are public by its threat model and
are released as is; a deployment where D's class balance is itself secret needs ``start="zero"``.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone, is_classifier

from skmip.params import get_adapter

__all__ = ["prior_start"]


def prior_start(estimator, n_features, y_pool, classes=None):
    r"""The parameter vector of ``estimator``'s intercept-only fit to the labels of D.

    Parameters
    ----------
    estimator : estimator instance
        A scikit-learn GLM with a registered smooth loss (not modified).
    n_features : int
        Columns of the design matrix.
    y_pool : array-like of shape (n,) or (n, n_outputs)
        The labels (targets) of **D**, never D_train's.
    classes : array-like or None, default=None
        The labels of D (classifiers): every entry of ``y_pool`` is one of them.

    Returns
    -------
    ndarray
        In the parameter adapter's layout: zero coefficients and the null model's intercept
        (the log class frequencies for ``LogisticRegression``, the mean target for least
        squares, the log mean target for the log-link GLMs); all zeros for an estimator without
        an intercept.

    Raises
    ------
    ValueError
        If ``y_pool`` holds a label outside ``classes``.

    Notes
    -----
    The fit sees only all-zero rows and either D's class counts (as sample weights) or two rows
    labelled with D's mean target: the minimiser of the estimator's loss over constants depends on
    the labels through these alone (the mean is the minimiser of the squared error and of every
    Tweedie deviance), so the start is a function of D's label distribution. Whichever D_train is
    drawn, it is the same, hence the accountant's bound (:func:`skmip.bounds.dpsgd_eta`) holds
    from it unchanged: the bound is over the noisy sums, for any fixed start. The intercept is
    the estimator's own solver's (lbfgs for ``LogisticRegression``: to its tolerance), and any
    value it returns is as public as the exact one. D's row weights (a ``sample_weight`` fit
    parameter) are not read: the start is the unweighted null model, a point the descent then
    leaves along the weighted objective.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression, Ridge
    >>> v = prior_start(LogisticRegression(), 2, [0, 0, 0, 1], classes=[0, 1])
    >>> np.round(v, 2).tolist()  # coef, coef, intercept = log(1/3) to the solver's tolerance
    [0.0, 0.0, -1.1]
    >>> prior_start(Ridge(), 1, [1.0, 2.0, 6.0]).tolist()
    [0.0, 3.0]
    """
    model = clone(estimator)
    y_pool = np.asarray(y_pool)
    if is_classifier(estimator):
        classes = np.unique(np.asarray(classes))
        labels, counts = np.unique(y_pool, return_counts=True)
        if not np.all(np.isin(labels, classes)):
            raise ValueError(
                f"prior_start: y_pool holds labels {np.setdiff1d(labels, classes).tolist()!r} outside "
                f"classes {classes.tolist()!r}; pass the labels of D and np.unique of them."
            )
        weights = np.zeros(classes.size)
        weights[np.searchsorted(classes, labels)] = counts
        # D's counts as weights (not frequencies): a penalised intercept (LinearSVC's) is then
        # shrunk as in a fit on D's rows. A class that y_pool lacks keeps a negligible weight, as
        # the fit needs every class of the template's label set.
        y0, w0 = classes, np.maximum(weights, 1e-3)
    else:
        mean = y_pool.astype(np.float64).mean(axis=0)
        y0, w0 = np.stack([mean, mean]), np.full(2, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence notes of a fit on constant rows
        model.fit(np.zeros((len(y0), int(n_features))), y0, sample_weight=w0)
    vector = np.asarray(get_adapter(model).get_vector(model), dtype=np.float64)
    return vector
