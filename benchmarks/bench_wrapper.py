"""MIPNoiseWrapper benchmarks: mip_noise_path cost, and utility vs eta for both radius laws.

Run:  python benchmarks/bench_wrapper.py [--n-splits 128] [--repeats 5]

Prints (1) the wall time of ``mip_noise_path`` over 10 etas against one wrapper fit, measured
side by side in this run (target <= 1.3x), and (2) the test accuracy of LogisticRegression on
``load_breast_cancer`` and ``load_digits`` under ``MIPNoiseWrapper`` (Corollary 10 noise) for
both radius laws, against the unwrapped model. Results are recorded in docs/benchmarks.md.
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.linear_model import LogisticRegression

from skmip import MIPNoiseWrapper, mip_noise_path
from skmip.exceptions import PrivacyWarning

ETAS = [0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5]


def _data(name):
    return H.split_scaled(name)  # 70/30, stratified, standardized on the training part (public choice)


def bench_path(n_splits, repeats, n_rounds):
    X, _, y, _ = _data("breast_cancer")
    est = LogisticRegression(C=0.1, max_iter=1000)
    for method in ("moments", "coupling"):
        kw = dict(method=method, n_subsets=n_splits, n_rounds=n_rounds)
        one, path = [], []
        for r in range(repeats):
            t = time.perf_counter()
            MIPNoiseWrapper(est, eta=0.3, random_state=r, **kw).fit(X, y)
            one.append(time.perf_counter() - t)
            t = time.perf_counter()
            mip_noise_path(est, X, y, etas=[e for e in ETAS if e >= 0.2] if method == "coupling" else ETAS,
                           random_state=r, **kw)
            path.append(time.perf_counter() - t)
        a, b = np.median(one), np.median(path)
        n_etas = len(ETAS) if method == "moments" else len([e for e in ETAS if e >= 0.2])
        print(f"mip_noise_path over {n_etas} etas vs one fit, method={method!r} "
              f"(n_subsets={n_splits}, n_rounds={n_rounds}, median of {repeats}):")
        print(f"  one fit {a:.3f} s, path {b:.3f} s, ratio {b / a:.2f}x (target <= 1.3x)")


def bench_utility(n_splits, repeats, datasets=("breast_cancer", "digits")):
    print("\nTest accuracy of LogisticRegression(C=0.1) vs eta under Corollary 10 (method='moments'),"
          " mean over repeats (the coupling calibration: benchmarks/bench_coupling_utility.py):")
    print(f"{'dataset':<14}{'eta':>6}{'non-private':>13}{'gamma':>9}{'laplace':>9}")
    for name in datasets:
        X_tr, X_te, y_tr, y_te = _data(name)
        est = LogisticRegression(C=0.1, max_iter=1000)
        base = est.fit(X_tr, y_tr).score(X_te, y_te)
        acc = {}
        for radius in ("gamma", "laplace"):
            scores = np.zeros((repeats, len(ETAS)))
            for r in range(repeats):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyWarning)
                    path = mip_noise_path(est, X_tr, y_tr, etas=ETAS, n_subsets=n_splits,
                                          method="moments", radius=radius, random_state=1000 + r)
                scores[r] = [w.score(X_te, y_te) for w in path]
            acc[radius] = scores.mean(0)
        for j, eta in enumerate(ETAS):
            print(f"{name:<14}{eta:>6.2f}{base:>13.3f}{acc['gamma'][j]:>9.3f}{acc['laplace'][j]:>9.3f}")


def main(argv=None):
    parser = H.parser(__doc__, repeats=5)
    parser.add_argument("--n-splits", type=int, default=128)
    parser.add_argument("--n-rounds", type=int, default=200,
                        help="coupling rounds (the calibration's own cost is in docs/coupling.md)")
    # --smoke: 8 subsets, 40 rounds, one repeat, breast cancer only.
    args = H.parse(parser, argv, smoke=dict(n_splits=8, repeats=1, n_rounds=40))
    warnings.simplefilter("ignore", PrivacyWarning)
    bench_path(args.n_splits, args.repeats, args.n_rounds)
    bench_utility(args.n_splits, args.repeats, ("breast_cancer",) if args.smoke else ("breast_cancer", "digits"))


if __name__ == "__main__":
    main()
