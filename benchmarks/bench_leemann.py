"""Leemann et al. Figures 1 and 2 regenerated from code (Fig. 3: bench_nn_gmip_utility.py).

Run::

    OMP_NUM_THREADS=1 python benchmarks/bench_leemann.py [--quick] [--plots DIR]
        [--only fig1 --only fig2a --only fig2bc]

Three parts, each printed as a markdown table (and drawn when ``--plots DIR`` is given):

* **Fig. 1** (trade-off convergence, tau = 0, K = d): the trade-off curve of Theorem 5.1
  (Eq. 8, ``skmip.bounds.gmip_tradeoff``) against the Gaussian curve of Corollary 5.1
  (``gaussian_tradeoff`` at ``gmip_mu_step``, Eq. 9) for batch sizes n and dimensions d
  growing at a fixed ratio d / n (so mu_step stays near sqrt(d / n), Remark 5.1): the
  largest gap over alpha, and the AUCs.
* **Fig. 2a** (known gradient distribution): GLiR on simulated one-step trials with
  Gaussian gradients of known mean and covariance and targets at susceptibility K = d
  (``skmip.audit.attacks.glir.simulate_glir_gaussian``); empirical FPR / TPR at a few levels
  alpha vs alpha and 1 - Eq. 8. The paper's fine-tuned parameter counts d = 650, 1026,
  2580 (CIFAR-10, Adult, Purchase, §6) with the batch size n = d, so all reach
  mu_step ~ 1 ("we adapt the batch size n such that all models reach the same level").
* **Fig. 2b/2c** (real gradients, estimated parameters): ``skmip.nn.glir_audit`` on the
  last layer (d = 18) of a small MLP pretrained on public rows of load_breast_cancer, batch
  n = 16, after 1 and 5 SGD steps, members vs outsiders pooled over random audits;
  empirical AUC and TPR at a few FPR vs the analytic curve of Eq. 9 with K = d (k steps:
  sqrt(k) mu_step, ``gaussian_compose``).

The tables go to stdout and to ``benchmarks/results/leemann.md`` (``leemann_quick.md``
with ``--quick``; the directory is ignored by git); docs/nn.md quotes the full run. Plots:
``leemann_fig1.png``, ``leemann_fig2.png`` in DIR (none by default).
"""

from __future__ import annotations

import os
import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from scipy import stats

from skmip.audit.attacks.glir import simulate_glir_gaussian
from skmip.bounds import gaussian_compose, gaussian_tradeoff, gmip_mu_step, gmip_tradeoff
from skmip.audit.metrics import mi_roc_auc, mi_roc_curve, tpr_at_fpr

ALPHAS = (0.01, 0.05, 0.1, 0.25, 0.5)
# A grid in alpha that resolves the steep start of every curve: the trapezoid AUC of the
# Gaussian curve on it is within 2e-6 of the closed form Phi(mu / sqrt 2).
ALPHA_GRID = np.r_[0.0, np.logspace(-8, -2, 120), np.linspace(0.01, 1.0, 496)[1:]]


def _auc(alpha, tpr):
    return float(np.trapezoid(tpr, alpha))


def fig1(quick, plots):
    """Eq. 8 vs Eq. 9 (tau = 0, K = d) for growing n and d at fixed d / n."""
    # d / n = 1 (mu_step ~ 1) and d / n = 1/4 (mu_step ~ 0.5); the chi-square CDFs with
    # non-centrality n K = n d get slow beyond ~1e8, hence the largest pairs.
    ns = (5, 20, 100, 1000) if quick else (5, 20, 100, 1000, 10_000)
    ratios = (1.0, 0.25)
    rows = [
        "## Fig. 1: Theorem 5.1 (Eq. 8) vs Corollary 5.1 (Eq. 9), tau = 0, K = d",
        "",
        (f"max gap over {ALPHA_GRID.size} levels alpha in [0, 1]; AUC = integral of 1 - beta(alpha) "
         "(Eq. 9: Phi(mu_step / sqrt 2))."),
        "",
        "| d / n | n | d | mu_step (Eq. 9) | max abs(Eq. 8 - Eq. 9) | AUC Eq. 8 | AUC Eq. 9 |",
        "|---|---|---|---|---|---|---|",
    ]
    curves = {}
    for ratio in ratios:
        for n in ns:
            d = max(1, round(ratio * n))
            mu = float(gmip_mu_step(n, d))
            eq8 = np.asarray(gmip_tradeoff(ALPHA_GRID, n, d))
            eq9 = np.asarray(gaussian_tradeoff(ALPHA_GRID, mu))
            curves[ratio, n, d] = (eq8, eq9)
            rows.append(
                f"| {ratio:g} | {n} | {d} | {mu:.4f} | {np.max(np.abs(eq8 - eq9)):.2e} | "
                f"{_auc(ALPHA_GRID, 1 - eq8):.4f} | {stats.norm.cdf(mu / np.sqrt(2)):.4f} |"
            )
    if plots:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(2, len(ratios), figsize=(9, 6.4), sharex=True,
                                 gridspec_kw={"height_ratios": [3, 2]})
        colors = plt.cm.viridis(np.linspace(0, 0.85, len(ns)))
        for j, ratio in enumerate(ratios):
            top, bottom = axes[0, j], axes[1, j]
            for color, ((_, n, d), (eq8, eq9)) in zip(colors, [(k, v) for k, v in curves.items() if k[0] == ratio]):
                top.plot(ALPHA_GRID, eq8, color=color, lw=1.6, label=f"n={n}, d={d}")
                top.plot(ALPHA_GRID, eq9, color=color, lw=1.0, ls="--")
                bottom.plot(ALPHA_GRID, eq8 - eq9, color=color, lw=1.4)
            top.plot([0, 1], [1, 0], color="0.7", lw=0.8)
            top.set_title(f"d / n = {ratio:g}  (solid: Eq. 8, dashed: Eq. 9)", fontsize=9)
            top.legend(fontsize=7)
            bottom.axhline(0, color="0.7", lw=0.8)
            bottom.set_xlabel("FPR alpha")
        axes[0, 0].set_ylabel("FNR beta(alpha)")
        axes[1, 0].set_ylabel("Eq. 8 - Eq. 9")
        fig.suptitle("Leemann Fig. 1: trade-off convergence (tau = 0, K = d)", fontsize=10)
        fig.tight_layout()
        fig.savefig(os.path.join(plots, "leemann_fig1.png"), dpi=100)
        plt.close(fig)
    return rows


def fig2a(quick, seed=0):
    """GLiR with known parameters on simulated Gaussian gradients vs Eq. 8."""
    ds = (20, 100) if quick else (650, 1026, 2580)
    trials = 1000 if quick else 4000
    rng = np.random.default_rng(seed)
    rows = [
        "## Fig. 2a: GLiR with known gradient mean and covariance vs Eq. 8 (K = d, n = d)",
        "",
        (f"{trials} member and {trials} non-member trials per d, Gaussian gradients with a random "
         "covariance (A A^T / d + I), targets at susceptibility exactly d; attack says "
         "'member' if p < alpha. se: binomial standard error of the theory value."),
        "",
        "| d = n | mu_step | alpha | FPR | TPR | 1 - Eq. 8 | (TPR - theory) / se |",
        "|---|---|---|---|---|---|---|",
    ]
    results = {}
    for d in ds:
        n = d
        A = rng.normal(size=(d, d))
        cov = A @ A.T / d + np.eye(d)
        mean = rng.normal(size=d)
        log_p0, log_p1 = simulate_glir_gaussian(
            n, d, n_trials=trials, mean=mean, covariance=cov, random_state=rng
        )
        results[d] = (log_p0, log_p1)
        mu = float(gmip_mu_step(n, d))
        for a in ALPHAS:
            fpr = np.mean(log_p0 < np.log(a))
            tpr = np.mean(log_p1 < np.log(a))
            theory = 1 - float(gmip_tradeoff(a, n, d))
            se = np.sqrt(theory * (1 - theory) / trials)
            rows.append(
                f"| {d} | {mu:.4f} | {a:g} | {fpr:.4f} | {tpr:.4f} | {theory:.4f} | {(tpr - theory) / se:+.2f} |"
            )
    return rows, results


def _breast_cancer_net():
    import torch  # noqa: F401  (skmip.nn needs it; imported here to keep fig1 torch-free)
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from skmip.nn import MLPModule, NeuralNetClassifier

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    perm = np.random.default_rng(0).permutation(len(X))
    X, y = X[perm], y[perm]
    # "Pretrained" on 200 public rows; the last layer is then fine-tuned on private rows
    # (Leemann §6 fine-tunes the last layer of a model pretrained on other data).
    net = NeuralNetClassifier(
        MLPModule, module__n_features=30, module__hidden=(8,), max_epochs=5, lr=0.1, verbose=0,
        random_state=0,
    ).fit(X[:200], y[:200])
    return net, X, y


def fig2bc(quick, seed=1):
    """GLiR against a real net (estimated parameters), 1 and 5 steps, vs Eq. 9 with K = d."""
    from skmip.nn import glir_audit

    net, X, y = _breast_cancer_net()
    n, d = 16, 18  # batch size; last layer of MLP 30-8-2: 8 * 2 weights + 2 biases
    background = slice(200, 400)
    pool = np.arange(400, len(X))  # 169 private rows
    audits = 8 if quick else 60
    steps = (1, 5)
    rng = np.random.default_rng(seed)
    scores = {k: [] for k in steps}
    membership = []
    for _ in range(audits):
        rows = rng.choice(pool, size=2 * n, replace=False)
        batch = rows[:n]
        for k in steps:
            scores[k].append(
                glir_audit(net, X[batch], y[batch], X[rows], y[rows], X[background], y[background],
                           include=["output.*"], ridge=1e-3, n_steps=k)
            )
        membership.append(np.r_[np.ones(n), np.zeros(n)])
    membership = np.concatenate(membership).astype(bool)
    mu1 = float(gmip_mu_step(n, d))
    null_se = np.sqrt((2 * audits * n + 1) / (12 * (audits * n) ** 2))
    fprs = (0.01, 0.05, 0.1, 0.25)
    rows = [
        "## Fig. 2b/2c: GLiR on real gradients (breast cancer, last layer, estimated parameters)",
        "",
        (f"MLP 30-8-2 pretrained on 200 rows; audited layer d = {d}; batch n = {n}, SGD lr 0.1; "
         f"{audits} audits of {n} members vs {n} outsiders drawn from 169 private rows "
         f"({audits * n} + {audits * n} scores pooled); mean and covariance estimated from 200 "
         f"background rows (ridge 1e-3). Analytic: Eq. 9 with K = d, mu_step = {mu1:.4f}; k steps "
         f"sqrt(k) mu_step. AUC standard error under chance: {null_se:.3f}."),
        "",
        "| steps | AUC | analytic AUC | " + " | ".join(f"TPR@{f:g} (analytic)" for f in fprs) + " |",
        "|---|---|---|" + "---|" * len(fprs),
    ]
    curves = {}
    for k in steps:
        s = np.concatenate(scores[k])
        mu_k = float(gaussian_compose(mu1, k))
        tprs = tpr_at_fpr(membership, s, fprs)
        analytic = 1 - np.asarray(gaussian_tradeoff(np.array(fprs), mu_k))
        rows.append(
            f"| {k} | {mi_roc_auc(membership, s):.3f} | {stats.norm.cdf(mu_k / np.sqrt(2)):.3f} | "
            + " | ".join(f"{t:.3f} ({a:.3f})" for t, a in zip(tprs, analytic))
            + " |"
        )
        curves[k] = (mi_roc_curve(membership, s)[:2], mu_k)
    return rows, curves


def plot_fig2(plots, sim, real, quick):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.9))
    grid = np.logspace(-3, 0, 200)
    ax = axes[0]
    for color, (d, (log_p0, log_p1)) in zip(plt.cm.tab10.colors, sim.items()):
        membership = np.r_[np.zeros(log_p0.size), np.ones(log_p1.size)]
        fpr, tpr, _ = mi_roc_curve(membership, -np.r_[log_p0, log_p1])
        # FPR 0 has no place on a log axis; the smallest FPR resolved is 1 / n_trials.
        ax.plot(fpr[fpr > 0], tpr[fpr > 0], color=color, lw=1.6, label=f"GLiR, d = n = {d}")
        ax.plot(grid, 1 - np.asarray(gmip_tradeoff(grid, d, d)), color=color, lw=1.0, ls="--")
    ax.set_title("(a) known mean / covariance (dashed: 1 - Eq. 8)", fontsize=9)
    ax = axes[1]
    for color, (k, ((fpr, tpr), mu_k)) in zip(plt.cm.tab10.colors, real.items()):
        ax.plot(fpr[fpr > 0], tpr[fpr > 0], color=color, lw=1.6, label=f"GLiR, {k} step(s)")
        ax.plot(grid, 1 - np.asarray(gaussian_tradeoff(grid, mu_k)), color=color, lw=1.0, ls="--",
                label=f"Eq. 9, K = d, mu = {mu_k:.2f}")
    ax.set_title("(b, c) breast cancer, estimated parameters", fontsize=9)
    for ax in axes:
        ax.plot(grid, grid, color="0.7", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(1e-3, 1)
        ax.set_ylim(1e-3, 1.02)
        ax.set_xlabel("FPR")
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("TPR")
    fig.suptitle("Leemann Fig. 2: GLiR audits, tau = 0" + (" (quick)" if quick else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(plots, "leemann_fig2.png"), dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = H.parser(__doc__, quick="smaller grids and fewer trials (well under a minute)", plots=None, threads=1)
    parser.add_argument("--only", choices=("fig1", "fig2a", "fig2bc"), action="append",
                        help="run only this part (repeatable)")
    # --smoke: Figure 1's quick grid only, no plots (the GLiR audits train nets).
    args = H.parse(parser, argv, smoke=dict(only=["fig1"], plots=None))
    parts = args.only or ["fig1", "fig2a", "fig2bc"]
    if args.plots:
        os.makedirs(args.plots, exist_ok=True)
        import matplotlib

        matplotlib.use("Agg")
    out = [f"# Leemann et al. Figures 1-2 ({'quick' if args.quick else 'full'} run)", ""]
    sim = real = None
    for part in parts:
        t0 = time.perf_counter()
        if part == "fig1":
            rows = fig1(args.quick, args.plots)
        elif part == "fig2a":
            rows, sim = fig2a(args.quick)
        else:
            import torch

            torch.set_num_threads(args.threads)
            warnings.simplefilter("ignore")
            rows, real = fig2bc(args.quick)
        rows += ["", f"({part}: {time.perf_counter() - t0:.1f} s)", ""]
        print("\n".join(rows), flush=True)
        out += rows
    if args.plots and sim is not None and real is not None:
        plot_fig2(args.plots, sim, real, args.quick)
    H.write_results("leemann_quick.md" if args.quick else "leemann.md", "\n".join(out))


if __name__ == "__main__":
    main()
