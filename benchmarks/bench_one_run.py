"""One-run epsilon lower bounds: coverage and tightness on simulated mechanisms with known epsilon.

Run:  python benchmarks/bench_one_run.py [--reps 200] [--quick]

Each repetition draws m = 1000 canaries, each included with probability 1/2, runs a mechanism
whose privacy is known exactly, and computes :func:`skmip.audit.one_run_epsilon` from its
output with every method at 95% confidence:

- **Gaussian**: canary i's output is ``mu * S_i + N(0, 1)``, exactly mu-GDP in each canary's
  inclusion, so exactly (epsilon, delta)-DP at ``epsilon = gdp_to_dp(mu, delta)``;
- **randomized response**: canary i's output is ``S_i`` kept with probability
  ``e^eps / (1 + e^eps)``, flipped otherwise (ties scored by a uniform tie-break), exactly
  eps-DP (so (eps, delta)-DP; its trade-off curve is not Gaussian).

The table reports, per mechanism and method, the coverage (share of repetitions whose bound
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
METHODS = (("steinke", "gaussian"), ("fdp", "dp"), ("fdp", "gaussian"))


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
        for method, tradeoff in METHODS:
            start, bounds = time.process_time(), []
            for s, out in draws:
                bounds.append(one_run_epsilon(out[s], out[~s], delta=DELTA, method=method, tradeoff=tradeoff))
            cpu = (time.process_time() - start) / reps
            covered = int(np.sum(np.asarray(bounds) <= eps_true))
            low = float(clopper_pearson_interval(covered, reps, confidence=0.95, alternative="greater")[0])
            label = method if method == "steinke" else f"fdp ({tradeoff})"
            rows.append([name, f"{eps_true:.3f}", label, f"{covered}/{reps}", f"{low:.3f}",
                         f"{np.mean(bounds):.3f}", f"{cpu:.3f}"])
            print(" | ".join(rows[-1]), flush=True)
    return H.markdown_table(["mechanism", "true epsilon", "method", "covered", "coverage >= (95%)",
                             "mean bound", "CPU s / bound"], rows)


def main(argv=None):
    parser = H.parser(__doc__, quick="50 repetitions", reps=200, seed=0)
    args = H.parse(parser, argv, quick=dict(reps=50), smoke=dict(reps=3))
    table = run(args.reps, args.seed)
    print("\n" + table)
    H.write_results("one_run.md", table)


if __name__ == "__main__":
    main()
