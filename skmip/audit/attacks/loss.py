"""The LOSS attack (Yeom et al. 2018; Nasr et al. 2021, Distinguisher 1): low loss means member."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from skmip.audit.attacks._base import MembershipAttack, check_matrix

__all__ = ["LossAttack", "loss_scores"]


def loss_scores(loss: ArrayLike) -> np.ndarray:
    """Scores of the LOSS attack: minus the target model's loss on each row.

    Parameters
    ----------
    loss : array_like of shape (n_models, n_samples)
        Per-row loss of every model (e.g. :attr:`skmip.audit.game.MembershipGame.loss`).

    Returns
    -------
    ndarray of shape (n_models, n_samples)
        ``-loss``: thresholding it at ``-tau`` is Distinguisher 1 ("guess D' if the loss is
        at most tau").

    Notes
    -----
    The attack uses no reference model: each row is judged by the target's loss alone, one
    threshold for all rows. Nasr et al., Distinguisher 1; Yeom et al. (2018), whose threshold
    is the average training loss -- the ROC sweeps every threshold.

    References
    ----------
    Yeom, Giacomelli, Fredrikson, Jha, "Privacy risk in machine learning: analyzing the
    connection to overfitting", CSF 2018. Nasr et al., "Adversary instantiation", S&P 2021,
    Section IV-A, Distinguisher 1.

    Examples
    --------
    >>> loss_scores([[0.1, 2.0]]).tolist()
    [[-0.1, -2.0]]
    """
    return -check_matrix("loss_scores", "loss", loss)


class LossAttack(MembershipAttack):
    """LOSS / Yeom attack on a membership game; alias ``"loss"`` (or ``"yeom"``).

    See :func:`loss_scores`.

    Examples
    --------
    >>> LossAttack()
    LossAttack()
    """

    name = "loss"

    def __init__(self):
        pass

    def score(self, game) -> np.ndarray:
        """``-game.loss``."""
        return loss_scores(game.loss)
