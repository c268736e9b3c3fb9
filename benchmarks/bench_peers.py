"""skmip's attacks side by side with ART's and ML Privacy Meter's, on the same target models.

Run:  pip install --no-deps adversarial-robustness-toolbox privacy-meter six  # benchmark only
      python benchmarks/bench_peers.py [--check-auto] [--n-models 16] [--adult-rows 3000]
          [--label-only-targets 2] [--label-only-rows 200] [--hsj small|art] [--targets digits,adult]

Two targets, as in issue 21: an MLP on digits (all 1,797 rows) and a random forest on adult (a
seeded subsample of ``--adult-rows`` rows). One membership game of K models per target
(:func:`skmip.audit.game.play_membership_game`); every model is the target in turn. The rows are cut
once, at random, into an *attacker half* and an *evaluation half*; every attack is evaluated
on the evaluation half, pooled over the K targets, with the same metrics
(:func:`skmip.audit.metrics.mi_roc_auc`, :func:`skmip.audit.metrics.tpr_at_fpr`).

What each attack is given:

* skmip (``loss``, ``lira``, ``lira_offline``, ``rmia``, ``rmia_offline`` and ``auto``): the
  other K - 1 models of the game and which rows each trained on (its threat model: the attacker
  can train models like the target's). ``auto`` is what ``MIAttackScorer(attack="auto")``
  reports: the attack of :data:`skmip.audit.attacks.suite.AUTO_ATTACKS` with the largest AUC on
  the whole game (the scorer's rule; ``--check-auto`` re-runs the scorer and asserts that it
  names the same attack on the same member sets).
* ART rule-based (``MembershipInferenceBlackBoxRuleBased``): the target's predicted labels
  only; "member" when the prediction is right. No training.
* ART black-box (``MembershipInferenceBlackBox``, attack model ``rf`` / ``gb``): an attack
  classifier trained on the *target's own* membership labels of its attacker-half rows --
  more than any other attack here knows.
* ART shadow models (``ShadowModels`` + ``MembershipInferenceBlackBox``): 4 shadow models of
  the target's type trained by ART on random halves of the attacker half, an ``rf`` attack
  classifier on their outputs (trained once per dataset, applied to every target).
* ART label-only (``LabelOnlyDecisionBoundary``, Choquette-Choo et al. 2021): HopSkipJump
  distance to the decision boundary, threshold calibrated on the target's attacker-half
  rows. It costs thousands of model queries per row, so it runs on ``--label-only-rows``
  evaluation rows of the first ``--label-only-targets`` targets only (0 disables it), with a
  HopSkipJump budget below ART's default unless ``--hsj art``.
* Privacy Meter population attack (``PopulationMetric``, loss signal): the target's losses
  on its non-members in the attacker half set the threshold.
* Privacy Meter reference attack (``ReferenceMetric``, loss signal): the other K - 1 models
  as reference models; per-row thresholds from their losses on that row (its API pools the
  reference models whether or not they trained on the row).

Privacy Meter reports membership decisions at a list of FPR tolerances; it is run with a dense
grid of tolerances and a row's score is the number of tolerances at which it is called a
member (the decisions are nested), so that all attacks go through the same ROC code. Its
``Sklearn_Model`` wrapper imports tensorflow, so a four-line adapter (``_PMModel`` below)
exposes the scikit-learn models' ``predict_proba`` and per-row log loss instead.
Results are recorded in docs/auditing.md together with this command.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from _harness import markdown_table
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from skmip.audit.attacks import get_attack
from skmip.audit.attacks.suite import AUTO_ATTACKS
from skmip.datasets import load_dataset
from skmip.audit.game import play_membership_game
from skmip.audit.metrics import mi_roc_auc, tpr_at_fpr

OURS = ["loss", "lira", "lira_offline", "rmia", "rmia_offline"]
assert set(AUTO_ATTACKS) <= set(OURS)


def _targets(adult_rows, seed):
    Xd, yd = load_digits(return_X_y=True)
    d = load_dataset("adult", n_samples=adult_rows, random_state=seed)
    Xa = StandardScaler().fit_transform(d.data)  # public preprocessing choice
    return [
        ("digits (1,797), MLP(64), alpha=0", MLPClassifier((64,), alpha=0.0, max_iter=200), Xd / 16.0, yd),
        (f"adult ({adult_rows:,}), RandomForest(100)", RandomForestClassifier(n_estimators=100), Xa,
         np.asarray(d.target)),
    ]


# ----------------------------------------------------------------------------- ART
def _art(model):
    from art.estimators.classification import SklearnClassifier

    return SklearnClassifier(model=model)


def _art_rule_based(model, X, y, evaluate):
    from art.attacks.inference.membership_inference import MembershipInferenceBlackBoxRuleBased

    # the hard decision (its probabilities are the same 0/1 for more than two classes)
    return MembershipInferenceBlackBoxRuleBased(_art(model)).infer(X[evaluate], y[evaluate]).ravel()


def _art_black_box(model, X, y, train_in, train_out, evaluate, kind, seed):
    from art.attacks.inference.membership_inference import MembershipInferenceBlackBox

    np.random.seed(seed)  # ART's attack models draw from the global RNG (benchmark only)
    attack = MembershipInferenceBlackBox(_art(model), attack_model_type=kind)
    attack.fit(x=X[train_in], y=y[train_in], test_x=X[train_out], test_y=y[train_out])
    return attack.infer(X[evaluate], y[evaluate], probabilities=True).ravel()


def _art_shadow_attack(estimator, X, y, attacker, seed):
    """ART's shadow-model attack, trained once: shadow models on the attacker half."""
    from art.attacks.inference.membership_inference import MembershipInferenceBlackBox, ShadowModels

    np.random.seed(seed)
    # ART clones a *fitted* classifier for its shadow models (it reads the number of classes);
    # the attack is bound to it only for shapes: infer is given each target's outputs.
    template = _art(clone(estimator).set_params(random_state=seed).fit(X[attacker], y[attacker]))
    shadow = ShadowModels(template, num_shadow_models=4, random_state=seed)
    onehot = np.eye(len(np.unique(y)))[np.searchsorted(np.unique(y), y[attacker])]  # ART fits on one-hot labels
    (x_in, y_in, p_in), (x_out, y_out, p_out) = shadow.generate_shadow_dataset(X[attacker], onehot)
    attack = MembershipInferenceBlackBox(template, attack_model_type="rf")
    attack.fit(x=x_in, y=y_in, test_x=x_out, test_y=y_out, pred=p_in, test_pred=p_out)
    return attack


#: HopSkipJump budgets of the label-only attack: ART's defaults, and a smaller one (the default
#: here) that keeps the forest on adult within minutes (each query of a row is a forest call).
HSJ = {"art": dict(max_iter=50, max_eval=10000, init_eval=100),
       "small": dict(max_iter=10, max_eval=500, init_eval=50)}


def _art_label_only(model, X, y, train_in, train_out, evaluate, seed, budget):
    from art.attacks.inference.membership_inference import LabelOnlyDecisionBoundary

    np.random.seed(seed)
    hsj = dict(HSJ[budget], verbose=False)
    attack = LabelOnlyDecisionBoundary(_art(model))
    attack.calibrate_distance_threshold(X[train_in], y[train_in], X[train_out], y[train_out], **hsj)
    # Without bins, ART's probabilities are sigmoid(distance - tau): the ROC of the attack's
    # statistic, the boundary distance (its calibration bins map distances to a few bin
    # accuracies, coarser and not monotone).
    attack.threshold_bins = []
    return attack.infer(X[evaluate], y[evaluate], probabilities=True, **hsj)[:, 1]


# ----------------------------------------------------------------------------- Privacy Meter
def _pm_import():
    """Privacy Meter 1.0.1's model module imports tensorflow at the top, for its TensorFlow
    wrappers only; without tensorflow installed, an empty module stands in (nothing here calls it)."""
    import importlib.util
    import sys
    import types

    if "tensorflow" not in sys.modules and importlib.util.find_spec("tensorflow") is None:
        sys.modules.setdefault("tensorflow", types.ModuleType("tensorflow"))


def _pm_model_class():
    _pm_import()
    from privacy_meter.model import Model

    class _PMModel(Model):
        """Privacy Meter's model interface over a fitted scikit-learn classifier (per-row log loss)."""

        def get_logits(self, batch_samples):
            return self.model_obj.predict_proba(batch_samples)

        def get_loss(self, batch_samples, batch_labels, per_point=True):
            p = self.model_obj.predict_proba(batch_samples)
            col = np.searchsorted(self.model_obj.classes_, batch_labels)
            return -np.log(np.clip(p[np.arange(len(col)), col], 1e-12, None))

        def get_grad(self, batch_samples, batch_labels):
            raise NotImplementedError

        def get_intermediate_outputs(self, layers, batch_samples, forward_pass=True):
            raise NotImplementedError

    return _PMModel


#: FPR tolerances given to Privacy Meter: dense where the low-FPR metrics are read.
PM_ALPHAS = np.unique(np.concatenate([[0.0, 1.0], np.logspace(-5, 0, 301), np.linspace(0, 1, 201)]))


def _pm_dataset(X, y, splits):
    _pm_import()
    from privacy_meter.dataset import Dataset

    return Dataset({name: {"x": X[rows], "y": y[rows]} for name, rows in splits.items()},
                   default_input="x", default_output="y")


def _pm_scores(metric):
    """Run one Privacy Meter metric through its Audit; a row's score is the number of FPR
    tolerances at which it is called a member."""
    _pm_import()
    from privacy_meter.audit import Audit
    from privacy_meter.constants import InferenceGame

    audit = Audit(metrics=[metric], inference_game_type=InferenceGame.PRIVACY_LOSS_MODEL,
                  fpr_tolerances=list(PM_ALPHAS), save_logs=False)
    audit.prepare()
    with contextlib.redirect_stdout(io.StringIO()):  # it prints where logs would be stored
        result = audit.run()[0][0]
    return np.asarray(result.predicted_labels, dtype=float).sum(axis=0)


def _pm_population(model, X, y, members, non_members, population):
    _pm_import()
    from privacy_meter.hypothesis_test import linear_itp_threshold_func
    from privacy_meter.information_source import InformationSource
    from privacy_meter.information_source_signal import ModelLoss
    from privacy_meter.metric import PopulationMetric

    M = _pm_model_class()
    target = M(model, None)
    data = _pm_dataset(X, y, {"train": members, "test": non_members})
    pop = _pm_dataset(X, y, {"train": population})
    metric = PopulationMetric(
        target_info_source=InformationSource(models=[target], datasets=[data]),
        reference_info_source=InformationSource(models=[target], datasets=[pop]),
        signals=[ModelLoss()], hypothesis_test_func=linear_itp_threshold_func)
    return _pm_scores(metric)


def _pm_reference(model, references, X, y, members, non_members):
    _pm_import()
    from privacy_meter.hypothesis_test import linear_itp_threshold_func
    from privacy_meter.information_source import InformationSource
    from privacy_meter.information_source_signal import ModelLoss
    from privacy_meter.metric import ReferenceMetric

    M = _pm_model_class()
    data = _pm_dataset(X, y, {"train": members, "test": non_members})
    metric = ReferenceMetric(
        target_info_source=InformationSource(models=[M(model, None)], datasets=[data]),
        reference_info_source=InformationSource(models=[M(r, None) for r in references], datasets=[data]),
        signals=[ModelLoss()], hypothesis_test_func=linear_itp_threshold_func)
    return _pm_scores(metric)


# ----------------------------------------------------------------------------- main
def _row(label, m, s):
    return [label, f"{mi_roc_auc(m, s):.3f}", f"{tpr_at_fpr(m, s, 0.01):.4f}", f"{tpr_at_fpr(m, s, 0.001):.4f}",
            f"{m.size:,} ({int(m.sum()):,})"]


def main(argv=None):
    logging.getLogger("art").setLevel(logging.ERROR)  # HopSkipJump logs every failed start
    parser = H.parser(__doc__, seed=0)
    parser.add_argument("--n-models", type=int, default=16)
    parser.add_argument("--adult-rows", type=int, default=3000)
    parser.add_argument("--art-models", default="rf,gb", help="ART black-box attack models: rf, gb, nn")
    parser.add_argument("--label-only-targets", type=int, default=2)
    parser.add_argument("--label-only-rows", type=int, default=200)
    parser.add_argument("--hsj", choices=sorted(HSJ), default="small",
                        help="HopSkipJump budget of the label-only attack (art: ART's defaults)")
    parser.add_argument("--targets", default="digits,adult", help="comma-separated: digits, adult")
    parser.add_argument("--check-auto", action="store_true",
                        help="also run MIAttackScorer(attack='auto') and check it picks the same attack")
    # --smoke: adult on 300 rows, 4 models, ART's random-forest attack model, no label-only attack.
    args = H.parse(parser, argv, blas_threads=1, smoke=dict(
        targets="adult", adult_rows=300, n_models=4, art_models="rf", label_only_targets=0))
    install = "pip install --no-deps adversarial-robustness-toolbox privacy-meter six"
    art = H.requires("art", install)
    H.requires("privacy_meter", install)
    try:
        _pm_import()
        import privacy_meter.audit  # noqa: F401
    except ImportError as exc:
        raise H.MissingDependency(f"bench_peers needs the peers: {install}") from exc
    from importlib.metadata import version
    print(f"ART {art.__version__}, Privacy Meter {version('privacy-meter')}; K = {args.n_models}; {vars(args)}")
    t0 = time.perf_counter()
    header = ["attack", "AUC", "TPR@1%FPR", "TPR@0.1%FPR", "trials (members)"]
    for name, est, X, y in _targets(args.adult_rows, args.seed):
        if name.split()[0] not in args.targets.split(","):
            continue
        X = X.astype(np.float32).astype(np.float64)  # ART casts to float32: give everyone the same rows
        times = {}
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # inspect=lambda m: m keeps the fitted models, which the peers need (benchmark only)
            game = play_membership_game(est, X, y, n_models=args.n_models, random_state=args.seed,
                                        n_jobs=1, inspect=lambda m: m)
        times["game"] = time.perf_counter() - start
        M = game.membership
        rng = np.random.default_rng(args.seed)
        attacker = rng.random(len(y)) < 0.5
        evaluate = np.flatnonzero(~attacker)

        start = time.perf_counter()
        ours = {a: np.asarray(get_attack(a).score(game)) for a in OURS}
        auc_all = {a: mi_roc_auc(M, ours[a]) for a in AUTO_ATTACKS}
        best = max(AUTO_ATTACKS, key=lambda a: auc_all[a])  # MIAttackScorer's rule (metric="auc")
        times["skmip"] = time.perf_counter() - start
        if args.check_auto:
            from skmip.audit.scoring import MIAttackScorer

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sc = MIAttackScorer(clone(est), attack="auto", n_models=args.n_models,
                                    random_state=args.seed).fit(X, y)
            assert np.array_equal(sc.membership_, M), "the scorer's member sets differ"
            assert sc.best_attack_ == best, (sc.best_attack_, best)
            print(f"check: MIAttackScorer(attack='auto') picks {sc.best_attack_} on the same member sets")

        labels = [f"skmip {a}" for a in OURS] + [f"skmip auto (= {best})"]
        labels += ["ART rule-based"] + [f"ART black-box {t}" for t in args.art_models.split(",")]
        labels += ["ART shadow models (4, rf)", "Privacy Meter population", "Privacy Meter reference"]
        truth, scores = [], {lab: [] for lab in labels}
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            shadow = _art_shadow_attack(est, X, y, np.flatnonzero(attacker), args.seed)
        times["ART shadow training"] = time.perf_counter() - start
        lo_truth, lo_scores = [], []
        for k, model in enumerate(game.inspected):
            member = M[k]
            train_in = np.flatnonzero(attacker & member)
            train_out = np.flatnonzero(attacker & ~member)
            truth.append(member[evaluate])
            for a in OURS:
                scores[f"skmip {a}"].append(ours[a][k, evaluate])
            scores[labels[len(OURS)]].append(ours[best][k, evaluate])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                scores["ART rule-based"].append(_art_rule_based(model, X, y, evaluate))
                for t in args.art_models.split(","):
                    scores[f"ART black-box {t}"].append(
                        _art_black_box(model, X, y, train_in, train_out, evaluate, t, args.seed + k))
                scores["ART shadow models (4, rf)"].append(
                    shadow.infer(X[evaluate], y[evaluate], pred=model.predict_proba(X[evaluate]),
                                 probabilities=True).ravel())
                times["ART"] = times.get("ART", 0) + time.perf_counter() - start
                start = time.perf_counter()
                ev_in, ev_out = evaluate[member[evaluate]], evaluate[~member[evaluate]]
                order = np.concatenate([ev_in, ev_out])  # Privacy Meter returns members first
                inv = np.argsort(order)  # back to the order of `evaluate` (sorted rows)
                s = _pm_population(model, X, y, ev_in, ev_out, train_out)
                scores["Privacy Meter population"].append(s[inv])
                refs = [m for j, m in enumerate(game.inspected) if j != k]
                s = _pm_reference(model, refs, X, y, ev_in, ev_out)
                scores["Privacy Meter reference"].append(s[inv])
                times["Privacy Meter"] = times.get("Privacy Meter", 0) + time.perf_counter() - start
                if k < args.label_only_targets and args.label_only_rows > 0:
                    start = time.perf_counter()
                    sub = np.random.default_rng(args.seed + k).choice(len(evaluate), args.label_only_rows,
                                                                      replace=False)
                    cal = np.random.default_rng(args.seed + 100 + k)
                    cal_in = cal.choice(train_in, min(50, len(train_in)), replace=False)
                    cal_out = cal.choice(train_out, min(50, len(train_out)), replace=False)
                    lo_scores.append(_art_label_only(model, X, y, cal_in, cal_out, evaluate[sub], args.seed + k,
                                                    args.hsj))
                    lo_truth.append(member[evaluate[sub]])
                    times["ART label-only"] = times.get("ART label-only", 0) + time.perf_counter() - start
        m = np.concatenate(truth)
        rows = [_row(lab, m, np.concatenate(parts)) for lab, parts in scores.items()]
        if lo_truth:
            lm = np.concatenate(lo_truth)
            sl = np.concatenate(lo_scores)
            rows.append(_row(f"ART label-only, HSJ {args.hsj} ({len(lo_truth)} targets x "
                             f"{args.label_only_rows} rows)", lm, sl))
            # the skmip attack on the very same subsample, for a like-for-like line
            sub_best = np.concatenate([
                ours[best][k, evaluate[np.random.default_rng(args.seed + k).choice(
                    len(evaluate), args.label_only_rows, replace=False)]] for k in range(len(lo_truth))])
            rows.append(_row(f"skmip {best} on the label-only rows", lm, sub_best))
        print(f"\n{name}: the game {times.pop('game'):.0f} s; " +
              ", ".join(f"{k} {v:.0f} s" for k, v in times.items()))
        print(markdown_table(header, rows))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; load average {H.load_average():.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
