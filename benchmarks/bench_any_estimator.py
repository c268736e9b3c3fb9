"""Any estimator under eta-MIP: trained on MIP synthetic data vs trained on the real data.

Issue 22, points 3-4. On adult (32,561 rows, all 14 columns: 6 numeric, 8 categorical) and
German credit (1,000 rows, 20 columns), a 70/30 split stratified on the label (seed =
repetition); D is the 70% part. For a random forest and HistGradientBoosting (each in the
usual pipeline: categorical columns one-hot / ordinal encoded, numeric ones passed on):

* non-private, trained on a random half of D (the size of D_train; the reference of the issue's
  target) and on all of D;
* ``MIPNoiseWrapper(pipeline, eta)`` -- ``method="auto"`` takes ``method_="synthetic"``: an
  eta-MIP ``MIPTabularSynthesizer`` of (X, y) fitted on D (D_train a random half), the
  pipeline trained on as many synthetic records as D has.

Reported: test accuracy on the real 30%, wall time of the fit, and for each synthetic release
the mean 2-way total variation over all column pairs (label included) between a fresh sample
of the released synthesizer and D, on evaluation cells fixed from D (numeric columns: the
synthesizer's default domain, n_bins=10; categorical: their categories); the real half of D
gives the reference TV. Mean ± standard error over the repetitions.

Usage::

    python benchmarks/bench_any_estimator.py                 # 3 repetitions, eta = 0.1
    python benchmarks/bench_any_estimator.py --quick         # 1 repetition, adult on 5,000 rows
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
from _harness import load_frame, markdown_table  # the script's folder is on sys.path
from sklearn.compose import make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

from skmip import MIPNoiseWrapper
from skmip.domains import infer_domains
from skmip.exceptions import PrivacyWarning


def _categorical_columns(frame):
    return [c for c in frame.columns if frame[c].dtype.kind not in "fiub"]


def make_models(frame):
    """The two pipelines, built for the columns of ``frame``."""
    cats = _categorical_columns(frame)
    forest = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cats), remainder="passthrough"),
        RandomForestClassifier(n_estimators=100, min_samples_leaf=2, random_state=0, n_jobs=1),
    )
    boosting = make_pipeline(
        make_column_transformer(
            (OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), cats), remainder="passthrough"),
        HistGradientBoostingClassifier(categorical_features=list(range(len(cats))), random_state=0),
    )
    return {"RandomForest": forest, "HistGradientBoosting": boosting}


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


def _mean_se(values):
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
    return f"{v.mean():.3f} ± {se:.3f}" if v.size > 1 else f"{v.mean():.3f}"


def run(dataset, reps, eta, n_samples=None):
    X, y = load_frame(dataset, n_samples=n_samples)
    results = {}

    def add(key, acc=None, seconds=None, tv=None):
        row = results.setdefault(key, {"acc": [], "sec": [], "tv": []})
        for name, value in (("acc", acc), ("sec", seconds), ("tv", tv)):
            if value is not None:
                row[name].append(value)

    for rep in range(reps):
        D, X_te, y_D, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=rep)
        domains = infer_domains([D[c].to_numpy() for c in D.columns] + [y_D], list(D.columns) + ["label"],
                                n_bins=10, kinds={"label": "categorical"})
        real_codes = evaluation_codes(D, y_D, domains)
        half = np.random.default_rng(rep).choice(len(D), size=len(D) // 2, replace=False)
        add("real half of D", tv=mean_pairwise_tv(real_codes[half], real_codes))
        for name, model in make_models(X).items():
            for label, rows in (("half of D", half), ("all of D", None)):
                X_fit = D if rows is None else D.iloc[rows]
                y_fit = y_D if rows is None else y_D[rows]
                t0 = time.perf_counter()
                fitted = model.fit(X_fit, y_fit)
                add(f"{name}, non-private, {label}", acc=fitted.score(X_te, y_te), seconds=time.perf_counter() - t0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)  # fixed seeds, for the record
                t0 = time.perf_counter()
                w = MIPNoiseWrapper(model, eta=eta, random_state=1000 + rep).fit(D, y_D)
                seconds = time.perf_counter() - t0
            assert w.method_ == "synthetic" and w.mip_bound_ == eta
            X_s, y_s = w.synthesizer_.sample(len(D), random_state=rep)
            add(f"{name}, MIPNoiseWrapper(eta={eta}) -> method_='synthetic'", acc=w.score(X_te, y_te),
                seconds=seconds, tv=mean_pairwise_tv(evaluation_codes(X_s, y_s, domains), real_codes))
        print(f"  {dataset}: repetition {rep + 1}/{reps} done", flush=True)
    rows = [[key, _mean_se(r["acc"]) if r["acc"] else "-", _mean_se(r["tv"]) if r["tv"] else "-",
             f"{np.mean(r['sec']):.1f}" if r["sec"] else "-"] for key, r in results.items()]
    return markdown_table(["model / training data", "test accuracy", "mean 2-way TV vs D", "seconds per fit"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--eta", type=float, default=0.1)
    parser.add_argument("--quick", action="store_true", help="1 repetition, adult on 5,000 rows")
    parser.add_argument("--datasets", nargs="+", default=["adult", "german_credit"])
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    reps = 1 if args.quick else args.reps
    for dataset in args.datasets:
        n = 5000 if args.quick and dataset == "adult" else None
        t0 = time.perf_counter()
        table = run(dataset, reps, args.eta, n_samples=n)
        print(f"\n### {dataset} (eta = {args.eta}, {reps} repetition(s), {time.perf_counter() - t0:.0f} s)\n")
        print(table, flush=True)


if __name__ == "__main__":
    main()
