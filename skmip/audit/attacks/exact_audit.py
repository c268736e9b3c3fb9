r"""An exact membership audit of Gaussian releases, independent of the calibration code.

Definition 1 (Izzo et al.) on a dataset :math:`D` of :math:`n` rows: the training set
:math:`S` is uniform among the :math:`\binom{n}{k}` subsets of size :math:`k`, and the
release is :math:`\hat\theta = \mathcal{A}(S) + sLz` with :math:`z \sim \mathcal{N}(0, I)`,
the shape :math:`L` and scale :math:`s` fixed given :math:`D`. For a target :math:`x^*` the
prior of membership is :math:`q = k/n` and the promise is that the Bayes-optimal attacker's
accuracy is at most :math:`\max(q, 1-q) + \eta`.

On a tiny :math:`D` everything is enumerable: this module refits the learner on **every**
subset with its own exact minimiser (:func:`exact_minimiser`, batched Newton on the
objective scikit-learn documents, to a gradient of 1e-9; it never calls
:mod:`skmip.calibration.swap` or :mod:`skmip.bounds`; it lives in
:mod:`skmip.audit.attacks.exact_refit`), computes the posterior of membership
exactly for each release, and takes the expectation over releases by Monte Carlo
(:func:`gaussian_membership_audit`, in :mod:`skmip.audit.attacks.exact_posterior`; both are
importable from here too). What it reads from a fitted object is only what
defines the mechanism as run: the published scale ``noise_scale_``, the published promise,
``n_train_``, and the noise shape :math:`L`, captured at the noise draw
(:func:`capture_gaussian_noise`), because the wrappers do not keep it. In the audit setting
the attacker knows :math:`D`, and :math:`L` is computed from :math:`D` and randomness
independent of :math:`S`, so conditioning on it is the game of Definition 1.

The public entry points audit a fitted release end to end:
:func:`audit_mip_noise_wrapper` (``MIPNoiseWrapper`` and ``MIPNoiseWrapperCV``),
:func:`audit_gaussian_synthesizer` and :func:`audit_marginal_synthesizer`.
``benchmarks/bench_exact_audit.py`` searches worst-case datasets with them and
``docs/exact_audits.md`` ("Adversarial exact audit of the printed eta") reports the results.
"""

from __future__ import annotations

import contextlib
import math
import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn.pipeline import Pipeline

from skmip.audit.attacks.exact_posterior import MembershipAuditResult, enumerate_subsets, gaussian_membership_audit
from skmip.audit.attacks.exact_refit import exact_minimiser
from skmip.utils.rng import resolve_rng

__all__ = [
    "MembershipAuditResult",
    "RouteError",
    "enumerate_subsets",
    "exact_minimiser",
    "gaussian_membership_audit",
    "capture_gaussian_noise",
    "audit_mip_noise_wrapper",
    "audit_gaussian_synthesizer",
    "audit_synthetic_route",
    "audit_marginal_synthesizer",
]

_OWNER = "exact_audit"


# ----------------------------------------------------------------------------- capture


class RouteError(RuntimeError):
    """The audited release route refused the dataset (for every seed tried) or crashed."""


class BelowPrecision(ValueError):
    """The release's noise is at the precision of the audit's own refits (whitened by the
    noise, their rounding is not negligible): the exact attacker cannot be computed here."""


class NoPromise(ValueError):
    """The fitted object states no eta (``mip_bound_`` is None): there is nothing to break.

    skmip prints no promise where it cannot prove one (``train_size=1.0``; coupling distances
    that are estimates, e.g. the multinomial and squared-hinge losses)."""



@contextlib.contextmanager
def capture_gaussian_noise():
    """Record every Gaussian noise draw of the wrappers: ``(shape, scale, noise)`` tuples.

    Wraps the public noise law :func:`skmip.calibration.noise_laws.sample_gaussian_noise`
    (the coupling calibration draws its noise ``s L z`` through it, looked up on its module at
    each draw) for the duration of the block and appends the shape ``L`` (or ``w``), the
    scale ``s`` and the noise drawn to the yielded list. The draw itself is unchanged. The
    wrappers keep neither ``L`` nor the noise. Nothing of the defence's internals is touched.

    Yields
    ------
    list of tuple
    """
    from skmip.calibration import noise_laws as noise_module

    original = noise_module.sample_gaussian_noise
    records = []

    def spy(scale, noise_scale, **kwargs):
        out = original(scale, noise_scale, **kwargs)
        records.append((np.array(scale, dtype=np.float64, copy=True), float(noise_scale), np.array(out)))
        return out

    noise_module.sample_gaussian_noise = spy
    try:
        yield records
    finally:
        noise_module.sample_gaussian_noise = original


def _printed_bound(fitted):
    """The tightest eta the fitted object prints (and all it prints)."""
    printed = {}
    for name in ("mip_bound_", "coupling_eta_upper_", "coupling_eta_"):
        value = getattr(fitted, name, None)
        if value is not None:
            printed[name] = float(value)
    inner = getattr(fitted, "best_estimator_", None)
    if inner is not None:
        for name in ("coupling_eta_upper_",):
            value = getattr(inner, name, None)
            if value is not None:
                printed[f"best_estimator_.{name}"] = float(value)
    if not printed:
        raise NoPromise(f"{_OWNER}: {type(fitted).__name__} prints no eta (mip_bound_).")
    return min(printed.values()), printed


def _fit_retrying(make, X, y, seeds, capture, max_seconds=None):
    """Fit ``make(seed)`` on (X, y) for the first seed whose calibration succeeds.

    A failed calibration (e.g. a calibration subset that misses a class) happens before and
    independently of the draw of D_train's released fit, so retrying with a fresh seed does
    not condition the release on D_train.
    """
    import time

    errors = []
    start = time.perf_counter()
    for seed in seeds:
        if max_seconds is not None and errors and time.perf_counter() - start > max_seconds:
            break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cm = capture_gaussian_noise() if capture else contextlib.nullcontext([])
            with cm as records:
                try:
                    obj = make(seed)
                    obj.fit(X) if y is None else obj.fit(X, y)
                except ValueError as exc:
                    errors.append(str(exc).splitlines()[0][:200])
                    continue
                except Exception as exc:  # a crash of the route, not of the audit
                    raise RouteError(f"{type(exc).__name__} in fit: {str(exc)[:200]}") from exc
        return obj, list(records), len(errors)
    raise RouteError(f"every calibration failed ({len(errors)} seeds); last: {errors[-1]}")


def audit_mip_noise_wrapper(
    make_wrapper,
    X: ArrayLike,
    y: ArrayLike,
    *,
    seeds=range(20),
    target: int | ArrayLike | None = None,
    n_mc: int = 20_000,
    random_state=0,
    check_release: bool = True,
    max_seconds: float | None = None,
) -> MembershipAuditResult:
    r"""Exact membership audit of a ``MIPNoiseWrapper`` (or ``MIPNoiseWrapperCV``) release.

    Fits ``make_wrapper(seed)`` on ``(X, y)`` (the next seed when the calibration fails),
    capturing the noise law it draws the release from (:func:`capture_gaussian_noise`; for
    ``MIPNoiseWrapperCV`` the last draw, which is the released refit), reads the published
    ``n_train_`` (k), ``noise_scale_`` and the printed promise (the smallest of
    ``mip_bound_`` and ``coupling_eta_upper_``), refits the learner on all
    :math:`\binom{n}{k}` training sets with :func:`exact_minimiser`, and runs
    :func:`gaussian_membership_audit` for every target.

    Parameters
    ----------
    make_wrapper : callable
        ``seed -> unfitted wrapper`` (the seed is its ``random_state``).
    X, y : array_like
        The dataset D.
    seeds : iterable of int, default=range(20)
        Seeds tried in turn.
    target : int or array_like of int, optional
        Rows to audit; all by default.
    n_mc : int, default=20000
        Releases drawn in the Monte Carlo.
    random_state : None, int or Generator, default=0
        Seeds the Monte Carlo.
    check_release : bool, default=True
        Check that the released parameters minus the captured noise equal
        :func:`exact_minimiser` on some training set (the audited map is the released
        one), to 1e-6 relative.
    max_seconds : float, optional
        Stop trying further seeds once this many seconds have passed.

    Returns
    -------
    MembershipAuditResult
        With ``bound`` the printed promise and ``details`` holding everything printed, the
        retries and the distance of the release to the audited map.
    """
    from skmip.params import get_adapter

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    fitted, records, retries = _fit_retrying(make_wrapper, X, y, seeds, capture=True, max_seconds=max_seconds)
    wrapper = getattr(fitted, "best_estimator_", fitted)
    if getattr(wrapper, "method_", None) != "coupling" or not records:
        raise ValueError(f"{_OWNER}: the audit covers the coupling calibration (Gaussian noise); got method_={getattr(wrapper, 'method_', None)!r}.")
    shape, s, noise = records[-1]
    if not math.isclose(s, wrapper.noise_scale_, rel_tol=1e-12):
        raise AssertionError(f"{_OWNER}: the captured scale {s} is not the published noise_scale_ {wrapper.noise_scale_}.")
    n, k = len(X), int(wrapper.n_train_)
    subsets = enumerate_subsets(n, k)
    learner, features, last = wrapper.estimator, X, wrapper.estimator_
    if isinstance(learner, Pipeline):
        features, learner, last = _transformed_by_d(wrapper, X, y)
    outputs, failed = exact_minimiser(learner, features, y, subsets)
    bound, printed = _printed_bound(fitted)
    details = {"printed": printed, "retries": retries, "learner": repr(wrapper.estimator),
               "engine": getattr(wrapper, "sensitivity_engine_", None)}
    if check_release:
        published = get_adapter(last).get_vector(last)
        released = published - noise
        ok = failed == 0
        gap = np.min(np.max(np.abs(outputs[ok] - released), axis=1)) / (1.0 + np.max(np.abs(released)))
        details["release_gap"] = float(gap)
        # Subtracting the noise loses about eps * |noise| (a huge noise hides theta in rounding).
        rounding = 8 * np.finfo(float).eps * np.max(np.abs(published)) / (1.0 + np.max(np.abs(released)))
        if not gap <= 1e-6 + rounding:
            raise AssertionError(
                f"{_OWNER}: the released parameters minus the noise are {gap:.2e} (relative) from "
                "the exact minimiser on every training set: the audited map is not the released one."
            )
    # The refits are exact to a gradient of _GRAD_TOL (relative ~1e-9 of the parameters): where
    # the noise is comparable, whitened by the noise their rounding is itself a signal that the
    # released map (solved to machine precision) does not carry.
    L = np.atleast_2d(np.asarray(shape, dtype=np.float64))
    L = np.diag(L[0]) if L.shape[0] == 1 else L
    precision = 0.0
    if s > 0:  # (s = 0: no noise is needed, the promise is vacuous and the audit exact)
        precision = 1e-8 * (1.0 + np.max(np.abs(outputs[failed == 0]))) * np.linalg.norm(np.linalg.pinv(L), 2) / s
    if not precision < 1e-2:
        raise BelowPrecision(f"{_OWNER}: the noise (scale {s:.3g} of its shape) is at the precision of the "
                             f"audit's refits (whitened rounding {precision:.2g}); this release cannot be audited.")
    res = gaussian_membership_audit(outputs, subsets, n, scale=shape, noise_scale=s, failed=failed,
                                    target=target, n_mc=n_mc, random_state=random_state)
    return _with(res, bound, details)


def _transformed_by_d(wrapper, X, y):
    """A pipeline's release: transformers fitted on all of D, then the last step on S.

    The audit fits the transformers on ``(X, y)`` itself (scikit-learn's own ``fit``), checks
    that the released transformers map D to the same rows (so they are those of D, the same
    for every training set S, and carry no membership signal), and returns the transformed
    rows, the unfitted last step and the released last step.
    """
    from sklearn.base import clone

    own = clone(wrapper.estimator[:-1]).fit(X, y)
    features = _dense(own.transform(X))
    released = _dense(wrapper.estimator_[:-1].transform(X))
    if features.shape != released.shape or not np.allclose(features, released, rtol=1e-12, atol=1e-12):
        raise AssertionError(
            f"{_OWNER}: the released pipeline's transformers do not map D as transformers fitted on "
            "all of D do: they depend on the training set, which this audit does not cover."
        )
    return features, wrapper.estimator.steps[-1][1], wrapper.estimator_.steps[-1][1]


def _dense(Z):
    return np.asarray(Z.toarray() if hasattr(Z, "toarray") else Z, dtype=np.float64)


def _with(res, bound, details):
    return MembershipAuditResult(**{**res.__dict__, "bound": bound, "details": details})


def audit_gaussian_synthesizer(
    make_synthesizer, X: ArrayLike, *, seeds=range(20), target=None, n_mc: int = 20_000, random_state=0,
    max_seconds: float | None = None,
) -> MembershipAuditResult:
    r"""Exact membership audit of ``MIPGaussianSynthesizer(method="coupling")``.

    The synthesizer releases the mean over :math:`S` of :math:`\phi(x) = (x,
    \mathrm{upper}(xx^\top))` (``center=True``; ``upper(x x^T)`` alone otherwise) plus
    :math:`sLz`, with :math:`L` the Cholesky factor of the Ledoit-Wolf covariance of
    :math:`\phi` over all of :math:`D` (plus :math:`10^{-12}` times its mean variance on
    the diagonal) -- a function of :math:`D` alone, which is how the release is defined,
    so the audit recomputes it (with scikit-learn's ``ledoit_wolf``); everything published
    afterwards (covariance, square root, samples) is post-processing. The released mean
    is checked to be :math:`\mathcal{A}(S) + (sLz)_{1..d}` for the noise the synthesizer
    drew (captured from its random generator) on some :math:`S`, to 1e-8.

    Parameters
    ----------
    make_synthesizer : callable
        ``seed -> unfitted MIPGaussianSynthesizer``.
    X : array_like of shape (n, d)
    seeds, target, n_mc, random_state, max_seconds
        As in :func:`audit_mip_noise_wrapper`.

    Returns
    -------
    MembershipAuditResult
    """
    from sklearn.covariance import ledoit_wolf

    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    draws = []

    def observed(seed):
        # The synthesizer's own stream, observed: random_state takes a Generator and uses it
        # as is, so the draws (the noise z among them) are those the given seed makes.
        synth = make_synthesizer(seed)
        return synth.set_params(random_state=_RecordingGenerator(synth.random_state, draws))

    synth, _, retries = _fit_retrying(observed, X, None, seeds, capture=False, max_seconds=max_seconds)
    synth.set_params(random_state=synth.random_state.given)
    if synth.method_ != "coupling":
        raise ValueError(f"{_OWNER}: only method='coupling' releases Gaussian noise; got {synth.method_!r}.")
    rows, cols = np.triu_indices(d)
    second = X[:, rows] * X[:, cols]
    features = np.hstack([X, second]) if synth.center else second
    shape = ledoit_wolf(features)[0]
    spread = float(np.trace(shape)) / len(shape)
    shape[np.diag_indices_from(shape)] += 1e-12 * spread if spread > 0 else 1.0
    L = np.linalg.cholesky(shape)
    k = int(synth.n_train_)
    subsets = enumerate_subsets(n, k)
    outputs = features[subsets].mean(axis=1)
    s = float(synth.noise_scale_)
    details = {"printed": _printed_bound(synth)[1], "retries": retries, "learner": repr(synth)}
    if synth.center and draws:
        noise = s * (L @ draws[-1])
        gap = np.min(np.max(np.abs(outputs[:, :d] + noise[:d] - synth.mean_), axis=1))
        details["release_gap"] = float(gap)
        if not gap <= 1e-8 * (1.0 + np.max(np.abs(synth.mean_))):
            raise AssertionError(f"{_OWNER}: the released mean is {gap:.2e} from every A(S) + noise.")
    res = gaussian_membership_audit(outputs, subsets, n, scale=L, noise_scale=s, target=target,
                                    n_mc=n_mc, random_state=random_state)
    return _with(res, _printed_bound(synth)[0], details)


class _RecordingGenerator(np.random.Generator):
    """The generator ``random_state`` resolves to, keeping every standard normal draw."""

    def __init__(self, random_state, draws):
        super().__init__(resolve_rng(random_state).bit_generator)
        self.given, self._draws = random_state, draws

    def standard_normal(self, *args, **kwargs):
        out = super().standard_normal(*args, **kwargs)
        self._draws.append(np.array(out))
        return out


def audit_marginal_synthesizer(
    make_synthesizer, X: ArrayLike, *, seeds=range(20), target=None, n_mc: int = 20_000, random_state=0,
    max_seconds: float | None = None,
) -> MembershipAuditResult:
    r"""Exact membership audit of ``MIPMarginalSynthesizer``'s noisy marginal tables.

    The release is the vector of cell fractions over :math:`S` of the published tables
    ``marginals_`` (on the published ``categories_``, both functions of :math:`D` when
    ``train_size < 1``) plus :math:`s z`, :math:`z \sim \mathcal{N}(0, I)`, with
    :math:`s` = ``noise_scale_``; the consistent tables and every sample are post-processing
    of it.

    Parameters
    ----------
    make_synthesizer : callable
        ``seed -> unfitted MIPMarginalSynthesizer``.
    X : array_like of shape (n, c)
        Categorical columns.
    seeds, target, n_mc, random_state, max_seconds
        As in :func:`audit_mip_noise_wrapper`.

    Returns
    -------
    MembershipAuditResult
    """
    X = np.asarray(X)
    synth, _, retries = _fit_retrying(make_synthesizer, X, None, seeds, capture=False,
                                          max_seconds=max_seconds)
    codes = np.stack(
        [np.searchsorted(cats, X[:, j]) for j, cats in enumerate(synth.categories_)], axis=1
    )
    for j, cats in enumerate(synth.categories_):
        if not np.array_equal(cats[codes[:, j]], X[:, j]):
            raise AssertionError(f"{_OWNER}: categories_ of column {j} do not cover D.")
    sizes = [len(c) for c in synth.categories_]
    return _audit_cell_fractions(synth, synth, codes, sizes, synth.marginals_, retries, target, n_mc,
                                 random_state)


def _audit_cell_fractions(printed_by, synth, codes, sizes, marginals, retries, target, n_mc, random_state):
    """The exact audit of noisy cell fractions of ``marginals`` over every k-subset of coded D."""
    n = codes.shape[0]
    k = int(synth.n_train_)
    if k >= n:
        raise ValueError(f"{_OWNER}: train_size=1.0 has no D to audit against (n_train_ = n).")
    subsets = enumerate_subsets(n, k)
    blocks = []
    for m in marginals:
        shape = tuple(sizes[j] for j in m)
        cell = np.ravel_multi_index(tuple(codes[:, j] for j in m), shape)
        onehot = np.eye(int(np.prod(shape)))[cell]  # (n, cells)
        blocks.append(onehot)
    phi = np.hstack(blocks)
    outputs = phi[subsets].mean(axis=1)
    s = float(synth.noise_scale_)
    details = {"printed": _printed_bound(printed_by)[1], "retries": retries, "learner": repr(printed_by),
               "marginals": [tuple(int(j) for j in m) for m in marginals]}
    res = gaussian_membership_audit(outputs, subsets, n, scale=np.ones(phi.shape[1]), noise_scale=s,
                                    target=target, n_mc=n_mc, random_state=random_state)
    return _with(res, _printed_bound(printed_by)[0], details)


def audit_synthetic_route(
    make_wrapper, X: ArrayLike, y: ArrayLike, *, seeds=range(20), target=None, n_mc: int = 20_000,
    random_state=0, max_seconds: float | None = None,
) -> MembershipAuditResult:
    r"""Exact membership audit of ``MIPNoiseWrapper``'s synthetic route (``method_="synthetic"``).

    The wrapper trains its estimator on records sampled from ``synthesizer_``, a
    ``MIPTabularSynthesizer`` of the table ``(X, y)``: the release is the vector of cell
    fractions over :math:`S` of the coded records (codes by the published ``domains_``,
    functions of :math:`D` when ``train_size < 1``) on the published ``marginals_``, plus
    :math:`s z` with :math:`s` = ``noise_scale_``; the tables, the samples and the model
    trained on them are post-processing of it. Each categorical code is checked to decode
    to the value it codes.

    Parameters
    ----------
    make_wrapper : callable
        ``seed -> unfitted MIPNoiseWrapper`` whose estimator takes the synthetic route.
    X : array_like of shape (n, c)
    y : array_like of shape (n,)
    seeds, target, n_mc, random_state, max_seconds
        As in :func:`audit_mip_noise_wrapper`.

    Returns
    -------
    MembershipAuditResult
    """
    X = np.asarray(X)
    wrapper, _, retries = _fit_retrying(make_wrapper, X, y, seeds, capture=False, max_seconds=max_seconds)
    if wrapper.method_ != "synthetic":
        raise ValueError(f"{_OWNER}: the wrapper took method_={wrapper.method_!r}, not the synthetic route.")
    synth = wrapper.synthesizer_
    columns = [X[:, j] for j in range(X.shape[1])] + ([np.asarray(y)] if synth.has_target_ else [])
    codes = np.stack([d.encode(c) for d, c in zip(synth.domains_, columns)], axis=1)
    for d, c, code in zip(synth.domains_, columns, codes.T):
        values = d.categories if d.kind == "categorical" else d.atoms
        if len(values) and code.max() < len(values) and not np.array_equal(values[code], c):
            raise AssertionError(f"{_OWNER}: the domain of column {d.name!r} does not code D one to one.")
    sizes = [d.size for d in synth.domains_]
    return _audit_cell_fractions(wrapper, synth, codes, sizes, synth.marginals_, retries, target, n_mc,
                                 random_state)
