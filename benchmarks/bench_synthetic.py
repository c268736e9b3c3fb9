"""Synthetic data under MIP: Izzo et al. Fig. 2, real-data fidelity, and a membership audit.

Three parts, each printed as a table (and written to ``benchmarks/results/synthetic.md``),
with plots written to ``docs/_static/synthetic_*.png``:

``fig2``   Izzo et al., Section 5.2 / Figure 2. P = N(0, Sigma), Sigma = make_spd_matrix(3),
           n = 500,000; relative error ||A - Sigma||_F / ||Sigma||_F of the released second
           moment vs eta, for MIP (M in {2, 4, 6}, sigma over 128 random halves of D_train =
           Algorithm 1, ``sigma_from="train"``) -- as printed (Laplace radius, all d^2
           entries) and as skmip releases it (Gamma radius, upper triangle + PSD projection)
           -- and for two (epsilon, delta)-DP baselines placed at the same eta by Theorem 4:
           full-batch DP gradient descent with the clip at the median gradient norm (Izzo's
           baseline) and Analyze Gauss. All methods see the same random half D_train.
``real``   Standardised ``load_breast_cancer`` features plus the label as a column: fidelity
           of synthetic vs real records (mean per-feature Kolmogorov-Smirnov distance,
           relative correlation-matrix error) and accuracy of a logistic regression trained
           on synthetic records and tested on held-out real records.
``audit``  The membership game (``skmip.audit.game.play_membership_game``, exact halves) on
           ``MIPGaussianSynthesizer(train_size=1.0)``: the released parameters attacked by
           their likelihood (LOSS and LiRA) and the samples by distance to the closest
           record; advantage vs the promised 2 eta (``skmip.audit.metrics.check_mip_bound``),
           with non-private controls that the same attacks do catch.

Usage::

    python benchmarks/bench_synthetic.py            # full run (about 10 minutes on 2 cores)
    python benchmarks/bench_synthetic.py --quick    # small run (under a minute)
    python benchmarks/bench_synthetic.py --parts fig2 audit
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import _harness as H  # the script's folder is on sys.path
import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator
from sklearn.datasets import load_breast_cancer, make_spd_matrix
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skmip.audit.attacks import LiRA, LossAttack
from skmip.bounds import mip_to_dp_epsilon
from skmip.release.dp_baselines import (
    analyze_gauss,
    dp_gradient_descent_second_moment,
    second_moment_gradient_norms,
)
from skmip.exceptions import PrivacyWarning
from skmip.audit.game import play_membership_game
from skmip.audit.metrics import check_mip_bound, membership_advantage
from skmip.params import nearest_psd
from skmip.release.statistic import Statistic
from skmip.release.gaussian import MIPGaussianSynthesizer, mean_and_covariance
from skmip.audit.attacks.synthetic import closest_record_signal
from skmip.audit.synth_audit import CopyingSynthesizer
from skmip.defend import mip_noise_path

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-6  # DP failure probability, below 1/n for every dataset used here


def _rel(A, S):
    return float(np.linalg.norm(A - S) / np.linalg.norm(S))


def _mean_se(values):
    values = np.asarray(values, dtype=np.float64)
    n = np.sum(np.isfinite(values), axis=0)
    with warnings.catch_warnings():
        # Columns that are all NaN (DP at eta = 1/2) stay NaN without a warning.
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(values, axis=0)
        se = np.nanstd(values, axis=0, ddof=1) / np.sqrt(np.maximum(n, 1))
    return mean, se


# =========================================================================== Figure 2
def _median_gradient_norm(public, n_steps, learning_rate):
    """Izzo's clip: median unclipped gradient norm over a non-private run -- on PUBLIC data."""
    S = public.T @ public / len(public)
    A = np.zeros_like(S)
    norms = []
    for _ in range(n_steps):
        norms.append(second_moment_gradient_norms(A, public))
        A = A - learning_rate * 2.0 * (A - S)
    return float(np.median(np.concatenate(norms)))


def run_fig2(quick, out):
    d = 3
    n = 50_000 if quick else 500_000
    reps = 3 if quick else 10
    n_splits = 16 if quick else 128
    etas = np.array([0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5])
    moments = (2, 4, 6)
    if H.smoke():  # one repetition on 5,000 rows, two etas, M = 2
        n, reps, n_splits, etas, moments = 5_000, 1, 8, np.array([0.1, 0.3]), (2,)
    gd_steps, gd_lr = 10, 0.5
    Sigma = make_spd_matrix(d, random_state=0)
    rng = np.random.default_rng(2024)

    # Public knowledge of P (never the private sample): a fresh draw fixes the DP clips.
    public = rng.multivariate_normal(np.zeros(d), Sigma, size=20_000)
    gd_clip = _median_gradient_norm(public, gd_steps, gd_lr)
    ag_clip = float(np.sqrt(np.quantile(np.sum(public**2, axis=1), 0.999)))

    variants = {
        # name: (statistic, radius)
        "printed": (lambda: Statistic("second_moment", structure="vector"), "laplace"),
        "skmip": (lambda: Statistic("second_moment"), "gamma"),
    }
    errors = {f"MIP {v} M={M}": np.full((reps, etas.size), np.nan) for v in variants for M in moments}
    errors["MIP coupling (exact bound)"] = np.full((reps, etas.size), np.nan)
    errors["DP-GD (Izzo)"] = np.full((reps, etas.size), np.nan)
    errors["Analyze Gauss"] = np.full((reps, etas.size), np.nan)
    errors["Raw"] = np.full((reps, etas.size), np.nan)
    times = {}
    for rep in range(reps):
        X = rng.multivariate_normal(np.zeros(d), Sigma, size=n)
        for v, (make, radius) in variants.items():
            for M in moments:
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    # Seeds are fixed for reproducibility and the Laplace radius is the
                    # printed one on purpose; both warnings are known here.
                    warnings.simplefilter("ignore", PrivacyWarning)
                    path = mip_noise_path(
                        make(), X, etas=etas, moment=M, radius=radius, n_subsets=n_splits,
                        sigma_from="train", random_state=int(rng.integers(2**31)),
                    )
                times.setdefault(f"MIP {v} M={M}", []).append(time.perf_counter() - t0)
                for j, w in enumerate(path):
                    A = np.asarray(w.estimator_.statistic_).reshape(d, d)
                    errors[f"MIP {v} M={M}"][rep, j] = _rel(A, Sigma)
        # The coupling calibration: Gaussian noise on the uncentred second moment, its bound
        # computed exactly (Jensen form for n distinct rows; docs/coupling.md).
        t0 = time.perf_counter()
        for j, eta in enumerate(etas):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                synth = MIPGaussianSynthesizer(eta=eta, center=False, random_state=int(rng.integers(2**31))).fit(X)
            errors["MIP coupling (exact bound)"][rep, j] = _rel(synth.covariance_, Sigma)
        times.setdefault("MIP coupling (exact bound), all eta", []).append(time.perf_counter() - t0)
        # D_train for the baselines: a uniformly random half of D, as in Definition 1.
        train = X[rng.choice(n, size=n // 2, replace=False)]
        errors["Raw"][rep, :] = _rel(train.T @ train / len(train), Sigma)
        t0 = time.perf_counter()
        for j, eta in enumerate(etas):
            if eta >= 0.5:
                continue  # eta = 1/2 needs epsilon = infinity
            eps = mip_to_dp_epsilon(eta, DELTA)
            A = dp_gradient_descent_second_moment(
                train, epsilon=eps, delta=DELTA, clip_norm=gd_clip, n_steps=gd_steps,
                learning_rate=gd_lr, random_state=int(rng.integers(2**31)),
            )
            errors["DP-GD (Izzo)"][rep, j] = _rel(A, Sigma)
            A = analyze_gauss(train, epsilon=eps, delta=DELTA, clip_norm=ag_clip,
                              random_state=int(rng.integers(2**31)))
            errors["Analyze Gauss"][rep, j] = _rel(A, Sigma)
        times.setdefault("DP (both, all eta)", []).append(time.perf_counter() - t0)
        print(f"  fig2: repetition {rep + 1}/{reps} done", flush=True)

    lines = [
        f"### Izzo Fig. 2: relative error ||A - Sigma||_F / ||Sigma||_F, mean +- standard error over {reps} runs",
        "",
        f"d = {d}, n = {n:,} (D_train = {n // 2:,}), sigma over {n_splits} random halves of D_train "
        f"(Algorithm 1, `sigma_from='train'`); Sigma = make_spd_matrix(3, random_state=0); DP at "
        f"delta = {DELTA:g}, epsilon = mip_to_dp_epsilon(eta, delta) (Theorem 4); DP-GD: T = {gd_steps}, "
        f"lr = {gd_lr}, clip C = {gd_clip:.2f} (median gradient norm of a non-private run on 20,000 "
        f"public draws from P); Analyze Gauss: rows clipped to {ag_clip:.2f} (99.9% norm quantile of "
        "the public draws), replace-one sensitivity, analytic calibration, PSD projection.",
        "",
        "| method | " + " | ".join(f"eta={e:g}" for e in etas) + " |",
        "|---|" + "---|" * etas.size,
    ]
    summary = {}
    for name, err in errors.items():
        mean, se = _mean_se(err)
        summary[name] = (mean, se)
        cells = ["n/a" if not np.isfinite(m) else f"{m:.3g} +- {s:.2g}" for m, s in zip(mean, se)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "Smallest eta at which the mean relative error is below 1:", ""]
    for name, (mean, _) in summary.items():
        below = etas[np.isfinite(mean) & (mean < 1)]
        lines.append(f"- {name}: " + (f"eta = {below.min():g}" if below.size else "never (in this grid)"))
    lines += ["", "Seconds per MIP path (sigma estimation + one release per eta): " + ", ".join(
        f"{k}: {np.mean(v):.2f}" for k, v in times.items()), ""]
    _plot_fig2(etas, summary, moments, out)
    return lines


def _plot_fig2(etas, summary, moments, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    colors = {2: "tab:blue", 4: "tab:orange", 6: "tab:green"}
    for ax, variant, title in zip(
        axes, ("printed", "skmip"),
        ("MIP as printed (Laplace radius, d^2 entries)", "MIP in skmip (Gamma radius, upper triangle + PSD)"),
    ):
        for M in moments:
            mean, se = summary[f"MIP {variant} M={M}"]
            ax.plot(etas, mean, "-o", ms=3, color=colors[M], label=f"MIP M={M}")
            ax.fill_between(etas, np.maximum(mean - se, 1e-4), mean + se, color=colors[M], alpha=0.2)
        for name, style in (("MIP coupling (exact bound)", "r-D"), ("DP-GD (Izzo)", "k--s"),
                            ("Analyze Gauss", "m--^"), ("Raw", "k:")):
            mean, se = summary[name]
            ok = np.isfinite(mean)
            ax.plot(etas[ok], mean[ok], style, ms=3, label=name)
            ax.fill_between(etas[ok], np.maximum(mean[ok] - se[ok], 1e-4), mean[ok] + se[ok], color="grey", alpha=0.15)
        ax.axhline(1.0, color="red", lw=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("eta (DP placed by Theorem 4)")
        ax.set_title(title, fontsize=9)
    axes[0].set_ylabel("||A - Sigma||_F / ||Sigma||_F")
    axes[1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(out / "synthetic_fig2.png", dpi=90)
    plt.close(fig)


# =========================================================================== real data
class _AnalyzeGaussGaussian:
    """DP Gaussian from Analyze Gauss on rows [x, 1]: one mechanism gives mean and second moment."""

    def __init__(self, epsilon, clip_norm, random_state):
        self.epsilon, self.clip_norm, self.random_state = epsilon, clip_norm, random_state

    def fit(self, X):
        d = X.shape[1]
        Z = np.hstack([X, np.ones((len(X), 1))])
        M = analyze_gauss(Z, epsilon=self.epsilon, delta=DELTA, clip_norm=self.clip_norm,
                          random_state=self.random_state)
        self.mean_ = M[:d, d]
        self.covariance_ = nearest_psd(M[:d, :d] - np.outer(self.mean_, self.mean_), 0.0)
        return self


def _sample(mean, cov, n, rng):
    eigval, eigvec = np.linalg.eigh(cov)
    root = eigvec * np.sqrt(np.maximum(eigval, 0.0))
    return mean + rng.standard_normal((n, mean.size)) @ root.T


def _corr(cov):
    sd = np.sqrt(np.maximum(np.diag(cov), 1e-300))
    return cov / np.outer(sd, sd)


def _evaluate(mean, cov, Z_all, Z_test, y_test, d_x, rng):
    synth = _sample(mean, cov, 2000, rng)
    ks = np.mean([stats.ks_2samp(synth[:, j], Z_all[:, j]).statistic for j in range(d_x)])
    c_real = np.corrcoef(Z_all[:, :d_x], rowvar=False)
    corr_err = float(np.linalg.norm(_corr(cov[:d_x, :d_x]) - c_real) / np.linalg.norm(c_real))
    y_syn = (synth[:, d_x] > 0).astype(int)  # label column is +-1: threshold at 0
    if np.unique(y_syn).size < 2:
        acc = float(np.mean(y_test == y_syn[0]))
    else:
        clf = LogisticRegression(max_iter=2000).fit(synth[:, :d_x], y_syn)
        acc = float(clf.score(Z_test[:, :d_x], y_test))
    return ks, corr_err, acc


def run_real(quick, out):
    X, y = load_breast_cancer(return_X_y=True)
    # Standardised with the whole dataset's statistics, treated as public (a real release
    # would use published ranges); the label joins as a +-1 column.
    Xs = StandardScaler().fit_transform(X)
    Z = np.hstack([Xs, (2 * y - 1)[:, None].astype(float)])
    d_x = Xs.shape[1]
    reps = 3 if quick else 10
    n_splits = 16 if quick else 128
    etas = (0.1, 0.25, 0.45)  # DP needs eta < 1/2 (epsilon = infinity at 1/2)
    # Analyze Gauss clip for rows [x, y, 1]: standardised rows have E||x||^2 = d, so clip at
    # twice the expected norm (public knowledge, not a statistic of the private rows).
    ag_clip = float(np.sqrt(2 * (Z.shape[1] + 1)))
    rows = {}
    rng = np.random.default_rng(7)
    for rep in range(reps):
        Z_pool, Z_test, y_pool, y_test = train_test_split(Z, y, test_size=0.3, stratify=y,
                                                          random_state=rep)
        half = Z_pool[rng.choice(len(Z_pool), size=len(Z_pool) // 2, replace=False)]
        # References: a model trained on real D_train, and the non-private Gaussian fit to it.
        clf = LogisticRegression(max_iter=2000).fit(half[:, :d_x], (half[:, d_x] > 0).astype(int))
        rows.setdefault("real records (no privacy)", []).append(
            (np.mean([stats.ks_2samp(half[:, j], Z[:, j]).statistic for j in range(d_x)]),
             float(np.linalg.norm(np.corrcoef(half[:, :d_x], rowvar=False) - np.corrcoef(Z[:, :d_x], rowvar=False))
                   / np.linalg.norm(np.corrcoef(Z[:, :d_x], rowvar=False))),
             float(clf.score(Z_test[:, :d_x], y_test))))
        vec = mean_and_covariance(half)
        k = Z.shape[1]
        cov = np.zeros((k, k))
        cov[np.triu_indices(k)] = vec[k:]
        cov = cov + np.triu(cov, 1).T
        rows.setdefault("Gaussian (no privacy)", []).append(_evaluate(vec[:k], cov, Z, Z_test, y_test, d_x, rng))
        for eta in etas:
            for M, radius in ((2, "gamma"), (6, "gamma"), (6, "laplace")):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyWarning)
                    s = MIPGaussianSynthesizer(eta=eta, method="moments", moment=M, n_subsets=n_splits,
                                               radius=radius, random_state=int(rng.integers(2**31))).fit(Z_pool)
                label = f"MIP eta={eta} M={M}" + (" (printed Laplace radius)" if radius == "laplace" else "")
                rows.setdefault(label, []).append(_evaluate(s.mean_, s.covariance_, Z, Z_test, y_test, d_x, rng))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                s = MIPGaussianSynthesizer(eta=eta, random_state=int(rng.integers(2**31))).fit(Z_pool)
            rows.setdefault(f"MIP eta={eta} coupling (exact bound)", []).append(
                _evaluate(s.mean_, s.covariance_, Z, Z_test, y_test, d_x, rng))
            dp = _AnalyzeGaussGaussian(mip_to_dp_epsilon(eta, DELTA), ag_clip, int(rng.integers(2**31))).fit(half)
            rows.setdefault(f"DP Analyze Gauss eta={eta}", []).append(
                _evaluate(dp.mean_, dp.covariance_, Z, Z_test, y_test, d_x, rng))
        print(f"  real: repetition {rep + 1}/{reps} done", flush=True)
    majority = max(np.mean(y), 1 - np.mean(y))
    lines = [
        f"### Real data: load_breast_cancer (569 x 30, standardised, label as a +-1 column), {reps} runs",
        "",
        "70/30 split; the synthesizer draws its random half D_train of the 70% pool; 2,000 synthetic "
        "records per release. KS: mean over the 30 features of the two-sample KS distance to all real "
        "records; corr. error: ||corr(released) - corr(real)||_F / ||corr(real)||_F; accuracy: "
        "LogisticRegression trained on synthetic records (label = sign of the label column), tested on "
        f"the real 30% (majority class: {majority:.3f}). n_splits = {n_splits}; DP: delta = {DELTA:g}, "
        f"rows [x, y, 1] clipped to {ag_clip:.2f}.",
        "",
        "| release | mean KS | corr. error | accuracy |",
        "|---|---|---|---|",
    ]
    summary = {}
    for name, vals in rows.items():
        mean, se = _mean_se(vals)
        summary[name] = (mean, se)
        lines.append(f"| {name} | " + " | ".join(f"{m:.3f} +- {s:.3f}" for m, s in zip(mean, se)) + " |")
    lines.append("")
    _plot_real(summary, etas, majority, out)
    return lines


def _plot_real(summary, etas, majority, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.3))
    series = {
        "MIP coupling (exact bound)": [f"MIP eta={e} coupling (exact bound)" for e in etas],
        "MIP M=2": [f"MIP eta={e} M=2" for e in etas],
        "MIP M=6": [f"MIP eta={e} M=6" for e in etas],
        "MIP M=6, printed Laplace radius": [f"MIP eta={e} M=6 (printed Laplace radius)" for e in etas],
        "DP Analyze Gauss": [f"DP Analyze Gauss eta={e}" for e in etas],
    }
    titles = ("mean KS distance (lower is better)", "correlation error (lower is better)",
              "accuracy on real test data")
    for i, ax in enumerate(axes):
        for label, names in series.items():
            mean = np.array([summary[n][0][i] for n in names])
            se = np.array([summary[n][1][i] for n in names])
            ax.errorbar(etas, mean, yerr=se, marker="o", ms=3, capsize=2, label=label)
        ref = summary["Gaussian (no privacy)"][0][i]
        ax.axhline(ref, color="k", ls=":", label="Gaussian, no privacy")
        if i == 2:
            ax.axhline(majority, color="grey", ls="--", label="majority class")
        ax.set_xlabel("eta")
        ax.set_title(titles[i], fontsize=9)
        if i == 1:
            ax.set_yscale("log")
    handles, labels = axes[2].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=6, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out / "synthetic_real.png", dpi=90)
    plt.close(fig)


# =========================================================================== audit
class _GaussianNoPrivacy(BaseEstimator):
    """Non-private control: the Gaussian fit to the training rows, released as is."""

    def fit(self, X, y=None):
        vec = mean_and_covariance(X)
        d = X.shape[1]
        cov = np.zeros((d, d))
        cov[np.triu_indices(d)] = vec[d:]
        self.mean_, self.covariance_ = vec[:d], cov + np.triu(cov, 1).T
        self.n_features_in_ = d
        return self

    # The same release density the private synthesizer's audit uses.
    score_samples = MIPGaussianSynthesizer.score_samples

    def sample(self, n_samples, random_state=None):
        return _sample(self.mean_, self.covariance_, n_samples, np.random.default_rng(random_state))


def run_audit(quick, out):
    X, _ = load_breast_cancer(return_X_y=True)
    Xs = StandardScaler().fit_transform(X)
    rng = np.random.default_rng(3)
    pool = Xs[rng.choice(len(Xs), size=200, replace=False)]
    n_models = 4 if H.smoke() else 16 if quick else 64
    n_splits = 8 if H.smoke() else 16 if quick else 128
    configs = [
        ("MIPGaussianSynthesizer eta=0.1, coupling (exact bound)", MIPGaussianSynthesizer(eta=0.1, train_size=1.0), 0.1),
        ("MIPGaussianSynthesizer eta=0.1 M=2",
         MIPGaussianSynthesizer(eta=0.1, method="moments", n_subsets=n_splits, train_size=1.0), 0.1),
        ("MIPGaussianSynthesizer eta=0.25 M=6",
         MIPGaussianSynthesizer(eta=0.25, method="moments", moment=6, n_subsets=n_splits, train_size=1.0), 0.25),
        ("MIPGaussianSynthesizer eta=0.1 M=6, printed Laplace radius",
         MIPGaussianSynthesizer(eta=0.1, method="moments", moment=6, radius="laplace", n_subsets=n_splits,
                                train_size=1.0), 0.1),
        ("control: Gaussian without noise", _GaussianNoPrivacy(), 0.1),
        ("control: copies training records", CopyingSynthesizer(), 0.1),
    ]
    lines = [
        f"### Membership audit: pool of 200 standardised breast-cancer rows (30 features), "
        f"{n_models} models on exact random halves",
        "",
        "Advantage = max over thresholds of TPR - FPR (eta-MIP promises <= 2 eta); 'holds' = "
        "`check_mip_bound` at 95% simultaneous confidence (controls are checked against eta = 0.1).",
        "",
        "| release | attack | advantage | 2 eta | holds |",
        "|---|---|---|---|---|",
    ]
    for name, est, eta in configs:
        for attack_name, output, attack in (
            ("likelihood (LOSS)", "score_samples", LossAttack()),
            ("likelihood (LiRA)", "score_samples", LiRA()),
            ("closest record", closest_record_signal, LossAttack()),
        ):
            if isinstance(est, CopyingSynthesizer) and output == "score_samples":
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PrivacyWarning)
                game = play_membership_game(est, pool, n_models=n_models, output=output,
                                            random_state=int(rng.integers(2**31)))
            scores = attack.score(game)
            adv = membership_advantage(game.membership, scores)
            check = check_mip_bound(game.membership, scores, eta)
            lines.append(f"| {name} | {attack_name} | {adv:.3f} | {2 * eta:g} | {check.holds} |")
        print(f"  audit: {name} done", flush=True)
    lines.append("")
    return lines


# =========================================================================== main
def main(argv=None):
    parser = H.parser(__doc__, quick="small sizes (under a minute)")
    parser.add_argument("--parts", nargs="+", default=["fig2", "real", "audit"],
                        choices=["fig2", "real", "audit"])
    parser.add_argument("--plots", default=None,
                        help="folder for the PNGs (default: docs/_static for a full run, "
                             "benchmarks/results with --quick, so a smoke run never replaces "
                             "the documented figures)")
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results" / "synthetic.md"))
    # --smoke: Izzo's Fig. 2 on 5,000 rows, written under benchmarks/results/smoke/.
    args = H.parse(parser, argv, smoke=dict(parts=["fig2"], plots=str(H.SMOKE_RESULTS),
                                            results=str(H.SMOKE_RESULTS / "synthetic.md")))
    if args.plots is None:
        args.plots = str(ROOT / ("benchmarks/results" if args.quick else "docs/_static"))
    out = Path(args.plots)
    out.mkdir(parents=True, exist_ok=True)
    lines = [H.header(argv), ""]
    t0 = time.perf_counter()
    for part in args.parts:
        print(f"[{part}]", flush=True)
        lines += {"fig2": run_fig2, "real": run_real, "audit": run_audit}[part](args.quick, out)
    lines.append(f"Total time: {time.perf_counter() - t0:.0f} s on {os.cpu_count()} CPU(s).")
    text = "\n".join(lines)
    print(text)
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    Path(args.results).write_text(text + "\n")


if __name__ == "__main__":
    main()
