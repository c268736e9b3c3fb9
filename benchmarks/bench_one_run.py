"""One-run epsilon lower bounds: coverage and tightness on simulated mechanisms with known epsilon.

Run:  python benchmarks/bench_one_run.py [--reps 200] [--quick]

Each repetition draws m = 1000 canaries, each included with probability 1/2, runs a mechanism
whose privacy is known exactly, and computes :func:`skmip.audit.one_run_epsilon` from its
output with every method at 95% confidence, each with two-sided guesses (the default: "in" for
the highest scores, "out" for the lowest) and with one-sided guesses ("in" only):

- **Gaussian**: canary i's output is ``mu * S_i + N(0, 1)``, exactly mu-GDP in each canary's
  inclusion, so exactly (epsilon, delta)-DP at ``epsilon = gdp_to_dp(mu, delta)``;
- **randomized response**: canary i's output is ``S_i`` kept with probability
  ``e^eps / (1 + e^eps)``, flipped otherwise (ties scored by a uniform tie-break), exactly
  eps-DP (so (eps, delta)-DP; its trade-off curve is not Gaussian).

A second table (``--end-to-end``) audits real estimators in one fit with
:func:`skmip.audit.one_run_audit`: m = 500 canaries, each its own feature (a basis vector) with a
random label, next to 200 rows of 10 informative features; ``DPLogisticRegression`` (objective
perturbation, pure DP), ``SubsampledDPClassifier`` over it (its budget amplified by the rate
1/2 is the stated epsilon) and, with torch, ``DPSGDLogisticRegression`` (10 epochs), at several
epsilon; the bound is reported next to the epsilon the model states.

The first table reports, per mechanism and method, the coverage (share of repetitions whose bound
is at most the true epsilon; the theorems promise >= 95% where their assumptions hold), its
one-sided 95% Clopper-Pearson lower limit, the mean bound, and the CPU seconds per bound.
Results and the command are recorded in docs/auditing.md.
"""

from __future__ import annotations

import time

import numpy as np
import _harness as H

from skmip.audit import one_run_epsilon
from skmip.bounds import clopper_pearson_interval
from skmip.bounds.gdp import gdp_to_dp

DELTA = 1e-5
M = 1000
METHODS = tuple((method, tradeoff, guesses) for method, tradeoff in (("steinke", "dp"), ("fdp", "dp"), ("fdp", "gaussian"))
                for guesses in ("two-sided", "one-sided"))


def _gaussian(rng, mu):
    s = rng.random(M) < 0.5
    return s, mu * s + rng.normal(size=M)


def _randomized_response(rng, eps):
    s = rng.random(M) < 0.5
    keep = rng.random(M) < 1 / (1 + np.exp(-eps))
    # The auditor sees the bit; a uniform tie-break turns it into a score without ties.
    return s, np.where(keep, s, ~s) + 0.5 * rng.random(M)


def run(reps, seed):
    mechanisms = [("gaussian mu=1", _gaussian, 1.0, gdp_to_dp(1.0, DELTA)),
                  ("gaussian mu=2", _gaussian, 2.0, gdp_to_dp(2.0, DELTA)),
                  ("randomized response eps=2", _randomized_response, 2.0, 2.0),
                  ("randomized response eps=4", _randomized_response, 4.0, 4.0)]
    rows = []
    for name, mechanism, param, eps_true in mechanisms:
        rng = np.random.default_rng(seed)
        draws = [mechanism(rng, param) for _ in range(reps)]
        for method, tradeoff, guesses in METHODS:
            start, bounds = time.process_time(), []
            for s, out in draws:
                bounds.append(one_run_epsilon(out[s], out[~s], delta=DELTA, method=method, tradeoff=tradeoff,
                                              guesses=guesses))
            cpu = (time.process_time() - start) / reps
            covered = int(np.sum(np.asarray(bounds) <= eps_true))
            low = float(clopper_pearson_interval(covered, reps, confidence=0.95, alternative="greater")[0])
            label = (method if method == "steinke" else f"fdp ({tradeoff})") + f", {guesses}"
            rows.append([name, f"{eps_true:.3f}", label, f"{covered}/{reps}", f"{low:.3f}",
                         f"{np.mean(bounds):.3f}", f"{cpu:.3f}"])
            print(" | ".join(rows[-1]), flush=True)
    return H.markdown_table(["mechanism", "true epsilon", "method", "covered", "coverage >= (95%)",
                             "mean bound", "CPU s / bound"], rows)


def _canaries(seed, n=200, d0=10, m=500):
    rng = np.random.default_rng(seed)
    X = np.zeros((n, d0 + m), dtype=np.float32)
    X[:, :d0] = rng.normal(size=(n, d0)) / np.sqrt(d0)
    X_canary = np.zeros((m, d0 + m), dtype=np.float32)
    X_canary[np.arange(m), d0 + np.arange(m)] = 1.0
    return X, (X[:, 0] > 0).astype(np.int64), X_canary, rng.integers(0, 2, m).astype(np.int64)


def end_to_end(seed, smoke):
    """One fit per row: the one-run bound (f-DP analysis, (epsilon, delta) curve) and the stated epsilon."""
    import warnings

    from skmip import DPLogisticRegression, SubsampledDPClassifier
    from skmip.audit import one_run_audit

    warnings.simplefilter("ignore")
    X, y, Xc, yc = _canaries(seed)
    models = [(f"DPLogisticRegression(epsilon={e:g}, C=100)",
               DPLogisticRegression(epsilon=e, C=100, classes=[0, 1], fit_intercept=False, random_state=seed))
              for e in ((4.0,) if smoke else (4.0, 64.0, 1024.0, 4096.0))]
    models += [(f"SubsampledDPClassifier(DPLogisticRegression(C=100), train_size=0.5, epsilon={e:g})",
                SubsampledDPClassifier(DPLogisticRegression(C=100, classes=[0, 1], fit_intercept=False),
                                       train_size=0.5, epsilon=e, random_state=seed))
               for e in ((4.0,) if smoke else (4.0, 1024.0, 4096.0))]
    try:
        from skmip.nn import DPSGDLogisticRegression

        models += [(f"DPSGDLogisticRegression(epsilon={e:g}, {2 if smoke else 10} epochs)",
                    DPSGDLogisticRegression(epsilon=e, delta=DELTA, max_epochs=2 if smoke else 10, random_state=seed))
                   for e in ((4.0,) if smoke else (1.0, 4.0, 16.0))]
    except ImportError:
        print("torch is not installed: DP-SGD rows skipped")
    from sklearn.linear_model import LogisticRegression

    from skmip import MIPNoiseWrapper

    # An eta-MIP release by noisy gradients: its accountant's epsilon is not stated, its eta is.
    models += [(f"MIPNoiseWrapper(LogisticRegression(C=100), eta={eta:g}, method='noisy_gradient')",
                MIPNoiseWrapper(LogisticRegression(C=100, fit_intercept=False), eta=eta, method="noisy_gradient",
                                random_state=seed))
               for eta in ((0.1,) if smoke else (0.05, 0.1, 0.3))]
    rows = []
    for name, model in models:
        start = time.process_time()
        audit = one_run_audit(model, X, y, Xc, yc, random_state=seed)
        stated = (f"{audit.model_epsilon_:.3f}" if audit.model_epsilon_ is not None
                  else f"eta = {audit.model_eta_:g}" if audit.model_eta_ is not None else "-")
        delta = f"{audit.model_delta_:g}" if audit.model_delta_ is not None else "-"
        rows.append([name, stated, delta, f"{audit.epsilon_lower_:.2f}",
                     str(audit.n_trainings_), f"{time.process_time() - start:.1f}"])
        print(" | ".join(rows[-1]), flush=True)
    return H.markdown_table(["model", "stated epsilon", "delta", "one-run lower bound (95%)", "trainings", "CPU s"],
                            rows)


def main(argv=None):
    parser = H.parser(__doc__, quick="50 repetitions", reps=200, seed=0)
    parser.add_argument("--end-to-end", action="store_true", help="the one-fit audits of real estimators only")
    args = H.parse(parser, argv, quick=dict(reps=50), smoke=dict(reps=3))
    if args.end_to_end or args.smoke:
        table = end_to_end(args.seed, args.smoke)
        print("\n" + table)
        H.write_results("one_run_end_to_end.md", table)
    if not args.end_to_end:
        table = run(args.reps, args.seed)
        print("\n" + table)
        H.write_results("one_run.md", table)


if __name__ == "__main__":
    main()
