"""One entry point for the paper reproductions.

    python benchmarks/reproduce.py [--quick] [--only NAME] [--list]

Runs Izzo Fig. 1 in-process and the benchmark scripts (each with its own CLI) for the other
figures. ``--quick`` passes each script's quick option (and writes quick plots under
``benchmarks/results/``, which git ignores).
Results are printed; where they are recorded is listed in docs/reproductions.md.
"""
from __future__ import annotations

import subprocess
import sys
import time

import _harness as H  # the script's folder is on sys.path
import numpy as np

HERE = H.HERE
RESULTS = H.RESULTS  # git-ignored: quick runs never overwrite the documented figures
DOC_FIGURES = HERE.parent / "docs" / "figures"


def izzo_fig1(quick: bool) -> None:
    """Izzo et al. Fig. 1: Laplace noise scale needed for eta-MIP vs for DP (Proposition 11).

    MIP: Corollary 10's constant times sigma, ``(6.16/eta)^(1+2/M) sigma`` with M = 2 and
    sigma = 1 (Proposition 11's sigma^2 = O(1)). DP: Laplace(Delta/eps) with
    eps = mip_to_dp_epsilon(eta) (Theorem 4 inverted, delta = 0) and Delta = 2^(n/3), the order
    Proposition 11 proves (constant taken as 1, an assumption of this table).
    """
    from skmip.bounds import mip_noise_constant, mip_to_dp_epsilon

    etas = np.array([0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.45])
    ns = [12, 24, 36, 48]
    mip = mip_noise_constant(etas, 2) * 1.0
    eps = mip_to_dp_epsilon(etas)
    print("Izzo Fig. 1 (noise scale, lower is better; sigma = 1, Delta = 2^(n/3))")
    print(f"{'eta':>6} {'eps(Thm 4)':>11} {'MIP M=2':>11} " + " ".join(f"{'DP n=' + str(n):>11}" for n in ns))
    for i, eta in enumerate(etas):
        dp = [2.0 ** (n / 3) / eps[i] for n in ns]
        print(f"{eta:>6.2f} {eps[i]:>11.4g} {mip[i]:>11.4g} " + " ".join(f"{v:>11.4g}" for v in dp))
    _plot_izzo_fig1(etas, mip, eps, ns, H.results_path("izzo_fig1.png").parent if quick else DOC_FIGURES)


def _plot_izzo_fig1(etas, mip, eps, ns, folder):
    """Noise scale vs eta on a log axis: the MIP line and one DP line per n."""
    try:
        import matplotlib
    except ImportError:  # the plot is optional; the table above is the result
        print("(matplotlib not installed: no plot)")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    ax.semilogy(etas, mip, "k-o", label="eta-MIP, Cor. 10 (M = 2, sigma = 1)")
    for n in ns:
        ax.semilogy(etas, 2.0 ** (n / 3) / eps, "--", marker=".", label=f"DP at eps(eta), n = {n}")
    ax.set(xlabel="eta", ylabel="Laplace noise scale", title="Izzo et al. Fig. 1: noise for MIP vs DP")
    ax.legend(fontsize=7)
    fig.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    fig.savefig(folder / "izzo_fig1.png", dpi=100)
    plt.close(fig)
    print(f"plot: {folder / 'izzo_fig1.png'}")


# name -> (what it reproduces, full argv, quick argv or None = skipped in --quick). Full runs
# redraw the figures the docs show (docs/figures, docs/_static); quick runs draw into RESULTS.
SCRIPTS = {
    "izzo_fig2": ("Izzo Fig. 2 (synthetic data), with the coupling curve", ["bench_synthetic.py"],
                  ["bench_synthetic.py", "--quick"]),
    "marginal_synthesis": ("Marginal synthesizers on adult: MIP vs DP at equal promise (vs MST)",
                           ["bench_marginal_synthesis.py"], ["bench_marginal_synthesis.py", "--quick"]),
    "thudi": ("Thudi Figs. (subsampling bounds, audit, accuracy)", ["bench_subsampling.py", "--plots", str(DOC_FIGURES)],
              ["bench_subsampling.py", "--quick", "--plots", str(RESULTS)]),
    "leemann_figs": ("Leemann Figs. 1, 2a, 2b/2c (trade-off convergence, GLiR audits)", ["bench_leemann.py", "--plots", str(DOC_FIGURES)],
                     ["bench_leemann.py", "--quick", "--plots", str(RESULTS)]),
    "leemann_utility": ("Leemann Fig. 3 (GMIP vs GDP utility)", ["bench_nn_gmip_utility.py", "--plots", str(DOC_FIGURES)],
                        ["bench_nn_gmip_utility.py", "--quick", "--plots", str(RESULTS)]),
    "leemann_dpsgd": ("Leemann (noisy SGD cost)", ["bench_nn_dpsgd.py"], ["bench_nn_dpsgd.py", "--quick"]),
    "exact_audit": ("Exact audits (gamma vs Laplace radius)", ["bench_exact_audit_radius.py"],
                    ["bench_exact_audit_radius.py", "--quick"]),
    "nasr_epsilon": ("Nasr-style empirical vs theoretical epsilon (DP-SGD, Dirac canary)",
                     ["bench_nasr.py", "--plot", str(DOC_FIGURES / "nasr_epsilon.png")],
                     ["bench_nasr.py", "--quick", "--plot", str(RESULTS / "nasr_epsilon.png")]),
}
INPROCESS = {"izzo_fig1": ("Izzo Fig. 1 (MIP vs DP noise)", izzo_fig1)}


def main(argv: list[str] | None = None) -> int:
    names = list(INPROCESS) + list(SCRIPTS)
    parser = H.parser(__doc__, quick="quick options; skip slow scripts")
    parser.add_argument("--only", choices=names, action="append", help="run only NAME (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the reproductions and exit")
    # --smoke: Izzo Fig. 1 in this process (the scripts have smoke runs of their own).
    args = H.parse(parser, argv, smoke=dict(only=["izzo_fig1"]))
    if args.list:
        for name in names:
            title = INPROCESS[name][0] if name in INPROCESS else SCRIPTS[name][0]
            print(f"{name:<16} {title}")
        return 0
    failed = []
    for name in args.only or names:
        t0 = time.perf_counter()
        if name in INPROCESS:
            title, func = INPROCESS[name]
            print(f"\n=== {name}: {title}", flush=True)
            func(args.quick)
        else:
            title, full, quick = SCRIPTS[name]
            argv_ = quick if args.quick else full
            print(f"\n=== {name}: {title}", flush=True)
            if argv_ is None:
                print(f"skipped in --quick (no quick option): python benchmarks/{full[0]}")
                continue
            rc = subprocess.call([sys.executable, str(HERE / argv_[0]), *argv_[1:]])
            if rc:
                failed.append(name)
        print(f"--- {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    if failed:
        print("failed:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
