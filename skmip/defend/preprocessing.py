"""Pipelines whose transformers are fitted on all of D and whose last step is calibrated by coupling.

Definition 1 of Izzo et al. fixes the dataset D and draws D_train uniformly from it; the
attacker knows D. A transformer fitted on D (what ``fit`` receives), before D_train is drawn,
is a function of D alone: it is the same whichever D_train is drawn, so releasing it tells the
attacker nothing about membership (Theorem 3's post-processing, applied to a map the attacker
already knows). The membership signal is all in the last step, fitted on the transformed rows
of D_train, and that step is calibrated exactly as a bare estimator on the transformed design
matrix: the certified coupling engines see the matrix the learner is fitted on.

What this does *not* protect: facts about D as a whole (a StandardScaler's means, the
categories a OneHotEncoder found, hence that some rare category occurs in D at all) are
released as fitted. ``docs/pipelines.md`` argues the choice.
"""

from __future__ import annotations

import copy

import numpy as np

from sklearn.base import clone

__all__ = ["PreprocessingOnD", "preprocessing_route"]


def preprocessing_route(estimator, method, params):
    """The pipeline route for ``estimator``, or ``None`` where it does not apply.

    It applies to a :class:`~sklearn.pipeline.Pipeline` of at least two steps whose last step
    has a registered smooth loss (:func:`skmip.calibration.swap.get_smooth_loss`), with
    ``params="auto"`` and a coupling calibration (``method`` ``"auto"`` or ``"coupling"``).
    ``method="moments"`` or a ``params`` list keep the earlier route: every step fitted on
    ``D_train`` and noised together (:class:`skmip.params.PipelineAdapter`).

    Parameters
    ----------
    estimator : estimator instance
        What :class:`~skmip.defend.MIPNoiseWrapper` wraps.
    method : {"auto", "coupling", "moments", "synthetic"}
        The wrapper's ``method``, or the name of the route it resolved to.
    params : "auto", list of str or ParamAdapter
        The wrapper's ``params``.

    Returns
    -------
    route : object or None
        The route (it fits the transformers on all of D, and releases them with the noised
        last step), or ``None``.
    """
    from skmip.calibration.routes import calibrated_estimator

    if method == "moments" or calibrated_estimator(estimator, params) is None:
        return None
    return PreprocessingOnD(estimator)


class PreprocessingOnD:
    """Fit a pipeline's transformers on D; hand its last step and the transformed rows on.

    Parameters
    ----------
    pipeline : Pipeline
        The user's unfitted pipeline (never modified).
    """

    def __init__(self, pipeline):
        self.pipeline = pipeline
        self.last_name, self.last = pipeline.steps[-1]

    def split_fit_params(self, owner, fit_params):
        """``(transformer params, last-step params)`` from the pipeline's ``step__param`` keys.

        Raises
        ------
        ValueError
            For a key that names no step (the pipeline itself would refuse it).
        """
        names = [name for name, _ in self.pipeline.steps]
        before, last = {}, {}
        for key, value in fit_params.items():
            step, sep, param = key.partition("__")
            if not sep or step not in names:
                raise ValueError(
                    f"{owner}: fit parameter {key!r} names no step of the Pipeline; a Pipeline's "
                    f"fit parameters are 'step__parameter' with step one of {names}, e.g. "
                    f"'{self.last_name}__sample_weight'."
                )
            if step == self.last_name:
                last[param] = value
            else:
                before[key] = value
        return before, last

    def fit_transform(self, X, y, fit_params, seed):
        """The transformers fitted on all of ``(X, y)`` and ``X`` transformed by them.

        ``seed`` makes randomised transformers deterministic (drawn once, independent of
        ``D_train``, like the learner's seed).
        """
        from skmip.utils.rng import fix_inner_random_state

        transformers = fix_inner_random_state(clone(self.pipeline[:-1]), seed)
        Z = transformers.fit_transform(X, y, **fit_params)
        # A DataFrame out (set_output(transform="pandas")): its column names, for release.
        self.columns = getattr(Z, "columns", None)
        return transformers, Z

    def release(self, transformers, last):
        """The released pipeline: the user's steps, fitted transformers, the noised last step.

        The last step was fitted on the transformed rows as numbers; when the transformers
        give a DataFrame (``set_output(transform="pandas")``) it records their column names,
        as a fit on that DataFrame would have, so predicting through the pipeline does not
        warn that "X has feature names" (issue 31).
        """
        columns = getattr(self, "columns", None)
        if columns is not None and not hasattr(last, "feature_names_in_"):
            last.feature_names_in_ = np.asarray(columns, dtype=object)
        released = clone(self.pipeline)
        released.steps = [*copy.deepcopy(transformers.steps), (self.last_name, last)]
        return released
