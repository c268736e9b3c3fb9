"""Learners the coupling calibration covers by a registered smooth loss, checked against refits.

Run:  python benchmarks/bench_learners.py --only glm [--check-rounds 5]
      python benchmarks/bench_learners.py --only svm [--check-rounds 5]
      python benchmarks/bench_learners.py --only multinomial [--check-rounds 2]
      python benchmarks/bench_learners.py --only digits-engines [--rounds 250]
      python benchmarks/bench_learners.py --only digits-target [--rounds 1000] [--repeats 5]

1. **glm**: ``PoissonRegressor``, ``GammaRegressor``, ``TweedieRegressor(power=1.5)`` (log
   link) and ``TweedieRegressor(power=0)`` (identity link, least squares) on
   ``load_diabetes`` (442 rows, features standardized, the positive disease-progression
   target), ``alpha=0.01``, ``solver="newton-cholesky", tol=1e-10``, k = n // 2: the
   ``"newton"`` and ``"influence"`` engines against exact refits on the same (x*, e) pairs,
   as ``bench_influence.py`` section 1 does (quantiles of |d / d_refit - 1|, noise scale
   from each engine's distances over the refits' one, point estimates).
2. **svm**: ``LinearSVC(loss="squared_hinge", dual=False, tol=1e-12)`` at C = 0.01 and 0.1 on
   the standardized breast-cancer training split (398 rows, binary) and on iris (150 rows,
   3 classes, one against the rest), the same comparison; relative errors over the pairs
   whose refit moves the fit (a swap of two rows outside the margin moves nothing).
3. **multinomial**: the same on digits ([0, 1]-scaled 70% split, 1,257 rows, 650
   parameters, ``LogisticRegression(C=0.1, solver="lbfgs", tol=1e-8)``): the K-margin
   ``"newton"`` engine (``skmip/calibration/swap/multinomial.py``) and the first-order one.
4. **digits-engines**: the calibrated noise scale of the two engines on digits, same noise
   shape (full factor over 128 subsets), same seed, ``--rounds`` rounds, 95% confidence, at
   eta = 0.1 and 0.2, with the time per round.
5. **digits-target**: ``mip_noise_path`` (``MIPNoiseWrapper``'s own path; ``method="auto"``
   picks the coupling calibration and the ``"newton"`` engine) at eta = 0.2 and 0.1,
   ``noise_shape="full"``, ``--rounds`` rounds: test accuracy over ``--repeats`` noise
   draws (one calibration), the calibrated and point scales.

Results are recorded in docs/coupling.md ("Learners calibrated by coupling").
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import _harness as H  # the script's folder is on sys.path
from bench_influence import _data, _model, _quantiles
from sklearn.datasets import load_diabetes, load_iris
from sklearn.linear_model import GammaRegressor, LogisticRegression, PoissonRegressor, TweedieRegressor
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skmip import mip_noise_path
from skmip.bounds import coupling_noise_scale
from skmip.calibration.spread.noise_factor import estimate_noise_factor
from skmip.calibration.swap import estimate_swap_deltas


def _against_refits(label, make, X, y, check_rounds, engines=("refit", "newton", "influence")):
    L = estimate_noise_factor(make(), X, y, n_subsets=128, random_state=0)
    w = np.sqrt(np.einsum("ij,ij->i", L, L))
    kw = dict(scale=w, n_rounds=check_rounds, pairs_per_target=1, random_state=1)
    runs, times = {}, {}
    for engine in engines:
        t0 = time.perf_counter()
        runs[engine] = estimate_swap_deltas(make(), X, y, engine=engine, **kw).distances
        times[engine] = (time.perf_counter() - t0) / check_rounds
    ref = runs["refit"].ravel()
    # Pairs whose swap does not move the fit (a squared-hinge SVC's rows outside the margin)
    # have refit distances at solver precision: relative errors there mean nothing.
    moved = ref > 1e-6 * ref.max()
    big = ref > np.quantile(ref, 0.9)
    s_ref = {eta: coupling_noise_scale(runs["refit"], eta, confidence=None).noise_scale for eta in (0.1, 0.2)}
    for engine in engines:
        err = np.abs(runs[engine].ravel() / ref - 1)
        ratios = [coupling_noise_scale(runs[engine], eta, confidence=None).noise_scale / s_ref[eta] for eta in (0.1, 0.2)]
        print(f"| {label} | {engine} | {times[engine]:.3f} | {_quantiles(err[moved])} | {err[big].max():.4f} | "
              f"{ratios[0]:.4f} | {ratios[1]:.4f} |", flush=True)
    if not moved.all():
        print(f"| {label} | ({np.mean(~moved):.1%} of pairs do not move the fit; errors over the others) |")


_HEADER = (
    "| model | engine | s/round | median | p90 | p99 | max | max, top-10% distances | s_point(0.1) / refit | s_point(0.2) / refit |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def bench_glm(check_rounds):
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    print(f"\n## 1. Tweedie-family GLMs against exact refits (load_diabetes, n = {len(X)}, "
          f"k = {len(X) // 2}, {check_rounds} rounds x 1 pair per target)\n")
    print(_HEADER)
    kw = dict(alpha=0.01, solver="newton-cholesky", tol=1e-10)
    for label, make in [
        ("PoissonRegressor", lambda: PoissonRegressor(**kw)),
        ("GammaRegressor", lambda: GammaRegressor(**kw)),
        ("TweedieRegressor(power=1.5)", lambda: TweedieRegressor(power=1.5, **kw)),
        ("TweedieRegressor(power=0)", lambda: TweedieRegressor(power=0.0, **kw)),
    ]:
        _against_refits(label, make, X, y, check_rounds)


def bench_svm(check_rounds):
    X, _, y, _ = _data("breast_cancer")
    Xi, yi = load_iris(return_X_y=True)
    Xi = StandardScaler().fit_transform(Xi)
    print(f"\n## 2. LinearSVC(loss='squared_hinge') against exact refits ({check_rounds} rounds x 1 pair "
          "per target; breast cancer: 398 rows standardized, binary; iris: 150 rows, 3 classes one "
          "against the rest)\n")
    print(_HEADER)
    for C in (0.01, 0.1):
        make = lambda C=C: LinearSVC(C=C, dual=False, tol=1e-12, max_iter=10000)  # noqa: E731
        _against_refits(f"LinearSVC(C={C}), breast cancer", make, X, y, check_rounds)
        _against_refits(f"LinearSVC(C={C}), iris", make, Xi, yi, check_rounds)


def bench_multinomial(check_rounds):
    X, _, y, _ = _data("digits")
    print(f"\n## 3. Multinomial LogisticRegression against exact refits (digits, n = {len(X)}, "
          f"k = {len(X) // 2}, {check_rounds} rounds x 1 pair per target)\n")
    print(_HEADER)
    _against_refits("LogisticRegression(C=0.1), 10 classes", lambda: _model(0.1, "digits"), X, y, check_rounds)


def bench_digits_engines(rounds):
    X, _, y, _ = _data("digits")
    L = estimate_noise_factor(_model(0.1, "digits"), X, y, n_subsets=128, random_state=0)
    print(f"\n## 4. Digits: calibrated noise scale by engine (full shape, {rounds} rounds, 95%)\n")
    print("| engine | pairs | s/round | s(0.2) (point) | s(0.1) (point) |")
    print("|---|---|---|---|---|")
    s = {}
    for engine in ("newton", "influence"):
        t0 = time.perf_counter()
        res = estimate_swap_deltas(_model(0.1, "digits"), X, y, scale=L, n_rounds=rounds, engine=engine,
                                   polish=True, random_state=2)
        per_round = (time.perf_counter() - t0) / rounds
        cal = {eta: coupling_noise_scale(res.distances, eta, train_fraction=res.train_fraction) for eta in (0.2, 0.1)}
        s[engine] = cal
        print(f"| {engine} | {res.pairs} ({res.distances.shape[2]}) | {per_round:.2f} | "
              f"{cal[0.2].noise_scale:.2f} ({cal[0.2].noise_scale_point:.2f}) | "
              f"{cal[0.1].noise_scale:.2f} ({cal[0.1].noise_scale_point:.2f}) |", flush=True)
    for eta in (0.2, 0.1):
        print(f"\neta = {eta}: s_newton / s_influence = "
              f"{s['newton'][eta].noise_scale / s['influence'][eta].noise_scale:.3f} (calibrated), "
              f"{s['newton'][eta].noise_scale_point / s['influence'][eta].noise_scale_point:.3f} (point)")


def bench_digits_target(rounds, repeats):
    X, X_te, y, y_te = _data("digits")
    est = _model(0.1, "digits")
    half = []
    rng = np.random.default_rng(12345)
    for _ in range(repeats):
        r = rng.choice(len(X), size=len(X) // 2, replace=False)
        half.append(LogisticRegression(**est.get_params()).fit(X[r], y[r]).score(X_te, y_te))
    etas = [0.2] * repeats + [0.1] * repeats
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning: a benchmark, not a release
        path = mip_noise_path(est, X, y, etas=etas, noise_shape="full", n_rounds=rounds, n_subsets=128,
                              train_size=0.5, random_state=int(rng.integers(2**31)))
    elapsed = time.perf_counter() - t0
    print(f"\n## 5. Digits target: MIPNoiseWrapper path, C = 0.1, full shape, {rounds} rounds, "
          f"{repeats} noise draws per eta ({elapsed:.0f} s)\n")
    print(f"non-private on a random half: {np.mean(half):.3f}\n")
    print("| eta | method | engine | s (point) | eta_upper | test accuracy (mean +- se) |")
    print("|---|---|---|---|---|---|")
    for eta in (0.2, 0.1):
        models = [m for m, e in zip(path, etas) if e == eta]
        acc = np.array([m.score(X_te, y_te) for m in models])
        m = models[0]
        print(f"| {eta} | {m.method_} | {m.sensitivity_engine_} | {m.noise_scale_:.2f} ({m.noise_scale_point_:.2f}) | "
              f"{m.coupling_eta_upper_:.4f} | {acc.mean():.3f} +- {acc.std(ddof=1) / np.sqrt(acc.size):.3f} |")


def main(argv=None):
    parser = H.parser(__doc__, repeats=5)
    parser.add_argument("--only", choices=["glm", "svm", "multinomial", "digits-engines", "digits-target"], default=None)
    parser.add_argument("--check-rounds", type=int, default=None, help="refit rounds (glm: 5, multinomial: 2)")
    parser.add_argument("--rounds", type=int, default=1000)
    # --smoke: the LinearSVC engines against one round of exact refits.
    args = H.parse(parser, argv, smoke=dict(only="svm", check_rounds=1))
    if args.only in (None, "glm"):
        bench_glm(args.check_rounds or 5)
    if args.only in (None, "svm"):
        bench_svm(args.check_rounds or 5)
    if args.only in (None, "multinomial"):
        bench_multinomial(args.check_rounds or 2)
    if args.only in (None, "digits-engines"):
        bench_digits_engines(args.rounds)
    if args.only in (None, "digits-target"):
        bench_digits_target(args.rounds, args.repeats)


if __name__ == "__main__":
    main()
