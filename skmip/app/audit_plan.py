"""What one ``skmip`` run audits: the estimators, the defenses that apply to each, and why the others do not.

An estimator is named by an alias (``logreg``, ``mlp``), by an import path with parameters
as scikit-learn prints them (``sklearn.ensemble.HistGradientBoostingClassifier(max_iter=200)``,
or the path and ``--param max_iter=200``), or given as a pickled unfitted estimator or
Pipeline. For each, :func:`plan_rows` lists the rows of the audit: the baseline (always) and
every requested defense that applies, and names each defense that does not with the reason:

``mip``
    :class:`~skmip.MIPNoiseWrapper` noises the fitted parameters, so it needs a parameter
    adapter (:func:`skmip.params.get_adapter`): linear models, MLPs, skorch nets, pipelines
    of those, or a pipeline whose last step the coupling calibration covers (its transformers,
    a ``OneHotEncoder`` included, are fitted on D; docs/pipelines.md). Trees, forests,
    boosting and k-NN have no continuous parameters to noise.
``subsampled-dp``
    :class:`~skmip.SubsampledDPClassifier` runs a differentially private learner on a
    Poisson subsample (Thudi et al., Theorem 3.3): it needs a DP learner, an estimator with
    an ``epsilon`` parameter. ``logreg`` uses skmip's DP logistic regression, ``mlp`` the
    DP-SGD net.
``dp-sgd``, ``gmip``
    Noisy SGD (:class:`skmip.nn.DPNeuralNetClassifier`): clipped, noised gradient steps of a
    torch network, calibrated to (epsilon, delta)-DP (Abadi et al.) or to mu-GMIP (Leemann
    et al.). They apply to ``mlp`` with the torch extra and to skmip's seeded skorch nets.

This module is the front layer's bookkeeping; it builds estimators and imports nothing from
the command line (:mod:`skmip.app.cli` turns its errors into exit code 2).
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from skmip.utils.estimator_expr import EstimatorCall, ExpressionError, build, describe, parse_estimator
from skmip.utils.trust import TRUST_WARNING, UntrustedError, load_pickle, refuse_io_parameters

__all__ = [
    "ALIASES",
    "DEFENSES",
    "SHOWCASE",
    "AuditRow",
    "EstimatorSpec",
    "PlanError",
    "Skipped",
    "estimator_from_file",
    "estimator_from_name",
    "plan_rows",
]

ALIASES = ("logreg", "mlp")
DEFENSES = ("none", "mip", "subsampled-dp", "dp-sgd", "gmip")

#: The run with no --estimator: a network that leaks next to its noisy-SGD version trained
#: with the same architecture and steps, and the coupling-calibrated logistic regression.
SHOWCASE = (("mlp", ("none", "gmip")), ("logreg", ("none", "mip")))

#: The false-positive rate at which the table reads the attack's TPR (Carlini et al. 2022).
FPR = 0.01


class PlanError(ValueError):
    """A user error in naming an estimator or its parameters (the message says the fix)."""


def torch_available() -> bool:
    """Whether the torch extra (torch, skorch, opacus) is installed, without importing it."""
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "skorch", "opacus"))


# ----------------------------------------------------------------------------- estimators
@dataclass
class EstimatorSpec:
    """One estimator of the run.

    Attributes
    ----------
    name : str
        How the table names it.
    make : callable
        ``make(n_features, n_classes) -> unfitted estimator`` (a new object at every call).
    kind : {"logreg", "torch-mlp", "sklearn-mlp", "user"}
        Which private counterparts skmip knows for it.
    """

    name: str
    make: Callable
    kind: str = "user"


def _torch_mlp_params(n_features, n_classes):
    import torch

    from skmip.nn import MLPModule

    # One hidden layer of 64, plain SGD, 20 epochs of batches of 64: enough to memorise a
    # few hundred rows (the baseline leaks), and the step count DP-SGD / GMIP can afford.
    return {
        "module": MLPModule, "module__n_features": int(n_features), "module__n_outputs": int(n_classes),
        "module__hidden": (64,), "max_epochs": 20, "lr": 0.5, "batch_size": 64,
        "optimizer": torch.optim.SGD, "random_state": None, "verbose": 0,
    }


def _alias(name) -> EstimatorSpec:
    if name == "logreg":
        from sklearn.linear_model import LogisticRegression

        return EstimatorSpec("logreg", lambda d, k: LogisticRegression(C=0.1, max_iter=2000), "logreg")
    if torch_available():
        def make(d, k):
            from skmip.nn import NeuralNetClassifier

            return NeuralNetClassifier(iterator_train__shuffle=True, **_torch_mlp_params(d, k))

        return EstimatorSpec("mlp", make, "torch-mlp")

    def make_sklearn(d, k):
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(hidden_layer_sizes=(64,), alpha=1e-4, max_iter=300)

    return EstimatorSpec("mlp (scikit-learn)", make_sklearn, "sklearn-mlp")


def _literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text  # a bare word such as log_loss or sqrt is a string parameter


def parse_params(pairs) -> dict:
    """``["max_iter=200", "loss=log_loss"]`` -> ``{"max_iter": 200, "loss": "log_loss"}``.

    Values are Python literals (numbers, strings, tuples, None, True); anything else is
    taken as a string.
    """
    out = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise PlanError(f"--param {pair!r}: expected NAME=VALUE, e.g. --param max_iter=200.")
        out[key.strip()] = _literal(value.strip())
    return out


def _check_instance(option, value, est):
    """Refuse a class where an estimator instance is needed (a pickled class, issue 31): a
    class has ``fit`` and ``get_params`` too, and scikit-learn's checks then fail obscurely."""
    if isinstance(est, type):
        name = f"{est.__module__}.{est.__qualname__}"
        raise PlanError(
            f"{option} {value}: holds the class {name}, not an estimator; pickle an unfitted "
            f"instance instead, e.g. joblib.dump({est.__qualname__}(), {str(value)!r})."
        )


def _check_classifier(option, value, est):
    from sklearn.base import is_classifier

    _check_instance(option, value, est)
    if not (hasattr(est, "fit") and hasattr(est, "get_params")):
        raise PlanError(f"{option} {value}: {type(est).__name__} is not a scikit-learn estimator (no fit/get_params).")
    if not is_classifier(est):
        raise PlanError(
            f"{option} {value}: {type(est).__name__} is not a classifier; the audit reads each model's "
            "probability of the true label (LiRA), so it needs a classifier with predict_proba."
        )
    if not hasattr(est, "predict_proba"):
        hint = " (set --param probability=True)" if "probability" in est.get_params() else ""
        raise PlanError(
            f"{option} {value}: {type(est).__name__} has no predict_proba{hint}; LiRA scores each "
            "row by the model's probability of its true label."
        )
    return est


def estimator_from_name(text: str, params: dict | None = None) -> EstimatorSpec:
    """An alias or ``package.module.Class`` (optionally called with literal keyword arguments).

    The text is parsed, not evaluated (:func:`skmip.utils.estimator_expr.parse_estimator`): every
    class it names must be a subclass of :class:`sklearn.base.BaseEstimator`, checked before
    anything is called, and every argument a literal or such an estimator call.

    Parameters
    ----------
    text : str
        ``"logreg"``, ``"mlp"``, ``"sklearn.ensemble.RandomForestClassifier"`` or
        ``"sklearn.ensemble.HistGradientBoostingClassifier(max_iter=200)"``.
    params : dict, default=None
        Extra parameters (``--param``), applied with ``set_params`` after the call's own.

    Returns
    -------
    EstimatorSpec

    Raises
    ------
    PlanError
        For an unknown alias or module, a missing class, a class that is not a scikit-learn
        estimator (nothing is called), a non-classifier, or a parameter the estimator does
        not have; the message names the value and the fix.

    Examples
    --------
    >>> spec = estimator_from_name("sklearn.ensemble.RandomForestClassifier(max_depth=3)",
    ...                            {"n_estimators": 10})
    >>> spec.name, spec.make(4, 2).get_params()["n_estimators"]
    ('RandomForestClassifier(max_depth=3, n_estimators=10)', 10)
    """
    params = dict(params or {})
    if text in ALIASES:
        spec = _alias(text)
        if params:
            base = spec.make

            def make(d, k, base=base):
                return _set_params("--param", text, base(d, k), params)

            probe = _set_params("--param", text, base(4, 2), params)  # fail now, not mid-run
            _refuse_io("--param", text, probe)
            spec = EstimatorSpec(spec.name, make, spec.kind)
        return spec
    try:
        # Parsed, not evaluated: every class is checked to be a BaseEstimator before any call.
        call = parse_estimator(text)
        probe = build(call)
    except ExpressionError as exc:
        raise PlanError(f"--estimator {exc}") from None
    except (TypeError, ValueError) as exc:  # the estimator's own constructor refused a value
        raise PlanError(f"--estimator {text}: {exc}.") from None
    _check_classifier("--estimator", text, _set_params("--param", text, probe, params))
    _refuse_io("--estimator", text, probe)
    name = describe(EstimatorCall(call.cls, call.path, {**call.kwargs, **params}))

    def make(d, k):
        return _set_params("--param", text, build(call), params)

    return EstimatorSpec(name, make, "user")


def _set_params(option, value, est, params):
    if not params:
        return est
    valid = est.get_params()
    unknown = [k for k in params if k not in valid]
    if unknown:
        raise PlanError(
            f"{option} {unknown[0]}=...: {type(est).__name__} ({value}) has no parameter {unknown[0]!r}; "
            f"its parameters are {', '.join(sorted(k for k in valid if '__' not in k))}."
        )
    try:
        return est.set_params(**params)
    except (TypeError, ValueError) as exc:
        raise PlanError(f"{option} for {value}: {exc}") from None


def _refuse_io(option, value, est):
    try:
        refuse_io_parameters(est, f"{option} {value}")
    except UntrustedError as exc:
        raise PlanError(str(exc)) from None


def load_trusted_file(option: str, path: str, error=PlanError):
    """The object pickled in ``path`` for ``option``, said where it happens and loaded with its
    globals checked (:func:`skmip.utils.trust.load_pickle`); every failure is ``error`` naming
    the option, the file and the fix."""
    if not os.path.exists(path):
        raise error(f"{option}: no such file: {path}")
    print(TRUST_WARNING.format(path=path), file=sys.stderr)
    try:
        return load_pickle(path)
    except UntrustedError as exc:
        raise error(f"{option} {exc}") from None
    except Exception as exc:  # noqa: BLE001 - any unpickling failure is the user's file
        raise error(
            f"{option} {path}: cannot unpickle it ({type(exc).__name__}: {exc}). Save it with "
            "pickle.dump or joblib.dump in an environment with the same packages."
        ) from None


def estimator_from_file(path: str) -> EstimatorSpec:
    """A pickled (``pickle`` or ``joblib.dump``) unfitted classifier or Pipeline.

    Unpickling runs code stored in the file: load only files you trust. The command says so on
    standard error as it loads the file, and unpickles with every global the file names checked
    first (:func:`skmip.utils.trust.load_pickle`: classes of installed packages and array
    reconstructors only). A fitted estimator is accepted, but only its parameters are used:
    every model of the audit is a fresh clone.

    Raises
    ------
    PlanError
        If the file is missing, not a pickle, names a refused global, holds a class rather than
        an estimator, is not a classifier with ``predict_proba``, or has a parameter that
        reaches the file system (``memory=...``).
    """
    from sklearn.base import clone

    est = load_trusted_file("--estimator-file", path)
    _check_classifier("--estimator-file", path, est)
    _refuse_io("--estimator-file", path, est)
    try:
        template = clone(est)
    except Exception as exc:  # noqa: BLE001
        raise PlanError(f"--estimator-file {path}: the estimator cannot be cloned ({exc}).") from None
    steps = getattr(template, "steps", None)
    name = type(template).__name__
    if steps is not None:
        name = f"Pipeline({', '.join(type(s).__name__ for _, s in steps)})"
    return EstimatorSpec(name, lambda d, k: clone(template), "user")


# ----------------------------------------------------------------------------- defenses
@dataclass
class AuditRow:
    """One row of the audit: a model to fit for utility and to audit by the membership game.

    ``make()`` returns the unfitted estimator; ``audited(est)`` turns it into the one the game
    plays (an exact Definition-1 game for the MIP wrapper). ``eta`` / ``mu`` are the promise
    the report draws; ``promised_tpr`` its value at :data:`FPR` (``None`` when the promise is
    not a bound on the ROC).
    """

    estimator: str
    defense: str
    key: str
    make: Callable
    promise: str
    sampling: str = "exact"
    eta: float | None = None
    mu: float | None = None
    promised_tpr: float | None = None
    fitted_promise: Callable | None = None  # (fitted model) -> (promise, eta, promised_tpr)
    extra: dict = field(default_factory=dict)


@dataclass
class Skipped:
    """A requested defense that does not apply to an estimator, and why."""

    estimator: str
    defense: str
    reason: str


def _mip_reason(est, method="auto"):
    from skmip.params import get_adapter
    from skmip.defend.preprocessing import preprocessing_route

    if preprocessing_route(est, method, "auto") is not None:
        return None  # transformers fitted on D, the last step calibrated by coupling
    try:
        get_adapter(est)
    except (TypeError, ValueError) as exc:
        first = str(exc).split(". ")[0].rstrip(".")
        return (
            f"MIPNoiseWrapper noises fitted parameters and {type(est).__name__} has none it can "
            f"read ({first}); in Python it trains it on MIP synthetic data instead "
            "(method_='synthetic', docs/pipelines.md), a route this command does not audit "
            "yet; try subsampled DP with a DP learner, or --estimator logreg"
        )
    return None


def _dp_learner(spec, est, d, k, sampling_rate, n_rows):
    """The DP counterpart of ``est`` for SubsampledDPClassifier, or (None, reason)."""
    if spec.kind == "logreg":
        from skmip.defend.dp_logistic import DPLogisticRegression

        return DPLogisticRegression(C=1.0), "DP logistic regression"
    if spec.kind == "torch-mlp":
        from skmip.nn import DPNeuralNetClassifier

        params = _torch_mlp_params(d, k)
        # The learner sees a Poisson subsample of a game's member set, about T/2 of the pool;
        # DP-SGD's batches must fit in the smallest of them.
        params["batch_size"] = max(4, min(params["batch_size"], int(0.25 * sampling_rate * n_rows)))
        return DPNeuralNetClassifier(privacy="dp", **params), "DP-SGD MLP"
    if "epsilon" in est.get_params(deep=False):
        return est, type(est).__name__
    return None, (
        f"{type(est).__name__} is not a differentially private learner (no epsilon parameter), and "
        "Theorem 3.3 bounds a DP learner run on a Poisson subsample; bring one (e.g. "
        "skmip.defend.dp_logistic.DPLogisticRegression) or use --estimator logreg"
    )


def _noisy_sgd_base(spec, est, d, k, n_rows):
    """Keyword arguments of a DPNeuralNetClassifier with ``est``'s network, or (None, reason).

    The batch size is capped at a game's member set (half of the ``n_rows`` pool rows): DP-SGD
    samples batches at rate ``batch_size / n``, which must not exceed 1.
    """
    if spec.kind != "torch-mlp" and not torch_available():
        return None, 'noisy SGD trains torch networks and needs the torch extra: pip install "skmip[torch]"'
    if spec.kind == "torch-mlp" or (
        type(est).__name__ == "NeuralNetClassifier" and type(est).__module__.startswith("skmip.nn")
    ):
        # The same network and steps (any --param included); the private sampler replaces
        # the data loader's shuffling.
        params = {k_: v for k_, v in est.get_params(deep=False).items() if not k_.startswith("iterator_train__")}
        if "batch_size" in params:
            params["batch_size"] = max(1, min(int(params["batch_size"]), n_rows // 2))
        return params, None
    return None, (
        f"noisy SGD clips and noises the gradient steps of a torch network, and {type(est).__name__} "
        "is not one; use --estimator mlp or a skmip.nn.NeuralNetClassifier"
    )


def _mip_promise_text(eta, n_train, n_samples):
    """The MIP row's promise column: Definition 1's sentence (one source,
    :func:`skmip.bounds.mip_promise`) and the ROC line the game checks (k = n/2 there)."""
    from skmip.bounds import mip_promise
    from skmip.bounds.rounding import format_up

    return (f"eta-MIP, eta={eta:g}: {mip_promise(eta, n_train, n_samples)}, TPR <= FPR + {format_up(2 * eta)} "
            "in the half-pool game (Izzo et al. Def. 1, Thm 8 corrected)")


def plan_rows(specs_and_defenses, options, n_features, n_classes, n_rows):
    """The rows of the run and the skipped (estimator, defense) pairs.

    Parameters
    ----------
    specs_and_defenses : list of (EstimatorSpec, sequence of str or None)
        Each estimator with the defenses asked for it (``None``: all that apply).
    options : object
        ``eta`` (list), ``mip_method``, ``n_rounds``, ``n_subsets``, ``bound``,
        ``sampling_rate``, ``mu``, ``epsilon`` as parsed by the command line.
    n_features, n_classes : int
        Of the data (torch modules are built for them).
    n_rows : int
        Rows of the audit pool (DP-SGD's batches must fit in a subsample of it).

    Returns
    -------
    rows : list of AuditRow
    skipped : list of Skipped
    """
    rows, skipped = [], []
    d, k = n_features, n_classes
    for spec, wanted in specs_and_defenses:
        est = spec.make(d, k)
        asked = list(DEFENSES) if wanted is None else list(wanted)
        # The baseline row is always shown: a defense means nothing without it.
        rows.append(AuditRow(spec.name, "baseline", "none", lambda s=spec: s.make(d, k), "none"))
        if "mip" in asked:
            _plan_mip(spec, est, options, d, k, n_rows, rows, skipped)
        if "subsampled-dp" in asked:
            _plan_subsampled_dp(spec, est, options, d, k, n_rows, rows, skipped)
        for key in ("gmip", "dp-sgd"):
            if key not in asked:
                continue
            base, reason = _noisy_sgd_base(spec, est, d, k, n_rows)
            if base is None:
                skipped.append(Skipped(spec.name, key, reason))
                continue
            rows.append(_gmip_row(spec, base, options) if key == "gmip" else _dp_sgd_row(spec, base, options))
    return rows, skipped


def _plan_mip(spec, est, options, d, k, n_rows, rows, skipped):
    """One MIPNoiseWrapper row per ``options.eta`` appended to ``rows``, or the reason to ``skipped``."""
    from skmip import MIPNoiseWrapper
    from skmip.bounds import mip_tpr_bound
    from skmip.app.mip_method import mip_method
    from skmip.calibration.routes import build_route

    reason = _mip_reason(est, options.mip_method)
    if reason:
        skipped.append(Skipped(spec.name, "mip", reason))
        return
    for eta in options.eta:
        method = mip_method(options.mip_method, spec.make(d, k), d, k, n_rows, eta)

        def make(eta=eta, s=spec, method=method):
            estimator = s.make(d, k)
            route = build_route(method, estimator, owner="MIPNoiseWrapper",
                                n_subsets=options.n_subsets, n_rounds=options.n_rounds)
            return MIPNoiseWrapper(estimator, eta=eta, method=route, random_state=None)

        def fitted(model, n=n_rows):
            # The promise of the model fitted for utility on the n pool rows, with
            # its own k (Definition 1's prior max(k/n, 1-k/n); 1/2 only for even n).
            from skmip.promise import stated_promise

            promise = stated_promise(model)
            if promise is None or not promise.promised:
                return (f"no promise: noise calibrated to eta={model.target_eta_:g}, but this fit's "
                        "swap distances are estimates, not proven bounds (docs: 'Certified "
                        "distances')"), None, None
            eta = promise.value
            return _mip_promise_text(eta, promise.n_train, n), eta, float(mip_tpr_bound(FPR, eta))

        k_planned = int(round(0.5 * n_rows))  # MIPNoiseWrapper's default train_size
        rows.append(AuditRow(
            spec.name, f"MIP eta={eta:g}", "mip", make,
            _mip_promise_text(eta, k_planned, n_rows),
            eta=eta, promised_tpr=float(mip_tpr_bound(FPR, eta)), fitted_promise=fitted,
        ))


def _plan_subsampled_dp(spec, est, options, d, k, n_rows, rows, skipped):
    """The SubsampledDPClassifier row appended to ``rows``, or the reason to ``skipped``."""
    from skmip import SubsampledDPClassifier

    learner, what = _dp_learner(spec, est, d, k, options.sampling_rate, n_rows)
    if learner is None:
        skipped.append(Skipped(spec.name, "subsampled-dp", what))
        return

    def make(s=spec, learner=learner):
        from sklearn.base import clone

        return SubsampledDPClassifier(
            clone(learner), train_size=options.sampling_rate,
            target_bound=options.bound, random_state=None,
        )

    label = f"subsampled DP T={options.sampling_rate:g}"
    rows.append(AuditRow(
        spec.name, label, "subsampled-dp", make,
        f"MI positive accuracy <= {options.bound:g} (Thudi et al. Thm 3.3; {what})",
        sampling="bernoulli",
    ))


def _gmip_row(spec, base, options):
    """The row of noisy SGD calibrated to mu-GMIP (Leemann et al.) on ``base``'s network."""
    from skmip.bounds import gaussian_tradeoff, mu_to_eta
    from skmip.bounds.rounding import format_up

    mu = options.mu

    def make(base=base, mu=mu):
        from skmip.nn import DPNeuralNetClassifier

        return DPNeuralNetClassifier(privacy="gmip", mu=mu, max_grad_norm=1.0, **base)

    eta = float(mu_to_eta(mu))
    bound = float(1.0 - gaussian_tradeoff(FPR, mu))
    return AuditRow(
        spec.name, f"GMIP noisy SGD mu={mu:g}", "gmip", make,
        f"mu-GMIP (a CLT approximation, not a bound), mu={mu:g}: TPR ~ Phi(Phi^-1(FPR) + {mu:g}) = {bound:.3f} at 1% FPR, "
        f"accuracy <= {format_up(0.5 + eta)} (Leemann et al. Def. 4.3, Thm 4.2)",
        eta=eta, mu=mu, promised_tpr=bound,
    )


def _dp_sgd_row(spec, base, options):
    """The row of DP-SGD at ``options.epsilon`` (Abadi et al.) on ``base``'s network."""
    from skmip.bounds import mip_tpr_bound
    from skmip.bounds.rounding import format_up

    eps = options.epsilon

    def make(base=base, eps=eps):
        from skmip.nn import DPNeuralNetClassifier

        return DPNeuralNetClassifier(privacy="dp", epsilon=eps, max_grad_norm=1.0, **base)

    def fitted(model, eps=eps):
        eta = float(model.mip_bound_)
        promise = (
            f"({eps:g}, {model.delta_:.1e})-DP add/remove (Abadi et al., PLD accountant); "
            f"eta-MIP with eta = replace-one TV/2 = {format_up(eta)} (PLD; Izzo et al. Def. 1, "
            f"skmip.bounds.profile_to_mip): TPR <= FPR + {format_up(2 * eta)}"
        )
        return promise, eta, float(mip_tpr_bound(FPR, eta))

    return AuditRow(
        spec.name, f"DP-SGD eps={eps:g}", "dp-sgd", make,
        f"({eps:g}, delta)-DP (Abadi et al.) => eta-MIP with eta = replace-one TV/2 (PLD accountant)",
        fitted_promise=fitted,
    )
