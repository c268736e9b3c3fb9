"""Defend: estimators that train on private data and release something with a stated promise.

- :class:`MIPNoiseWrapper`, :class:`MIPNoiseWrapperCV`, :func:`mip_noise_path` — eta-MIP for
  any estimator by noise on its parameters (Izzo et al., Algorithm 1; the coupling bound),
  or by training on MIP synthetic data (:mod:`skmip.defend.mip_noise`,
  :mod:`skmip.defend.mip_noise_cv`, :mod:`skmip.defend.synthetic_route`).
- :class:`~skmip.defend.subsampled.SubsampledDPClassifier` — subsample, train with
  (eps, delta)-DP, bound the MI positive accuracy (Thudi et al.).
- :class:`~skmip.defend.dp_logistic.DPLogisticRegression` — objective-perturbation DP
  logistic regression, the DP learner of the subsampled defence.

How much noise comes from :mod:`skmip.calibration`; what a fitted defence promises it states
through :class:`skmip.promise.Promise`, which the audit reads.
"""

from skmip.defend.mip_noise import MIPNoiseWrapper, mip_noise_path
from skmip.defend.mip_noise_cv import MIPNoiseWrapperCV

__all__ = ["MIPNoiseWrapper", "MIPNoiseWrapperCV", "mip_noise_path"]
