"""Noisy-gradient training of scikit-learn GLMs, certified eta-MIP, in numpy (no torch).

- :mod:`~skmip.calibration.noisy_gradient.gradients` -- per-row gradients of the estimator's own
  objective (the smooth-loss registry), its regulariser, clipping, the release template.
- :mod:`~skmip.calibration.noisy_gradient.accounting` -- the noise multiplier a target eta needs
  (a search of :func:`skmip.bounds.dpsgd_eta`).
- :mod:`~skmip.calibration.noisy_gradient.engine` -- :func:`fit_noisy_gradient`: the noisy descent
  on D_train and the fitted clone of the user's estimator.
"""

from skmip.calibration.noisy_gradient.accounting import noise_multiplier_for_eta
from skmip.calibration.noisy_gradient.engine import (
    DEFAULTS,
    NoisyGradientSchedule,
    default_clip_norm,
    fit_noisy_gradient,
)
from skmip.calibration.noisy_gradient.gradients import RowObjective, clip_rows, loss_scale, release_template

__all__ = [
    "fit_noisy_gradient", "default_clip_norm", "noise_multiplier_for_eta", "NoisyGradientSchedule", "DEFAULTS",
    "RowObjective", "clip_rows", "loss_scale", "release_template",
]
