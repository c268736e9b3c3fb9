"""One table, one run (issue 32, item 4): every applicable route and ``"auto"``, side by side.

Run (the full table; coupling on the full adult split and on 10-class digits is shown by its cost
projection, ``--project``: the first takes 2,000-5,300 s a fit; docs/pipelines.md ran it with
``--n-models 4``, one process per data set and eta)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python benchmarks/bench_routes.py

For each data set and eta: the non-private model, ``MIPNoiseWrapper(model, eta, method=route)``
for each of ``--routes`` that applies (``route.applies``), and ``method="auto"`` (its choice in
brackets). Columns: test accuracy (R^2 for the regression set) of one 70/30 split (seed 0), CPU
seconds of the fit (``time.process_time``, one thread), and the audit: ``MIAttackScorer`` with its
default attack (every strong attack on the same shadow models, the strongest reported) over
``--n-models`` models on D, the wrapper at ``train_size=1.0`` (the game draws the members),
``tpr_at_fpr_`` at 1% FPR. Data sets (``--data``):

- ``adult``: all 32,561 rows, raw columns, ``OneHotEncoder`` (strings) + ``StandardScaler``
  (numbers) + ``LogisticRegression(C=0.1)``;
- ``german``: the bundled 61-column German credit, ``StandardScaler + LogisticRegression(C=0.1)``;
- ``breast_cancer``, ``digits`` (10 classes): the same pipeline;
- ``diabetes``: ``StandardScaler + Ridge(alpha=1.0)``, the raw target (R^2).

The D_train draw, the noise and the game use ``random_state=0`` (reproducible; a release uses
``None``).
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
from _harness import markdown_table
from bench_auto import design
from sklearn.base import clone

from skmip import MIPNoiseWrapper
from skmip.audit.scoring import MIAttackScorer
from skmip.calibration.routes import ROUTES

DATA = ("adult", "german", "breast_cancer", "digits", "diabetes")


def _design(name, seed):
    return design("adult_32561" if name == "adult" else name, seed)


def _fit(model, X, y):
    start = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fixed seeds' PrivacyWarning, the routes' notes
        fitted = model.fit(X, y)
    return fitted, time.process_time() - start


def _score(value):
    """Three decimals; an R^2 far below zero (a route whose noise swamps the fit) in powers of ten."""
    return f"{value:.3f}" if abs(value) < 1e3 else f"{value:.1e}"


def _audit(model, X, y, n_models):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        audit = MIAttackScorer(model, fpr=0.01, n_models=n_models, random_state=0).fit(X, y)
    return audit.tpr_at_fpr_


def _applies(route, pipe):
    """Whether the wrapper takes ``method=route`` for ``pipe`` (``route.applies``: coupling
    also calibrates the last step of a pipeline whose transformers are fitted on D)."""
    return ROUTES[route]().applies(pipe, "auto") is None


def _projection(name, eta, route, pipe, X_d):
    """The row of a route not run: its own cost projection (``route.cost``, one core) on this D."""
    width = clone(pipe)[:-1].fit(X_d).transform(X_d[:2]).shape[1]
    n = len(X_d)
    cost = ROUTES[route]().cost(n, width, round(0.5 * n), pipe[-1])
    return [name, f"{eta:g}", route, "not run", f"projected {cost.seconds:,.0f}", "-", "-"]


def rows_for(name, eta, routes, n_models, seed=0, projected=()):
    """The table's rows for one data set and eta: non-private, each applicable route, auto.

    A route named in ``projected`` (``"data:route"``) is not run; its row gives its cost
    projection. ``"auto"``'s audit is its chosen route's own (the same wrapper settings and seeds
    give the same models), reused when that route was audited in this call."""
    pipe, X_d, y_d, X_te, y_te = _design(name, seed)
    candidates = [("non-private", None)] + [(r, r) for r in routes if _applies(r, pipe)]
    candidates.append(("auto", "auto"))
    rows, audits = [], {}
    for label, method in candidates:
        if f"{name}:{method}" in projected:
            rows.append(_projection(name, eta, method, pipe, X_d))
            print(" | ".join(rows[-1]), flush=True)
            continue
        if method is None:
            model, audited = clone(pipe), clone(pipe)
        else:
            model = MIPNoiseWrapper(clone(pipe), eta=eta, method=method, random_state=seed)
            audited = clone(model).set_params(train_size=1.0)
        try:
            fitted, seconds = _fit(model, X_d, y_d)
        except (ValueError, TypeError) as exc:  # a route that refuses the data says so in the row
            rows.append([name, f"{eta:g}", label, "refused", "-", "-", str(exc)[:80]])
            continue
        if method == "auto":
            label = f"auto ({fitted.method_})"
            audited = clone(model).set_params(method=fitted.method_, train_size=1.0)
        key = fitted.method_ if method is not None else None
        if key not in audits:
            try:
                audits[key] = f"{_audit(audited, X_d, y_d, n_models):.3f}" if n_models else "-"
            except ValueError as exc:  # the game refuses (a model missing a class); the row says so
                audits[key] = f"refused: {str(exc).split(': ', 1)[-1][:60]}"
        tpr = audits[key]
        bound = "-" if method is None else ("none" if fitted.mip_bound_ is None else f"{fitted.mip_bound_:.4f}")
        rows.append([name, "-" if method is None else f"{eta:g}", label, _score(fitted.score(X_te, y_te)),
                     f"{seconds:.2f}", tpr, bound])
        print(" | ".join(rows[-1]), flush=True)
    return rows


def main(argv=None):
    p = H.parser(__doc__)
    p.add_argument("--data", nargs="+", default=list(DATA), choices=DATA)
    p.add_argument("--etas", nargs="+", type=float, default=[0.05, 0.1, 0.2])
    p.add_argument("--routes", nargs="+", default=["coupling", "noisy_gradient", "moments", "synthetic"],
                   choices=sorted(ROUTES))
    p.add_argument("--n-models", type=int, default=16, help="models of the audit's game (0: no audit)")
    p.add_argument("--project", nargs="*", default=["adult:coupling", "digits:coupling"],
                   help='"data:route" pairs not run, shown by their cost projection (coupling on the full '
                        "adult split: 2,000-5,300 s a fit; on 10-class digits: over 10 minutes)")
    # --smoke: breast cancer at eta 0.2, the noisy-gradient route and auto, a game of 2 models.
    args = H.parse(p, argv, blas_threads=1, smoke={"data": ["breast_cancer"], "etas": [0.2],
                                                   "routes": ["noisy_gradient"], "n_models": 2})
    rows = []
    for name in args.data:
        for eta in args.etas:
            rows += rows_for(name, eta, args.routes, args.n_models, projected=set(args.project))
    print(markdown_table(["data", "eta", "route", "test accuracy (R^2)", "CPU s fit", "audit TPR at 1% FPR",
                          "mip_bound_"], rows))


if __name__ == "__main__":
    main()
