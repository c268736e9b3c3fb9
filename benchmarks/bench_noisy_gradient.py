"""Noisy gradients for scikit-learn GLMs without torch (issue 32, item 2): accuracy and time at eta.

Run (about two minutes on one shared core)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_noisy_gradient.py

1. **adult, full** (all 32,561 rows of the bundled copy, decoded to its string columns; a 70/30
   split stratified on the label, seeds 0-2 (``--reps``)): D is the 70% part (22,792 rows).
   ``make_column_transformer(OneHotEncoder(handle_unknown="ignore") on the string columns,
   StandardScaler on the numbers)`` fitted on D, then ``LogisticRegression(C=0.1)`` trained by
   :func:`skmip.calibration.noisy_gradient.fit_noisy_gradient` on a uniformly random half of D
   (D_train, 11,396 rows) at eta = 0.1 with every default. Targets: >= 0.848 test accuracy,
   <= 300 s wall for the fit (transformers included).
2. **German credit** (the bundled 61-column numeric copy), five stratified 70/30 splits (seeds
   0-4): ``StandardScaler`` fitted on D, ``LogisticRegression(C=0.1)`` on a random half of D
   at eta = 0.1, every default. Target: >= 0.715 mean test accuracy.
3. **German credit, raw columns** through the pipeline of 1 (string columns one-hot, numbers
   scaled), the same five splits: the setting of the DP-SGD row in "Every defense side by side".

``--schedules "64,10,0.5,0,0.5" ...`` instead compares schedules (batch, epochs, step size, clipping
norm with 0 for the default rule, averaged share with 0 for the last iterate) on ``--data``, ``--draws`` noise draws per split:
how the defaults were chosen. ``--torch`` runs skmip.nn's torch DP-SGD at the same noise on
``--data`` (needs the torch extra).

Each row also gives the non-private model on the same D_train (the ceiling) and the printed
``mip_bound`` with the noise multiplier, sample rate and steps of the run. The D_train draw and
the engine's noise use ``random_state=seed`` (reproducible; a release uses ``None``);
``--noise-seeds N`` fits each split N times, the noise of draw ``d`` seeded by ``(seed, d)``, and
prints one row per draw. Every fit starts at the null model of D's labels (the route's default,
``start="prior"``); ``--start zero`` starts from zero. Every fit passes D's features as ``X_pool``, so the descent
runs in D's top principal directions by the route's rule (``subspace="auto"``);
``--all-columns`` trains in every column (the default before). ``--designs`` picks the table's
data sets.
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
import pandas as pd
from _harness import markdown_table
from sklearn.compose import make_column_transformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skmip.calibration.noisy_gradient import NoisyGradientSchedule, fit_noisy_gradient, noise_multiplier_for_eta
from skmip.datasets import load_dataset


def frame_design(name, seed, n_samples=None):
    """(transformer, X_D, y_D, X_test, y_test): a bundled table's raw columns (strings one-hot,
    numbers scaled; the transformer is fitted on D by :func:`one_run`), a stratified 70/30 split."""
    frame, y = H.load_frame(name, n_samples=n_samples, seed=seed)
    X_d, X_te, y_d, y_te = train_test_split(frame, y, test_size=0.3, random_state=seed, stratify=y)
    strings = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    numbers = [c for c in frame.columns if c not in strings]
    ct = make_column_transformer((OneHotEncoder(handle_unknown="ignore"), strings), (StandardScaler(), numbers))
    return ct, X_d, y_d, X_te, y_te


def german_design(seed):
    """(StandardScaler fitted on D, X_D, y_D, X_test, y_test) for German credit."""
    d = load_dataset("german_credit")
    X_d, X_te, y_d, y_te = train_test_split(d.data, d.target, test_size=0.3, random_state=seed, stratify=d.target)
    return StandardScaler(), X_d, y_d, X_te, y_te


def one_run(design, seed, eta, draws=(None,), C=0.1, start="prior", subspace="auto", **settings):
    """Fit the transformer on D, the engine on a random half of D (one fit per noise draw, the
    noise seeded by ``(seed, draw)``, or by ``seed`` for ``draw=None``), starting from the
    null model of D's labels (``start="prior"``, the route's default) or from zero, in D's top
    principal directions (``subspace="auto"``, the route's default, D's features as ``X_pool``) or
    in all the columns (``subspace=None``); accuracies,
    the non-private ceiling, seconds per fit, the last fit's details."""
    transformer, X_d, y_d, X_te, y_te = design
    accs, seconds = [], []
    y_d = np.asarray(y_d)
    rows = np.random.default_rng(seed).permutation(len(y_d))[: len(y_d) // 2]
    for draw in draws:
        began = time.perf_counter()
        Z = transformer.fit(X_d).transform(X_d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the fixed seed's PrivacyWarning
            clf, details = fit_noisy_gradient(
                LogisticRegression(C=C), Z[rows], y_d[rows], n_total=len(y_d), eta=eta, classes=np.unique(y_d),
                y_pool=y_d if start == "prior" else None, X_pool=None if subspace is None else Z, subspace=subspace,
                random_state=seed if draw is None else np.random.default_rng([seed, draw]), **settings)
        seconds.append(time.perf_counter() - began)
        accs.append(clf.score(transformer.transform(X_te), y_te))
    ceiling = LogisticRegression(C=C, max_iter=1000).fit(Z[rows], y_d[rows]).score(transformer.transform(X_te), y_te)
    return accs, ceiling, seconds, details


DESIGNS = {
    "adult": lambda seed: frame_design("adult", seed),
    "adult_4000": lambda seed: frame_design("adult", seed, 4000),
    "german_numeric": german_design,
    "german_onehot": lambda seed: frame_design("german_credit", seed),
}


def schedules(args):
    """``--schedules``: each "batch,epochs,step,clip,average" on ``--data``, ``--draws`` noise draws
    per split (how the defaults were chosen)."""
    rows = []
    for text in args.schedules:
        batch, epochs, step, clip, average = (float(v) for v in text.split(","))
        settings = dict(batch_size=int(batch), n_epochs=int(epochs), learning_rate=step,
                        clip_norm=None if clip == 0 else clip, average=max(average, 1e-12))  # 0: last iterate
        runs = [one_run(DESIGNS[args.data](seed), seed, args.eta, draws=range(args.draws), C=args.C,
                        start=args.start, subspace=None if args.all_columns else "auto", **settings)
                for seed in range(args.seeds)]
        accs = np.concatenate([r[0] for r in runs])
        det = runs[-1][3]
        rows.append([text, f"{det['noise_multiplier']:.2f}", f"{det['clip_norm']:.3f}",
                     f"{accs.mean():.4f}", f"{accs.min():.3f}-{accs.max():.3f}", f"{np.mean([r[1] for r in runs]):.3f}"])
        print(" | ".join(rows[-1]), flush=True)
    print(markdown_table(["batch,epochs,step,clip,average", "sigma", "clip", "test accuracy (mean)",
                          "min-max", "non-private"], rows))


def torch_baseline(args):
    """``--torch``: skmip.nn's torch DP-SGD (``DPSGDLogisticRegression``: Opacus, batches of 64
    expected rows, 10 epochs, clipping 1, step 0.5, no penalty) at the noise multiplier of this
    engine's default schedule, on the same splits and D_train, ``--draws`` draws per split."""
    H.requires("torch", 'pip install "skmip[torch]"')
    from skmip.nn import DPSGDLogisticRegression

    accs, bounds = [], []
    for seed in range(args.seeds):
        transformer, X_d, y_d, X_te, y_te = DESIGNS[args.data](seed)
        Z, y_d = transformer.fit(X_d).transform(X_d), np.asarray(y_d)
        Z, Z_te = (M.toarray() if hasattr(M, "toarray") else M for M in (Z, transformer.transform(X_te)))
        rows = np.random.default_rng(seed).permutation(len(y_d))[: len(y_d) // 2]
        schedule = NoisyGradientSchedule(len(rows), 64, 10)
        sigma, _ = noise_multiplier_for_eta(args.eta, schedule.sample_rate, schedule.n_steps)
        for draw in range(args.draws):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                net = DPSGDLogisticRegression(noise_multiplier=sigma, max_epochs=10, batch_size=64, lr=0.5,
                                              random_state=10 * seed + draw).fit(Z[rows], y_d[rows])
            accs.append(net.score(Z_te, y_te))
            bounds.append(net.mip_bound_)
    print(f"torch DP-SGD on {args.data}: sigma {sigma:.2f}, mip_bound_ <= {max(bounds):.4f}, test accuracy "
          f"{np.mean(accs):.4f} ({min(accs):.3f}-{max(accs):.3f}) over {args.seeds} splits x {args.draws} draws")


def main(argv=None):
    p = H.parser(__doc__, seeds=5, reps=3, quick="adult on 4,000 rows, one adult and two German splits")
    p.add_argument("--eta", type=float, default=0.1)
    p.add_argument("--schedules", nargs="+", default=None,
                   help='compare schedules "batch,epochs,step,clip,average" (clip 0: the default rule)')
    p.add_argument("--data", choices=tuple(DESIGNS), default="german_numeric", help="with --schedules")
    p.add_argument("--draws", type=int, default=2, help="with --schedules: noise draws per split")
    p.add_argument("--torch", action="store_true", help="on --data: skmip.nn's torch DP-SGD at the same noise")
    p.add_argument("--C", type=float, default=0.1, help="with --schedules: LogisticRegression's C (inf: no penalty)")
    p.add_argument("--start", choices=("prior", "zero"), default="prior",
                   help="where the descent starts: the null model of D's labels (the default) or zero")
    p.add_argument("--all-columns", action="store_true",
                   help="train in every column (subspace=None), not in D's top principal directions")
    p.add_argument("--designs", nargs="+", choices=("adult", "german_numeric", "german_onehot"),
                   default=["adult", "german_numeric", "german_onehot"], help="the table's data sets")
    p.add_argument("--noise-seeds", type=int, default=1,
                   help="the table's noise draws per split (1: the noise seeded by the split's seed)")
    args = H.parse(p, argv, quick={"seeds": 2, "reps": 1}, smoke={"seeds": 1})
    if args.torch:
        return torch_baseline(args)
    if args.schedules:
        return schedules(args)
    n_adult = 4000 if args.quick else None
    rows = []
    table = {"adult": (f"adult ({'4,000 rows' if n_adult else 'full'}), one-hot pipeline",
                       lambda seed: frame_design("adult", seed, n_adult), args.reps),
             "german_numeric": ("German credit, StandardScaler", german_design, args.seeds),
             "german_onehot": ("German credit, one-hot pipeline", DESIGNS["german_onehot"], args.seeds)}
    for name, design, splits in (table[key] for key in args.designs):
        draws = (None,) if args.noise_seeds == 1 else range(args.noise_seeds)
        runs = [one_run(design(seed), seed, args.eta, draws=draws, start=args.start,
                        subspace=None if args.all_columns else "auto") for seed in range(splits)]
        for d in range(len(draws)):
            label = f"{name}, {splits} splits" + ("" if len(draws) == 1 else f", noise draw {d}")
            rows.append(_row(label, [r[0][d] for r in runs], [r[1] for r in runs], [r[2][d] for r in runs],
                             runs[-1][3]))
            print(f"{label}: per split " + ", ".join(f"{r[0][d]:.3f}" for r in runs), flush=True)
    print(markdown_table(["data", "test accuracy (mean, min-max)", "non-private, same D_train",
                          "fit seconds, wall (max)", "sigma", "clip", "q", "steps", "mip_bound"], rows))


def _row(name, accs, ceilings, seconds, det):
    accs = np.asarray(accs)
    return [name, f"{accs.mean():.3f} ({accs.min():.3f}-{accs.max():.3f})", f"{np.mean(ceilings):.3f}",
            f"{np.mean(seconds):.1f} (max {np.max(seconds):.1f})", f"{det['noise_multiplier']:.3f}", f"{det['clip_norm']:.3f}",
            f"{det['sample_rate']:.5f}",
            str(det["n_steps"]), f"{det['mip_bound']:.4f}"]


if __name__ == "__main__":
    main()
