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

__all__ = ["one_run_epsilon", "one_run_audit", "OneRunAudit", "guess_grid", "right_guess_range", "stated_epsilon"]

_METHODS = ("fdp", "steinke")
_TRADEOFFS = ("gaussian", "dp")
_SIDES = ("two-sided", "one-sided")
#: Fewest guesses of an automatic guess count.
MIN_GUESSES = 10


def _check_scores(owner, name, scores):
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size == 0:
        raise ValueError(f"{owner}: {name} is empty; the audit needs canaries that were in and out of training.")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"{owner}: {name} contains NaN or inf; score every canary with a finite number.")
    return s


def _halving(m):
    """Guess totals ``m // 2, m // 4, ...`` down to :data:`MIN_GUESSES` (or ``[max(1, m // 2)]``)."""
    return [m >> j for j in range(1, 64) if (m >> j) >= MIN_GUESSES] or [max(1, m // 2)]


def _is_pair(item):
    return isinstance(item, tuple) and len(item) == 2


def guess_grid(m, n_guesses="auto", guesses="two-sided"):
    """The guessers tried, as ``(k_plus, k_minus)`` pairs fixed before the scores are seen.

    A pair guesses "in" for the ``k_plus`` highest scores, "out" for the ``k_minus`` lowest
    and abstains on the rest. ``"auto"``: the totals ``m // 2, m // 4, ...`` down to
    :data:`MIN_GUESSES`, split evenly between "in" and "out" (``guesses="two-sided"``) or
    all "in" (``"one-sided"``). An int is such a total; a tuple ``(k_plus, k_minus)`` is used
    as given; a list may mix them.

    Examples
    --------
    >>> guess_grid(1000)
    [(250, 250), (125, 125), (63, 62), (31, 31), (16, 15), (8, 7)]
    >>> guess_grid(1000, guesses="one-sided")
    [(500, 0), (250, 0), (125, 0), (62, 0), (31, 0), (15, 0)]
    """
    owner = "one_run_epsilon"
    check_option(owner, "guesses", guesses, _SIDES)
    if isinstance(n_guesses, str):
        check_option(owner, "n_guesses", n_guesses, ("auto",))
        n_guesses = _halving(m)
    scalar = isinstance(n_guesses, (int, np.integer)) or _is_pair(n_guesses)
    items = [n_guesses] if scalar else list(n_guesses)
    pairs = []
    for item in items:
        if _is_pair(item):
            pairs.append((int(item[0]), int(item[1])))
        else:
            total = int(item)
            pairs.append((total - total // 2, total // 2) if guesses == "two-sided" else (total, 0))
    if not pairs or any(kp < 0 or km < 0 or not 1 <= kp + km <= m for kp, km in pairs):
        raise ValueError(f"{owner}: n_guesses must give between 1 and the {m} canaries' guesses "
                         f"(non-negative counts); got {n_guesses!r}.")
    if guesses == "one-sided" and any(km for _, km in pairs):
        raise ValueError(f"{owner}: guesses='one-sided' guesses no canary out; got pairs {pairs}. "
                         "Pass guesses='two-sided' to guess out for the lowest scores.")
    return sorted(set(pairs), key=lambda p: (-(p[0] + p[1]), -p[0]))


def right_guess_range(in_scores, out_scores, k_plus, k_minus):
    """Least and most right guesses of the guesser ``(k_plus, k_minus)`` over all tie-breaks.

    The guesser orders the canaries by score and guesses "in" for the top ``k_plus``, "out"
    for the bottom ``k_minus`` (``k_plus + k_minus <= m``, so no canary gets both); only the
    order among equal scores is open. Least: tied in-canaries placed below tied out-canaries;
    most: the reverse. Any tie-break that does not look at membership (a uniformly random one,
    say) gets a count in between; without ties at the two cuts the two counts are equal.

    Examples
    --------
    >>> right_guess_range(np.array([3.0, 2.0]), np.array([2.0, 1.0]), 2, 1)
    (2, 3)
    """
    scores = np.concatenate([in_scores, out_scores])
    is_in = np.concatenate([np.ones(len(in_scores), bool), np.zeros(len(out_scores), bool)])
    n = scores.size

    def right(in_last):
        order = np.lexsort((is_in if in_last else ~is_in, scores))  # by score, then the tie key
        labels = is_in[order]
        return int(labels[n - k_plus:].sum()) + int((~labels[:k_minus]).sum())

    return right(False), right(True)


def one_run_epsilon(in_scores, out_scores, *, delta, confidence=0.95, method="fdp", tradeoff="dp",
                    n_guesses="auto", guesses="two-sided") -> float:
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
    n_guesses : "auto", int, tuple or list, default="auto"
        The guessers tried, fixed before the scores are seen (:func:`guess_grid`): an int is
        a number of guesses, split by ``guesses``; a tuple ``(k_plus, k_minus)`` guesses "in"
        for the ``k_plus`` highest scores and "out" for the ``k_minus`` lowest. The auditor
        abstains on the rest. Each guesser of the list is tested at level
        ``(1 - confidence) / len(list)`` (Bonferroni) and the largest bound is returned.
    guesses : {"two-sided", "one-sided"}, default="two-sided"
        How an int (and ``"auto"``) splits: ``"two-sided"`` guesses "in" for the top half of
        the guesses and "out" for the bottom half (Steinke et al.'s ``k_+`` and ``k_-``);
        ``"one-sided"`` guesses "in" only (jax-privacy's guesser). Two-sided guessing uses the
        evidence at both ends of the scores: 14% to 26% higher bounds on the Gaussian
        mechanism; lower where the evidence sits at one end only (docs/auditing.md, "Two-sided
        guesses and why the printed bound is valid").

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
    all ``m`` canaries, none dropped after seeing the scores. Each guesser of the grid guesses
    "in" for its ``k_plus`` highest scores, "out" for its ``k_minus`` lowest and abstains on
    the rest; its bound is the least over the right-guess counts its tie-breaks can give
    (:func:`right_guess_range`), so it is at most the bound of a guesser that breaks ties
    without looking at membership; :func:`skmip.bounds.one_run.one_run_epsilon_bound` says
    why reading the bound off a fixed grid of epsilons keeps the level.

    Examples
    --------
    Scores of a mechanism that leaks a lot: every in-canary scores above every out-canary.

    >>> one_run_epsilon(np.arange(500) + 500.0, np.arange(500), delta=0.0, method="steinke")
    4.64

    The Gaussian mechanism (mu = 2): the evidence sits at both ends of the scores.

    >>> rng = np.random.default_rng(0)
    >>> s = rng.random(1000) < 0.5
    >>> out = 2 * s + rng.normal(size=1000)
    >>> one_run_epsilon(out[s], out[~s], delta=1e-5), one_run_epsilon(out[s], out[~s], delta=1e-5,
    ...                                                                guesses="one-sided")
    (3.24, 2.86)
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
    grid = guess_grid(m, n_guesses, guesses)
    alpha = (1 - float(confidence)) / len(grid)
    return max(_guesser_bound(in_s, out_s, k_plus, k_minus, delta=float(delta), alpha=alpha, method=method,
                              tradeoff=tradeoff) for k_plus, k_minus in grid)


def _guesser_bound(in_s, out_s, k_plus, k_minus, **test):
    """The least bound over the right-guess counts that the guesser's tie-breaks can give.

    Whichever membership-blind tie-break is the guesser's, its count is in the range, so its
    bound is at least this one (no monotonicity of the tests in the count is needed). Without
    ties at the cuts the range is one count.
    """
    m, lo_hi = in_s.size + out_s.size, right_guess_range(in_s, out_s, k_plus, k_minus)
    bound = np.inf
    for v in range(lo_hi[0], lo_hi[1] + 1):
        bound = min(bound, one_run_epsilon_bound(m, k_plus + k_minus, v, **test))
        if bound == 0.0:
            break
    return bound


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
    model_eta_ : float or None
        The eta an eta-MIP release states (``mip_bound_``), reported beside the epsilon
        bound; None when it states none. An epsilon lower bound implies no eta lower bound
        (docs/auditing.md, "eta-MIP in one run").
    in_scores_, out_scores_ : ndarray
        The canaries' scores (the model's :func:`~skmip.audit.game.model_signal`).
    included_ : ndarray of bool
        Which canaries the coin flips put into the training data.
    n_trainings_ : int
        1: the audit fits the estimator once.
    method, tradeoff, guesses, delta, confidence : the options the bound was computed with.
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
                  tradeoff="dp", n_guesses="auto", guesses="two-sided", random_state=None,
                  fit_params=None) -> OneRunAudit:
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
    confidence, method, tradeoff, n_guesses, guesses :
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
    (1, 3.51, None)
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
    audit.guesses = guesses
    audit.epsilon_lower_ = one_run_epsilon(scores[included], scores[~included], delta=delta, confidence=confidence,
                                           method=method, tradeoff=tradeoff, n_guesses=n_guesses, guesses=guesses)
    audit.model_epsilon_, audit.model_delta_ = eps_model, delta_model
    promise = stated_promise(model)
    audit.model_eta_ = promise.value if promise is not None and promise.kind == "mip" and promise.promised else None
    audit.in_scores_, audit.out_scores_, audit.included_ = scores[included], scores[~included], included
    audit.n_trainings_ = 1
    return audit
