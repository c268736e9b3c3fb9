"""DP-SGD accounting, old against new: the grid and the CLT case of issue 20.

For each cell (sigma, q, steps, delta = 1e-5) it prints

* ``old mip_bound_``: what skmip printed before, Izzo's Theorem 4 on Opacus' add/remove RDP
  epsilon (the wrong adjacency for Theorem 4);
* ``Thm 4 (replace-one)``: Theorem 4 on the rigorous replace-one epsilon (PLD);
* ``eta = TV/2``: the new ``mip_bound_``, half the replace-one total variation (PLD);
* the add/remove and replace-one epsilons of :func:`skmip.bounds.dpsgd_epsilon`, checked
  against ``dp_accounting``'s ``PLDAccountant`` called directly.

Then the fixed-size-batch case (sigma 1 and 2, batches of 10 out of 1,000 rows, 100 steps):
the CLT epsilon printed before, the add/remove-pair value (a lower bound: a dataset reaches
it), the rigorous symmetrised-pair PLD value now printed, and the RDP bound of Wang et al.

Run: ``python benchmarks/bench_dpsgd_accounting.py`` (about a minute on one core).
"""

from __future__ import annotations

import _harness as H  # the script's folder is on sys.path
import dp_accounting as dpa
from dp_accounting.pld.pld_privacy_accountant import PLDAccountant
from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant
from opacus.accountants import RDPAccountant

from skmip.bounds import dp_to_mip, dpsgd_epsilon, dpsgd_eta, gdp_mu, gdp_to_dp

DELTA = 1e-5
NR = dpa.NeighboringRelation
GRID = dict(sigmas=(0.8, 1.0, 2.0), rates=(0.01, 0.1), steps=(100, 1000))


def direct(sigma, q, steps, relation):
    acc = PLDAccountant(relation)
    acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), steps)
    return acc.get_epsilon(DELTA)


def grid(sigmas=GRID["sigmas"], rates=GRID["rates"], steps_=GRID["steps"]):
    print("| sigma | q | steps | eps add/remove | eps replace-one | old mip_bound_ (RDP, add/remove, Thm 4) "
          "| Thm 4 on replace-one eps | new mip_bound_ = TV/2 |")
    print("|---|---|---|---|---|---|---|---|")
    for sigma in sigmas:
        for q in rates:
            for steps in steps_:
                ea = dpsgd_epsilon(sigma, q, steps, DELTA, adjacency="add_remove")
                er = dpsgd_epsilon(sigma, q, steps, DELTA, adjacency="replace_one")
                # Same construction as dp_accounting's accountant; only round-off may differ.
                for mine, relation in ((ea, NR.ADD_OR_REMOVE_ONE), (er, NR.REPLACE_ONE)):
                    ref = direct(sigma, q, steps, relation)
                    assert abs(mine - ref) <= 1e-6 * ref, (mine, ref)
                rdp = RDPAccountant()
                rdp.history = [(sigma, q, steps)]
                old = float(dp_to_mip(rdp.get_epsilon(DELTA), DELTA))
                eta = dpsgd_eta(sigma, q, steps)
                flag = " **below**" if old < float(dp_to_mip(er, DELTA)) - 5e-4 else ""
                print(f"| {sigma} | {q} | {steps} | {ea:.3f} | {er:.3f} | {old:.3f}{flag} "
                      f"| {float(dp_to_mip(er, DELTA)):.3f} | {eta:.3f} |")


def clt_case(sigmas=(1.0, 2.0)):
    print("\n| sigma | CLT epsilon (printed before) | add/remove pair (lower bound) | rigorous PLD (printed now) "
          "| RDP (Wang et al.) | eta CLT | eta rigorous |")
    print("|---|---|---|---|---|---|---|")
    n, B, steps = 1000, 10, 100
    for sigma in sigmas:
        mu = float(gdp_mu(sigma, B, n, steps))
        lower = PLDAccountant(NR.ADD_OR_REMOVE_ONE)
        lower.compose(dpa.PoissonSampledDpEvent(B / n, dpa.GaussianDpEvent(sigma / 2)), steps)
        rdp = RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
        rdp.compose(dpa.SampledWithoutReplacementDpEvent(n, B, dpa.GaussianDpEvent(sigma / 2)), steps)
        rig = dpsgd_epsilon(sigma, B / n, steps, DELTA, sampling="fixed", adjacency="replace_one")
        from skmip.bounds import mu_to_eta

        print(f"| {sigma} | {gdp_to_dp(mu, DELTA):.3f} | {lower.get_epsilon(DELTA):.3f} | {rig:.3f} "
              f"| {rdp.get_epsilon(DELTA):.3f} | {float(mu_to_eta(mu)):.3f} "
              f"| {dpsgd_eta(sigma, B / n, steps, sampling='fixed'):.3f} |")


def main(argv=None):
    # --smoke: one cell of the grid and one CLT case.
    args = H.parse(H.parser(__doc__), argv)
    print(f"dp_accounting {getattr(dpa, '__version__', '0.6.0')}, delta = {DELTA}\n")
    if args.smoke:
        grid(sigmas=(1.0,), rates=(0.1,), steps_=(100,))
        clt_case(sigmas=(1.0,))
    else:
        grid()
        clt_case()


if __name__ == "__main__":
    main()
