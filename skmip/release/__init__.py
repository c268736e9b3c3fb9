"""Release: synthetic data and statistics of private records, with a stated promise.

- :mod:`skmip.release.gaussian` — :class:`MIPGaussianSynthesizer` (mean and covariance).
- :mod:`skmip.release.marginals` — :class:`MIPMarginalSynthesizer` (noisy marginals of a
  discrete table, calibrated by the exact coupling bound) and its DP twin
  :class:`DPMarginalSynthesizer`.
- :mod:`skmip.release.tabular` — :class:`MIPTabularSynthesizer` for mixed tables, over the
  column domains of :mod:`skmip.release.domains`.
- :mod:`skmip.release.statistic` — :class:`Statistic`, a plain statistic as an estimator.
- :mod:`skmip.release.dp_baselines` — DP synthesizers used as baselines.
"""
