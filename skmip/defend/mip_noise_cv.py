"""MIPNoiseWrapperCV: choose eta by cross-validation, one calibration per fold for all eta.

In the spirit of :class:`sklearn.linear_model.LogisticRegressionCV`: the grid over the
hyper-parameter is a path, computed once per fold (:func:`~skmip.defend.mip_noise_path`),
instead of one independent fit per candidate as ``GridSearchCV`` does.
"""

from __future__ import annotations

import numbers
import re
import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, MetaEstimatorMixin, is_classifier
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils import _safe_indexing
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from skmip.utils.rng import draw_seed, resolve_rng
from skmip.utils.rows import subset_fit_params
from skmip.utils.deprecation import RenamedParametersMixin
from skmip.utils.validation import check_cv_folds, check_eta, check_interval
from skmip.exceptions import (
    NO_PROMISE_MESSAGE,
    DegenerateReleaseWarning,
    PrivacyWarning,
    check_privacy_seed,
    warn_no_promise_on_given_subset,
)
from skmip.promise import MIPPromiseMixin
from skmip.defend._delegate import ReleasedModelMixin, _released_has
from skmip.defend._input import check_classes, validate_input
from skmip.calibration.routes import n_train_of, warn_if_vacuous
from skmip.calibration.routes.base import VACUOUS_MESSAGE
from skmip.defend._parameters import DEPRECATED, SHARED, MovedKnobsMixin, fill_parameters, validate_shared
from skmip.defend.mip_noise import MIPNoiseWrapper, mip_noise_path, search_route

__all__ = ["MIPNoiseWrapperCV"]

_OWNER = "MIPNoiseWrapperCV"

#: The MIPNoiseWrapper parameters this class passes to every wrapper it fits: the shared
#: table's, but random_state (one seed per fold, resolved here) and method (resolved here into
#: a route, the moved 0.2 knobs forwarded into it).
_FORWARDED = tuple(p.name for p in SHARED if p.name not in ("random_state", "method"))
#: The routes a search takes: it noises a path of parameters.
_ROUTES = ("coupling", "moments", "noisy_gradient")
_SELECTIONS = ("one_se", "best")


def _can_score(search):
    """A released model to score (``refit=True``), by ``scoring`` or by its own ``score``."""
    return search.refit and (search.scoring is not None or _released_has("score")(search))


class MIPNoiseWrapperCV(MovedKnobsMixin, RenamedParametersMixin, MIPPromiseMixin, ReleasedModelMixin, MetaEstimatorMixin,
                        BaseEstimator):
    """:class:`MIPNoiseWrapper` with eta chosen by cross-validation on the privacy-utility frontier.

    For each fold, the noise is calibrated **once** on the fold's training part and drawn for
    every eta of ``etas`` (:func:`~skmip.defend.mip_noise_path`: the swap distances, or the
    spread sigma, do not depend on eta); each noised model is scored on the fold's test part.
    ``eta_`` is then chosen by ``selection`` among the candidates, and a
    :class:`MIPNoiseWrapper` at ``eta_`` is fitted on all the data and released
    (``best_estimator_``; its noised model is ``estimator_``). With 5 folds and 4 etas this
    is 6 calibrations where ``GridSearchCV(MIPNoiseWrapper(...), {"eta": etas})`` runs 21.

    The parameters of the search come first (``etas``, ``cv``, ``scoring``, ``selection``,
    ``refit``); then :class:`MIPNoiseWrapper`'s common ones, with the same defaults and
    meaning, passed to every wrapper fitted (each fold's calibration and the refit), ``method``
    resolved into one route object (:mod:`skmip.calibration.routes`) that carries the route's
    knobs. The 0.2 knobs (``n_rounds``, ``moment``, ...) still work until 0.3, forwarded into
    the route with a ``FutureWarning``.

    Parameters
    ----------
    estimator : estimator instance
        The learner to privatise, as for :class:`MIPNoiseWrapper`.
    etas : sequence of float, default=(0.05, 0.1, 0.2, 0.3)
        Candidate MIP levels, each in (0, 0.5]. Sorted and deduplicated into ``etas_``.
    cv : int, cross-validation generator or iterable, default=5
        As in :func:`sklearn.model_selection.check_cv`: an int gives ``StratifiedKFold`` for
        classifiers and ``KFold`` otherwise.
    scoring : str, callable or None, default=None
        Utility of each noised model on a fold's test part, greater is better
        (:func:`sklearn.metrics.check_scoring`). ``None``: the estimator's own ``score``.
    selection : {"one_se", "best"} or float, default="one_se"
        How ``eta_`` is chosen from the mean CV scores. ``"one_se"``: the smallest eta whose
        mean score is within one standard error of the best mean (the one-standard-error
        rule, Hastie et al., ESL section 7.10; it spends the statistical uncertainty of the
        scores on privacy). ``"best"``: the eta with the best mean score (the smallest on a
        tie). A float ``min_score``: the smallest eta whose mean score is at least
        ``min_score``; an error when none is.
    refit : bool, default=True
        Fit and release a :class:`MIPNoiseWrapper` at ``eta_`` on all the data. With
        ``False`` only the CV results are computed and nothing is released (no ``predict``).
    {{method}}
    {{train_size}}
    {{params}}
    {{random_state}}
    {{n_jobs}}
    {{verbose}}
    {{confidence}}
    {{n_rounds}}
    {{noise_shape}}
    {{moment}}
    {{n_subsets}}
    {{radius}}
    {{sigma_from}}
    {{n_splits}}

    Attributes
    ----------
    etas_ : ndarray of shape (n_etas,)
        The candidate etas, sorted ascending.
    scores_ : ndarray of shape (n_folds, n_etas)
        Score of the model noised at ``etas_[j]`` on the test part of fold ``i``.
    cv_results_ : dict of ndarray
        ``GridSearchCV``-style: ``param_eta``, ``params``, ``split{i}_test_score``,
        ``mean_test_score``, ``std_test_score`` (over folds, ``ddof=0`` as scikit-learn's),
        ``se_test_score`` (standard error of the mean, ``ddof=1``), ``rank_test_score``.
    eta_ : float
        The chosen eta.
    best_index_ : int
        Index of ``eta_`` in ``etas_``.
    best_score_ : float
        Mean CV score at ``eta_``.
    n_folds_ : int
        Number of cross-validation folds.
    best_estimator_ : MIPNoiseWrapper
        The wrapper fitted at ``eta_`` on all the data (only with ``refit=True``).
    estimator_ : estimator
        The releasable model, ``best_estimator_.estimator_``: noised parameters only.
    mip_bound_ : float or None
        The promise of the released model: ``eta_`` (only with ``refit=True``), that is,
        membership accuracy at most ``max(k/n, 1-k/n) + eta_`` (Definition 1;
        :func:`skmip.bounds.mip_promise`). ``None`` with ``train_size=1.0``, which promises
        nothing (see :class:`MIPNoiseWrapper`'s ``train_size``).
    target_eta_ : float
        The eta the released model's noise was calibrated to (``eta_``; only with
        ``refit=True``).
    method_ : str
        The calibration of the released model, ``"coupling"`` or ``"moments"``.
    classes_ : ndarray
        Class labels (classifiers only).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of str
        Feature names seen during ``fit``, when ``X`` has them.

    See Also
    --------
    MIPNoiseWrapper : the wrapper at one eta.
    mip_noise_path : one calibration, noise for many eta.

    Notes
    -----
    **What the guarantee covers.** The released model is ``best_estimator_``, a
    :class:`MIPNoiseWrapper` run at ``eta_`` on the data: its guarantee is that wrapper's,
    eta-MIP at ``eta_`` for the ``D_train`` it draws, and nothing more. The choice of
    ``eta_`` itself looks at the private data (the CV scores are computed on it), so which
    eta was chosen, and ``scores_``, are functions of D that no eta-MIP statement protects:
    this is the hyper-parameter selection caveat of every private learner (Papernot &
    Steinke, 2022, show that tuning on the private data can leak beyond the final model's
    own guarantee). Publish ``estimator_`` (whose eta is a public fact once published), not
    the CV results; when the choice itself must be protected, choose eta on public or
    held-out data that is not D.

    **Why not a cache.** The swap distances of a fold do not depend on eta, and a
    ``memory=`` parameter (as ``Pipeline(memory=...)``) could share them across a
    ``GridSearchCV``'s candidates. It is not offered: it would write per-row sensitivities
    of private records to disk, where the privacy hygiene of docs/design.md keeps every intermediate
    of the calibration inside one ``fit``, and its keys would have to ignore the random
    seeds (each candidate of a grid search draws its own). Computing the path inside one
    ``fit`` gives the same sharing with nothing kept: each fold's distances are discarded
    as soon as its etas are noised, and the fold models as soon as they are scored.

    References
    ----------
    Izzo et al., "Provable Membership Inference Privacy", Definition 1 (the promise of each
    released model). T. Hastie, R. Tibshirani, J. Friedman, *The Elements of Statistical
    Learning*, 2nd ed., section 7.10 (the one-standard-error rule). N. Papernot, T. Steinke
    (2022), *Hyperparameter Tuning with Renyi Differential Privacy*, ICLR.

    Examples
    --------
    >>> import warnings
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skmip import MIPNoiseWrapperCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> from skmip.calibration.routes import CouplingRoute
    >>> search = MIPNoiseWrapperCV(LogisticRegression(C=0.1), etas=[0.2, 0.3], cv=3,
    ...                            method=CouplingRoute(n_rounds=50)).fit(X, y)
    >>> search.scores_.shape, search.eta_ in (0.2, 0.3), search.mip_bound_ == search.eta_
    ((3, 2), True, True)
    """

    _renamed_parameters = {"n_splits": "n_subsets"}  # pickles of skmip 0.1

    def __init__(
        self,
        estimator,
        *,
        etas=(0.05, 0.1, 0.2, 0.3),
        cv=5,
        scoring=None,
        selection="one_se",
        refit: bool = True,
        method: str = "auto",
        train_size: float = 0.5,
        params="auto",
        random_state=None,
        n_jobs: int | None = None,
        verbose: int = 0,
        confidence=DEPRECATED,
        n_rounds=DEPRECATED,
        noise_shape=DEPRECATED,
        moment=DEPRECATED,
        n_subsets=DEPRECATED,
        radius=DEPRECATED,
        sigma_from=DEPRECATED,
        n_splits=DEPRECATED,
    ):
        self.estimator = estimator
        self.etas = etas
        self.cv = cv
        self.scoring = scoring
        self.selection = selection
        self.refit = refit
        self.method = method
        self.train_size = train_size
        self.params = params
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.confidence = confidence
        self.n_rounds = n_rounds
        self.noise_shape = noise_shape
        self.moment = moment
        self.n_subsets = n_subsets
        self.radius = radius
        self.sigma_from = sigma_from
        self.n_splits = n_splits

    # ------------------------------------------------------------------ validation
    def _validated_etas(self):
        try:
            etas = [check_eta(_OWNER, e, name="etas[]") for e in self.etas]
        except TypeError as err:  # a scalar, or an entry that is not a number
            raise TypeError(
                f"{_OWNER}: etas must be a sequence of MIP levels in (0, 0.5], e.g. "
                f"(0.05, 0.1, 0.2, 0.3); got {self.etas!r}. ({err})"
            ) from None
        if not etas:
            raise ValueError(
                f"{_OWNER}: etas must hold at least one MIP level in (0, 0.5]; got {self.etas!r}."
            )
        return np.unique(etas)

    def _validate_hyperparameters(self):
        """The sorted etas and the calibration route ``method`` resolves to."""
        etas = self._validated_etas()
        route = validate_shared(self, _OWNER, _ROUTES)
        if isinstance(self.selection, str):
            if self.selection not in _SELECTIONS:
                raise ValueError(
                    f"{_OWNER}: selection must be one of {list(_SELECTIONS)} or a float "
                    f"min_score; got {self.selection!r}. 'one_se' picks the smallest eta within "
                    "one standard error of the best mean score."
                )
        elif isinstance(self.selection, bool) or not isinstance(self.selection, numbers.Real):
            raise TypeError(
                f"{_OWNER}: selection must be 'one_se', 'best' or a float min_score; got "
                f"{self.selection!r} of type {type(self.selection).__name__}."
            )
        else:
            check_interval(_OWNER, "selection", self.selection, why="A min_score must be finite.")
        if not isinstance(self.refit, bool):
            raise TypeError(f"{_OWNER}: refit must be True or False; got {self.refit!r}.")
        return etas, route

    def _inner_params(self, route):
        params = {name: getattr(self, name) for name in _FORWARDED}
        params["method"] = route
        params["verbose"] = max(0, self.verbose - 1)  # a calibration's progress from verbose=2
        return params

    def _wrapper(self, eta, random_state, route):
        return MIPNoiseWrapper(self.estimator, eta=eta, random_state=random_state,
                               **self._inner_params(route))

    # ------------------------------------------------------------------ fitting
    def fit(self, X: ArrayLike, y: ArrayLike | None = None, *, groups: ArrayLike | None = None,
            **fit_params):
        """Score every eta by cross-validation, choose ``eta_``, and release a model at it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The dataset D.
        y : array-like of shape (n_samples,), default=None
            Targets, for supervised estimators.
        groups : array-like of shape (n_samples,), default=None
            Group labels for a group-aware ``cv`` splitter.
        **fit_params : dict
            Passed to every ``fit`` of the wrapped estimator; per-row arrays
            (``sample_weight``) are subset with the rows of each fold.

        Returns
        -------
        self : MIPNoiseWrapperCV
            The fitted search.

        Raises
        ------
        ValueError
            For an invalid parameter, data the wrapper rejects, or a ``min_score`` that no eta
            reaches.
        TypeError
            For a parameter of the wrong type, or ``scoring=None`` with an estimator that
            has no ``score``.
        """
        etas, route = self._validate_hyperparameters()
        check_privacy_seed(_OWNER, self.random_state)
        if self.train_size == 1.0:
            warn_no_promise_on_given_subset(
                _OWNER, "the chosen eta_ and each calibration's noise scale and shape",
            )
        template = self._wrapper(float(etas[0]), None, route)
        X, y, probe = validate_input(self, X, y, fit_params)
        check_classes(self, y)
        n = X.shape[0]
        route, reason = search_route(self, route, _OWNER, X, y, etas)
        # Said once here for the refit on all rows (each fold's wrapper is silenced).
        warn_if_vacuous(_OWNER, float(etas[-1]), n_train_of(self.train_size, n), n)
        check_cv_folds(_OWNER, self.cv, y, n, is_classifier(self.estimator))
        cv = check_cv(self.cv, y, classifier=is_classifier(self.estimator))
        scorer = check_scoring(template, scoring=self.scoring)
        folds = list(cv.split(X, y, groups))
        # Child seeds drawn up front; None stays None so every calibration (and the released
        # noise) gets fresh OS entropy.
        if self.random_state is None:
            fold_states, refit_state = [None] * len(folds), None
        else:
            # A fixed random_state already voids the guarantee (and warns): its folds keep
            # learner-style seeds, reproducible as before. None above gives every fold's
            # noise (and the refit's) full OS entropy.
            rng = resolve_rng(self.random_state)
            fold_states = [draw_seed(rng) for _ in folds]
            refit_state = draw_seed(rng)

        scores = np.empty((len(folds), etas.size))
        for i, ((train, test), state) in enumerate(zip(folds, fold_states)):
            X_test = _safe_indexing(X, test)
            y_test = None if y is None else _safe_indexing(y, test)
            with _seed_warned_once():
                # Fold models are scored, never released: one that predicts one class is
                # what its score ranks down (the refit's release is checked and warns).
                warnings.simplefilter("ignore", DegenerateReleaseWarning)
                path = mip_noise_path(
                    self.estimator, _safe_indexing(X, train),
                    None if y is None else _safe_indexing(y, train), etas=etas,
                    fit_params=subset_fit_params(fit_params, train, n), random_state=state,
                    **self._inner_params(route),
                )
            scores[i] = [scorer(w, X_test, y_test) for w in path]
            # The fold models are not what is released: drop them now.
            del path
            if self.verbose:
                print(f"[{_OWNER}] fold {i + 1}/{len(folds)}: scores "
                      + ", ".join(f"eta={e:g}: {s:.4f}" for e, s in zip(etas, scores[i])), flush=True)

        results = _cv_results(etas, scores)
        best = _select(etas, results, self.selection)
        fitted = {
            "etas_": etas, "scores_": scores, "cv_results_": results, "eta_": float(etas[best]),
            "best_index_": int(best), "best_score_": float(results["mean_test_score"][best]),
            "n_folds_": len(folds), "n_features_in_": probe.n_features_in_, "method_reason_": reason,
        }
        if hasattr(probe, "feature_names_in_"):
            fitted["feature_names_in_"] = probe.feature_names_in_
        if self.refit:
            if self.verbose:
                print(f"[{_OWNER}] refit at eta={fitted['eta_']:g} on all {n} rows", flush=True)
            with _seed_warned_once():
                released = self._wrapper(fitted["eta_"], refit_state, route).fit(X, y, **fit_params)
            fitted.update(
                best_estimator_=released, estimator_=released.estimator_,
                mip_bound_=released.mip_bound_, target_eta_=released.target_eta_,
                method_=released.method_,
            )
            if hasattr(released, "classes_"):
                fitted["classes_"] = released.classes_
        elif is_classifier(self.estimator):
            fitted["classes_"] = np.unique(y)
        # Only now, with everything computed, replace any previous fitted state.
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)
        self.__dict__.update(fitted)
        return self

    @available_if(_can_score)
    def score(self, X, y=None, **kwargs):
        """Score of the released model: ``scoring`` if given, else the model's own ``score``."""
        check_is_fitted(self)
        if self.scoring is None:
            return super().score(X, y, **kwargs)
        return check_scoring(self.best_estimator_, scoring=self.scoring)(self.best_estimator_, X, y)


_CV_DOCS = {
    "method": ('"auto", "coupling", "moments", "noisy_gradient" or CalibrationRoute', """
        How eta is turned into noise, as for :class:`MIPNoiseWrapper`: ``"auto"``, a route's
        name or a route object (:mod:`skmip.calibration.routes`), passed resolved to every
        wrapper fitted; the search noises a path of parameters
        (:func:`~skmip.defend.mip_noise_path`), so ``"synthetic"`` is not offered.
    """),
    "random_state": """
        Source of the folds' and the refit's randomness. ``None`` gives every calibration
        fresh OS entropy, the only setting under which the released noise is secret; a fixed
        value draws one seed per fold and one for the refit up front (results do not depend
        on ``n_jobs``) and emits a :class:`~skmip.exceptions.PrivacyWarning`. It does not
        shuffle the folds: pass a splitter to ``cv`` for that.
    """,
    "n_jobs": """
        Parallel jobs (joblib) for each calibration's subset fits and rounds; ``None`` means
        1 unless in a joblib context, where ``joblib.parallel_config(backend="dask")`` spreads
        them over a cluster. The folds run one after another, each over all jobs: a
        calibration has hundreds of independent rounds that balance over any number of
        workers, while 5 folds over 2 workers would leave one idle a third of the time.
    """,
    "verbose": "Print a line per fold when > 0; > 1 also prints each calibration's progress.",
}
MIPNoiseWrapperCV.__doc__ = fill_parameters(MIPNoiseWrapperCV.__doc__, _CV_DOCS)


class _seed_warned_once(warnings.catch_warnings):
    """Silence the inner wrappers' fixed-seed and train_size=1.0 PrivacyWarnings: the search
    warned once already."""

    def __enter__(self):
        out = super().__enter__()
        warnings.filterwarnings("ignore", message=".*fixes the privacy noise", category=PrivacyWarning)
        warnings.filterwarnings("ignore", message=".*" + re.escape(NO_PROMISE_MESSAGE), category=PrivacyWarning)
        warnings.filterwarnings("ignore", message=".*" + re.escape(VACUOUS_MESSAGE), category=PrivacyWarning)
        return out


def _cv_results(etas, scores):
    n_folds = scores.shape[0]
    mean = scores.mean(axis=0)
    se = scores.std(axis=0, ddof=1) / np.sqrt(n_folds) if n_folds > 1 else np.zeros_like(mean)
    # Rank 1 is the best mean; ties share the better rank and an undefined (NaN) mean ranks
    # last, as in GridSearchCV.
    ranked = np.where(np.isnan(mean), -np.inf, mean)
    rank = 1 + np.sum(ranked[None, :] > ranked[:, None], axis=1).astype(np.int32)
    return {
        "param_eta": etas.copy(),
        "params": [{"eta": float(e)} for e in etas],
        **{f"split{i}_test_score": scores[i].copy() for i in range(n_folds)},
        "mean_test_score": mean,
        "std_test_score": scores.std(axis=0),
        "se_test_score": se,
        "rank_test_score": rank,
    }


def _select(etas, results, selection):
    """Index of the chosen eta (``etas`` ascending: the first index that qualifies is the
    most private)."""
    mean = results["mean_test_score"]
    if np.all(np.isnan(mean)):
        raise ValueError(
            f"{_OWNER}: every mean CV score is NaN, so no eta can be chosen (e.g. R^2 on test "
            "folds of one row). Use fewer folds, more data, or another scoring."
        )
    best = int(np.nanargmax(mean))  # the first maximum: the smallest eta on a tie
    if selection == "best":
        return best
    if selection == "one_se":
        # One-standard-error rule (Hastie et al., ESL 7.10): every eta whose mean is within
        # one SE of the best mean is statistically as good; the smallest is the most private.
        threshold = mean[best] - results["se_test_score"][best]
    else:
        threshold = float(selection)
        if not np.nanmax(mean) >= threshold:
            raise ValueError(
                f"{_OWNER}: no eta reaches min_score={threshold!r} (selection); the best mean CV "
                f"score is {mean[best]:.4f} at eta={etas[best]:g}. Lower min_score, add larger "
                "etas (less privacy), or use selection='one_se'."
            )
    with np.errstate(invalid="ignore"):  # NaN means never qualify
        return int(np.flatnonzero(mean >= threshold)[0])
