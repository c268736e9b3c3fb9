"""Membership-inference audit benchmarks: attacks on real data, the MIP wrapper, game cost.

Run:  python benchmarks/bench_audit.py [--section attacks|mip|cost|glir|rmia|all] [--quick]

1. **attacks** -- LOSS, LiRA (online with the automatic variance choice, online with per-row
   variances, offline) and RMIA (online, offline) against overfitting models on bundled
   datasets, with 16 and 64 models: AUC, TPR at 0.1% and 1% FPR, best advantage and the
   Clopper-Pearson empirical epsilon (delta = 1e-5), all from one game per (target, K).
2. **mip** -- ``MIPNoiseWrapper(LogisticRegression(), train_size=1.0)`` audited by online LiRA
   for eta in {0.5, 0.3, 0.2, 0.1, 0.05} and both radius laws (the game's random half is the
   wrapper's D_train: Izzo et al.'s Definition 1 exactly), against the un-noised model:
   measured advantage, AUC, TPR@1% and the bound check of ``MIAttackScorer`` (margin: the
   largest Clopper-Pearson-confident excess of TPR - FPR over 2 eta along the curve).
3. **glir** -- GLiR (Leemann et al., Algorithm 1) with closed-form logistic-regression
   gradients on one full-batch gradient step, against the AUC that Corollary 5.1's mu_step
   predicts for K = d.
4. **cost** -- wall time of the game against K plain fits, measured side by side in this run
   (targets: <= 1.1x with n_jobs=1, close to 2x faster with n_jobs=2), and the peak memory of
   the game against the size of the K fitted models it does not keep.

5. **rmia** -- wall time of RMIA (online, and offline with ``a`` tuned per target) on a
   synthetic game of n = 1000 rows at K = 16, 64 and 256 models, median of ``--repeats``
   runs, with the time per model: constant when the cost is linear in K.

Results are recorded in docs/auditing.md together with this command.
"""

from __future__ import annotations

import gc
import os
import pickle
import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from skmip.audit.attacks import get_attack
from skmip.audit.game import play_membership_game
from skmip.audit.metrics import (
    empirical_epsilon,
    membership_advantage,
    mi_roc_auc,
    tpr_at_fpr,
)

ATTACKS = ["loss", "lira", "lira_local", "lira_offline", "rmia", "rmia_offline"]


def _digits(n=None, seed=0):
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    if n is not None:
        rows = np.random.default_rng(seed).permutation(len(y))[:n]
        X, y = X[rows], y[rows]
    return X, y


def _cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y  # public preprocessing of the audit pool


def _targets(quick):
    targets = [
        ("digits[400] LogReg(C=10)", LogisticRegression(C=10, max_iter=1000), _digits(400)),
        ("breast_cancer RandomForest", RandomForestClassifier(n_estimators=100), _cancer()),
    ]
    if not quick:
        targets.append(("digits MLP(64), alpha=0",
                        MLPClassifier((64,), alpha=0.0, max_iter=200), _digits()))
    return targets


def section_attacks(quick, seed):
    print("\n1. Attacks against overfitting models (one game per row; every (model, record) is a trial)")
    header = f"{'target':<28}{'K':>4}{'attack':>14}{'AUC':>8}{'TPR@0.1%':>10}{'TPR@1%':>9}{'adv':>7}{'eps_lb':>8}"
    print(header)
    print("-" * len(header))
    for name, est, (X, y) in _targets(quick)[:1 if H.smoke() else None]:
        for K in ((4,) if H.smoke() else (16,) if quick else (16, 64)):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # MLP convergence warnings
                game = play_membership_game(est, X, y, n_models=K, random_state=seed, n_jobs=-1)
            fit_s = time.perf_counter() - t0
            for attack in ATTACKS:
                s = get_attack(attack).score(game)
                m = game.membership
                print(f"{name:<28}{K:>4}{attack:>14}{mi_roc_auc(m, s):>8.3f}"
                      f"{tpr_at_fpr(m, s, 0.001):>10.4f}{tpr_at_fpr(m, s, 0.01):>9.4f}"
                      f"{membership_advantage(m, s):>7.3f}{empirical_epsilon(m, s, delta=1e-5):>8.2f}")
            print(f"{'':<28}({K} fits + predictions: {fit_s:.1f} s; {m.size} trials)")


def section_mip(quick, seed):
    from skmip import MIPNoiseWrapper
    from skmip.audit.scoring import MIAttackScorer

    X, y = _cancer()
    K = 4 if H.smoke() else 16 if quick else 32
    n_splits = 8 if H.smoke() else 16 if quick else 64
    etas = (0.3,) if H.smoke() else (0.5, 0.3, 0.2, 0.1, 0.05)
    # method="moments": the section measures Corollary 10's noise under both radius laws (the
    # wrapper's default is the coupling calibration since issue 12).
    print(f"\n2. MIPNoiseWrapper(LogisticRegression(), method='moments', train_size=1.0, n_subsets={n_splits}) on "
          f"breast_cancer, online LiRA, K={K} ({K * len(y)} trials)")
    header = f"{'model':<26}{'AUC':>7}{'TPR@1%':>8}{'adv':>7}{'2 eta':>7}{'margin':>8}{'holds':>7}"
    print(header)
    print("-" * len(header))

    def row(label, audit, eta):
        margin = f"{audit.bound_check_.margin:+.3f}" if audit.bound_check_ is not None else "-"
        holds = str(audit.bound_holds_) if audit.bound_holds_ is not None else "-"
        two_eta = f"{2 * eta:.2f}" if eta is not None else "-"
        print(f"{label:<26}{audit.roc_auc_:>7.3f}{audit.tpr_at_fpr_:>8.4f}{audit.advantage_:>7.3f}"
              f"{two_eta:>7}{margin:>8}{holds:>7}")

    clean = MIAttackScorer(LogisticRegression(), n_models=K, fpr=0.01, random_state=seed, n_jobs=-1).fit(X, y)
    row("un-noised", clean, None)
    for radius in ("gamma", "laplace"):
        for eta in etas:
            wrapper = MIPNoiseWrapper(LogisticRegression(), eta=eta, method="moments", n_subsets=n_splits,
                                      train_size=1.0, radius=radius)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the Laplace radius' PrivacyWarning
                audit = MIAttackScorer(wrapper, n_models=K, fpr=0.01, random_state=seed, n_jobs=-1).fit(X, y)
            row(f"eta={eta:<5} radius={radius}", audit, eta)

    # How much do AUCs move by chance in such a game? Permute each model's membership row (the
    # null hypothesis holds exactly) and re-attack the same signals.
    from skmip.audit.attacks import lira_scores

    wrapper = MIPNoiseWrapper(LogisticRegression(), eta=0.5, method="moments", n_subsets=n_splits, train_size=1.0)
    game = play_membership_game(wrapper, X, y, n_models=K, random_state=seed, n_jobs=-1)
    rng = np.random.default_rng(seed)
    null = []
    for _ in range(20):
        perm = np.array([rng.permutation(r) for r in game.membership])
        null.append(mi_roc_auc(perm, lira_scores(game.signal, perm)))
    n_pos = int(game.membership.sum())
    n_neg = game.membership.size - n_pos
    independent = np.sqrt((n_pos + n_neg + 1) / (12.0 * n_pos * n_neg))
    print(f"null AUC over 20 membership permutations (eta=0.5, gamma): mean {np.mean(null):.4f}, "
          f"sd {np.std(null, ddof=1):.4f} (independent trials would give {independent:.4f})")


def section_glir(quick, seed):
    """GLiR on real gradients: one full-batch gradient step of logistic regression."""
    from skmip.audit.attacks import glir_scores, logistic_per_sample_gradients
    from skmip.bounds import gmip_mu_step
    from scipy.stats import norm

    X, y = _cancer()
    d = X.shape[1] + 1
    rng = np.random.default_rng(seed)
    # A public starting point: a model fitted on 100 rows that are then left out of the pool.
    public = rng.permutation(len(y))
    start = LogisticRegression(C=0.01).fit(X[public[:100]], y[public[:100]])
    X, y = X[public[100:]], y[public[100:]]
    grads = logistic_per_sample_gradients(start, X, y)
    reps = 20 if H.smoke() else 100 if quick else 400
    print(f"\n4. GLiR (Leemann Alg. 1) on one gradient step of logistic regression, breast_cancer, "
          f"d = {d}, {reps} batches per n")
    print(f"{'n':>5}{'AUC':>8}{'TPR@1%':>9}{'AUC from mu_step (K = d)':>26}")
    for n in (16, 32, 64, 128):
        member, scores = [], []
        for _ in range(reps):
            perm = rng.permutation(len(y))
            batch, outside, background = perm[:n], perm[n:2 * n], perm[2 * n:]
            m = grads[batch].mean(axis=0)
            queries = np.vstack([grads[batch], grads[outside]])
            scores.append(glir_scores(m, queries, grads[background], batch_size=n, ridge=1e-6))
            member.append(np.r_[np.ones(n, bool), np.zeros(n, bool)])
        m_, s_ = np.concatenate(member), np.concatenate(scores)
        mu = gmip_mu_step(n, d)
        print(f"{n:>5}{mi_roc_auc(m_, s_):>8.3f}{tpr_at_fpr(m_, s_, 0.01):>9.4f}"
              f"{norm.cdf(mu / np.sqrt(2)):>26.3f}")


def _burn(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def _control_speedup(repeats):
    """joblib speed-up of pure-CPU tasks: what two workers can gain on this machine right now."""
    from sklearn.utils.parallel import Parallel, delayed

    one, two = [], []
    for _ in range(repeats):
        for n_jobs, out in ((1, one), (2, two)):
            t = time.perf_counter()
            Parallel(n_jobs=n_jobs)(delayed(_burn)(2_000_000) for _ in range(8))
            out.append(time.perf_counter() - t)
    return np.median(one) / np.median(two)


def _fit_only(est, X, y, members):
    for rows in members:
        clone(est).fit(X[rows], y[rows])


def section_cost(quick, seed, repeats):
    X, y = _digits(300 if H.smoke() else None)
    K = 4 if H.smoke() else 16
    print(f"\n3. Cost of the game on digits ({len(y)} rows, 10 classes), K={K}, median of {repeats} runs")
    models = [("LogisticRegression", LogisticRegression(max_iter=1000))]
    if not quick:
        models.append(("MLP(64), max_iter=100", MLPClassifier((64,), max_iter=100, random_state=0)))
    for label, est in models:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            game = play_membership_game(est, X, y, n_models=K, random_state=seed)  # warm-up
            members = [np.flatnonzero(r) for r in game.membership]
            plain, seq, par, plain_cpu, seq_cpu = [], [], [], [], []
            for _ in range(repeats):
                t, u = time.perf_counter(), time.process_time()
                _fit_only(est, X, y, members)
                plain.append(time.perf_counter() - t)
                plain_cpu.append(time.process_time() - u)
                t, u = time.perf_counter(), time.process_time()
                play_membership_game(est, X, y, n_models=K, random_state=seed, n_jobs=1)
                seq.append(time.perf_counter() - t)
                seq_cpu.append(time.process_time() - u)
                t = time.perf_counter()
                play_membership_game(est, X, y, n_models=K, random_state=seed, n_jobs=2)
                par.append(time.perf_counter() - t)
        a, b, c = np.median(plain), np.median(seq), np.median(par)
        ac, bc = np.median(plain_cpu), np.median(seq_cpu)
        print(f"  {label:<24} {K} plain fits {a:6.2f} s wall ({ac:6.2f} s CPU) | game n_jobs=1 "
              f"{b:6.2f} s wall ({bc:6.2f} s CPU): {b / a:.2f}x wall, {bc / ac:.2f}x CPU (target <= 1.1x) | "
              f"n_jobs=2 {c:6.2f} s wall ({b / c:.2f}x faster than n_jobs=1)")

    print(f"  control: 8 pure-Python CPU tasks run {_control_speedup(repeats):.2f}x faster with "
          "n_jobs=2 than with n_jobs=1 right now (ideally 2x on two idle cores)")

    forest = RandomForestClassifier(n_estimators=5 if H.smoke() else 50, random_state=0)
    Xc, yc = X, y
    gc.collect()
    g, peak = H.peak_memory(lambda: play_membership_game(forest, Xc, yc, n_models=8, random_state=seed, n_jobs=1))
    one = len(pickle.dumps(clone(forest).fit(Xc[g.membership[0]], yc[g.membership[0]])))
    kept = len(pickle.dumps(g))
    print(f"  memory, RandomForest({forest.n_estimators}) on digits, K=8: game peak {peak / 2**20:.1f} MiB, result "
          f"{kept / 2**20:.2f} MiB; one fitted forest {one / 2**20:.1f} MiB, so keeping the 8 "
          f"models would need {8 * one / 2**20:.1f} MiB")


def section_rmia(quick, seed, repeats):
    from skmip.audit.attacks import rmia_scores

    n = 1000
    print(f"\n== RMIA cost against K (n = {n} rows, median of {repeats}) ==")
    print(f"{'K':>5} {'online':>10} {'per model':>10} {'offline':>10} {'per model':>10}")
    for K in (16, 64) if quick else (16, 64, 256):
        rng = np.random.default_rng(seed)
        member = rng.random((K, n)) < 0.5
        hardness = rng.normal(size=n)
        log_p = -np.logaddexp(0.0, hardness - 1.5 * member + 0.3 * rng.normal(size=(K, n)))
        times = {}
        for online in (True, False):
            runs = []
            for _ in range(repeats):
                t = time.perf_counter()
                rmia_scores(log_p, member, online=online)
                runs.append(time.perf_counter() - t)
            times[online] = float(np.median(runs))
        print(f"{K:>5} {times[True]:>9.3f}s {1e3 * times[True] / K:>8.2f}ms "
              f"{times[False]:>9.3f}s {1e3 * times[False] / K:>8.2f}ms")


def main(argv=None):
    parser = H.parser(__doc__, quick="fewer models and targets", seed=0, repeats=3)
    parser.add_argument("--section", choices=["attacks", "mip", "cost", "glir", "rmia", "all"], default="all")
    # --smoke: the RMIA timing section, one run; --smoke --section NAME runs NAME small.
    args = H.parse(parser, argv, blas_threads=1, smoke=dict(section="rmia", repeats=1))
    t0 = time.perf_counter()
    if args.section in ("attacks", "all"):
        section_attacks(args.quick, args.seed)
    if args.section in ("mip", "all"):
        section_mip(args.quick, args.seed)
    if args.section in ("glir", "all"):
        section_glir(args.quick, args.seed)
    if args.section in ("cost", "all"):
        section_cost(args.quick, args.seed, args.repeats)
    if args.section in ("rmia", "all"):
        section_rmia(args.quick, args.seed, args.repeats)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; load average at the end {H.load_average():.1f} "
          f"on {os.cpu_count()} cores (timings compete with other processes)")


if __name__ == "__main__":
    main()
