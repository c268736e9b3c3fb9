"""Pipelines as users run them, through MIPNoiseWrapper (issue 22, point 1): raw data in.

Run (about 6 minutes on one shared core)::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_pipelines.py --seeds 3

(``--only breast_cancer`` or ``--only german_credit`` runs one part.)

1. **breast cancer, raw** (``load_breast_cancer``, no scaling outside the pipeline; 70/30
   split stratified by seed): ``make_pipeline(StandardScaler(), LogisticRegression(C=0.1))``
   without noise; through ``MIPNoiseWrapper(..., eta=0.1)`` with ``method="auto"`` (the
   pipeline route: the scaler fitted on all of D, the last step calibrated by coupling on
   the scaled rows, certified); and with ``method="moments"`` (Corollary 10 noise on every
   step, scaler included: what ``"auto"`` fell back to on 30cd6d2).
2. **German credit, raw DataFrame** (the UCI file's 13 string columns of codes such as
   ``"A11"`` and 7 numeric ones, read as they are): ``ColumnTransformer(OneHotEncoder,
   StandardScaler)`` + ``LogisticRegression(C=0.1)`` without noise and through the wrapper at
   eta = 0.1 and 0.3.

Every wrapper gets ``random_state=seed`` (reproducible; a release would use ``None``). The
table gives test accuracy (mean, min-max over seeds), the calibration (``method_``, certified
or not) and seconds per fit. Results are in ``docs/pipelines.md``.
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
import pandas as pd
from _harness import markdown_table
from sklearn.compose import make_column_transformer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skmip import MIPNoiseWrapper


def german_frame():
    """The German credit file as a DataFrame of its raw columns (codes kept as strings),
    decoded from the bundled one-hot copy (``load_dataset``) by the harness."""
    return H.load_frame("german_credit")


def _calibration(model):
    method = getattr(model, "method_", None)
    if method == "coupling":
        return "coupling, " + ("certified" if model.coupling_certified_ else "estimated")
    return method or "none (not private)"


def run(name, make, X, y, seeds, stratify=True):
    accs, times, cal = [], [], None
    for seed in seeds:
        X_d, X_te, y_d, y_te = train_test_split(X, y, test_size=0.3, random_state=seed,
                                                stratify=y if stratify else None)
        model = make(seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_d, y_d)
        times.append(time.perf_counter() - start)
        accs.append(model.score(X_te, y_te))
        cal = _calibration(model)
        print(f"  {name} seed {seed}: {accs[-1]:.3f} ({cal}, {times[-1]:.1f} s)", flush=True)
    accs = np.asarray(accs)
    return [name, f"{accs.mean():.3f} ({accs.min():.3f}-{accs.max():.3f})", cal, f"{np.mean(times):.1f}"]


def main(argv=None):
    p = H.parser(__doc__, seeds=3)
    p.add_argument("--only", choices=("breast_cancer", "german_credit"), default=None)
    # --smoke: one seed on breast cancer (the wrapper's coupling and moments routes).
    args = H.parse(p, argv, smoke=dict(seeds=1, only="breast_cancer"))
    seeds = range(args.seeds)
    rows = []
    if args.only != "german_credit":
        rows += breast_cancer(seeds)
    if args.only != "breast_cancer":
        rows += german_credit(seeds)
    print()
    print(markdown_table(["model", "test accuracy (mean, min-max)", "calibration", "seconds per fit"], rows))


def breast_cancer(seeds):
    rows = []

    X, y = load_breast_cancer(return_X_y=True)

    def scaled_lr():
        return make_pipeline(StandardScaler(), LogisticRegression(C=0.1))

    rows.append(run("breast cancer: pipeline, no noise", lambda s: scaled_lr(), X, y, seeds))
    rows.append(run("breast cancer: MIPNoiseWrapper(pipeline, eta=0.1)",
                    lambda s: MIPNoiseWrapper(scaled_lr(), eta=0.1, random_state=s), X, y, seeds))
    rows.append(run("breast cancer: same, method='moments'",
                    lambda s: MIPNoiseWrapper(scaled_lr(), eta=0.1, method="moments", random_state=s),
                    X, y, seeds))
    return rows


def german_credit(seeds):
    rows = []
    df, target = german_frame()
    categorical = [c for c in df.columns if not pd.api.types.is_numeric_dtype(df[c])]
    numeric = [c for c in df.columns if c not in categorical]

    def tabular_lr():
        return make_pipeline(
            make_column_transformer((OneHotEncoder(), categorical), (StandardScaler(), numeric)),
            LogisticRegression(C=0.1),
        )

    rows.append(run("German credit DataFrame: pipeline, no noise", lambda s: tabular_lr(), df, target, seeds))
    for eta in (0.3, 0.1):
        rows.append(run(f"German credit DataFrame: MIPNoiseWrapper(pipeline, eta={eta})",
                        lambda s, eta=eta: MIPNoiseWrapper(tabular_lr(), eta=eta, random_state=s),
                        df, target, seeds))
    return rows


if __name__ == "__main__":
    main()
