"""Certified coupling calibration of ``LinearSVC`` (the squared hinge): CPU time, noise and accuracy.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_linear_svc.py
      [--cases breast_cancer iris] [--eta 0.2] [--iris-rounds 400] [--smoke]

Two cases, each ``MIPNoiseWrapper(LinearSVC(C=0.1), eta, method="coupling", random_state=0)``:

* ``breast_cancer``: ``train_test_split(StandardScaler().fit_transform(X), y, random_state=0)``
  (75/25), the default rounds;
* ``iris``: as ``benchmarks/bench_multiclass.py --datasets iris --learners svc`` (stratified 75/25
  split, ``make_pipeline(StandardScaler(), LinearSVC(C=0.1))``, one against the rest),
  ``CouplingRoute(n_rounds=--iris-rounds)``.

Each prints the wrapper fit's CPU time (``time.process_time``), ``noise_scale_``,
``coupling_eta_upper_``, ``coupling_certified_`` and the test accuracy. Run it once per tree
(``PYTHONPATH``) to compare two commits side by side. ``--smoke``: iris at 60 rounds only.
Results: docs/benchmarks.md.
"""

from __future__ import annotations

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skmip import MIPNoiseWrapper
from skmip.calibration.routes import CouplingRoute


def _case(name, iris_rounds):
    if name == "breast_cancer":
        X, y = load_breast_cancer(return_X_y=True)
        split = train_test_split(StandardScaler().fit_transform(X), y, random_state=0)
        return split, LinearSVC(C=0.1), "coupling"
    X, y = load_iris(return_X_y=True)
    split = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    return split, make_pipeline(StandardScaler(), LinearSVC(C=0.1)), CouplingRoute(n_rounds=iris_rounds)


def run(name, eta, iris_rounds):
    (Xtr, Xte, ytr, yte), learner, method = _case(name, iris_rounds)
    wrapper = MIPNoiseWrapper(learner, eta=eta, method=method, random_state=0)
    cpu = H.cpu_fit(wrapper, Xtr, ytr)
    print(f"{name}: {cpu:.2f} s CPU, noise_scale_={np.ravel(wrapper.noise_scale_)[:3]!r}, "
          f"coupling_eta_upper_={wrapper.coupling_eta_upper_!r}, certified={wrapper.coupling_certified_}, "
          f"test accuracy {wrapper.score(Xte, yte):.4f}", flush=True)


def main(argv=None):
    parser = H.parser(__doc__)
    parser.add_argument("--cases", nargs="+", default=["breast_cancer", "iris"], choices=["breast_cancer", "iris"])
    parser.add_argument("--eta", type=float, default=0.2)
    parser.add_argument("--iris-rounds", type=int, default=400)
    args = H.parse(parser, argv, smoke=dict(cases=["iris"], iris_rounds=60))
    for name in args.cases:
        run(name, args.eta, args.iris_rounds)


if __name__ == "__main__":
    main()
