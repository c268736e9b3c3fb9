"""SubsampledDPClassifier: Thudi et al.'s MI sampling mechanism around any DP learner.

Keep each record independently with probability T, train an (epsilon, delta)-DP learner on
what is kept, and state the resulting bound on membership-inference positive accuracy
(Theorem 3.3); or choose epsilon from a target bound (Section 4.3).
"""

from __future__ import annotations

import copy
import numbers

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from skmip.utils.rng import draw_seed, fix_inner_random_state, resolve_rng
from skmip.utils.deprecation import RenamedParametersMixin, is_unset, renamed_parameter
from skmip.utils.validation import (
    check_class_labels, check_interval, check_predict_input, input_errors,
    refuse_dp_sample_weight,
)
from skmip.bounds.subsampling import (
    epsilon_for_positive_accuracy,
    negative_accuracy_bound,
    positive_accuracy_bound,
)
from skmip.exceptions import check_privacy_seed
from skmip.promise import Promise, PromiseMixin

__all__ = ["SubsampledDPClassifier"]

_OWNER = "SubsampledDPClassifier"

#: Fitted attributes this class sets; cleared together so that a failed fit leaves none.
_FITTED = (
    "estimator_",
    "epsilon_",
    "delta_",
    "positive_accuracy_bound_",
    "negative_accuracy_bound_",
    "n_train_",
    "classes_",
    "n_features_in_",
    "feature_names_in_",
)


def _estimator_has(attr):
    """Delegate only when the inner estimator has ``attr`` (so ``hasattr`` tells the truth)."""

    def check(self):
        if hasattr(self, "estimator_"):
            return hasattr(self.estimator_, attr)
        return hasattr(self._inner_template(), attr)

    return check


def _default_estimator():
    from skmip.defend.dp_logistic import DPLogisticRegression

    return DPLogisticRegression()


class SubsampledDPClassifier(RenamedParametersMixin, PromiseMixin, MetaEstimatorMixin, ClassifierMixin,
                             BaseEstimator):
    """Train a DP classifier on a Poisson subsample and bound membership-inference precision.

    ``fit`` keeps each row of the data it is given independently with probability
    ``train_size`` and fits a differentially private classifier on the kept rows with
    budget ``epsilon`` (given, or the largest one meeting ``target_bound``). For every
    record of the data passed to ``fit`` and every attack, the probability that the record
    was trained on, given that the attack says so, is at most ``positive_accuracy_bound_``
    (Thudi et al., Theorem 3.3). Subsampling lowers that bound much more than a smaller
    epsilon does (Section 3.4), so at a fixed bound a lower rate can buy a larger epsilon
    and a more accurate model (Section 4.3, Figure 5).

    Parameters
    ----------
    estimator : estimator instance, default=None
        A DP-capable classifier: one whose ``get_params()`` has ``epsilon`` (and ``delta``
        for an (epsilon, delta)-DP learner), guaranteeing DP with respect to adding or
        removing one row. ``None`` means :class:`~skmip.defend.dp_logistic.DPLogisticRegression`
        (pure epsilon-DP). :class:`skmip.nn.DPNeuralNetClassifier` and your own estimators
        qualify the same way. Its ``epsilon``/``delta`` are overwritten in the fitted copy;
        if it has a ``classes`` parameter left at ``None`` it receives the label set of the
        data passed to ``fit``.
    train_size : float, default=0.5
        ``T``, the fraction of the data given to ``fit`` that trains: each row is kept
        independently with probability ``T`` (Poisson sampling, as Lemma 3.2 requires), in
        (0, 1]. The same meaning as :class:`~skmip.defend.MIPNoiseWrapper`'s ``train_size``
        (which draws exactly that fraction); the paper's sampling rate ``T``
        (``sampling_rate`` in :mod:`skmip.bounds`).
    epsilon : float, default=None
        Budget of the inner learner. Mutually exclusive with ``target_bound``; if both are
        ``None`` the inner estimator's own ``epsilon`` is used.
    delta : float, default=1e-5
        ``delta`` passed to an (epsilon, delta)-DP inner estimator. A pure epsilon-DP
        estimator (no ``delta`` parameter) is used as it is and the bounds use
        ``delta_ = 0``, which its guarantee allows.
    target_bound : float, default=None
        Desired bound on MI positive accuracy, in (0, 1). ``epsilon_`` is then the largest
        epsilon meeting it at this ``train_size`` (closed form, see
        :func:`skmip.bounds.epsilon_for_positive_accuracy`). Section 4.3 uses 0.953, 0.881
        and 0.731 (epsilon = 3, 2, 1 at T = 0.5).
    min_tpr : float, default=0.01
        Floor on the attacker's rate ``P(S | x*)`` that the bound needs when ``delta_ > 0``
        (Section 4.3 uses 1%); also used as the floor on ``P(S | x* not in D)`` for
        ``negative_accuracy_bound_``. Unused when ``delta_ == 0``.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of the subsample (and, when fixed, of the inner estimator's seed). ``None``
        draws fresh OS entropy, the only setting under which the subsample is secret; a
        fixed value emits a :class:`~skmip.exceptions.PrivacyWarning`.
    sampling_rate : float or "deprecated", default="deprecated"
        Deprecated name of ``train_size`` (renamed in 0.2, removed in 0.3). When set, it is
        used instead of ``train_size`` and ``fit`` emits a ``FutureWarning``.

    Attributes
    ----------
    estimator_ : estimator
        The fitted DP classifier (what may be released).
    epsilon_ : float
        The budget the inner estimator was trained with.
    delta_ : float
        The delta of its guarantee used in the bounds (0 for a pure epsilon-DP estimator).
    positive_accuracy_bound_ : float
        Theorem 3.3 bound on ``P(x* in D | attack says member)`` (corrected delta-term).
    negative_accuracy_bound_ : float
        Theorem 3.3 bound on ``P(x* not in D | attack says non-member)``.
    n_train_ : int
        Number of rows kept (see Notes). Which rows were kept is not recorded anywhere.
    classes_ : ndarray of shape (n_classes,)
        Class labels of the data passed to ``fit``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of str
        Feature names, when ``X`` has them.

    Notes
    -----
    **Theorem 3.3** (Thudi et al.): if every record is drawn into the training set D
    independently, record ``x*`` with probability T, and the learner is (eps, delta)-DP for
    neighbouring datasets ``D`` and ``D \\ {x*}``, then every attack S satisfies
    ``P(x* in D | S) <= (1 + e^-eps (1-T)/T (1 - delta / P(S | x*)))^-1``. The data passed to
    ``fit`` plays the role of the pool ``{x_1, ..., x_N}``: the bound holds for records of
    that pool even if the pool itself was gathered in an unknown, dependent way, because
    the independent sampling happens afterwards (Section 4.1). The delta-term uses the
    conditional reading of ``P(S | x*)`` (see :func:`skmip.bounds.positive_accuracy_bound`).

    **What is and is not covered.** Anything computed from the *pool* but not from the
    kept rows -- the label set, a scaler fitted on all rows passed to ``fit`` -- does not
    change ``P(x* in D | S)``, because the theorem conditions on the pool. Anything fitted
    on the kept rows must be inside the DP learner; a ``Pipeline`` with a data-dependent
    scaler is therefore not accepted as ``estimator`` (put such a scaler *before* this
    classifier, fitted on the pool). ``n_train_`` discloses ``|D|``: given it, D is a
    uniformly random subset of that size, and the same argument with replace-one
    neighbours gives the bound with ``T`` replaced by ``n_train_ / n`` and ``eps`` by the
    learner's replace-one epsilon (:class:`~skmip.defend.dp_logistic.DPLogisticRegression` is
    epsilon-DP for both neighbour relations). With a fixed ``random_state`` the kept rows
    can be recomputed by anyone who knows the seed and the data, which voids the bound.

    **Randomness.** One generator, resolved once per ``fit``: it draws the membership
    mask, then one integer seed for the inner estimator (applied only when
    ``random_state`` is fixed, so that a default fit leaves the inner noise to fresh
    entropy).

    References
    ----------
    Thudi et al., "Bounding Membership Inference", TMLR 2024: Lemma 3.2, Theorem 3.3,
    Section 4.1 (the MI sampling mechanism), Section 4.3 and Figures 5-6.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skmip.defend.dp_logistic import DPLogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)  # fitted on the pool: allowed (see Notes)
    >>> clf = SubsampledDPClassifier(DPLogisticRegression(data_norm=5.0), train_size=0.3,
    ...                              target_bound=0.881).fit(X, y)
    >>> round(clf.positive_accuracy_bound_, 3), round(clf.epsilon_, 2)
    (0.881, 2.85)
    """

    _renamed_parameters = {"sampling_rate": "train_size"}  # pickles of skmip 0.1

    def __init__(
        self,
        estimator=None,
        *,
        train_size: float = 0.5,
        epsilon: float | None = None,
        delta: float = 1e-5,
        target_bound: float | None = None,
        min_tpr: float = 0.01,
        random_state=None,
        sampling_rate="deprecated",
    ):
        self.estimator = estimator
        self.train_size = train_size
        self.epsilon = epsilon
        self.delta = delta
        self.target_bound = target_bound
        self.min_tpr = min_tpr
        self.random_state = random_state
        self.sampling_rate = sampling_rate

    # ------------------------------------------------------------------ helpers
    def _inner_template(self):
        return _default_estimator() if self.estimator is None else self.estimator

    def _train_size(self, warn=False):
        """``T``: ``train_size``, or the deprecated ``sampling_rate`` when that is set."""
        return renamed_parameter(_OWNER, "sampling_rate", self.sampling_rate, "train_size",
                                 self.train_size, 0.5, warn=warn, stacklevel=4)

    def _validate_hyperparameters(self):
        name = "train_size" if is_unset(self.sampling_rate) else "sampling_rate"
        check_interval(_OWNER, name, self._train_size(), 0, 1, closed="right",
                       why="it is the probability T that each row is kept (Theorem 3.3's P_x*(1)).")
        check_interval(_OWNER, "delta", self.delta, 0, 1, closed="left")
        check_interval(_OWNER, "min_tpr", self.min_tpr, 0, 1, closed="right",
                       why="it is a floor on a probability; Section 4.3 uses 0.01.")
        if self.epsilon is not None and self.target_bound is not None:
            raise ValueError(
                f"{_OWNER}: pass epsilon or target_bound, not both (got epsilon={self.epsilon!r}, "
                f"target_bound={self.target_bound!r}). target_bound chooses epsilon for you."
            )
        if self.epsilon is not None:
            check_interval(_OWNER, "epsilon", self.epsilon, 0, np.inf, closed="neither",
                           why="it is the inner learner's DP budget.")
        if self.target_bound is not None:
            check_interval(_OWNER, "target_bound", self.target_bound, 0, 1, closed="neither",
                           why="it bounds a probability; 1 would put no constraint on epsilon.")

    def _check_dp_capable(self, inner):
        params = inner.get_params(deep=False)
        if "epsilon" not in params:
            raise TypeError(
                f"{_OWNER}: estimator must be DP-capable, i.e. expose an 'epsilon' parameter (and "
                f"'delta' for (epsilon, delta)-DP) and be DP for adding/removing one row; got "
                f"{type(inner).__name__}, whose parameters are {sorted(params)}. Use "
                "skmip.defend.dp_logistic.DPLogisticRegression (the default), "
                "skmip.nn.DPNeuralNetClassifier, or your own estimator with such parameters. A "
                "Pipeline does not qualify: fit data-dependent preprocessing on all rows, before "
                "this classifier."
            )
        return params

    def _resolve_epsilon(self, params, delta_):
        if self.epsilon is not None:
            return float(self.epsilon)
        if self.target_bound is not None:
            return float(epsilon_for_positive_accuracy(
                self.target_bound, sampling_rate=self._train_size(), delta=delta_,
                min_tpr=self.min_tpr,
            ))
        own = params["epsilon"]
        if isinstance(own, bool) or not isinstance(own, numbers.Real) or not 0 < own < np.inf:
            raise ValueError(
                f"{_OWNER}: with epsilon=None and target_bound=None the inner estimator's own "
                f"epsilon is used, and it must be a positive finite number; got {own!r}. Pass "
                "epsilon=... or target_bound=..."
            )
        return float(own)

    def _clear_fitted(self):
        for name in _FITTED:
            self.__dict__.pop(name, None)

    # ------------------------------------------------------------------ fitting
    def _validate_input(self, inner, params, X, y):
        """``(X, y, probe, classes)``: the data as the inner estimator accepts it; ``probe``
        is the copy on which ``validate_data`` recorded ``n_features_in_``."""
        inner_tags = get_tags(inner)
        probe = copy.copy(self)  # validate_data records n_features_in_ on what it is given
        with input_errors(_OWNER):
            X, y = validate_data(
                probe, X, y, reset=True, accept_sparse=inner_tags.input_tags.sparse,
                dtype="numeric", ensure_all_finite=not inner_tags.input_tags.allow_nan,
            )
        if "classes" in params and params["classes"] is None:
            # The label set handed to the inner estimator is learnt here, from the pool.
            classes = check_class_labels(_OWNER, y)
        else:  # the inner estimator knows its labels, or learns them itself
            check_classification_targets(y)
            classes = np.unique(y)
        return X, y, probe, classes

    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params):
        """Poisson-subsample the rows, fit the DP classifier on them, compute the bounds.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The pool of records; each row is kept with probability ``train_size``.
        y : array-like of shape (n_samples,)
            Class labels.
        **fit_params
            None accepted; ``sample_weight`` is refused with a ValueError that says why
            (weights change the sensitivity the DP noise is calibrated to).

        Returns
        -------
        self : SubsampledDPClassifier
            The fitted classifier.

        Raises
        ------
        ValueError
            For an invalid hyper-parameter, an unreachable ``target_bound``, a subsample with
            no rows, or (for an inner estimator without a ``classes`` parameter) a subsample
            missing a class. A failed fit leaves the state of an earlier fit as it was.
        TypeError
            If the inner estimator is not DP-capable.
        """
        refuse_dp_sample_weight(_OWNER, fit_params)
        t = self._train_size(warn=True)
        self._validate_hyperparameters()
        inner = clone(self._inner_template())
        params = self._check_dp_capable(inner)
        has_delta = "delta" in params
        delta_ = float(self.delta) if has_delta else 0.0
        epsilon_ = self._resolve_epsilon(params, delta_)

        X, y, probe, classes = self._validate_input(inner, params, X, y)

        check_privacy_seed(_OWNER, self.random_state)
        rng = resolve_rng(self.random_state)
        # Lemma 3.2 needs each row kept independently: Bernoulli(T) per row, not a fixed-size draw.
        kept = np.flatnonzero(rng.random(X.shape[0]) < t)
        inner_seed = draw_seed(rng)
        n_train = int(kept.size)
        if n_train == 0:
            raise ValueError(
                f"{_OWNER}: the Poisson subsample kept 0 of n_samples={X.shape[0]} rows (train_size="
                f"{t}); there is nothing to train on. Pass more rows or a larger "
                "train_size. Re-drawing until rows are kept would bias the sampling the bound "
                "relies on."
            )
        X_train, y_train = _safe_indexing(X, kept), _safe_indexing(y, kept)
        del kept  # no record of which rows were kept outlives this call

        updates = {"epsilon": epsilon_}
        if has_delta:
            updates["delta"] = delta_
        if "classes" in params and params["classes"] is None:
            # The pool's label set is a function of the pool, not of D: releasing it does
            # not change P(x* in D | S).
            updates["classes"] = classes
        elif "classes" not in params:
            missing = np.setdiff1d(classes, np.unique(y_train))
            if missing.size:
                raise ValueError(
                    f"{_OWNER}: the subsample of {n_train} rows misses class(es) "
                    f"{missing.tolist()}, and {type(inner).__name__} has no 'classes' parameter "
                    "to learn them anyway. Pass more rows of each class or a larger train_size."
                )
        inner.set_params(**updates)
        if self.random_state is not None:
            fix_inner_random_state(inner, inner_seed)
        inner.fit(X_train, y_train)
        del X_train, y_train

        pos = positive_accuracy_bound(epsilon_, sampling_rate=t, delta=delta_,
                                      min_tpr=self.min_tpr)
        neg = negative_accuracy_bound(epsilon_, sampling_rate=t, delta=delta_,
                                      min_tnr=self.min_tpr)
        fitted = {
            "estimator_": inner,
            "epsilon_": epsilon_,
            "delta_": delta_,
            "positive_accuracy_bound_": float(pos),
            "negative_accuracy_bound_": float(neg),
            "n_train_": n_train,
            "classes_": getattr(inner, "classes_", classes),
            "n_features_in_": probe.n_features_in_,
        }
        if hasattr(probe, "feature_names_in_"):
            fitted["feature_names_in_"] = probe.feature_names_in_
        # Only now, with everything computed, replace the state of an earlier fit.
        self._clear_fitted()
        self.__dict__.update(fitted)
        return self

    def stated_promise(self) -> Promise:
        """The promise of the fitted classifier: Theorem 3.3's bound on MI positive accuracy.

        Returns
        -------
        Promise
            Of kind ``"positive_accuracy"``, with value ``positive_accuracy_bound_`` and the
            ``epsilon_``, ``delta_``, ``train_size`` (as ``sampling_rate``, the paper's ``T``),
            ``min_tpr`` and ``n_train_`` the audit needs to translate it to its game
            (:mod:`skmip.promise`).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        """
        check_is_fitted(self)
        return Promise.positive_accuracy(
            self.positive_accuracy_bound_, epsilon=self.epsilon_, delta=self.delta_,
            sampling_rate=self._train_size(), min_tpr=self.min_tpr, n_train=self.n_train_,
        )

    # ------------------------------------------------------------------ delegation
    @available_if(_estimator_has("predict"))
    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predict with the DP classifier."""
        X = check_predict_input(self, X)
        return self.estimator_.predict(X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities of the DP classifier."""
        X = check_predict_input(self, X)
        return self.estimator_.predict_proba(X)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Log class probabilities of the DP classifier."""
        X = check_predict_input(self, X)
        return self.estimator_.predict_log_proba(X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Decision function of the DP classifier."""
        X = check_predict_input(self, X)
        return self.estimator_.decision_function(X)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self._inner_template())
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.input_tags.allow_nan = inner.input_tags.allow_nan
        tags.classifier_tags = copy.deepcopy(inner.classifier_tags) or tags.classifier_tags
        return tags
