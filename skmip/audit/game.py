"""The membership game: K models, K random member sets, every model a target in turn.

One function, :func:`play_membership_game`, that every attack and the scorer use. Given a
pool ``(X, y)`` and an estimator it draws ``n_models`` independent random member sets,
fits one clone per set (in parallel, through joblib), and records for every (model, row)
pair the model's output on that row -- a per-row signal and loss, never the model. Attacks
then score each (model, row) pair with that model as the target and the other models as
reference ("shadow") models: Carlini et al.'s leave-one-out evaluation, so K models cost K
fits, not K x targets.

To audit eta-MIP exactly (Izzo et al., Definition 1 with k = n/2), draw exact halves
(``sampling="exact"``, the default) and wrap the learner as
``MIPNoiseWrapper(learner, train_size=1.0)``: the game's random half then *is* the
wrapper's ``D_train`` and each model is one run of Algorithm 1 on ``D = (X, y)``.
"""

from __future__ import annotations

import numbers
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import _safe_indexing
from sklearn.utils.parallel import Parallel, delayed

from skmip.utils.rng import draw_seed, fix_inner_random_state, resolve_rng
from skmip.utils.rows import n_rows, stack_rows, subset_fit_params
from skmip.utils.validation import check_int, check_interval, check_n_jobs, check_option, check_sample_weight
from skmip.exceptions import PrivacyWarning
from skmip.audit.training_check import check_training, inspect_fitted_model

__all__ = ["MembershipGame", "play_membership_game", "play_fitted_game", "distilled_fit_data", "model_signal"]

_OWNER = "play_membership_game"
_SAMPLING = ("exact", "bernoulli")
_OUTPUTS = ("auto", "proba", "score_samples", "neg_squared_error")
# Probabilities are floored here before taking logs: a model that puts exactly 0 on the
# true class (or on all others) still gets a finite loss and logit.
_TINY = np.finfo(np.float64).tiny


@dataclass(frozen=True, eq=False)
class MembershipGame:
    """Per-row outputs of the K models of a membership game; no model is kept.

    Attributes
    ----------
    membership : ndarray of bool, shape (n_models, n_samples)
        ``membership[k, i]`` is True when row i was in model k's training set.
    signal : ndarray of float, shape (n_models, n_samples)
        The statistic LiRA fits Gaussians to: for classifiers the logit-scaled confidence of
        the true class, ``log p_y - log(sum_{c != y} p_c)`` (Carlini et al., Section IV-C);
        for density estimators the log-likelihood (``score_samples``); for regressors minus
        the squared error; for a callable ``output`` its value. Larger means "fits the row
        better".
    loss : ndarray of float, shape (n_models, n_samples)
        Per-row loss: cross-entropy ``-log p_y`` (classifiers), negative log-likelihood
        (density estimators), squared error (regressors), ``-signal`` otherwise.
    output : str
        Which output was recorded: ``"proba"``, ``"score_samples"``,
        ``"neg_squared_error"`` or ``"callable"``.
    inspected : list or None
        ``inspect(fitted_model)`` for each model when an ``inspect`` callable was given
        (e.g. the privacy bound the fitted model states).
    checks : list of skmip.audit.training_check.ModelCheck or None
        Whether each model trained (finite parameters and outputs, an output that varies
        over the rows, convergence); see :mod:`skmip.audit.training_check`.
    issues : list of str
        The training problems the game warned about (empty when none); a report repeats them.
    population : ndarray of bool, shape (n_samples,), or None
        The rows attacks may use as population data (RMIA's ``z``); None: every row a target
        did not train on. :func:`play_fitted_game` names the reference rows.
    """

    membership: np.ndarray
    signal: np.ndarray
    loss: np.ndarray
    output: str
    inspected: list | None = field(default=None, repr=False)
    checks: list | None = field(default=None, repr=False)
    issues: list = field(default_factory=list, repr=False)
    population: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_models(self) -> int:
        """Number of models K."""
        return self.membership.shape[0]

    @property
    def n_samples(self) -> int:
        """Number of rows in the pool."""
        return self.membership.shape[1]

    @property
    def log_likelihood(self) -> np.ndarray | None:
        """``log P(row | model)``: log-probability of the true class, or the log-density.

        ``None`` when the recorded output is not a likelihood (regressors, callables).
        """
        return -self.loss if self.output in ("proba", "score_samples") else None


def _resolve_output(estimator, output):
    if callable(output):
        return "callable"
    check_option(_OWNER, "output", output, _OUTPUTS)
    if output != "auto":
        if output == "proba" and not hasattr(estimator, "predict_proba"):
            raise TypeError(_no_proba_message(estimator))
        if output == "score_samples" and not hasattr(estimator, "score_samples"):
            raise TypeError(f"{_OWNER}: output='score_samples' but {type(estimator).__name__} has no score_samples.")
        return output
    if is_classifier(estimator):
        if not hasattr(estimator, "predict_proba"):
            raise TypeError(_no_proba_message(estimator))
        return "proba"
    if is_regressor(estimator):
        return "neg_squared_error"
    if hasattr(estimator, "score_samples"):
        return "score_samples"
    raise TypeError(
        f"{_OWNER}: cannot tell what to record for {type(estimator).__name__}: it is neither a "
        "classifier with predict_proba, a regressor, nor a density estimator with "
        "score_samples. Pass output=callable(fitted_estimator, X, y) -> per-row signal "
        "(larger = fits the row better)."
    )


def _no_proba_message(estimator):
    return (
        f"{_OWNER}: {type(estimator).__name__} has no predict_proba, and the attacks score the "
        "model's confidence in the true class. Use a probabilistic classifier (e.g. "
        "SVC(probability=True), or wrap it in CalibratedClassifierCV), or pass "
        "output=callable(fitted_estimator, X, y) returning a per-row signal."
    )


def _draw_members(rng, n, n_models, member_rate, sampling):
    members = np.zeros((n_models, n), dtype=bool)
    if sampling == "exact":
        k = int(round(member_rate * n))
        if not 1 <= k <= n - 1:
            raise ValueError(
                f"{_OWNER}: member_rate={member_rate} of n_samples={n} gives {k} members; "
                "each model needs at least one member and one non-member row."
            )
        for j in range(n_models):
            members[j, rng.choice(n, size=k, replace=False)] = True
    else:
        members[:] = rng.random((n_models, n)) < member_rate
    return members


def _check_classes(y, members, owner=_OWNER, what="model"):
    classes, y_idx = np.unique(y, return_inverse=True)
    for j, row in enumerate(members):
        present = np.bincount(y_idx[row], minlength=classes.size) > 0
        if not present.all():
            missing = classes[~present].tolist()
            counts = np.bincount(y_idx, minlength=classes.size)
            raise ValueError(
                f"{owner}: the member set of {what} {j} ({int(row.sum())} rows) has no row of "
                f"class(es) {missing}, so its predict_proba columns would not line up with the "
                f"other models'. The smallest class has {int(counts.min())} row(s) in the pool. "
                "Use more rows per class, a larger member_rate, or drop rare classes."
            )
    return classes


def _record(model, X, y, output, classes):
    """Per-row (signal, loss, raw output) of a fitted model on the whole pool."""
    if output == "proba":
        proba = np.asarray(model.predict_proba(X), dtype=np.float64)
        model_classes = getattr(model, "classes_", classes)
        if len(model_classes) != len(classes) or np.any(np.asarray(model_classes) != classes):
            raise ValueError(
                f"{_OWNER}: a fitted model has classes {list(model_classes)} but the pool has "
                f"{list(classes)}; every model must be fitted on every class."
            )
        col = np.searchsorted(classes, y)
        rows = np.arange(proba.shape[0])
        p_true = proba[rows, col]
        # Sum the other classes directly: 1 - p_true loses all digits when p_true ~ 1.
        others = proba.copy()
        others[rows, col] = 0.0
        p_other = others.sum(axis=1)
        with np.errstate(invalid="ignore"):
            log_p = np.log(np.maximum(p_true, _TINY))
            log_other = np.log(np.maximum(p_other, _TINY))
        return log_p - log_other, -log_p, proba
    if output == "score_samples":
        ll = np.asarray(model.score_samples(X), dtype=np.float64).ravel()
        return ll, -ll, ll
    if output == "neg_squared_error":
        pred = np.asarray(model.predict(X), dtype=np.float64)
        err = (pred.reshape(pred.shape[0], -1) - np.asarray(y, dtype=np.float64).reshape(pred.shape[0], -1))
        with np.errstate(over="ignore", invalid="ignore"):
            sq = np.sum(err**2, axis=1)
        return -sq, sq, pred
    raise AssertionError(output)  # pragma: no cover


def _play_one(estimator, X, y, rows, seed, output, fit_params, inspect, classes, fit_data=None):
    """Fit a clone on ``rows`` (or on ``fit_data = (X_fit, y_fit, fit_params)``) and record it on all of X."""
    model = clone(estimator)
    # The same rule as fix_inner_random_state: every non-integer random_state gets the seed.
    seeded = any(
        (key == "random_state" or key.endswith("__random_state"))
        and not isinstance(value, numbers.Integral)
        for key, value in model.get_params(deep=True).items()
    )
    fix_inner_random_state(model, seed)
    if fit_data is None:
        X_in = _safe_indexing(X, rows)
        y_in = None if y is None else _safe_indexing(y, rows)
        fit_params = subset_fit_params(fit_params, rows, n_rows(X))  # per-row ones: the members'
    else:
        X_in, y_in, fit_params = fit_data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        if y_in is None:
            model.fit(X_in, **fit_params)
        else:
            model.fit(X_in, y_in, **fit_params)
    # Counted for the training check, then passed on as the fit raised them -- except the
    # PrivacyWarning of a seed the game itself fixed to make the audit reproducible: the
    # attacks never use it, so the warning would only be noise here.
    n_unconverged = 0
    for w in caught:
        if issubclass(w.category, ConvergenceWarning):
            n_unconverged += 1
        if seeded and issubclass(w.category, PrivacyWarning):
            continue
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if callable(output):
        signal = np.asarray(output(model, X, y), dtype=np.float64).ravel()
        if signal.shape[0] != n_rows(X):
            raise ValueError(
                f"{_OWNER}: output callable returned {signal.shape[0]} values for {n_rows(X)} rows."
            )
        loss, raw = -signal, signal
    else:
        signal, loss, raw = _record(model, X, y, output, classes)
    check = inspect_fitted_model(model, raw, n_unconverged)
    inspected = inspect(model) if inspect is not None else None
    return signal, loss, inspected, check


def play_membership_game(
    estimator,
    X: ArrayLike,
    y: ArrayLike | None = None,
    *,
    n_models: int = 16,
    member_rate: float = 0.5,
    sampling: str = "exact",
    output: str | Callable = "auto",
    random_state=None,
    n_jobs: int | None = None,
    verbose: int = 0,
    fit_params: dict | None = None,
    inspect: Callable[[Any], Any] | None = None,
) -> MembershipGame:
    """Fit ``n_models`` clones on independent random member sets and record per-row outputs.

    Parameters
    ----------
    estimator : estimator instance
        The training algorithm under audit (unfitted; it is cloned for every model).
    X : array-like of shape (n_samples, n_features)
        The pool: every row is a member of some models and a non-member of others.
    y : array-like of shape (n_samples,), default=None
        Targets (required for classifiers and regressors).
    n_models : int, default=16
        Number of models K (>= 2). Each is the target once, with the other K - 1 as references.
    member_rate : float, default=0.5
        Probability that a row is in a model's training set, in (0, 1).
    sampling : {"exact", "bernoulli"}, default="exact"
        ``"exact"``: each member set is a uniformly random subset of exactly
        ``round(member_rate * n_samples)`` rows -- Izzo et al.'s Definition 1 (k = n/2 at the
        default rate). ``"bernoulli"``: each row joins independently with probability
        ``member_rate`` (Poisson sampling, as in Carlini et al. and Thudi et al.'s Section 3.2).
        In both cases the member sets of different models are independent, so the reference
        models carry no information about the target's member set beyond the pool itself.
    output : {"auto", "proba", "score_samples", "neg_squared_error"} or callable, default="auto"
        What to record per row. ``"auto"``: ``"proba"`` for classifiers (which must have
        ``predict_proba``), ``"neg_squared_error"`` for regressors, ``"score_samples"`` for
        density estimators. A callable ``output(fitted, X, y) -> (n_samples,)`` records a
        custom signal (larger = fits the row better).
    random_state : None, int, numpy Generator or RandomState, default=None
        Resolved once; the member sets and one seed per model are drawn from it up front, so
        the result does not depend on ``n_jobs``. Every ``random_state`` parameter of the
        estimator that is not an integer (nested ones included) is set to the model's seed.
    n_jobs : int, default=None
        Models fitted in parallel through joblib (``None``: 1 unless in a joblib context,
        e.g. ``joblib.parallel_backend("dask")`` for a dask cluster).
    verbose : int, default=0
        Progress messages when > 0: one line per fitted model with the time spent and an
        estimate of the time left (elapsed time per model times the models left);
        joblib's own progress at > 1.
    fit_params : dict, default=None
        Passed to every ``fit``.
    inspect : callable, default=None
        ``inspect(fitted_model)`` is called on each fitted model in its worker and the
        (small) results are returned in :attr:`MembershipGame.inspected`.

    Returns
    -------
    MembershipGame
        Membership matrix and per-row signal and loss of every model.

    Raises
    ------
    ValueError
        For invalid arguments, or a member set that lacks a class of ``y``.
    skmip.exceptions.TrainingFailedError
        When the models did not train (non-finite parameters or outputs; most models
        predicting one output for every row without converging): see
        :mod:`skmip.audit.training_check`. An :class:`~skmip.exceptions.AuditWarning` when they
        trained badly (most did not converge; some or most predict one output everywhere);
        its text is kept in ``issues``.
    TypeError
        For a classifier without ``predict_proba`` (unless ``output`` is a callable), or an
        estimator whose output cannot be inferred.

    Notes
    -----
    Memory is O(n_models x n_samples) floats: the fitted models are discarded in their
    workers. Fixing a privacy mechanism's ``random_state`` from the game's seed makes the
    audit reproducible; the attacks never use the seed (a real attacker would not know it),
    and the :class:`~skmip.exceptions.PrivacyWarning` this would raise is silenced.

    References
    ----------
    Carlini et al., "Membership Inference Attacks From First Principles", IEEE S&P 2022
    (Section VI-A: train K models on random halves, each target in turn).
    Izzo et al., Definition 1 and Algorithm 1.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> game = play_membership_game(LogisticRegression(), X, y, n_models=4, random_state=0)
    >>> game.signal.shape, game.membership.sum(axis=1).tolist()
    ((4, 150), [75, 75, 75, 75])
    """
    n_models = check_int(_OWNER, "n_models", n_models, 2, None,
                         why="each model is attacked with the others as references.")
    member_rate = check_interval(_OWNER, "member_rate", member_rate, 0, 1, closed="neither",
                                 why="it is the probability that a row is a member.")
    check_option(_OWNER, "sampling", sampling, _SAMPLING)
    if not isinstance(verbose, numbers.Integral):
        raise TypeError(f"{_OWNER}: verbose must be an integer; got {verbose!r}.")
    if sp.issparse(X) and X.format != "csr":
        X = X.tocsr()  # row indexing for every sparse format (dia, coo, ... are not subscriptable)
    n = n_rows(X)
    if y is not None and n_rows(y) != n:
        raise ValueError(f"{_OWNER}: X has {n} rows but y has {n_rows(y)}.")
    check_sample_weight(_OWNER, fit_params or {}, n)
    check_n_jobs(_OWNER, n_jobs)
    kind = _resolve_output(estimator, output)
    if kind in ("proba", "neg_squared_error") and y is None:
        raise ValueError(
            f"{_OWNER}: {type(estimator).__name__} requires y to be passed, but the target y is None."
        )

    rng = resolve_rng(random_state)
    members = _draw_members(rng, n, n_models, member_rate, sampling)
    seeds = [draw_seed(rng) for _ in range(n_models)]
    classes = None
    y_arr = None if y is None else np.asarray(y)
    if kind == "proba":
        classes = _check_classes(y_arr, members)
    say = _progress_printer(verbose)
    say(f"fitting {n_models} models on member sets of a {n}-row pool")
    start = time.perf_counter()
    # Results come back in order as the models finish (a generator), so progress is live.
    jobs = Parallel(n_jobs=n_jobs, verbose=max(0, verbose - 1), return_as="generator")(
        delayed(_play_one)(
            estimator, X, y, np.flatnonzero(members[j]), seeds[j],
            output if kind == "callable" else kind, fit_params or {}, inspect, classes,
        )
        for j in range(n_models)
    )
    results = []
    for result in jobs:
        results.append(result)
        say(progress_line("model", len(results), n_models, time.perf_counter() - start))
    signal = np.vstack([r[0] for r in results])
    loss = np.vstack([r[1] for r in results])
    inspected = [r[2] for r in results] if inspect is not None else None
    checks = [r[3] for r in results]
    issues = check_training(checks, owner=_OWNER, estimator_name=type(estimator).__name__, stacklevel=2)
    return MembershipGame(membership=members, signal=signal, loss=loss, output=kind, inspected=inspected,
                          checks=checks, issues=issues)


def progress_line(what: str, done: int, total: int, elapsed: float) -> str:
    """``"model 3/16 done, 12.0 s elapsed, about 52 s left"``: the progress of ``total`` like steps.

    The time left is the mean time per finished step times the steps left (with ``n_jobs``
    workers the steps finish in waves, and the mean spreads the wave's time over it).

    Examples
    --------
    >>> progress_line("model", 4, 16, 10.0)
    'model 4/16 done, 10.0 s elapsed, about 30 s left'
    """
    left = elapsed / done * (total - done) if done else float("nan")
    tail = "" if done >= total else f", about {left:.0f} s left"
    return f"{what} {done}/{total} done, {elapsed:.1f} s elapsed{tail}"


def _progress_printer(verbose):
    def say(message):
        if verbose:
            print(f"[{_OWNER}] {message}", flush=True)

    return say


def play_fitted_game(model, X, y, member, X_reference, y_reference, *, n_reference_models=4,
                     random_state=None, inspect=None, references_see_pool=False,
                     reference_labels="true") -> MembershipGame:
    """The game of a model that is already trained: the target, and clones on reference halves.

    Parameters
    ----------
    model : fitted estimator
        The target. Only its outputs are read (and ``inspect(model)``); it is never refit.
    X, y : array-like
        The audit pool; ``member[i]`` says whether row i trained the target.
    member : ndarray of bool, shape (n_samples,)
    X_reference, y_reference : array-like
        Population data from the pool's distribution that did not train the target.
    n_reference_models : int, default=4
        Clones of ``model`` (unfitted, same parameters), each fitted on an independent
        uniformly random half of the reference data.
    random_state : None, int or Generator, default=None
        Seeds the halves and the clones' seeds.
    inspect : callable, default=None
        Applied to the target only; ``inspected`` is ``[inspect(model), None, ...]``.
    references_see_pool : bool, default=False
        Train each reference on a uniformly random half of the pool instead (drawn
        independently of ``member``), so that every pool row is IN for about half of the
        references -- the game's structure, where the online attacks apply too -- and the
        reference rows serve only as RMIA's population.
    reference_labels : {"true", "target"}, default="true"
        ``"target"`` (classifiers with ``predict_proba`` whose ``fit`` takes ``sample_weight``,
        references on reference halves): each reference trains on its half labelled by the
        *target's* predicted probabilities -- every row once per class, weighted by the
        target's probability of that class (:func:`distilled_fit_data`) -- instead of
        ``y_reference``. The references then copy how the target generalises around each pool
        row without ever seeing a pool row; see :func:`skmip.audit.audit_fitted`.

    Returns
    -------
    MembershipGame
        Model 0 is the target, models ``1..R`` the references; the columns are the pool's rows
        followed by the reference rows. The target's membership on reference rows is False,
        the references' on pool rows is False (so every reference is OUT for every pool row:
        the offline attacks apply, and RMIA tunes its offline coefficient on a reference).
        ``population`` marks the reference rows: RMIA compares every pool row with them only,
        so members and non-members of the pool are scored alike.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> rows = np.random.default_rng(0).permutation(150)
    >>> X, y = X[rows], y[rows]
    >>> member = np.arange(100) % 2 == 0
    >>> target = LogisticRegression().fit(X[:100][member], y[:100][member])
    >>> game = play_fitted_game(target, X[:100], y[:100], member, X[100:], y[100:],
    ...                         n_reference_models=2, random_state=0)
    >>> game.membership.shape
    (3, 150)
    """
    n, n_ref = n_rows(X), n_rows(X_reference)
    kind = _resolve_output(model, "auto")
    X_all = stack_rows(X, X_reference)
    y_all = None if y is None else stack_rows(y, y_reference)
    rng = resolve_rng(random_state)
    halves = _draw_members(rng, n if references_see_pool else n_ref, n_reference_models, 0.5, "exact")
    seeds = [draw_seed(rng) for _ in range(n_reference_models)]
    membership = np.zeros((1 + n_reference_models, n + n_ref), dtype=bool)
    membership[0, :n] = member
    if references_see_pool:
        membership[1:, :n] = halves
    else:
        membership[1:, n:] = halves
    classes = None
    check_option("play_fitted_game", "reference_labels", reference_labels, ("true", "target"))
    distill = reference_labels == "target"
    if distill and (kind != "proba" or references_see_pool):
        raise ValueError("play_fitted_game: reference_labels='target' needs a classifier with predict_proba and "
                         "references on reference halves (references_see_pool=False).")
    if kind == "proba":
        # A distilled reference is given every class as a label; a half with true labels may lack one.
        classes = _check_classes(np.asarray(y_all), membership[:0] if distill else membership[1:],
                                 "audit_fitted", "reference model")
    signal, loss, raw = _record(model, X_all, y_all, kind, classes)
    results = [(signal, loss, inspect(model) if inspect is not None else None,
                inspect_fitted_model(model, raw, 0))]
    results += [
        _play_one(model, X_all, y_all, rows, seeds[j], kind, {}, None, classes,
                  distilled_fit_data(X_all, raw, rows, classes) if distill else None)
        for j, rows in enumerate(np.flatnonzero(row) for row in membership[1:])
    ]
    checks = [r[3] for r in results]
    issues = check_training(checks, owner="audit_fitted", estimator_name=type(model).__name__, stacklevel=3)
    return MembershipGame(
        membership=membership, signal=np.vstack([r[0] for r in results]),
        loss=np.vstack([r[1] for r in results]), output=kind,
        inspected=[r[2] for r in results] if inspect is not None else None, checks=checks, issues=issues,
        population=np.arange(n + n_ref) >= n,
    )


def distilled_fit_data(X, proba, rows, classes):
    """A training set labelled by a model's probabilities: ``(X_fit, y_fit, {"sample_weight": w})``.

    Row ``i`` of ``rows`` appears once per class ``c``, labelled ``c`` and weighted by
    ``proba[i, c]``: a learner that minimises a weighted loss then fits the soft labels
    ``proba[i]`` (for the log-loss and the Gini or entropy criteria, exactly the expected loss
    of labels drawn from them). Every class is a label, so the fitted model knows them all.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0]])
    >>> X_fit, y_fit, params = distilled_fit_data(X, np.array([[0.9, 0.1], [0.2, 0.8]]), np.array([1]), [0, 1])
    >>> X_fit.ravel().tolist(), y_fit.tolist(), params["sample_weight"].tolist()
    ([1.0, 1.0], [0, 1], [0.2, 0.8])
    """
    k = len(classes)
    return (_safe_indexing(X, np.repeat(rows, k)), np.tile(np.asarray(classes), len(rows)),
            {"sample_weight": np.asarray(proba, dtype=np.float64)[rows].ravel()})


def model_signal(model, X, y=None) -> np.ndarray:
    """The per-row statistic the game records (:attr:`MembershipGame.signal`) of one fitted model.

    For classifiers the logit-scaled confidence of the true class, for density estimators
    the log-likelihood, for regressors minus the squared error: larger means "fits the row
    better".

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_iris(return_X_y=True)
    >>> model_signal(LogisticRegression(max_iter=1000).fit(X, y), X[:2], y[:2]).shape
    (2,)
    """
    kind = _resolve_output(model, "auto")
    classes = getattr(model, "classes_", None) if kind == "proba" else None
    if classes is not None and not np.isin(np.asarray(y), classes).all():
        raise ValueError(f"model_signal: y has labels the model does not know ({list(classes)}).")
    return _record(model, X, y, kind, classes)[0]
