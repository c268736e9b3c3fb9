"""The noisy-gradient route: a scikit-learn GLM trained by clipped, Poisson-sampled noisy gradients.

The release is the user's own estimator class fitted on D_train by
:func:`skmip.calibration.noisy_gradient.fit_noisy_gradient` (Abadi et al.'s DP-SGD in numpy, no
torch); its promise is :func:`skmip.bounds.dpsgd_eta` of the run, half the replace-one total
variation at epsilon = 0 of the PLD accountant (docs/pipelines.md, "Noisy gradients for
scikit-learn GLMs, without torch"). The route owns the engine's hyperparameters as knobs; the
fit itself is the defence's (:mod:`skmip.defend.noisy_gradient_route`), which hands the engine
D_train's rows, D's labels and a generator spawned from its own root.
"""

from __future__ import annotations

from skmip.calibration.noisy_gradient.engine import DEFAULTS
from skmip.calibration.noisy_gradient.subspace import MAX_FEATURES, check_subspace
from skmip.calibration.routes.base import FLOPS, CalibrationRoute, Cost
from skmip.utils.validation import check_int, check_interval

__all__ = ["NoisyGradientRoute", "SECONDS_PER_STEP", "SECONDS_NOISE_SEARCH"]

#: Seconds of Python overhead per noisy step (indexing the batch, the registry's row
#: gradients, clipping, one Gaussian draw): the adult run of docs/pipelines.md takes 1,780
#: steps in about 9 s including the noise search.
SECONDS_PER_STEP = 2e-3

#: Seconds of the noise multiplier's search (PLD accountant, a few dozen evaluations).
SECONDS_NOISE_SEARCH = 5.0


class NoisyGradientRoute(CalibrationRoute):
    """Train a scikit-learn GLM by noisy gradient descent on D_train (DP-SGD, in numpy).

    Parameters
    ----------
    clip_norm : float or None, default=None
        Bound on each row's gradient norm, in row units (the gradient of one row's own loss;
        :mod:`skmip.calibration.noisy_gradient.gradients`). ``None``:
        :func:`~skmip.calibration.noisy_gradient.default_clip_norm`, ``min(2, batch /
        (32 learning_rate sigma))``, a function of public quantities only.
    learning_rate : float, default=0.5
        Step size on the mean objective, > 0.
    batch_size : int or None, default=None
        Expected rows of D_train per step (Poisson sampling at rate ``batch_size / k``); a value
        above ``k`` is taken as ``k``. ``None``: ``min(64, k)``.
    n_epochs : int, default=10
        Passes over D_train in expectation (``n_epochs * floor(k / batch_size)`` steps), >= 1.
    average : float, default=0.5
        Share of the last iterates whose mean is released, in (0, 1].
    start : {"prior", "zero"}, default="prior"
        Where the descent starts: ``"prior"``, the estimator's intercept-only fit to the labels
        of D (:func:`~skmip.calibration.noisy_gradient.start.prior_start`: the log class
        frequencies, the mean target; every coefficient zero), a function of D's label
        distribution, the same for every D_train; ``"zero"``, all parameters zero (for a D whose
        class balance must itself stay secret: the prior's intercept reveals it).
    subspace : "auto", int or None, default="auto"
        The descent runs in the top ``r`` principal directions of D's features (transformed by
        the pipeline's transformers fitted on D), the released coefficients mapped back to the
        columns (:mod:`skmip.calibration.noisy_gradient.subspace`): ``"auto"``, ``r =
        ceil(k (q sqrt(T) / sigma)^2)``, the directions in which the privacy noise is no larger
        than the sampling spread of D_train's own sum (23 of 61 on German credit at eta = 0.1; at
        least the column count, hence no projection, on adult); an int, that ``r``; ``None``, all
        the columns. A function of D's features and public settings, the same for every D_train:
        it leaks nothing under Definition 1 and leaves ``mip_bound_`` unchanged; it releases the
        span of D's top directions (a fact about D as a whole) and cannot learn a signal outside it.
    secure_mode : bool, default=False
        Draw the batches and the noise from ``os.urandom`` with a floating-point-safe Gaussian
        sampler (the wrapper's ``random_state`` must then be ``None``); otherwise from numpy's
        PCG64 seeded with 128 bits of OS entropy, spawned from the wrapper's root.

    Notes
    -----
    Applies to an estimator with a registered smooth loss (binary or multinomial
    ``LogisticRegression``, ``Ridge``, ``LinearRegression``, ``PoissonRegressor``,
    ``GammaRegressor``, ``TweedieRegressor``, squared-hinge ``LinearSVC``) as configured, bare
    or as the last step of a pipeline (its transformers fitted on all of D), with
    ``params="auto"``. The promise: the run is the adaptive composition of Poisson-subsampled
    Gaussian sums of clipped row gradients; :func:`skmip.bounds.dpsgd_eta` of its noise
    multiplier, rate and step count bounds the MIP level of Definition 1 (proof in
    :func:`skmip.bounds.profile_to_mip`), and the noise multiplier is the smallest (to 0.1%) at
    which that bound is at most eta; ``mip_bound_`` is the bound itself. The defaults were
    measured in ``benchmarks/bench_noisy_gradient.py``, never tuned on the private rows.

    References
    ----------
    Abadi et al., "Deep Learning with Differential Privacy", CCS 2016 (Algorithm 1).

    Examples
    --------
    >>> from skmip.calibration.routes import NoisyGradientRoute
    >>> NoisyGradientRoute(n_epochs=20).get_params()["n_epochs"]
    20
    """

    name = "noisy_gradient"
    promise = ("eta-MIP (Definition 1) from delta(0)/2 of the PLD accountant under replace-one "
               "adjacency of Poisson-subsampled Gaussian gradient steps (skmip.bounds.dpsgd_eta)")

    def __init__(self, clip_norm=None, learning_rate=DEFAULTS["learning_rate"], batch_size=None,
                 n_epochs=DEFAULTS["n_epochs"], average=DEFAULTS["average"], start="prior", subspace="auto",
                 secure_mode=False):
        self.clip_norm = clip_norm
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.n_epochs = n_epochs
        self.average = average
        self.start = start
        self.subspace = subspace
        self.secure_mode = secure_mode

    def validate(self, owner):
        """Check every knob; raise naming ``owner``, the knob, its value and the fix."""
        if self.clip_norm is not None:
            check_interval(owner, "clip_norm", self.clip_norm, 0, None, closed="neither",
                           why="it bounds each row's gradient norm, the sensitivity the noise covers; "
                               "None chooses it from the noise multiplier.")
        check_interval(owner, "learning_rate", self.learning_rate, 0, None, closed="neither",
                       why="it is the step size of the noisy descent; 0.5 is the measured default.")
        if self.batch_size is not None:
            check_int(owner, "batch_size", self.batch_size, 1, None,
                      why="it is the expected number of D_train rows per step; None means min(64, k).")
        check_int(owner, "n_epochs", self.n_epochs, 1, None,
                  why="it is the number of passes over D_train in expectation; 10 is the default.")
        check_interval(owner, "average", self.average, 0, 1, closed="right",
                       why="it is the share of the last iterates averaged into the release.")
        if not (isinstance(self.start, str) and self.start in ("prior", "zero")):
            raise ValueError(f"{owner}: start must be 'prior' (the null model of D's labels) or 'zero'; "
                             f"got {self.start!r}.")
        check_subspace(owner, self.subspace)
        if not isinstance(self.secure_mode, bool):
            raise TypeError(f"{owner}: secure_mode must be True or False; got {self.secure_mode!r}.")
        return self

    def applies(self, estimator, params):
        """``None`` when a smooth loss is registered for ``estimator`` (as configured), or for the
        last step of a pipeline of two or more steps, with ``params="auto"``; else the reason."""
        from sklearn.pipeline import Pipeline

        from skmip.calibration.losses.registry import get_smooth_loss

        if not (isinstance(params, str) and params == "auto"):
            return "params names the parameters; the route trains the estimator's whole objective"
        if isinstance(estimator, Pipeline) and len(estimator.steps) >= 2:
            estimator = estimator.steps[-1][1]
        name = type(estimator).__name__
        loss = None if estimator is None or isinstance(estimator, str) else get_smooth_loss(estimator)
        if loss is None:
            return f"no smooth loss is registered for {name}"
        try:
            loss.check(estimator)
        except ValueError as exc:
            why = str(exc).split(": ", 1)[-1].split("; the influence")[0]
            return f"{name} as configured leaves its registered objective ({why})"
        return None

    def batch_for(self, n_train):
        """The expected batch: ``min(batch_size, k)``, or ``min(64, k)`` for ``None`` (a function of k)."""
        return min(DEFAULTS["batch_size"] if self.batch_size is None else int(self.batch_size), n_train)

    def cost(self, n_samples, n_features, n_train, estimator):
        """Rough seconds: the noise search, the covariance of D's features where the run may
        project them (``subspace`` not ``None``, at most ``MAX_FEATURES`` columns; an upper bound:
        nothing is computed where the rule keeps every column), plus ``n_epochs * floor(k / batch)``
        steps, each the row gradients of one batch; bytes: one batch's rows, or the covariance."""
        batch = max(1, min(self.batch_for(n_train), n_train))
        steps = self.n_epochs * max(1, n_train // batch)
        per_step = SECONDS_PER_STEP + 10.0 * batch * (n_features + 1) / FLOPS
        projects = self.subspace is not None and n_features <= MAX_FEATURES
        covariance = 2.0 * n_samples * n_features**2 / FLOPS if projects else 0.0
        rows, square = 8.0 * batch * (n_features + 1), 8.0 * n_features**2 if projects else 0.0
        driver = f"subspace={self.subspace!r}" if square > rows else f"batch_size={self.batch_size!r}"
        return Cost(SECONDS_NOISE_SEARCH + covariance + steps * per_step, f"n_epochs={self.n_epochs!r}",
                    max(rows, square), driver)
