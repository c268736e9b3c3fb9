"""LiRA against the coupling-calibrated MIPNoiseWrapper in the exact Definition 1 game.

Run:  python benchmarks/bench_coupling_audit.py [--quick] [--pool 150] [--models 16]
      [--rounds 200] [--etas 0.2 0.3]

A pool of ``--pool`` rows of ``load_breast_cancer`` (uniform, seed 0), standardized with the
rows outside the pool (a public preprocessing choice). ``MIAttackScorer(attack="lira",
n_models=--models)`` plays the game with ``MIPNoiseWrapper(LogisticRegression(C=0.1),
method="coupling", train_size=1.0)``: each model is one run of the wrapper on the game's
member set, a uniform half of the pool, so the game is Definition 1 (the wrapper's
calibration sees the member set only and measures over halves of it: see docs/coupling.md
on what ``train_size=1.0`` certifies). eta-MIP bounds ``advantage_ = max(TPR - FPR)`` by
2 eta (Theorem 8 corrected); ``bound_holds_`` is the Clopper-Pearson check over all
thresholds. The unprotected model is audited in the same game for comparison.
Results are recorded in docs/coupling.md.
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

from skmip import MIPNoiseWrapper
from skmip.exceptions import PrivacyWarning
from skmip.audit.scoring import MIAttackScorer


def _pool(n_pool):
    X, y = load_breast_cancer(return_X_y=True)
    rows = np.random.default_rng(0).permutation(len(X))
    pool, rest = rows[:n_pool], rows[n_pool:]
    mu, sd = X[rest].mean(0), X[rest].std(0)
    return (X[pool] - mu) / sd, y[pool]


def _line(label, audit, seconds):
    check = audit.bound_check_
    margin = "" if check is None else f"{check.margin:+.3f}"
    bound = "-" if audit.bound_ is None else f"{audit.bound_:g} (2 eta = {2 * audit.bound_:g})"
    print(f"| {label} | {audit.advantage_:.3f} | {audit.roc_auc_:.3f} | {audit.tpr_at_fpr_:.3f} | "
          f"{bound} | {audit.bound_holds_} | {margin} | {seconds:.0f} |", flush=True)


def main(argv=None):
    parser = H.parser(__doc__, quick="pool 80, 8 models, 60 rounds, eta 0.3")
    parser.add_argument("--pool", type=int, default=150)
    parser.add_argument("--models", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--n-splits", type=int, default=64)
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--etas", nargs="+", type=float, default=[0.2, 0.3])
    args = H.parse(parser, argv, quick=dict(pool=80, models=8, rounds=60, n_splits=32, etas=[0.3]),
                   smoke=dict(pool=40, models=4, rounds=20, n_splits=8))
    warnings.simplefilter("ignore", PrivacyWarning)  # fixed seeds: an audit, not a release
    X, y = _pool(args.pool)
    learner = LogisticRegression(C=args.C, solver="newton-cholesky", tol=1e-10)
    print(f"pool {len(X)} rows of load_breast_cancer, LiRA (online), {args.models} models, "
          f"member rate 1/2, LogisticRegression(C={args.C}); coupling: {args.rounds} rounds, "
          f"{args.n_splits} subsets, 95% confidence")
    print("\n| model | advantage_ | roc_auc_ | TPR at FPR 0.001 | bound_ | bound_holds_ | "
          "margin | s |")
    print("|---|---|---|---|---|---|---|---|")
    t = time.perf_counter()
    audit = MIAttackScorer(learner, attack="lira", n_models=args.models, random_state=1).fit(X, y)
    _line("unprotected", audit, time.perf_counter() - t)
    for eta in args.etas:
        wrapper = MIPNoiseWrapper(learner, eta=eta, method="coupling", train_size=1.0,
                                  n_rounds=args.rounds, n_subsets=args.n_splits, random_state=0)
        t = time.perf_counter()
        audit = MIAttackScorer(wrapper, attack="lira", n_models=args.models, random_state=1).fit(X, y)
        _line(f"coupling, eta = {eta}", audit, time.perf_counter() - t)


if __name__ == "__main__":
    main()
