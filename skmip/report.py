"""A self-contained HTML audit report: the table, the ROC curves and the privacy-utility plot.

Plots are rendered with matplotlib (the ``plot`` extra) to PNG and embedded as base64, so
the page is one file with no external resources.
"""

from __future__ import annotations

import base64
import html
import io

__all__ = ["write_html_report"]


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figures(rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from skmip.display import MIAttackDisplay

    fig, ax = plt.subplots(figsize=(6, 5))
    for r in rows:
        eta = r["bound"] if r["promise"].startswith("eta-MIP") else None
        MIAttackDisplay.from_scores(r["_membership"], r["_scores"], eta=eta, name=r["defense"], ax=ax)
    ax.set_title("LiRA ROC (log-log)")
    roc = _png(fig)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        ax.scatter(r["advantage"], r["test_accuracy"], s=40)
        ax.annotate(r["defense"], (r["advantage"], r["test_accuracy"]), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xlabel("measured membership advantage max(TPR - FPR)")
    ax.set_ylabel("test accuracy")
    ax.set_title("Privacy vs utility")
    ax.grid(alpha=0.3)
    pu = _png(fig)
    plt.close(fig)
    return roc, pu


def write_html_report(path: str, rows, *, title: str = "skmip audit") -> None:
    """Write ``rows`` (from :func:`skmip.cli.run`) as a one-file HTML page with embedded plots."""
    from skmip.cli import format_table

    roc, pu = _figures(rows)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}pre{{background:#f6f6f6;padding:1em;overflow-x:auto}}</style>
</head><body>
<h1>{html.escape(title)}</h1>
<pre>{html.escape(format_table(rows))}</pre>
<p>advantage = max(TPR - FPR); an eta-MIP model promises advantage &le; 2&nbsp;eta (Izzo et al., Definition 1
and Theorem 8, corrected). The dashed lines in the ROC plot are the promised bounds TPR = FPR + 2&nbsp;eta.</p>
<h2>ROC of the attack</h2><img alt="ROC curves" src="data:image/png;base64,{roc}">
<h2>Privacy and utility</h2><img alt="privacy-utility plot" src="data:image/png;base64,{pu}">
</body></html>
"""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)
