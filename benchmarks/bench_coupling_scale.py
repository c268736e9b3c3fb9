"""The coupling calibration at real-data scale (issue 12): cost against the plain fit, full
adult, a scaling curve to 200,000 rows, noise scale in units of the noise shape.

Commands (results and their load in docs/coupling.md, "Cost and scaling"):

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_coupling_scale.py ratio
    python benchmarks/bench_coupling_scale.py bounds
    python benchmarks/bench_coupling_scale.py adult --n-jobs 2 [--point]
    python benchmarks/bench_coupling_scale.py scaling --n-jobs 2 [--plot docs/figures/coupling_scaling.png]
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_coupling_scale.py engine
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_coupling_scale.py million --n-jobs 2
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_coupling_scale.py pipeline --n-jobs 2 [--adult-sizes ...]

``ratio``: breast cancer (standardized, the README quickstart's 75/25 split),
``LogisticRegression(C=0.1)``, eta = 0.1, the wrapper's defaults, one core: wrapper fit time
over the plain fit's median time, measured side by side, the noise scale and the test
accuracy over 50 noise draws, for the default (designed) noise shape and the covariance one.
``adult``: all 22,792 training rows of a 70/30 split, standardized, C = 0.1; one
calibration serves eta = 0.1 and 0.05 (:func:`skmip.mip_noise_path`, five noise draws each);
test accuracy against the non-private model. ``--point`` calibrates to the point estimate
(``confidence=None``, 20 draws each): the accuracy no number of rounds can beat under the
coupling bound, since the confidence statement only adds noise to it.
``scaling``: one wrapper fit (eta = 0.1) per n on synthetic logistic data (d = 50) and on
adult subsamples; time against n on log-log axes (slope), noise scale in units of the noise shape.
``engine``: the ``"newton"`` engine against exact refits on the same pairs, in the designed and
the covariance noise shape (breast cancer) and in the designed one (an adult subsample).
``million`` (issue 24): the default wrapper fit of ``LogisticRegression(C=0.1)``, eta = 0.1,
on synthetic logistic data with d = 20 features, n = 10,000 to 1,000,000 (``--sizes``), each
in a fresh process: wall time, the process's CPU time, its peak resident memory
(``ru_maxrss``, threads included) and the peak of the proportional set size summed over it and
any child processes (sampled every 0.5 s), against the data's own size.
``pipeline`` (issue 33): the recipe tabular users run, adult as a DataFrame (70/30 stratified
split, seed 0; a seeded subsample of the training part for each n of ``--adult-sizes``),
``make_column_transformer(OneHotEncoder(handle_unknown="ignore") on the string columns,
StandardScaler on the numbers)`` + ``LogisticRegression(C=0.1)``, eta = 0.1, ``method="coupling"``, every other
default: the wrapper's wall and CPU time (rounds run in threads: the process's CPU time is
all of it) against the plain pipeline's CPU time, the noise scale, the printed bound and the
test accuracy, and the log-log slope of wall time against n.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import _harness as H  # the script's folder is on sys.path
from _harness import loglog_slope, markdown_table, median_time, split_scaled, timed

from skmip import MIPNoiseWrapper, mip_noise_path
from skmip.exceptions import PrivacyWarning

_load = H.load_average
SMOKE_ARGV = ["ratio"]  # the subcommand the test suite's smoke run takes


def bench_ratio(n_rounds=None, shapes=("auto", "full"), draws=50, plain_repeats=20):
    """Wrapper fit against the plain fit, per noise shape, side by side in one run; test
    accuracy over ``draws`` noise draws of one calibration (``mip_noise_path``)."""
    X, y = load_breast_cancer(return_X_y=True)
    X_tr, X_te, y_tr, y_te = train_test_split(StandardScaler().fit_transform(X), y, random_state=0)
    kw = {} if n_rounds is None else {"n_rounds": n_rounds}
    rows = []
    for shape in shapes:
        plain = median_time(lambda: LogisticRegression(C=0.1).fit(X_tr, y_tr), plain_repeats)
        plain_cpu = _median_cpu(lambda: LogisticRegression(C=0.1).fit(X_tr, y_tr), plain_repeats)
        cpu = time.process_time()
        w, t = timed(MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.1, random_state=0, noise_shape=shape,
                                     **kw).fit, X_tr, y_tr)
        cpu = time.process_time() - cpu
        path = mip_noise_path(LogisticRegression(C=0.1), X_tr, y_tr, etas=[0.1] * draws, random_state=0,
                              noise_shape=shape, **kw)
        acc = np.array([m.score(X_te, y_te) for m in path])
        rows.append([shape, f"{plain * 1e3:.2f} ms", f"{t:.2f} s", f"{t / plain:.0f}x", f"{plain_cpu * 1e3:.2f} ms",
                     f"{cpu:.2f} s", f"{cpu / plain_cpu:.0f}x", repr(w.noise_scale_), repr(w.coupling_eta_upper_),
                     f"{w.noise_scale_point_:.2f}", f"{acc.mean():.3f} +- {acc.std(ddof=1) / np.sqrt(draws):.3f}",
                     f"{_load():.1f}"])
    print(markdown_table(["noise_shape", f"plain fit (median of {plain_repeats})", "wrapper fit", "ratio",
                          "plain fit CPU", "wrapper fit CPU", "CPU ratio", "noise scale s", "eta upper",
                          "point-estimate s", f"test acc ({draws} noise draws)", "load"], rows))


def _median_cpu(fn, repeats):
    """Median CPU time (``time.process_time``) of ``repeats`` calls, after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return float(np.median(times))


def bench_bounds(ms=(200, 300, 400, 600, 1000)):
    """Noise scale at eta = 0.1 from the same rounds cut to m: betting against Maurer-Pontil."""
    from skmip.bounds import coupling_noise_scale
    from skmip.calibration.spread.noise_factor import estimate_noise_factor
    from skmip.calibration.swap import estimate_swap_deltas

    X, y = load_breast_cancer(return_X_y=True)
    X_tr, _, y_tr, _ = train_test_split(StandardScaler().fit_transform(X), y, random_state=0)
    est, k = LogisticRegression(C=0.1), len(X_tr) // 2
    L = estimate_noise_factor(est, X_tr, y_tr, train_size=k, n_subsets=128, random_state=1, polish=True)
    d = estimate_swap_deltas(est, X_tr, y_tr, scale=L, train_size=k, n_rounds=max(ms), random_state=2,
                             polish=True)
    rows = []
    for m in ms:
        cal = {b: coupling_noise_scale(d.distances[:, :m], 0.1, train_fraction=d.train_fraction, bound=b)
               for b in ("betting", "maurer-pontil")}
        point = cal["betting"].noise_scale_point
        rows.append([m] + [f"{cal[b].noise_scale:.2f} ({cal[b].noise_scale / point:.2f}x)"
                           for b in ("betting", "maurer-pontil")] + [f"{point:.2f}"])
    print(markdown_table(["rounds m", "betting", "Maurer & Pontil", "point estimate"], rows))


def bench_adult(n_jobs, point=False, n_samples=None, n_rounds=None, draws=None):
    X_tr, X_te, y_tr, y_te = split_scaled("adult", n_samples=n_samples)
    base, t0 = timed(LogisticRegression(C=0.1).fit, X_tr, y_tr)
    draws = draws or (20 if point else 5)
    etas = [0.1] * draws + [0.05] * draws
    kw = {} if n_rounds is None else {"n_rounds": n_rounds}
    path, t = timed(mip_noise_path, LogisticRegression(C=0.1), X_tr, y_tr, etas=etas, n_jobs=n_jobs,
                    verbose=1, random_state=0, confidence=None if point else 0.95, **kw)
    rows = []
    for eta in (0.1, 0.05):
        ws = [w for w in path if w.mip_bound_ == eta]
        acc = np.array([w.score(X_te, y_te) for w in ws])
        rows.append([eta, f"{X_tr.shape[0]:,}", f"{t:.0f} s", f"{base.score(X_te, y_te):.3f}",
                     f"{acc.mean():.3f} +- {acc.std(ddof=1) / np.sqrt(acc.size):.3f}",
                     f"{ws[0].noise_scale_:.2f}",
                     "none (point)" if point else f"{max(w.coupling_eta_upper_ for w in ws):.4f}"])
    print(f"plain fit {t0:.2f} s; one calibration for both eta (mip_noise_path); load {_load():.1f}")
    print(markdown_table(["eta", "training rows", "calibration + fit", "non-private acc",
                          f"private acc (mean of {draws} draws)", "noise scale s", "eta upper"], rows))


def _adult_pipeline(n):
    """``(pipeline, X_tr, X_te, y_tr, y_te)``: issue 33's recipe on n training rows of adult."""
    from sklearn.compose import make_column_transformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    X, y = H.load_frame("adult")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    if n < len(X_tr):
        rows = np.sort(np.random.default_rng(0).choice(len(X_tr), n, replace=False))
        X_tr, y_tr = X_tr.iloc[rows], y_tr[rows]
    cats = [c for c in X.columns if X[c].dtype.kind not in "biuf"]
    nums = [c for c in X.columns if c not in cats]
    pipe = make_pipeline(make_column_transformer((OneHotEncoder(handle_unknown="ignore"), cats),
                                                 (StandardScaler(), nums)), LogisticRegression(C=0.1))
    return pipe, X_tr, X_te, y_tr, y_te


def bench_pipeline(n_jobs, sizes, n_rounds=None):
    """Issue 33's adult pipeline under the default coupling calibration, per training size."""
    from sklearn.base import clone

    kw = {} if n_rounds is None else {"n_rounds": n_rounds}
    rows, walls = [], []
    for n in sizes:
        pipe, X_tr, X_te, y_tr, y_te = _adult_pipeline(n)
        cpu0 = time.process_time()
        plain = clone(pipe).fit(X_tr, y_tr)
        plain_cpu = time.process_time() - cpu0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        # method="coupling": the issue measures this route ("auto" may choose noisy gradients here).
        w = MIPNoiseWrapper(pipe, eta=0.1, n_jobs=n_jobs, random_state=0, method="coupling", **kw).fit(X_tr, y_tr)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        walls.append(wall)
        rows.append([f"{len(X_tr):,}", f"{wall:.0f} s", f"{cpu:.0f} s", f"{plain_cpu:.2f} s", f"{cpu / plain_cpu:.0f}x",
                     f"{w.noise_scale_:.6f}", f"{w.coupling_eta_upper_:.5f}", f"{w.score(X_te, y_te):.4f}",
                     f"{plain.score(X_te, y_te):.4f}", f"{_load():.1f}"])
        print(" | ".join(rows[-1]), flush=True)  # each size as it is done (the full split takes long)
    print(markdown_table(["training rows", "wall", "CPU", "plain fit CPU", "CPU ratio", "noise scale s",
                          "eta upper", "test acc", "plain acc", "load"], rows))
    if len(sizes) > 1:
        print(f"log-log slope of wall time against n: {loglog_slope([int(r[0].replace(',', '')) for r in rows], walls):.2f}")


def bench_engine(shapes=("design", "full"), bc_rounds=12, adult_rows=1500, adult_rounds=4, pairs=(8, 4)):
    """The ``"newton"`` engine against exact refits on the same (x*, e) pairs, per noise shape:
    per-pair and per-target ratios, and the point-estimate scale at eta = 0.1 of each."""
    from skmip.bounds import coupling_noise_scale
    from skmip.calibration.noise_shape import design_noise_factor
    from skmip.calibration.spread.noise_factor import estimate_noise_factor
    from skmip.calibration.swap import estimate_swap_deltas

    X, y = load_breast_cancer(return_X_y=True)
    X_bc, _, y_bc, _ = train_test_split(StandardScaler().fit_transform(X), y, random_state=0)
    X_ad, _, y_ad, _ = split_scaled("adult")
    rows_ad = np.random.default_rng(adult_rows).permutation(len(X_ad))[:adult_rows]
    cases = [("breast cancer", X_bc, y_bc, bc_rounds, pairs[0], shapes),
             (f"adult ({adult_rows:,} rows)", X_ad[rows_ad], y_ad[rows_ad], adult_rounds, pairs[1], shapes[:1])]
    rows = []
    for name, X, y, rounds, pairs, case_shapes in cases:
        est, k = LogisticRegression(C=0.1, solver="newton-cholesky", tol=1e-12), len(X) // 2
        for shape in case_shapes:
            L = (design_noise_factor(est, X, y, train_size=k) if shape == "design" else
                 estimate_noise_factor(est, X, y, train_size=k, n_subsets=128, random_state=1, polish=True))
            d, t = {}, {}
            for engine in ("newton", "refit"):
                d[engine], t[engine] = timed(estimate_swap_deltas, est, X, y, scale=L, train_size=k, n_rounds=rounds,
                                             random_state=2, engine=engine, pairs_per_target=pairs,
                                             summary_size=pairs, polish=True)
            a, b = d["newton"].distances, d["refit"].distances
            pair = np.quantile(a / b, [0, 0.01, 0.5, 0.99, 1])
            target = np.quantile(a.mean(axis=(1, 2)) / b.mean(axis=(1, 2)), [0, 0.01, 0.99, 1])
            s = [coupling_noise_scale(v, 0.1, train_fraction=k / len(X), confidence=None).noise_scale for v in (a, b)]
            rows.append([name, shape, f"{rounds} x {len(X)} x {pairs}", " / ".join(f"{q:.3f}" for q in pair),
                         " / ".join(f"{q:.3f}" for q in target), f"{s[0] / s[1]:.4f}", f"{t['refit']:.0f} s"])
            print(rows[-1], flush=True)
    print(markdown_table(["data", "shape", "rounds x targets x pairs", "per pair: min / 1% / median / 99% / max",
                          "per target: min / 1% / 99% / max", "s_point newton / refits'", "refit time"], rows))


def _synthetic(n, d=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d) / np.sqrt(d)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * X @ w))).astype(int)
    return X, y


def bench_scaling(n_jobs, sizes, adult_sizes, plot=None, n_rounds=None):
    rows, curves = [], {}
    kw = {} if n_rounds is None else {"n_rounds": n_rounds}
    X_ad, _, y_ad, _ = split_scaled("adult")
    for data, ns in (("synthetic d=50", sizes), ("adult", adult_sizes)):
        if not ns:
            continue
        times, scales = [], []
        for n in ns:
            if data == "adult":
                idx = np.random.default_rng(n).permutation(len(X_ad))[:n]
                X, y = X_ad[idx], y_ad[idx]
            else:
                X, y = _synthetic(n)
            w, t = timed(MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.1, n_jobs=n_jobs, random_state=0, **kw).fit,
                         X, y)
            times.append(t)
            scales.append(w.noise_scale_)
            rows.append([data, f"{n:,}", f"{t:.1f} s", f"{w.noise_scale_:.2f}", f"{w.noise_scale_point_:.2f}",
                         f"{w.coupling_eta_upper_:.4f}", f"{_load():.1f}"])
            print(rows[-1], flush=True)
        curves[data] = (ns, times, scales)
    print(markdown_table(["data", "n", "wrapper fit", "noise scale s", "point-estimate s", "eta upper", "load"], rows))
    for data, (ns, times, _) in curves.items():
        print(f"{data}: log-log slope of time against n = {loglog_slope(ns, times):.2f}")
    if plot:
        plot_scaling(curves, n_jobs, plot)


def plot_scaling(curves, n_jobs, path):
    """Time against n (log-log, with the fitted slope) and the noise scale against n."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    for data, (ns, times, scales) in curves.items():
        a.loglog(ns, times, "o-", label=f"{data} (slope {loglog_slope(ns, times):.2f})")
        b.semilogx(ns, scales, "o-", label=data)
    a.set(xlabel="rows n", ylabel="MIPNoiseWrapper fit (s)", title=f"one calibration, n_jobs={n_jobs}")
    b.set(xlabel="rows n", ylabel="noise scale s (units of the noise shape)", title="eta = 0.1, 95% confidence")
    a.legend()
    b.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def _logistic_d20(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 20))
    w = rng.normal(size=20) / np.sqrt(20)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * X @ w))).astype(int)
    return X, y


def _tree_pss_mb(root):
    """Proportional set size (MB) of ``root`` and its descendants (shared pages split); the
    children are read from /proc/<pid>/task/*/children (cheap: the sampler must not compete
    with the fit for the interpreter)."""
    todo, total = [root], 0
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                total += sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return total / 1024


def _one_million_run(n, n_jobs):
    """One wrapper fit in this process; prints a JSON line (``million`` runs it in a child)."""
    import json
    import resource
    import threading

    X, y = _logistic_d20(n)
    peak, stop = [0.0], threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_pss_mb(os.getpid()))
            stop.wait(0.5)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    cpu, start = time.process_time(), time.perf_counter()
    w = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.1, n_jobs=n_jobs, random_state=0).fit(X, y)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    stop.set()
    watcher.join()
    print(json.dumps({"n": n, "wall": wall, "cpu": cpu, "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "pss_mb": peak[0], "data_mb": X.nbytes / 2**20, "noise_scale": w.noise_scale_,
                      "eta_upper": w.coupling_eta_upper_, "load": H.load_average()}), flush=True)


def bench_million(n_jobs, sizes):
    import json
    import subprocess

    rows = []
    for n in sizes:
        out = subprocess.run([sys.executable, __file__, "_one", "--n-jobs", str(n_jobs), "--sizes", str(n)],
                             capture_output=True, text=True, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        rows.append([f"{n:,}", f"{r['wall']:.1f} s", f"{r['cpu']:.0f} s", f"{r['maxrss_mb']:,.0f} MB",
                     f"{r['pss_mb']:,.0f} MB", f"{r['data_mb']:.0f} MB", f"{r['noise_scale']:.4f}",
                     f"{r['eta_upper']:.4f}", f"{r['load']:.1f}"])
        print(rows[-1], flush=True)
    print(markdown_table(["n", "wall", "CPU", "peak RSS", "peak PSS (tree)", "X", "noise scale s",
                          "eta upper", "load"], rows))


def main(argv=None):
    p = H.parser(__doc__, n_jobs=1)
    p.add_argument("what", choices=("ratio", "bounds", "adult", "scaling", "engine", "million", "pipeline", "_one"))
    p.add_argument("--n-rounds", type=int, default=None, help="ratio: override the wrapper's n_rounds")
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000, 30000, 100000, 200000])
    p.add_argument("--adult-sizes", type=int, nargs="+", default=[1000, 3000, 10000, 22792])
    p.add_argument("--plot", help="scaling: write the figure here")
    p.add_argument("--point", action="store_true", help="adult: calibrate to the point estimate")
    # --smoke: every subcommand small (ratio: 80 rounds, the default shape, 3 noise draws;
    # adult: 1,000 rows, 200 rounds, 2 draws; engine: 2 rounds of 1 pair; scaling: 80 rounds, 500
    # and 1,000 synthetic rows, no adult (small subsamples need the full rounds); million: 500 and
    # 1,000 rows).
    args = H.parse(p, argv, smoke=dict(n_rounds=80, sizes=[500, 1000], adult_sizes=[]))
    small = args.smoke
    warnings.simplefilter("ignore", PrivacyWarning)  # the benchmarks fix random_state on purpose
    if args.what == "ratio":
        bench_ratio(args.n_rounds, **(dict(shapes=("auto",), draws=3, plain_repeats=3) if small else {}))
    elif args.what == "bounds":
        bench_bounds(**(dict(ms=(120, 150)) if small else {}))
    elif args.what == "adult":
        bench_adult(args.n_jobs, args.point, **(dict(n_samples=1000, n_rounds=200, draws=2) if small else {}))
    elif args.what == "engine":
        bench_engine(**(dict(bc_rounds=2, adult_rows=300, adult_rounds=2, pairs=(1, 1)) if small else {}))
    elif args.what == "million":
        bench_million(args.n_jobs, args.sizes if args.sizes != p.get_default("sizes")
                      else [10000, 30000, 100000, 300000, 1000000])
    elif args.what == "pipeline":
        bench_pipeline(args.n_jobs, [1000] if small else (args.adult_sizes if args.adult_sizes != p.get_default(
            "adult_sizes") else [2000, 4000, 8000, 22792]), n_rounds=args.n_rounds if small else None)
    elif args.what == "_one":
        _one_million_run(args.sizes[0], args.n_jobs)
    else:
        bench_scaling(args.n_jobs, args.sizes, args.adult_sizes, args.plot, n_rounds=args.n_rounds if small else None)


if __name__ == "__main__":
    main()
