r"""German credit at eta = 0.1 beyond the schedules: functions of D's features alone (issue 32).

Run (about ten minutes on one shared core with ``--draws 40``)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_german_levers.py --draws 40

German credit (the bundled 61-column numeric copy), the five stratified 70/30 splits and the
D_train halves of ``bench_noisy_gradient.py`` (seeds 0-4), ``StandardScaler`` fitted on D,
``LogisticRegression(C=0.1)`` at eta = 0.1, ``--draws`` noise draws per split (the noise of draw
``d`` seeded by ``(split, d)``, the same draws for every lever). Each lever is a function of D's
features (unsupervised) and of public settings, never of D's labels beyond the engine's start at
their prior, so Definition 1 leaves it outside the attacker's signal and the printed bound of
every row is that of the engine's accountant:

- ``engine``: :func:`skmip.calibration.noisy_gradient.fit_noisy_gradient`, every default, in all
  the columns (no ``X_pool``: the engine's behaviour before the subspace default).
- ``subspace:R``: the same with D's features as ``X_pool`` and ``subspace=R`` (``auto``: the
  route's default rule, 23 directions here): the descent in the top ``R`` principal directions
  of D's scaled features, the coefficients mapped back (:mod:`skmip.calibration.noisy_gradient.subspace`).
- ``range``: each column divided by half its range in D (a diagonal preconditioner; the
  coefficients mapped back), in all the columns.
- ``suffstat:Q:C``: one Gaussian release of the label statistic instead of noisy steps. The
  logistic loss of a row is :math:`A(\theta^\top\tilde x) - y\,\theta^\top\tilde x` (:math:`\tilde x`
  the row with a 1 appended); weighting row :math:`i` by :math:`m_i = \min(1, c/\|\tilde x_i\|)`,
  its label-free part summed over D_train is replaced by :math:`k/n` times its sum over D
  (public), and its label part is released once,
  :math:`s = \sum_{i \in D_\mathrm{train}} (2y_i - 1)\, m_i \tilde x_i + \sigma c\,\xi`, each
  term of norm at most :math:`c` (the ``Q``-quantile of D's row norms), :math:`\sigma` the
  smallest at which ``dpsgd_eta(sigma, 1, 1)`` (one full-batch Gaussian step, replace-one) is at
  most eta. The surrogate :math:`C\,[\tfrac kn\sum_D m_i(A(u_i) - u_i/2) - \theta^\top s/2] +
  \tfrac12\|w\|^2` is then minimised by L-BFGS (post-processing of :math:`s`) with the penalty
  weight ``C`` (the estimator's own is 0.1).

Printed per lever: the mean test accuracy of the ``5 x draws`` runs, the standard error of the
5-split mean over the draws, the range of the 5-split means, the mean per split.
"""

from __future__ import annotations

import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from _harness import markdown_table
from bench_noisy_gradient import german_design
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from skmip.calibration.noisy_gradient import fit_noisy_gradient, noise_multiplier_for_eta

LEVERS = ["engine", "subspace:auto", "subspace:16", "subspace:32", "range", "suffstat:0.1:0.1", "suffstat:0.1:0.01",
          "suffstat:0.5:0.01"]


def engine_scores(lever, Z, y, rows, Z_te, y_te, eta, seed, draws):
    """Test accuracies of the engine (``engine``, ``subspace:R``) or of the engine on the columns
    divided by half their range in D (``range``), the coefficients mapped back."""
    half = (Z.max(axis=0) - Z.min(axis=0)) / 2
    scale = 1.0 / np.where(half > 0, half, 1.0) if lever == "range" else np.ones(Z.shape[1])
    subspace = lever.split(":")[1] if lever.startswith("subspace") else None
    pool = dict(X_pool=Z, subspace=subspace if subspace == "auto" else int(subspace)) if subspace else {}
    accs = []
    for draw in range(draws):
        noise = np.random.default_rng([seed, draw])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning
            clf, _ = fit_noisy_gradient(LogisticRegression(C=0.1), Z[rows] * scale, y[rows], n_total=len(y), eta=eta,
                                        classes=np.unique(y), y_pool=y, random_state=noise, **pool)
        decision = Z_te @ (scale * clf.coef_.ravel()) + clf.intercept_[0]
        accs.append(np.mean(clf.classes_[(decision > 0).astype(int)] == y_te))
    return accs


def suffstat_scores(lever, Z, y, rows, Z_te, y_te, eta, seed, draws):
    """Test accuracies of the one-release surrogate of the module docstring."""
    _, quantile, C = lever.split(":")
    X = np.hstack([Z, np.ones((len(Z), 1))])
    norms = np.linalg.norm(X, axis=1)
    c = float(np.quantile(norms, float(quantile)))
    clipped = X * np.minimum(1.0, c / norms)[:, None]  # m_i x_i, each of norm <= c
    sigma, _ = noise_multiplier_for_eta(eta, 1.0, 1)
    k, n, C = len(rows), len(y), float(C)
    weights, penalty = k / n * np.minimum(1.0, c / norms), np.r_[np.ones(Z.shape[1]), 0.0]
    accs = []
    for draw in range(draws):
        noise = np.random.default_rng([seed, draw]).standard_normal(X.shape[1])
        s = (2 * y[rows] - 1) @ clipped[rows] + sigma * c * noise

        def surrogate(theta, s=s):
            u = X @ theta
            value = C * (weights @ (np.logaddexp(0, u) - u / 2) - theta @ s / 2) + 0.5 * penalty @ theta**2
            return value, C * (X.T @ (weights * (expit(u) - 0.5)) - s / 2) + penalty * theta

        theta = minimize(surrogate, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B").x
        accs.append(np.mean(((Z_te @ theta[:-1] + theta[-1]) > 0).astype(int) == y_te))
    return accs


def main(argv=None):
    p = H.parser(__doc__, seeds=5)
    p.add_argument("--eta", type=float, default=0.1)
    p.add_argument("--draws", type=int, default=10, help="noise draws per split")
    p.add_argument("--levers", nargs="+", default=LEVERS,
                   help="engine, subspace:R (or auto), range, suffstat:QUANTILE:C (the module docstring)")
    args = H.parse(p, argv, blas_threads=1, smoke={"seeds": 1, "draws": 1, "levers": ["engine", "subspace:auto",
                                                                                        "suffstat:0.5:0.01"]})
    rows = []
    for lever in args.levers:
        accs = []
        for seed in range(args.seeds):
            scaler, X_d, y_d, X_te, y_te = german_design(seed)
            Z, y = scaler.fit_transform(X_d), np.asarray(y_d)
            train = np.random.default_rng(seed).permutation(len(y))[: len(y) // 2]  # bench_noisy_gradient's halves
            score = suffstat_scores if lever.startswith("suffstat") else engine_scores
            accs.append(score(lever, Z, y, train, scaler.transform(X_te), np.asarray(y_te), args.eta, seed, args.draws))
        accs = np.asarray(accs)  # (splits, draws)
        means = accs.mean(axis=0)
        se = means.std(ddof=1) / np.sqrt(len(means)) if len(means) > 1 else float("nan")
        rows.append([lever, f"{accs.mean():.4f}", f"{se:.4f}", f"{means.min():.3f}-{means.max():.3f}",
                     ", ".join(f"{a:.3f}" for a in accs.mean(axis=1))])
        print(" | ".join(rows[-1]), flush=True)
    print(markdown_table(["lever", "mean of the runs", "s.e. of the 5-split mean", "5-split means, min-max",
                          "mean per split"], rows))


if __name__ == "__main__":
    main()
