"""Exact audits of the MIP noise: gamma radius (Theorem 9's density) vs Laplace radius (Cor. 10).

For mean estimation on the strongest dataset (one outlying record among n - 1 identical
ones; see ``skmip.audit.attacks.bayes.exact_mip_advantage``, Notes) and on a random Gaussian
dataset, this measures the exact Bayes-optimal attacker's advantage with both radius laws
side by side, for several eta, M and d, and marks every cell whose one-sided 99.9% lower
confidence bound exceeds eta (a broken promise).

Run (about 10 minutes on one core with the defaults)::

    python benchmarks/bench_exact_audit_radius.py
    python benchmarks/bench_exact_audit_radius.py --quick   # d <= 1,000, fewer draws

It prints Markdown tables and writes them to ``benchmarks/results/exact_audit_radius.md``
(ignored by git); ``docs/exact_audits.md`` quotes them with the command.
"""

from __future__ import annotations

import time
from pathlib import Path

import _harness as H  # the script's folder is on sys.path
import numpy as np
from scipy import stats

from skmip.audit.attacks.bayes import exact_mip_advantage
from skmip.bounds import mip_noise_constant

Z1 = stats.norm.ppf(0.999)


def mean(s):
    return s.mean(axis=0)


def outlier_data(n, d):
    data = np.zeros((n, d))
    data[0] = 1.0
    return data


def fmt(res, eta):
    a, se = res.advantage[0], res.std_error[0]
    mark = " **>eta**" if a - Z1 * se > eta else ""
    return f"{a:.2e} ± {se:.0e}{mark}"


def worst_case_table(ds, moments, etas, n, n_mc, n_jobs, seed):
    lines = [
        "| d | M | eta | c | gamma radius | laplace radius | seconds |",
        "|---:|---:|---:|---:|---|---|---:|",
    ]
    broken = []
    for d in ds:
        data = outlier_data(n, d)
        for m in moments:
            for eta in etas:
                t0 = time.perf_counter()
                cells = {}
                for radius in ("gamma", "laplace"):
                    res = exact_mip_advantage(
                        mean, data, eta=eta, moment=m, radius=radius, target=0, n_mc=n_mc,
                        random_state=seed, n_jobs=n_jobs,
                    )
                    cells[radius] = fmt(res, eta)
                    if res.advantage[0] - Z1 * res.std_error[0] > eta:
                        broken.append((radius, d, m, eta, res.advantage[0]))
                sec = time.perf_counter() - t0
                row = (
                    f"| {d:,} | {m} | {eta} | {mip_noise_constant(eta, m):.1f} | "
                    f"{cells['gamma']} | {cells['laplace']} | {sec:.1f} |"
                )
                print(row, flush=True)
                lines.append(row)
    return lines, broken


def random_table(ds, moments, eta, n, n_mc, n_jobs, seed):
    lines = [
        "| d | M | eta | gamma: max over targets | laplace: max over targets |",
        "|---:|---:|---:|---|---|",
    ]
    for d in ds:
        data = np.random.default_rng(seed).standard_normal((n, d))
        for m in moments:
            cells = {}
            for radius in ("gamma", "laplace"):
                res = exact_mip_advantage(
                    mean, data, eta=eta, moment=m, radius=radius, n_mc=n_mc,
                    random_state=seed, n_jobs=n_jobs,
                )
                i = int(np.argmax(res.advantage))
                cells[radius] = f"{res.advantage[i]:.2e} ± {res.std_error[i]:.0e}"
            row = f"| {d:,} | {m} | {eta} | {cells['gamma']} | {cells['laplace']} |"
            print(row, flush=True)
            lines.append(row)
    return lines


def main(argv=None):
    p = H.parser(__doc__, quick="d <= 1,000 and 2,000 draws", n_jobs=None, seed=0,
                 out=str(H.RESULTS / "exact_audit_radius.md"))
    p.add_argument("--n-mc", type=int, default=None, help="noise draws per audit")
    # --smoke: d = 1 and 2, M = 2, eta = 0.1, 500 draws, written under results/smoke/.
    args = H.parse(p, argv, smoke=dict(n_mc=500, out=str(H.SMOKE_RESULTS / "exact_audit_radius.md")))

    n_mc = args.n_mc or (2000 if args.quick else 10000)
    ds = [1, 2, 5, 100, 1000] + ([] if args.quick else [10000])
    etas = [0.05, 0.1, 0.2, 0.3]
    moments = [2, 4, 6]
    if args.smoke:
        ds, etas, moments = [1, 2], [0.1], [2]
    n = 8

    t0 = time.perf_counter()
    header = [
        "# Exact audits of the MIP noise",
        "",
        H.header(argv) + "  ",
        f"n_mc={n_mc}, seed={args.seed}",
        "",
        f"## Mean estimation, one outlier among n={n} records (target: the outlier)",
        "",
        "advantage = optimal accuracy - 1/2, ± Monte-Carlo standard error; **>eta**: the "
        "one-sided 99.9% lower confidence bound exceeds eta.",
        "",
    ]
    print("\n".join(header[:2] + header[3:]), flush=True)  # parse() printed the header line
    table, broken = worst_case_table(ds, moments, etas, n, n_mc, args.n_jobs, args.seed)

    sub = [
        "",
        "## Mean estimation, n=10 standard-normal records (max over the 10 targets)",
        "",
    ]
    print("\n".join(sub), flush=True)
    rand = random_table([2] if args.smoke else [2, 5, 100], moments[:2], 0.1, 10,
                        max(500, n_mc // 10), args.n_jobs, args.seed)

    summary = ["", "## Broken promises (lower 99.9% bound > eta)", ""]
    for radius, d, m, eta, a in broken:
        summary.append(f"- {radius}: d={d:,}, M={m}, eta={eta}: advantage {a:.3f}")
    if not broken:
        summary.append("- none")
    summary += ["", f"total time: {time.perf_counter() - t0:.0f} s"]
    print("\n".join(summary), flush=True)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(header + table + sub + rand + summary) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
