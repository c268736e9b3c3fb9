"""The trend of Leemann et al. Fig. 3 on a bundled dataset: accuracy under mu-GMIP vs mu-GDP.

For each target mu, noisy SGD is calibrated twice on the same net, data split and seeds:
to mu-GDP (Dong et al. CLT, ``privacy="gdp"``) and to mu-GMIP (Leemann Eqs. 9-10, capped
by the GDP noise since GDP implies GMIP, ``privacy="gmip"``). The script prints the noise
multipliers and the mean test accuracy over seeds, and the threshold mu above which GMIP
needs no noise at all.

Model: logistic regression (``MLPModule(hidden=())``, d = 62) on ``load_breast_cancer``,
70/30 split, batch 64, 10 epochs, clip norm 1. The mu grid spans 0.1 ... 50 on a log scale
(the paper samples 20 levels in [0.4, 50], §6.2).

Run::

    OMP_NUM_THREADS=1 python benchmarks/bench_nn_gmip_utility.py [--seeds 5]
        [--quick] [--plots DIR]

``--quick``: 2 seeds, 4 mu values (a few seconds). ``--plots DIR`` draws
``leemann_fig3.png`` there: accuracy vs mu (log scale), GDP and GMIP lines, like Leemann
Fig. 3. Writes ``benchmarks/results/nn_gmip_utility.md`` (``nn_gmip_utility_quick.md`` with
``--quick``; ignored by git); ``docs/nn.md`` quotes the full run.
"""

from __future__ import annotations

import os
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
import torch
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skmip.bounds import gmip_mu
from skmip.nn import DPNeuralNetClassifier, MLPModule

MUS = (0.1, 0.25, 0.4, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0)
QUICK_MUS = (0.25, 1.0, 2.0, 5.0)


def main(argv=None):
    parser = H.parser(__doc__, seeds=(None, "seeds per point (default 5; 2 with --quick)"),
                      quick="2 seeds and 4 mu values", plots=None, threads=1)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=64)
    # --smoke: one seed, one epoch, mu = 1 only, no plot.
    args = H.parse(parser, argv, smoke=dict(seeds=1, epochs=1, plots=None))
    if args.seeds is None:
        args.seeds = 2 if args.quick else 5
    mus = (1.0,) if args.smoke else QUICK_MUS if args.quick else MUS
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr).astype(np.float32), scaler.transform(X_te).astype(np.float32)
    n, B = len(X_tr), args.batch_size
    T = args.epochs * (n // B)
    d = 30 * 2 + 2

    def fit(privacy, mu, seed):
        net = DPNeuralNetClassifier(
            MLPModule, module__n_features=30, module__hidden=(), privacy=privacy, mu=mu,
            max_grad_norm=1.0, lr=0.5, max_epochs=args.epochs, batch_size=B, random_state=seed,
            verbose=0,
        ).fit(X_tr, y_tr)
        return net.noise_multiplier_, net.score(X_te, y_te)

    free = gmip_mu(0.0, B, n, T, d=d)
    baseline = np.mean([fit("gdp", 1e6, s)[1] for s in range(args.seeds)])
    rows = [
        "# Utility under mu-GDP vs mu-GMIP (trend of Leemann et al. Fig. 3)",
        "",
        (f"Logistic regression (d = {d}) on load_breast_cancer: {n} training rows, {len(X_te)} test rows, "
         f"batch {B}, {T} steps, clip 1, lr 0.5; mean test accuracy over {args.seeds} seeds. "
         f"Non-private accuracy: {baseline:.3f} "
         "(mu = 1e6, negligible noise)."),
        "",
        f"GMIP needs no noise for mu >= {free:.3f} (Eqs. 9-10 with K = d, sigma = 0).",
        "",
        "| mu | sigma GDP | sigma GMIP | accuracy GDP | accuracy GMIP |",
        "|---|---|---|---|---|",
    ]
    curves = {"gdp": [], "gmip": []}
    sigmas = {"gdp": [], "gmip": []}
    for mu in mus:
        gdp = [fit("gdp", mu, s) for s in range(args.seeds)]
        gmip = [fit("gmip", mu, s) for s in range(args.seeds)]
        for name, runs in (("gdp", gdp), ("gmip", gmip)):
            curves[name].append([a for _, a in runs])
            sigmas[name].append(runs[0][0])
        rows.append(
            f"| {mu:g} | {gdp[0][0]:.3f} | {gmip[0][0]:.3f} | {np.mean([a for _, a in gdp]):.3f} | "
            f"{np.mean([a for _, a in gmip]):.3f} |"
        )
        print(rows[-1], flush=True)
    text = "\n".join(rows)
    print(text)
    H.write_results("nn_gmip_utility_quick.md" if args.quick else "nn_gmip_utility.md", text)
    if args.plots:
        plot(args.plots, mus, curves, sigmas, baseline, free, args.seeds)


def plot(directory, mus, curves, sigmas, baseline, free, seeds):
    """Accuracy vs mu for GDP and GMIP (mean over seeds, bars: min-max), like Leemann Fig. 3,
    and the noise multipliers behind them."""
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(directory, exist_ok=True)
    fig, (ax, ax_sigma) = plt.subplots(1, 2, figsize=(9.5, 3.7))
    # GDP drawn wider underneath: where the two noises coincide the lines coincide too.
    for name, label, color, lw in (("gdp", "mu-GDP", "tab:red", 3.0), ("gmip", "mu-GMIP", "tab:blue", 1.3)):
        acc = np.asarray(curves[name])
        mean = acc.mean(axis=1)
        ax.errorbar(mus, mean, yerr=[mean - acc.min(axis=1), acc.max(axis=1) - mean], color=color,
                    marker="o", ms=2 * lw, lw=lw, capsize=2, label=label + " (bars: min-max over seeds)")
    ax.axhline(baseline, color="0.5", lw=0.8, ls=":", label="non-private")
    ax.axvline(free, color="tab:blue", lw=0.8, ls="--", label=f"GMIP without noise (mu >= {free:.2f})")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("mu (smaller = more private)")
    ax.set_ylabel(f"test accuracy (mean of {seeds} seeds)")
    ax.set_title("Leemann Fig. 3 trend: breast cancer, logistic regression", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    for name, label, color, lw in (("gdp", "mu-GDP", "tab:red", 3.0), ("gmip", "mu-GMIP", "tab:blue", 1.3)):
        ax_sigma.plot(mus, sigmas[name], color=color, marker="o", ms=2 * lw, lw=lw, label=label)
    ax_sigma.axvline(free, color="tab:blue", lw=0.8, ls="--")
    ax_sigma.set_xscale("log")
    ax_sigma.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax_sigma.set_ylim(bottom=0)
    ax_sigma.set_xlabel("mu")
    ax_sigma.set_ylabel("noise multiplier sigma")
    ax_sigma.set_title("noise calibrated to each mu (GMIP capped by GDP)", fontsize=9)
    ax_sigma.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(directory, "leemann_fig3.png"), dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
