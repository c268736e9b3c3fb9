"""Which route ``method="auto"`` should take (issue 32, item 3): coupling against noisy gradients.

Run (the default cases; coupling on adult 8,000 is left out by default, see ``--cases``)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_auto.py

For each case, data set and estimator, ``--seeds`` stratified 70/30 splits: D is the 70% part,
``MIPNoiseWrapper(pipeline, eta, method=route)`` with every default of the route (the pipeline's
transformers fitted on D by the wrapper), the test accuracy of the release, the CPU seconds of the
fit (``time.process_time``, one thread) and whether a promise is stated (``mip_bound_``). Cases:

- ``breast_cancer``: ``StandardScaler + LogisticRegression(C=0.1)``, 569 rows x 30.
- ``german``: the bundled 61-column German credit, the same pipeline, 1,000 rows;
  ``german_pcaR`` puts ``PCA(R)`` between the scaler and the model (fitted on D's features by the
  wrapper, as every transformer): the noisy gradients then live in the top ``R`` principal
  directions of D (docs/pipelines.md, "German credit: what else was tried").
- ``adult_2000``, ``adult_8000``: random subsamples of the bundled adult table, raw columns
  through ``OneHotEncoder`` (strings) and ``StandardScaler`` (numbers), ``LogisticRegression(C=0.1)``.
- ``wine``, ``iris``: small multiclass (3 classes), ``StandardScaler + LogisticRegression(C=0.1)``.
- ``digits``: 10 classes, 1,797 rows x 64, the same pipeline.
- ``diabetes``: 442 rows x 10, ``StandardScaler + Ridge(alpha=1.0)``, the raw target; R^2.

A route is written ``route:eta`` in ``--cases`` entries (``breast_cancer:coupling:0.1``);
``noisy_gradient_zero`` is the noisy-gradient route started from zero
(``NoisyGradientRoute(start="zero")``, the default before the start at D's label prior);
``noisy_gradient_all_columns`` trains in all the columns (``NoisyGradientRoute(subspace=None)``,
the default before the descent in D's top principal directions). The
D_train draw and the noise use ``random_state=seed`` (reproducible; a release uses ``None``).
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
import pandas as pd
from _harness import markdown_table
from sklearn.compose import make_column_transformer
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skmip import MIPNoiseWrapper
from skmip.calibration.routes import NoisyGradientRoute
from skmip.datasets import load_dataset

DEFAULT_CASES = [
    f"{data}:{route}:{eta}"
    for data in ("breast_cancer", "german", "wine", "iris", "adult_2000")
    for route in ("coupling", "noisy_gradient")
    for eta in (0.1,)
] + ["adult_8000:noisy_gradient:0.1", "digits:noisy_gradient:0.1"]


def design(name, seed):
    """``(pipeline, X_D, y_D, X_test, y_test)``: a stratified 70/30 split of ``name``."""
    sklearn_sets = {"breast_cancer": load_breast_cancer, "wine": load_wine, "iris": load_iris, "digits": load_digits}
    if name == "diabetes":
        X, y = load_diabetes(return_X_y=True)
        X_d, X_te, y_d, y_te = train_test_split(X, y, test_size=0.3, random_state=seed)
        return make_pipeline(StandardScaler(), Ridge(alpha=1.0)), X_d, y_d, X_te, y_te
    if name in sklearn_sets or name.startswith("german"):
        X, y = sklearn_sets[name](return_X_y=True) if not name.startswith("german") else _german()
        pca = [PCA(int(name[len("german_pca"):]))] if name.startswith("german_pca") else []
        pipe = make_pipeline(StandardScaler(), *pca, LogisticRegression(C=0.1))
    else:
        n = int(name.split("_")[1])
        X, y = H.load_frame("adult", n_samples=n, seed=seed)
        strings = [c for c in X.columns if not pd.api.types.is_numeric_dtype(X[c])]
        numbers = [c for c in X.columns if c not in strings]
        pipe = make_pipeline(
            make_column_transformer((OneHotEncoder(handle_unknown="ignore"), strings), (StandardScaler(), numbers)),
            LogisticRegression(C=0.1),
        )
    X_d, X_te, y_d, y_te = train_test_split(X, y, test_size=0.3, random_state=seed, stratify=y)
    return pipe, X_d, y_d, X_te, y_te


def _german():
    d = load_dataset("german_credit")
    return d.data, d.target


def run(case, seed, draw=0):
    """One fit on split ``seed``: accuracy, CPU seconds, mip_bound_. The wrapper's
    ``random_state`` (the D_train draw and the noise) is ``seed`` for draw 0, else
    ``1000 * draw + seed``."""
    name, route, eta = case.split(":")
    pipe, X_d, y_d, X_te, y_te = design(name, seed)
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning and the route's notes
        method = {"noisy_gradient_zero": NoisyGradientRoute(start="zero"),
                  "noisy_gradient_all_columns": NoisyGradientRoute(subspace=None)}.get(route, route)
        w = MIPNoiseWrapper(pipe, eta=float(eta), method=method, random_state=seed + 1000 * draw).fit(X_d, y_d)
    seconds = time.process_time() - start
    return w.score(X_te, y_te), seconds, w.mip_bound_


def main(argv=None):
    p = H.parser(__doc__, seeds=3)
    p.add_argument("--cases", nargs="+", default=DEFAULT_CASES, help="data:route:eta entries")
    p.add_argument("--draws", type=int, default=1,
                   help="fits per split, each with its own D_train draw and noise (the mean per draw is printed)")
    p.add_argument("--paired", action="store_true",
                   help="also print, for cases 1-2, 3-4, ..., the mean paired difference of the accuracies "
                        "(same split and draw) and its standard error")
    # --smoke: one noisy-gradient fit on breast cancer.
    args = H.parse(p, argv, blas_threads=1, smoke={"seeds": 1, "cases": ["breast_cancer:noisy_gradient:0.2"]})
    rows, accuracies = [], {}
    for case in args.cases:
        results = [[run(case, seed, draw) for seed in range(args.seeds)] for draw in range(args.draws)]
        accuracies[case] = np.array([[r[0] for r in rs] for rs in results])
        if args.draws > 1:
            print(f"{case}: mean over the splits, per draw: "
                  + ", ".join(f"{np.mean([r[0] for r in rs]):.3f}" for rs in results), flush=True)
        accs, secs, bounds = zip(*[r for rs in results for r in rs])
        name, route, eta = case.split(":")
        bound = "none" if any(b is None for b in bounds) else f"{max(bounds):.4f}"
        rows.append([name, route, eta, f"{np.mean(accs):.3f} ({min(accs):.3f}-{max(accs):.3f})",
                     f"{np.mean(secs):.1f}", bound])
        print(" | ".join(rows[-1]), flush=True)
    print(markdown_table(["data", "route", "eta", "test accuracy or R^2 (mean, min-max)", "CPU s / fit", "mip_bound_"],
                         rows))
    for a, b in zip(args.cases[::2], args.cases[1::2]) if args.paired else ():
        diff = (accuracies[a] - accuracies[b]).ravel()
        se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
        print(f"{a} - {b}: mean paired difference {diff.mean():+.4f} +- {se:.4f} over {diff.size} pairs")


if __name__ == "__main__":
    main()
