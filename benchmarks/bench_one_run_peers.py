"""One-run epsilon lower bounds of skmip and of jax-privacy, computed from identical canary scores.

Run:  python benchmarks/bench_one_run_peers.py [--reps 20] [--seed 0] [--peer-python PATH] [--quick]

jax-privacy's ``auditing.CanaryScoreAuditor`` is the public reference implementation of both
one-run analyses. It is an optional dependency of this benchmark only (never of skmip) and needs
jax; install it in an environment of its own, for example::

    python3.11 -m venv /tmp/jaxvenv && /tmp/jaxvenv/bin/pip install jax-privacy "jax[cpu]"

and pass ``--peer-python /tmp/jaxvenv/bin/python``: the scores are written to a file, that
interpreter computes jax-privacy's bounds from them (this script's ``--worker`` mode, which
imports numpy and jax_privacy only), and the bounds come back. Where ``jax_privacy`` imports in
this interpreter, no ``--peer-python`` is needed. With neither the script stops with the
install line (the smoke test reports it skipped).

Each repetition draws m canaries, each included with probability 1/2; canary i's score is
``mu * S_i + N(0, 1)``: the Gaussian mechanism, exactly mu-GDP in each canary's inclusion, so
exactly (epsilon, delta)-DP at ``epsilon = gdp_to_dp(mu, delta)``. From the same scores, at
95% confidence and delta = 1e-5:

- skmip: :func:`skmip.audit.one_run_epsilon` with ``method="steinke"``, ``method="fdp"`` with
  the (epsilon, delta) curve (the default) and with the Gaussian curve, all with two-sided
  guesses (the default); and the Gaussian curve with one-sided guesses (jax-privacy's guesser);
- jax-privacy: ``epsilon_one_run`` (Steinke et al.) and ``epsilon_one_run_fdp`` (the f-DP
  analysis, whose trade-off curve is the Gaussian one: ``dp_accounting.get_sigma_gaussian``),
  both with their default threshold strategy (``Bonferroni()``: significance divided by the
  number of thresholds on the ROC curve's hull, a number the data choose), significance 0.05;
  and the f-DP search at significance 0.05 / (m + 1), a union bound over every threshold
  (jax-privacy's ``_epsilon_one_run_all_thresholds``, a private function, called directly).

The table reports the mean bound of every method, the ratio of skmip's f-DP bound (Gaussian
curve; two-sided, then one-sided guesses) to jax-privacy's, the repetitions in which each bound exceeds the true epsilon (none may,
beyond the 5% the theorems allow), and the CPU seconds per bound. Results and the command are
recorded in docs/auditing.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import _harness as H

DELTA = 1e-5
SIGNIFICANCE = 0.05
INSTALL = ("install jax-privacy in its own environment (python3.11 -m venv /tmp/jaxvenv && "
           "/tmp/jaxvenv/bin/pip install jax-privacy 'jax[cpu]') and pass --peer-python /tmp/jaxvenv/bin/python")
SKMIP = (("steinke", "dp", "two-sided"), ("fdp", "dp", "two-sided"), ("fdp", "gaussian", "two-sided"),
         ("fdp", "gaussian", "one-sided"))


def worker(scores_file, bounds_file):
    """jax-privacy's two bounds of every score set in ``scores_file``, with CPU seconds, as JSON."""
    from jax_privacy import auditing

    data = np.load(scores_file)
    out = []
    for i in range(int(data["n"])):
        auditor = auditing.CanaryScoreAuditor(data[f"in_{i}"], data[f"out_{i}"])
        start = time.process_time()
        steinke = float(auditor.epsilon_one_run(SIGNIFICANCE, DELTA))
        mid = time.process_time()
        fdp = float(auditor.epsilon_one_run_fdp(SIGNIFICANCE, DELTA))
        end = time.process_time()
        # The same search at the level of a union bound over all m + 1 thresholds (top-k guessers
        # for every k, a family fixed in advance) instead of over the data's ROC hull.
        m = data[f"in_{i}"].size + data[f"out_{i}"].size
        fdp_all = float(auditor._epsilon_one_run_all_thresholds(SIGNIFICANCE / (m + 1), DELTA, True, None,
                                                                 use_fdp=True)[0])
        out.append([steinke, fdp, fdp_all, mid - start, end - mid])
    Path(bounds_file).write_text(json.dumps(out))


def peer_bounds(draws, peer_python):
    """jax-privacy's bounds of ``draws`` (in-process, or in ``peer_python``): an (n, 5) array."""
    with tempfile.TemporaryDirectory() as tmp:
        scores, bounds = Path(tmp) / "scores.npz", Path(tmp) / "bounds.json"
        arrays = {"n": len(draws)}
        for i, (s, out) in enumerate(draws):
            arrays[f"in_{i}"], arrays[f"out_{i}"] = out[s], out[~s]
        np.savez(scores, **arrays)
        if peer_python is None:
            worker(scores, bounds)
        else:
            done = subprocess.run([peer_python, __file__, "--worker", str(scores), str(bounds)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise H.MissingDependency(f"bench_one_run_peers: {peer_python} could not run jax-privacy "
                                          f"({done.stderr.strip()[-400:]}); {INSTALL}")
        return np.asarray(json.loads(bounds.read_text()))


def run(settings, reps, seed, peer_python):
    from skmip.audit import one_run_epsilon
    from skmip.bounds.gdp import gdp_to_dp

    rows = []
    for m, mu in settings:
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(reps):
            s = rng.random(m) < 0.5
            draws.append((s, mu * s + rng.normal(size=m)))
        eps_true = gdp_to_dp(mu, DELTA)
        peer = peer_bounds(draws, peer_python)
        ours, cpu = [], []
        for method, tradeoff, guesses in SKMIP:
            start = time.process_time()
            ours.append([one_run_epsilon(out[s], out[~s], delta=DELTA, confidence=1 - SIGNIFICANCE, method=method,
                                         tradeoff=tradeoff, guesses=guesses) for s, out in draws])
            cpu.append((time.process_time() - start) / reps)
        bounds = np.column_stack(ours + [peer[:, 0], peer[:, 1], peer[:, 2]])
        cpu += [float(peer[:, 3].mean()), float(peer[:, 4].mean())]
        mean = bounds.mean(axis=0)
        over = (bounds > eps_true).sum(axis=0)
        ratios = f"{mean[2] / mean[5]:.2f} / {mean[3] / mean[5]:.2f}"
        rows.append([str(m), f"{mu:g}", f"{eps_true:.3f}", *(f"{v:.3f}" for v in mean), ratios,
                     " / ".join(str(int(v)) for v in over), " / ".join(f"{c:.3f}" for c in cpu)])
        print(" | ".join(rows[-1]), flush=True)
    head = ["m", "mu", "true epsilon", "skmip steinke", "skmip fdp (dp)", "skmip fdp (gaussian)",
            "skmip fdp (gaussian), one-sided", "jax-privacy steinke", "jax-privacy fdp (gaussian)",
            "jax-privacy fdp, all thresholds", "skmip fdp (gaussian) / jax fdp (two-sided / one-sided)",
            "bounds > true epsilon (same order)", "CPU s / bound (the first six)"]
    return H.markdown_table(head, rows)


def main(argv=None):
    parser = H.parser(__doc__, quick="5 repetitions", reps=20, seed=0)
    parser.add_argument("--peer-python", default=None,
                        help="an interpreter where jax_privacy imports (default: this one)")
    args = H.parse(parser, argv, quick=dict(reps=5), smoke=dict(reps=1))
    if args.peer_python is None:
        H.requires("jax_privacy", INSTALL)
    settings = [(1000, 1.0)] if args.smoke else [(m, mu) for m in (1000, 10000) for mu in (1.0, 2.0, 4.0)]
    table = run(settings, args.reps, args.seed, args.peer_python)
    print("\n" + table)
    H.write_results("one_run_peers.md", table)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        worker(*sys.argv[2:4])
    else:
        main()
