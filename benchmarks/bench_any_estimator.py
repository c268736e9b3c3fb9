"""Your pipeline, your estimator: every defense side by side at one promise, in one run.

Issue 22, point 4. On adult and German credit, for three models -- ``LogisticRegression(C=0.1)``
in the standard pipeline (``ColumnTransformer(OneHotEncoder, StandardScaler)``), a random forest
(one-hot encoded categorical columns) and HistGradientBoosting (ordinal-encoded categorical
columns, declared categorical) -- and the defenses at the promise eta (default 0.1):

* **non-private**, trained on a random half of D (the size of D_train) and on all of D;
* **MIP, ``method="auto"``**: ``MIPNoiseWrapper(model, eta)``; the route it takes is reported
  (``method_``: ``"coupling"`` for the linear pipeline, ``"synthetic"`` for the trees);
* **SubsampledDPClassifier** (linear model only): the pipeline's transformers fitted on D, then
  ``SubsampledDPClassifier(DPLogisticRegression, train_size=0.5, target_bound=0.5 + eta)``;
  at T = 0.5 and delta = 0 Thudi et al.'s positive-accuracy bound ``1 / (1 + e^-eps)`` equals
  ``1/2 + eta`` exactly at ``eps = mip_to_dp_epsilon(eta)`` (Izzo et al., Theorem 4), the
  epsilon an eps-DP learner needs to promise eta-MIP on a uniform half;
* **DP-SGD** (linear model only): the transformers fitted on D, then ``DPSGDLogisticRegression``
  on a random half of D with the noise multiplier whose rigorous replace-one MIP level
  (:func:`skmip.bounds.dpsgd_eta`, the fitted ``mip_bound_``) is eta;
* **DP synthesizer**: the model trained on as many records as D has, drawn from
  ``DPMarginalSynthesizer`` (pure DP, Laplace, ``epsilon = mip_to_dp_epsilon(eta)``: Theorem 4)
  on D's coded columns (the domains of ``MIPTabularSynthesizer``'s defaults: ``n_bins=10``,
  ``min_frequency=0.01``) with the label-conditioned Chow-Liu tree of D as its structure
  (given to the baseline for free: DP does not cover a structure chosen from D).

Utility: a 70/30 split stratified on the label (seed = repetition); D is the 70% part (adult:
a stratified subsample of ``--adult-rows`` rows first). Test accuracy on the real 30% (mean ±
standard error over repetitions) and wall seconds per fit.

Audit: ``MIAttackScorer(defense, n_models=M, fpr=0.01)`` with the default attack ("auto": RMIA
and LiRA, online and offline, and LOSS, the strongest reported) on a pool of ``--audit-rows``
rows, member sets exact halves of the pool (Definition 1 with k = n/2). Each game model is the
defense trained on its member set as its D_train (``train_size=1.0``: MIP wrapper, DP-SGD, DP
synthesizer; SubsampledDPClassifier keeps its own Poisson half of the member set); the
transformers and domains are then fitted on the member set, which the game can only make
easier to attack. Reported: TPR at 1% FPR of the strongest attack (eta-MIP bounds it by
0.01 + 2 eta, Theorem 8 corrected).

Results and their reading: docs/pipelines.md, "Every defense side by side".

Usage::

    python benchmarks/bench_any_estimator.py            # 3 repetitions, adult on 5,000 rows
    python benchmarks/bench_any_estimator.py --quick    # 1 repetition, small pools (smoke test)
"""

from __future__ import annotations

import functools
import math
import time
import warnings

import numpy as np
import _harness as H  # the script's folder is on sys.path
from _harness import load_frame, markdown_table
from scipy.optimize import brentq
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.compose import make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted

from skmip import DPLogisticRegression, DPMarginalSynthesizer, MIAttackScorer, MIPNoiseWrapper, SubsampledDPClassifier
from skmip.utils.rng import resolve_rng
from skmip.bounds import dpsgd_eta, mip_to_dp_epsilon
from skmip.release.dp_baselines import gaussian_noise_scale
from skmip.release.domains import infer_domains
from skmip.exceptions import TrainingFailedError
from skmip.release.marginals import chow_liu_tree

LINEAR = "LogisticRegression (pipeline)"
GAUSS_DELTA = 1e-6
DEFENSES = ("non-private, half of D", "non-private, all of D", "MIP auto", "SubsampledDPClassifier",
            "DP-SGD", "DP synthesizer")
NOT_APPLICABLE = {
    "SubsampledDPClassifier": "n/a (needs an eps-DP learner; skmip has none for trees)",
    "DP-SGD": "n/a (trees take no gradient steps)",
}


def _categorical_columns(frame):
    return [c for c in frame.columns if frame[c].dtype.kind not in "fiub"]


def make_models(frame):
    """The three models, built for the columns of ``frame``."""
    cats = _categorical_columns(frame)
    nums = [c for c in frame.columns if c not in cats]
    linear = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cats), (StandardScaler(), nums)),
        LogisticRegression(C=0.1, max_iter=1000),
    )
    forest = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cats), remainder="passthrough"),
        RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=0, n_jobs=1),
    )
    boosting = make_pipeline(
        make_column_transformer(
            (OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), cats), remainder="passthrough"),
        HistGradientBoostingClassifier(categorical_features=list(range(len(cats))), random_state=0),
    )
    return {LINEAR: linear, "RandomForest": forest, "HistGradientBoosting": boosting}


def _rows(rng, n, train_size):
    return np.arange(n) if train_size == 1.0 else np.sort(rng.choice(n, size=int(round(train_size * n)),
                                                                      replace=False))


def _take(X, rows):
    return X.iloc[rows] if hasattr(X, "iloc") else X[rows]


def _dense(Z):
    return Z.toarray() if hasattr(Z, "toarray") else Z  # the DP learners take dense rows


class PoolTransformed(ClassifierMixin, BaseEstimator):
    """``transformer`` fitted on all of D, ``learner`` on the transformed rows of a random subset.

    The pipeline route's design (docs/pipelines.md, design (a)) for learners that take numbers
    only: the DP learners. ``train_size=1.0`` trains on every row passed (D_train itself).
    """

    def __init__(self, transformer=None, learner=None, train_size=0.5, random_state=None):
        self.transformer = transformer
        self.learner = learner
        self.train_size = train_size
        self.random_state = random_state

    def fit(self, X, y):
        rng = resolve_rng(self.random_state)
        self.transformer_ = clone(self.transformer).fit(X)
        rows = _rows(rng, len(y), self.train_size)
        learner = clone(self.learner)
        if "random_state" in learner.get_params():
            learner.set_params(random_state=int(rng.integers(2**31)))
        y = np.asarray(y)
        self.learner_ = learner.fit(_dense(self.transformer_.transform(_take(X, rows))), y[rows])
        self.classes_ = self.learner_.classes_
        return self

    def predict(self, X):
        check_is_fitted(self)
        return self.learner_.predict(_dense(self.transformer_.transform(X)))

    def predict_proba(self, X):
        check_is_fitted(self)
        return self.learner_.predict_proba(_dense(self.transformer_.transform(X)))


@functools.lru_cache(maxsize=None)
def dpsgd_sigma_for_eta(eta, sample_rate, n_steps):
    """The smallest noise multiplier (to 1e-3 relative) whose rigorous MIP level is <= eta."""
    f = lambda log_s: dpsgd_eta(math.exp(log_s), sample_rate, n_steps) - eta  # noqa: E731
    log_s = brentq(f, math.log(0.5), math.log(200.0), xtol=1e-3)  # eta(0.5) ~ 0.5: no need below
    while f(log_s) > 0:  # the root is bracketed to xtol; step to its safe side
        log_s += 1e-3
    return math.exp(log_s)


class DPSGDAtEta(ClassifierMixin, BaseEstimator):
    """``DPSGDLogisticRegression`` whose noise multiplier gives ``mip_bound_ <= eta`` at fit's n."""

    def __init__(self, eta=0.1, max_epochs=10, batch_size=64, lr=0.5, random_state=None):
        self.eta = eta
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.random_state = random_state

    def fit(self, X, y):
        from skmip.nn import DPSGDLogisticRegression

        n = X.shape[0]
        q = self.batch_size / n
        steps = self.max_epochs * max(1, int(1 / q))  # Poisson batches: int(1/q) steps an epoch
        sigma = dpsgd_sigma_for_eta(self.eta, q, steps)
        self.model_ = DPSGDLogisticRegression(noise_multiplier=sigma, max_epochs=self.max_epochs,
                                              batch_size=self.batch_size, lr=self.lr,
                                              random_state=self.random_state).fit(X, y)
        assert self.model_.mip_bound_ <= self.eta * (1 + 1e-9), self.model_.mip_bound_
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


class DPSyntheticTraining(ClassifierMixin, BaseEstimator):
    """``estimator`` trained on records of a DP marginal synthesizer of ``(X, y)`` at eta's epsilon.

    The DP baseline of the synthetic route: the same domains and the same label-conditioned
    Chow-Liu tree as ``MIPTabularSynthesizer``'s defaults, Laplace noise at
    ``epsilon = mip_to_dp_epsilon(eta)`` instead of the coupling-calibrated Gaussian.
    """

    def __init__(self, estimator=None, eta=0.1, n_bins=10, min_frequency=0.01, train_size=0.5,
                 random_state=None):
        self.estimator = estimator
        self.eta = eta
        self.n_bins = n_bins
        self.min_frequency = min_frequency
        self.train_size = train_size
        self.random_state = random_state

    def fit(self, X, y):
        import pandas as pd

        rng = resolve_rng(self.random_state)
        names = list(X.columns)
        y = np.asarray(y)
        label = object()
        columns = [X[c].to_numpy() for c in names] + [y]
        domains = infer_domains(columns, names + [label], n_bins=self.n_bins, kinds={label: "categorical"},
                                min_frequency=self.min_frequency, keep={label})
        codes = np.stack([d.encode(c) for d, c in zip(domains, columns)], axis=1)
        t = codes.shape[1] - 1
        edges = chow_liu_tree(codes, given=t)  # a function of D, as MIPMarginalSynthesizer's tree
        structure = [tuple(sorted((t, edges[0][0])))] + [tuple(sorted((t, a, b))) for a, b in edges]
        # The smaller noise of the two mechanisms at the equal promise (a function of the
        # number of tables only): pure DP by Laplace, sd 2 sqrt(2) m / eps, or the analytic
        # Gaussian at delta = 1e-6, sd = gaussian_noise_scale(eps(eta, delta), delta, sqrt(2 m)).
        m = len(structure)
        eps_pure, eps_gauss = float(mip_to_dp_epsilon(self.eta)), float(mip_to_dp_epsilon(self.eta, GAUSS_DELTA))
        gauss = gaussian_noise_scale(eps_gauss, GAUSS_DELTA, math.sqrt(2.0 * m)) < 2.0 * math.sqrt(2.0) * m / eps_pure
        self.epsilon_, self.delta_ = (eps_gauss, GAUSS_DELTA) if gauss else (eps_pure, 0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the seed is drawn from this estimator's generator
            synth = DPMarginalSynthesizer(epsilon=self.epsilon_, delta=self.delta_, marginals=structure,
                                          train_size=self.train_size,
                                          random_state=int(rng.integers(2**31))).fit(codes)
        for _ in range(10):  # resampling the same release is post-processing
            sampled = synth.sample(len(y), random_state=rng)
            if len(np.unique(sampled[:, t])) == len(np.unique(y)):
                break
        else:
            raise ValueError("the DP synthesizer's samples held one class in 10 draws from its release")
        values = {name: domains[j].decode(sampled[:, j], rng) for j, name in enumerate(names)}
        X_s = pd.DataFrame(values)
        for c in names:
            if X[c].dtype.kind in "fiu":
                X_s[c] = X_s[c].astype(float)
        y_s = domains[t].decode(sampled[:, t], rng).astype(y.dtype)
        self.noise_scale_ = synth.noise_scale_
        self.sample_ = (X_s, y_s)  # for the benchmark's TV column
        self.estimator_ = clone(self.estimator).fit(X_s, y_s)
        self.classes_ = self.estimator_.classes_
        return self

    def predict(self, X):
        return self.estimator_.predict(X)

    def predict_proba(self, X):
        return self.estimator_.predict_proba(X)


def make_defense(defense, name, model, eta, *, audit, seed=None):
    """The estimator of ``defense`` for ``model``, or an "n/a: why" string.

    ``audit=True`` builds the game's version: trained on every row it is given (its D_train).
    """
    train_size = 1.0 if audit else 0.5
    if defense.startswith("non-private"):
        return clone(model)
    if defense == "MIP auto":
        return MIPNoiseWrapper(clone(model), eta=eta, train_size=train_size, random_state=seed)
    if defense == "DP synthesizer":
        return DPSyntheticTraining(clone(model), eta=eta, train_size=train_size, random_state=seed)
    if name != LINEAR:
        return NOT_APPLICABLE[defense]
    transformer = clone(model[:-1])
    if defense == "SubsampledDPClassifier":
        # Rows of the one-hot + scaled design have squared norm about the number of raw columns.
        cols = sum(len(c) for _, _, c in model[0].transformers)
        learner = SubsampledDPClassifier(DPLogisticRegression(data_norm=math.sqrt(cols), C=0.1),
                                         train_size=0.5, target_bound=0.5 + eta)
        return PoolTransformed(transformer, learner, train_size=1.0, random_state=seed)
    if defense == "DP-SGD":
        return PoolTransformed(transformer, DPSGDAtEta(eta=eta), train_size=train_size, random_state=seed)
    raise ValueError(defense)


def _describe(defense, fitted):
    if defense == "MIP auto":
        return f"MIPNoiseWrapper -> method_='{fitted.method_}'"
    if defense == "SubsampledDPClassifier":
        inner = fitted.learner_
        return f"SubsampledDPClassifier (T=0.5, eps={inner.epsilon_:.3f})"
    if defense == "DP-SGD":
        m = fitted.learner_.model_
        return f"DP-SGD (sigma={m.noise_multiplier_:.2f}, eta={m.mip_bound_:.3f})"
    if defense == "DP synthesizer":
        mech = f"Gaussian, eps={fitted.epsilon_:.3f}, delta={fitted.delta_:g}" if fitted.delta_ else \
            f"Laplace, eps={fitted.epsilon_:.3f}"
        return f"DP synthesizer ({mech})"
    return defense


def evaluation_codes(frame, y, domains):
    columns = [frame[d.name].to_numpy() for d in domains[:-1]] + [np.asarray(y)]
    return np.stack([d.encode(c) for d, c in zip(domains, columns)], axis=1)


def mean_pairwise_tv(A, B):
    """Mean over all column pairs of the total variation between two 2-way tables of codes."""
    tvs = []
    for i in range(A.shape[1]):
        for j in range(i + 1, A.shape[1]):
            size = int(max(A[:, j].max(), B[:, j].max())) + 1
            ka, kb = A[:, i] * size + A[:, j], B[:, i] * size + B[:, j]
            m = int(max(ka.max(), kb.max())) + 1
            tvs.append(0.5 * np.abs(np.bincount(ka, minlength=m) / len(ka) - np.bincount(kb, minlength=m) / len(kb)).sum())
    return float(np.mean(tvs))


def _mean_se(values, digits=3):
    v = np.asarray(values, dtype=float)
    if v.size > 1:
        return f"{v.mean():.{digits}f} ± {v.std(ddof=1) / np.sqrt(v.size):.{digits}f}"
    return f"{v.mean():.{digits}f}"


def utility(X, y, reps, eta, models, log):
    """``{(model, defense): {"acc", "sec", "tv": [...], "what": str}}`` over ``reps`` splits."""
    out = {}
    for rep in range(reps):
        D, X_te, y_D, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=rep)
        half = np.sort(np.random.default_rng(rep).choice(len(D), size=len(D) // 2, replace=False))
        # Evaluation cells of the TV column, fixed from D (numeric: n_bins=10; categorical: all).
        domains = infer_domains([D[c].to_numpy() for c in D.columns] + [y_D], list(D.columns) + ["label"],
                                n_bins=10, kinds={"label": "categorical"})
        real_codes = evaluation_codes(D, y_D, domains)
        ref = out.setdefault(("-", "real half of D"), {"acc": [], "sec": [], "tv": [], "what": "real half of D",
                                                       "failed": 0})
        ref["tv"].append(mean_pairwise_tv(real_codes[half], real_codes))
        for name, model in make_models(X).items():
            if name not in models:
                continue
            for defense in DEFENSES:
                est = make_defense(defense, name, model, eta, audit=False, seed=1000 + rep)
                row = out.setdefault((name, defense), {"acc": [], "sec": [], "tv": [], "what": defense, "failed": 0})
                if isinstance(est, str):
                    row["na"] = est
                    continue
                X_fit, y_fit = (D.iloc[half], y_D[half]) if defense == "non-private, half of D" else (D, y_D)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # fixed seeds (for the record), convergence notes
                    t0 = time.perf_counter()
                    try:
                        est.fit(X_fit, y_fit)
                    except ValueError as e:  # the DP synthesizer's one-class samples
                        row["failed"] += 1
                        log(f"    rep {rep}: {name} / {defense}: failed: {e}")
                        continue
                    row["sec"].append(time.perf_counter() - t0)
                    row["acc"].append(est.score(X_te, y_te))
                if defense == "SubsampledDPClassifier":  # Thudi's bound at 1/2 + eta is Theorem 4's epsilon
                    assert np.isclose(est.learner_.epsilon_, mip_to_dp_epsilon(eta), rtol=1e-9, atol=0)
                sample = None
                if defense == "MIP auto" and est.method_ == "synthetic":
                    sample = est.synthesizer_.sample(len(D), random_state=rep)
                elif defense == "DP synthesizer":
                    sample = est.sample_
                if sample is not None:
                    row["tv"].append(mean_pairwise_tv(evaluation_codes(*sample, domains), real_codes))
                row["what"] = _describe(defense, est)
                log(f"    rep {rep}: {name} / {row['what']}: acc {row['acc'][-1]:.3f}, {row['sec'][-1]:.1f} s")
    return out


def audit(X, y, eta, rows, n_models, models, log):
    """``{(model, defense): TPR at 1% FPR or a note}`` on a stratified pool of ``rows`` rows."""
    if rows < len(y):
        X, _, y, _ = train_test_split(X, y, train_size=rows, stratify=y, random_state=0)
    out = {}
    for name, model in make_models(X).items():
        if name not in models:
            continue
        for defense in DEFENSES:
            if defense == "non-private, all of D":
                continue  # the game's non-private model is the row above (trained on its member set)
            est = make_defense(defense, name, model, eta, audit=True)
            if isinstance(est, str):
                continue
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    scorer = MIAttackScorer(est, n_models=n_models, fpr=0.01, random_state=0).fit(X, y)
                    out[(name, defense)] = f"{scorer.tpr_at_fpr_:.3f} ({scorer.best_attack_})"
                except (TrainingFailedError, ValueError) as e:  # e.g. one-class samples at small n
                    out[(name, defense)] = f"no model trained: {type(e).__name__}"
                    log(f"      {e}")
            log(f"    audit {name} / {defense}: {out[(name, defense)]} ({time.perf_counter() - t0:.0f} s)")
    return out


def table(util, tpr):
    rows = []
    for (name, defense), r in util.items():
        if "na" in r:
            rows.append([name, defense, r["na"], "-", "-", "-"])
            continue
        acc = _mean_se(r["acc"]) if r["acc"] else "-"
        if r["failed"]:
            acc += f" ({r['failed']} fit(s) failed: one-class samples)"
        tv = _mean_se(r["tv"]) if r["tv"] else "-"
        sec = f"{np.mean(r['sec']):.1f}" if r["sec"] else "-"
        rows.append([name, r["what"], acc, tv, sec, tpr.get((name, defense), "-")])
    return markdown_table(["model", "defense (route)", "test accuracy", "2-way TV vs D", "fit seconds",
                           "audit TPR at 1% FPR"], rows)


def main(argv=None):
    parser = H.parser(__doc__, reps=3, quick="smoke test: 1 repetition, adult on 2,000 rows, 300-row pools, "
                                              "4 game models")
    parser.add_argument("--eta", type=float, default=0.1)
    parser.add_argument("--adult-rows", type=int, default=5000, help="adult subsample (0: all 32,561 rows)")
    parser.add_argument("--audit-rows", type=int, default=1000, help="pool of the membership game (0: no audit)")
    parser.add_argument("--n-models", type=int, default=8, help="models of the membership game")
    parser.add_argument("--datasets", nargs="+", default=["adult", "german_credit"])
    parser.add_argument("--models", nargs="+", default=["linear", "forest", "boosting"],
                        choices=["linear", "forest", "boosting"])
    args = H.parse(parser, argv, blas_threads=1, quick=dict(reps=1, adult_rows=2000, audit_rows=300, n_models=4),
                   smoke=dict(datasets=["adult"], adult_rows=400, models=["linear"], audit_rows=0))
    log = lambda s: print(s, flush=True)  # noqa: E731
    for dataset in args.datasets:
        t0 = time.perf_counter()
        X, y = load_frame(dataset)
        if dataset == "adult" and 0 < args.adult_rows < len(y):
            X, _, y, _ = train_test_split(X, y, train_size=args.adult_rows, stratify=y, random_state=0)
            X = X.reset_index(drop=True)
        log(f"## {dataset}: {len(y)} rows, {X.shape[1]} columns")
        models = {m: n for m, n in zip(("linear", "forest", "boosting"), make_models(X))}
        models = {models[m] for m in args.models}
        util = utility(X, y, args.reps, args.eta, models, log)
        tpr = audit(X, y, args.eta, args.audit_rows, args.n_models, models, log) if args.audit_rows else {}
        print(f"\n### {dataset} ({len(y)} rows; eta = {args.eta}, {args.reps} repetition(s); audit: "
              f"{min(args.audit_rows, len(y))}-row pool, {args.n_models} models; "
              f"{time.perf_counter() - t0:.0f} s)\n")
        print(table(util, tpr), flush=True)


if __name__ == "__main__":
    main()
