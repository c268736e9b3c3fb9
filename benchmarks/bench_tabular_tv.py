"""Fidelity of MIPTabularSynthesizer on adult: ``marginals="select"`` against the label tree.

Issue 22, point 3's targets at eta = 0.1 on adult (all 14 columns and the label): mean 2-way
total variation against D <= 0.030, HistGradientBoosting trained on synthetic records within
3 points of the same model trained on the real half of D, a random forest through
``MIPNoiseWrapper`` >= 0.80. Same protocol and helpers as ``bench_any_estimator.py``
(70/30 split stratified on the label, seed = repetition; D the 70% part; evaluation cells
fixed from D; as many synthetic records as D has rows). Each structure's release is fitted
once per repetition through the wrapper with the HistGradientBoosting pipeline; the forest
is a second wrapper with the same seed (the same release).

Usage::

    python benchmarks/bench_tabular_tv.py                 # 1 repetition, both structures
    python benchmarks/bench_tabular_tv.py --reps 2 --structures select
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
from _harness import load_frame
from bench_any_estimator import evaluation_codes, make_models, mean_pairwise_tv
from sklearn.model_selection import train_test_split

from skmip import MIPNoiseWrapper, MIPTabularSynthesizer
from skmip.release.domains import infer_domains
from skmip.exceptions import PrivacyWarning


def run(reps, eta, structures, rows=None):
    X, y = load_frame("adult", n_samples=rows)
    rows = []
    for rep in range(reps):
        D, X_te, y_D, y_te = train_test_split(X, y, test_size=0.3, stratify=y, random_state=rep)
        domains = infer_domains([D[c].to_numpy() for c in D.columns] + [y_D], list(D.columns) + ["label"],
                                n_bins=10, kinds={"label": "categorical"})
        real = evaluation_codes(D, y_D, domains)
        half = np.random.default_rng(rep).choice(len(D), size=len(D) // 2, replace=False)
        models = make_models(X)
        hgb_half = models["HistGradientBoosting"].fit(D.iloc[half], y_D[half]).score(X_te, y_te)
        rows.append([rep, "real half of D", f"{mean_pairwise_tv(real[half], real):.4f}", "-", f"{hgb_half:.4f}", "-", "-"])
        for structure in structures:
            accs, fit_s = {}, None
            for name in ("HistGradientBoosting", "RandomForest"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", PrivacyWarning)  # fixed seeds, for the record
                    t0 = time.perf_counter()
                    w = MIPNoiseWrapper(make_models(X)[name], eta=eta, random_state=1000 + rep,
                                        synthesizer=MIPTabularSynthesizer(marginals=structure)).fit(D, y_D)
                    seconds = time.perf_counter() - t0
                assert w.method_ == "synthetic" and w.mip_bound_ == eta
                accs[name] = w.score(X_te, y_te)
                if fit_s is None:
                    fit_s = seconds
                    synth = w.synthesizer_
                    X_s, y_s = synth.sample(len(D), random_state=rep)
                    tv = mean_pairwise_tv(evaluation_codes(X_s, y_s, domains), real)
            rows.append([rep, f'marginals="{structure}" ({len(synth.marginals_)} tables, '
                              f"noise {synth.noise_scale_ * synth.n_train_:.1f} counts/cell, "
                              f"coupling_eta_ {synth.coupling_eta_:.4f})",
                         f"{tv:.4f}", f"{accs['HistGradientBoosting']:.4f}", f"{hgb_half:.4f}",
                         f"{accs['RandomForest']:.4f}", f"{fit_s:.0f}"])
            print(" | ".join(map(str, rows[-1])), flush=True)
    return rows


def main(argv=None):
    parser = H.parser(__doc__, reps=1)
    parser.add_argument("--eta", type=float, default=0.1)
    parser.add_argument("--structures", nargs="+", default=["select", "tree"])
    parser.add_argument("--rows", type=int, default=None, help="adult subsample (default: all 32,561 rows)")
    # --smoke: the label tree on 1,000 rows of adult.
    args = H.parse(parser, argv, blas_threads=1, smoke=dict(rows=1000, structures=["tree"]))
    t0 = time.perf_counter()
    rows = run(args.reps, args.eta, args.structures, args.rows)
    print(f"\n### adult, eta = {args.eta} ({time.perf_counter() - t0:.0f} s)\n")
    print("| rep | release | mean 2-way TV vs D | HGB on synthetic | HGB on real half | forest via wrapper | seconds per fit |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(map(str, r)) + " |")


if __name__ == "__main__":
    main()
