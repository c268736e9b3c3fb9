"""The spread of a learner's output over random subsets of the data: one home for both uses.

- :mod:`skmip.calibration.spread.subsets` — what both share: the data checks, the subsets
  (one seed each, drawn up front), their fits in fixed chunks through joblib, the checks of
  the parameter vectors.
- :mod:`skmip.calibration.spread.moments` — per-coordinate M-th central moments of the fitted
  parameters over random half-splits (Izzo et al., Algorithm 1 / Corollary 10), streamed
  into :mod:`skmip.calibration.spread.accumulator`.
- :mod:`skmip.calibration.spread.noise_factor` — the covariance of the fit over subsets, a
  full noise shape for the coupling calibration.
"""
