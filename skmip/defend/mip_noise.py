"""MIPNoiseWrapper: eta-membership-inference privacy for any estimator, by noise.

Izzo et al., Algorithm 1 with the noise of Corollary 10 (``method="moments"``), or Gaussian
noise calibrated by the coupling bound on the swap sensitivity (``method="coupling"``).
"""

from __future__ import annotations

import contextlib
import copy
import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils.validation import check_array, check_consistent_length, validate_data

from skmip.utils.rng import draw_seed, fix_inner_random_state, resolve_rng, spawn_generators
from skmip.utils.rows import fit_on_rows, n_rows, subset_fit_params
from skmip.utils.threads import single_threaded_blas
from skmip.utils.validation import (
    check_eta,
    check_int,
    check_interval,
    check_class_labels,
    check_magnitude,
    check_moment,
    check_n_jobs,
    check_option,
    check_sample_weight,
    input_errors,
)
from skmip.exceptions import (
    MissingClassError,
    PrivacyWarning,
    check_privacy_seed,
    warn_no_promise_on_given_subset,
)
from skmip.params import get_adapter
from skmip.promise import MIPPromiseMixin
from skmip.calibration.swap import get_smooth_loss
from skmip.defend._delegate import ReleasedModelMixin
from skmip.defend._preprocessing import preprocessing_route
from skmip.defend.synthetic_route import SYNTHETIC, fit_synthetic
from skmip.defend._noise_method import (
    METHODS,
    CouplingNoise,
    MomentsNoise,
    outlying_records,
    resolve_method,
)

__all__ = ["MIPNoiseWrapper", "mip_noise_path"]

_OWNER = "MIPNoiseWrapper"
_NOISE_SHAPES = ("auto", "design", "full", "diagonal")


class MIPNoiseWrapper(MIPPromiseMixin, ReleasedModelMixin, MetaEstimatorMixin, BaseEstimator):
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

    Parameters
    ----------
    estimator : estimator instance
        The learner to privatise. Its fitted parameters must be continuous and readable by
        a parameter adapter (:mod:`skmip.params`). It must be deterministic given its
        data: a ``random_state`` parameter that is not an integer is set to one integer
        drawn once per ``fit`` and shared by every split fit and the final fit.
    eta : float, default=0.1
        Promised bound on the attacker's accuracy advantage over the prior
        ``max(k/n, 1-k/n)`` (Definition 1), in (0, 0.5].
    moment : float, default=2
        Order M >= 2 of the central moment that measures the parameters' spread
        (Corollary 10). Larger M needs less noise (the constant is
        ``(6.16/eta)**(1 + 2/M)``) but a heavier-tailed estimate of the spread.
    n_splits : int, default=128
        Number of random subsets B over which the spread ``sigma_`` (and, for the coupling
        calibration with ``noise_shape="full"``, the covariance of the fit) is estimated.
    train_size : float, default=0.5
        Fraction of the rows of ``D`` drawn uniformly at random into ``D_train``
        (``k = round(train_size * n)``). ``1.0`` means the caller already drew the data it
        passes at random from a larger dataset (as the membership game does): all rows are
        used and the noise is calibrated on halves of them (Algorithm 1). That noise law is
        then a function of ``D_train``, which Definition 1 does not cover, so this mode
        **promises nothing**: ``mip_bound_`` is ``None`` and ``fit`` emits a
        :class:`~skmip.exceptions.PrivacyWarning`. It remains the way to audit the
        calibration in the membership game (``target_eta_``).
    method : {"auto", "coupling", "moments", "synthetic"}, default="auto"
        How eta is turned into noise. ``"coupling"``: Gaussian noise ``s L z`` with ``L`` the
        noise shape and ``s`` the smallest scale whose coupling bound
        (:func:`skmip.bounds.coupling_noise_scale`) meets eta at ``confidence``; needs swap
        distances (:func:`skmip.calibration.swap.estimate_swap_deltas`), computed without refits
        for estimators with a registered smooth loss and by refits (slow) otherwise.
        ``"moments"``: Corollary 10. ``"auto"``: ``"coupling"`` when a smooth loss is
        registered for the estimator and ``params="auto"``; ``"synthetic"`` when no
        parameter adapter reads the estimator (trees, forests, boosting, k-NN, pipelines
        ending in one); else ``"moments"`` with a
        :class:`~skmip.exceptions.PrivacyWarning` that quotes Corollary 10's measured
        utility and names the better routes. ``"synthetic"``: no noise on the model; it is
        trained on records drawn from an eta-MIP synthesizer of the table ``(X, y)``
        (:class:`~skmip.release.tabular.MIPTabularSynthesizer`, fitted with this eta, train size
        and randomness) and keeps its promise by post-processing (Theorem 3). ``X`` may
        then be a DataFrame with string, categorical and missing values; the estimator (or
        its pipeline) must accept what the synthesizer returns (a DataFrame of the same
        columns). docs/pipelines.md ("Any estimator: training on MIP synthetic data").
    confidence : float or None, default=0.95
        Coupling calibration: probability that the estimated swap distances do not
        understate the bound (a betting confidence bound per row, Waudby-Smith & Ramdas,
        with a union bound over all rows; :func:`skmip.bounds.coupling_eta_upper`). ``None``
        calibrates the point estimate and warns: the stated eta is then an estimate.
    n_rounds : int, default=400
        Coupling calibration: independent rounds of swap distances (each costs two fits of
        the estimator, by warm-started Newton steps, plus arithmetic linear in n). Fewer
        rounds widen the confidence term of the betting bound, about
        ``ln(6n/alpha) / (1.9 n_rounds)`` when the draws vary little; an eta below it raises
        an error saying how many rounds it needs. On ``load_breast_cancer`` at eta = 0.1, 400
        rounds cost 1.18x the point estimate's noise and 1000 rounds 1.07x
        (docs/coupling.md, "Cost and scaling").
    noise_shape : {"auto", "design", "full", "diagonal"}, default="auto"
        Coupling calibration: the shape of the Gaussian noise, fixed given D (any such
        shape is private; the shape decides the utility). ``"design"``: the shape that
        minimises the predicted excess loss of the release when every record's predicted
        swap distance is held to one bound, from one fit on all of D
        (:func:`skmip.calibration.swap.design_noise_factor`; needs a registered smooth loss;
        memory O(n d + d^2)); ``"full"``: the Cholesky factor of the (shrunk) covariance of
        the fit over random subsets of D (:func:`skmip.calibration.swap.estimate_noise_factor`);
        ``"diagonal"``: ``sigma_`` per coordinate (memory O(d)). ``"auto"``: ``"design"``
        where a smooth loss is registered, else ``"full"``. At eta = 0.1 the design keeps
        0.842 test accuracy on the full adult data against 0.822 for ``"full"``, where a few
        records of rare categories set the covariance shape's noise (0.935 against 0.923 on
        breast cancer; docs/coupling.md, "Noise shape designed for utility").
    radius : {"gamma", "laplace"}, default="gamma"
        Moments calibration: law of the noise radius. ``"gamma"`` gives exactly the density
        ``exp(-||x||_{sigma,M} / c)`` that Theorem 9 assumes; ``"laplace"`` is Corollary 10
        / Algorithm 1 as printed, which does not have that density for d > 1 and is kept
        only to reproduce the paper (it emits a :class:`~skmip.exceptions.PrivacyWarning`).
    sigma_from : {"dataset", "train"}, default="dataset"
        Where the spread is measured. ``"dataset"``: over random subsets of ``D`` of the
        size of ``D_train`` -- exactly the law of the fitted parameters that Theorem 9's
        moment bound is about, and a function of ``D`` only, so the noise law does not
        depend on which rows were drawn. ``"train"``: over random halves of ``D_train``, as
        Algorithm 1 prints it. With ``train_size=1.0`` both mean halves of the given data.
    params : "auto", list of str or ParamAdapter, default="auto"
        Which fitted parameters are noised; see :func:`skmip.params.get_adapter`.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of every random draw (subsets, inner seed, noise). ``None`` draws fresh OS
        entropy, the only setting under which the noise is secret; a fixed value makes
        results reproducible and emits a :class:`~skmip.exceptions.PrivacyWarning`.
    n_jobs : int, default=None
        Parallel split fits through joblib (``None`` means 1 unless in a joblib context).
    verbose : int, default=0
        Print progress when > 0.
    synthesizer : MIPTabularSynthesizer or None, default=None
        ``method_ == "synthetic"``: an unfitted :class:`~skmip.release.tabular.MIPTabularSynthesizer`
        whose ``n_bins``, ``bins`` and ``categories`` set the columns' domains (user-given
        domains say nothing about D); its ``eta``, ``train_size`` and ``random_state`` are
        replaced by the wrapper's. ``None``: its defaults (domains computed from D).

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
        The route taken: ``"coupling"``, ``"moments"`` or ``"synthetic"``.
    synthesizer_ : MIPTabularSynthesizer
        ``method_ == "synthetic"``: the fitted synthesizer whose samples trained
        ``estimator_`` (itself eta-MIP: its tables are the release; ``domains_`` shows the
        domains used).
    noise_constant_ : float
        Moments calibration: ``c = (6.16/eta)**(1 + 2/M)`` (Corollary 10).
    noise_scale_ : float
        Coupling calibration: the scale ``s`` of the Gaussian noise, in units of the shape.
        ``method_ == "synthetic"``: the synthesizer's noise on each cell fraction.
    noise_scale_point_ : float
        Coupling calibration: the scale the point estimate alone would need; the ratio
        ``noise_scale_ / noise_scale_point_`` is the price of the confidence statement.
    coupling_eta_upper_ : float or None
        Coupling calibration: the upper confidence bound on the MIP level at
        ``noise_scale_`` (at most eta); ``None`` with ``confidence=None``, or when the swap
        distances are estimates rather than certified bounds (``coupling_certified_``).
    coupling_certified_ : bool
        Coupling calibration: True when every swap distance is exact or a proven upper bound
        (the ``"newton"`` engine's certificate for the generalised-linear losses that declare a
        self-concordance constant: logistic, least squares, Poisson/Gamma/Tweedie;
        docs/coupling.md, "Certified distances"). False for the multinomial and squared-hinge
        losses: the eta is then an estimate, and none is promised.
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
    >>> private = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.3, n_splits=64,
    ...                           n_rounds=100).fit(X, y)
    >>> private.method_, private.mip_bound_, bool(private.coupling_eta_upper_ <= 0.3)
    ('coupling', 0.3, True)
    """

    def __init__(
        self,
        estimator,
        *,
        eta: float = 0.1,
        moment: float = 2,
        n_splits: int = 128,
        train_size: float = 0.5,
        method: str = "auto",
        confidence: float | None = 0.95,
        n_rounds: int = 400,
        noise_shape: str = "auto",
        radius: str = "gamma",
        sigma_from: str = "dataset",
        params="auto",
        random_state=None,
        n_jobs: int | None = None,
        verbose: int = 0,
        synthesizer=None,
    ):
        self.estimator = estimator
        self.eta = eta
        self.moment = moment
        self.n_splits = n_splits
        self.train_size = train_size
        self.method = method
        self.confidence = confidence
        self.n_rounds = n_rounds
        self.noise_shape = noise_shape
        self.radius = radius
        self.sigma_from = sigma_from
        self.params = params
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.synthesizer = synthesizer

    # ------------------------------------------------------------------ validation
    def _validate_hyperparameters(self):
        check_eta(_OWNER, self.eta)
        validate_calibration_params(self, _OWNER, methods=METHODS + (SYNTHETIC,))

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
        self._validate_hyperparameters()
        if resolve_method(self.method, self.estimator, self.params) == SYNTHETIC:
            fitted = fit_synthetic(self, X, y, fit_params, _OWNER)
        else:
            with single_threaded_blas(), _explain_missing_class(self):
                (fitted,) = _fit_path(self, X, y, [self.eta], fit_params)
        # Only now, with everything computed, replace any previous fitted state.
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)
        self.__dict__.update(fitted)
        return self


def validate_calibration_params(obj, owner, methods=METHODS):
    """Check every calibration parameter of ``obj`` but eta (shared with MIPNoiseWrapperCV).

    ``owner`` names the class in the error messages; ``methods`` are the allowed ``method``.
    """
    check_moment(owner, obj.moment)
    check_int(
        owner, "n_splits", obj.n_splits, 2, None,
        why="sigma is a spread over random subsets and needs at least 2 of them; "
        "the paper uses 128.",
    )
    check_interval(
        owner, "train_size", obj.train_size, 0, 1, closed="right",
        why="it is the fraction of rows drawn into D_train; use 0.5 for Definition 1 "
        "with k = n/2, or 1.0 if your data already is the random training half.",
    )
    check_option(owner, "method", obj.method, methods)
    if obj.confidence is not None:
        check_interval(
            owner, "confidence", obj.confidence, 0, 1, closed="neither",
            why="it is the probability that the coupling bound's estimate holds; 0.95 is "
            "the default, None calibrates the point estimate (not a guarantee).",
        )
    check_int(
        owner, "n_rounds", obj.n_rounds, 2, None,
        why="each round draws one swap distance per row for the coupling calibration.",
    )
    check_option(owner, "noise_shape", obj.noise_shape, _NOISE_SHAPES)
    check_option(owner, "radius", obj.radius, ("gamma", "laplace"))
    check_option(owner, "sigma_from", obj.sigma_from, ("dataset", "train"))
    check_n_jobs(owner, obj.n_jobs)


def _resolve_shape(noise_shape, method, smooth):
    """The coupling noise shape: ``"auto"`` is the design where a smooth loss is registered,
    else the covariance over subsets; the moments calibration has its own (``sigma``)."""
    if method != "coupling":
        return "diagonal"
    if noise_shape == "auto":
        return "design" if smooth else "full"
    if noise_shape == "design" and not smooth:
        raise ValueError(
            f"{_OWNER}: noise_shape='design' needs a smooth loss registered for the estimator "
            "(skmip.calibration.swap.register_smooth_loss) to predict each record's influence; use "
            "noise_shape='full' or 'auto'."
        )
    return noise_shape


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


def _log(wrapper, message):
    if wrapper.verbose:
        print(f"[{_OWNER}] {message}", flush=True)


def validate_input(wrapper, X, y, fit_params=None):
    """Validate ``X`` (and ``y``, and ``fit_params["sample_weight"]``) as the wrapped estimator
    accepts them, with values whose squares sum without overflow (:func:`check_magnitude`).

    Returns ``(X, y, probe)``: ``probe`` is a shallow copy of ``wrapper`` on which
    ``validate_data`` recorded ``n_features_in_`` (and ``feature_names_in_``), because nothing
    may be recorded on the wrapper itself before the whole fit succeeded.

    A pipeline on the route of :func:`~skmip.defend._preprocessing.preprocessing_route`
    gets ``X`` as the user passed it (a DataFrame with string or categorical columns for its
    own ``ColumnTransformer``, say): only its width and column names are recorded here, and
    the transformed rows are validated as numbers once its transformers have made them.
    """
    owner = type(wrapper).__name__
    route = preprocessing_route(wrapper.estimator, wrapper.method, wrapper.params)
    if route is None:
        return _validate_arrays(owner, wrapper.estimator, copy.copy(wrapper), X, y, fit_params)
    probe = copy.copy(wrapper)
    with input_errors(owner):
        if hasattr(X, "columns"):  # a DataFrame goes to the pipeline as it is (columns by name)
            validate_data(probe, X, reset=True, skip_check_array=True)
        else:  # other array-likes become arrays of any dtype; the transformed rows are checked
            X = validate_data(probe, X, reset=True, dtype=None, ensure_all_finite=False,
                              accept_sparse=["csr", "csc"])
        if y is not None:
            y = check_array(y, ensure_2d=False, dtype=None, ensure_all_finite=True)
            check_consistent_length(X, y)
    _, last_params = route.split_fit_params(owner, fit_params or {})
    check_sample_weight(owner, last_params, n_rows(X))
    return X, y, probe


def _validate_arrays(owner, estimator, probe, X, y, fit_params):
    """``validate_data`` with the input tags of ``estimator``; see :func:`validate_input`."""
    inner_tags = get_tags(estimator)
    supervised = inner_tags.target_tags.required or y is not None
    accept_sparse = ["csr", "csc"] if inner_tags.input_tags.sparse else False
    dtype = None if (inner_tags.input_tags.string or inner_tags.input_tags.categorical) else "numeric"
    with input_errors(owner):
        if supervised:
            X, y = validate_data(
                probe, X, y, reset=True, accept_sparse=accept_sparse, ensure_all_finite=True,
                dtype=dtype, multi_output=True,
            )
        else:
            X = validate_data(
                probe, X, reset=True, accept_sparse=accept_sparse, ensure_all_finite=True,
                dtype=dtype,
            )
    check_magnitude(owner, X)
    check_sample_weight(owner, fit_params or {}, X.shape[0])
    return X, y, probe


def check_classes(wrapper, y):
    """A classifier wrapper's targets: valid class labels, at least two of them."""
    if is_classifier(wrapper):
        check_class_labels(type(wrapper).__name__, y)


def _fit_path(wrapper, X, y, etas, fit_params):
    """Fit once, noise once per eta: the shared body of ``fit`` and :func:`mip_noise_path`.

    Returns a list of attribute dicts (one per eta) so that the caller assigns fitted state
    only after everything succeeded: nothing is left half-fitted.
    """
    from skmip.calibration.spread.moments import estimate_sigma

    wrapper._validate_hyperparameters()
    if wrapper.method == SYNTHETIC:
        raise ValueError(
            f"{_OWNER}: method='synthetic' fits one model on synthetic records through "
            "MIPNoiseWrapper(...).fit; mip_noise_path noises parameters and does not take it."
        )
    for eta in etas:
        check_eta(_OWNER, eta)
    X, y, probe = validate_input(wrapper, X, y, fit_params)
    n = n_rows(X)
    n_train = n if wrapper.train_size == 1.0 else int(round(wrapper.train_size * n))
    min_rows = 4
    if n_train < min_rows:
        raise ValueError(
            f"{_OWNER}: D_train would have {n_train} row(s) (train_size={wrapper.train_size} "
            f"of n_samples={n}); sigma is measured over half-subsets and needs at least "
            f"{min_rows} training rows. Pass more data or a larger train_size."
        )
    check_classes(wrapper, y)

    check_privacy_seed(_OWNER, wrapper.random_state)
    given_subset = wrapper.train_size == 1.0
    route = preprocessing_route(wrapper.estimator, wrapper.method, wrapper.params)
    if given_subset:
        warn_no_promise_on_given_subset(
            _OWNER, "the noise scale and shape (sigma_, the swap distances, the designed or "
            "covariance shape, over halves of the data)"
            + (" and the pipeline's transformers" if route is not None else ""),
        )
    rng = resolve_rng(wrapper.random_state)
    inner_seed = draw_seed(rng)
    transformers = None
    if route is not None:
        # A pipeline's transformers are fitted on all of D before D_train is drawn: functions
        # of D, outside the attacker's signal (skmip.defend._preprocessing). From here on the
        # last step is calibrated exactly as a bare estimator on the transformed rows.
        pre_params, fit_params = route.split_fit_params(_OWNER, fit_params)
        _log(wrapper, f"fitting the pipeline's transformers on all {n} rows of D")
        with input_errors(_OWNER):
            transformers, Z = route.fit_transform(X, y, pre_params, inner_seed)
        X, y, _ = _validate_arrays(_OWNER, route.last, copy.copy(wrapper), Z, y, fit_params)
    train_rows = np.sort(rng.choice(n, size=n_train, replace=False)) if n_train < n else None
    # The calibration's subset choices take learner-style seeds (per-round seeds keep
    # parallel runs reproducible; they pick row positions, never the noise). The noise
    # streams are spawned children of the root: full entropy, never an int seed (an int32
    # seed of the noise can be enumerated and the noise subtracted).
    sigma_seed = draw_seed(rng)
    coupling_seed = draw_seed(rng)
    noise_rngs = spawn_generators(rng, len(etas))

    estimator = fix_inner_random_state(clone(wrapper.estimator if route is None else route.last), inner_seed)
    adapter = get_adapter(estimator, wrapper.params)

    def rows_of_train():
        return X if train_rows is None else _safe_indexing(X, train_rows)

    # X's D_train rows are copied only when needed (after the calibration, by default): at
    # large n the copy would sit beside the calibration's own memory for nothing.
    X_train = None
    y_train = None if y is None else (y if train_rows is None else _safe_indexing(y, train_rows))
    classes = None
    if is_classifier(wrapper):
        classes = np.unique(y)
        missing = np.setdiff1d(classes, np.unique(y_train))
        if missing.size:
            raise ValueError(
                f"{_OWNER}: the random D_train of {n_train} rows misses class(es) "
                f"{missing.tolist()}, so the released model could not predict them. Pass more "
                "rows of each class or a larger train_size."
            )

    # sigma: over subsets of D of the training size (Theorem 9's law) or halves of D_train.
    if wrapper.sigma_from == "dataset" and train_rows is not None:
        sigma_X, sigma_y, split_size = X, y, n_train
    else:
        X_train = rows_of_train()
        sigma_X, sigma_y, split_size = X_train, y_train, n_train // 2
    sigma_fit_params = fit_params if sigma_X is X else subset_fit_params(fit_params, train_rows, n)
    method = resolve_method(wrapper.method, estimator, wrapper.params)
    if wrapper.method == "auto" and method == "moments":
        # Figures from docs/coupling.md (the utility table; LogisticRegression, 128 subsets).
        warnings.warn(
            f"{_OWNER}: method='auto' releases this {type(estimator).__name__} with Corollary "
            "10's noise (method_='moments'), because the coupling calibration needs a smooth "
            "loss registered for the estimator and params='auto'. That noise has a radius scale "
            "of 3,795 sigma at eta=0.1 (M=2), and docs/coupling.md measures what it leaves of "
            "a logistic regression: near coin-flip utility, 0.45-0.63 test accuracy on breast "
            "cancer at eta=0.1 against 0.95 without noise, chance (0.07-0.13) on digits. "
            "Better routes: SubsampledDPClassifier for any classifier; "
            "skmip.nn.DPNeuralNetClassifier (DP-SGD, or privacy='gmip' for mu-GMIP) for neural "
            "networks; or a private head, a LogisticRegression, Ridge or LinearRegression (which "
            "get the coupling calibration) on features that do not depend on the private data. "
            "Pass method='moments' to choose Corollary 10 knowingly and silence this warning.",
            PrivacyWarning, stacklevel=3,
        )
    # The coupling engines analyse the exact minimiser of a registered smooth loss; the noise
    # shape is then measured on that same learner (its fits by warm-started Newton steps).
    smooth = method == "coupling" and get_smooth_loss(estimator) is not None
    shape = _resolve_shape(wrapper.noise_shape, method, smooth)
    shares = None  # the confidence statement's alpha, spent evenly over the records
    if shape == "design":
        from skmip.calibration.swap import design_noise_factor

        _log(wrapper, f"designing the noise shape from one fit on {n_rows(sigma_X)} rows")
        # The design's predicted exposures also say where to spend alpha (a function of D,
        # fixed before the rounds draw anything): design_target_shares.
        scale, shares = design_noise_factor(
            estimator, sigma_X, sigma_y, train_size=split_size, params=adapter,
            random_state=sigma_seed, fit_params=sigma_fit_params, return_shares=True,
        )
        sigma = np.sqrt(np.sum(scale**2, axis=1))
    elif shape == "full":
        _log(wrapper, f"measuring the spread over {wrapper.n_splits} subsets of {split_size} rows")
        from skmip.calibration.swap import estimate_noise_factor

        # Gaussian noise shaped like the fit's own covariance over random subsets of D.
        scale = estimate_noise_factor(
            estimator, sigma_X, sigma_y, train_size=split_size, n_subsets=wrapper.n_splits,
            params=adapter, random_state=sigma_seed, n_jobs=wrapper.n_jobs,
            fit_params=sigma_fit_params, polish=smooth,
        )
        sigma = np.sqrt(np.sum(scale**2, axis=1))
    else:
        _log(wrapper, f"measuring the spread over {wrapper.n_splits} subsets of {split_size} rows")
        sigma = scale = estimate_sigma(
            estimator, sigma_X, sigma_y, n_splits=wrapper.n_splits, moment=wrapper.moment,
            params=adapter, split_size=split_size, random_state=sigma_seed,
            n_jobs=wrapper.n_jobs, verbose=max(0, wrapper.verbose - 1), fit_params=sigma_fit_params,
        )

    if np.all(sigma == 0):
        raise ValueError(
            f"{_OWNER}: none of the {sigma.size} parameters varied over the random subsets of "
            f"{split_size} rows (sigma = 0 everywhere): the {type(estimator).__name__} fit did not "
            "depend on the data, so releasing it would release its starting point, not a model. "
            "A solver that stops at once does this, e.g. LogisticRegression on features of huge "
            "magnitude: standardize X, check that the estimator converges on D, or raise n_splits."
        )
    if np.any(sigma == 0):
        warnings.warn(
            f"{_OWNER}: {int(np.sum(sigma == 0))} of {sigma.size} parameters did not vary over "
            f"the {wrapper.n_splits} subsets (sigma = 0) and are released without noise. That "
            "is safe only if they truly never depend on the data; raise n_splits or exclude "
            "them with params=[...].",
            PrivacyWarning, stacklevel=4,
        )

    if method == "coupling":
        from skmip.calibration.swap import estimate_swap_deltas

        _log(wrapper, f"coupling calibration: {wrapper.n_rounds} rounds of swap distances")
        # The same data and subset size as sigma: D with k = n_train (Definition 1), or,
        # when only D_train is known, halves of it.
        deltas = estimate_swap_deltas(
            estimator, sigma_X, sigma_y, scale=scale, n_rounds=wrapper.n_rounds,
            train_size=split_size, polish=True, params=adapter, random_state=coupling_seed,
            n_jobs=wrapper.n_jobs, verbose=wrapper.verbose, fit_params=sigma_fit_params,
        )
        if wrapper.confidence is None and not deltas.exhaustive:
            warnings.warn(
                f"{_OWNER}: confidence=None calibrates the noise to a point estimate from "
                "random draws; the eta it states is then an estimate, not a guarantee.",
                PrivacyWarning, stacklevel=4,
            )
        outliers = outlying_records(deltas.distances)
        if outliers is not None:
            warnings.warn(
                f"{_OWNER}: the coupling noise is set by {outliers[0]} record(s) of D whose swaps "
                f"move the fit up to {outliers[1]:.0f} times more than the 99th-percentile "
                "record's. eta-MIP protects every record, so these decide the noise for all. "
                "Scaling features to a bounded range (e.g. MinMaxScaler fitted on D or on known "
                "bounds) or clipping outlying values usually cuts the noise many times (docs: "
                "'Bound your features').",
                UserWarning, stacklevel=4,
            )
        if not deltas.certified:
            warnings.warn(
                f"{_OWNER}: the swap distances of engine {deltas.engine!r} for "
                f"{type(estimator).__name__} are estimates, not proven upper bounds (docs: "
                "'Certified distances'), so no eta is promised: mip_bound_ and "
                "coupling_eta_upper_ are None and coupling_eta_point_ is an estimate.",
                PrivacyWarning, stacklevel=4,
            )
        noise_law = CouplingNoise(wrapper, scale, deltas, shares, etas)
        polish, certified = deltas.polished, deltas.certified
        del deltas, shares  # per-row sensitivities of private rows: never kept
    else:
        noise_law, polish, certified = MomentsNoise(wrapper, sigma), False, False

    _log(wrapper, f"fitting the estimator on D_train ({n_train} rows)")
    if X_train is None:
        X_train = rows_of_train()
    base = fit_on_rows(estimator, X, y, train_rows, fit_params)
    if polish:
        # The swap distances describe the exact minimiser of the objective: release it.
        from skmip.calibration.swap import polish_to_minimiser

        train_params = subset_fit_params(fit_params, train_rows, n) if train_rows is not None else fit_params
        polish_to_minimiser(base, X_train, y_train, sample_weight=train_params.get("sample_weight"),
                            params=adapter)
        if certified:
            from skmip.calibration.swap.certify import check_release

            check_release(base, X_train, y_train, train_params.get("sample_weight"), scale)
    adapter.canonicalize(base)
    theta = adapter.get_vector(base)
    if theta.shape != sigma.shape:
        raise ValueError(
            f"{_OWNER}: the model fitted on D_train has {theta.size} parameters but the split "
            f"fits had {sigma.size}. The parameterisation must not depend on the data; pass "
            "params=[...] naming fixed-size attributes."
        )

    results = []
    for i, (eta, noise_rng) in enumerate(zip(etas, noise_rngs)):
        noise, noise_attrs = noise_law.draw(eta, noise_rng)
        released = base if i == len(etas) - 1 else copy.deepcopy(base)
        adapter.set_vector(released, theta + noise)
        adapter.project(released)
        adapter.scrub(released)
        attrs = {
            "estimator_": released if route is None else route.release(transformers, released),
            "sigma_": sigma,
            "method_": method,
            **noise_attrs,
            "n_train_": n_train,
            # Definition 1 covers a noise law fixed given D; with train_size=1.0 it is a
            # function of D_train and nothing is promised (warn_no_promise_on_given_subset);
            # nor is anything where the coupling distances are estimates, not bounds.
            "mip_bound_": None if given_subset or (method == "coupling" and not noise_attrs["coupling_certified_"])
            else float(eta),
            "target_eta_": float(eta),
            "n_features_in_": probe.n_features_in_,
        }
        if hasattr(probe, "feature_names_in_"):
            attrs["feature_names_in_"] = probe.feature_names_in_
        if classes is not None:
            attrs["classes_"] = getattr(released, "classes_", classes)
        results.append(attrs)
    # The un-noised vector must not outlive this call.
    del theta
    return results


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
        Any other :class:`MIPNoiseWrapper` parameter (``moment``, ``n_splits``,
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
    >>> path = mip_noise_path(LogisticRegression(), (X - X.mean(0)) / X.std(0), y, etas=[0.1, 0.5],
    ...                       method="moments", n_splits=4)
    >>> [w.mip_bound_ for w in path]
    [0.1, 0.5]
    """
    etas = list(etas)
    if not etas:
        raise ValueError("mip_noise_path: etas must contain at least one value in (0, 0.5].")
    template = MIPNoiseWrapper(estimator, **wrapper_params)
    with single_threaded_blas(), _explain_missing_class(template):
        fitted = _fit_path(template, X, y, etas, fit_params or {})
    wrappers = []
    for eta, attrs in zip(etas, fitted):
        w = clone(template).set_params(eta=eta)
        w.__dict__.update(attrs)
        wrappers.append(w)
    return wrappers
