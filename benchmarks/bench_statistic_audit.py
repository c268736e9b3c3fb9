"""Exact audits of the closed-form coupling calibration (statistics that are means of features).

For tiny datasets (n = 12, every half enumerable) the noise is calibrated by
``statistic_swap_deltas`` + ``coupling_noise_scale(confidence=None)`` and the exact
Bayes-optimal attacker (``skmip.audit.attacks.bayes.exact_mip_advantage``, Monte Carlo over the
noise only) measures each record's advantage. Printed: the largest advantage against eta.

Usage::

    python benchmarks/bench_statistic_audit.py [--n-mc 4000]
"""

from __future__ import annotations

import time

import _harness as H  # the script's folder is on sys.path
import numpy as np

from skmip.audit.attacks.bayes import exact_mip_advantage
from skmip.bounds import coupling_noise_scale
from skmip.calibration.swap import statistic_swap_deltas


def _second_moment(A):
    return (A.T @ A / len(A))[np.triu_indices(A.shape[1])]


def problems():
    rng = np.random.default_rng(6)
    outlier = np.zeros((12, 1))
    outlier[0] = 1.0
    yield "mean, one outlier, d=1, n=12", outlier, (lambda A: A.mean(0))
    yield "mean, Gaussian rows, d=3, n=12", rng.normal(size=(12, 3)), (lambda A: A.mean(0))
    yield "second moment, Gaussian rows, d=2 (3 entries), n=12", rng.normal(size=(12, 2)), _second_moment
    yield "mean and second moment, Gaussian rows, d=2 (5 entries), n=12", rng.normal(size=(12, 2)), (
        lambda A: np.r_[A.mean(0), _second_moment(A)])


def main(argv=None):
    parser = H.parser(__doc__)
    parser.add_argument("--n-mc", type=int, default=4000)
    args = H.parse(parser, argv, smoke=dict(n_mc=200))  # --smoke: 200 releases per audit
    t0 = time.perf_counter()
    print("| problem | eta | s | max exact advantage (+- se) | advantage / eta |")
    print("|---|---|---|---|---|")
    for name, X, fn in problems():
        phi = np.stack([np.atleast_1d(fn(x[None])) for x in X])
        scale = np.where(phi.std(axis=0) > 0, phi.std(axis=0), 1.0)  # spread of phi over D
        res = statistic_swap_deltas(phi, scale=scale)
        for eta in (0.05, 0.1, 0.2, 0.3):
            cal = coupling_noise_scale(res.distances, eta, confidence=None, weights=res.weights,
                                       train_fraction=res.train_fraction)
            sd = cal.noise_scale * scale
            audit = exact_mip_advantage(
                fn, X, noise_sampler=lambda m, rng, sd=sd: rng.normal(size=(m, sd.size)) * sd,
                noise_logpdf=lambda x, sd=sd: -0.5 * ((x / sd) ** 2).sum(axis=1), n_mc=args.n_mc, random_state=1,
            )
            i = int(np.argmax(audit.advantage))
            print(f"| {name} | {eta} | {cal.noise_scale:.3f} | {audit.advantage[i]:.4f} +- "
                  f"{audit.std_error[i]:.4f} | {audit.advantage[i] / eta:.3f} |", flush=True)
    print(f"\nTotal time: {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
