"""The release check: the released fit is within the allowance the certified distances carry.

Every certified swap distance adds ``2 * RELEASE_TOL`` for the two released fits of a pair
(docs/coupling.md, "Certified distances"); :func:`check_release` certifies, by the fit's own
gradient and the ball lemma (:class:`~.certify.FitCertificate`, or for several margins per row
:func:`~.multi_certify.fit_certificate`), or by strong convexity (the squared hinge,
:class:`~.hinge_certify.StrongCertifier`), that the polished release is that close to the exact
minimiser of its objective (one block per class of a one-against-the-rest ``LinearSVC``: the
stacked certificate), and refuses it otherwise.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg, sparse

from skmip.calibration.losses.registry import get_smooth_loss, gradient_sum
from skmip.calibration.swap._common import _OWNER
from skmip.calibration.swap.certify import RELEASE_TOL, FitCertificate
from skmip.calibration.swap.hinge_certify import strong_certifier
from skmip.calibration.swap.multi_certify import fit_certificate
from skmip.calibration.swap.polish import _regulariser_hessian
from skmip.calibration.swap.whitening import _Whitener


def _hessian_inverse(block):
    K = block.hessian
    return linalg.cho_solve(linalg.cho_factor(K, lower=True, check_finite=False), np.eye(K.shape[0]),
                            check_finite=False)


def release_error(blocks, rows, scale):
    r"""Certified whitened distance of a released fit from the exact minimiser of its objective.

    ``blocks``: the fit's :class:`~.losses.LossBlock` objects on ``rows`` (one generalised-linear
    or K-margin block, or one strongly convex block per class: one against the rest) with their
    gradients, Hessians and regulariser's gradients at the released parameters;
    ``scale``: the noise shape. The certified distances assume at most
    :data:`~.certify.RELEASE_TOL`; the wrapper checks it before releasing.
    """
    whitener = _Whitener(scale)
    if all(b.glm is not None and b.glm.gsc is None for b in blocks):  # strongly convex (hinge_certify.py)
        return strong_certifier([(b.glm, b.theta, _regulariser_hessian(b, rows), _hessian_inverse(b), rows, b.index)
                                 for b in blocks], whitener).out_error
    (block,) = blocks
    hinv = _hessian_inverse(block)
    if block.multi is not None:  # several margins per row (multi_certify.py)
        return fit_certificate(block.multi, block.theta, rows, lambda V: whitener.apply(V, block.index),
                               hinv=hinv)[0].out_error
    F = block.glm.features[rows]
    residual = gradient_sum(block, rows) + block.regularizer_gradient
    cert = FitCertificate(hinv, F, residual, lambda V: whitener.apply(V, block.index), block.glm.gsc)
    return cert.out_error


def check_release(fitted, X, y, sample_weight, scale):
    """Raise unless the polished release is within :data:`~.certify.RELEASE_TOL` (whitened) of the exact
    minimiser of its objective, the allowance the certified distances carry."""
    loss = get_smooth_loss(fitted)
    Xd = X.toarray() if sparse.issparse(X) else np.asarray(X, dtype=np.float64)
    rows = np.arange(Xd.shape[0])
    blocks = loss.blocks(fitted, Xd, None if y is None else np.asarray(y), rows, sample_weight)
    err = release_error(blocks, rows, scale)
    if not err <= RELEASE_TOL:
        raise ValueError(
            f"{_OWNER}: the released fit is certified only to {err:.3g} (in units of the noise "
            f"shape) from the exact minimiser of its objective, above the {RELEASE_TOL:g} the "
            "certified swap distances allow; the objective is too ill-conditioned for the "
            "released model to be pinned down. Add regularisation (smaller C, larger alpha)."
        )
