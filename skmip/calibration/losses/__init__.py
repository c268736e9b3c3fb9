"""The smooth-loss registry: the objective an estimator minimises, read by the influence engines.

:mod:`skmip.calibration.losses.registry` holds the registry and the built-in losses of
scikit-learn's linear models; :mod:`~skmip.calibration.losses.glm` (Tweedie family) and
:mod:`~skmip.calibration.losses.svm` (squared-hinge ``LinearSVC``) add theirs.
"""
