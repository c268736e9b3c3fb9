"""Nasr-style audit: empirical vs theoretical epsilon of DP-SGD (Opacus) with a Dirac canary.

Run:  python benchmarks/bench_nasr.py [--quick] [--models N] [--epsilons 1 2 4 8] [--n-jobs 2]
      [--plot PNG]

Nasr et al. (2021, Section IV) instantiate the DP adversary: fix a dataset D and a crafted
canary x*, train many models on D and on D' = D + {x*}, and turn the attack's false-positive
and false-negative counts into a Clopper-Pearson lower bound on epsilon. The bound is tight
only when the canary is as strong as the proof allows. Here:

* **Mechanism.** ``DPSGDLogisticRegression`` (Opacus DP-SGD, add/remove neighbours) with the
  full batch (sampling rate q = 1), T = 10 steps, clipping norm C = 1, the noise multiplier
  sigma calibrated by Opacus' PRV accountant to the target epsilon at delta = 1e-5 (the
  promised epsilon is that accountant's), and
  training started at zero weights (``coef_init``) so that no random start hides the signal.
  With q = 1 the mechanism is a composition of T Gaussian mechanisms, exactly
  mu-GDP with mu = sqrt(T) / sigma (Dong, Roth & Su 2022, Cor. 3.3), whose optimal
  (epsilon, delta) curve is ``skmip.bounds.gdp_to_dp`` -- the exact epsilon, at most the
  accountant's.
* **Canary.** A record ``x* = c e_j`` on a feature j that is 0 for every row of D (a
  "Dirac" canary in input space, the input-space analogue of Nasr et al.'s Dirac gradient
  canary), c = 1000, label 0. Only x* moves coefficient j; its per-sample gradient has norm
  far above C at every step (the learning rate keeps its logit within +-5, where the loss
  gradient is at least sigma(-5) c sqrt(2) >> C), so it is clipped to exactly C every step:
  the largest move one record can make, in a direction no other record touches.
* **Attack.** The logit at x* (a black-box score, equivalent to its loss); the in/out
  shift is then sqrt(T)/sigma standard deviations, i.e. the test statistic of the exact
  mu-GDP trade-off.

For each epsilon the script prints the promised epsilon (accountant), the exact one (GDP),
the empirical lower bound (``skmip.audit.metrics.empirical_epsilon``, 95% Clopper-Pearson,
threshold chosen on half the models, certified on the other half), the *ceiling* that the
same number of trials gives against an exactly mu-GDP Gaussian pair (the median over 20
simulated audits -- finite trials cannot certify more), and two sample-efficient views of
tightness: the AUC against Phi(mu / sqrt 2) and the fitted mu-hat (mean shift over the
pooled standard deviation, 95% normal interval) against mu, with ``eps(mu_lo)`` =
``gdp_to_dp(mu_lo, delta)``: the epsilon the audit proves *if* the mechanism's trade-off is
Gaussian (the parametric audit of Nasr et al. 2023, "Tight auditing of differentially
private machine learning"; an assumption the Clopper-Pearson column does not make).

A second table repeats the earlier check of the torch-free ``DPLogisticRegression``
(objective perturbation): a crafted record in a pool of 40 rows, LOSS attack. Objective
perturbation's bound is not attained by any one record, so that audit stays far from tight.

Results are recorded in docs/reproductions.md.
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from scipy.stats import norm
from sklearn.datasets import load_breast_cancer
from sklearn.utils.parallel import Parallel, delayed

from skmip.bounds import gdp_to_dp
from skmip.exceptions import PrivacyWarning
from skmip.audit.metrics import empirical_epsilon, mi_roc_auc

DELTA = 1e-5
STEPS = 10
CANARY_SCALE = 1000.0
LOGIT_BOUND = 5.0  # keep the canary's logit in [-5, 5]: its gradient stays far above C


def _pool(n_rows=40, seed=0):
    """D: standardized breast-cancer rows scaled to norm ~1, plus the canary's all-zero column."""
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0) / np.sqrt(X.shape[1])
    rows = np.random.default_rng(seed).choice(len(X), n_rows, replace=False)
    X = np.hstack([X[rows], np.zeros((n_rows, 1))])
    canary = np.zeros(X.shape[1])
    canary[-1] = CANARY_SCALE
    return X, y[rows], canary


def _fit_scores(X, y, canary, epsilon, lr, seeds, noise_multiplier=None):
    """The canary's logit under models trained on (X, y) with the given noise seeds.

    ``noise_multiplier=None`` calibrates sigma to ``epsilon`` with the PRV accountant (slow);
    the audit does that once and trains the other models at that sigma, accounted with RDP
    (four times faster per fit; the PRV epsilon of the first fit is the promise).
    """
    import torch

    from skmip.nn import DPSGDLogisticRegression

    torch.set_num_threads(1)
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # fixed seeds: a reproducible audit
        for seed in seeds:
            clf = DPSGDLogisticRegression(
                epsilon=epsilon, noise_multiplier=noise_multiplier, delta=DELTA,
                accountant="prv" if noise_multiplier is None else "rdp",
                max_grad_norm=1.0, lr=lr,
                max_epochs=STEPS, batch_size=len(X) + 1, random_state=int(seed),
            ).fit(X, y, coef_init=np.zeros(X.shape[1]))
            out.append((float(clf.decision_function(canary[None, :])[0]), clf.epsilon_, clf.noise_multiplier_))
    return out


def _ceiling(mu, n_models, rng, repeats=20):
    """Median empirical epsilon of ``repeats`` simulated audits of an exactly mu-GDP pair."""
    member = np.repeat([False, True], n_models)
    vals = []
    for _ in range(repeats):
        scores = np.r_[rng.normal(size=n_models), rng.normal(mu, 1.0, size=n_models)]
        order = rng.permutation(member.size)  # interleave: the split threshold uses even indices
        vals.append(empirical_epsilon(member[order], scores[order], delta=DELTA))
    return float(np.median(vals))


def dpsgd_audit(epsilons, n_models, n_jobs, seed=0):
    """One row per epsilon: promised, exact and empirical epsilon, AUC and mu-hat."""
    X, y, canary = _pool()
    Xc, yc = np.vstack([X, canary]), np.append(y, 0)
    rng = np.random.default_rng(seed)
    rows = []
    for eps in epsilons:
        t0 = time.perf_counter()
        seeds = rng.integers(0, 2**31, size=2 * n_models)
        # sigma depends only on (epsilon, q = 1, T): read it from one fit, then set lr so the
        # canary's logit stays within +-LOGIT_BOUND (mean shift plus 4 noise sd, T steps).
        _, promised, sigma = _fit_scores(Xc, yc, canary, eps, 0.0, seeds[:1])[0]
        B = len(Xc)
        lr = LOGIT_BOUND * B / (CANARY_SCALE * np.sqrt(2.0) * (STEPS + 4 * sigma * np.sqrt(STEPS)))
        k = 2 * max(1, n_jobs or 1)
        tasks = [((Xc, yc), c, True) for c in np.array_split(np.arange(n_models), k)]
        tasks += [((X, y), c, False) for c in np.array_split(np.arange(n_models, 2 * n_models), k)]
        parts = Parallel(n_jobs=n_jobs)(
            delayed(_fit_scores)(*data, canary, eps, lr, seeds[c], sigma) for data, c, _ in tasks
        )
        member = np.concatenate([np.full(len(c), inside) for _, c, inside in tasks])
        logits = np.array([r[0] for part in parts for r in part])
        scores = -logits  # label 0: a member's logit is pushed down
        order = np.random.default_rng(seed + 1).permutation(member.size)
        m, s = member[order], scores[order]
        mu = np.sqrt(STEPS) / sigma
        sd = np.sqrt((scores[member].var(ddof=1) + scores[~member].var(ddof=1)) / 2)
        mu_hat = (scores[member].mean() - scores[~member].mean()) / sd
        se = np.sqrt(2.0 / n_models + mu_hat**2 / (4.0 * n_models))
        rows.append({
            "eps": eps, "sigma": sigma, "promised": promised, "exact": float(gdp_to_dp(mu, DELTA)),
            "empirical": empirical_epsilon(m, s, delta=DELTA), "ceiling": _ceiling(mu, n_models, rng),
            "auc": mi_roc_auc(m, s), "auc_theory": float(norm.cdf(mu / np.sqrt(2.0))), "mu": mu,
            "mu_hat": mu_hat, "mu_lo": mu_hat - 1.96 * se, "mu_hi": mu_hat + 1.96 * se,
            "eps_mu_lo": float(gdp_to_dp(mu_hat - 1.96 * se, DELTA)) if mu_hat > 1.96 * se else 0.0,
            "seconds": time.perf_counter() - t0,
        })
        r = rows[-1]
        print(f"{eps:>5g} {sigma:>7.3f} {r['promised']:>8.3f} {r['exact']:>7.3f} {r['empirical']:>9.3f} "
              f"{r['ceiling']:>8.3f} {r['auc']:>6.3f} {r['auc_theory']:>7.3f} {mu:>6.3f} "
              f"{mu_hat:>6.3f} [{r['mu_lo']:.3f}, {r['mu_hi']:.3f}] {r['eps_mu_lo']:>11.3f} "
              f"{r['seconds']:>6.1f}", flush=True)
    return rows


def objective_perturbation_audit(epsilons, n_models):
    """The weak canary against DPLogisticRegression (objective perturbation), LOSS attack."""
    from skmip import DPLogisticRegression
    from skmip.audit.attacks import get_attack
    from skmip.audit.game import play_membership_game

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    rows = np.random.default_rng(0).choice(len(X), 40, replace=False)
    X, y = X[rows], y[rows]
    direction = np.linalg.svd(X, full_matrices=False)[2][0]
    positive = X @ direction > 0
    canary_label = 1 - round(np.mean(y[positive])) if positive.any() else 0
    data_norm = 5.0
    X, y = np.vstack([X, data_norm * direction]), np.append(y, canary_label)
    for eps in epsilons:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyWarning)
            game = play_membership_game(
                DPLogisticRegression(epsilon=eps, data_norm=data_norm, C=1.0), X, y,
                n_models=n_models, sampling="bernoulli", random_state=1,
            )
        scores = get_attack("loss").score(game)
        m, s = game.membership[:, -1], scores[:, -1]
        print(f"{eps:>5g} {empirical_epsilon(m, s, delta=DELTA):>9.3f} {mi_roc_auc(m, s):>6.3f}", flush=True)


def plot(rows, path):
    """Empirical vs theoretical epsilon, Nasr et al.'s figure: one point per target epsilon."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    promised = [r["promised"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(promised, promised, "k--", lw=1, label="promised (PRV accountant)")
    ax.plot(promised, [r["empirical"] for r in rows], "o-", label="empirical, Clopper-Pearson 95%")
    ax.plot(promised, [r["ceiling"] for r in rows], "s:", label="ceiling for this many trials")
    ax.plot(promised, [r["eps_mu_lo"] for r in rows], "^-", label="Gaussian fit, eps(mu_lo)")
    ax.set(xlabel="theoretical epsilon", ylabel="epsilon lower bound",
           title="DP-SGD, Dirac canary (Nasr-style audit)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"plot: {path}")


def main(argv=None):
    parser = H.parser(__doc__, quick="250 models per side, epsilon 2 and 8", n_jobs=2)
    parser.add_argument("--models", type=int, default=1000, help="models per side (in / out)")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.5, 1.0, 2.0, 4.0, 8.0])
    parser.add_argument("--plot", default=None, metavar="PNG", help="draw empirical vs theoretical epsilon")
    # --smoke: 20 models per side at epsilon 8, one process, no plot.
    args = H.parse(parser, argv, quick=dict(models=250, epsilons=[2.0, 8.0]),
                   smoke=dict(models=20, epsilons=[8.0], n_jobs=1, plot=None))
    H.requires("torch", "pip install torch")
    n_models, epsilons = args.models, args.epsilons
    t0 = time.perf_counter()
    print(f"DP-SGD (Opacus, PRV accountant), full batch of {len(_pool()[0]) + 1} rows, T = {STEPS} steps, "
          f"C = 1, Dirac canary c = {CANARY_SCALE:g}; {n_models} models trained with the canary and "
          f"{n_models} without; delta = {DELTA:g}; 95% Clopper-Pearson (split threshold)")
    print(f"{'eps':>5} {'sigma':>7} {'promised':>8} {'exact':>7} {'empirical':>9} {'ceiling':>8} "
          f"{'AUC':>6} {'AUC(mu)':>7} {'mu':>6} {'mu_hat':>6} {'95% CI':>16} {'eps(mu_lo)':>11} {'s':>6}")
    rows = dpsgd_audit(epsilons, n_models, args.n_jobs)
    if args.plot:
        plot(rows, args.plot)
    print(f"\nObjective perturbation (DPLogisticRegression, data_norm 5, C 1): crafted record in a pool "
          f"of 40, Bernoulli(1/2) membership, {2 * n_models} models, LOSS")
    print(f"{'eps':>5} {'empirical':>9} {'AUC':>6}")
    objective_perturbation_audit(epsilons, 2 * n_models)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
