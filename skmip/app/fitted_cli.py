"""``skmip --fitted-model MODEL.pkl --members ROWS.txt``: audit a model that is already trained.

The model is unpickled behind the trust warning of ``--estimator-file``
(:func:`skmip.utils.trust.load_pickle`, then :func:`skmip.utils.trust.refuse_io_parameters`)
and audited by :func:`skmip.audit.audit_fitted`: never refit, attacked with reference clones
trained on random halves of rows that did not train it. ``--members`` lists the 0-based rows of
the dataset (as ``--dataset`` loads it, before any preprocessing) that trained the model; the
model must accept those rows as they are (a Pipeline carries its own preprocessing).

The rows that did not train the model are shuffled (``--seed``): as many of them as there are
members (at most half of them) join the members in the audit pool as its non-members, and the
next (at most twice as many as the members) are the reference data, so that each reference
clone trains on as many rows as the model did. This module sits below :mod:`skmip.app.cli` and never imports it.
"""

from __future__ import annotations

import json
import os

import numpy as np

from skmip.utils.trust import UntrustedError, refuse_io_parameters

__all__ = ["FittedPlanError", "add_fitted_options", "audit_fitted_model", "read_members", "split_rows"]


class FittedPlanError(ValueError):
    """A user error in the fitted-model audit's options (printed as one line by the command)."""


def add_fitted_options(p) -> None:
    """The options of the fitted-model audit."""
    p.add_argument("--fitted-model", metavar="MODEL.pkl",
                   help="audit this pickled, already trained model instead of training any: it is never "
                        "refit; reference clones train on rows it did not see (needs --members). "
                        "Unpickling runs code: only load files you trust.")
    p.add_argument("--members", metavar="ROWS.txt",
                   help="with --fitted-model: the 0-based rows of --dataset that trained the model, "
                        "one per line (or separated by spaces or commas)")
    p.add_argument("--reference-models", type=int, default=4,
                   help="with --fitted-model: reference clones, each trained on a random half of the "
                        "rows that did not train the model. Default: 4.")


def read_members(path: str, n_rows: int) -> np.ndarray:
    """The boolean member mask of the ``n_rows`` dataset rows listed in ``path``.

    Raises
    ------
    FittedPlanError
        For a missing file, a token that is not a row number, a row out of range, or a
        repeated row.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
    ...     _ = f.write("0\\n2, 3\\n")
    >>> read_members(f.name, 5).tolist()
    [True, False, True, True, False]
    """
    if not os.path.isfile(path):
        raise FittedPlanError(f"--members: no such file: {path}")
    with open(path, encoding="utf-8") as handle:
        tokens = handle.read().replace(",", " ").split()
    rows = []
    for token in tokens:
        if not token.isdigit():
            raise FittedPlanError(f"--members {path}: {token!r} is not a row number (0-based, non-negative).")
        rows.append(int(token))
    if not rows:
        raise FittedPlanError(f"--members {path}: the file lists no row.")
    rows = np.asarray(rows)
    if rows.max() >= n_rows:
        raise FittedPlanError(f"--members {path}: row {int(rows.max())} is past the dataset's last row, {n_rows - 1}.")
    if np.unique(rows).size != rows.size:
        raise FittedPlanError(f"--members {path}: a row is listed twice; list each training row once.")
    member = np.zeros(n_rows, dtype=bool)
    member[rows] = True
    return member


def split_rows(member: np.ndarray, seed: int):
    """``(pool rows, reference rows)``: members plus as many non-members, and reference rows.

    The reference rows are at most twice as many as the members, so that each reference
    model, trained on half of them, sees as many rows as the model under audit did.

    Examples
    --------
    >>> pool, ref = split_rows(np.arange(10) < 3, seed=0)
    >>> len(pool), len(ref), int((np.arange(10) < 3)[pool].sum())
    (6, 4, 3)
    """
    outside = np.random.default_rng(seed).permutation(np.flatnonzero(~member))
    k = min(int(member.sum()), outside.size // 2)
    if k < 2:
        raise FittedPlanError(
            f"--members lists {int(member.sum())} of {member.size} rows; the audit needs at least 4 rows "
            "that did not train the model (non-members for the pool and reference data)."
        )
    return np.sort(np.concatenate([np.flatnonzero(member), outside[:k]])), np.sort(outside[k:k + 2 * int(member.sum())])


def _load_model(path):
    from skmip.app.audit_plan import load_trusted_file

    model = load_trusted_file("--fitted-model", path, FittedPlanError)
    try:
        refuse_io_parameters(model, f"--fitted-model {path}")
    except UntrustedError as exc:
        raise FittedPlanError(str(exc)) from None
    return model


def _table(audit):
    head = f"{'attack':<14}{'AUC':>8}{'TPR@' + format(audit.fpr, 'g'):>11}{'advantage':>11}{'emp. eps':>10}"
    lines = [head, "-" * len(head)]
    for name, r in audit.attack_results_.items():
        mark = " *" if name == audit.best_attack_ else ""
        lines.append(f"{name:<14}{r['roc_auc']:>8.3f}{r['tpr_at_fpr']:>11.3f}{r['advantage']:>11.3f}"
                     f"{r['empirical_epsilon']:>10.3f}{mark}")
    return "\n".join(lines)


def audit_fitted_model(bunch, args, say=print) -> int:
    """Run the fitted-model audit of ``args`` on the loaded dataset; print the table; return 0."""
    from skmip.audit import audit_fitted

    if not args.members:
        raise FittedPlanError("--fitted-model needs --members ROWS.txt: the rows that trained the model.")
    if args.n_samples is not None:
        raise FittedPlanError("--n-samples draws rows at random, which would renumber the rows --members "
                              "lists; leave it out with --fitted-model.")
    model = _load_model(args.fitted_model)
    X, y = np.asarray(bunch.data), np.asarray(bunch.target)
    member = read_members(args.members, len(y))
    pool, ref = split_rows(member, args.seed)
    say(f"auditing {type(model).__name__} on {len(pool)} rows ({int(member.sum())} members) with "
        f"{args.reference_models} reference models on {len(ref)} rows")
    attack = args.attack if args.attack and args.attack != ["auto"] else "auto"
    try:
        audit = audit_fitted(model, X[pool], y[pool], member[pool], X_reference=X[ref], y_reference=y[ref],
                             n_reference_models=args.reference_models, attack=attack,
                             random_state=args.seed)
    except (TypeError, ValueError) as exc:
        raise FittedPlanError(str(exc)) from None
    labels = "the model's probabilities" if audit.reference_labels_ == "target" else "their true labels"
    print(f"\nMembership audit of the fitted model {args.fitted_model} (never refit; references trained on "
          f"{labels})\n")
    print(_table(audit))
    bound = ("states no promise" if audit.bound_ is None else
             f"states {audit.bound_:.4g}: {'holds' if audit.bound_holds_ else 'REFUTED'} at 95% confidence"
             if audit.bound_holds_ is not None else f"states {audit.bound_:.4g} (not testable here)")
    print(f"\n* strongest attack. empirical epsilon: a 95% lower bound (Bonferroni over the attacks). "
          f"The model {bound}.")
    if args.json:
        result = {"model": args.fitted_model, "n_pool": int(len(pool)), "n_members": int(member.sum()),
                  "n_reference_models": args.reference_models, "reference_labels": audit.reference_labels_,
                  "best_attack": audit.best_attack_,
                  "bound": audit.bound_, "bound_holds": audit.bound_holds_,
                  "attacks": {n: {k: r[k] for k in ("roc_auc", "tpr_at_fpr", "advantage", "empirical_epsilon")}
                              for n, r in audit.attack_results_.items()}}
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=2)
    return 0
