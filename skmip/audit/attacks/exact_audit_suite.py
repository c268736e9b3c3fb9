r"""Worst-case datasets and learners for the adversarial exact audit of printed eta.

Every case is a tiny dataset :math:`D` (n = 9-12 rows) built to be hard for the calibration
-- far outliers with the wrong label (alone or duplicated), near-duplicates with conflicting
labels, high-leverage rows, separable classes, rare categories (a one-hot column with a single
1), plain Gaussian rows -- a release route that prints an eta (``MIPNoiseWrapper`` with every
learner calibrated by coupling (``method="coupling"``), bare or as the last step of a pipeline
whose transformers are fitted on D, ``MIPNoiseWrapperCV``, both synthesizers, the wrapper's
synthetic route for a decision tree, and its noisy-gradient route on one feature, n = 4-6, whose
release law is integrated exactly: :mod:`skmip.audit.attacks.exact_noisy_gradient`)
with its defaults or with scikit-learn's default ``C``/``alpha`` and a few others, and an eta.
:func:`run_case` fits the route, audits the release exactly
(:mod:`skmip.audit.attacks.exact_audit`) and says whether some record's exact advantage exceeds the
printed bound by more than 3 Monte-Carlo standard errors. ``benchmarks/bench_exact_audit.py``
runs :func:`make_cases` by the thousand; ``tests/audit/test_exact_audit_suite.py`` runs a seeded
handful.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from skmip.audit.attacks.exact_audit import (
    BelowPrecision,
    NoPromise,
    RouteError,
    audit_gaussian_synthesizer,
    audit_marginal_synthesizer,
    audit_mip_noise_wrapper,
    audit_synthetic_route,
)

__all__ = ["GENERATORS", "LEARNERS", "AuditCase", "make_cases", "make_dataset", "issue19_dataset", "run_case"]


# ----------------------------------------------------------------------------- datasets


def issue19_dataset():
    """Issue 19's regression case: n = 12, a far outlier with the wrong label and its twin.

    Returns
    -------
    X : ndarray of shape (12, 2)
    y : ndarray of shape (12,)
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 2))
    y = np.arange(12) % 2
    X[y == 1] += 1.0
    X[0] = [6.0, 6.0]
    y[0] = 0  # a far outlier with the wrong label
    X[2] = X[0]
    y[2] = y[0]  # and its duplicate
    return X, y


def _labels(task, n):
    if task == "binary":
        return np.arange(n) % 2
    if task == "multiclass":
        return np.arange(n) % 3
    return None


def _targets(task, X, rng, beta):
    u = X @ beta
    if task == "regression":
        return u + 0.3 * rng.normal(size=len(X))
    if task == "count":
        return rng.poisson(np.exp(1.0 + np.clip(0.5 * u, -2, 2))).astype(np.float64)
    if task == "positive":
        return np.exp(np.clip(0.5 * u, -3, 3)) * rng.gamma(2.0, 0.5, size=len(X))
    raise ValueError(task)


def _base(task, n, d, rng, shift):
    X = rng.normal(size=(n, d))
    y = _labels(task, n)
    beta = rng.normal(size=d)
    if y is not None:
        centers = shift * np.eye(max(3, d))[:3, :d] if task == "multiclass" else None
        if task == "binary":
            X[y == 1] += shift / np.sqrt(d)
        else:
            X += centers[y]
        return X, y, beta
    return X, _targets(task, X, rng, beta), beta


def _far_point(d, rng, radius):
    v = np.abs(rng.normal(size=d)) + 0.2
    return radius * v / np.linalg.norm(v)


def _wrong(task, y, X, i, rng):
    """A label/target for row i that disagrees with the rest of the data."""
    if task == "binary":
        # The class whose rows are farther from the outlier.
        m0, m1 = X[y == 0].mean(0), X[y == 1].mean(0)
        return 0 if np.linalg.norm(X[i] - m0) > np.linalg.norm(X[i] - m1) else 1
    if task == "multiclass":
        means = np.stack([X[y == c].mean(0) for c in range(3)])
        return int(np.argmax(np.linalg.norm(means - X[i], axis=1)))
    spread = np.std(y) + 1.0
    if task == "regression":
        return float(np.mean(y) - 6.0 * spread * np.sign(X[i].sum()))
    if task == "count":
        return float(12 + rng.integers(0, 10))
    return float(10.0 + 10.0 * rng.random())


def make_dataset(generator: str, task: str, n: int, rng) -> tuple[np.ndarray, np.ndarray | None]:
    """One dataset of the named worst-case family.

    Parameters
    ----------
    generator : str
        A key of :data:`GENERATORS`.
    task : {"binary", "multiclass", "regression", "count", "positive", "continuous", "categorical", \
"labelled categorical", "categorical_binary"}
        What the rows feed: a classifier (balanced labels), a regressor, a Poisson/Tweedie
        model (counts), a Gamma model (positive targets), the Gaussian synthesizer (rows
        only), the marginal synthesizer (categorical columns only), the wrapper's synthetic
        route (categorical columns and binary labels) or a one-hot pipeline (categorical
        columns, balanced labels that follow the first one).
    n : int
        Rows.
    rng : numpy.random.Generator

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,) or None
    """
    if task == "categorical":
        return _categorical(generator, n, rng), None
    if task == "labelled categorical":
        X = _categorical(generator, n, rng)
        y = _labels("binary", n)
        if generator in ("outlier_wrong_label", "rare_category", "outlier_duplicate"):
            y[0] = 1 - y[0]  # the unique record also carries the rarer label pattern
        return X, y
    if task == "categorical_binary":
        X = _categorical(generator, n, rng)
        y = _categorical_labels(generator, X, rng)
        if generator == "rare_class":
            y[np.flatnonzero(y == 1)[3:]] = 0  # class 1 keeps 3 rows
        return X, y
    d = int(rng.integers(1, 3)) if task != "continuous" else 2
    shift = float(rng.choice([0.5, 1.0, 2.0]))
    X, y, beta = _base("regression" if task == "continuous" else task, n, d, rng, shift)
    if task == "continuous":
        y = None
    radius = float(rng.choice([4.0, 6.0, 10.0]))
    if generator == "gaussian":
        pass
    elif generator in ("outlier_wrong_label", "outlier_duplicate"):
        X[0] = _far_point(d, rng, radius)
        if y is not None:
            y[0] = _wrong(task, y, X, 0, rng)
        if generator == "outlier_duplicate":
            copies = int(rng.integers(1, 3))
            same = [i for i in range(1, n) if y is None or task not in ("binary", "multiclass") or y[i] == y[0]]
            for i in same[:copies]:
                X[i] = X[0]
                if y is not None:
                    y[i] = y[0]
    elif generator == "near_duplicates":
        j = int(rng.integers(1, n))
        X[j] = X[0] + 1e-3 * rng.normal(size=d)
        if y is not None and task in ("binary", "multiclass"):
            # Conflicting labels on (near) the same point, keeping the class counts.
            # (On n = 4 no partner may be left: the near-duplicate then keeps its label.)
            partner = next((i for i in range(1, n) if i != j and y[i] == y[0]), None)
            if partner is not None:
                y[j], y[partner] = y[partner], y[j]
        elif y is not None:
            y[j] = y[0] + float(rng.normal()) * (np.std(y) + 1.0)
    elif generator == "high_leverage":
        X[0] = 0.0
        X[0, 0] = radius * (1 if rng.random() < 0.5 else -1)
        if y is not None and task not in ("binary", "multiclass"):
            y[0] = _targets(task, X[:1], rng, beta)[0]
    elif generator == "separable":
        if task == "continuous":
            X[: n // 2] += radius / np.sqrt(d)  # two clusters far apart
        elif task == "binary":
            X[y == 1] += radius / np.sqrt(d)
        elif task == "multiclass":
            X += radius * np.eye(max(3, d))[:3, :d][y]
        elif task == "regression":
            y = X @ beta  # noiseless: every training set fits exactly
        else:
            y = _targets(task, X, rng, beta)
    elif generator == "rare_class":
        # Small-data classification (issue 31, item 9): the last class keeps 3 rows, one of
        # them far out, so that many calibration subsets (and some D_train) lack it.
        if y is not None and task in ("binary", "multiclass"):
            rare = np.flatnonzero(y == y.max())
            y[rare[3:]] = 0
            X[rare[0]] = _far_point(d, rng, radius)
    elif generator == "rare_category":
        # A categorical column with a category seen once (one-hot, first level dropped),
        # on the row with the least typical label/target.
        levels = rng.integers(0, 2, size=n)
        levels[0] = 2
        onehot = np.eye(3)[levels][:, 1:]
        X = np.hstack([X, onehot])
        if y is not None:
            y[0] = _wrong(task, y, X, 0, rng)
    else:
        raise ValueError(f"unknown generator {generator!r}")
    return X, y


def _categorical(generator, n, rng):
    cols = int(rng.integers(2, 4))
    X = np.stack([rng.integers(0, int(rng.integers(2, 4)), size=n) for _ in range(cols)], axis=1)
    X[:, 1] = np.where(rng.random(n) < 0.7, X[:, 0] % (X[:, 1].max() + 1), X[:, 1])
    if generator in ("outlier_wrong_label", "rare_category", "outlier_duplicate"):
        X[0] = X.max(axis=0) + 1  # a record whose every value is unique in D
        if generator == "outlier_duplicate":
            X[1] = X[0]
    elif generator in ("near_duplicates", "high_leverage"):
        X[1:4] = X[0]
    elif generator == "separable":
        X[:, 1] = X[:, 0]
    return X


def _categorical_labels(generator, X, rng):
    """Balanced binary labels that follow the first column; the odd record gets the other one."""
    n = len(X)
    order = np.argsort(X[:, 0] + rng.random(n), kind="stable")
    y = np.empty(n, dtype=int)
    y[order] = np.arange(n) >= n // 2
    if generator in ("outlier_wrong_label", "rare_category", "outlier_duplicate", "near_duplicates"):
        # Swap labels with a row of the other class: row 0 (and its copies) disagree with the
        # rows like them, the class counts stay.
        # (On a small categorical domain every row of the other class may copy row 0: then the
        # labels of the copies already disagree, and nothing is swapped.)
        j = next((i for i in range(1, n) if y[i] != y[0] and not np.array_equal(X[i], X[0])), None)
        if j is not None:
            y[0], y[j] = y[j], y[0]
    return y


#: The dataset families; each takes (task, n, rng).
GENERATORS = (
    "gaussian",
    "outlier_wrong_label",
    "outlier_duplicate",
    "near_duplicates",
    "high_leverage",
    "separable",
    "rare_category",
    "rare_class",
)


# ----------------------------------------------------------------------------- learners


def _sk(name, **params):
    """The learner ``name``; ``"Transformer+Learner"`` is a Pipeline of the transformer (its
    defaults) and the learner (``params``)."""
    from sklearn import linear_model, preprocessing, svm
    from sklearn.pipeline import make_pipeline

    *transformers, name = name.split("+")
    cls = getattr(linear_model, name, None) or getattr(svm, name)
    if not transformers:
        return cls(**params)
    return make_pipeline(*(getattr(preprocessing, t)() for t in transformers), cls(**params))


#: Release routes: name -> (task, kind, estimator class name, hyper-parameter choices,
#: train sizes, relative weight in the search). Hyper-parameter choices list scikit-learn's
#: default first.
LEARNERS = {
    "LogisticRegression": ("binary", "wrapper", "LogisticRegression", {"C": [1.0, 0.1, 10.0]}, (0.5, 0.75), 8),
    "LogisticRegression (3 classes)": ("multiclass", "wrapper", "LogisticRegression", {"C": [1.0, 0.1]}, (0.75,), 2),
    "Ridge": ("regression", "wrapper", "Ridge", {"alpha": [1.0, 0.1, 0.01]}, (0.5, 0.75), 3),
    "LinearRegression": ("regression", "wrapper", "LinearRegression", {}, (0.5, 0.75), 2),
    "PoissonRegressor": ("count", "wrapper", "PoissonRegressor", {"alpha": [1.0, 0.1, 0.01]}, (0.5, 0.75), 3),
    "GammaRegressor": ("positive", "wrapper", "GammaRegressor", {"alpha": [1.0, 0.1]}, (0.5,), 2),
    "TweedieRegressor(power=1.5)": ("count", "wrapper", "TweedieRegressor", {"power": [1.5], "link": ["log"], "alpha": [1.0, 0.1]}, (0.5,), 2),
    "TweedieRegressor(power=0)": ("regression", "wrapper", "TweedieRegressor", {"alpha": [1.0, 0.1]}, (0.5,), 2),
    "LinearSVC": ("binary", "wrapper", "LinearSVC", {"C": [1.0, 0.1, 10.0]}, (0.5, 0.75), 3),
    "LinearSVC (3 classes)": ("multiclass", "wrapper", "LinearSVC", {"C": [1.0, 0.1]}, (0.75,), 1),
    "MIPNoiseWrapperCV(LogisticRegression)": ("binary", "cv", "LogisticRegression", {"C": [1.0]}, (0.75,), 1),
    "MIPNoiseWrapperCV(Ridge)": ("regression", "cv", "Ridge", {"alpha": [1.0]}, (0.5,), 1),
    # Pipelines: transformers fitted on all of D, the last step calibrated on the transformed
    # rows (skmip.defend.preprocessing); the audit refits the transformers on D itself.
    "Pipeline(StandardScaler, LogisticRegression)": ("binary", "wrapper", "StandardScaler+LogisticRegression", {"C": [1.0, 0.1, 10.0]}, (0.5, 0.75), 2),
    "Pipeline(OneHotEncoder, LogisticRegression)": ("categorical_binary", "wrapper", "OneHotEncoder+LogisticRegression", {"C": [1.0, 0.1]}, (0.5, 0.75), 2),
    "MIPGaussianSynthesizer": ("continuous", "gaussian_synth", None, {"center": [True, False]}, (0.5, 0.75), 2),
    "MIPMarginalSynthesizer": ("categorical", "marginal_synth", None, {}, (0.5, 0.75), 2),
    "MIPNoiseWrapper(DecisionTreeClassifier), synthetic": ("labelled categorical", "synthetic_route",
                                                           "DecisionTreeClassifier", {}, (0.5, 0.75), 2),
    # The noisy-gradient route, no intercept, n = 4-6: its release law is enumerated and
    # integrated exactly (skmip.audit.attacks.exact_noisy_gradient), no Monte Carlo. On one
    # feature (subspace=None), or on two that the route's default (subspace="auto": one direction
    # at these sizes) trains in D's top principal direction.
    "MIPNoiseWrapper(LogisticRegression), noisy_gradient": (
        "binary", "noisy_gradient", "LogisticRegression",
        {"C": [1.0, 10.0], "batch_size": [1, 2], "n_epochs": [1, 2], "clip_norm": [None, 1.0, 4.0],
         "learning_rate": [0.5, 1.0], "subspace": [None, "auto"]}, (0.5,), 2),
}

#: Rows of D in the noisy-gradient cases: every k-subset's law is integrated on a grid.
_NOISY_GRADIENT_SIZES = (4, 5, 6)

_ETAS = (0.1, 0.05, 0.2)
_SIZES = (12, 11, 10, 9)


@dataclass(frozen=True)
class AuditCase:
    """One dataset and one release route to audit (everything needed to rebuild both)."""

    learner: str
    generator: str
    n: int
    eta: float
    train_size: float
    params: tuple
    seed: int

    def dataset(self):
        """``(X, y)`` of the case (``y`` is None for the synthesizers)."""
        if self.generator == "issue19":
            return issue19_dataset()
        task, kind = LEARNERS[self.learner][:2]
        X, y = make_dataset(self.generator, task, self.n, np.random.default_rng(self.seed))
        if kind == "noisy_gradient":  # one feature, two where the route projects them on one direction
            return X[:, : 1 if dict(self.params).get("subspace") is None else 2], y
        return X, y


def make_cases(n_datasets: int, seed: int = 0, learners=None) -> list[AuditCase]:
    """``n_datasets`` seeded cases, learners drawn by weight, generators cycled.

    The issue-19 regression case (wrapper defaults, eta 0.1 and 0.05) comes first.

    Parameters
    ----------
    n_datasets : int
    seed : int, default=0
    learners : list of str, optional
        Restrict to these keys of :data:`LEARNERS`.

    Returns
    -------
    list of AuditCase
    """
    rng = np.random.default_rng(seed)
    names = list(LEARNERS if learners is None else learners)
    weights = np.array([LEARNERS[k][5] for k in names], dtype=float)
    cases = []
    if "LogisticRegression" in names:
        for eta in (0.1, 0.05):
            cases.append(AuditCase("LogisticRegression", "issue19", 12, eta, 0.5, (), seed))
    counters = {k: 0 for k in names}
    while len(cases) < n_datasets:
        name = names[int(rng.choice(len(names), p=weights / weights.sum()))]
        task, kind, _, grid, sizes, _ = LEARNERS[name]
        gen = GENERATORS[counters[name] % len(GENERATORS)]
        counters[name] += 1
        params = tuple((key, values[int(rng.integers(len(values)))]) for key, values in grid.items())
        n = int(rng.choice(_NOISY_GRADIENT_SIZES if kind == "noisy_gradient" else _SIZES))
        train_size = float(rng.choice(sizes))
        # Small classification data is kept small: a calibration subset that lacks a class
        # scores 0 (skmip.calibration.class_cover), and a D_train that may lack one is paid for
        # or refused before the draw (skmip.defend._coverage).
        eta = float(rng.choice(_ETAS))
        k = round(train_size * n)
        if eta >= min(k, n - k) / n:
            eta = 0.05  # eta >= min(q, 1 - q) promises nothing (accuracy <= 1)
        cases.append(AuditCase(name, gen, n, eta, train_size, params, int(rng.integers(2**31))))
    return cases[:n_datasets]


def run_case(case: AuditCase, *, n_mc: int = 20_000, z: float = 3.0, max_seconds: float | None = 30.0) -> dict:
    """Fit the case's release route, audit it exactly, and summarise.

    Up to 10 seeds (20 for binary labels) are tried for the fit (a route may refuse a dataset, e.g. one whose
    D_train lacks a class too often: then for every seed), none after ``max_seconds``.

    Returns
    -------
    dict
        ``case`` fields, ``bound`` (printed), ``advantage``/``std_error`` of the worst target
        (largest advantage), ``ratio`` = advantage / bound and its Monte-Carlo error
        ``ratio_se``, ``z`` = the largest (advantage - bound) / se over targets,
        ``violation`` (``z`` above the threshold), ``retries``, ``atom_mass``, ``seconds``;
        ``error`` instead when the route refused the dataset for every seed.
    """
    from skmip import MIPGaussianSynthesizer, MIPMarginalSynthesizer, MIPNoiseWrapper, MIPNoiseWrapperCV

    t0 = time.perf_counter()
    X, y = case.dataset()
    task, kind, est_name, _, _, _ = LEARNERS[case.learner]
    params = dict(case.params)
    seeds = range(case.seed % 10_000, case.seed % 10_000 + (20 if task in ("binary", "categorical_binary") else 10))
    row = {**asdict(case), "params": repr(params)}
    if kind == "noisy_gradient":
        return _run_noisy_gradient(case, X, y, params, row, t0)
    try:
        if kind == "wrapper":
            res = audit_mip_noise_wrapper(
                lambda s: MIPNoiseWrapper(_sk(est_name, **params), eta=case.eta, method="coupling",
                                          train_size=case.train_size, random_state=s),
                X, y, seeds=seeds, n_mc=n_mc, random_state=case.seed, max_seconds=max_seconds)
        elif kind == "cv":
            etas = tuple(sorted({case.eta, 0.05, 0.2}))
            res = audit_mip_noise_wrapper(
                lambda s: MIPNoiseWrapperCV(_sk(est_name, **params), etas=etas, cv=3, selection="best",
                                            method="coupling", train_size=case.train_size, random_state=s),
                X, y, seeds=seeds, n_mc=n_mc, random_state=case.seed, max_seconds=max_seconds)
        elif kind == "gaussian_synth":
            res = audit_gaussian_synthesizer(
                lambda s: MIPGaussianSynthesizer(eta=case.eta, train_size=case.train_size, random_state=s, **params),
                X, seeds=seeds, n_mc=n_mc, random_state=case.seed, max_seconds=max_seconds)
        elif kind == "synthetic_route":
            from sklearn.tree import DecisionTreeClassifier

            res = audit_synthetic_route(
                lambda s: MIPNoiseWrapper(DecisionTreeClassifier(random_state=0), eta=case.eta,
                                          train_size=case.train_size, random_state=s),
                X, y, seeds=seeds, n_mc=n_mc, random_state=case.seed, max_seconds=max_seconds)
        else:
            res = audit_marginal_synthesizer(
                lambda s: MIPMarginalSynthesizer(eta=case.eta, train_size=case.train_size, random_state=s, **params),
                X, seeds=seeds, n_mc=n_mc, random_state=case.seed, max_seconds=max_seconds)
    except RouteError as exc:  # the route refused or crashed on this dataset for every seed
        row.update(error=str(exc)[:300], seconds=time.perf_counter() - t0)
        return row
    except NoPromise:  # nothing is promised, so nothing can be broken
        row.update(no_promise=True, violation=False, bound=None, seconds=time.perf_counter() - t0)
        return row
    except BelowPrecision as exc:  # noise at the refits' rounding: counted, not audited
        row.update(below_precision=True, violation=False, note=str(exc)[:200], seconds=time.perf_counter() - t0)
        return row
    target, ratio, ratio_se = res.worst()
    zs = res.z_scores()
    i = int(np.argmax(res.advantage))
    row.update(
        k=res.k, bound=res.bound, printed=res.details["printed"], target=target,
        advantage=float(res.advantage[i]), std_error=float(res.std_error[i]), ratio=ratio, ratio_se=ratio_se,
        z=float(zs.max()), violation=bool(zs.max() > z), violating_targets=res.violations(z=z).tolist(),
        retries=res.details["retries"], atom_mass=res.atom_mass, release_gap=res.details.get("release_gap"),
        seconds=time.perf_counter() - t0,
    )
    return row


def _run_noisy_gradient(case, X, y, params, row, t0):
    """The noisy-gradient case: the route's release law integrated exactly for every k-subset."""
    from sklearn.linear_model import LogisticRegression

    from skmip import MIPNoiseWrapper
    from skmip.audit.attacks.exact_noisy_gradient import audit_noisy_gradient_route
    from skmip.calibration.routes import NoisyGradientRoute

    C = params.pop("C")
    # average -> one iterate: the release is the last one, whose law is a Markov chain's marginal.
    route = NoisyGradientRoute(average=1e-9, **params)
    wrapper = MIPNoiseWrapper(LogisticRegression(C=C, fit_intercept=False), eta=case.eta, method=route,
                              train_size=case.train_size, random_state=case.seed % 10_000)
    res = audit_noisy_gradient_route(wrapper, X, y)
    bound = res["bound"]
    ratio = max(res["advantage"] / bound, res["worst_pair_tv"] / (2 * bound))
    row.update(
        k=res["k"], bound=bound, printed=bound, target=res["target"], advantage=res["advantage"], std_error=0.0,
        ratio=ratio, ratio_se=0.0, z=float("nan"), violation=res["violation"],
        violating_targets=[res["target"]] if res["violation"] else [], worst_pair_tv=res["worst_pair_tv"],
        mass_error=res["mass_error"], n_steps=res["n_steps"], sigma=res["sigma"], release_gap=None, retries=0,
        atom_mass=0.0, seconds=time.perf_counter() - t0,
    )
    return row
