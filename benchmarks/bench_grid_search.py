"""Choosing eta by cross-validation: GridSearchCV(MIPNoiseWrapper) against MIPNoiseWrapperCV.

Run:  python benchmarks/bench_grid_search.py [--n-jobs 2] [--cv 5] [--n-rounds 400]

On ``load_breast_cancer`` (standardized, as the README quickstart), times side by side in one
run (a) ``GridSearchCV(MIPNoiseWrapper(LogisticRegression(C=0.1)), {"eta": ETAS}, cv=5)``,
which calibrates the noise once per (fold, eta) and once more for the refit, (b)
``MIPNoiseWrapperCV(LogisticRegression(C=0.1), etas=ETAS, cv=5)``, which calibrates once per
fold for all etas and once for the refit, and (c) the non-private
``GridSearchCV(LogisticRegression(C=0.1), {"C": ...})`` for scale. Prints the times, the
ratio (a) / (b), the chosen eta and the scores. The machine's load (``os.getloadavg``) is
printed beside the times: on a shared machine they are inflated. So is the CPU time of this
process and its worker processes (``psutil``, where installed), which waiting for a core does
not inflate: on an idle 2-core machine the wall time is at least half of it. Results are recorded in
docs/coupling.md ("Choosing eta by cross-validation") and docs/benchmarks.md.
"""

from __future__ import annotations

import os
import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

from skmip import MIPNoiseWrapper, MIPNoiseWrapperCV
from skmip.exceptions import PrivacyWarning

ETAS = [0.05, 0.1, 0.2, 0.3]


def _load():
    try:
        return "load average %.1f / %.1f / %.1f (1, 5, 15 min)" % os.getloadavg()
    except (AttributeError, OSError):
        return "load average unknown"


def _cpu_seconds():
    """User + system CPU seconds of this process and all its (worker) descendants."""
    try:
        import psutil
    except ImportError:
        return float("nan")
    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def _timed(label, make, X, y):
    print(f"{label}: {_load()} before", flush=True)
    cpu = _cpu_seconds()
    start = time.perf_counter()
    fitted = make().fit(X, y)
    seconds = time.perf_counter() - start
    # joblib's workers outlive the call, so their CPU time is still counted here.
    cpu = _cpu_seconds() - cpu
    print(f"{label}: {seconds:.1f} s wall, {cpu:.1f} CPU s, {_load()} after", flush=True)
    return fitted, seconds, cpu


def main(argv=None):
    parser = H.parser(__doc__, n_jobs=2)
    parser.add_argument("--cv", type=int, default=5)
    parser.add_argument("--n-rounds", type=int, default=400, help="MIPNoiseWrapper's default is 400")
    parser.add_argument("--skip-grid", action="store_true", help="time only MIPNoiseWrapperCV and the plain search")
    # --smoke: MIPNoiseWrapperCV and the plain search only, 2 folds, 130 rounds (eta 0.05 needs 123), one process.
    args = H.parse(parser, argv, smoke=dict(n_jobs=1, cv=2, n_rounds=130, skip_grid=True))

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)  # a public preprocessing choice, as in the README
    model = LogisticRegression(C=0.1)
    print(f"load_breast_cancer: {X.shape[0]} rows, {X.shape[1]} features; etas {ETAS}; cv={args.cv}; "
          f"n_jobs={args.n_jobs}; n_rounds={args.n_rounds}; {os.cpu_count()} CPUs")

    plain, t_plain, c_plain = _timed(
        "(c) GridSearchCV(LogisticRegression), non-private",
        lambda: GridSearchCV(model, {"C": [0.01, 0.1, 1.0, 10.0]}, cv=args.cv, n_jobs=args.n_jobs), X, y,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        cv_search, t_cv, c_cv = _timed(
            "(b) MIPNoiseWrapperCV",
            lambda: MIPNoiseWrapperCV(model, etas=ETAS, cv=args.cv, n_jobs=args.n_jobs,
                                      n_rounds=args.n_rounds), X, y,
        )
        if not args.skip_grid:
            grid, t_grid, c_grid = _timed(
                "(a) GridSearchCV(MIPNoiseWrapper)",
                lambda: GridSearchCV(MIPNoiseWrapper(model, n_rounds=args.n_rounds), {"eta": ETAS},
                                     cv=args.cv, n_jobs=args.n_jobs), X, y,
            )

    print("\nmean CV accuracy per eta (+- standard error over folds):")
    se = cv_search.cv_results_["se_test_score"]
    row = "  ".join(f"{e:g}: {m:.3f} +- {s:.3f}" for e, m, s in
                    zip(ETAS, cv_search.cv_results_["mean_test_score"], se))
    print(f"  (b) MIPNoiseWrapperCV        {row}")
    if not args.skip_grid:
        g = grid.cv_results_
        se_g = np.std([g[f"split{i}_test_score"] for i in range(args.cv)], axis=0, ddof=1) / np.sqrt(args.cv)
        row = "  ".join(f"{e:g}: {m:.3f} +- {s:.3f}" for e, m, s in zip(ETAS, g["mean_test_score"], se_g))
        print(f"  (a) GridSearchCV(wrapper)    {row}")
    print(f"  (c) non-private, best C={plain.best_params_['C']:g}: {plain.best_score_:.3f}")
    print(f"\nchosen eta: (b) eta_={cv_search.eta_:g} by the one-standard-error rule "
          f"(best mean at eta={cv_search.etas_[np.argmax(cv_search.cv_results_['mean_test_score'])]:g})"
          + ("" if args.skip_grid else f"; (a) best_params_={grid.best_params_} (best mean)"))
    print(f"\nwall: (a) {'-' if args.skip_grid else f'{t_grid:.1f} s'}, (b) {t_cv:.1f} s, "
          f"(c) {t_plain:.2f} s" + ("" if args.skip_grid else f"; (a) / (b) = {t_grid / t_cv:.2f}x"))
    print(f"CPU:  (a) {'-' if args.skip_grid else f'{c_grid:.1f} s'}, (b) {c_cv:.1f} s, "
          f"(c) {c_plain:.2f} s" + ("" if args.skip_grid else f"; (a) / (b) = {c_grid / c_cv:.2f}x"))
    print("target (issue 12, 4): the search over the 4 etas with cv=5 in <= 60 s on 2 cores")


if __name__ == "__main__":
    main()
