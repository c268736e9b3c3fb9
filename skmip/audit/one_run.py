"""Privacy auditing in one training run: canaries in, an epsilon lower bound out.

:func:`one_run_epsilon` turns the scores of canaries that were (``in_scores``) and were not
(``out_scores``) in the training data into a lower bound on epsilon with a proven confidence
level (Steinke, Nasr & Jagielski 2023; the f-DP analysis of Mahloujifar, Melis & Chaudhuri
2025; formulas in :mod:`skmip.bounds.one_run`). :func:`one_run_audit` runs the whole audit on
any estimator: it flips a fair coin per canary, fits the estimator once on its data plus the
canaries that came up heads, scores every canary with the fitted model, and reports the bound
next to the epsilon the model states.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from skmip.bounds.one_run import one_run_epsilon_bound
from skmip.bounds.amplification import poisson_amplification
from skmip.promise import stated_promise
from skmip.utils.rng import resolve_rng
from skmip.utils.rows import n_rows, stack_rows
from skmip.utils.validation import check_interval, check_option
from skmip.audit.game import model_signal

__all__ = ["one_run_epsilon", "one_run_audit", "OneRunAudit", "guess_counts", "stated_epsilon"]

_METHODS = ("fdp", "steinke")
_TRADEOFFS = ("gaussian", "dp")
#: Fewest guesses of an automatic guess count.
MIN_GUESSES = 10


def _check_scores(owner, name, scores):
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size == 0:
        raise ValueError(f"{owner}: {name} is empty; the audit needs canaries that were in and out of training.")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{owner}: {name} contains NaN or inf; score every canary with a finite number.")
    return s


def guess_counts(m, n_guesses="auto"):
    """The guess counts ``k`` tried, fixed before the scores are seen.

    ``"auto"``: ``m // 2, m // 4, ...`` down to :data:`MIN_GUESSES` (or ``[m // 2]`` when that is
    already fewer). An int or a list: those.

    Examples
    --------
    >>> guess_counts(1000)
    [500, 250, 125, 62, 31, 15]
    """
    if isinstance(n_guesses, str):
        check_option("one_run_epsilon", "n_guesses", n_guesses, ("auto",))
        ks = [m >> j for j in range(1, 64) if (m >> j) >= MIN_GUESSES]
        return ks or [max(1, m // 2)]
    ks = [int(k) for k in np.atleast_1d(n_guesses)]
    if not ks or any(not 1 <= k <= m for k in ks):
        raise ValueError(f"one_run_epsilon: n_guesses must be between 1 and the {m} canaries; got {n_guesses!r}.")
    return sorted(set(ks), reverse=True)


def _right_guesses(in_s, out_s, k):
    """Right guesses when the ``k`` highest scores are guessed "in", ties broken against the auditor.

    Any tie-break that does not look at membership gets at least this many right, so the bound
    computed from it is at most the bound of such a guesser (lower bounds stay valid).
    """
    t = np.sort(np.concatenate([in_s, out_s]))[::-1][k - 1]
    in_above, out_above = int(np.sum(in_s > t)), int(np.sum(out_s > t))
    slots = k - in_above - out_above
    return in_above + max(0, slots - int(np.sum(out_s == t)))


def one_run_epsilon(in_scores, out_scores, *, delta, confidence=0.95, method="fdp", tradeoff="dp",
                    n_guesses="auto") -> float:
    """Lower bound on epsilon from one training run's canary scores.

    Parameters
    ----------
    in_scores : array-like of shape (n_in,)
        Scores of the canaries that were in the training data (larger = "looks like a member").
    out_scores : array-like of shape (n_out,)
        Scores of the canaries that were not.
    delta : float
        The delta of the (epsilon, delta) claims tested, in [0, 1) (in (0, 1) for the Gaussian
        trade-off).
    confidence : float, default=0.95
        The bound holds with at least this probability (over the canaries' coin flips and the
        mechanism's randomness).
    method : {"fdp", "steinke"}, default="fdp"
        ``"steinke"``: Steinke, Nasr & Jagielski's bound for (epsilon, delta)-DP.
        ``"fdp"``: Mahloujifar, Melis & Chaudhuri's f-DP analysis with the trade-off of
        ``tradeoff``.
    tradeoff : {"dp", "gaussian"}, default="dp"
        For ``method="fdp"``: ``"dp"`` tests (epsilon, delta)-DP itself and assumes nothing
        more. ``"gaussian"`` tests mu-GDP with the mu whose Gaussian mechanism is exactly
        (epsilon, delta)-DP (the paper's hypothesised curve): much tighter, but a lower bound
        on epsilon only for a mechanism whose trade-off curve is Gaussian (the Gaussian
        mechanism; DP-SGD approximately). On randomized response, exactly eps-DP, it exceeds
        the true eps in most runs (docs/auditing.md, "Auditing in one run").
    n_guesses : "auto", int or list of int, default="auto"
        How many canaries the auditor guesses "in" (the highest scores); the others it
        abstains on. Several counts are each tested at level ``(1 - confidence) / count``
        (Bonferroni) and the largest bound is returned. See :func:`guess_counts`.

    Returns
    -------
    float
        epsilon_lower, rounded down to 0.01: with probability at least ``confidence`` the
        mechanism is not (epsilon, delta)-DP (resp. f-DP) for any epsilon below it.

    Raises
    ------
    ValueError
        For empty or non-finite scores, or an invalid option.

    Notes
    -----
    **Assumptions of the theorems** (docs/auditing.md, "Auditing in one run"): (1) each
    canary was included independently with probability 1/2, drawn by the auditor, and the
    score of a canary was computed from the trained output and the canaries only, never from
    which were included; (2) the privacy claim is about adding or removing one canary with the
    rest of the training data fixed; (3) ``in_scores`` and ``out_scores`` are the scores of
    all ``m`` canaries, none dropped after seeing the scores. The auditor guesses "in" for the
    ``k`` highest scores (ties broken against it) and abstains on the rest;
    :func:`skmip.bounds.one_run.one_run_epsilon_bound` says why reading the bound off a fixed
    grid of epsilons keeps the level.

    Examples
    --------
    Scores of a mechanism that leaks a lot: every in-canary scores above every out-canary.

    >>> one_run_epsilon(np.arange(500) + 500.0, np.arange(500), delta=0.0, method="steinke")
    4.64
    >>> one_run_epsilon(np.zeros(500), np.zeros(500), delta=1e-5)   # ties: no information
    0.0
    """
    owner = "one_run_epsilon"
    in_s, out_s = _check_scores(owner, "in_scores", in_scores), _check_scores(owner, "out_scores", out_scores)
    check_interval(owner, "confidence", confidence, 0, 1, closed="neither")
    check_option(owner, "method", method, _METHODS)
    check_option(owner, "tradeoff", tradeoff, _TRADEOFFS)
    gaussian = method == "fdp" and tradeoff == "gaussian"
    check_interval(owner, "delta", delta, 0, 1, closed="neither" if gaussian else "left",
                   why="the Gaussian trade-off at delta = 0 is no privacy at all; use tradeoff='dp'." if gaussian else "")
    m = in_s.size + out_s.size
    ks = guess_counts(m, n_guesses)
    alpha = (1 - float(confidence)) / len(ks)
    return max(
        one_run_epsilon_bound(m, k, _right_guesses(in_s, out_s, k), delta=float(delta), alpha=alpha,
                              method=method, tradeoff=tradeoff)
        for k in ks
    )


class OneRunAudit:
    """The result of :func:`one_run_audit`.

    Attributes
    ----------
    epsilon_lower_ : float
        The one-run lower bound (:func:`one_run_epsilon`) at ``confidence``.
    model_epsilon_, model_delta_ : float or None
        The (epsilon, delta) the fitted model states, for adding or removing one record of
        the data it was given (a subsampling learner's own budget amplified by its rate);
        None when it states none.
    in_scores_, out_scores_ : ndarray
        The canaries' scores (the model's :func:`~skmip.audit.game.model_signal`).
    included_ : ndarray of bool
        Which canaries the coin flips put into the training data.
    n_trainings_ : int
        1: the audit fits the estimator once.
    method, tradeoff, delta, confidence : the options the bound was computed with.
    """

    def __repr__(self):
        return (f"OneRunAudit(epsilon_lower_={self.epsilon_lower_}, model_epsilon_={self.model_epsilon_}, "
                f"n_canaries={self.included_.size})")


def stated_epsilon(model):
    """``(epsilon, delta)`` a fitted model states for adding or removing one of its records, or ``(None, None)``.

    Read through the public interface: a positive-accuracy promise (a learner on a Poisson
    subsample: its budget amplified, :func:`skmip.bounds.poisson_amplification`), else the
    ``epsilon_`` / ``delta_`` attributes (DP-SGD), else the ``epsilon`` parameter of a pure-DP
    estimator (delta 0).
    """
    promise = stated_promise(model)
    details = getattr(promise, "details", None) or {}
    if details.get("epsilon") is not None and details.get("sampling_rate") is not None:
        return poisson_amplification(details["epsilon"], details.get("delta") or 0.0, details["sampling_rate"])
    if getattr(model, "epsilon_", None) is not None:
        return float(model.epsilon_), float(getattr(model, "delta_", 0.0) or 0.0)
    eps = model.get_params(deep=False).get("epsilon") if hasattr(model, "get_params") else None
    return (float(eps), 0.0) if isinstance(eps, (int, float)) else (None, None)


def one_run_audit(estimator, X, y, X_canary, y_canary, *, delta=None, confidence=0.95, method="fdp",
                  tradeoff="dp", n_guesses="auto", random_state=None, fit_params=None) -> OneRunAudit:
    """Audit ``estimator`` in one training run: canaries in with probability 1/2, one fit, one bound.

    Parameters
    ----------
    estimator : estimator instance
        Any estimator (cloned; fitted once). Classifiers need ``predict_proba``.
    X, y : array-like
        The training data every run would use.
    X_canary, y_canary : array-like
        The ``m`` canaries. The audit is strongest with canaries the model would not fit
        unless it saw them (mislabelled or out-of-distribution rows).
    delta : float, default=None
        Of the claims tested; None: the delta the model states (0 for pure DP).
    confidence, method, tradeoff, n_guesses :
        As in :func:`one_run_epsilon`.
    random_state : None, int or Generator, default=None
        Draws the canaries' coin flips (and nothing else: the estimator's own randomness is
        its own).
    fit_params : dict, default=None
        Passed to ``fit``.

    Returns
    -------
    OneRunAudit

    Notes
    -----
    The coin flips are the auditor's, drawn independently of everything else, which is what
    the theorems need (:func:`one_run_epsilon`). The comparison with ``model_epsilon_`` is
    meaningful for a claim about adding or removing one record (DP-SGD's ``epsilon_``; a pure
    DP learner's epsilon, which holds for either relation; a subsampled learner's amplified
    budget). A bound above the model's epsilon refutes the model's claim at ``confidence``.

    Examples
    --------
    Canaries the data cannot explain -- each its own feature, with a random label -- in a
    logistic regression that is not private:

    >>> from sklearn.linear_model import LogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = np.hstack([rng.normal(size=(200, 5)), np.zeros((200, 300))])
    >>> y = (X[:, 0] > 0).astype(int)
    >>> X_canary, y_canary = np.hstack([np.zeros((300, 5)), np.eye(300)]), rng.integers(0, 2, 300)
    >>> audit = one_run_audit(LogisticRegression(C=100, max_iter=2000), X, y, X_canary, y_canary,
    ...                       delta=1e-5, random_state=0)
    >>> audit.n_trainings_, audit.epsilon_lower_, audit.model_epsilon_
    (1, 2.8, None)
    """
    owner = "one_run_audit"
    m = n_rows(X_canary)
    if y_canary is not None and n_rows(y_canary) != m:
        raise ValueError(f"{owner}: X_canary has {m} rows but y_canary has {n_rows(y_canary)}.")
    included = resolve_rng(random_state).random(m) < 0.5
    rows = np.flatnonzero(included)
    take = (lambda a: a[rows]) if not hasattr(X_canary, "iloc") else (lambda a: a.iloc[rows])
    X_fit = stack_rows(X, take(X_canary))
    y_fit = None if y is None else stack_rows(y, take(y_canary))
    model = clone(estimator)
    model.fit(X_fit, **(fit_params or {})) if y_fit is None else model.fit(X_fit, y_fit, **(fit_params or {}))
    scores = model_signal(model, X_canary, y_canary)
    eps_model, delta_model = stated_epsilon(model)
    if delta is None:
        delta = delta_model if delta_model is not None else 0.0
    audit = OneRunAudit()
    audit.method, audit.tradeoff, audit.delta, audit.confidence = method, tradeoff, float(delta), confidence
    audit.epsilon_lower_ = one_run_epsilon(scores[included], scores[~included], delta=delta, confidence=confidence,
                                           method=method, tradeoff=tradeoff, n_guesses=n_guesses)
    audit.model_epsilon_, audit.model_delta_ = eps_model, delta_model
    audit.in_scores_, audit.out_scores_, audit.included_ = scores[included], scores[~included], included
    audit.n_trainings_ = 1
    return audit
