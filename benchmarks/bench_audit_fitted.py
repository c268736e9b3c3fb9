"""audit_fitted with 1, 2 and 4 reference models against the 16-model membership game.

Run:  python benchmarks/bench_audit_fitted.py [--quick] [--seed 0] [--data adult|digits|both]

For each setting a 4,000-row pool (adult, random forest; digits: 800 rows, MLP) is drawn, and rows outside it
are the reference data (as many as the pool, so that a reference model trains on as many rows
as the target). The target is fitted once on a uniformly random half of the pool and audited
by :func:`skmip.audit.audit_fitted` (the target never refit) with 1, 2 and 4 reference models
in three modes: trained on halves of the reference data labelled by the target's probabilities
(``reference_labels="target"``, the default: distilled references), on the same halves with
their true labels (``reference_labels="true"``), and, with ``references_see_pool=True``, on
halves of the pool drawn independently of the target's members (every attack; the reference
rows are RMIA's population). The baseline is :class:`skmip.audit.MIAttackScorer` with 16 models on the
same pool (each model the target in turn, every attack of ``"auto"``). The table reports the
strongest attack's TPR at 1% FPR, its ratio to the game's, and AUC, the trainings each audit costs and its CPU seconds
(``time.process_time``, side by side in one process).
Results and the command are recorded in docs/auditing.md.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import _harness as H
from sklearn.ensemble import RandomForestClassifier
from sklearn.neural_network import MLPClassifier

from skmip.audit import audit_fitted
from skmip.audit.scoring import MIAttackScorer
from skmip.datasets import load_dataset


def _data(name, n_pool, seed):
    if name == "adult":
        b = load_dataset("adult")
        X, y = np.asarray(b.data, dtype=np.float64), np.asarray(b.target)
    else:
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        X = X / 16.0
    rows = np.random.default_rng(seed).permutation(len(y))
    pool, ref = rows[:n_pool], rows[n_pool:2 * n_pool]
    return X[pool], y[pool], X[ref], y[ref]


MODES = (("reference halves, target labels", dict(reference_labels="target")),
         ("reference halves, true labels", dict(reference_labels="true")),
         ("pool halves", dict(references_see_pool=True)))


def run(name, model, n_pool, refs, seed):
    X, y, Xr, yr = _data(name, n_pool, seed)
    member = np.random.default_rng(seed + 1).permutation(len(y)) < len(y) // 2
    start = time.process_time()
    game = MIAttackScorer(model, n_models=16, metric="tpr_at_fpr", fpr=0.01, random_state=seed).fit(X, y)
    game_row = [name, "MIAttackScorer, 16 models", game.best_attack_, f"{game.tpr_at_fpr_:.4f}", "1.00",
                f"{game.roc_auc_:.4f}", "16", f"{time.process_time() - start:.1f}"]
    rows = []
    start = time.process_time()
    target = model.fit(X[member], y[member])
    fit_cpu = time.process_time() - start
    for where, options in MODES:
        for r in refs:
            start = time.process_time()
            audit = audit_fitted(target, X, y, member, X_reference=Xr, y_reference=yr, n_reference_models=r,
                                 random_state=seed, metric="tpr_at_fpr", **options)
            rows.append([name, f"audit_fitted, {r} on {where}", audit.best_attack_, f"{audit.tpr_at_fpr_:.4f}",
                         f"{audit.tpr_at_fpr_ / max(game.tpr_at_fpr_, 1e-12):.2f}", f"{audit.roc_auc_:.4f}", str(r),
                         f"{time.process_time() - start:.1f}"])
            print(" | ".join(rows[-1]), flush=True)
    rows.append(game_row)
    print(" | ".join(rows[-1]) + f"   (one target fit: {fit_cpu:.1f} s)", flush=True)
    return rows


def main(argv=None):
    parser = H.parser(__doc__, quick="adult only, 2,000-row pool", seed=0)
    parser.add_argument("--data", choices=("adult", "digits", "both"), default="both", help="which setting(s)")
    args = H.parse(parser, argv, smoke=dict(seed=0))
    warnings.simplefilter("ignore")
    settings = [("adult", RandomForestClassifier(n_estimators=100, random_state=0, n_jobs=1), 4000),
                ("digits", MLPClassifier(hidden_layer_sizes=(128,), max_iter=300, random_state=0), 800)]
    settings = [s for s in settings if args.data in (s[0], "both")]
    if args.quick:
        settings = [("adult", RandomForestClassifier(n_estimators=20, random_state=0, n_jobs=1),
                     400 if args.smoke else 2000)]
    rows = []
    for name, model, n_pool in settings:
        rows += run(name, model, n_pool, (1, 2, 4), args.seed)
    head = ["data", "audit", "strongest attack", "TPR at 1% FPR", "ratio to game", "AUC", "trainings", "CPU s"]
    table = H.markdown_table(head, rows)
    print("\n" + table)
    H.write_results("audit_fitted.md", table)


if __name__ == "__main__":
    main()
