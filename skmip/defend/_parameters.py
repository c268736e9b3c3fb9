"""The calibration parameters that MIPNoiseWrapper and MIPNoiseWrapperCV share: one table.

Each parameter is written here once: its default, the check of its value, its group and its
numpydoc text. Both classes validate through :func:`validate_shared`, the CV twin forwards
the table's names to every wrapper it fits, and both docstrings are filled from the table
at import (:func:`fill_parameters`). The ``__init__`` signatures stay explicit, as
scikit-learn's ``get_params`` and ``clone`` need; a test holds them to this table.

The groups say who reads a knob, so that the default user sees few:

* ``"common"``: every route (``method``, ``train_size``, ``params``, ``random_state``,
  ``n_jobs``, ``verbose``);
* ``"coupling"``: only the coupling calibration (``confidence``, ``n_rounds``,
  ``noise_shape``);
* ``"moments"``: the spread over random subsets, which the moments calibration scales its
  noise by (``moment``, ``n_subsets``, ``radius``, ``sigma_from``);
* ``"deprecated"``: old names still accepted (``n_splits``).

A knob that the chosen route never reads, set to a value other than its default, gets a
``UserWarning`` naming it at ``fit`` (:func:`warn_ignored`), as scikit-learn's
``LogisticRegression`` warns for an ``l1_ratio`` without an elastic-net penalty. With
``method="auto"`` the route depends on the estimator, and knobs for either route may be set
without a warning (:func:`surely_ignored`).
"""

from __future__ import annotations

import re
import textwrap
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from skmip.utils.deprecation import DEPRECATED, is_unset, renamed_parameter
from skmip.utils.validation import check_int, check_interval, check_moment, check_n_jobs, check_option

__all__ = ["SHARED", "validate_shared", "ignored_by", "surely_ignored", "warn_ignored", "fill_parameters", "DEPRECATED"]


NOISE_SHAPES = ("auto", "design", "full", "diagonal")


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


def _check_n_subsets(owner, value, name="n_subsets"):
    return check_int(
        owner, name, value, 2, None,
        why="sigma is a spread over random subsets and needs at least 2 of them; the paper uses 128.",
    )


def _check_train_size(owner, value):
    check_interval(
        owner, "train_size", value, 0, 1, closed="right",
        why="it is the fraction of rows drawn into D_train; use 0.5 for Definition 1 "
        "with k = n/2, or 1.0 if your data already is the random training half.",
    )


def _check_confidence(owner, value):
    if value is not None:
        check_interval(
            owner, "confidence", value, 0, 1, closed="neither",
            why="it is the probability that the coupling bound's estimate holds; 0.95 is "
            "the default, None calibrates the point estimate (not a guarantee).",
        )


def _check_n_rounds(owner, value):
    check_int(
        owner, "n_rounds", value, 2, None,
        why="each round draws one swap distance per row for the coupling calibration.",
    )


def _option(name, options):
    return lambda owner, value: check_option(owner, name, value, options)


_METHOD_DOC = """
How eta is turned into noise. ``"coupling"``: Gaussian noise ``s L z`` with ``L`` the
noise shape and ``s`` the smallest scale whose coupling bound
(:func:`skmip.bounds.coupling_noise_scale`) meets eta at ``confidence``; needs swap
distances (:func:`skmip.calibration.swap.estimate_swap_deltas`), computed without refits
for estimators with a registered smooth loss and by refits (slow) otherwise.
``"moments"``: Corollary 10. ``"auto"``: ``"coupling"`` when a smooth loss is
registered for the estimator and ``params="auto"``; ``"synthetic"`` when no
parameter adapter reads the estimator (trees, forests, boosting, k-NN, pipelines
ending in one); else ``"moments"`` with a
:class:`~skmip.exceptions.PrivacyWarning` that points to the measured utility of
Corollary 10 and the better routes (docs/mip_noise.md). ``"synthetic"``: no noise on the
model; it is trained on records drawn from an eta-MIP synthesizer of the table ``(X, y)``
(:class:`~skmip.release.tabular.MIPTabularSynthesizer`, fitted with this eta, train size
and randomness) and keeps its promise by post-processing (Theorem 3). ``X`` may
then be a DataFrame with string, categorical and missing values; the estimator (or
its pipeline) must accept what the synthesizer returns (a DataFrame of the same
columns). docs/pipelines.md ("Any estimator: training on MIP synthetic data").
"""

_TRAIN_SIZE_DOC = """
Fraction of the rows of ``D`` drawn uniformly at random into ``D_train``
(``k = round(train_size * n)``). ``1.0`` means the caller already drew the data it
passes at random from a larger dataset (as the membership game does): all rows are
used and the noise is calibrated on halves of them (Algorithm 1). That noise law is
then a function of ``D_train``, which Definition 1 does not cover, so this mode
**promises nothing**: ``mip_bound_`` is ``None`` and ``fit`` emits a
:class:`~skmip.exceptions.PrivacyWarning`. It remains the way to audit the
calibration in the membership game (``target_eta_``).
"""

_CONFIDENCE_DOC = """
**Coupling calibration** (this parameter and the next two; ignored by the other routes).
Probability that the estimated swap distances do not understate the bound (a betting
confidence bound per row, Waudby-Smith & Ramdas, with a union bound over all rows;
:func:`skmip.bounds.coupling_eta_upper`). ``None`` calibrates the point estimate and
warns: the stated eta is then an estimate.
"""

_N_ROUNDS_DOC = """
Coupling calibration: independent rounds of swap distances (each costs two fits of
the estimator, by warm-started Newton steps, plus arithmetic linear in n). Fewer
rounds widen the confidence term of the betting bound, about
``ln(6n/alpha) / (1.9 n_rounds)`` when the draws vary little; an eta below it raises
an error saying how many rounds it needs. On ``load_breast_cancer`` at eta = 0.1, 400
rounds cost 1.18x the point estimate's noise and 1000 rounds 1.07x
(docs/coupling.md, "Cost and scaling").
"""

_NOISE_SHAPE_DOC = """
Coupling calibration: the shape of the Gaussian noise, fixed given D (any such
shape is private; the shape decides the utility). ``"design"``: the shape that
minimises the predicted excess loss of the release when every record's predicted
swap distance is held to one bound, from one fit on all of D
(:func:`skmip.calibration.noise_shape.design_noise_factor`; needs a registered smooth loss;
memory O(n d + d^2)); ``"full"``: the Cholesky factor of the (shrunk) covariance of
the fit over ``n_subsets`` random subsets of D
(:func:`skmip.calibration.spread.noise_factor.estimate_noise_factor`); ``"diagonal"``: ``sigma_`` per
coordinate, the spread of order ``moment`` over ``n_subsets`` subsets (memory O(d)).
``"auto"``: ``"design"`` where a smooth loss is registered, else ``"full"``. At eta = 0.1
the design keeps 0.842 test accuracy on the full adult data against 0.822 for ``"full"``,
where a few records of rare categories set the covariance shape's noise (0.935 against
0.923 on breast cancer; docs/coupling.md, "Noise shape designed for utility").
"""

_MOMENT_DOC = """
**Spread over random subsets** (this parameter and the next three): read by the moments
calibration; ``n_subsets`` and ``moment`` also by the coupling calibration's ``"full"``
and ``"diagonal"`` shapes, ``sigma_from`` by both calibrations. Order M >= 2 of the
central moment that measures the parameters' spread (Corollary 10). Larger M needs less
noise (the constant is ``(6.16/eta)**(1 + 2/M)``) but a heavier-tailed estimate of the
spread.
"""

_N_SUBSETS_DOC = """
Number of random subsets B over which the spread ``sigma_`` (and, for the coupling
calibration with ``noise_shape="full"``, the covariance of the fit) is estimated: fits
on random subsets, as in :func:`skmip.calibration.spread.noise_factor.estimate_noise_factor`.
"""

_RADIUS_DOC = """
Moments calibration: law of the noise radius. ``"gamma"`` gives exactly the density
``exp(-||x||_{sigma,M} / c)`` that Theorem 9 assumes; ``"laplace"`` is Corollary 10
/ Algorithm 1 as printed, which does not have that density for d > 1 and is kept
only to reproduce the paper (it emits a :class:`~skmip.exceptions.PrivacyWarning`).
"""

_SIGMA_FROM_DOC = """
Where the spread (and, for the coupling calibration, the shape and the swap distances)
is measured. ``"dataset"``: over random subsets of ``D`` of the size of ``D_train`` --
exactly the law of the fitted parameters that Theorem 9's moment bound is about, and a
function of ``D`` only, so the noise law does not depend on which rows were drawn.
``"train"``: over random halves of ``D_train``, as Algorithm 1 prints it. With
``train_size=1.0`` both mean halves of the given data.
"""

_N_SPLITS_DOC = """
.. deprecated:: 0.2
   Renamed ``n_subsets`` (scikit-learn's ``n_splits`` counts cross-validation folds);
   ``n_splits`` will be removed in 0.3. A value set here is used in place of
   ``n_subsets``, with a ``FutureWarning`` at ``fit``; setting both is an error.
"""

_RANDOM_STATE_DOC = """
Source of every random draw (subsets, inner seed, noise). ``None`` draws fresh OS
entropy, the only setting under which the noise is secret; a fixed value makes
results reproducible and emits a :class:`~skmip.exceptions.PrivacyWarning`.
"""

#: The shared parameters in signature order: common, coupling, moments, deprecated.
SHARED = (
    Parameter("method", "auto", "common", '{"auto", "coupling", "moments", "synthetic"}', _METHOD_DOC),
    Parameter("train_size", 0.5, "common", "float", _TRAIN_SIZE_DOC, _check_train_size),
    Parameter("params", "auto", "common", '"auto", list of str or ParamAdapter',
              "Which fitted parameters are noised; see :func:`skmip.params.get_adapter`."),
    Parameter("random_state", None, "common", "None, int, numpy Generator or RandomState",
              _RANDOM_STATE_DOC),
    Parameter("n_jobs", None, "common", "int",
              "Parallel subset fits and rounds through joblib (``None`` means 1 unless in a "
              "joblib context).", check_n_jobs),
    Parameter("verbose", 0, "common", "int", "Print progress when > 0."),
    Parameter("confidence", 0.95, "coupling", "float or None", _CONFIDENCE_DOC, _check_confidence),
    Parameter("n_rounds", 400, "coupling", "int", _N_ROUNDS_DOC, _check_n_rounds),
    Parameter("noise_shape", "auto", "coupling", '{"auto", "design", "full", "diagonal"}',
              _NOISE_SHAPE_DOC, _option("noise_shape", NOISE_SHAPES)),
    Parameter("moment", 2, "moments", "float", _MOMENT_DOC, check_moment),
    Parameter("n_subsets", 128, "moments", "int", _N_SUBSETS_DOC, _check_n_subsets),
    Parameter("radius", "gamma", "moments", '{"gamma", "laplace"}', _RADIUS_DOC,
              _option("radius", ("gamma", "laplace"))),
    Parameter("sigma_from", "dataset", "moments", '{"dataset", "train"}', _SIGMA_FROM_DOC,
              _option("sigma_from", ("dataset", "train"))),
    Parameter("n_splits", DEPRECATED, "deprecated", "int", _N_SPLITS_DOC),
)

_BY_NAME = {p.name: p for p in SHARED}


def validate_shared(obj, owner, methods):
    """Check every shared parameter of ``obj``; return the number of subsets to use.

    ``methods`` are the ``method`` values ``owner`` accepts. ``n_splits``, when set, is
    checked, warned about (``FutureWarning``) and returned in place of ``n_subsets``.
    """
    check_option(owner, "method", obj.method, methods)
    for param in SHARED:
        if param.check is not None:
            param.check(owner, getattr(obj, param.name))
    if is_unset(obj.n_splits):
        return obj.n_subsets
    n_splits = renamed_parameter(owner, "n_splits", obj.n_splits, "n_subsets", obj.n_subsets,
                                 _BY_NAME["n_subsets"].default, stacklevel=4)
    return _check_n_subsets(owner, n_splits, name="n_splits")


def ignored_by(method, shape=None):
    """Names of the group knobs that a route ignores.

    ``method`` is the route taken (``method_``): ``"coupling"``, ``"moments"`` or
    ``"synthetic"``; ``shape`` the coupling noise shape resolved from ``noise_shape``.
    The coupling calibration measures a spread over subsets only for the ``"full"`` shape
    (``n_subsets``) and the ``"diagonal"`` one (``n_subsets`` and ``moment``).
    """
    coupling = {p.name for p in SHARED if p.group == "coupling"}
    moments = {p.name for p in SHARED if p.group == "moments"}
    if method == "moments":
        return coupling
    if method == "coupling":
        used = {"sigma_from"} | {"full": {"n_subsets"}, "diagonal": {"n_subsets", "moment"}}.get(shape, set())
        return moments - used
    return coupling | moments


def surely_ignored(obj, method, shape=None):
    """The knobs that no resolution of ``obj``'s ``"auto"`` choices would read.

    ``method="auto"`` may resolve to any route and ``noise_shape="auto"`` to the design or the
    full shape, depending on the estimator: a caller that sets knobs for each possible route
    (the ``skmip`` command passes its ``--n-subsets`` and ``--n-rounds`` to every wrapper) asked for
    nothing contradictory. Only a knob that every possible resolution ignores is reported.
    """
    routes = [method] if obj.method != "auto" else ["coupling", "moments", "synthetic"]
    shapes = [shape] if obj.noise_shape != "auto" else ["design", "full"]
    ignored = None
    for route in routes:
        for resolved in shapes if route == "coupling" else [None]:
            names = ignored_by(route, resolved)
            ignored = names if ignored is None else ignored & names
    return ignored


def warn_ignored(owner, obj, method, shape=None, n_subsets=None, stacklevel=4):
    """Warn (``UserWarning``) about knobs set away from their default that the route ignores.

    ``method`` and ``shape`` are the route taken; only knobs that any resolution of the
    ``"auto"`` choices would ignore are reported (:func:`surely_ignored`). ``n_subsets`` is
    the resolved count (a deprecated ``n_splits`` counts as ``n_subsets``); ``stacklevel``
    points the warning at the user's call.
    """
    values = {p.name: getattr(obj, p.name) for p in SHARED if p.group in ("coupling", "moments")}
    if n_subsets is not None:
        values["n_subsets"] = n_subsets
    ignored = [name for name in sorted(surely_ignored(obj, method, shape))
               if not _is_default(values[name], _BY_NAME[name].default)]
    if ignored:
        set_ = ", ".join(f"{name}={values[name]!r}" for name in ignored)
        where = f"method_={method!r}" + (f" with the {shape!r} noise shape" if method == "coupling" else "")
        one = len(ignored) == 1
        warnings.warn(
            f"{owner}: {set_} {'has' if one else 'have'} no effect: {where} does not read "
            f"{'it' if one else 'them'} (docs/mip_noise.md, \"Which parameters matter\"). "
            f"Leave {'it' if one else 'them'} at the default, or choose the method that reads "
            f"{'it' if one else 'them'}.",
            UserWarning, stacklevel=stacklevel,
        )


def _is_default(value, default):
    try:
        return bool(value == default)
    except Exception:  # an array-like compared to a default
        return False


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
