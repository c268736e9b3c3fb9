"""What a wrapper that releases one noised model exposes: that model's methods and tags.

:class:`~skmip.defend.MIPNoiseWrapper` and :class:`~skmip.defend.MIPNoiseWrapperCV` both
publish a fitted, noised clone of ``estimator`` as ``estimator_``; everything a user calls on
the wrapper (``predict``, ``score``, ``sample``...) is that model's own method, offered only
when the model has it (``available_if``, so ``hasattr`` tells the truth).
"""

from __future__ import annotations

import copy

from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from skmip.utils.validation import check_predict_input


def _released_has(attr):
    """Delegate only when the released (or, before ``fit``, the wrapped) estimator has ``attr``.

    A wrapper with ``refit=False`` releases no model and offers none of its methods.
    """

    def check(self):
        if not getattr(self, "refit", True):
            return False
        if hasattr(self, "estimator_"):
            return hasattr(self.estimator_, attr)
        return hasattr(self.estimator, attr)

    return check


class ReleasedModelMixin:
    """Methods of the released noised model ``estimator_``, and the wrapped estimator's tags."""

    @available_if(_released_has("predict"))
    def predict(self, X):
        """Predict with the noised estimator."""
        X = check_predict_input(self, X)
        return self.estimator_.predict(X)

    @available_if(_released_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the noised estimator."""
        X = check_predict_input(self, X)
        return self.estimator_.predict_proba(X)

    @available_if(_released_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities of the noised estimator."""
        X = check_predict_input(self, X)
        return self.estimator_.predict_log_proba(X)

    @available_if(_released_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the noised estimator."""
        X = check_predict_input(self, X)
        return self.estimator_.decision_function(X)

    @available_if(_released_has("transform"))
    def transform(self, X):
        """Transform with the noised estimator."""
        X = check_predict_input(self, X)
        return self.estimator_.transform(X)

    @available_if(_released_has("score"))
    def score(self, X, y=None, **kwargs):
        """The noised estimator's own ``score``."""
        X = check_predict_input(self, X)
        if y is None:
            return self.estimator_.score(X, **kwargs)
        return self.estimator_.score(X, y, **kwargs)

    @available_if(_released_has("score_samples"))
    def score_samples(self, X):
        """Per-sample scores (e.g. log-likelihoods) of the noised estimator."""
        X = check_predict_input(self, X)
        return self.estimator_.score_samples(X)

    @available_if(_released_has("sample"))
    def sample(self, *args, **kwargs):
        """Draw samples from the noised generative model (post-processing keeps MIP)."""
        check_is_fitted(self)
        return self.estimator_.sample(*args, **kwargs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = copy.deepcopy(inner.classifier_tags)
        tags.regressor_tags = copy.deepcopy(inner.regressor_tags)
        tags.transformer_tags = copy.deepcopy(inner.transformer_tags)
        tags.target_tags = copy.deepcopy(inner.target_tags)
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = False
        # Fresh noise on every fit unless random_state is fixed.
        tags.non_deterministic = True
        return tags
