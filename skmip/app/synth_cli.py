"""``skmip --synthesizer NAME``: audit synthesizers of tabular records on a CSV file or a bundled dataset.

The records are the dataset's columns as a table of categories -- one-hot blocks
(``column=value``) decoded back to one column, numeric columns cut into ``--bins`` quantile
bins of the whole file, the label appended as a last column -- a fixed function of the whole
file, computed before any synthesizer is fitted (as the model audit's standardisation is).
Each named synthesizer is audited by :class:`skmip.audit.synth_audit.SynthesizerAuditor`, and the
table shows, per synthesizer and attack, the metrics of the model audit and whether the
synthesizer's promise survives the measured ROC. The JSON file, if asked for, is rewritten
after every synthesizer, so a long run leaves its finished rows behind.

This module sits below :mod:`skmip.app.cli` and never imports it.
"""

from __future__ import annotations

import contextlib
import json
import sys

import numpy as np

from skmip.app.output_files import write_atomically
from skmip.bounds.rounding import format_up
from skmip.release.domains import infer_domains

__all__ = ["SYNTHESIZERS", "SynthesizerPlanError", "audit_synthesizers", "format_synthesizer_table",
           "records_from_bunch"]

#: Synthesizers the command knows, with what each is.
SYNTHESIZERS = {
    "mip-marginal": "MIPMarginalSynthesizer(eta) on the Chow-Liu tree of the pool (exact coupling bound)",
    "dp-marginal": "DPMarginalSynthesizer on the same tree, Gaussian mechanism at epsilon = mip_to_dp_epsilon(eta, delta)",
    "copying": "CopyingSynthesizer: copies training records (the leaky control)",
}
DP_DELTA = 1e-6
FPRS = (0.01, 0.001)


class SynthesizerPlanError(ValueError):
    """A user error in the synthesizer audit's options (printed as one line by the command)."""


def records_from_bunch(bunch, bins: int = 6):
    """The dataset as a table of categories: ``(records (n, c) of str, column names)``.

    One-hot blocks ``column=value`` become one column of their values (an all-zero row, a
    missing cell, becomes ``"?"``); a numeric column becomes the cells of its
    :func:`skmip.release.domains.infer_domains` domain with at most ``bins`` cells (frequent values
    their own, quantile intervals of the rest; a missing cell ``"?"``); the label is appended
    last. All of it is
    a function of the whole dataset D, computed before the audit (Definition 1 conditions on
    D).

    Parameters
    ----------
    bunch : Bunch
        From :func:`skmip.datasets.load_dataset` or :func:`skmip.datasets.load_csv`.
    bins : int, default=6

    Returns
    -------
    records : ndarray of str, shape (n_samples, n_columns)
    names : list of str

    Examples
    --------
    >>> from sklearn.utils import Bunch
    >>> b = Bunch(data=np.array([[1.0, 0.0, 5.0], [0.0, 1.0, 7.0]]), target=np.array([0, 1]),
    ...           feature_names=["c=a", "c=b", "x"], target_names=["no", "yes"])
    >>> records, names = records_from_bunch(b, bins=6)
    >>> names, records.tolist()
    (['c', 'x', 'label'], [['a', '5', 'no'], ['b', '7', 'yes']])
    """
    X = np.asarray(bunch.data, dtype=np.float64)
    names = [str(n) for n in bunch.feature_names]
    groups: dict[str, list[int]] = {}
    for j, name in enumerate(names):
        groups.setdefault(name.split("=", 1)[0] if "=" in name else name, []).append(j)
    columns, out_names = [], []
    for base, cols in groups.items():
        if len(cols) > 1 or "=" in names[cols[0]]:
            labels = np.array([names[j].split("=", 1)[1] for j in cols] + ["?"])
            block = np.nan_to_num(X[:, cols], nan=0.0)
            pick = np.where(block.max(axis=1) > 0, np.argmax(block, axis=1), len(cols))
            columns.append(labels[pick])
        else:  # the column domains of the synthetic route (skmip.release.domains), computed from D
            (domain,) = infer_domains([X[:, cols[0]]], [base], n_bins=bins, kinds={base: "numeric"})
            columns.append(np.array(domain.cell_names(), dtype=str)[domain.encode(X[:, cols[0]])])
        out_names.append(base)
    target_names = list(getattr(bunch, "target_names", []) or [])
    y = np.asarray(bunch.target)
    if target_names and np.issubdtype(y.dtype, np.integer) and y.min() >= 0 and y.max() < len(target_names):
        label = np.array(target_names, dtype=str)[y]
    else:
        label = y.astype(str)
    columns.append(label)
    out_names.append("label")
    return np.stack(columns, axis=1).astype(str), out_names


def _synthesizer(name, eta, tree):
    from skmip import DPMarginalSynthesizer, MIPMarginalSynthesizer
    from skmip.bounds import mip_to_dp_epsilon
    from skmip.audit.synth_audit import CopyingSynthesizer

    if name == "mip-marginal":
        return f"MIP marginals eta={eta:g}", MIPMarginalSynthesizer(eta=eta, marginals=tree)
    if name == "dp-marginal":
        eps = float(mip_to_dp_epsilon(eta, DP_DELTA))
        return (f"DP marginals eps={eps:.3g} (eta={eta:g})",
                DPMarginalSynthesizer(epsilon=eps, delta=DP_DELTA, marginals=tree))
    return "copying (control)", CopyingSynthesizer()


def _promise_text(auditor):
    if auditor.bound_ is None:
        return "none"
    eta = auditor.bound_
    what = "eta-MIP" if auditor.bound_promised_ else "target eta (train_size=1.0: no promise)"
    # Rounded up: a bound read off the text is never below the theorem's (issue 31).
    return f"{what}, eta={format_up(eta)}: TPR <= FPR + {format_up(2 * eta)} (Izzo et al. Def. 1, Thm 8 corrected)"


def audit_synthesizers(bunch, args, say=print) -> int:
    """Run the synthesizer audit the parsed ``args`` describe; print the table; return 0.

    Parameters
    ----------
    bunch : Bunch
        The loaded dataset (validated by the command).
    args : argparse.Namespace
        ``synthesizer`` (names of :data:`SYNTHESIZERS`), ``eta``, ``n_models``, ``bins``,
        ``seed``, ``n_jobs``, ``json``, ``estimator``, ``estimator_file``.
    say : callable
        Progress messages.

    Raises
    ------
    SynthesizerPlanError
        For an unknown synthesizer, a bad ``--bins`` or ``--synthesizer`` mixed with ``--estimator``.
    """
    from skmip.release.marginals import chow_liu_tree
    from skmip.audit.synth_audit import SynthesizerAuditor

    unknown = [s for s in args.synthesizer if s not in SYNTHESIZERS]
    if unknown:
        raise SynthesizerPlanError(
            f"--synthesizer {unknown[0]}: unknown; known: {', '.join(SYNTHESIZERS)}."
        )
    if args.estimator or args.estimator_file:
        raise SynthesizerPlanError(
            "--synthesizer audits synthesizers and --estimator models; run them as two commands."
        )
    if args.bins < 2:
        raise SynthesizerPlanError(f"--bins must be at least 2; got {args.bins}.")
    records, names = records_from_bunch(bunch, args.bins)
    codes = np.stack([np.unique(records[:, j], return_inverse=True)[1] for j in range(records.shape[1])], axis=1)
    # The structure is a function of the pool D, as a release with train_size < 1 computes it.
    tree = chow_liu_tree(codes) if records.shape[1] > 1 else [(0,)]
    say(f"dataset {bunch.description}: {records.shape[0]} records of {records.shape[1]} categorical columns "
        f"({', '.join(names)}); Chow-Liu tree of the pool: {len(tree)} tables")
    plan = []
    for name in dict.fromkeys(args.synthesizer):
        for eta in (args.eta if name != "copying" else [None]):
            plan.append(_synthesizer(name, eta, tree))
    rows = []
    for i, (label, synth) in enumerate(plan, start=1):
        say(f"[{i}/{len(plan)}] {label}: membership game with {args.n_models} synthesizers")
        # The auditor's per-synthesizer progress goes where the command's progress goes.
        with contextlib.redirect_stdout(sys.stderr):
            auditor = SynthesizerAuditor(
                synth, n_models=args.n_models, fpr=FPRS, random_state=args.seed,
                n_jobs=args.n_jobs, verbose=0 if args.quiet else 1,
            ).fit(records)
        for attack, r in auditor.results_.items():
            rows.append({
                "synthesizer": label, "attack": attack, "promise": _promise_text(auditor),
                "auc": r.roc_auc, "tpr_at_1pct_fpr": float(r.tpr[0]), "tpr_at_01pct_fpr": float(r.tpr[1]),
                "tpr_at_1pct_fpr_interval": [float(r.tpr_interval[0][0]), float(r.tpr_interval[1][0])],
                "tpr_at_01pct_fpr_interval": [float(r.tpr_interval[0][1]), float(r.tpr_interval[1][1])],
                "advantage": r.advantage, "empirical_epsilon": r.empirical_epsilon,
                "bound": auditor.bound_,
                "bound_holds": None if r.bound_check is None else r.bound_check.holds,
                "bound_margin": None if r.bound_check is None else r.bound_check.margin,
            })
        if args.json:
            _write_json(args.json, bunch, names, args, rows, done=i == len(plan))
            say(f"wrote {args.json} ({i}/{len(plan)} synthesizers)")
    print(f"\nSynthesizer membership-inference audit on {bunch.description} ({records.shape[0]} records, "
          f"{args.n_models} synthesizers per game, seed {args.seed})\n")
    print(format_synthesizer_table(rows))
    print("\nTPR@x%FPR [95% Clopper-Pearson interval, Bonferroni over the attacks]; advantage = max(TPR - FPR); "
          "'bound holds' tests TPR <= FPR + 2 eta along the whole ROC. The game fits every synthesizer with "
          "train_size=1.0 (its half of the pool is its D_train), where the marginal synthesizers list the "
          "categories of their training half (outside the noise) and state no promise: the check then tests "
          "the eta their noise was calibrated to.")
    print("Seeds were fixed for this audit: never publish a release whose noise seed is known.")
    return 0


def _write_json(path, bunch, names, args, rows, done):
    # Atomically, through a link (skmip.app.output_files): a full disk keeps the last good file.
    write_atomically(path, json.dumps({
        "dataset": bunch.description, "columns": names, "n_models": args.n_models, "seed": args.seed,
        "fpr": list(FPRS), "complete": done, "results": rows,
    }, indent=2))


def format_synthesizer_table(rows) -> str:
    """The synthesizer audit as a fixed-width text table, one line per (synthesizer, attack)."""
    head = ["synthesizer", "attack", "AUC", "TPR@1%FPR [CI]", "TPR@0.1%FPR [CI]", "advantage", "emp. eps",
            "bound holds", "promise"]
    body = []
    for r in rows:
        holds = {True: "yes", False: "NO", None: "-"}[r["bound_holds"]]
        lo1, hi1 = r["tpr_at_1pct_fpr_interval"]
        lo2, hi2 = r["tpr_at_01pct_fpr_interval"]
        body.append([
            r["synthesizer"], r["attack"], f"{r['auc']:.3f}",
            f"{r['tpr_at_1pct_fpr']:.3f} [{lo1:.3f}, {hi1:.3f}]",
            f"{r['tpr_at_01pct_fpr']:.4f} [{lo2:.4f}, {hi2:.4f}]",
            f"{r['advantage']:.3f}", f"{r['empirical_epsilon']:.2f}", holds, r["promise"],
        ])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
