"""The audit's outputs: the text table, and a self-contained HTML report with the ROC plots.

The rows are the dicts :func:`skmip.app.cli.run` returns. This module sits below the command line
(it never imports :mod:`skmip.app.cli`); plots are rendered with matplotlib (the ``plot`` extra) to
PNG and embedded as base64, so the page is one file with no external resources.
"""

from __future__ import annotations

import base64
import html
import io

from skmip.app.output_files import write_atomically
from skmip.bounds.rounding import format_up

__all__ = ["format_table", "format_warnings", "write_html_report", "calibration_of", "fit_warning_lines", "NOTE"]

#: What the table's columns mean, printed under it.
NOTE = (
    "attack: the strongest of the attacks run on the row's shadow models (by TPR at 1% FPR); "
    "its figures are shown. TPR@1%FPR: its true-positive rate at 1% false positives (x FPR: how "
    "many times chance); promised: the most the row's promise allows there.\n"
    "advantage = max(TPR - FPR); an eta-MIP model promises advantage <= 2 eta. 'bound holds' "
    "tests the promise along the whole ROC with every attack, and emp. eps is the largest DP "
    "epsilon lower bound over the attacks, both at 95% confidence overall (Bonferroni over the "
    "attacks); acc cost = baseline accuracy - row accuracy; calibration: how the row's noise "
    "was set (MIPNoiseWrapper's method_: coupling, certified or estimated, noisy gradients, moments, "
    "Izzo et al. Cor. 10, or synthetic; the epsilon of a DP learner)."
)


def calibration_of(model):
    """How a fitted defense set its noise, in a few words (``None`` when it says nothing).

    ``MIPNoiseWrapper``: its ``method_``, and for the coupling calibration whether the swap
    distances were proven upper bounds (``coupling_certified_``) or estimates (then no eta is
    promised); a DP learner: the epsilon it was trained with.
    """
    method = getattr(model, "method_", None)
    if method == "coupling":
        return "coupling, " + ("certified" if getattr(model, "coupling_certified_", False) else "estimated")
    if method == "moments":
        return "moments (Cor. 10)"
    if method == "synthetic":
        return "synthetic data (Thm. 3)"
    if method == "noisy_gradient":
        return "noisy gradients (PLD)"
    if getattr(model, "epsilon_", None) is not None:
        return f"DP eps={format_up(model.epsilon_)}"
    return None


def fit_warning_lines(records):
    """The distinct messages of warnings recorded during a fit, in order, but the fixed-seed
    one (:data:`skmip.exceptions.FIXED_SEED_MESSAGE`), which an audit states once."""
    from skmip.exceptions import FIXED_SEED_MESSAGE

    lines = []
    for record in records:
        text = f"{record.category.__name__}: {record.message}"
        if FIXED_SEED_MESSAGE not in str(record.message) and text not in lines:
            lines.append(text)
    return lines


def format_warnings(rows) -> str:
    """Every warning each row's fit raised, under a heading; ``""`` when none did."""
    lines = [f"- {r.get('estimator', '')}: {r['defense']}: {w}" for r in rows for w in r.get("warnings") or ()]
    return "\n".join(["Warnings raised by the fits (one fit per row, the one measured for utility):", *lines]) if lines else ""


def _fmt(x, spec):
    return "-" if x is None else format(x, spec)


def format_table(rows) -> str:
    """The audit as a fixed-width text table, one line per row.

    Parameters
    ----------
    rows : list of dict
        As returned by :func:`skmip.app.cli.run`.

    Returns
    -------
    str
    """
    head = ["model", "defense", "attack", "test acc", "acc cost", "AUC", "TPR@1%FPR", "x FPR", "promised",
            "advantage", "emp. eps", "bound holds", "calibration", "promise"]
    body = []
    for r in rows:
        holds = {True: "yes", False: "NO", None: "-"}[r["bound_holds"]]
        cost = r.get("accuracy_cost")
        body.append([
            r.get("estimator", ""), r["defense"], r.get("attack") or "-", f"{r['test_accuracy']:.3f}",
            "-" if cost is None or r["defense"] == "baseline" else f"{cost:+.3f}",
            f"{r['auc']:.3f}", f"{r['tpr_at_1pct_fpr']:.3f}",
            f"{r['tpr_at_1pct_fpr'] / 0.01:.1f}x", _fmt(r.get("promised_tpr_at_1pct_fpr"), ".3f"),
            f"{r['advantage']:.3f}", f"{r['empirical_epsilon']:.2f}", holds,
            r.get("calibration") or "-", r["promise"],
        ])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head, *body]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _label(r):
    return f"{r['estimator']}: {r['defense']}" if r.get("estimator") else r["defense"]


def _figures(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from skmip.bounds import gaussian_tradeoff, mip_tpr_bound
    from skmip.audit.display import MIAttackDisplay

    fig, ax = plt.subplots(figsize=(7, 6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    drawn = set()
    for i, r in enumerate(rows):
        color = colors[i % len(colors)]
        name = _label(r) + (f" ({r['attack']})" if r.get("attack") else "")
        MIAttackDisplay.from_predictions(r["_membership"], r["_scores"], name=name, ax=ax,
                                         color=color, plot_chance_level=i == 0)
        # The promise in the row's colour: the eta-MIP line TPR = FPR + 2 eta, or the
        # mu-GMIP curve, which is far tighter at low FPR (Leemann et al., Definition 4.3).
        mu, eta = r.get("_mu"), r.get("_eta")
        if (mu, eta) in drawn or (mu is None and eta is None):
            continue
        drawn.add((mu, eta))
        grid = np.logspace(np.log10(ax.get_xlim()[0]), 0, 200)
        if mu is not None:
            ax.plot(grid, 1.0 - gaussian_tradeoff(grid, mu), ls=":", lw=1.5, color=color,
                    label=f"promise: {mu:g}-GMIP")
        else:
            ax.plot(grid, mip_tpr_bound(grid, eta), ls="--", lw=1.5, color=color,
                    label=f"promise: {format_up(eta)}-MIP (TPR = FPR + 2 eta)")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title("ROC of every row's strongest attack (log-log) with the promised bounds")
    roc = _png(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        ax.scatter(r["tpr_at_1pct_fpr"], r["test_accuracy"], s=40)
        ax.annotate(_label(r), (r["tpr_at_1pct_fpr"], r["test_accuracy"]), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    ax.axvline(0.01, color="grey", lw=1, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel("attack TPR at 1% FPR (dotted: chance)")
    ax.set_ylabel("test accuracy")
    ax.set_title("Privacy vs utility")
    ax.grid(alpha=0.3)
    pu = _png(fig)
    plt.close(fig)
    return roc, pu


def write_html_report(path: str, rows, *, title: str = "skmip audit", notes=()) -> None:
    """Write ``rows`` (from :func:`skmip.app.cli.run`) as a one-file HTML page with embedded plots.

    Parameters
    ----------
    path : str
        Output file.
    rows : list of dict
        The audit rows, with their private ``_membership`` / ``_scores`` arrays.
    title : str, default="skmip audit"
    notes : sequence of str, default=()
        Extra lines shown under the table (e.g. the defenses that did not apply, and why).
    """
    roc, pu = _figures(rows)
    warned = format_warnings(rows).splitlines()
    extra = "".join(f"<li>{html.escape(n)}</li>" for n in [*notes, *warned[1:]])
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:72em;margin:2em auto}}pre{{background:#f6f6f6;padding:1em;overflow-x:auto}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
<pre>{html.escape(format_table(rows))}</pre>
<p>{html.escape(NOTE)}</p>
{f"<ul>{extra}</ul>" if extra else ""}
<p>An eta-MIP model promises TPR &le; FPR + 2&nbsp;eta at every threshold (Izzo et al., Definition 1
and Theorem 8, corrected): the dashed lines. A mu-GMIP model promises TPR &le; &Phi;(&Phi;<sup>-1</sup>(FPR) + mu)
(Leemann et al., Definition 4.3): the dotted curves, much lower at small FPR.</p>
<h2>ROC of the strongest attack on every row (log-log axes)</h2><img alt="ROC curves" src="data:image/png;base64,{roc}">
<h2>Privacy and utility</h2><img alt="privacy-utility plot" src="data:image/png;base64,{pu}">
</body></html>
"""
    write_atomically(path, page)  # never half-written (skmip.app.output_files)
