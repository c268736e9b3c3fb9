"""The ``skmip`` command: audit a model and its private versions on real data, in one go.

``skmip`` with no arguments audits, on the bundled UCI German credit data, a small neural
network that leaks (the attacks find members at many times the false-positive rate) next to the
same network trained by noisy SGD calibrated to mu-GMIP (Leemann et al.), and a logistic
regression next to its coupling-calibrated :class:`~skmip.MIPNoiseWrapper` version. Each model
is attacked with :class:`~skmip.audit.scoring.MIAttackScorer` -- by default every attack that applies
(RMIA, LiRA, LOSS) on the same shadow models, the strongest at 1% FPR reported and named -- and
the table shows utility, measured attack success and the promised bound side by side. The
JSON and HTML reports are rewritten after every row, so a run that is stopped keeps the rows
it finished.

``--estimator`` audits what you run instead: an alias, an import path with parameters, or a
pickled estimator (``--estimator-file``); :mod:`skmip.app.audit_plan` decides which defenses
apply to it and says why the others do not. The table and the HTML report are written by
:mod:`skmip.app.report`; the options are parsed by :mod:`skmip.app.options`.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import warnings

import numpy as np

from skmip.app.audit_plan import ALIASES, FPR, SHOWCASE, PlanError
from skmip.app.options import build_parser
from skmip.app.output_files import OutputPathError, check_output_path, write_atomically
from skmip.app.report import NOTE, calibration_of, fit_warning_lines, format_table, format_warnings

__all__ = ["main", "build_parser", "run", "format_table"]

ESTIMATORS = ALIASES  # kept for scripts that read it
MIN_ROWS = 40


class CLIError(Exception):
    """A user error: printed as one line, exit code 2."""


class _LineWriter:
    """A text stream that hands every complete line to ``say``: the library's verbose
    progress (printed to standard output) becomes the command's progress (standard error)."""

    def __init__(self, say, prefix=""):
        self.say, self.prefix, self.buffer = say, prefix, ""

    def write(self, text):
        self.buffer += text
        *lines, self.buffer = self.buffer.split("\n")
        for line in lines:
            if line.strip():
                self.say(f"{self.prefix}{line}")
        return len(text)

    def flush(self):
        pass


def _progress(enabled):
    start = time.perf_counter()

    def say(message):
        if enabled:
            print(f"[skmip {time.perf_counter() - start:6.1f}s] {message}", file=sys.stderr, flush=True)

    return say


def _category_lists(args):
    out = {}
    for item in args.categories or []:
        name, sep, values = item.partition("=")
        cats = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not name.strip() or not cats:
            raise CLIError(f"--categories {item!r}: expected COLUMN=A,B,..., e.g. --categories colour=red,green,blue.")
        out[name.strip()] = cats
    return out


def _load(args):
    from skmip.datasets import DATASETS, load_csv, load_dataset

    csv_options = args.categorical or args.categories
    if args.dataset in DATASETS:
        if csv_options:
            raise CLIError(f"--categorical/--categories describe a CSV file; --dataset {args.dataset} is bundled and already encoded.")
        bunch = load_dataset(args.dataset, n_samples=args.n_samples, random_state=args.seed)
        bunch.missing = {}
    elif args.dataset.lower().endswith(".csv") or os.path.exists(args.dataset):
        # The file first: a missing file is the first thing to fix, before any other option.
        if not os.path.isfile(args.dataset):
            raise CLIError(f"--dataset: no such file: {args.dataset}")
        if not os.access(args.dataset, os.R_OK):
            raise CLIError(f"--dataset: {args.dataset} is not readable (check its permissions).")
        if not args.target:
            raise CLIError(f"--dataset {args.dataset} is a CSV file: name its label column with --target COLUMN.")
        try:
            # --n-samples is applied while reading: memory follows the rows kept, not the file.
            bunch = load_csv(args.dataset, args.target, categorical=args.categorical or (),
                             categories=_category_lists(args), n_samples=args.n_samples,
                             random_state=args.seed)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CLIError(str(exc)) from None
    else:
        raise CLIError(f"--dataset: {args.dataset!r} is neither a bundled dataset ({', '.join(DATASETS)}) nor a CSV file.")
    X, y = bunch.data, bunch.target
    if len(X) < MIN_ROWS:
        raise CLIError(
            f"--dataset: {len(X)} rows is too few for an audit (need at least {MIN_ROWS}: each "
            "model trains on half of a pool that is itself part of the data)."
        )
    if np.unique(y).size < 2:
        raise CLIError("--target: the label column has a single value; a classifier needs two or more classes.")
    _check_class_sizes(y, bunch)
    return bunch


#: The share of rows held out for utility (stratified by class).
TEST_SHARE = 0.3


def _check_class_sizes(y, bunch):
    """Every class must fit the stratified split into the audit pool and the held-out rows."""
    labels, counts = np.unique(y, return_counts=True)
    n, k = len(y), labels.size
    n_test = int(np.ceil(TEST_SHARE * n))
    rare = np.flatnonzero(counts < 2)
    if k > min(n_test, n - n_test) or rare.size:
        names = list(getattr(bunch, "target_names", []) or [])
        shown = [names[int(c)] if c < len(names) else str(c) for c in labels[rare[:3]].tolist()]
        raise CLIError(
            f"--target: the label column has {k} classes for {n} rows"
            + (f", {rare.size} of them with a single row (e.g. {', '.join(shown)})" if rare.size else "")
            + f". The audit holds out {TEST_SHARE:.0%} of the rows by class (stratified), which needs "
            f"every class at least twice and at most {min(n_test, n - n_test)} classes. Merge rare "
            "classes (e.g. into 'other'), or name another --target: a label with one value per few "
            "rows is an identifier, not a class."
        )


def _preprocess(bunch, missing, say):
    """Standardise with the whole file's statistics; fill or keep missing numeric cells.

    Both are fixed functions of the whole file, computed before any model is trained (as in
    the papers' experiments): the audit covers the training, not this step. ``keep`` leaves
    NaN for an estimator or Pipeline that handles it, which is then audited with it.
    """
    from sklearn.preprocessing import StandardScaler

    X = StandardScaler().fit_transform(bunch.data)  # NaN-aware: ignored in fit, kept in transform
    names = list(bunch.feature_names)
    holes = np.isnan(X)
    if holes.any():
        cols = np.flatnonzero(holes.any(axis=0))
        listed = ", ".join(f"{names[j]} ({int(holes[:, j].sum())})" for j in cols)
        if missing == "fill":
            X = np.where(holes, 0.0, X)
            X = np.hstack([X, holes[:, cols].astype(np.float64)])
            names += [f"{names[j]}=missing" for j in cols]
            say(f"missing cells in {listed}: set to the column mean, with a 0/1 column COLUMN=missing each")
        else:
            say(f"missing cells in {listed}: passed to the estimator as NaN (--missing keep)")
    return X, names


def _parse_estimators(args):
    """[(EstimatorSpec, defenses or None)] in the order given; the showcase when none is."""
    from skmip.app.audit_plan import estimator_from_file, estimator_from_name, parse_params

    params = parse_params(args.param)
    if params and not args.estimator:
        raise CLIError("--param sets parameters of an --estimator; name one, e.g. --estimator "
                       "sklearn.ensemble.RandomForestClassifier --param max_depth=5.")
    specs = [estimator_from_name(text, params) for text in args.estimator or []]
    specs += [estimator_from_file(path) for path in args.estimator_file or []]
    wanted = None if args.defense is None else [d for d in args.defense if d != "none"]
    if specs:
        return [(spec, wanted) for spec in specs], False
    return [
        (estimator_from_name(name), list(defenses) if wanted is None else wanted)
        for name, defenses in SHOWCASE
    ], True


def _missing_values_hint(exc, args):
    text = str(exc)
    if "NaN" in text and args.missing == "keep":
        return (f"the estimator does not accept missing values ({text.splitlines()[0]}). Use "
                "--missing fill, or a Pipeline with SimpleImputer via --estimator-file.")
    return None


def run(args, say=print, on_row=None):
    """Run the audit described by parsed ``args``.

    Parameters
    ----------
    args : argparse.Namespace
    say : callable, default=print
        Progress messages.
    on_row : callable, default=None
        ``on_row(rows, bunch, n_planned)`` after every finished row, with the rows so far
        (the command rewrites its reports there, so a stopped run keeps them).

    Returns
    -------
    rows : list of dict
        One per audited model (the fields of the ``--json`` output, plus private arrays under
        keys starting with ``_``).
    bunch : Bunch
        The dataset, with ``skipped`` (the defenses that did not apply, and why),
        ``estimators`` (their names) and ``showcase`` (whether the default plan ran).
    """
    from sklearn.model_selection import train_test_split

    from skmip.app.audit_plan import plan_rows

    try:
        pairs, showcase = _parse_estimators(args)
    except PlanError as exc:
        raise CLIError(str(exc)) from None
    if showcase and args.eta is None:
        # One eta in the no-argument run: the coupling calibration is its slowest row.
        args.eta = [0.3]
    args.eta = args.eta or [0.1, 0.3]
    bunch = _load(args)
    X, names = _preprocess(bunch, args.missing, say)
    y = bunch.target
    X_pool, X_test, y_pool, y_test = train_test_split(
        X, y, test_size=TEST_SHARE, random_state=args.seed, stratify=y
    )
    say(f"dataset {bunch.description}: {len(X)} rows, {X.shape[1]} features; "
        f"{len(X_pool)} in the audit pool, {len(X_test)} held out for utility")
    try:
        plans, skipped = plan_rows(pairs, args, X.shape[1], np.unique(y).size, len(X_pool))
    except PlanError as exc:
        raise CLIError(str(exc)) from None
    for s in skipped:
        say(f"{s.estimator}: {s.defense} does not apply: {s.reason}")
    attack = "auto" if not args.attack or "auto" in args.attack else list(dict.fromkeys(args.attack))
    bunch.skipped = skipped
    bunch.showcase = showcase
    bunch.feature_names = names
    bunch.estimators = []
    rows = []
    base = {}
    for i, plan in enumerate(plans, start=1):
        label = f"[{i}/{len(plans)}] {plan.estimator}: {plan.defense}"
        model, fit_warnings = _fit_for_utility(plan, args, X_pool, y_pool, say, label)
        with _game_warnings_silenced():
            utility = float(model.score(X_test, y_test))
            scorer = _membership_game(plan, args, attack, X_pool, y_pool, say, label)
        rows.append(_row(plan, model, scorer, utility, fit_warnings))
        if plan.defense == "baseline":
            base[plan.estimator] = utility
        rows[-1]["accuracy_cost"] = base[plan.estimator] - utility if plan.estimator in base else None
        bunch.estimators = list(dict.fromkeys(r["estimator"] for r in rows))
        r = rows[-1]
        say(f"{label}: done: {r['attack']} finds AUC {r['auc']:.3f}, TPR@1%FPR {r['tpr_at_1pct_fpr']:.3f}")
        if on_row is not None:
            on_row(rows, bunch, len(plans))
    return rows, bunch


def _fit_for_utility(plan, args, X_pool, y_pool, say, label):
    """The row's model fitted on the pool, and the warnings its fit raised (it stands for the release)."""
    from skmip.utils.rng import fix_inner_random_state

    say(f"{label}: fitting for utility")
    with warnings.catch_warnings(record=True) as raised:
        # Every warning of the fit for utility is kept for the row (the fit that stands for
        # the release); the game's own fits are silenced below.
        warnings.simplefilter("always", UserWarning)
        warnings.filterwarnings("ignore", module="opacus")
        try:
            model = fix_inner_random_state(plan.make(), args.seed)
            if not args.quiet and type(model).__module__.startswith("skmip.defend"):
                # A noise calibration takes minutes: its stages and rounds, with the time
                # left, are the progress of this step.
                model.set_params(verbose=1)
            with contextlib.redirect_stdout(_LineWriter(say, f"{label}: ")):
                model.fit(X_pool, y_pool)
        except Exception as exc:  # noqa: BLE001 - the user's estimator may raise anything
            note = _missing_values_hint(exc, args) or f"{type(exc).__name__}: {exc}"
            raise CLIError(f"{plan.estimator} ({plan.defense}): fitting failed: {note}") from None
    return model, fit_warning_lines(raised)


@contextlib.contextmanager
def _game_warnings_silenced():
    """The membership game's fits repeat the fit for utility's warnings: silence them."""
    from skmip.exceptions import PrivacyWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        warnings.simplefilter("ignore", UserWarning)
        warnings.filterwarnings("ignore", module="opacus")
        yield


def _membership_game(plan, args, attack, X_pool, y_pool, say, label):
    """The row's membership game on the pool, scored by every attack asked for: the fitted scorer."""
    from sklearn.base import clone

    from skmip.audit.attacks.suite import resolve_attacks
    from skmip.audit.scoring import MIAttackScorer
    from skmip.exceptions import TrainingFailedError

    say(f"{label}: membership game with {args.n_models} models "
        f"(attack {attack if isinstance(attack, str) else ', '.join(attack)})")
    audited = plan.make()
    if plan.key == "mip" and "train_size" in audited.get_params():
        # Exact audit of Definition 1: the game's random half is the wrapper's D_train.
        # (SubsampledDPClassifier's train_size is its own Poisson rate T: kept.)
        audited = clone(audited).set_params(train_size=1.0)
    n_jobs = args.n_jobs
    if n_jobs is None:
        n_jobs = -1 if plan.key == "mip" else 1
    scorer = MIAttackScorer(
        audited, attack=attack, metric="tpr_at_fpr", n_models=args.n_models, fpr=FPR,
        sampling=plan.sampling, member_rate=0.5, random_state=args.seed, n_jobs=n_jobs,
        verbose=0 if args.quiet else 1,
    )
    try:  # the named attacks must apply to this row's model (checked before any fit)
        resolve_attacks(attack, audited, n_models=args.n_models, member_rate=0.5, owner="--attack")
    except (TypeError, ValueError) as exc:
        raise CLIError(f"{plan.estimator} ({plan.defense}): {exc}") from None
    try:
        # The scorer's per-model progress (with the time left) goes to our stream.
        with contextlib.redirect_stdout(_LineWriter(say, f"{label}: ")):
            scorer.fit(X_pool, y_pool)
    except TrainingFailedError as exc:
        raise CLIError(f"{plan.estimator} ({plan.defense}): {exc}") from None
    return scorer


def _row(plan, model, scorer, utility, fit_warnings):
    """One row of the table and of ``--json`` (private arrays under keys starting with ``_``)."""
    promise, eta, promised = plan.promise, plan.eta, plan.promised_tpr
    if plan.fitted_promise is not None:
        promise, eta, promised = plan.fitted_promise(model)
    return {
        "estimator": plan.estimator,
        "defense": plan.defense,
        "promise": promise,
        "test_accuracy": utility,
        "auc": float(scorer.roc_auc_),
        "tpr_at_1pct_fpr": float(scorer.tpr_at_fpr_),
        "promised_tpr_at_1pct_fpr": promised,
        "calibration": calibration_of(model) if plan.key != "none" else None,
        "warnings": fit_warnings,
        "advantage": float(scorer.advantage_),
        "empirical_epsilon": float(scorer.empirical_epsilon_),
        "positive_accuracy": float(scorer.positive_accuracy_),
        "bound": None if scorer.bound_ is None else float(scorer.bound_),
        "bound_holds": scorer.bound_holds_,
        "attack": scorer.best_attack_,
        "attacks": {
            name: {"auc": float(r["roc_auc"]), "tpr_at_1pct_fpr": float(r["tpr_at_fpr"]),
                   "empirical_epsilon": float(r["empirical_epsilon"]), "bound_holds": r["bound_holds"]}
            for name, r in scorer.attack_results_.items()
        },
        "attack_confidence": float(scorer.attack_confidence_),
        "training_issues": list(scorer.training_issues_),
        "_eta": eta,
        "_mu": plan.mu,
        "_membership": scorer.membership_,
        "_scores": scorer.scores_,
    }


def _public(rows):
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]


def _validate(args):
    if args.n_models < 4:
        raise CLIError(f"--n-models must be at least 4 (LiRA and RMIA attack each model with the "
                       f"others as references); got {args.n_models}.")
    for eta in args.eta or []:
        if not 0 < eta <= 0.5:
            raise CLIError(f"--eta must be in (0, 0.5]; got {eta}. eta is the attacker's accuracy "
                           "advantage over 1/2, so values above 0.5 promise nothing.")
    if not args.mu > 0:
        raise CLIError(f"--mu must be positive; got {args.mu}. mu = 0 would mean no training signal at all.")
    if not args.epsilon > 0:
        raise CLIError(f"--epsilon must be positive; got {args.epsilon}.")
    if args.report:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise CLIError('--report needs matplotlib: pip install "skmip[plot]"') from None


def _check_outputs(args):
    """Refuse, before any work, output paths the command could not write at the end."""
    if args.synthesizer and args.report:
        raise CLIError(f"--report {args.report}: the synthesizer audit has no HTML report (it prints "
                       "its table and writes --json); drop --report, or audit a model for one.")
    targets = {}
    for option in ("--json", "--report"):
        path = getattr(args, option[2:])
        if path:
            try:
                target = check_output_path(option, path)
            except OutputPathError as exc:
                raise CLIError(str(exc)) from None
            if target in targets:
                raise CLIError(f"{option} {path}: is the same file as {targets[target]}; name two files.")
            targets[target] = f"{option} {path}"


def _title(bunch, args, names):
    attacks = "strongest of " + ("rmia, lira, loss" if not args.attack or "auto" in args.attack
                                  else ", ".join(dict.fromkeys(args.attack)))
    return (f"Membership-inference audit on {bunch.description} ({names}; {attacks}, "
            f"{args.n_models} models, seed {args.seed})")


def _notes(rows, bunch):
    notes = [f"{s.estimator}: {s.defense} does not apply: {s.reason}." for s in bunch.skipped]
    for r in rows:
        for issue in r.get("training_issues") or ():
            notes.append(f"{r['estimator']} ({r['defense']}): training check: {issue}; a low "
                         "leakage on this row describes those models only (a model that predicts "
                         "one output reveals nothing, useful or private).")
    return notes


def _write_reports(args, rows, bunch, n_planned, say=None):
    """Write (or rewrite) the JSON and HTML reports with the rows finished so far."""
    complete = len(rows) == n_planned
    names = ", ".join(bunch.estimators)
    notes = _notes(rows, bunch)
    if not complete:
        notes = [f"Partial report: {len(rows)} of {n_planned} rows finished so far.", *notes]
    if args.json:
        # A reader (or a full disk, or Ctrl-C) never sees a half-written file.
        write_atomically(args.json, json.dumps({
            "dataset": bunch.description, "estimator": names, "estimators": bunch.estimators,
            "n_models": args.n_models, "seed": args.seed, "fpr": FPR,
            "complete": complete, "rows_planned": n_planned, "results": _public(rows),
            "not_applicable": [vars(s) for s in bunch.skipped],
            "feature_names": list(bunch.feature_names),
        }, indent=2))
        if say is not None:
            say(f"wrote {args.json}")
    if args.report:
        from skmip.app.report import write_html_report

        write_html_report(args.report, rows, title=f"skmip audit: {bunch.description}", notes=notes)
        if say is not None:
            say(f"wrote {args.report}")


def _audit_synthesizers(args, say):
    """``--synthesizer``: the membership game on synthesizers (:mod:`skmip.app.synth_cli`)."""
    from skmip.app.synth_cli import SynthesizerPlanError, audit_synthesizers

    args.eta = args.eta or [0.1]
    try:
        return audit_synthesizers(_load(args), args, say)
    except SynthesizerPlanError as exc:
        raise CLIError(str(exc)) from None


def _audit_fitted_model(args, say):
    """``--fitted-model``: audit a trained model without refitting it (:mod:`skmip.app.fitted_cli`)."""
    from skmip.app.fitted_cli import FittedPlanError, audit_fitted_model

    try:
        return audit_fitted_model(_load(args), args, say)
    except FittedPlanError as exc:
        raise CLIError(str(exc)) from None


def main(argv=None) -> int:
    """Entry point of the ``skmip`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    say = _progress(not args.quiet)

    def on_row(rows, bunch, n_planned):
        # After every row, the last included: a run stopped at any point keeps its rows.
        _write_reports(args, rows, bunch, n_planned, say if len(rows) == n_planned else None)

    try:
        _validate(args)
        _check_outputs(args)
        if args.synthesizer:
            return _audit_synthesizers(args, say)
        if args.fitted_model:
            return _audit_fitted_model(args, say)
        rows, bunch = run(args, say, on_row=on_row)
    except CLIError as exc:
        print(f"skmip: error: {exc}", file=sys.stderr)
        return 2
    names = ", ".join(bunch.estimators)
    print(f"\n{_title(bunch, args, names)}\n")
    print(format_table(rows))
    print("\n" + NOTE)
    for line in _notes(rows, bunch):
        print(line)
    warned = format_warnings(rows)
    if warned:
        print("\n" + warned)
    print("Seeds were fixed for this audit: never publish a model whose noise seed is known.")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
