"""Certified coupling calibration of multiclass LogisticRegression and LinearSVC, next to the noisy-gradient route.

Run:  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_multiclass.py
      [--datasets iris digits] [--learners logistic svc] [--eta 0.2] [--rounds iris=400 digits=100]
      [--seed 0] [--n-jobs 1]

For each dataset (``load_iris``, ``load_digits``) the rows are split 75/25 (stratified, seed 0);
the learner is ``make_pipeline(StandardScaler(), L)`` with ``L`` = ``LogisticRegression(C=0.1)``
(``logistic``: multinomial) or ``LinearSVC(C=0.1)`` (``svc``: one against the rest). One run
prints, in CPU seconds (``time.process_time``, BLAS one thread) and test accuracy:

* the plain pipeline fitted on the training split,
* ``MIPNoiseWrapper(method=CouplingRoute(n_rounds=R))`` at ``--eta``: its ``mip_bound_`` and
  ``coupling_certified_`` (the distances certified, docs/coupling.md, "Certified distances",
  *Several margins per row* and *The squared hinge*),
* ``MIPNoiseWrapper(method="noisy_gradient")`` at the same eta (the equal promise).

Results are recorded in docs/coupling.md.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from skmip import MIPNoiseWrapper
from skmip.calibration.routes import CouplingRoute

LOADERS = {"iris": load_iris, "digits": load_digits}
LEARNERS = {"logistic": lambda: LogisticRegression(C=0.1), "svc": lambda: LinearSVC(C=0.1)}


def _timed(model, X, y):
    t = time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    return model, time.process_time() - t, [str(w.message)[:80] for w in caught]


def run(name, eta, rounds, seed, n_jobs=1, learner_name="logistic"):
    X, y = LOADERS[name](return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    learner = make_pipeline(StandardScaler(), LEARNERS[learner_name]())
    plain, t_plain, _ = _timed(learner, Xtr, ytr)
    print(f"{name}, {type(learner[-1]).__name__}: n={len(Xtr)}, plain accuracy {plain.score(Xte, yte):.3f}, {t_plain:.3f} s CPU", flush=True)
    coupling, t_c, warned = _timed(MIPNoiseWrapper(learner, eta=eta, method=CouplingRoute(n_rounds=rounds),
                                                   random_state=seed, n_jobs=n_jobs), Xtr, ytr)
    print(f"  coupling ({rounds} rounds): accuracy {coupling.score(Xte, yte):.3f}, {t_c:.1f} s CPU "
          f"({t_c / t_plain:.0f}x), mip_bound_={coupling.mip_bound_}, "
          f"coupling_certified_={coupling.coupling_certified_}, "
          f"coupling_eta_upper_={coupling.coupling_eta_upper_:.4f}", flush=True)
    noisy, t_n, _ = _timed(MIPNoiseWrapper(learner, eta=eta, method="noisy_gradient", random_state=seed), Xtr, ytr)
    print(f"  noisy_gradient: accuracy {noisy.score(Xte, yte):.3f}, {t_n:.1f} s CPU, "
          f"mip_bound_={noisy.mip_bound_}", flush=True)
    if warned:
        print("  warnings (coupling):", "; ".join(sorted(set(warned))), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(LOADERS), choices=list(LOADERS))
    parser.add_argument("--learners", nargs="+", default=["logistic"], choices=list(LEARNERS))
    parser.add_argument("--eta", type=float, default=0.2)
    parser.add_argument("--rounds", nargs="+", default=["iris=400", "digits=100"],
                        help="n_rounds per dataset, as name=R")
    parser.add_argument("--seed", type=int, default=0, help="noise seed (a fixed seed voids the guarantee: "
                        "use it to reproduce figures only)")
    parser.add_argument("--n-jobs", type=int, default=1, help="the wrapper's n_jobs (CPU time sums the threads)")
    args = parser.parse_args(argv)
    rounds = {k: int(v) for k, v in (r.split("=") for r in args.rounds)}
    np.random.seed(args.seed)
    for name in args.datasets:
        for learner in args.learners:
            run(name, args.eta, rounds.get(name, 400), args.seed, args.n_jobs, learner)


if __name__ == "__main__":
    main()
