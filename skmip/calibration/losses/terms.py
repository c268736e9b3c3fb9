r"""The parts a smooth loss is made of, shared by the built-in losses and the swap engines.

A :class:`SmoothLoss` turns an estimator fitted on rows :math:`H` into :class:`LossBlock`
objects: gradients of every row (:class:`RowGradients` for generalised-linear losses, formed on
demand), the Hessian on :math:`H`, and the structure the ``"newton"`` engine needs --
:class:`GLMTerms` (one margin per row) or :class:`MultiMarginTerms` (one margin per class).
The helpers below (:func:`augment`, :func:`weighted_gram`, :func:`row_weights`,
:func:`check_fixed_class_weight`) build those blocks for scikit-learn's linear models.

This module imports nothing of skmip: the registry (:mod:`skmip.calibration.losses.registry`),
the built-in losses (:mod:`~skmip.calibration.losses.linear`, :mod:`~skmip.calibration.losses.glm`,
:mod:`~skmip.calibration.losses.svm`) and the engines (:mod:`skmip.calibration.swap`) all build
on it, so none of them imports another in a circle.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np
from scipy import sparse

from skmip.calibration.losses.mismatch import ObjectiveMismatch

__all__ = [
    "GLMTerms", "MultiMarginTerms", "LossBlock", "RowGradients", "SmoothLoss", "gradient_sum",
    "softmax_terms", "augmented_design_cache", "augment", "weighted_gram", "row_weights",
    "check_fixed_class_weight", "design_csr",
]

#: The public entry point whose error messages these are (:func:`skmip.calibration.swap.estimate_swap_deltas`).
_OWNER = "estimate_swap_deltas"


class GLMTerms(NamedTuple):
    r"""Generalised-linear structure of a block: row :math:`i`'s loss is :math:`\ell_i(u_i)`.

    With :math:`u_i = \tilde x_i^\top \theta` for a fixed feature vector :math:`\tilde x_i`
    (the row with a 1 appended for an intercept), row :math:`i`'s gradient is
    :math:`\ell_i'(u_i)\tilde x_i` and its Hessian :math:`\ell_i''(u_i)\tilde x_i\tilde x_i^\top`.
    This is what lets the ``"newton"`` engine keep the target's loss exact.

    Attributes
    ----------
    features : ndarray of shape (n_samples, D_b)
        :math:`\tilde x_i` in the block's coordinates.
    margins : ndarray of shape (n_samples,)
        :math:`u_i = \tilde x_i^\top\hat\theta_H` at the fit.
    dloss, d2loss : callable
        ``dloss(u, rows)`` and ``d2loss(u, rows)``: :math:`\ell'_{rows}(u)` and
        :math:`\ell''_{rows}(u) \ge 0`, elementwise; ``rows`` is an integer array that
        broadcasts against ``u`` (row-specific labels and weights are looked up with it).
    gsc : float or None
        A constant :math:`R` with :math:`|\ell_i'''(u)| \le R\,\ell_i''(u)` for every
        :math:`u` and row (generalised self-concordance, Bach 2010), which lets the
        ``"newton"`` engine certify its distances (:mod:`.certify`); ``None`` if the loss
        declares none (its distances are then estimates, not bounds).
    lipschitz : ndarray of shape (n_samples,) or None
        For a loss without ``gsc``: :math:`L_i \ge` the Lipschitz constant of
        :math:`\ell_i'` (non-decreasing), which declares the strong-convexity certificate
        (:mod:`skmip.calibration.swap.hinge_certify`: the regulariser's Hessian must be
        positive definite); ``None`` declares none.
    penalty : ndarray of shape (D_b, D_b) or None
        The Hessian :math:`P` of the block's quadratic regulariser, exactly, for the
        strong-convexity certificate (the block's Hessian less its data part would carry the
        rounding of that difference); ``None``: the certificate takes that difference.
    """

    features: np.ndarray
    margins: np.ndarray
    dloss: Callable
    d2loss: Callable
    gsc: float | None = None
    lipschitz: np.ndarray | None = None
    penalty: np.ndarray | None = None


class MultiMarginTerms(NamedTuple):
    r"""Structure of a block whose row losses depend on :math:`K` margins :math:`z_i = \Theta\tilde x_i`.

    The block's coordinates are :math:`\mathrm{vec}(\Theta)` class-major: coordinate
    ``c * D_f + f`` multiplies feature ``f`` in margin ``c`` (``D_f = features.shape[1]``).
    This is what lets the ``"newton"`` engine keep the target's loss exact for
    multinomial models (:mod:`skmip.calibration.swap.multinomial`).

    Attributes
    ----------
    features : ndarray of shape (n_samples, D_f)
        :math:`\tilde x_i` (the row with a 1 appended for an intercept).
    margins : ndarray of shape (n_samples, K)
        :math:`z_i = \hat\Theta_H\tilde x_i` at the fit.
    dloss, d2loss : callable
        ``dloss(Z, rows)`` -> ``(m, K)`` gradients :math:`\nabla_z\ell_{rows}(Z)` and
        ``d2loss(Z, rows)`` -> ``(m, K, K)`` Hessians :math:`\nabla^2_z\ell_{rows}(Z)`
        (positive semi-definite), for ``Z`` of shape ``(m, K)`` and ``rows`` of shape ``(m,)``.
    gsc : float or None
        A constant :math:`R` with :math:`|D^3\ell_i(z)[w, w, v]| \le R\,\mathrm{rg}(v)\,
        D^2\ell_i(z)[w, w]` for all :math:`z, w, v`, where :math:`\mathrm{rg}(v) = \max_a v_a -
        \min_a v_a` (softmax: :math:`R = 1`), which lets the ``"newton"`` engine certify its
        distances (:mod:`skmip.calibration.swap.multi_certify`); ``None`` if the loss declares
        none (its distances are then estimates, not bounds).
    penalty : ndarray of shape (D_b, D_b) or None
        The Hessian :math:`P` of the block's quadratic regulariser (with the terms that pin
        down flat directions of the data part, if the Hessian carries them); needed to certify.
    lipschitz : ndarray of shape (n_samples,) or None
        :math:`L_i \ge \sup_z \lambda_{\max}\nabla^2\ell_i(z)` (the gradient's Lipschitz
        constant; softmax: the row's weight), for the certificate's rounding allowance.
    """

    features: np.ndarray
    margins: np.ndarray
    dloss: Callable
    d2loss: Callable
    gsc: float | None = None
    penalty: np.ndarray | None = None
    lipschitz: np.ndarray | None = None


def softmax_terms(features, margins, onehot, weights, penalty=None):
    r""":class:`MultiMarginTerms` of the weighted softmax cross-entropy
    :math:`c_i(\log\sum_a e^{z_a} - t_i^\top z)` (``onehot`` :math:`t_i`, ``weights`` :math:`c_i`).

    Its third derivative is :math:`c_i` times the third central moment of the margins under
    the softmax probabilities, :math:`D^3\ell(z)[w, w, v] = c\,E_p[(w - E_pw)^2(v - E_pv)]`,
    so :math:`R = 1` with the range seminorm (docs/coupling.md, "Certified distances"), and
    :math:`\lambda_{\max}(\mathrm{diag}\,p - pp^\top) \le \max_a p_a \le 1` gives
    :math:`L_i = c_i`. ``penalty``: the regulariser's Hessian, which the certificate needs.
    """

    def probabilities(Z):
        E = np.exp(Z - Z.max(axis=1, keepdims=True))
        return E / E.sum(axis=1, keepdims=True)

    def dloss(Z, rows):
        return weights[rows, None] * (probabilities(Z) - onehot[rows])

    def d2loss(Z, rows):
        P = probabilities(Z)
        W = P[:, :, None] * (np.eye(P.shape[1])[None] - P[:, None, :])  # diag p - p p'
        return weights[rows, None, None] * W

    return MultiMarginTerms(features, margins, dloss, d2loss, gsc=1.0, penalty=penalty,
                            lipschitz=np.asarray(weights, dtype=np.float64))


class LossBlock(NamedTuple):
    r"""One independent block of a smooth objective, evaluated at the fit on :math:`H`.

    The objective is :math:`F_H(\theta) = \sum_{i \in H} \ell_i(\theta) + R(\theta)`; a block
    is a set of coordinates on which it separates (one block for a binary logistic
    regression, one per output of a multi-output ridge).

    Attributes
    ----------
    index : ndarray of int, shape (D_b,)
        Positions of the block's coordinates in the adapter's parameter vector. Coordinates
        in no block are taken to be constant.
    theta : ndarray of shape (D_b,)
        :math:`\hat\theta_H` in the block's coordinates; checked against the adapter's
        vector at ``index``, which catches a layout mismatch.
    gradients : ndarray of shape (n_samples, D_b) or RowGradients
        :math:`\nabla\ell_i(\hat\theta_H)` for *every* row of :math:`\mathcal{D}` (built-in
        generalised-linear losses give a :class:`RowGradients`, formed on demand).
    hessian : ndarray of shape (D_b, D_b)
        :math:`\nabla^2 F_H(\hat\theta_H)`, positive definite.
    regularizer_gradient : ndarray of shape (D_b,)
        :math:`\nabla R(\hat\theta_H)`; with the gradients on :math:`H` it checks that the
        fit is (numerically) the minimiser of this objective.
    glm : GLMTerms or None
        The generalised-linear form, when the loss has one (enables ``"newton"``).
    multi : MultiMarginTerms or None
        The form with :math:`K` margins per row (multinomial models; enables ``"newton"``).
    """

    index: np.ndarray
    theta: np.ndarray
    gradients: np.ndarray
    hessian: np.ndarray
    regularizer_gradient: np.ndarray
    glm: GLMTerms | None = None
    multi: MultiMarginTerms | None = None


class RowGradients:
    r"""The rows' gradients :math:`\ell_i'(u_i)\,\tilde x_i` of a generalised-linear block,
    formed on demand: indexing rows returns their ``(len(rows), D_b)`` array, and
    ``np.asarray`` all of them; :meth:`sum_rows` sums rows a chunk at a time. The influence
    engines use only sums over fit sets, so no ``(n, D_b)`` array is stored per fit.
    """

    #: Rows per chunk of :meth:`sum_rows`.
    _CHUNK = 2**14

    def __init__(self, features, d1):
        self.features, self.d1 = features, d1
        self.shape = features.shape
        self.ndim = 2

    def __getitem__(self, rows):
        return self.d1[rows][..., None] * self.features[rows]

    def __array__(self, dtype=None, copy=None):
        out = self.d1[:, None] * self.features
        return out if dtype is None else out.astype(dtype, copy=False)

    def __len__(self):
        return self.shape[0]

    @property
    def T(self):
        return np.asarray(self).T

    def sum(self, axis=None):
        """As ``np.asarray(self).sum(axis)``; over the rows (axis 0) without forming them all."""
        if axis == 0:
            return self.sum_rows(np.arange(self.shape[0]))
        return np.asarray(self).sum(axis=axis)

    def sum_rows(self, rows):
        """The sum of the gradients of ``rows``: the derivatives of the other rows set to 0,
        then contiguous chunks of the design (no gather of the rows), elementwise products
        and an ordered sum (the same rounding whatever the memory layout)."""
        w = np.zeros(self.shape[0])
        w[rows] = self.d1[rows]
        total = np.zeros(self.shape[1])
        for a in range(0, w.size, self._CHUNK):
            total += np.add.reduce(w[a:a + self._CHUNK, None] * self.features[a:a + self._CHUNK], axis=0)
        return total


def gradient_sum(block, rows):
    r""":math:`\sum_{i \in rows} \nabla\ell_i` of a :class:`LossBlock` (array or
    :class:`RowGradients` gradients)."""
    grads = block.gradients
    return grads.sum_rows(rows) if isinstance(grads, RowGradients) else grads[rows].sum(axis=0)


@runtime_checkable
class SmoothLoss(Protocol):
    """The objective an estimator minimises, for the influence engines.

    ``blocks(estimator, X, y, fit_rows, sample_weight)`` receives the estimator fitted on
    ``X[fit_rows]``, all rows of ``X`` (dense float array) and ``y``, and returns a list of
    :class:`LossBlock`. ``check(estimator)`` raises
    :class:`~skmip.calibration.losses.mismatch.ObjectiveMismatch` (a ``ValueError`` that says
    why and what to change) if the estimator's settings leave the modelled objective.
    """

    def check(self, estimator) -> None: ...

    def blocks(self, estimator, X, y, fit_rows, sample_weight) -> list[LossBlock]: ...


#: The last augmented design, ``(weak reference to X, X's shape, Xa)``, kept while a
#: :func:`augmented_design_cache` is open: the engines call ``blocks`` once per fit on the
#: same X, and one copy of it with a column of ones then serves all.
_AUGMENTED = [None]
_CACHE_OPEN = [0]


@contextlib.contextmanager
def augmented_design_cache():
    """Within it, :func:`augment` returns one read-only augmented copy per (unchanged) X
    instead of a fresh copy per call (an ``(n, d+1)`` copy per fit would dominate the memory
    of the rounds at large n); on leaving it the copy is dropped."""
    _CACHE_OPEN[0] += 1
    try:
        yield
    finally:
        _CACHE_OPEN[0] -= 1
        if not _CACHE_OPEN[0]:
            _AUGMENTED[0] = None


def augment(X, fit_intercept):
    """``X`` with a column of ones appended (``fit_intercept``); inside an
    :func:`augmented_design_cache`, the same read-only array again for the same, unchanged
    ``X``."""
    if not fit_intercept:
        return X
    if not _CACHE_OPEN[0]:
        return np.hstack([X, np.ones((X.shape[0], 1))])
    cached = _AUGMENTED[0]
    # Checked against X's values too (one pass, no allocation): X may have been changed in place.
    if cached is not None and cached[0]() is X and cached[1] == X.shape and np.array_equal(cached[2][:, :-1], X):
        return cached[2]
    Xa = np.hstack([X, np.ones((X.shape[0], 1))])
    Xa.flags.writeable = False
    try:
        ref = weakref.ref(X)
    except TypeError:  # an object without weak references: no caching
        return Xa
    _AUGMENTED[0] = (ref, X.shape, Xa, None)  # None: no CSR copy yet (design_csr)
    # Forget it with X, so that no copy of the data outlives the fit.
    weakref.finalize(X, _forget_augmented, ref)
    return Xa


def design_csr(Xa, build=True):
    """The CSR copy of ``Xa`` where ``Xa`` is the augmented design :func:`augment` keeps in an
    open :func:`augmented_design_cache` (read-only: it cannot change while kept), made on the
    first request with ``build`` and dropped with the design; ``None`` for any other array, or
    before a copy is made. For the sparse (one-hot) products of the rounds' row sums: one
    conversion per calibration, then slices by rows."""
    cached = _AUGMENTED[0]
    if cached is None or cached[2] is not Xa:
        return None
    if cached[3] is None and build:
        cached = _AUGMENTED[0] = cached[:3] + (sparse.csr_matrix(Xa),)
    return cached[3]


def _forget_augmented(ref):
    cached = _AUGMENTED[0]
    if cached is not None and cached[0] is ref:
        _AUGMENTED[0] = None


def weighted_gram(Xa, rows, weights):
    r""":math:`\sum_{i \in rows} w_i x_i x_i^\top` (``weights`` aligned with ``rows``), a
    chunk of rows at a time (no ``(len(rows), D)`` temporary at large n)."""
    rows = np.asarray(rows)
    weights = np.broadcast_to(np.asarray(weights, dtype=np.float64), rows.shape)
    out = np.zeros((Xa.shape[1], Xa.shape[1]))
    for a in range(0, rows.size, _GRAM_CHUNK):
        F = Xa[rows[a:a + _GRAM_CHUNK]]
        out += (F.T * weights[a:a + _GRAM_CHUNK]) @ F
    return out


#: Rows per chunk of :func:`weighted_gram`.
_GRAM_CHUNK = 2**15


def row_weights(n, sample_weight):
    """The rows' sample weights (ones when there are none)."""
    return np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)


def check_fixed_class_weight(est):
    """Refuse ``class_weight='balanced'``: its weights depend on each subset's class counts."""
    if isinstance(est.class_weight, str):
        raise ObjectiveMismatch(
            _OWNER, f"class_weight={est.class_weight!r} makes the weights depend on the class counts "
            "of each subset, which a swap changes.", "pass a dict of class weights")
