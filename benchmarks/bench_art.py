"""skmip's attacks against ART's MembershipInferenceBlackBox, on the same target models.

Run:  pip install adversarial-robustness-toolbox   # benchmark only, not a skmip dependency
      python benchmarks/bench_art.py [--n-models 16] [--art-models rf,gb[,nn]] [--quick]

For each target (an overfitting model on a bundled dataset) one membership game of K models is
played; every model is a target in turn. ART's black-box attack (an attack classifier on the
target's prediction vector and label) is given the *target's own* membership labels for a
random half of its members and non-members -- more knowledge than skmip's attacks, which use
only the other models of the game -- and both are evaluated on the other half of the rows,
pooled over the K targets: TPR at 0.1% and 1% FPR and AUC, side by side. ART's default attack
model is a small neural network (``nn``, torch); ``rf`` and ``gb`` (sklearn) are much faster.
Results are recorded in docs/auditing.md together with this command.
"""

from __future__ import annotations

import os
import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.preprocessing import StandardScaler

from skmip.audit.attacks import get_attack
from skmip.audit.game import play_membership_game
from skmip.audit.metrics import mi_roc_auc, tpr_at_fpr

OURS = ["loss", "lira", "lira_offline", "rmia"]


def _targets(quick, smoke=False):
    Xd, yd = load_digits(return_X_y=True)
    Xd = Xd / 16.0
    rows = np.random.default_rng(0).permutation(len(yd))[:400]
    Xc, yc = load_breast_cancer(return_X_y=True)
    Xc = StandardScaler().fit_transform(Xc)
    targets = [
        ("digits[400] LogReg(C=10)", LogisticRegression(C=10, max_iter=1000), Xd[rows], yd[rows]),
        ("breast_cancer RandomForest", RandomForestClassifier(n_estimators=100), Xc, yc),
    ]
    if smoke:
        return targets[:1]
    if not quick:
        targets.append(("digits MLP(64), alpha=0", MLPClassifier((64,), alpha=0.0, max_iter=200), Xd, yd))
    return targets


def _art_scores(model, X, y, train_in, train_out, evaluate, attack_model_type, seed):
    from art.attacks.inference.membership_inference import MembershipInferenceBlackBox
    from art.estimators.classification import SklearnClassifier

    import torch

    # ART's attack models draw from the global numpy RNG ("rf", "gb") and torch's ("nn");
    # seed both so that the benchmark is reproducible (skmip itself never uses them).
    np.random.seed(seed)
    torch.manual_seed(seed)
    attack = MembershipInferenceBlackBox(SklearnClassifier(model=model), attack_model_type=attack_model_type)
    X32 = X.astype(np.float32)
    attack.fit(x=X32[train_in], y=y[train_in], test_x=X32[train_out], test_y=y[train_out])
    return attack.infer(X32[evaluate], y[evaluate], probabilities=True).ravel()


def main(argv=None):
    parser = H.parser(__doc__, quick="two targets only", seed=0)
    parser.add_argument("--n-models", type=int, default=16)
    parser.add_argument("--art-models", default="rf,gb", help="comma-separated: rf, gb, nn")
    # --smoke: one target (digits), 4 models, ART's random-forest attack model only.
    args = H.parse(parser, argv, blas_threads=1, smoke=dict(n_models=4, art_models="rf"))
    art = H.requires("art", "pip install adversarial-robustness-toolbox")
    H.requires("torch", "pip install torch")
    art_models = args.art_models.split(",")
    print(f"ART {art.__version__}; K = {args.n_models} models per game; evaluation on held-out halves")
    header = f"{'target':<28}{'attack':<22}{'AUC':>7}{'TPR@0.1%':>10}{'TPR@1%':>9}"
    print(header)
    print("-" * len(header))
    t0 = time.perf_counter()
    for name, est, X, y in _targets(args.quick, args.smoke):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # inspect=lambda m: m keeps the fitted models, which ART needs (benchmark only)
            game = play_membership_game(est, X, y, n_models=args.n_models, random_state=args.seed,
                                        n_jobs=-1, inspect=lambda m: m)
        rng = np.random.default_rng(args.seed)
        ours = {a: get_attack(a).score(game) for a in OURS}
        truth, scores = [], {a: [] for a in OURS + [f"ART {t}" for t in art_models]}
        for k, model in enumerate(game.inspected):
            member = game.membership[k]
            half = rng.random(len(y)) < 0.5  # ART trains on these rows' labels
            train_in = np.flatnonzero(half & member)
            train_out = np.flatnonzero(half & ~member)
            evaluate = np.flatnonzero(~half)
            truth.append(member[evaluate])
            for a in OURS:
                scores[a].append(ours[a][k, evaluate])
            for t in art_models:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    scores[f"ART {t}"].append(
                        _art_scores(model, X, y, train_in, train_out, evaluate, t, args.seed + k))
        m = np.concatenate(truth)
        for label, parts in scores.items():
            s = np.concatenate(parts)
            print(f"{name:<28}{label:<22}{mi_roc_auc(m, s):>7.3f}{tpr_at_fpr(m, s, 0.001):>10.4f}"
                  f"{tpr_at_fpr(m, s, 0.01):>9.4f}")
        print(f"{'':<28}({m.size} evaluation trials, {int(m.sum())} members)")
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; load average {H.load_average():.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
