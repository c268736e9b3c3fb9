"""Calibration: how much noise a target eta needs, and the noise itself.

- :mod:`skmip.calibration.noise_laws` — the noise laws (generalized-normal direction with a
  Laplace radius, Izzo et al. Algorithm 1; Gaussian), their sampling and densities.
- :mod:`skmip.calibration.spread` — the spread of a learner's output over random subsets:
  per-coordinate central moments (:func:`estimate_sigma`, Corollary 10) and the full
  covariance noise factor of the coupling calibration.
- :mod:`skmip.calibration.swap` — swap distances for the coupling bound, one module per
  engine (refit, newton, influence, closed form, exact) and their certificates.
- :mod:`skmip.calibration.noise_shape` — a noise shape designed for utility.
- :mod:`skmip.calibration.losses` — the registry of smooth losses the influence engines read.

The closed-form inequalities themselves live in :mod:`skmip.bounds`.
"""
