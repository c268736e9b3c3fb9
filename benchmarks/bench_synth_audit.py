"""Auditing synthesizers on adult: MIP marginals, the DP baseline at the equal promise, a copying control.

Setup: adult's 10 categorical and binned columns (``bench_marginal_synthesis.adult_categorical``),
a random subsample of ``--rows`` records (seed 0) as the pool D. Each synthesizer is audited by
``skmip.audit.synth_audit.SynthesizerAuditor`` with ``--models`` synthesizers, each fitted on an exact
random half of D (``train_size=1.0``: the half is its D_train) and sampled ``len(D)`` records:

* ``MIPMarginalSynthesizer(eta)`` on the Chow-Liu tree of D (exact coupling bound);
* ``DPMarginalSynthesizer`` on the same tree, Gaussian mechanism at
  ``epsilon = mip_to_dp_epsilon(eta, 1e-6)`` (Theorem 4: the same eta);
* ``CopyingSynthesizer`` (samples training records: the leaky control).

Attacks: density ratio (DOMIAS), closest record, and for the marginal synthesizers the
likelihood ratio of the noisy tables (Gaussian approximation; D has too many halves to
enumerate). Metrics per attack over all ``models x rows`` trials; intervals and the promise
check at 95% with a Bonferroni split over the attacks.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_synth_audit.py
    python benchmarks/bench_synth_audit.py --quick     # 1,000 rows, 4 synthesizers
"""

from __future__ import annotations

import _harness as H  # the script's folder is on sys.path
import numpy as np
from _harness import markdown_table, timed
from bench_marginal_synthesis import adult_categorical  # the script's folder is on sys.path

from skmip import DPMarginalSynthesizer, MIPMarginalSynthesizer
from skmip.bounds import mip_to_dp_epsilon
from skmip.release.marginals import chow_liu_tree
from skmip.audit.synth_audit import CopyingSynthesizer, SynthesizerAuditor

DELTA = 1e-6


def run(rows, models, etas):
    data = adult_categorical()
    pool = data[np.sort(np.random.default_rng(0).choice(len(data), rows, replace=False))]
    codes = np.stack([np.unique(pool[:, j], return_inverse=True)[1] for j in range(pool.shape[1])], axis=1)
    tree = chow_liu_tree(codes)  # a function of D, as a release with train_size=0.5 computes it
    distinct = len(np.unique(pool.astype(str), axis=0))
    print(f"pool: {rows} adult records, 10 columns, {distinct} distinct; tree of {len(tree)} pairs; "
          f"{models} synthesizers per game\n")
    plan = [("copying (control)", CopyingSynthesizer())]
    for eta in etas:
        eps = float(mip_to_dp_epsilon(eta, DELTA))
        plan += [(f"MIP marginals, eta = {eta:g}", MIPMarginalSynthesizer(eta=eta, marginals=tree)),
                 (f"DP marginals, eps = {eps:.3f}, delta = 1e-6 (eta = {eta:g})",
                  DPMarginalSynthesizer(epsilon=eps, delta=DELTA, marginals=tree))]
    table = []
    for label, synth in plan:
        audit, seconds = timed(SynthesizerAuditor(synth, n_models=models, random_state=0).fit, pool)
        for name, r in audit.results_.items():
            (lo, hi) = r.tpr_interval
            check = r.bound_check
            table.append([
                label, name, f"{r.roc_auc:.3f}",
                f"{r.tpr[0]:.3f} [{lo[0]:.3f}, {hi[0]:.3f}]", f"{r.tpr[1]:.4f} [{lo[1]:.4f}, {hi[1]:.4f}]",
                f"{r.advantage:.3f}", "-" if audit.bound_ is None else f"{2 * audit.bound_:.2f}",
                "-" if check is None else f"{check.margin:+.3f}",
                "-" if check is None else ("yes" if check.holds else "**NO**"),
                f"{r.empirical_epsilon:.2f}", f"{seconds:.0f}",
            ])
        print(f"{label}: {seconds:.1f} s", flush=True)
    print()
    print(markdown_table(
        ["synthesizer", "attack", "AUC", "TPR@1% [95% CI]", "TPR@0.1% [95% CI]", "adv", "2 eta", "margin",
         "holds", "emp. eps", "s"],
        table,
    ))


def main(argv=None):
    p = H.parser(__doc__, quick="1,000 rows, 4 models")
    p.add_argument("--rows", type=int, default=3000)
    p.add_argument("--models", type=int, default=16)
    p.add_argument("--eta", type=float, action="append")
    args = H.parse(p, argv, quick=dict(rows=1000, models=4), smoke=dict(rows=200, models=2))
    run(args.rows, args.models, args.eta or [0.1])


if __name__ == "__main__":
    main()
