"""What every benchmark shares: its command line, thread pinning, the machine/commit header,
timing side by side, peak memory, markdown tables, results files, real data and the smoke mode.

A benchmark builds its command line with :func:`parser` (``--smoke`` and the common flags
``--quick``, ``--seed``, ``--n-jobs``, ``--reps``/``--repeats``/``--seeds``, ``--out``,
``--plots``, ``--threads``, with the script's own defaults) and reads it with :func:`parse`,
which applies the script's smoke settings, pins BLAS threads and prints the header line.

``--smoke`` runs a script on its smallest sizes in seconds, to show that it still runs; it
writes its results files under ``benchmarks/results/smoke/`` (git ignores
``benchmarks/results/``; ``SKMIP_BENCH_SMOKE_DIR`` names another folder). Run every benchmark that way, in one process::

    python benchmarks/_harness.py                 # all of them
    python benchmarks/_harness.py bench_wrapper   # some of them

``tests/test_benchmarks.py`` does so and checks each script's outcome.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
import traceback
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"  # git-ignored
SMOKE_RESULTS = Path(os.environ.get("SKMIP_BENCH_SMOKE_DIR") or RESULTS / "smoke")  # the tests pass a temporary one
#: Packages some benchmarks need and skmip does not: without them a benchmark is skipped.
OPTIONAL = ("torch", "skorch", "opacus", "dp_accounting", "art", "privacy_meter", "matplotlib")
_STATE = {"smoke": False}


class MissingDependency(SystemExit):
    """A benchmark's optional package is not installed (exits with its install line)."""


def requires(module, install):
    """Import ``module`` or stop with the line that installs it (``install``)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(f"{Path(sys.argv[0]).stem} needs {module}: {install}") from exc


# --------------------------------------------------------------------------- command line
#: Common flags: attribute -> (option, argparse keywords). A script asks for the ones it has
#: with its own default: ``parser(__doc__, seed=0, n_jobs=2, quick="fewer models")``.
COMMON = {
    "quick": ("--quick", dict(action="store_true")),
    "seed": ("--seed", dict(type=int, help="seed of the data, the game and the noise")),
    "n_jobs": ("--n-jobs", dict(type=int, help="joblib workers")),
    "reps": ("--reps", dict(type=int, help="repetitions (splits of the data)")),
    "repeats": ("--repeats", dict(type=int, help="repeated runs (timings: interleaved)")),
    "seeds": ("--seeds", dict(type=int, help="seeds per point")),
    "out": ("--out", dict(help="where the results are written")),
    "plots": ("--plots", dict(default=None, help="directory for PNG figures (needs matplotlib)")),
    "threads": ("--threads", dict(type=int, help="torch intra-op threads")),
}


def parser(doc=None, **common):
    """An ``ArgumentParser`` described by ``doc``'s first line, with ``--smoke`` and the
    common flags named in ``common`` (attribute -> default; for ``quick``, its help text;
    a ``(default, help)`` pair replaces the generic help)."""
    p = argparse.ArgumentParser(description=(doc or "").strip().split("\n")[0] or None)
    p.add_argument("--smoke", action="store_true",
                   help="run in seconds on the smallest sizes (a check that the script runs)")
    for name, value in common.items():
        option, kwargs = COMMON[name]
        kwargs = dict(kwargs)
        if isinstance(value, tuple):
            value, kwargs["help"] = value
        if name == "quick":
            kwargs["help"] = value
        else:
            kwargs["default"] = value
        p.add_argument(option, **kwargs)
    return p


def parse(p, argv=None, *, quick=None, smoke=None, blas_threads=None):
    """Parse ``argv`` and print the header line.

    With ``--quick`` (and under ``--smoke``, which implies it) the attributes in ``quick`` are
    set, then under ``--smoke`` those in ``smoke`` that the command line does not give (so
    ``--smoke --only glm`` runs the glm part small); BLAS is pinned to one thread under
    ``--smoke``, else to ``blas_threads`` if given."""
    args = p.parse_args(argv)
    given = _given(p, argv)
    _STATE["smoke"] = bool(args.smoke)
    if args.smoke and hasattr(args, "quick"):
        args.quick = True
    for wanted, settings in ((getattr(args, "quick", False), quick), (args.smoke, smoke)):
        for name, value in (settings or {}).items() if wanted else ():
            if not hasattr(args, name):
                raise AttributeError(f"setting {name!r} is not an option of {p.prog}")
            if settings is quick or name not in given:
                setattr(args, name, value)
    if args.smoke:
        blas_threads = 1
    if blas_threads:
        pin_threads(blas_threads)
    print(header(argv), flush=True)
    return args


def _given(p, argv):
    """Names of the options that ``argv`` gives: parsed once more with every default
    suppressed, the namespace holds those only."""
    saved = [(a, a.default) for a in p._actions]
    try:
        for a, _ in saved:
            a.default = argparse.SUPPRESS
        return set(vars(p.parse_args(argv)))
    finally:
        for a, default in saved:
            a.default = default


def smoke():
    """Whether this run is a ``--smoke`` run."""
    return _STATE["smoke"]


def pin_threads(n=1, *, force=False):
    """Limit BLAS/OpenMP to ``n`` threads: in this process (threadpoolctl, works after numpy is
    loaded) and in worker processes started later (the environment; ``force`` overrides values
    already set). Parallel benchmarks use joblib workers, not BLAS threads."""
    from threadpoolctl import threadpool_limits

    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if force:
            os.environ[var] = str(n)
        else:
            os.environ.setdefault(var, str(n))
    threadpool_limits(n)


# --------------------------------------------------------------------------- the machine
def load_average():
    """One-minute load average, nan where the OS has none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return float("nan")


def commit():
    """Short commit of the checkout whose ``skmip`` is measured (``+`` when its tree has
    changes), or ``unknown``: the tree ``PYTHONPATH`` points at, which a side-by-side run
    sets, not the one the script lies in."""
    import skmip

    try:
        where = Path(skmip.__file__).resolve().parent
        run = lambda *a: subprocess.run(["git", *a], cwd=where, capture_output=True, text=True,  # noqa: E731
                                        timeout=10).stdout.strip()
        sha = run("rev-parse", "--short", "HEAD")
        return (sha + ("+" if run("status", "--porcelain", "--untracked-files=no") else "")) or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def header(argv=None):
    """One line: the command, the commit, the versions and the machine with its load."""
    import sklearn

    args = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *args])
    return (f"# `{command}`: commit {commit()}, Python {platform.python_version()}, numpy {np.__version__}, "
            f"scikit-learn {sklearn.__version__}; {platform.machine()}, {os.cpu_count()} CPU(s), "
            f"load {load_average():.1f}")


# --------------------------------------------------------------------------- measuring
def timed(fn, *args, **kwargs):
    """``(result, seconds)`` of one call, wall clock."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def cpu_fit(estimator, X, y):
    """Fit ``estimator`` on ``(X, y)`` with its warnings silenced: its CPU seconds
    (``time.process_time``, the measure of runs side by side on a shared machine)."""
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        estimator.fit(X, y)
    return time.process_time() - start


def median_time(fn, repeats=20):
    """Median wall time of ``repeats`` calls (small, fast operations), after one untimed call
    (the first call in a process pays for imports and caches)."""
    fn()
    return float(np.median([timed(fn)[1] for _ in range(repeats)]))


def side_by_side(fns, repeats, stat=min):
    """``(times, results)``: ``stat`` (default: the best) of each function's wall times over
    ``repeats`` rounds that run every function once, interleaved, so that a change in the
    machine's load hits all of them alike; ``results`` are the last round's outputs."""
    times, outs = [[] for _ in fns], [None] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            outs[i], t = timed(fn)
            times[i].append(t)
    return [float(stat(t)) for t in times], outs


def peak_memory(fn):
    """``(result, bytes)``: the peak that ``fn`` allocates above what was live when it started
    (tracemalloc: Python and numpy allocations)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        result = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return result, peak


def loglog_slope(x, y):
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(y, float)), 1)[0])


# --------------------------------------------------------------------------- reporting
def markdown_table(header, rows):
    """A GitHub-flavoured markdown table from a header and rows of cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def results_path(name):
    """``benchmarks/results/NAME`` (``results/smoke/NAME`` in a smoke run), its folder made."""
    path = (SMOKE_RESULTS if smoke() else RESULTS) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_results(name, text):
    """Write ``text`` to :func:`results_path` ``(name)``; returns the path."""
    path = results_path(name)
    path.write_text(text.rstrip("\n") + "\n")
    return path


# --------------------------------------------------------------------------- data
def split_scaled(name, *, scaler="standard", test_size=0.3, n_samples=None, seed=0):
    """``(X_tr, X_te, y_tr, y_te)`` of a bundled dataset, stratified, the scaler fitted on the
    training part only (a public preprocessing choice for the release)."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import MinMaxScaler, StandardScaler

    from skmip.datasets import load_dataset

    d = load_dataset(name, n_samples=n_samples, random_state=seed)
    X_tr, X_te, y_tr, y_te = train_test_split(
        d.data, d.target, test_size=test_size, random_state=seed, stratify=d.target
    )
    s = {"standard": StandardScaler, "minmax": MinMaxScaler}[scaler]().fit(X_tr)
    return s.transform(X_tr), s.transform(X_te), y_tr, y_te


def load_frame(name, n_samples=None, seed=0):
    """``(DataFrame, y)`` of a bundled tabular dataset with its categorical columns as strings.

    The bundled copies are one-hot encoded (``"column=value"`` blocks, public category lists);
    this undoes that encoding, so that a synthesizer sees the table as it was published.
    """
    import pandas as pd

    from skmip.datasets import load_dataset

    d = load_dataset(name, n_samples=n_samples, random_state=seed)
    names = [str(n) for n in d.feature_names]
    columns, order = {}, []
    for i, n in enumerate(names):
        col = n.split("=", 1)[0]
        if col not in order:
            order.append(col)
        if "=" in n:
            columns.setdefault(col, []).append(i)
    frame = {}
    for col in order:
        if col in columns:
            block = columns[col]
            labels = np.array([names[i].split("=", 1)[1] for i in block], dtype=object)
            frame[col] = labels[np.argmax(d.data[:, block], axis=1)]
        else:
            frame[col] = d.data[:, names.index(col)]
    return pd.DataFrame(frame), d.target


# --------------------------------------------------------------------------- smoke runs
def benchmarks():
    """Names of the benchmark scripts (``bench_*.py`` and ``reproduce.py``), sorted."""
    return sorted(p.stem for p in HERE.glob("bench_*.py")) + ["reproduce"]


def _missing_optional(exc):
    name = getattr(exc, "name", None) or ""
    return name.split(".")[0] in OPTIONAL


def smoke_one(name, help_only=False):
    """Run ``benchmarks/NAME.py --smoke`` in this process (its ``main(argv)``); returns
    ``{"status": "ok" | "skipped" | "failed", "seconds", "detail"}``. ``help_only`` imports
    the script and runs its argument parser only (``--help``)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    path = HERE / f"{name}.py"
    t0 = time.perf_counter()
    saved = sys.argv
    status, detail = "ok", ""
    try:
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        argv = list(getattr(module, "SMOKE_ARGV", [])) + ["--smoke"] + (["--help"] if help_only else [])
        sys.argv = [str(path), *argv]
        code = module.main(argv)
        if code:
            status, detail = "failed", f"main returned {code}"
    except MissingDependency as exc:
        status, detail = "skipped", str(exc)
    except ImportError as exc:
        sys.modules.pop(name, None)
        if _missing_optional(exc):
            status, detail = "skipped", f"needs {exc.name}"
        else:
            status, detail = "failed", traceback.format_exc(limit=-8)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            status, detail = "failed", f"exit {exc.code}"
    except Exception:  # noqa: BLE001 - reported, never hidden
        status, detail = "failed", traceback.format_exc(limit=-8)
    finally:
        sys.argv = saved
    return {"status": status, "seconds": round(time.perf_counter() - t0, 2), "detail": detail}


def main(argv=None):
    p = argparse.ArgumentParser(description="Run benchmarks in smoke mode, one process.")
    p.add_argument("names", nargs="*", help="benchmarks (default: all)")
    p.add_argument("--help-only", nargs="*", default=[], metavar="NAME",
                   help="of these, import the script and run its argument parser only")
    p.add_argument("--json", help="write {name: outcome} here")
    args = p.parse_args(argv)
    pin_threads(1)
    outcomes = {}
    for name in args.names or benchmarks():
        print(f"\n===== {name} --smoke", flush=True)
        outcomes[name] = smoke_one(name, help_only=name in args.help_only)
        print(f"===== {name}: {outcomes[name]['status']} in {outcomes[name]['seconds']} s "
              f"{outcomes[name]['detail']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(outcomes, indent=1))
    print("\n" + markdown_table(["benchmark", "smoke run", "seconds"],
                                [[n, o["status"], o["seconds"]] for n, o in outcomes.items()]))
    return int(any(o["status"] == "failed" for o in outcomes.values()))


if __name__ == "__main__":
    # Run as the module the benchmarks import (``_harness``), not as a second copy (``__main__``):
    # one MissingDependency class and one smoke flag.
    sys.path.insert(0, str(HERE))
    import _harness

    sys.exit(_harness.main())
