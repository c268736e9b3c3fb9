r"""Noisy-gradient training of a scikit-learn GLM on D_train, certified eta-MIP, without torch.

:func:`fit_noisy_gradient` trains the user's own estimator class by noisy gradient descent on
its own objective (:mod:`.gradients`: the smooth-loss registry's per-row gradients and
regulariser) and returns a fitted clone of it, with the certificate's figures.

**The mechanism** (Abadi et al.'s DP-SGD with Poisson sampling). From a public start
:math:`\theta_0` (zero, or the estimator's intercept-only fit to D's labels:
:func:`~skmip.calibration.noisy_gradient.start.prior_start`), for :math:`t = 1, \dots, T`: every row of D_train joins the batch
:math:`B_t` independently with probability :math:`q`; the released sum is

.. math::

    S_t = \sum_{i \in B_t} \mathrm{clip}_c\big(\nabla g_i(\theta_{t-1})/\kappa\big)
          + \sigma c\,\xi_t, \qquad \xi_t \sim N(0, I),

and :math:`\theta_t = \theta_{t-1} - \lambda\big(S_t/(qk) + \nabla R_k(\theta_{t-1})/(k\kappa)\big)`:
a step on the estimator's mean objective whose data term is estimated from the noisy sum (its
expectation is the mean clipped gradient). :math:`\theta_t` is a function of
:math:`S_1, \dots, S_t`, :math:`\theta_0` and public settings only, so the run is the adaptive composition of
:math:`T` Poisson-subsampled Gaussian mechanisms of sensitivity :math:`c` per row; replacing one
row of D_train moves its clipped gradient by at most :math:`2c`, the replace-one pair the
accountant analyses. The release is the average of the last ``average`` share of the iterates
(tail averaging: it damps the noise's random walk), written into the user's class, projected and
scrubbed by the parameter adapter: post-processing of :math:`(S_t)`.

**The promise.** :func:`skmip.bounds.dpsgd_eta` of ``(sigma, q, T)`` bounds the MIP level of
Definition 1 for D_train a uniformly random ``k``-subset of D (:mod:`.accounting` says which
rate and why); ``sigma`` is the smallest (to 0.1%) at which that bound is at most the target.

**Hyperparameters leak nothing under Definition 1.** The step size, expected batch size, number
of epochs and averaged share are constants validated in ``benchmarks/bench_noisy_gradient.py``
(given by the caller, never tuned on the private rows); the sampling rate ``q = batch_size / k``
and the step count ``T = epochs * floor(1/q)`` are functions of ``k``, hence of ``n`` and
``train_size``; the noise multiplier is a function of eta, ``q`` and ``T``, and the default
clipping norm (:func:`default_clip_norm`) a function of the noise multiplier and the constants;
the release template is fitted on public zero rows with D's labels (``classes``), the start
on zero rows with D's label frequencies or mean target (``y_pool``), and the subspace the descent
runs in (``X_pool``, :mod:`.subspace`) is spanned by the top principal directions of D's features,
their number a function of ``k``, eta and the schedule.
Definition 1 fixes D and randomises D_train: a choice that is the same whichever D_train is
drawn is not a signal about membership, and the accountant's guarantee holds for any fixed
choice. What this does **not** protect: facts about D as a whole (its size, its label set, its
principal directions, in whose span the released coefficients lie, a choice a caller makes from
D) are public by Definition 1's threat model and are released as is;
and a constant tuned on *other* data is only as good as its transfer.

**Randomness.** The batches and the noise come from generators spawned from the root of
``random_state`` (:func:`skmip.utils.rng.spawn_generators`: 128 bits of OS entropy for
``None``), or, with ``secure_mode=True``, from :class:`skmip.utils.os_random.OSRandomGenerator`
(``os.urandom`` with a floating-point-safe Gaussian sampler).

References
----------
Abadi et al., "Deep Learning with Differential Privacy", CCS 2016 (Algorithm 1).
Izzo et al., "Provable Membership Inference Privacy", Definition 1, Theorem 3 (post-processing).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.base import is_classifier

from skmip.calibration.losses.registry import get_smooth_loss
from skmip.calibration.noisy_gradient.accounting import noise_multiplier_for_eta
from skmip.calibration.noisy_gradient.gradients import RowObjective, clip_rows, release_template
from skmip.calibration.noisy_gradient.start import prior_start
from skmip.calibration.noisy_gradient.subspace import (
    check_subspace,
    lift,
    principal_directions,
    subspace_rank,
)
from skmip.exceptions import check_privacy_seed, warn_not_cryptographic
from skmip.params import get_adapter
from skmip.utils.os_random import OSRandomGenerator
from skmip.utils.rng import resolve_rng, spawn_generators
from skmip.utils.validation import check_eta, check_int, check_interval

__all__ = ["fit_noisy_gradient", "default_clip_norm", "NoisyGradientSchedule", "DEFAULTS"]

_OWNER = "fit_noisy_gradient"

#: Defaults validated in ``benchmarks/bench_noisy_gradient.py`` (docs/pipelines.md, "Noisy
#: gradients"): step 0.5, batches of 64 expected rows, 10 passes over D_train in expectation, the
#: last half of the iterates averaged; the clipping norm from :func:`default_clip_norm`.
DEFAULTS = {"learning_rate": 0.5, "batch_size": 64, "n_epochs": 10, "average": 0.5}

#: :func:`default_clip_norm`'s cap and its bound on the noise one step adds to a coordinate.
MAX_CLIP_NORM, STEP_NOISE = 2.0, 1.0 / 32.0


def default_clip_norm(noise_multiplier, batch_size, learning_rate):
    r"""The default clipping norm: as large as 2, as long as a step's noise stays small.

    Parameters
    ----------
    noise_multiplier : float
        :math:`\sigma` of the run (a function of eta, the sample rate and the steps).
    batch_size : int
        Expected rows per step, :math:`qk`.
    learning_rate : float
        :math:`\lambda`.

    Returns
    -------
    float
        :math:`\min(2, qk / (32\lambda\sigma))`: the noise a step adds to each coordinate,
        :math:`\lambda\sigma c/(qk)`, is at most 1/32, and a row's gradient is clipped at norm 2
        at most (a large norm keeps the mean gradient unbiased where the noise allows it).

    Notes
    -----
    A function of public quantities only (eta, ``k`` through the rate and the steps, the
    settings), so it leaks nothing under Definition 1. Measured on adult (sigma = 1.0: the cap,
    2) and German credit (sigma = 5.09: 0.79) in ``benchmarks/bench_noisy_gradient.py``.

    Examples
    --------
    >>> default_clip_norm(1.0, 64, 0.5), round(default_clip_norm(5.09, 64, 0.5), 3)
    (2.0, 0.786)
    """
    if noise_multiplier == 0:
        return MAX_CLIP_NORM
    return float(min(MAX_CLIP_NORM, batch_size / (learning_rate * noise_multiplier) * STEP_NOISE))


class NoisyGradientSchedule:
    """The public schedule of a run: sampling rate, steps, and the settings they come from.

    Parameters
    ----------
    n_train : int
        :math:`k = |D_\\mathrm{train}|`.
    batch_size : int
        Expected rows per step, at most ``n_train``.
    n_epochs : int
        Passes over D_train in expectation.
    average : float, default=0.5
        Share of the last iterates averaged into the release, in (0, 1].

    Attributes
    ----------
    sample_rate : float
        ``batch_size / n_train``.
    n_steps : int
        ``n_epochs * max(1, floor(1 / sample_rate))`` (Opacus' steps per epoch).
    n_averaged : int
        ``max(1, round(average * n_steps))``: the last iterates averaged.

    Examples
    --------
    >>> s = NoisyGradientSchedule(350, 64, 10)
    >>> round(s.sample_rate, 4), s.n_steps
    (0.1829, 50)
    """

    def __init__(self, n_train, batch_size, n_epochs, average=0.5):
        self.n_train = int(n_train)
        self.batch_size = int(batch_size)
        self.n_epochs = int(n_epochs)
        self.sample_rate = self.batch_size / self.n_train
        self.n_steps = self.n_epochs * max(1, int(1.0 / self.sample_rate))
        self.n_averaged = max(1, int(round(float(average) * self.n_steps)))


def _check_settings(estimator, n_train, n_total, eta, clip_norm, learning_rate, batch_size, n_epochs, average):
    """Validate what the run depends on; every check reads public arguments only."""
    check_eta(_OWNER, eta)
    check_interval(_OWNER, "average", average, 0, 1, closed="right",
                   why="it is the share of the last iterates averaged into the release.")
    check_int(_OWNER, "n_total", n_total, n_train, None,
              why=f"it is the size of D, which holds D_train's {n_train} rows.")
    if clip_norm is not None:
        check_interval(_OWNER, "clip_norm", clip_norm, 0, None, closed="neither",
                       why="it bounds each row's gradient norm, the sensitivity the noise covers.")
    check_interval(_OWNER, "learning_rate", learning_rate, 0, None, closed="neither")
    check_int(_OWNER, "batch_size", batch_size, 1, n_train,
              why="it is the expected number of D_train rows per step (sample rate batch_size / k).")
    check_int(_OWNER, "n_epochs", n_epochs, 1, None)
    loss = get_smooth_loss(estimator)
    if loss is None:
        raise TypeError(
            f"{_OWNER}: no smooth loss is registered for {type(estimator).__name__}; the noisy-gradient "
            "route trains scikit-learn GLMs (LogisticRegression, Ridge, LinearRegression, PoissonRegressor, "
            "GammaRegressor, TweedieRegressor, LinearSVC). Register the objective with "
            "skmip.calibration.losses.registry.register_smooth_loss, or use another route."
        )
    try:
        loss.check(estimator)
    except ValueError as exc:
        raise ValueError(
            f"{_OWNER}: {type(estimator).__name__} as configured leaves the objective this route "
            f"descends (the registered smooth loss); change the setting named here, or use another "
            f"route. The registry says: {str(exc).split(': ', 1)[-1]}"
        ) from exc


def _design(X, name="X_train"):
    """Rows as CSR (sparse input) or a float64 array; a DataFrame's column names."""
    names = None
    if hasattr(X, "columns") and hasattr(X, "to_numpy"):
        names = np.asarray([str(c) for c in X.columns], dtype=object)
        X = X.to_numpy()
    if sp.issparse(X):
        return sp.csr_matrix(X, dtype=np.float64), names
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{_OWNER}: {name} must be 2-D (n_samples, n_features); got shape {X.shape}.")
    return X, names


def _labels(estimator, y, classes, n):
    """Targets as an array of n rows; the classes of D for a classifier (checked against y)."""
    y = np.asarray(y)
    if y.shape[0] != n:
        raise ValueError(f"{_OWNER}: y_train has {y.shape[0]} rows but X_train has {n}.")
    if not is_classifier(estimator):
        return y.astype(np.float64), None
    if classes is None:
        raise ValueError(
            f"{_OWNER}: classes is required for the classifier {type(estimator).__name__}: pass the "
            "labels of D (np.unique(y) over all of D). Labels read from D_train would tell which "
            "classes D_train happens to contain."
        )
    classes = np.unique(np.asarray(classes))
    if classes.size < 2 or not np.all(np.isin(y, classes)):
        raise ValueError(
            f"{_OWNER}: classes must hold at least two labels, among them every label of y_train; "
            f"got {classes.tolist()!r}. Pass np.unique(y) over all of D."
        )
    return y, classes


def _release_generators(random_state, secure_mode):
    """(batch generator, noise generator): full entropy, or the OS's CSPRNG in secure mode."""
    if secure_mode:
        if random_state is not None:
            raise ValueError(
                f"{_OWNER}: secure_mode=True draws from the OS's secure generator and cannot be "
                f"seeded; got random_state={random_state!r}. Pass random_state=None."
            )
        return OSRandomGenerator(), OSRandomGenerator()
    if random_state is None:
        warn_not_cryptographic(_OWNER)
    else:
        check_privacy_seed(_OWNER, random_state)
    batches, noise = spawn_generators(resolve_rng(random_state), 2)
    return batches, noise


def _descend(objective, X, y, sample_weight, schedule, sigma, clip_norm, learning_rate, rngs, theta):
    """Run the noisy steps of the module docstring from ``theta`` (the public start); returns the
    mean of the last iterates."""
    batches, noise = rngs
    k, q = schedule.n_train, schedule.sample_rate
    tail, first = np.zeros(objective.dim), schedule.n_steps - schedule.n_averaged
    for t in range(schedule.n_steps):
        rows = np.flatnonzero(batches.random(k) < q)
        Xb = X[rows].toarray() if sp.issparse(X) else X[rows]
        wb = None if sample_weight is None else sample_weight[rows]
        G = clip_rows(objective.row_gradients(theta, Xb, y[rows], wb), clip_norm)
        noisy_sum = G.sum(axis=0) + sigma * clip_norm * np.asarray(noise.standard_normal(objective.dim))
        theta = theta - learning_rate * (noisy_sum / (q * k) + objective.regularizer_gradient(theta))
        if t >= first:
            tail += theta / schedule.n_averaged
    return tail


def fit_noisy_gradient(
    estimator,
    X_train,
    y_train,
    *,
    n_total,
    eta,
    classes=None,
    clip_norm=None,
    learning_rate=DEFAULTS["learning_rate"],
    batch_size=None,
    n_epochs=DEFAULTS["n_epochs"],
    average=DEFAULTS["average"],
    y_pool=None,
    X_pool=None,
    subspace="auto",
    sample_weight=None,
    secure_mode=False,
    random_state=None,
):
    r"""Train ``estimator``'s class on D_train by clipped, Poisson-sampled noisy gradient descent, eta-MIP.

    Parameters
    ----------
    estimator : estimator instance
        A scikit-learn GLM with a registered smooth loss (``LogisticRegression`` binary or
        multinomial, ``Ridge``, ``LinearRegression``, ``PoissonRegressor``, ``GammaRegressor``,
        ``TweedieRegressor``, ``LinearSVC``); its regulariser (``C``, ``alpha``) is kept. Not
        modified.
    X_train : array-like or sparse matrix of shape (k, n_features)
        The rows of D_train, already transformed (a pipeline's transformers fitted on D).
    y_train : array-like of shape (k,) or (k, n_outputs)
        Their labels or targets.
    n_total : int
        ``n = |D|`` (at least ``k``), recorded in the details.
    eta : float
        Target MIP level in (0, 0.5].
    classes : array-like or None, default=None
        The labels of D (required for classifiers): the release's ``classes_``.
    clip_norm : float or None, default=None
        Per-row gradient norm bound :math:`c`, in row units (:mod:`.gradients`); ``None`` means
        :func:`default_clip_norm` of the run's noise multiplier.
    learning_rate : float, default=0.5
        Step size :math:`\lambda` on the mean objective.
    batch_size : int or None, default=None
        Expected rows per step; the sample rate is ``batch_size / k``. ``None`` means
        ``min(64, k)`` (a function of ``k`` only).
    n_epochs : int, default=10
        Passes over D_train in expectation.
    average : float, default=0.5
        Share of the last iterates whose mean is released, in (0, 1] (1/T: the last iterate).
    y_pool : array-like of shape (n_total,) or None, default=None
        The labels (targets) of **D**. Given, the descent starts at the estimator's
        intercept-only fit to them (:func:`~skmip.calibration.noisy_gradient.start.prior_start`:
        the log class frequencies, the mean target), a function of D's label distribution that
        is the same for every D_train; ``None``: from zero.
    X_pool : array-like or sparse matrix of shape (n_total, n_features) or None, default=None
        The features of **D** (transformed as ``X_train``). Given, the descent runs in the top
        principal directions of D's features (``subspace``; :mod:`.subspace`), a function of D's
        features alone; ``None``: in all the columns.
    subspace : "auto", int or None, default="auto"
        With ``X_pool``: the number ``r`` of D's principal directions trained in; ``"auto"``,
        :func:`~skmip.calibration.noisy_gradient.subspace.subspace_rank` of the run (a function of
        ``k``, eta and the schedule); ``None``, all the columns. No projection where ``r`` is at
        least the number of columns or the design is wider than
        :data:`~skmip.calibration.noisy_gradient.subspace.MAX_FEATURES`.
    sample_weight : array-like of shape (k,) or None, default=None
        Row weights (multiply each row's loss before clipping). Refused for the Tweedie
        family, whose registered regulariser scales with the total weight.
    secure_mode : bool, default=False
        Draw batches and noise from ``os.urandom`` (needs ``random_state=None``).
    random_state : None, int or numpy Generator, default=None
        Root of the batch and noise generators. A fixed value warns (``PrivacyWarning``):
        whoever knows it can subtract the noise.

    Returns
    -------
    release : estimator
        A fitted clone of ``estimator``: ``coef_``, ``intercept_`` (noisy), ``classes_``,
        ``n_features_in_``, ``feature_names_in_`` (for a DataFrame), ``n_iter_`` (the steps).
    details : dict
        ``mip_bound`` (printed eta, ``<= eta``), ``target_eta``, ``noise_multiplier``,
        ``sample_rate``, ``n_steps``, ``clip_norm``, ``learning_rate``, ``batch_size``,
        ``n_epochs``, ``n_averaged``, ``n_train``, ``n_total``, ``start``, ``subspace_rank`` (``r``,
        or ``None`` for all the columns), ``theorem``.

    Raises
    ------
    TypeError
        If no smooth loss is registered for ``estimator``.
    ValueError
        For a setting out of range, an estimator setting outside the registered objective,
        missing or inconsistent ``classes``, or a non-finite release (post-processing of the
        noisy sums: its refusal tells nothing beyond the release).

    Notes
    -----
    The mechanism, the promise and why the hyperparameters leak nothing are in the module
    docstring; ``details["mip_bound"]`` is :func:`skmip.bounds.dpsgd_eta` of the run's
    ``(noise_multiplier, sample_rate, n_steps)``, exactly as computed.

    References
    ----------
    Abadi et al. (2016), Algorithm 1; Izzo et al., Definition 1; :func:`skmip.bounds.dpsgd_eta`.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning (a doctest needs one)
    ...     clf, details = fit_noisy_gradient(LogisticRegression(C=0.1), X[::2], y[::2], n_total=len(X),
    ...                                       eta=0.1, classes=[0, 1], random_state=0)
    >>> bool(details["mip_bound"] <= 0.1), details["n_steps"], bool(clf.score(X[1::2], y[1::2]) > 0.9)
    (True, 40, True)
    """
    X, names = _design(X_train)
    k = X.shape[0]
    batch_size = min(DEFAULTS["batch_size"], k) if batch_size is None else batch_size
    _check_settings(estimator, k, n_total, eta, clip_norm, learning_rate, batch_size, n_epochs, average)
    y, classes = _labels(estimator, y_train, classes, k)
    if sample_weight is not None:
        from sklearn.linear_model import GammaRegressor, PoissonRegressor, TweedieRegressor

        if isinstance(estimator, (PoissonRegressor, GammaRegressor, TweedieRegressor)):
            raise ValueError(
                f"{_OWNER}: sample_weight is not supported for {type(estimator).__name__}, whose "
                "regulariser scales with the total weight of D_train; pass sample_weight=None."
            )
        sample_weight = np.asarray(sample_weight, dtype=np.float64).ravel()
        if sample_weight.shape != (k,) or not np.all(np.isfinite(sample_weight) & (sample_weight >= 0)):
            raise ValueError(f"{_OWNER}: sample_weight must hold {k} finite non-negative weights.")
    X_pool = _check_subspace(subspace, X_pool, n_total, X.shape[1])
    schedule = NoisyGradientSchedule(k, batch_size, n_epochs, average)
    sigma, bound = noise_multiplier_for_eta(eta, schedule.sample_rate, schedule.n_steps)
    V = None if X_pool is None else principal_directions(
        X_pool, subspace_rank(k, schedule.sample_rate, schedule.n_steps, sigma) if subspace == "auto" else subspace)
    X_fit = X if V is None else np.asarray(X @ V)  # D_train's rows in D's top directions
    theta0 = None if y_pool is None else _prior(estimator, X_fit.shape[1], y_pool, classes, n_total)
    if clip_norm is None:
        clip_norm = default_clip_norm(sigma, schedule.batch_size, float(learning_rate))
    rngs = _release_generators(random_state, secure_mode)
    n_outputs = y.shape[1] if y.ndim == 2 else None
    release = release_template(estimator, X.shape[1], classes=classes, n_outputs=n_outputs, feature_names=names)
    trained = release if V is None else release_template(estimator, X_fit.shape[1], classes=classes,
                                                         n_outputs=n_outputs)
    objective = RowObjective(trained, k)
    theta0 = np.zeros(objective.dim) if theta0 is None else theta0
    theta = _descend(objective, X_fit, y, sample_weight, schedule, sigma, float(clip_norm), float(learning_rate),
                     rngs, theta0)
    if not np.all(np.isfinite(theta)):
        raise ValueError(
            f"{_OWNER}: the noisy descent diverged (non-finite parameters); lower learning_rate or "
            "clip_norm, or scale the features."
        )
    objective.adapter.set_vector(trained, theta)
    if V is not None:
        lift(trained, release, V)  # post-processing: coef = V w, the same decision function
    adapter = get_adapter(release)
    adapter.project(release)
    adapter.scrub(release)
    release.n_iter_ = _n_iter_like(estimator, schedule.n_steps)
    details = {
        "mip_bound": bound, "target_eta": float(eta), "noise_multiplier": sigma,
        "sample_rate": schedule.sample_rate, "n_steps": schedule.n_steps, "clip_norm": float(clip_norm),
        "learning_rate": float(learning_rate), "batch_size": schedule.batch_size,
        "n_epochs": schedule.n_epochs, "n_averaged": schedule.n_averaged, "n_train": k, "n_total": int(n_total),
        "start": "zero" if y_pool is None else "prior", "subspace_rank": None if V is None else V.shape[1],
        "theorem": ("Izzo et al. Definition 1 via skmip.bounds.dpsgd_eta: half the replace-one total "
                    "variation of Poisson-subsampled Gaussian steps (PLD accountant, rate per row of D_train)"),
    }
    return release, details


def _prior(estimator, n_features, y_pool, classes, n_total):
    """:func:`prior_start` of D's labels, checked to be D's size."""
    y_pool = np.asarray(y_pool)
    if y_pool.shape[0] != n_total:
        raise ValueError(
            f"{_OWNER}: y_pool has {y_pool.shape[0]} rows but n_total is {n_total}; pass the labels "
            "(targets) of all of D, never D_train's."
        )
    return prior_start(estimator, n_features, y_pool, classes)


def _check_subspace(subspace, X_pool, n_total, n_features):
    """``X_pool`` as the engine's design (or ``None``), checked against ``subspace`` and D's shape."""
    check_subspace(_OWNER, subspace)
    if X_pool is None or subspace is None:
        if subspace is not None and subspace != "auto":
            raise ValueError(f"{_OWNER}: subspace={subspace!r} needs X_pool, the features of D whose principal "
                             "directions the descent runs in; pass X_pool or subspace=None.")
        return None
    X_pool, _ = _design(X_pool, "X_pool")
    if X_pool.shape != (n_total, n_features):
        raise ValueError(f"{_OWNER}: X_pool must hold the {n_total} rows of D with the {n_features} columns of "
                         f"X_train; got shape {X_pool.shape}. Pass D's features, transformed as X_train.")
    return X_pool


def _n_iter_like(estimator, n_steps):
    """``n_iter_`` in the estimator's own form: an array of one entry for ``LogisticRegression``,
    an int for the others (``LinearSVC`` and the regressors)."""
    from sklearn.linear_model import LogisticRegression

    if isinstance(estimator, LogisticRegression):
        return np.array([n_steps], dtype=np.int32)
    return int(n_steps)
