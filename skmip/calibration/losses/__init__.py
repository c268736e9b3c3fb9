"""The smooth-loss registry: the objective an estimator minimises, read by the influence engines.

:mod:`skmip.calibration.losses.terms` holds the parts a loss is made of (loss blocks, their
generalised-linear and multi-margin forms, the helpers that build them);
:mod:`~skmip.calibration.losses.linear` (logistic regression, least squares),
:mod:`~skmip.calibration.losses.glm` (Tweedie family) and :mod:`~skmip.calibration.losses.svm`
(squared-hinge ``LinearSVC``) the built-in losses; :mod:`~skmip.calibration.losses.registry` the
registry, which imports them all. Nothing here imports the swap engines, which build on it.
"""
