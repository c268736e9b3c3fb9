"""Certified coupling calibration of ``LogisticRegression`` where the third stage's exact solves
matter (issue 33, session 13): CPU time, noise scale and the printed bound.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=<tree> python benchmarks/bench_exact_stack.py
      [--cases german:0.1 german:0.3 breast_cancer:0.1] [--smoke]

Cases ``name:eta``, each ``MIPNoiseWrapper(LogisticRegression(C=0.1), eta, random_state=0,
method="coupling")``, every other default:

* ``german``: ``skmip.datasets.load_dataset("german_credit")``, all rows, X standardized
  (``StandardScaler``);
* ``breast_cancer``: ``train_test_split(StandardScaler().fit_transform(X), y, random_state=0)``
  (fit on the 75% split).

Each prints the wrapper fit's CPU time (``time.process_time``), the part of it in the third
stage's exact solves (``PairCertifier._exact``), ``noise_scale_`` (its first three) and
``coupling_eta_upper_``. Run it once per tree (``PYTHONPATH``) to compare two
commits side by side. ``--smoke``: breast cancer only. Results: docs/benchmarks.md.
"""

from __future__ import annotations

import contextlib
import time

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skmip import MIPNoiseWrapper
from skmip.calibration.swap.pair_certifier import PairCertifier
from skmip.datasets import load_dataset


def _data(name):
    if name == "german":
        d = load_dataset("german_credit")
        return StandardScaler().fit_transform(d.data), d.target
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, _, ytr, _ = train_test_split(StandardScaler().fit_transform(X), y, random_state=0)
    return Xtr, ytr


@contextlib.contextmanager
def _stage3_timer():
    """Add up the CPU time of the certifiers' third stage (``PairCertifier._exact``: one pair a
    call before issue 33's session 13, a stack after; the same name in both trees)."""
    spent, inner = [0.0], PairCertifier._exact

    def timed(self, *args):
        start = time.process_time()
        try:
            return inner(self, *args)
        finally:
            spent[0] += time.process_time() - start

    PairCertifier._exact = timed
    try:
        yield spent
    finally:
        PairCertifier._exact = inner


def run(case):
    name, eta = case.split(":")
    X, y = _data(name)
    wrapper = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=float(eta), random_state=0, method="coupling")
    with _stage3_timer() as spent:
        cpu = H.cpu_fit(wrapper, X, y)
    print(f"{case}: {cpu:.2f} s CPU (exact solves {spent[0]:.2f} s), "
          f"noise_scale_={np.ravel(wrapper.noise_scale_)[:3]!r}, coupling_eta_upper_={wrapper.coupling_eta_upper_!r}",
          flush=True)


def main(argv=None):
    parser = H.parser(__doc__)
    parser.add_argument("--cases", nargs="+", default=["german:0.1", "german:0.3", "breast_cancer:0.1"])
    args = H.parse(parser, argv, smoke=dict(cases=["breast_cancer:0.1"]))
    for case in args.cases:
        run(case)


if __name__ == "__main__":
    main()
