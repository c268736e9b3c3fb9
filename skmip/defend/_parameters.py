"""The parameters that MIPNoiseWrapper and MIPNoiseWrapperCV share: one table, and the route.

Each common parameter is written here once: its default, the check of its value and its
numpydoc text. Both classes validate through :func:`validate_shared`, which also resolves
``method`` into a calibration route (:func:`skmip.calibration.routes.resolve_route`); the CV
twin forwards the table's names and the resolved route to every wrapper it fits, and both
docstrings are filled from the table at import (:func:`fill_parameters`). The ``__init__``
signatures stay explicit, as scikit-learn's ``get_params`` and ``clone`` need; a test holds
them to this table.

The knobs of one route (``n_rounds``, ``moment``, ...) are the route's own parameters
(``method=CouplingRoute(n_rounds=1000)``; docs/design.md, "Calibration routes"). Their 0.2
spelling as wrapper parameters (``MOVED``) still works until 0.3: a value set there is
forwarded into the route with a ``FutureWarning`` (:func:`forward_moved`).
"""

from __future__ import annotations

import re
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from skmip.calibration.routes import check_n_subsets, resolve_route
from skmip.utils.deprecation import DEPRECATED, is_unset, renamed_parameter
from skmip.utils.validation import check_interval, check_n_jobs

__all__ = ["SHARED", "MOVED", "MovedKnobsMixin", "validate_shared", "forward_moved", "fill_parameters", "DEPRECATED"]


@dataclass(frozen=True)
class Parameter:
    """One shared parameter: its default, group, numpydoc entry and the check of its value.

    ``check(owner, value)`` raises a clear error for a bad value; ``None`` means the value is
    checked where it is used (``params`` by the parameter adapter, ``random_state`` by
    :func:`~skmip.exceptions.check_privacy_seed`).
    """

    name: str
    default: Any
    group: str
    type: str
    doc: str
    check: Callable | None = None

    def entry(self, override=None):
        """The numpydoc entry, ``name : type, default=...`` and its indented text.

        ``override`` replaces the text, or, as a pair ``(type, text)``, the type and the text.
        """
        type_, doc = override if isinstance(override, tuple) else (self.type, override or self.doc)
        default = f'"{self.default}"' if isinstance(self.default, str) else repr(self.default)
        text = textwrap.indent(textwrap.dedent(doc).strip(), "    ")
        return f"{self.name} : {type_}, default={default}\n{text}"


def _check_train_size(owner, value):
    check_interval(
        owner, "train_size", value, 0, 1, closed="right",
        why="it is the fraction of rows drawn into D_train; use 0.5 for Definition 1 "
        "with k = n/2, or 1.0 if your data already is the random training half.",
    )


_METHOD_DOC = """
How eta is turned into a release: ``"auto"``, the name of a calibration route, or a route
object that carries the route's own knobs (:mod:`skmip.calibration.routes`; tuned in a grid
search as ``method__n_rounds``). ``"coupling"``
(:class:`~skmip.calibration.routes.CouplingRoute`): Gaussian noise ``s L z`` with ``L`` the
noise shape and ``s`` the smallest scale whose coupling bound
(:func:`skmip.bounds.coupling_noise_scale`) meets eta at its ``confidence``; needs swap
distances (:func:`skmip.calibration.swap.estimate_swap_deltas`), computed without refits
for estimators with a registered smooth loss and by refits (slow) otherwise.
``"moments"`` (:class:`~skmip.calibration.routes.MomentsRoute`): Corollary 10.
``"synthetic"`` (:class:`~skmip.calibration.routes.SyntheticRoute`): no noise on the
model; it is trained on records drawn from an eta-MIP synthesizer of the table ``(X, y)``
(:class:`~skmip.release.tabular.MIPTabularSynthesizer`, fitted with this eta, train size
and randomness) and keeps its promise by post-processing (Theorem 3); ``X`` may then be a
DataFrame with string, categorical and missing values (docs/pipelines.md, "Any estimator:
training on MIP synthetic data"). ``"noisy_gradient"``
(:class:`~skmip.calibration.routes.NoisyGradientRoute`): the estimator (a registered smooth
loss, bare or a pipeline's last step) trained on D_train by clipped, Poisson-sampled noisy
gradients, promised by the PLD accountant (docs/pipelines.md, "Noisy gradients for
scikit-learn GLMs"). ``"auto"``: where a smooth loss is registered and ``params="auto"``,
``"coupling"`` or ``"noisy_gradient"`` chosen from the shape of D and eta before D_train is
drawn (:mod:`skmip.calibration.routes.auto`; ``method_reason_`` says why); ``"synthetic"``
when no parameter adapter reads the estimator (trees, forests, boosting, k-NN, pipelines
ending in one); else ``"moments"`` with a :class:`~skmip.exceptions.PrivacyWarning` that
points to the measured utility of Corollary 10 and the better routes (docs/mip_noise.md).
"""

_TRAIN_SIZE_DOC = """
Fraction of the rows of ``D`` drawn uniformly at random into ``D_train``
(``k = round(train_size * n)``). ``1.0`` means the caller already drew the data it
passes at random from a larger dataset (as the membership game does): all rows are
used and the noise is calibrated on halves of them (Algorithm 1). That noise law is
then a function of ``D_train``, which Definition 1 does not cover, so this mode
**promises nothing**: ``mip_bound_`` is ``None`` and ``fit`` emits a
:class:`~skmip.exceptions.PrivacyWarning`. It remains the way to audit the
calibration in the membership game (``target_eta_``). A ``train_size`` whose prior
``max(k/n, 1-k/n)`` plus eta reaches 1 promises nothing either, and warns.
"""

_RANDOM_STATE_DOC = """
Source of every random draw (subsets, inner seed, noise). ``None`` draws fresh OS
entropy, the only setting under which the noise is secret; a fixed value makes
results reproducible and emits a :class:`~skmip.exceptions.PrivacyWarning`.
"""

#: The common parameters in signature order.
SHARED = (
    Parameter("method", "auto", "common", '"auto", str or CalibrationRoute', _METHOD_DOC),
    Parameter("train_size", 0.5, "common", "float", _TRAIN_SIZE_DOC, _check_train_size),
    Parameter("params", "auto", "common", '"auto", list of str or ParamAdapter',
              "Which fitted parameters are noised; see :func:`skmip.params.get_adapter`."),
    Parameter("random_state", None, "common", "None, int, numpy Generator or RandomState",
              _RANDOM_STATE_DOC),
    Parameter("n_jobs", None, "common", "int",
              "Parallel subset fits and rounds through joblib (``None`` means 1 unless in a "
              "joblib context).", check_n_jobs),
    Parameter("verbose", 0, "common", "int", "Print progress when > 0."),
)


def _moved_doc(name, route):
    return f"""
    .. deprecated:: 0.2
       Moved into the calibration route: pass ``method={route}({name}=...)`` (or
       ``set_params(method__{name}=...)`` on a wrapper whose ``method`` is a route). A value
       set here is forwarded into the route that ``method`` resolves to, with a
       ``FutureWarning`` at ``fit``; it is removed in 0.3. See :class:`{route}`.
    """


_N_SPLITS_DOC = """
.. deprecated:: 0.2
   Renamed ``n_subsets``, itself a knob of the route now
   (``method=MomentsRoute(n_subsets=...)``); ``n_splits`` will be removed in 0.3. A value
   set here is used in place of ``n_subsets``, with a ``FutureWarning`` at ``fit``;
   setting both is an error.
"""

#: The 0.2 wrapper parameters that are a route's own knobs now, in signature order, and the
#: route named in their deprecation note. Their default is ``"deprecated"`` (not set).
MOVED = tuple(
    Parameter(name, DEPRECATED, "moved", type_, _moved_doc(name, route))
    for name, type_, route in (
        ("synthesizer", "MIPTabularSynthesizer or None", "~skmip.calibration.routes.SyntheticRoute"),
        ("confidence", "float or None", "~skmip.calibration.routes.CouplingRoute"),
        ("n_rounds", "int", "~skmip.calibration.routes.CouplingRoute"),
        ("noise_shape", "str", "~skmip.calibration.routes.CouplingRoute"),
        ("moment", "float", "~skmip.calibration.routes.MomentsRoute"),
        ("n_subsets", "int", "~skmip.calibration.routes.MomentsRoute"),
        ("radius", "str", "~skmip.calibration.routes.MomentsRoute"),
        ("sigma_from", "str", "~skmip.calibration.routes.MomentsRoute"),
    )
) + (Parameter("n_splits", DEPRECATED, "moved", "int", _N_SPLITS_DOC),)

_BY_NAME = {p.name: p for p in SHARED + MOVED}


#: The 0.2 defaults of the knobs that moved into the routes (a 0.2 pickle holds these).
_MOVED_DEFAULTS_0_2 = {"synthesizer": None, "confidence": 0.95, "n_rounds": 400, "noise_shape": "auto",
                       "moment": 2, "n_subsets": 128, "radius": "gamma", "sigma_from": "dataset"}


class MovedKnobsMixin:
    """Unpickles a wrapper saved by skmip 0.2 with the knobs it never set left unset.

    A 0.2 pickle holds every moved knob at a value; those at the 0.2 default were not set by
    its author, and must not warn at ``fit``: they become ``"deprecated"``. Only a pickle whose
    ``method`` is a string can be from 0.2 (route objects came with the move). Runs after
    :class:`~skmip.utils.deprecation.RenamedParametersMixin` (list it first), so a 0.1 pickle's
    ``n_splits`` is ``n_subsets`` already.
    """

    def __setstate__(self, state):
        super().__setstate__(state)
        if not isinstance(self.__dict__.get("method", "auto"), str):
            return
        for name, default in _MOVED_DEFAULTS_0_2.items():
            value = self.__dict__.get(name, DEPRECATED)
            if value is default or (type(value) is type(default) and value == default):
                self.__dict__[name] = DEPRECATED


def validate_shared(obj, owner, accepted=None, stacklevel=4):
    """Check the common parameters of ``obj`` and return its calibration route, validated.

    ``method`` is resolved (:func:`skmip.calibration.routes.resolve_route`) among the route
    names ``accepted`` (``None``: every registered route), the moved 0.2 knobs set on ``obj``
    are forwarded into it (:func:`forward_moved`), and the route checks its own knobs.
    """
    for param in SHARED:
        if param.check is not None:
            param.check(owner, getattr(obj, param.name))
    route = resolve_route(owner, obj.method, obj.estimator, obj.params, accepted, stacklevel=stacklevel + 1)
    forward_moved(obj, owner, route, stacklevel=stacklevel + 1)
    return route.validate(owner)


def forward_moved(obj, owner, route, stacklevel=5):
    """Set on ``route`` the moved 0.2 knobs that ``obj`` sets, each with a ``FutureWarning``.

    ``n_splits`` (renamed ``n_subsets`` in 0.2) is read as ``n_subsets`` first. A knob the route
    has not is ignored: with ``method="auto"`` silently (a caller may set knobs for every route
    ``"auto"`` could take), with a named route with a ``UserWarning``. A knob set both here and
    on a route object passed as ``method`` is an error.
    """
    knobs = {p.name: getattr(obj, p.name, DEPRECATED) for p in MOVED if p.name != "n_splits"}
    if not is_unset(getattr(obj, "n_splits", DEPRECATED)):
        knobs["n_subsets"] = renamed_parameter(owner, "n_splits", obj.n_splits, "n_subsets", knobs["n_subsets"],
                                               DEPRECATED, stacklevel=stacklevel + 1)
        check_n_subsets(owner, knobs["n_subsets"], name="n_splits")
    current, defaults = route.get_params(deep=False), type(route)().get_params(deep=False)
    ignored = []
    for name, value in knobs.items():
        if is_unset(value):
            continue
        if name not in current:
            ignored.append(name)
            continue
        value = renamed_parameter(
            owner, name, value, f"method__{name}", current[name], defaults[name], stacklevel=stacklevel + 1,
            instead=f"method={type(route).__name__}({name}={value!r})",
        )
        route.set_params(**{name: value})
    if ignored and not (isinstance(obj.method, str) and obj.method == "auto"):
        set_ = ", ".join(f"{name}={knobs[name]!r}" for name in ignored)
        warnings.warn(
            f"{owner}: {set_} {'has' if len(ignored) == 1 else 'have'} no effect: the "
            f"{route.name!r} route ({type(route).__name__}) has no such knob. Leave it unset, or "
            "choose the route that has it.",
            UserWarning, stacklevel=stacklevel,
        )
    return route


_PLACEHOLDER = re.compile(r"^( *)\{\{(\w+)\}\}$", re.MULTILINE)


def fill_parameters(doc, overrides=None):
    """``doc`` with each line ``{{name}}`` replaced by the table's numpydoc entry for ``name``.

    ``overrides`` maps a name to the text that replaces the table's (a class whose
    ``random_state`` means more, say), or to a pair ``(type, text)``; the default stays the
    table's. ``None`` (under
    ``python -OO``) stays ``None``.
    """
    if doc is None:
        return None
    overrides = overrides or {}

    def entry(match):
        indent, name = match.groups()
        return textwrap.indent(_BY_NAME[name].entry(overrides.get(name)), indent)

    return _PLACEHOLDER.sub(entry, doc)
