"""Subsampling and DP (Thudi et al.): bounds, a LiRA audit, and accuracy at a fixed bound.

Run:  python benchmarks/bench_subsampling.py [--quick] [--plots DIR]

Three parts, each printed as a table (and drawn when ``--plots`` is given):

1. **Bounds** (Figure 1): Theorem 3.3's bound on MI positive accuracy vs the sampling rate T
   for several epsilon (delta = 0), and the Section 4.3 targets.
2. **Audit** (Figures 3-4, issue item 4): online LiRA (Carlini et al.) against
   ``DPLogisticRegression`` trained on a Poisson subsample at rate T of ``load_breast_cancer``,
   for a grid of (T, epsilon). Each row of the pool is a member of each of K models
   independently with probability T -- exactly what ``SubsampledDPClassifier(train_size=T)``
   does -- and every model is attacked with the others as references. Reports the best
   positive accuracy over Thudi's 40 quantile thresholds, its gain over the "always member"
   baseline (= T), and a Clopper-Pearson test (95%, Bonferroni over thresholds) of the
   measured precision against ``positive_accuracy_bound``.
3. **Accuracy at a fixed bound** (Figure 5): for the targets 0.953, 0.881, 0.731, the test
   accuracy of ``SubsampledDPClassifier(target_bound=...)`` as the sampling rate varies (epsilon
   follows from Theorem 3.3), on ``load_breast_cancer`` and ``load_digits`` (odd vs even); mean and 95%
   confidence half-width over repeats (fresh subsample and noise each time).

Results and the command that produced them are recorded in docs/subsampling.md.
"""

from __future__ import annotations

import os
import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skmip.bounds import epsilon_for_positive_accuracy, positive_accuracy_bound
from skmip.defend.dp_logistic import DPLogisticRegression
from skmip.exceptions import PrivacyWarning
from skmip.defend.subsampled import SubsampledDPClassifier

TARGETS = (0.953, 0.881, 0.731)  # Section 4.3: eps = 3, 2, 1 at T = 0.5 (delta = 1e-5, P(S|x*) >= 1%)
#: Per dataset: the bound on a row's norm after preprocessing (a fixed, public choice, near
#: the median row norm) and C.
SETTINGS = {"breast_cancer": dict(data_norm=5.0, C=1.0), "digits_parity": dict(data_norm=6.0, C=1.0)}
DATASETS = tuple(SETTINGS)


def _data(name, seed=0):
    """Train/test split; preprocessing fitted on the training pool only.

    The preprocessing sees the pool passed to ``fit`` but not the Poisson subsample drawn from
    it: Theorem 3.3 conditions on the pool, so it does not weaken the bound (see
    docs/subsampling.md). ``digits_parity`` is load_digits with the label "odd digit" and 16
    principal components: 10-class one-vs-rest splits the budget ten ways, which leaves
    chance-level models at epsilon ~ 3 on 1257 rows.
    """
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        pre = StandardScaler()
    else:
        X, y = load_digits(return_X_y=True)
        y = y % 2
        pre = make_pipeline(StandardScaler(), PCA(16, random_state=0))
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    pre.fit(X_tr)
    return pre.transform(X_tr), pre.transform(X_te), y_tr, y_te, np.unique(y)


def _ci(values):
    v = np.asarray(values, dtype=float)
    return v.mean(), 1.96 * v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else np.nan


# ---------------------------------------------------------------------------- 1. bounds
def bench_bounds(plots):
    rates = np.array([0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9])
    epsilons = (0.1, 1.0, 2.0, 5.0)
    print("1. Theorem 3.3 bound on MI positive accuracy (delta = 0) -- Figure 1")
    print("   T     " + "".join(f"eps={e:<7g}" for e in epsilons))
    for t in rates:
        print(f"   {t:<5g} " + "".join(f"{positive_accuracy_bound(e, sampling_rate=t):<11.3f}" for e in epsilons))
    got = positive_accuracy_bound([3, 2, 1], sampling_rate=0.5, delta=1e-5, min_tpr=0.01)
    print(f"   Section 4.3 targets (T=0.5, delta=1e-5, P(S|x*)>=1%, eps=3,2,1): {np.round(got, 3).tolist()}")
    if plots:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(5, 3.6))
        grid = np.linspace(0.001, 0.999, 400)
        for e in epsilons:
            ax.plot(grid, positive_accuracy_bound(e, sampling_rate=grid), label=f"eps = {e:g}")
        ax.plot(grid, grid, "k:", label="baseline (= T)")
        ax.set(xlabel="sampling rate T = P_x*(1)", ylabel="bound on positive accuracy",
               title="Theorem 3.3 (delta = 0)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(plots, "subsampling_bound.png"), dpi=120)
        plt.close(fig)


# ---------------------------------------------------------------------------- 2. audit
def _audit_cell(X, y, classes, T, eps, n_models, seed):
    from skmip.audit.attacks.lira import lira_scores
    from skmip.audit.game import play_membership_game
    from skmip.audit.metrics import check_positive_accuracy_bound, positive_accuracy

    learner = DPLogisticRegression(eps, classes=classes, **SETTINGS["breast_cancer"])
    # sampling="bernoulli": each row is a member with probability T, independently -- the
    # Poisson subsample of SubsampledDPClassifier(train_size=T), with membership known.
    game = play_membership_game(learner, X, y, n_models=n_models, member_rate=T,
                                sampling="bernoulli", random_state=seed)
    scores = lira_scores(game.signal, game.membership)
    pa = positive_accuracy(game.membership, scores)
    base = float(game.membership.mean())
    bound = positive_accuracy_bound(eps, sampling_rate=T)
    check = check_positive_accuracy_bound(game.membership, scores, bound)
    return pa, base, bound, check


def bench_audit(n_models, rates, epsilons, plots):
    X, _, y, _, classes = _data("breast_cancer")
    print(f"\n2. Online LiRA vs DPLogisticRegression on Poisson subsamples of breast_cancer "
          f"({len(y)} rows, {n_models} models per cell) -- Figures 3-4")
    print(f"   {'T':<6}{'eps':<7}{'pos.acc':>9}{'baseline':>10}{'gain':>8}{'bound':>8}  "
          f"{'CP test vs bound (margin)':<26}{'time':>7}")
    table = {}
    for T in rates:
        for eps in epsilons:
            t0 = time.perf_counter()
            pa, base, bound, check = _audit_cell(X, y, classes, T, eps, n_models, seed=int(1000 * T + eps))
            table[T, eps] = (pa, base, bound)
            verdict = "holds" if check.holds else "VIOLATED"
            print(f"   {T:<6g}{eps:<7g}{pa:>9.3f}{base:>10.3f}{pa - base:>8.3f}{bound:>8.3f}  "
                  f"{verdict:<7}({check.margin:+.3f}){'':<11}{time.perf_counter() - t0:>6.1f}s")
    gains = {T: np.mean([table[T, e][0] - table[T, e][1] for e in epsilons]) for T in rates}
    print("   mean gain over baseline across eps, by T (Figure 4): "
          + ", ".join(f"T={T:g}: {g:.3f}" for T, g in gains.items()))
    if plots:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        for eps in epsilons:
            axes[0].plot(rates, [table[T, eps][0] for T in rates], "o-", label=f"LiRA, eps = {eps:g}")
        axes[0].plot(rates, rates, "k:", label="baseline (= T)")
        axes[0].set(xlabel="sampling rate T", ylabel="best positive accuracy",
                    title="LiRA vs DPLogisticRegression")
        axes[0].legend(fontsize=7)
        axes[1].plot(rates, [gains[T] for T in rates], "o-")
        axes[1].set(xlabel="sampling rate T", ylabel="gain over baseline (mean over eps)",
                    title="Figure 4 analogue")
        fig.tight_layout()
        fig.savefig(os.path.join(plots, "subsampling_audit.png"), dpi=120)
        plt.close(fig)
    return table


# ---------------------------------------------------------------------------- 3. accuracy
def bench_fixed_bound(rates, repeats, plots):
    print(f"\n3. Test accuracy of SubsampledDPClassifier(target_bound=...) vs sampling rate "
          f"(mean +- 95% CI over {repeats} repeats) -- Figure 5")
    results = {}
    for name in DATASETS:
        X_tr, X_te, y_tr, y_te, classes = _data(name)
        print(f"   {name} ({len(y_tr)} training rows, {len(classes)} classes)")
        print(f"   {'bound':<7}" + "".join(f"T={T:<12g}" for T in rates))
        for target in TARGETS:
            row = []
            for T in rates:
                try:
                    eps = epsilon_for_positive_accuracy(target, sampling_rate=T)
                except ValueError:  # even eps = 0 does not reach the target at this T
                    row.append(None)
                    continue
                accs = []
                for r in range(repeats):
                    clf = SubsampledDPClassifier(
                        DPLogisticRegression(classes=classes, **SETTINGS[name]),
                        train_size=T, target_bound=target, random_state=10_000 * r + int(100 * T),
                    ).fit(X_tr, y_tr)
                    accs.append(clf.score(X_te, y_te))
                row.append((*_ci(accs), eps))
            results[name, target] = row
            cells = "".join(
                f"{'--':<14}" if c is None else f"{c[0]:.3f}+-{c[1]:.3f}  " for c in row
            )
            print(f"   {target:<7g}{cells}")
        print("   epsilon at each T: " + "; ".join(
            f"{t:g}: " + ", ".join("--" if c is None else f"{c[2]:.2f}" for c in results[name, t])
            for t in TARGETS))
    if plots:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        for ax, name in zip(axes, DATASETS):
            for target in TARGETS:
                pts = [(T, c[0], c[1]) for T, c in zip(rates, results[name, target]) if c is not None]
                if pts:
                    t, m, h = map(np.array, zip(*pts))
                    ax.errorbar(t, m, yerr=h, marker="o", capsize=3, label=f"bound = {target}")
            ax.set(xlabel="sampling rate T", ylabel="test accuracy", title=name)
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(plots, "subsampling_fixed_bound.png"), dpi=120)
        plt.close(fig)
    return results


def main(argv=None):
    parser = H.parser(__doc__, quick="fewer models, rates and repeats", plots=None)
    args = H.parse(parser, argv, smoke=dict(plots=None))
    warnings.simplefilter("ignore", PrivacyWarning)  # seeds are fixed for reproducibility
    if args.plots:
        os.makedirs(args.plots, exist_ok=True)
    t0 = time.perf_counter()
    bench_bounds(args.plots)
    if args.smoke:  # one audit cell of 8 models, one rate at a fixed bound, 2 repeats
        bench_audit(8, [0.5], [1.0], None)
        bench_fixed_bound([0.5], 2, None)
    elif args.quick:
        bench_audit(32, [0.1, 0.5, 0.9], [1.0, 100.0], args.plots)
        bench_fixed_bound([0.1, 0.3, 0.5], 5, args.plots)
    else:
        bench_audit(64, [0.1, 0.2, 0.3, 0.5, 0.7, 0.9], [1.0, 10.0, 100.0, 1000.0], args.plots)
        bench_fixed_bound([0.05, 0.1, 0.2, 0.3, 0.5, 0.7], 20, args.plots)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
