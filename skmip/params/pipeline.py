"""Pipelines: every step is fitted on the private data and released with it, so the
pipeline's vector is the concatenation of its steps' vectors. The registry builds the
per-step adapters (:func:`skmip.params.get_adapter`)."""

from __future__ import annotations

from collections.abc import Sequence

from skmip.params._base import ParamAdapter, _BlockAdapter


class PipelineAdapter(_BlockAdapter):
    """A ``Pipeline``: the vectors of all its steps, concatenated in step order.

    Parameters
    ----------
    steps : list of (str, ParamAdapter)
        One adapter per step that is not ``"passthrough"``/``None``, by step name.
        :func:`get_adapter` builds it from the pipeline.

    Notes
    -----
    Every step of a pipeline is fitted on the private data and released with it: a
    ``StandardScaler``'s ``mean_`` and ``scale_`` are statistics of the training data just
    like the final model's ``coef_``. They are therefore noised together with the final
    estimator's parameters (one vector, one sigma per coordinate), and :func:`get_adapter`
    refuses a pipeline with a step it cannot adapt rather than release that step's state
    un-noised. Steps without data-dependent state (``FunctionTransformer``, ``Normalizer``,
    ...) contribute no coordinates. ``canonicalize``, ``project`` and ``scrub`` act on each
    step.

    Examples
    --------
    >>> from skmip.params import get_adapter
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.datasets import load_breast_cancer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    >>> adapter = get_adapter(pipe)
    >>> adapter
    PipelineAdapter([('standardscaler', StandardScalerAdapter()),
                     ('logisticregression', LinearModelAdapter())])
    >>> adapter.get_vector(pipe).shape  # 30 means + 30 scales + 30 coefficients + 1
    (91,)
    """

    def __init__(self, steps: Sequence[tuple[str, ParamAdapter]]):
        self.steps = list(steps)

    def _pairs(self, pipeline):
        named = dict(pipeline.steps)
        missing = [name for name, _ in self.steps if name not in named]
        if missing:
            raise ValueError(
                f"{type(self).__name__}: the pipeline has no step(s) {missing}; build the adapter "
                "with get_adapter(pipeline) for this pipeline."
            )
        return [(adapter, named[name]) for name, adapter in self.steps]

    def _read(self, pipeline):
        return [adapter.get_vector(step) for adapter, step in self._pairs(pipeline)]

    def _write(self, pipeline, blocks):
        for (adapter, step), block in zip(self._pairs(pipeline), blocks, strict=True):
            adapter.set_vector(step, block)

    def canonicalize(self, pipeline):
        """Canonical order of every step."""
        for adapter, step in self._pairs(pipeline):
            adapter.canonicalize(step)
        return pipeline

    def project(self, pipeline):
        """Project every step."""
        for adapter, step in self._pairs(pipeline):
            adapter.project(step)
        return pipeline

    def scrub(self, pipeline):
        """Scrub every step (the pipeline object itself holds no fitted state)."""
        for adapter, step in self._pairs(pipeline):
            adapter.scrub(step)
        return pipeline

    def __repr__(self):
        return f"{type(self).__name__}({self.steps!r})"


def _is_pipeline(estimator):
    from sklearn.pipeline import Pipeline

    return isinstance(estimator, Pipeline)
