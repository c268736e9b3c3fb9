"""Swap-sensitivity engines and the coupling calibration on real data.

Run:  python benchmarks/bench_influence.py [--rounds 1000] [--check-rounds 20] [--repeats 200]
      python benchmarks/bench_influence.py --only approx --dataset digits --check-rounds 4

Data: ``load_breast_cancer``, the 70% training split (398 rows) standardized on itself, as in
the wrapper benchmark; LogisticRegression(C in {0.1, 1}, solver="newton-cholesky",
tol=1e-10), k = n // 2. Prints, side by side in one run:

1. **Approximation error** of the ``"newton"`` (target-exact) and ``"influence"``
   (first-order) engines against exact refits *on the same (x*, e) pairs*
   (``pairs_per_target=1``, same seed): quantiles of |d_approx / d_refit - 1|, overall and
   on the 10% largest distances, the effect on the calibrated noise scale (point estimate
   from each engine's distances), and the time per round.
2. **Price of the confidence statement**: the calibrated scale with Maurer-Pontil at 95%
   (union bound over all 398 targets) over the point estimate, for 250/500/1000 rounds, and
   the effect of the Jensen summary size.
3. **Noise shape**: diagonal whitening (w = sigma over 128 random halves of D) against the
   full factor of the covariance over the same halves (``estimate_noise_factor``):
   calibrated scale and test accuracy of the noised model (random D_train, fresh noise,
   ``--repeats`` draws), with the non-private model and Corollary 10's constant for
   reference.

4. **Exact audits** (``--only audit``): on enumerable problems (n <= 12, k = n/2), the
   exhaustive coupling expectation (``engine="exact"``) calibrates the Gaussian noise to
   each eta; :func:`skmip.audit.attacks.bayes.exact_mip_advantage` then measures the exact
   Bayes-optimal attacker's advantage (Monte Carlo over the noise only).

Results are recorded in docs/coupling.md.
"""

from __future__ import annotations

import time

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.linear_model import LogisticRegression

from skmip.bounds import coupling_noise_scale, mip_noise_constant
from skmip.calibration.spread.noise_factor import estimate_noise_factor
from skmip.calibration.swap import estimate_swap_deltas

ETAS = [0.05, 0.1, 0.2, 0.3]


def _data(dataset="breast_cancer"):
    """70/30 split; breast cancer standardized, digits scaled to [0, 1] (as bench_coupling_utility)."""
    return H.split_scaled(dataset, scaler={"breast_cancer": "standard", "digits": "minmax"}[dataset])


def _model(C, dataset="breast_cancer"):
    if dataset == "digits":  # multinomial: L-BFGS (newton-cholesky takes 9-39 s per fit here)
        return LogisticRegression(C=C, solver="lbfgs", tol=1e-8, max_iter=2000)
    return LogisticRegression(C=C, solver="newton-cholesky", tol=1e-10)


def _vector(m):
    return np.r_[m.coef_.ravel(), m.intercept_]


def _shapes(C, X, y, n_halves=128, seed=0, dataset="breast_cancer"):
    """Full factor L (estimate_noise_factor, Ledoit-Wolf shrinkage) over random halves of D,
    and the diagonal sigma of the same fits (the square roots of diag(L L^T))."""
    L = estimate_noise_factor(_model(C, dataset), X, y, n_subsets=n_halves, random_state=seed)
    return np.sqrt(np.einsum("ij,ij->i", L, L)), L


def _quantiles(err):
    return " | ".join(f"{q:.4f}" for q in np.quantile(err, [0.5, 0.9, 0.99, 1.0]))


def bench_approximation(check_rounds, dataset="breast_cancer", Cs=(0.1, 1.0)):
    X, _, y, _ = _data(dataset)
    engines = ["refit", "newton", "influence"]  # digits: the K-margin "newton" (multinomial.py)
    print(f"\n## 1. Approximation error against exact refits (same pairs), {dataset}\n")
    print(f"n = {len(X)}, k = {len(X) // 2}, {check_rounds} rounds x 1 pair per target\n")
    print("| C | engine | s/round | median | p90 | p99 | max | max, top-10% distances | s_point(0.1) / refit | s_point(0.2) / refit |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for C in Cs:
        w, _ = _shapes(C, X, y, dataset=dataset)
        kw = dict(scale=w, n_rounds=check_rounds, pairs_per_target=1, random_state=1)
        runs = {}
        for engine in engines:
            t0 = time.perf_counter()
            runs[engine] = estimate_swap_deltas(_model(C, dataset), X, y, engine=engine, **kw).distances
            runs[engine + "_time"] = (time.perf_counter() - t0) / check_rounds
        ref = runs["refit"].ravel()
        big = ref > np.quantile(ref, 0.9)
        s_ref = {eta: coupling_noise_scale(runs["refit"], eta, confidence=None).noise_scale for eta in (0.1, 0.2)}
        for engine in engines:
            err = np.abs(runs[engine].ravel() / ref - 1)
            ratios = [
                coupling_noise_scale(runs[engine], eta, confidence=None).noise_scale / s_ref[eta]
                for eta in (0.1, 0.2)
            ]
            print(
                f"| {C} | {engine} | {runs[engine + '_time']:.3f} | {_quantiles(err)} | "
                f"{err[big].max():.4f} | {ratios[0]:.4f} | {ratios[1]:.4f} |"
            )


def _monotone_only(D, eta, G=128):
    """The grid point where the monotone relaxation alone (second moment for the sample
    variance) meets eta: what the calibration would give without the walk down the grid."""
    from skmip.bounds.bernstein import _ucb_per_target  # no public route (see the issue 23 report)

    j = int(np.floor(G * np.log2(coupling_noise_scale(D, eta).noise_scale)))
    shares = np.full(len(D), 1.0 / len(D))  # the uniform union bound over the targets
    while _ucb_per_target(D, 2 ** (j / G), 0.5, 0.05, shares, monotone=True)[0].max() > eta:
        j += 1
    return 2 ** (j / G)


def bench_confidence(rounds, Cs=(0.1, 1.0), etas=ETAS):
    X, _, y, _ = _data()
    print("\n## 2. Price of the 95% confidence statement (newton engine, all pairs)\n")
    print("| C | eta | s_point | s (m=250) | s (m=500) | s (m=1000) | s / s_point at m=1000 | monotone bound only | s, summary 1 / 4 / 16 |")
    print("|---|---|---|---|---|---|---|---|---|")
    out, notes = {}, []
    for C in Cs:
        w, _ = _shapes(C, X, y)
        t0 = time.perf_counter()
        # 16 pairs a target and round, so that the 16-value summary is kept (it is capped at the pairs).
        res = estimate_swap_deltas(_model(C), X, y, scale=w, n_rounds=rounds, pairs_per_target=16, summary_size=16,
                                   random_state=2)
        elapsed = time.perf_counter() - t0
        D16 = res.distances
        D4 = D16.reshape(*D16.shape[:2], 4, 4).mean(-1)  # coarser Jensen summaries
        D1 = D16.mean(-1, keepdims=True)
        for eta in etas:
            cells = []
            for m in (250, 500, 1000):
                if m > rounds:
                    cells.append("-")
                    continue
                try:
                    cells.append(f"{coupling_noise_scale(D4[:, :m], eta).noise_scale:.2f}")
                except ValueError:
                    cells.append("n/a")
            full = coupling_noise_scale(D4, eta)
            by_summary = " / ".join(f"{coupling_noise_scale(D, eta).noise_scale:.3f}" for D in (D1, D4, D16))
            print(
                f"| {C} | {eta} | {full.noise_scale_point:.2f} | {' | '.join(cells)} | "
                f"{full.noise_scale / full.noise_scale_point:.3f} | {_monotone_only(D4, eta):.2f} | {by_summary} |"
            )
        t0 = time.perf_counter()
        coupling_noise_scale(D4, 0.1)
        notes.append(f"C={C}: {rounds} rounds in {elapsed:.1f} s; one calibration (summary 4) in {time.perf_counter() - t0:.2f} s")
        out[C] = D4
    print("\n" + "\n".join(notes))
    return out


def bench_shape(rounds, repeats, Cs=(0.1, 1.0), etas=ETAS):
    X, X_te, y, y_te = _data()
    n, k = len(X), len(X) // 2
    print("\n## 3. Noise shape: diagonal sigma vs full factor L (95% confidence)\n")
    print(f"Corollary 10's constant at M = 2: c = {mip_noise_constant(0.1):.0f} (eta=0.1), "
          f"{mip_noise_constant(0.2):.0f} (eta=0.2), in sigma units, Laplace/Gamma radius.\n")
    print("| C | eta | shape | s | test accuracy (mean +- se) |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(3)
    for C in Cs:
        w, L = _shapes(C, X, y)
        base = _model(C).fit(X, y).score(X_te, y_te)
        deltas = {
            shape: estimate_swap_deltas(_model(C), X, y, scale=scale, n_rounds=rounds, random_state=4).distances
            for shape, scale in (("diagonal", w), ("full", L))
        }
        for eta in etas:
            for shape, noise in (("diagonal", lambda z: w * z), ("full", lambda z: L @ z)):
                s = coupling_noise_scale(deltas[shape], eta).noise_scale
                acc = []
                for _ in range(repeats):
                    rows = np.sort(rng.permutation(n)[:k])
                    m = _model(C).fit(X[rows], y[rows])
                    z = s * noise(rng.normal(size=w.size))
                    m.coef_ = m.coef_ + z[:-1]
                    m.intercept_ = m.intercept_ + z[-1:]
                    acc.append(m.score(X_te, y_te))
                print(f"| {C} | {eta} | {shape} | {s:.2f} | {np.mean(acc):.3f} +- {np.std(acc) / np.sqrt(repeats):.3f} |")
        print(f"| {C} | - | non-private, all {n} rows | - | {base:.3f} |")


def bench_audit(etas=ETAS, n_problems=None):
    import itertools

    from sklearn.base import BaseEstimator

    from skmip.audit.attacks.bayes import exact_mip_advantage
    from skmip.bounds import coupling_eta_per_target
    from skmip.release.statistic import Statistic

    class TinyLogit(BaseEstimator):
        """L2 logistic regression by Newton's method (defined on one-class subsets too)."""

        def __init__(self, C=1.0):
            self.C = C

        def fit(self, X, y):
            Xa = np.c_[X, np.ones(len(X))]
            pen = np.r_[np.ones(X.shape[1]), 1e-2]  # tiny intercept prior for one-class halves
            theta = np.zeros(Xa.shape[1])
            for _ in range(100):
                p = 1 / (1 + np.exp(-Xa @ theta))
                step = np.linalg.solve(
                    self.C * (Xa.T * (p * (1 - p))) @ Xa + np.diag(pen), self.C * Xa.T @ (p - y) + pen * theta
                )
                theta -= step
                if np.abs(step).max() < 1e-12:
                    break
            self.coef_, self.intercept_ = theta[None, :-1], theta[-1:]
            return self

    rng = np.random.default_rng(0)
    X1 = np.zeros((12, 1))
    X1[0] = 1.0
    Xl = rng.normal(size=(12, 2))
    yl = (Xl[:, 0] + 0.5 * rng.normal(size=12) > 0).astype(float)
    problems = [
        ("mean, one outlier, d=1, n=12", Statistic("mean"), (X1,), {}),
        ("mean, Gaussian rows, d=5, n=12", Statistic("mean"), (rng.normal(size=(12, 5)),), {}),
        ("mean, Gaussian rows, d=100, n=10", Statistic("mean"), (rng.normal(size=(10, 100)),), {}),
        ("logistic regression, d=2+1, n=12", TinyLogit(), (Xl, yl), {"params": ["coef_", "intercept_"]}),
    ]
    print("\n## 4. Exact audits of the coupling calibration\n")
    print("| problem | eta | s | max coupling bound | max exact advantage (+- se) | advantage / bound at the argmax |")
    print("|---|---|---|---|---|---|")
    for name, est, data, kw in problems[:n_problems]:
        n = len(data[0])

        def algorithm(*parts, est=est):
            m = est.fit(*parts) if len(parts) > 1 else est.fit(parts[0])
            return np.r_[np.ravel(m.coef_), np.ravel(m.intercept_)] if hasattr(m, "coef_") else m.statistic_

        outs = np.array([algorithm(*[p[list(h)] for p in data]) for h in itertools.combinations(range(n), n // 2)])
        sd = outs.std(axis=0)
        res = estimate_swap_deltas(est, *data, scale=sd, engine="exact", **kw)
        for eta in etas:
            s = coupling_noise_scale(res.distances, eta, confidence=None).noise_scale
            noise_sd = s * sd
            audit = exact_mip_advantage(
                algorithm, data if len(data) > 1 else data[0],
                noise_sampler=lambda m, g, sdv=noise_sd: g.normal(size=(m, sdv.size)) * sdv,
                noise_logpdf=lambda x, sdv=noise_sd: -0.5 * ((x / sdv) ** 2).sum(axis=1),
                n_mc=4000, random_state=5,
            )
            bound = coupling_eta_per_target(res.distances, s)
            i = int(np.argmax(audit.advantage))
            j = int(np.argmax(bound))
            print(
                f"| {name} | {eta} | {s:.3f} | {bound.max():.4f} | {audit.advantage[i]:.4f} +- "
                f"{audit.std_error[i]:.4f} | {audit.advantage[j] / bound[j]:.3f} |"
            )


def main(argv=None):
    parser = H.parser(__doc__, repeats=200)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--check-rounds", type=int, default=20)
    parser.add_argument("--only", choices=["approx", "confidence", "shape", "audit"], default=None)
    parser.add_argument("--dataset", choices=["breast_cancer", "digits"], default="breast_cancer",
                        help="data of section 1 (digits: multinomial, 10 classes)")
    parser.add_argument("--Cs", nargs="+", type=float, default=[0.1, 1.0], help="C values of section 1")
    # --smoke: every section at C = 0.1 and eta = 0.3: one round of exact refits, 100 rounds,
    # 2 noise draws, the first exact audit.
    args = H.parse(parser, argv, smoke=dict(check_rounds=1, Cs=[0.1], rounds=100, repeats=2))
    small = dict(Cs=args.Cs, etas=[0.3]) if args.smoke else {}
    if args.only in (None, "approx"):
        bench_approximation(args.check_rounds, args.dataset, args.Cs)
    if args.only in (None, "confidence"):
        bench_confidence(args.rounds, **small)
    if args.only in (None, "shape"):
        bench_shape(args.rounds, args.repeats, **small)
    if args.only in (None, "audit"):
        bench_audit(**(dict(etas=[0.3], n_problems=1) if args.smoke else {}))


if __name__ == "__main__":
    main()
