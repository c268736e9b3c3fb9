"""Utility of the coupling-calibrated MIPNoiseWrapper against Corollary 10 and DP, side by side.

Run:  python benchmarks/bench_coupling_utility.py [--quick] [--datasets ...] [--Cs 0.1 1.0]
      [--rounds breast_cancer=1000 digits=1000 adult=1000] [--repeats 5] [--plot PNG]
      python benchmarks/bench_coupling_utility.py --plot-from LOG [LOG ...] --plot PNG

For each dataset (``load_breast_cancer``, ``load_digits``, a uniform subsample of adult) the
rows are split 70/30 (stratified, seed 0) and standardized with the training split only
(digits: scaled to [0, 1] instead, see CONFIG). The training split is the dataset D of
Definition 1; every private model is fitted on a uniformly random half D_train of D
(k = n // 2), so that all promise eta-MIP for the same game. For LogisticRegression at
each C and each eta, one run prints the test accuracy (mean +- se over ``--repeats`` noise
draws) of

* the non-private model on all of D and on a random half of D (what the private models see),
* ``MIPNoiseWrapper(method="coupling")`` (95% confidence, ``--rounds`` rounds), one
  calibration per (dataset, C) through ``mip_noise_path`` with every eta repeated,
* ``MIPNoiseWrapper(method="moments")`` with the Gamma radius and the printed Laplace radius
  (Corollary 10 / Algorithm 1),
* ``DPLogisticRegression`` at epsilon = ``mip_to_dp_epsilon(eta)`` (Theorem 4: the pure-DP
  epsilon whose promise equals eta-MIP), trained on a random half as well,

and the coupling noise scale s in sigma units (calibrated and point estimate) next to
Corollary 10's constant c = (6.16 / eta)^2 at M = 2. Results are recorded in docs/coupling.md.
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression

from skmip import mip_noise_path
from skmip.bounds import mip_noise_constant, mip_to_dp_epsilon
from skmip.defend.dp_logistic import DPLogisticRegression
from skmip.exceptions import PrivacyWarning

ETAS = [0.05, 0.1, 0.2, 0.3]
ALPHA = 0.05  # 1 - confidence of the coupling calibration

# Per dataset: rows kept, estimator settings and noise shape of the coupling calibration.
# breast_cancer and adult: the "newton" engine (binary logistic regression), full noise
# shape. digits: multinomial -> first-order "influence" engine; 650 parameters, so the
# shape's covariance over 128 subsets is Ledoit-Wolf shrunk (noise_shape="full") -- the
# diagonal shape needs ~86 sigma at eta = 0.3 (a 10-round probe), i.e. chance accuracy.
# newton-cholesky on the multinomial problem took 9-39 s per fit here, L-BFGS 0.02 s; the
# wrapper polishes the released fit to the exact minimiser either way.
# Scaling: standardized, except digits, whose pixels are scaled to [0, 1] (MinMaxScaler on
# the training split). eta-MIP is a maximum over the records of D, and standardizing pixels
# that are almost always 0 turns the few rows that ink them into values up to 35 (row norms
# up to 49 against a median of 6.7) whose swaps dominate the bound: the coupling scale was
# 84-144 sigma at the point estimate standardized, 2.1 sigma scaled to [0, 1] (row norms
# at most 4.8; a 40-round probe at eta = 0.45, C = 0.1).
CONFIG = {
    "breast_cancer": dict(n_samples=None, solver="newton-cholesky", tol=1e-10, shape="full", scaler="standard"),
    "digits": dict(n_samples=None, solver="lbfgs", tol=1e-8, shape="full", scaler="minmax"),
    # Adult: the designed shape (the wrapper's default since issue 12): on full, standardized
    # adult a few records of rare categories set the covariance shape's noise.
    "adult": dict(n_samples=None, solver="newton-cholesky", tol=1e-10, shape="auto", scaler="standard"),
}
# Adult: all 22,792 training rows since issue 12, at the wrapper's default 400 rounds (betting bound).
ROUNDS = {"breast_cancer": 1000, "digits": 1000, "adult": 400}


def _data(name, n_samples):
    return H.split_scaled(name, scaler=CONFIG[name]["scaler"], n_samples=n_samples)  # training split only


def _range_term(n_targets, rounds, train_fraction=0.5):
    """Maurer & Pontil (2009) Thm 4 range term 7 c ln(2 n_t / alpha) / (3 (m - 1)), c = min(q, 1-q):
    the coupling bound never goes below it, so an eta at or under it cannot be calibrated."""
    c = min(train_fraction, 1 - train_fraction)
    return 7 * c * np.log(2 * n_targets / ALPHA) / (3 * (rounds - 1))


def _mean_se(a):
    a = np.asarray(a, dtype=float)
    return a.mean(), (a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else np.nan)


def bench_dataset(name, Cs, etas, rounds, repeats, n_splits, n_samples=None):
    cfg = CONFIG[name]
    X, X_te, y, y_te = _data(name, n_samples if n_samples is not None else cfg["n_samples"])
    n, k = len(X), len(X) // 2
    classes = np.unique(y)
    floor = _range_term(n, rounds)
    ok = [e for e in etas if e > 1.2 * floor]
    skipped = [e for e in etas if e not in ok]
    print(f"\n== {name}: D = {n} training rows x {X.shape[1]} features, k = {k}, test = {len(X_te)}, "
          f"{len(classes)} classes; coupling: {rounds} rounds, shape {cfg['shape']}, "
          f"{n_splits} subsets; {repeats} noise draws per eta")
    if skipped:
        print(f"   eta {skipped} skipped: {rounds} rounds certify nothing below ~{floor:.3f} "
              "(Maurer-Pontil range term)")
    rng = np.random.default_rng(12345)
    rows = []
    for C in Cs:
        est = LogisticRegression(C=C, solver=cfg["solver"], tol=cfg["tol"], max_iter=2000)
        full = clone(est).fit(X, y).score(X_te, y_te)
        half = []
        for _ in range(repeats):
            r = rng.choice(n, size=k, replace=False)
            half.append(clone(est).fit(X[r], y[r]).score(X_te, y_te))
        path_etas = [e for e in ok for _ in range(repeats)]
        res = {}
        for label, params in [
            ("coupling", dict(method="coupling", n_rounds=rounds, noise_shape=cfg["shape"])),
            ("gamma", dict(method="moments", radius="gamma")),
            ("laplace", dict(method="moments", radius="laplace")),
        ]:
            t = time.perf_counter()
            path = mip_noise_path(est, X, y, etas=path_etas, n_subsets=n_splits,
                                  random_state=int(rng.integers(2**31)), **params)
            res[label + "_time"] = time.perf_counter() - t
            res[label] = path
            print(f"   C={C}: {label} calibration + {len(path_etas)} draws: {res[label + '_time']:.0f} s",
                  flush=True)
        # DP at the equal promise, on its own random halves (one per draw).
        dp = {}
        for eta in ok:
            eps = float(mip_to_dp_epsilon(eta))
            acc = []
            for _ in range(repeats):
                r = rng.choice(n, size=k, replace=False)
                m = DPLogisticRegression(
                    epsilon=eps, C=C, data_norm=np.sqrt(X.shape[1]), classes=classes,
                    random_state=int(rng.integers(2**31)),
                ).fit(X[r], y[r])
                acc.append(m.score(X_te, y_te))
            dp[eta] = acc
        for eta in ok:
            sel = [i for i, e in enumerate(path_etas) if e == eta]
            acc = {lab: [res[lab][i].score(X_te, y_te) for i in sel] for lab in ("coupling", "gamma", "laplace")}
            w = res["coupling"][sel[0]]
            rows.append(dict(
                dataset=name, C=C, eta=eta, full=full, half=_mean_se(half),
                coupling=_mean_se(acc["coupling"]), gamma=_mean_se(acc["gamma"]),
                laplace=_mean_se(acc["laplace"]), dp=_mean_se(dp[eta]),
                eps=float(mip_to_dp_epsilon(eta)), s=w.noise_scale_, s_point=w.noise_scale_point_,
                eta_upper=w.coupling_eta_upper_, c10=float(mip_noise_constant(eta, 2)),
                engine=w.sensitivity_engine_,
            ))
    return rows


def _fmt(ms):
    m, se = ms
    return f"{m:.3f} +- {se:.3f}"


def report(rows):
    print("\n| dataset | C | eta | non-private (all D / half) | coupling | moments, gamma | "
          "moments, laplace | DP at eps(eta) | eps | s (s_point) | Cor. 10 c |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dataset']} | {r['C']} | {r['eta']} | {r['full']:.3f} / {r['half'][0]:.3f} | "
              f"{_fmt(r['coupling'])} | {_fmt(r['gamma'])} | {_fmt(r['laplace'])} | {_fmt(r['dp'])} | "
              f"{r['eps']:.3f} | {r['s']:.2f} ({r['s_point']:.2f}) | {r['c10']:.0f} |")
    # Coupling against DP at equal eta: per dataset, at how many (C, eta) it wins.
    print()
    for name in dict.fromkeys(r["dataset"] for r in rows):
        rs = [r for r in rows if r["dataset"] == name]
        wins = sum(r["coupling"][0] > r["dp"][0] for r in rs)
        print(f"coupling beats DP at equal eta on {name}: {wins} of {len(rs)} (C, eta) settings")
    target = [r for r in rows if r["dataset"] == "breast_cancer" and r["C"] == 0.1 and r["eta"] == 0.1]
    if target:
        print(f"target: breast_cancer, C = 0.1, eta = 0.1: coupling test accuracy "
              f"{_fmt(target[0]['coupling'])} (>= 0.85 wanted)")


def _cell(text):
    """``"0.927 +- 0.012"`` (bold or not) -> (0.927, 0.012); a bare number -> (x, nan)."""
    parts = text.strip().strip("*").split("+-")
    return float(parts[0]), (float(parts[1]) if len(parts) > 1 else np.nan)


def parse_report(text):
    """The rows of the table :func:`report` prints, read back from a saved log or a docs page."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 11 or cells[0] == "dataset" or cells[0].startswith("---"):
            continue
        full, half = (float(v) for v in cells[3].split("/"))
        rows.append({
            "dataset": cells[0], "C": float(cells[1]), "eta": float(cells[2]), "full": full,
            "half": (half, np.nan), "coupling": _cell(cells[4]), "gamma": _cell(cells[5]),
            "laplace": _cell(cells[6]), "dp": _cell(cells[7]), "eps": float(cells[8]),
        })
    return rows


def plot(rows, path):
    """Test accuracy vs eta, one panel per (dataset, C): every method of the table side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys((r["dataset"], r["C"]) for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    styles = [("coupling", "coupling (95%)", "C0", "o"), ("dp", "DP at eps(eta), Thm 4", "C3", "s"),
              ("gamma", "Cor. 10, Gamma radius", "C1", "^"), ("laplace", "Cor. 10, Laplace radius", "C2", "v")]
    for ax, (name, C) in zip(axes[0], panels):
        rs = sorted((r for r in rows if r["dataset"] == name and r["C"] == C), key=lambda r: r["eta"])
        etas = [r["eta"] for r in rs]
        for key, label, color, marker in styles:
            mean = [r[key][0] for r in rs]
            se = [0.0 if np.isnan(r[key][1]) else r[key][1] for r in rs]
            ax.errorbar(etas, mean, yerr=se, label=label, color=color, marker=marker, capsize=3)
        ax.axhline(rs[0]["half"][0], color="k", ls="--", lw=1, label="non-private (half of D)")
        ax.set(title=f"{name}, C = {C:g}", xlabel="eta (MIP promise)", ylim=(0, 1))
    axes[0][0].set_ylabel("test accuracy")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"plot: {path}")


def main(argv=None):
    parser = H.parser(__doc__, quick="breast_cancer and adult (1,000 rows), C = 0.1, 100 rounds, eta 0.2/0.3, "
                                     "32 subsets, 2 draws: a run of a few minutes", repeats=5)
    parser.add_argument("--datasets", nargs="+", default=list(CONFIG), choices=list(CONFIG))
    parser.add_argument("--Cs", nargs="+", type=float, default=[0.1, 1.0])
    parser.add_argument("--etas", nargs="+", type=float, default=ETAS)
    parser.add_argument("--rounds", nargs="+", default=[], metavar="NAME=M",
                        help="coupling rounds per dataset (default: " +
                             " ".join(f"{k}={v}" for k, v in ROUNDS.items()) + ")")
    parser.add_argument("--n-splits", type=int, default=128)
    parser.add_argument("--plot", default=None, metavar="PNG", help="draw accuracy vs eta to this file")
    parser.add_argument("--plot-from", nargs="+", default=None, metavar="FILE",
                        help="only draw --plot from the tables in saved outputs of this script "
                             "(or a docs page quoting them); runs nothing")
    # --smoke: breast cancer only, 100 rounds (fewer certify nothing at eta 0.3), 8 subsets, 2 draws.
    args = H.parse(parser, argv, smoke=dict(datasets=["breast_cancer"], etas=[0.3], rounds=[]))
    if args.plot_from:
        rows = [r for f in args.plot_from for r in parse_report(Path(f).read_text())]
        plot(rows, args.plot or "coupling_utility.png")
        return
    warnings.simplefilter("ignore", PrivacyWarning)  # fixed seeds: a benchmark, not a release
    rounds = dict(ROUNDS)
    rounds.update({k: int(v) for k, v in (s.split("=") for s in args.rounds)})
    datasets, Cs, etas, repeats, n_splits, n_samples = (
        args.datasets, args.Cs, args.etas, args.repeats, args.n_splits, None)
    if args.quick:
        datasets = [d for d in datasets if d != "digits"]
        Cs, etas, repeats, n_splits, n_samples = [0.1], [0.2, 0.3], 2, 32, 1000
        rounds = {k: 100 for k in rounds}
    if args.smoke:
        etas, n_splits = args.etas, 8
    rows = []
    t0 = time.perf_counter()
    for name in datasets:
        rows += bench_dataset(name, Cs, etas, rounds[name], repeats, n_splits,
                              n_samples=n_samples if name == "adult" else None)
    report(rows)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    if args.plot:
        plot(rows, args.plot)


if __name__ == "__main__":
    main()
