"""Adversarial exact audit of every printed eta: search worst-case datasets for a violation.

For each case of ``skmip.audit.attacks.exact_audit_suite.make_cases`` (a tiny worst-case dataset,
n = 9-12, and a release route that prints eta: MIPNoiseWrapper with every learner calibrated
by coupling, MIPNoiseWrapperCV, MIPGaussianSynthesizer, MIPMarginalSynthesizer), fit the
route, enumerate all C(n, k) training sets, refit them with an independent exact minimiser,
and compute the Bayes-optimal attacker's accuracy for every record (exact posterior, Monte
Carlo over releases). A *violation* is a record whose advantage exceeds the printed bound
by more than 3 Monte-Carlo standard errors (one-sided).

Run (1,000 datasets on 2 cores)::

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_exact_audit.py --n-datasets 1000 --n-jobs 2

It prints a Markdown table per learner and writes every case's result as JSON lines to
``benchmarks/results/exact_audit_suite.jsonl`` and the table to
``benchmarks/results/exact_audit_suite.md`` (ignored by git); ``docs/exact_audits.md``
quotes the table with the command. The gamma-vs-Laplace radius audits of the moments noise
are in ``bench_exact_audit_radius.py``.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import _harness as H  # the script's folder is on sys.path
from joblib import Parallel, delayed

from skmip.audit.attacks.exact_audit_suite import LEARNERS, make_cases, run_case


def _run(case, n_mc, z):
    try:
        return run_case(case, n_mc=n_mc, z=z)
    except Exception as exc:  # an audit failure is reported, never hidden
        return {"learner": case.learner, "generator": case.generator, "seed": case.seed,
                "audit_error": f"{type(exc).__name__}: {str(exc)[:300]}"}


def summarise(rows):
    """Per learner: searched, refused, violations, worst ratio (with its Monte-Carlo error)."""
    by = defaultdict(list)
    for r in rows:
        by[r["learner"]].append(r)
    lines = [
        "| learner | datasets audited | no promise printed, or noise below the audit's precision | refused / crashed | violations | worst advantage / printed bound (± MC) | worst case |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    total = defaultdict(int)
    for name in [k for k in LEARNERS if k in by] + sorted(set(by) - set(LEARNERS)):
        rs = by[name]
        ok = [r for r in rs if "ratio" in r]
        refused = [r for r in rs if "error" in r and r["error"].startswith("every calibration failed")]
        crashed = [r for r in rs if "error" in r and not r["error"].startswith("every calibration failed")]
        broken = [r for r in rs if "audit_error" in r]
        silent = [r for r in rs if r.get("no_promise") or r.get("below_precision")]
        total["no promise"] += len(silent)
        viol = [r for r in ok if r["violation"]]
        total["audited"] += len(ok)
        total["refused"] += len(refused)
        total["crashed"] += len(crashed)
        total["violations"] += len(viol)
        if ok:
            w = max(ok, key=lambda r: r["ratio"])
            worst = f"{w['ratio']:.3f} ± {w['ratio_se']:.3f}"
            where = f"{w['generator']}, n={w['n']}, k={w['k']}, eta={w['eta']}, {w['params']}"
        else:
            worst, where = "-", "-"
        extra = f" ({len(broken)} audit errors)" if broken else ""
        lines.append(f"| {name} | {len(ok)} | {len(silent)} | {len(refused)} / {len(crashed)} | {len(viol)}{extra} "
                     f"| {worst} | {where} |")
    lines.append(f"| **all** | {total['audited']} | {total['no promise']} | {total['refused']} / {total['crashed']} "
                 f"| {total['violations']} | | |")
    return lines


def main(argv=None):
    p = H.parser(__doc__, seed=0, n_jobs=2, out=str(H.RESULTS / "exact_audit_suite"))
    p.add_argument("--n-datasets", type=int, default=1000, help="cases to audit (default 1000)")
    p.add_argument("--n-mc", type=int, default=10_000, help="releases drawn per audit (default 10,000)")
    p.add_argument("--z", type=float, default=3.0, help="violation threshold in standard errors")
    p.add_argument("--learners", nargs="*", default=None, help=f"restrict to these of: {', '.join(LEARNERS)}")
    p.add_argument("--summarise", metavar="JSONL", help="only print the table of an earlier run's JSON lines")
    # --smoke: two cases, 200 releases each, one process, written under results/smoke/.
    args = H.parse(p, argv, blas_threads=1, smoke=dict(n_datasets=2, n_mc=200, n_jobs=1,
                                                       out=str(H.SMOKE_RESULTS / "exact_audit_suite")))
    if args.summarise:
        print("\n".join(summarise([json.loads(line) for line in open(args.summarise)])))
        return 0

    cases = make_cases(args.n_datasets, seed=args.seed, learners=args.learners)
    t0 = time.perf_counter()
    rows = Parallel(n_jobs=args.n_jobs, batch_size=1, return_as="generator")(
        delayed(_run)(c, args.n_mc, args.z) for c in cases
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    collected = []
    with open(out.with_suffix(".jsonl"), "w") as fh:
        for i, r in enumerate(rows):
            collected.append(r)
            fh.write(json.dumps(r, default=float) + "\n")
            fh.flush()  # a run stopped early keeps the cases it finished
            if r.get("violation"):
                print(f"VIOLATION {r['learner']} {r['generator']} n={r['n']} eta={r['eta']}: advantage "
                      f"{r['advantage']:.4f} ± {r['std_error']:.4f} > printed {r['bound']:.4f} "
                      f"(targets {r['violating_targets']})", flush=True)
            if "audit_error" in r:
                print(f"AUDIT ERROR {r}", flush=True)
            if (i + 1) % 100 == 0:
                print(f"[{i + 1}/{len(cases)}] {time.perf_counter() - t0:.0f} s", flush=True)
    seconds = time.perf_counter() - t0
    header = [
        H.header(argv) + "  ",
        f"n_jobs={args.n_jobs}; {len(cases)} datasets, n_mc={args.n_mc}, seed={args.seed}, "
        f"violation: advantage > printed + {args.z:g} se; {seconds:.0f} s",
        "",
    ]
    table = summarise(collected)
    print("\n".join(header + table), flush=True)
    out.with_suffix(".md").write_text("\n".join(header + table) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
