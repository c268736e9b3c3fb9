r"""Noisy gradients in the top principal directions of D's features: less noise, the same promise.

The noisy-gradient engine adds :math:`\sigma c\,\xi_t` to every coordinate of every step; with
``d`` features the noise's energy grows with ``d`` while the data's signal does not. Where the
noise a run can afford is large (few rows, small eta), the engine trains in the span of the top
``r`` principal directions :math:`V_r` (``d x r``, orthonormal columns) of **D's** features: the
rows of D_train become :math:`x V_r`, the engine learns ``r`` coefficients :math:`w` per output
and the release's coefficients are :math:`V_r w` (the intercepts are kept), so its predictions are
those of the ``r``-dimensional model.

**Why it leaks nothing under Definition 1.** :math:`V_r` is a function of D's feature matrix (its
covariance) and ``r`` a function of public settings (:func:`subspace_rank`); neither reads a label
nor depends on which rows were drawn into D_train, so the attacker, who knows D, knows both. The
engine run on the projected rows is the same mechanism (Poisson-subsampled Gaussian sums of
clipped row gradients, one row moving one clipped gradient), with the same rate, steps and noise
multiplier, so :func:`skmip.bounds.dpsgd_eta` of the run bounds its MIP level unchanged, and
:math:`w \mapsto V_r w` is post-processing (Izzo et al., Theorem 3). Since the columns of
:math:`V_r` are orthonormal, :math:`\|V_r w\| = \|w\|`: the estimator's L2 penalty is the same
on either side, so the engine descends the user's objective restricted to the subspace.

**What it does not protect.** D's principal directions are released as they are (the released
coefficients lie in their span): a fact about D as a whole, public under Definition 1's threat
model, but not hidden from someone who does not know D. And the restriction is a bias: a signal
outside the top ``r`` directions of D's features is not learned.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

__all__ = ["subspace_rank", "principal_directions", "lift", "check_subspace", "MAX_FEATURES"]

#: Widest design whose directions are computed (the covariance is ``d x d``); wider designs are
#: trained in all their columns.
MAX_FEATURES = 4096


def check_subspace(owner, subspace):
    """Refuse a ``subspace`` other than ``"auto"``, an int >= 1 or ``None``, naming ``owner``.

    Examples
    --------
    >>> check_subspace("f", 3), check_subspace("f", "auto"), check_subspace("f", None)
    (3, 'auto', None)
    """
    if (subspace is None or (isinstance(subspace, str) and subspace == "auto")
            or (isinstance(subspace, (int, np.integer)) and not isinstance(subspace, bool) and subspace >= 1)):
        return subspace
    raise ValueError(f"{owner}: subspace must be 'auto' (the rule from k, eta and the schedule), a number of D's "
                     f"principal directions >= 1, or None (all the columns); got {subspace!r}.")


def subspace_rank(n_train, sample_rate, n_steps, noise_multiplier) -> int:
    r"""The dimension the run can resolve: :math:`\lceil k\,\mu^2\rceil`, :math:`\mu = q\sqrt T/\sigma`.

    Parameters
    ----------
    n_train : int
        :math:`k = |D_\mathrm{train}|`.
    sample_rate : float
        :math:`q`.
    n_steps : int
        :math:`T`.
    noise_multiplier : float
        :math:`\sigma` (0: no noise).

    Returns
    -------
    int
        At least 1; a very large value for ``noise_multiplier == 0`` (no projection).

    Notes
    -----
    A heuristic, not a bound: nothing printed rests on it. Over the run, the noise the engine
    adds to the sum of D_train's clipped gradients is worth one Gaussian of standard deviation
    :math:`c/\mu` per coordinate (the subsampled Gaussian's signal-to-noise), while the sum of
    ``k`` rows of norm ``c`` spread over ``r`` directions varies by about :math:`c\sqrt{k/r}`
    per direction from sampling alone. The rule keeps the directions in which the privacy noise
    is no larger than that sampling spread: :math:`r \le k\mu^2`. A function of ``k``, eta (through
    :math:`\sigma`) and the schedule only.

    Examples
    --------
    German credit (k = 350, q = 64/350, 50 steps, sigma = 5.091 at eta = 0.1) and adult
    (k = 11,396, q = 64/11,396, 1,780 steps, sigma = 1.004):

    >>> subspace_rank(350, 64 / 350, 50, 5.091), subspace_rank(11396, 64 / 11396, 1780, 1.004)
    (23, 635)
    """
    if noise_multiplier == 0:
        return np.iinfo(np.int64).max
    mu = float(sample_rate) * math.sqrt(int(n_steps)) / float(noise_multiplier)
    return max(1, math.ceil(int(n_train) * mu * mu))


def principal_directions(X_pool, rank):
    r"""The top ``rank`` principal directions of D's features, or ``None`` where none is dropped.

    Parameters
    ----------
    X_pool : ndarray or sparse matrix of shape (n, d)
        The features of all of D (transformed as the engine sees them), never D_train's alone.
    rank : int
        :math:`r \ge 1`.

    Returns
    -------
    ndarray of shape (d, rank) or None
        Orthonormal columns: the eigenvectors of D's feature covariance with the ``rank``
        largest eigenvalues (``numpy.linalg.eigh``). ``None`` when ``rank >= d`` (the projection
        would drop nothing) or ``d > MAX_FEATURES``.

    Examples
    --------
    >>> X = np.array([[1.0, 0.1], [-1.0, -0.1], [2.0, 0.0], [-2.0, 0.0]])
    >>> V = principal_directions(X, 1)
    >>> V.shape, bool(abs(V[0, 0]) > 0.99), principal_directions(X, 2) is None
    ((2, 1), True, True)
    """
    n, d = X_pool.shape
    if rank >= d or d > MAX_FEATURES:
        return None
    mean = np.asarray(X_pool.mean(axis=0)).ravel()
    gram = X_pool.T @ X_pool
    gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
    covariance = gram / n - np.outer(mean, mean)
    _, vectors = np.linalg.eigh((covariance + covariance.T) / 2)  # ascending eigenvalues
    return np.ascontiguousarray(vectors[:, ::-1][:, : int(rank)])


def lift(template_r, template, V):
    r"""Write :math:`V_r w` into ``template``: the coefficients of ``template_r`` (trained on
    :math:`x V_r`) mapped back to the design's columns, its intercepts copied.

    Parameters
    ----------
    template_r : estimator
        The fitted ``r``-column release.
    template : estimator
        The design's release template (``d`` columns); modified and returned.
    V : ndarray of shape (d, r)
        :func:`principal_directions`.

    Returns
    -------
    estimator
        ``template`` with ``coef_ = template_r.coef_ @ V.T`` and ``intercept_`` of ``template_r``:
        the same decision function on every row.

    Notes
    -----
    A function of the ``r``-column release and of ``V`` (D's features) only: post-processing
    (Izzo et al., Theorem 3), so the release's MIP level is the ``r``-column run's.
    """
    coef = np.asarray(template_r.coef_) @ V.T
    template.coef_ = coef.astype(np.asarray(template.coef_).dtype, copy=False).reshape(np.shape(template.coef_))
    intercept = template_r.intercept_
    # An array (classifiers, multi-output) is copied; a scalar keeps the template's own type.
    template.intercept_ = np.array(intercept, copy=True) if np.ndim(intercept) else type(template.intercept_)(intercept)
    return template
