"""MIPNoiseWrapper: eta-membership-inference privacy for any estimator, by noise.

Izzo et al., Algorithm 1 with the noise of Corollary 10 (``method="moments"``), or Gaussian
noise calibrated by the coupling bound on the swap sensitivity (``method="coupling"``).
"""

from __future__ import annotations

import contextlib
import copy

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier

from skmip.utils.rng import draw_seed, fix_inner_random_state, resolve_rng, spawn_generators
from skmip.utils.rows import n_rows
from skmip.utils.threads import single_threaded_blas
from skmip.utils.deprecation import RenamedParametersMixin
from skmip.utils.validation import check_eta, input_errors
from skmip.exceptions import MissingClassError, check_privacy_seed, warn_no_promise_on_given_subset
from skmip.params import get_adapter
from skmip.promise import MIPPromiseMixin
from skmip.defend._delegate import ReleasedModelMixin
from skmip.defend.preprocessing import preprocessing_route
from skmip.calibration.routes import auto_route, check_cost, n_train_of, warn_if_vacuous
from skmip.calibration.routes.auto import DataShape
from skmip.defend.synthetic_route import SYNTHETIC, fit_synthetic
from skmip.defend.noisy_gradient_route import (
    NOISY_GRADIENT, check_fit_params, check_noisy_gradient, fit_noisy_gradient_path,
)
from skmip.defend._parameters import DEPRECATED, MovedKnobsMixin, fill_parameters, validate_shared
from skmip.defend._input import _validate_arrays, check_classes, validate_input
from skmip.defend._learned import check_learner_on_data, check_releases
from skmip.defend._coverage import ClassCoverage, class_coverage
from skmip.defend._calibrate import (
    TrainingSet,
    fit_released_base,
    log,
    measure_spread,
    noise_law,
    release,
)

__all__ = ["MIPNoiseWrapper", "mip_noise_path"]

_OWNER = "MIPNoiseWrapper"


class MIPNoiseWrapper(MovedKnobsMixin, RenamedParametersMixin, MIPPromiseMixin, ReleasedModelMixin, MetaEstimatorMixin, BaseEstimator):
    """Make any estimator with continuous fitted parameters eta-membership-inference private.

    ``fit`` draws a random training subset ``D_train`` of the data ``D`` it is given,
    measures how much the fitted parameters vary over random subsets, fits the estimator on
    ``D_train`` and adds noise scaled to that variability. The released model
    (``estimator_``) then satisfies Definition 1: an attacker holding any record of ``D``
    cannot tell whether it was in ``D_train`` with accuracy above ``max(k/n, 1-k/n) + eta``
    (``k`` rows of ``D_train``, ``n`` of ``D``; ``1/2 + eta`` when ``k = n/2``;
    :func:`skmip.bounds.mip_promise`).

    Two calibrations of the noise: ``"coupling"`` (Gaussian noise whose scale is set by a
    coupling bound on how far swapping one record moves the fit; valid in every dimension,
    with a confidence statement, and hundreds of times less noise) and ``"moments"`` (Izzo
    et al.'s Corollary 10). ``"auto"`` uses the coupling calibration wherever skmip computes
    swap distances without refitting (a registered smooth loss: logistic regression, ridge,
    least squares, Poisson/Gamma/Tweedie GLMs, squared-hinge ``LinearSVC``) and the moments
    calibration for every other estimator a parameter adapter reads. Estimators without
    continuous parameters (trees, forests, boosting, k-NN) are trained instead on records drawn
    from an eta-MIP synthesizer of ``(X, y)`` (``method_="synthetic"``; post-processing keeps
    its promise).

    A :class:`~sklearn.pipeline.Pipeline` whose last step has such a loss (with ``params="auto"``
    and ``method`` ``"auto"`` or ``"coupling"``) is calibrated by coupling too: its transformers
    are fitted on all of ``D`` (functions of ``D``, the same for every ``D_train``, so they
    carry no membership signal under Definition 1; facts about ``D`` as a whole, such as the
    categories a ``OneHotEncoder`` found, are released as they are), and the last step is
    calibrated and released exactly as a bare estimator on the transformed rows. ``X`` reaches
    the pipeline as passed: a DataFrame with string or categorical columns for its own
    ``ColumnTransformer``. Fit parameters name their step (``logisticregression__sample_weight``).
    See the docs page "Your pipeline, your estimator".

    The parameters are the common ones (``estimator``, ``eta``, ``method``, ``train_size``,
    ``params``, ``random_state``, ``n_jobs``, ``verbose``); a route's own knobs are the
    parameters of its object, passed as ``method``
    (:class:`~skmip.calibration.routes.CouplingRoute`,
    :class:`~skmip.calibration.routes.MomentsRoute`,
    :class:`~skmip.calibration.routes.SyntheticRoute`), and ``method_`` says which route ``fit``
    took. Their 0.2 spelling as parameters of the wrapper (``n_rounds=...``) still works until
    0.3, with a ``FutureWarning`` (docs/design.md, "Calibration routes").

    Parameters
    ----------
    estimator : estimator instance
        The learner to privatise. Its fitted parameters must be continuous and readable by
        a parameter adapter (:mod:`skmip.params`). It must be deterministic given its
        data: a ``random_state`` parameter that is not an integer is set to one integer
        drawn once per ``fit`` and shared by every subset fit and the final fit.
    eta : float, default=0.1
        Promised bound on the attacker's accuracy advantage over the prior
        ``max(k/n, 1-k/n)`` (Definition 1), in (0, 0.5].
    {{method}}
    {{train_size}}
    {{params}}
    {{random_state}}
    {{n_jobs}}
    {{verbose}}
    {{synthesizer}}
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
    estimator_ : estimator
        The releasable model: a fitted clone of ``estimator`` holding only noised,
        projected parameters, with training diagnostics removed (on the pipeline route, the
        transformers fitted on ``D`` and the noised last step).
    sigma_ : ndarray of shape (d,)
        Per-coordinate spread of the parameters (M-th root of the M-th central moment; for
        the full coupling shape, the standard deviation; for the designed shape, the
        per-coordinate standard deviation of that shape, ``s = 1``). It is computed from the private
        data and is *not* covered by the guarantee: publish ``estimator_`` only.
    method_ : str
        The route taken: ``"coupling"``, ``"moments"``, ``"noisy_gradient"`` or ``"synthetic"``.
    method_reason_ : str
        Why: the rule of ``method="auto"`` in one sentence (from the shape of D and eta, never
        D_train), or that ``method`` was given.
    noise_multiplier_, clip_norm_, sample_rate_, n_steps_ : float, float, float, int
        ``method_ == "noisy_gradient"``: the run's noise multiplier, clipping norm (row units),
        Poisson rate per row of D_train and number of steps; ``mip_bound_`` is
        :func:`skmip.bounds.dpsgd_eta` of them.
    subspace_rank_ : int or None
        ``method_ == "noisy_gradient"``: the number ``r`` of D's principal directions the descent
        ran in (:mod:`skmip.calibration.noisy_gradient.subspace`; a function of public settings),
        ``None`` where it ran on every column (``subspace=None``, or too many columns).
    synthesizer_ : MIPTabularSynthesizer
        ``method_ == "synthetic"``: the fitted synthesizer whose samples trained
        ``estimator_`` (itself eta-MIP: its tables are the release; ``domains_`` shows the
        domains used).
    noise_constant_ : float
        Moments calibration: ``c = (6.16/eta)**(1 + 2/M)`` (Corollary 10); for a classifier at
        ``eta - delta``, where ``delta`` pays for random subsets that lack a class (decided from
        D: docs/coupling.md, "Subsets that lack a class").
    noise_scale_ : float
        Coupling calibration: the scale ``s`` of the Gaussian noise, in units of the shape.
        ``method_ == "synthetic"``: the synthesizer's noise on each cell fraction.
    noise_scale_point_ : float
        Coupling calibration: the scale the point estimate alone would need; the ratio
        ``noise_scale_ / noise_scale_point_`` is the price of the confidence statement.
    coupling_eta_upper_ : float or None
        Coupling calibration: the upper confidence bound on the MIP level at
        ``noise_scale_`` (at most eta; for a classifier it includes ``delta``, see
        ``noise_constant_``); ``None`` with ``confidence=None``, or when the swap
        distances are estimates rather than certified bounds (``coupling_certified_``).
    coupling_certified_ : bool
        Coupling calibration: True when every swap distance is exact or a proven upper bound
        (the ``"newton"`` engine's certificate for the generalised-linear losses that declare a
        self-concordance constant: logistic, least squares, Poisson/Gamma/Tweedie; and for
        multinomial logistic regression, whose softmax loss has a range self-concordance
        constant, and ``LinearSVC``, binary or one against the rest, whose objective is strongly
        convex; docs/coupling.md, "Certified distances"). False for multi-output ``Ridge`` (one
        block per output): the eta is then an estimate, and none is promised.
    coupling_eta_point_ : float
        Coupling calibration: the point estimate of the MIP level at ``noise_scale_``.
        ``method_ == "synthetic"``: the synthesizer's exact coupling bound at its noise.
    sensitivity_engine_ : str
        Coupling calibration: how swap distances were computed (``"newton"``,
        ``"influence"``, ``"refit"``).
    n_train_ : int
        Number of rows in ``D_train``.
    mip_bound_ : float or None
        The promised eta: any attacker's membership accuracy is at most
        ``max(k/n, 1-k/n) + mip_bound_`` with ``k = n_train_`` and ``n`` the rows of D
        (:func:`skmip.bounds.mip_promise`). ``None`` when nothing is promised: with
        ``train_size=1.0``, or when the coupling distances are not certified.
    target_eta_ : float
        The eta the noise was calibrated to: ``mip_bound_`` when there is a promise; otherwise
        a target that audits can test, not a guarantee.
    classes_ : ndarray
        Class labels (classifiers only).
    n_features_in_ : int
        Number of features seen during ``fit``.

    Notes
    -----
    **Coupling calibration** (``docs/coupling.md``). For a target ``x*`` couple the two
    training sets: ``D_out`` uniform among k-subsets without ``x*``, ``e`` uniform in it,
    ``D_in = D_out - e + x*``. Joint convexity of total variation bounds the Bayes-optimal
    attacker's advantage over the prior ``max(q, 1-q)``, ``q = k/n`` (Izzo et al.,
    Proposition 2) by ``min(q, 1-q) E[2 Phi(Delta/2s) - 1]``
    with ``Delta`` the whitened change ``||L^-1 (A(D_out) - A(D_in))||``; the wrapper
    estimates these expectations for every row of D, bounds them at ``confidence``
    (a betting confidence bound per row, a weighted union bound over rows;
    :func:`skmip.bounds.coupling_eta_upper`) and picks the smallest
    ``s`` that meets eta. The fits are carried to the exact minimiser of the estimator's
    objective (:func:`skmip.calibration.swap.polish_to_minimiser`) so that the closed-form swap
    distances describe exactly the released algorithm. With ``train_size=1.0`` the full D
    is unknown and halves of the given data stand in for it (as Algorithm 1 does for sigma);
    the noise law then depends on ``D_train``, outside the proof, hence no ``mip_bound_``.

    **Moments calibration.** Algorithm 1 and Corollary 10 of Izzo et al.: with
    ``||x||_{sigma,M} = (sum_i |x_i|^M / (d sigma_i^M))^(1/M)`` and ``sigma_i`` bounding the
    M-th central moment of coordinate i, noise with density ``exp(-||x||_{sigma,M}/c)``
    makes ``theta + X`` eta-MIP (Theorem 9). Two departures from the printed algorithm,
    each provably right where the print is not, with the printed variant kept:

    * the radius is Gamma(d, c) (``radius="gamma"``), not Laplace(c); see
      :func:`skmip.calibration.noise_laws.sample_mip_noise`;
    * by default sigma is measured over subsets of D of the training size
      (``sigma_from="dataset"``), which is the moment Theorem 9 bounds; Algorithm 1
      measures it over halves of D_train (``sigma_from="train"``), i.e. at half the
      training size and as a function of D_train itself.

    sigma is estimated, not known: the guarantee holds to the extent the estimate bounds
    the true moment (Algorithm 1 makes the same assumption). The noise is large -- see
    the docs page "How much noise MIP really needs".

    References
    ----------
    Izzo et al., "Provable Membership Inference Privacy": Definition 1, Theorem 3
    (post-processing), Theorem 9, Corollary 10, Algorithm 1.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skmip import MIPNoiseWrapper
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)
    >>> from skmip.calibration.routes import CouplingRoute
    >>> private = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, method=CouplingRoute(n_rounds=100)).fit(X, y)
    >>> private.method_, private.mip_bound_, bool(private.coupling_eta_upper_ <= 0.3)
    ('coupling', 0.3, True)
    """

    _renamed_parameters = {"n_splits": "n_subsets"}  # pickles of skmip 0.1

    def __init__(
        self,
        estimator,
        *,
        eta: float = 0.1,
        method: str = "auto",
        train_size: float = 0.5,
        params="auto",
        random_state=None,
        n_jobs: int | None = None,
        verbose: int = 0,
        synthesizer=DEPRECATED,
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
        self.eta = eta
        self.method = method
        self.train_size = train_size
        self.params = params
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.synthesizer = synthesizer
        self.confidence = confidence
        self.n_rounds = n_rounds
        self.noise_shape = noise_shape
        self.moment = moment
        self.n_subsets = n_subsets
        self.radius = radius
        self.sigma_from = sigma_from
        self.n_splits = n_splits

    # ------------------------------------------------------------------ validation
    def _validate_hyperparameters(self):
        """Check every parameter; return the calibration route ``method`` resolves to."""
        check_eta(_OWNER, self.eta)
        return validate_shared(self, _OWNER)

    # ------------------------------------------------------------------ fitting
    def fit(self, X: ArrayLike, y: ArrayLike | None = None, **fit_params):
        """Fit the estimator on a random subset of ``X`` and release it with MIP noise.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The dataset D. With ``train_size < 1`` a random ``D_train`` is drawn from it.
        y : array-like of shape (n_samples,), default=None
            Targets, for supervised estimators.
        **fit_params : dict
            Passed to every ``fit`` of the wrapped estimator.

        Returns
        -------
        self : MIPNoiseWrapper
            The fitted wrapper.

        Raises
        ------
        ValueError
            For an invalid hyper-parameter, NaN/inf in X, too few rows, a class missing
            from a subset, or parameter shapes that differ between subsets.
        TypeError
            If no parameter adapter understands the estimator.
        """
        route = self._validate_hyperparameters()
        if route.name == SYNTHETIC:
            fitted = fit_synthetic(self, route, X, y, fit_params, _OWNER)
            fitted["method_reason_"] = choose_route(self, route, _OWNER, None)[1]
        else:
            with single_threaded_blas(), _explain_missing_class(self):
                (fitted,) = _fit_path(self, route, X, y, [self.eta], fit_params)
        # Only now, with everything computed, replace any previous fitted state.
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)
        self.__dict__.update(fitted)
        return self



MIPNoiseWrapper.__doc__ = fill_parameters(MIPNoiseWrapper.__doc__)

@contextlib.contextmanager
def _explain_missing_class(wrapper):
    """Say, in the wrapper's terms, why a calibration subset lacking a class stops the fit."""
    try:
        yield
    except MissingClassError as exc:
        if wrapper.train_size == 1.0:
            fix = ("Pass more rows of each class: with train_size=1.0 the subsets are halves of "
                   "the data given to fit.")
        else:
            fix = ("Pass more rows of each class or a larger train_size (the subsets have the "
                   "size of D_train, round(train_size * n_samples) rows).")
        raise MissingClassError(
            f"{_OWNER}: the noise is calibrated over random subsets of {exc.subset_size} of the "
            f"{exc.n_samples} rows (train_size={wrapper.train_size}), and a classifier needs every "
            f"class in each; one lacked class(es) {exc.missing}. {fix} Detail: {exc}",
            missing=exc.missing, subset_size=exc.subset_size, n_samples=exc.n_samples,
        ) from None


def _fit_path(wrapper, route, X, y, etas, fit_params):
    """Fit once, noise once per eta: the shared body of ``fit`` and :func:`mip_noise_path`.

    ``wrapper``'s parameters are validated already and ``route`` is the calibration route
    they resolve to. Returns a list of attribute dicts (one per eta) so that the caller
    assigns fitted state only after everything succeeded: nothing is left half-fitted.
    """
    if route.name == SYNTHETIC:
        raise ValueError(
            f"{_OWNER}: method='synthetic' fits one model on synthetic records through "
            "MIPNoiseWrapper(...).fit; mip_noise_path noises parameters and does not take it."
        )
    for eta in etas:
        check_eta(_OWNER, eta)
    if route.name == NOISY_GRADIENT:
        check_noisy_gradient(wrapper, route, _OWNER)
    data, route, reason = _draw_training_set(wrapper, route, X, y, fit_params, etas)
    if route.name == NOISY_GRADIENT:
        results = fit_noisy_gradient_path(wrapper, route, data, etas, _OWNER)
        check_releases(_OWNER, results, data)  # reads the releases and D only (post-processing)
    else:
        results = _noise_path(wrapper, route, data, etas)
    for attrs in results:
        attrs["method_reason_"] = reason
    return results


def _noise_path(wrapper, route, data, etas):
    """The coupling and moments routes: the spread, the noise law, the fit, one noise per eta."""
    estimator = clone(wrapper.estimator if data.route is None else data.route.last)
    estimator = fix_inner_random_state(estimator, data.inner_seed)
    adapter = get_adapter(estimator, wrapper.params)
    classes = _classes_in_train(wrapper, data)
    spread = measure_spread(wrapper, route, estimator, adapter, data)
    law, polish, certified = noise_law(wrapper, route, estimator, adapter, data, spread,
                                       data.coverage.calibration_etas(etas))
    law = data.coverage.wrap(law)  # subsets lacking a class are paid for (skmip.defend._coverage)
    log(wrapper, f"fitting the estimator on D_train ({data.n_train} rows)")
    base, theta = fit_released_base(estimator, adapter, data, spread, polish, certified)
    results = release(adapter, data, spread, law, base, theta, etas, classes)
    # The un-noised vector must not outlive this call.
    del theta
    check_releases(_OWNER, results, data)  # reads the releases and D only (post-processing)
    return results


def _draw_training_set(wrapper, route, X, y, fit_params, etas):
    """Validate the data, fit a pipeline's transformers on D, draw ``D_train`` and the seeds.

    The draws come in a fixed order from one root generator: the learner's seed, the rows of
    ``D_train``, the calibration's two subset seeds, then one noise stream per eta. Before any
    draw, ``method="auto"`` chooses its route from the shape of D (:func:`choose_route`), a
    vacuous promise warns and a size the route cannot finish is refused. Returns the training
    set, the route and the reason it was taken.
    """
    X, y, probe = validate_input(wrapper, X, y, fit_params)
    n = n_rows(X)
    n_train = n_train_of(wrapper.train_size, n)
    # The noisy-gradient route measures nothing over subsets: it trains on any D_train.
    min_rows = 1 if route.name == NOISY_GRADIENT else 4
    if n_train < min_rows:
        raise ValueError(
            f"{_OWNER}: D_train would have {n_train} row(s) (train_size={wrapper.train_size} "
            f"of n_samples={n}); sigma is measured over half-subsets and needs at least "
            f"{min_rows} training rows. Pass more data or a larger train_size."
        )
    check_classes(wrapper, y)
    warn_if_vacuous(_OWNER, max(etas), n_train, n, stacklevel=5)

    check_privacy_seed(_OWNER, wrapper.random_state)
    given_subset = wrapper.train_size == 1.0
    pipeline = preprocessing_route(wrapper.estimator, route.name, wrapper.params)
    if given_subset:
        warn_no_promise_on_given_subset(
            _OWNER, "the noise scale and shape (sigma_, the swap distances, the designed or "
            "covariance shape, over halves of the data)"
            + (" and the pipeline's transformers" if pipeline is not None else ""),
        )
    rng = resolve_rng(wrapper.random_state)
    inner_seed = draw_seed(rng)
    transformers = None
    if pipeline is not None:
        # A pipeline's transformers are fitted on all of D before D_train is drawn: functions
        # of D, outside the attacker's signal (skmip.defend.preprocessing). From here on the
        # last step is calibrated exactly as a bare estimator on the transformed rows.
        pre_params, fit_params = pipeline.split_fit_params(_OWNER, fit_params)
        log(wrapper, f"fitting the pipeline's transformers on all {n} rows of D")
        with input_errors(_OWNER):
            transformers, Z = pipeline.fit_transform(X, y, pre_params, inner_seed)
        X, y, _ = _validate_arrays(_OWNER, pipeline.last, copy.copy(wrapper), Z, y, fit_params)
    n_features = X.shape[1] if len(getattr(X, "shape", ())) > 1 else 1
    # "auto" decides here, from the shape of D and eta, before D_train is drawn.
    shape = DataShape(n, n_features, n_train, _labels(wrapper, y), min(etas))
    route, reason = choose_route(wrapper, route, _OWNER, shape)
    check_cost(_OWNER, route, n, n_features, n_train, wrapper.estimator if pipeline is None else pipeline.last)
    # Decided from D before D_train is drawn: what subsets lacking a class cost (or a refusal),
    # and a learner that learns nothing from D is refused (a class of zero weight was refused
    # with the input, skmip.utils.validation.check_sample_weight).
    # Noisy gradients train on D's classes whichever rows are drawn: nothing to pay or refuse.
    coverage = ClassCoverage() if route.name == NOISY_GRADIENT else class_coverage(_OWNER, wrapper, route, y, n_train, etas)
    if route.name == NOISY_GRADIENT:
        check_fit_params(fit_params, pipeline, _OWNER)
    learner = fix_inner_random_state(clone(wrapper.estimator if pipeline is None else pipeline.last), inner_seed)
    check_learner_on_data(_OWNER, learner, X, y, fit_params)
    train_rows = np.sort(rng.choice(n, size=n_train, replace=False)) if n_train < n else None
    # The calibration's subset choices take learner-style seeds (per-round seeds keep
    # parallel runs reproducible; they pick row positions, never the noise). The noise
    # streams are spawned children of the root: full entropy, never an int seed (an int32
    # seed of the noise can be enumerated and the noise subtracted).
    sigma_seed = draw_seed(rng)
    coupling_seed = draw_seed(rng)
    noise_rngs = spawn_generators(rng, len(etas))
    return TrainingSet(
        X=X, y=y, probe=probe, fit_params=fit_params, n_train=n_train, given_subset=given_subset,
        route=pipeline, transformers=transformers, inner_seed=inner_seed, train_rows=train_rows,
        sigma_seed=sigma_seed, coupling_seed=coupling_seed, noise_rngs=noise_rngs, coverage=coverage,
    ), route, reason


def search_route(search, route, owner, X, y, etas):
    """``(route, reason)`` for a search over ``etas`` (:class:`~skmip.defend.MIPNoiseWrapperCV`):
    ``"auto"`` decides once, from the D given to the search (the refit's D) at the smallest eta,
    and every fold and the refit take that route. A pipeline's width is read after its
    transformers are fitted on that D (a function of D only)."""
    if not (isinstance(search.method, str) and search.method == "auto"):
        return choose_route(search, route, owner, None)
    n = n_rows(X)
    width = X.shape[1]
    if preprocessing_route(search.estimator, route.name, search.params) is not None:
        with input_errors(owner):
            width = clone(search.estimator[:-1]).fit_transform(X, y).shape[1]
    shape = DataShape(n, width, n_train_of(search.train_size, n), _labels(search, y), float(min(etas)))
    return choose_route(search, route, owner, shape)


def _labels(wrapper, y):
    """D's labels for a classifier (what ``"auto"`` may read), else ``None``."""
    return np.unique(y) if is_classifier(wrapper.estimator) and y is not None else None


def choose_route(wrapper, route, owner, shape):
    """``(route, reason)``: ``route`` as given, or, for ``method="auto"``, the route chosen from
    the shape of D (:func:`skmip.calibration.routes.auto_route`) before D_train is drawn.

    A route ``"auto"`` keeps is returned as resolved (with the knobs forwarded into it); one it
    changes to is built with its defaults and validated.
    """
    if not (isinstance(wrapper.method, str) and wrapper.method == "auto"):
        given = repr(wrapper.method) if isinstance(wrapper.method, str) else f"{type(wrapper.method).__name__}(...)"
        return route, f"method={given} was given"
    if shape is None:
        return route, auto_route(wrapper.estimator, wrapper.params)[1]
    chosen, reason = auto_route(wrapper.estimator, wrapper.params, shape)
    if chosen.name == route.name:
        return route, reason
    return chosen.validate(owner), reason


def _classes_in_train(wrapper, data):
    """A classifier's classes, all of which the random ``D_train`` must hold (else a refusal in
    one wording, which the promise accounts for: :mod:`skmip.defend._coverage`)."""
    if not is_classifier(wrapper):
        return None
    classes = np.unique(data.y)
    data.coverage.check_subset(data.y_train, classes)
    return classes


def mip_noise_path(estimator, X, y=None, *, etas, fit_params=None, **wrapper_params):
    """Fitted :class:`MIPNoiseWrapper` objects for many eta, sharing one sigma estimation.

    The spread estimation and the fit on ``D_train`` are done once; each eta gets its own
    independent noise draw. Use it for privacy-utility curves.

    Parameters
    ----------
    estimator : estimator instance
        The learner to privatise.
    X, y : array-like
        The dataset D (and targets).
    etas : sequence of float
        MIP levels, each in (0, 0.5].
    fit_params : dict, default=None
        Passed to every ``fit`` of the estimator.
    **wrapper_params
        Any other :class:`MIPNoiseWrapper` parameter (``method``, ``train_size``,
        ``random_state``, ...).

    Returns
    -------
    list of MIPNoiseWrapper
        ``wrappers[i]`` is fitted with ``eta=etas[i]``.

    Notes
    -----
    All wrappers share one ``D_train``. Releasing several of them is releasing several
    noisy views of one model: their guarantees do not hold jointly. Publish one.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.linear_model import LogisticRegression
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> from skmip.calibration.routes import MomentsRoute
    >>> path = mip_noise_path(LogisticRegression(), (X - X.mean(0)) / X.std(0), y, etas=[0.1, 0.5],
    ...                       method=MomentsRoute(n_subsets=4))
    >>> [w.mip_bound_ for w in path]
    [0.1, 0.5]
    """
    etas = list(etas)
    if not etas:
        raise ValueError("mip_noise_path: etas must contain at least one value in (0, 0.5].")
    template = MIPNoiseWrapper(estimator, **wrapper_params)
    route = template._validate_hyperparameters()
    with single_threaded_blas(), _explain_missing_class(template):
        fitted = _fit_path(template, route, X, y, etas, fit_params or {})
    wrappers = []
    for eta, attrs in zip(etas, fitted):
        w = clone(template).set_params(eta=eta)
        w.__dict__.update(attrs)
        wrappers.append(w)
    return wrappers
