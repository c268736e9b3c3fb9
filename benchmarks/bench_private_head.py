"""Private heads on public backbones: coupling-noised head vs DP-SGD and GMIP at the equal promise.

Task (bundled, offline): ``load_digits`` scaled to [0, 1]. Digits 0-4 are *public*: a small
MLP backbone (64 -> 64 -> 32; ReLU, then tanh on the features, which bounds them) is trained
on them with a seeded skorch net. Digits 5-9
are *private*: a stratified 70/30 split gives the dataset D (the rows a membership attacker
targets) and a test set. The private task is the 5-class problem on 5-9, or with
``--task binary`` odd vs even among 5-9.

Every private learner sees the same frozen features phi(x) of the public backbone and trains
the head only, on a training set of k = n/2 rows of D (Definition 1):

* **coupling**: ``MIPNoiseWrapper(PrivateHeadClassifier(backbone, C=0.1), eta)`` -- the head
  solved exactly, Gaussian noise calibrated by the coupling bound at 95% confidence
  (``docs/coupling.md``); ``mip_noise_path`` shares one calibration and one D_train across the
  noise draws;
* **DP-SGD**: ``DPNeuralNetClassifier(privacy="dp")`` on a linear module over phi(x), at
  epsilon = ``mip_to_dp_epsilon(eta, delta)`` (Izzo et al., Theorem 4; delta = 1/(10 k)), on
  its own random k rows per seed;
* **GMIP**: ``DPNeuralNetClassifier(privacy="gmip")`` at mu = 2 Phi^-1(1/2 + eta), the mu whose
  Gaussian trade-off gives exactly accuracy 1/2 + eta (``skmip.bounds.mu_to_eta``; Leemann et
  al. Def. 4.3). Its promise is for targets of gradient susceptibility at most K = d (Remark
  5.1), weaker than the every-record promise of the other two.

Defaults: head C = 0.1, tanh features (``--C``, ``--last relu|tanh|unit`` change them; docs/nn.md
records the small exploration that chose them); DP-SGD batch 64, 30 epochs, clip 1, lr 0.5
(not tuned).

Run::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/bench_private_head.py
        [--task multiclass|binary] [--rounds 1000] [--seeds 5] [--quick]

``--quick``: 200 rounds, 2 seeds. Writes ``benchmarks/results/private_head_<task>.md``
(ignored by git); ``docs/nn.md`` quotes the full runs.
"""

from __future__ import annotations

import time
import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
import torch
from scipy import stats
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

from skmip import mip_noise_path
from skmip.bounds import mip_to_dp_epsilon, mu_to_eta
from skmip.nn import DPNeuralNetClassifier, MLPModule, NeuralNetClassifier, PrivateHeadClassifier
from skmip.nn.seeded_nets import seeded_torch

ETAS = (0.1, 0.2)
WIDTH = 32


class UnitNorm(torch.nn.Module):
    """Scale each feature row to norm 1: a fixed, public map that bounds every record's pull."""

    def forward(self, X):
        return X / X.norm(dim=1, keepdim=True).clamp_min(1e-12)


def public_backbone(X, y, last="tanh", seed=0):
    """Train Linear-ReLU-Linear-<last> + a 5-way output on the public digits; return the body."""
    act = {"relu": torch.nn.ReLU, "tanh": torch.nn.Tanh, "unit": lambda: torch.nn.Sequential(torch.nn.ReLU(), UnitNorm())}[last]
    with seeded_torch(seed):  # the module's initial weights; the net's fit is seeded itself
        body = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, WIDTH), act())
        module = torch.nn.Sequential(body, torch.nn.Linear(WIDTH, 5))
    net = NeuralNetClassifier(
        module, optimizer=torch.optim.Adam, lr=3e-3,
        max_epochs=40, batch_size=64, iterator_train__shuffle=True, random_state=seed, verbose=0,
    ).fit(X.astype(np.float32), y.astype(np.int64))
    return net.module_[0], net


def features(body, X):
    with torch.no_grad():
        return body(torch.as_tensor(X, dtype=torch.float32)).numpy()


def main(argv=None):
    parser = H.parser(__doc__, seeds=(None, "noise draws / DP-SGD seeds (default 5; 2 with --quick)"),
                      quick="200 rounds, 2 seeds")
    parser.add_argument("--task", choices=("multiclass", "binary"), default="multiclass")
    parser.add_argument("--rounds", type=int, default=None, help="coupling rounds (default 1000; 200 with --quick)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--C", type=float, default=0.1, help="head regularisation")
    parser.add_argument("--check-rounds", type=int, default=2,
                        help="rounds of the engine-vs-refit check on the same (x*, e) pairs (0: skip)")
    parser.add_argument("--last", choices=("relu", "tanh", "unit"), default="tanh", help="backbone's last activation")
    # --smoke: the binary task, 100 rounds, 1 seed, no engine check.
    args = H.parse(parser, argv, smoke=dict(task="binary", rounds=100, seeds=1, check_rounds=0))
    rounds = args.rounds or (200 if args.quick else 1000)
    seeds = args.seeds or (2 if args.quick else 5)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # fixed seeds warn (PrivacyWarning): this is a benchmark

    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    public = y < 5
    t = time.perf_counter()
    body, public_net = public_backbone(X[public], y[public], args.last)
    t_backbone = time.perf_counter() - t
    Xp, yp = X[~public], y[~public] - 5
    if args.task == "binary":
        yp = yp % 2  # 5, 7, 9 vs 6, 8
    X_d, X_te, y_d, y_te = train_test_split(Xp, yp, test_size=0.3, random_state=0, stratify=yp)
    n, k = len(X_d), len(X_d) // 2
    K = len(np.unique(yp))
    F_d, F_te = features(body, X_d), features(body, X_te)
    print(f"public backbone: {public.sum()} rows of digits 0-4, train accuracy "
          f"{public_net.score(X[public].astype(np.float32), y[public]):.3f}, {t_backbone:.0f} s", flush=True)
    print(f"private task ({args.task}): D = {n} rows, k = {k}, test = {len(X_te)}, {K} classes, "
          f"phi of width {WIDTH}", flush=True)

    head = PrivateHeadClassifier(body, C=args.C)
    rng = np.random.default_rng(2026)
    nonprivate = []
    for _ in range(seeds):
        r = rng.choice(n, size=k, replace=False)
        nonprivate.append(head.fit(X_d[r], y_d[r]).score(X_te, y_te))
    t = time.perf_counter()
    path = mip_noise_path(head, X_d, y_d, etas=[e for e in ETAS for _ in range(seeds)], n_rounds=rounds,
                          random_state=int(rng.integers(2**31)))
    t_coupling = time.perf_counter() - t
    print(f"coupling: engine {path[0].sensitivity_engine_}, {rounds} rounds, {t_coupling:.0f} s", flush=True)

    delta = 1.0 / (10 * k)
    d = K * (WIDTH + 1) if K > 2 else 2 * (WIDTH + 1)  # MLPModule(hidden=()) outputs K logits

    def dpsgd(privacy, eta, seed):
        r = np.random.default_rng(seed).choice(n, size=k, replace=False)
        eps = float(mip_to_dp_epsilon(eta, delta))
        mu = 2.0 * stats.norm.ppf(0.5 + eta)  # mu_to_eta(mu) = eta
        net = DPNeuralNetClassifier(
            MLPModule, module__n_features=WIDTH, module__n_outputs=max(K, 2), module__hidden=(),
            privacy=privacy, epsilon=eps, delta=delta, mu=None if privacy == "dp" else mu,
            max_grad_norm=1.0, lr=0.5, max_epochs=args.epochs, batch_size=64, random_state=seed,
            verbose=0,
        ).fit(F_d[r], y_d[r].astype(np.int64))
        assert net.mip_bound_ <= eta + 1e-9, (privacy, net.mip_bound_, eta)
        return net.score(F_te, y_te), net.noise_multiplier_, (eps if privacy == "dp" else mu)

    rows = [
        f"# Private head on a public backbone: digits 0-4 public, 5-9 private ({args.task})",
        "",
        (f"Backbone 64-64-{WIDTH} (ReLU, last activation {args.last}) trained on the {public.sum()} public "
         f"rows; private D = {n} rows, k = {k}, test = {len(X_te)}, {K} classes; head C = {args.C:g}. "
         f"Coupling: {rounds} rounds, "
         f"engine `{path[0].sensitivity_engine_}`, 95% confidence, full noise shape from 128 subsets "
         f"({t_coupling:.0f} s for the calibration). DP-SGD / GMIP: linear head on the same "
         f"features (d = {d}), batch 64, {args.epochs} epochs, clip 1, lr 0.5, delta = 1/(10k) = "
         f"{delta:.2g}. Mean test accuracy (+- standard error) over {seeds} noise draws / seeds. "
         f"Non-private head on k rows: {np.mean(nonprivate):.3f}."),
        "",
        "| eta | coupling head | noise scale s (point) | eta upper | DP-SGD (eps) | sigma DP | GMIP (mu) | sigma GMIP |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for eta in ETAS:
        ws = [w for w in path if w.mip_bound_ == eta]
        acc = [w.score(X_te, y_te) for w in ws]
        dp = [dpsgd("dp", eta, s) for s in range(seeds)]
        gm = [dpsgd("gmip", eta, s) for s in range(seeds)]
        assert abs(mu_to_eta(gm[0][2]) - eta) < 1e-9
        rows.append(
            f"| {eta} | {_ms(acc)} | {ws[0].noise_scale_:.3g} ({ws[0].noise_scale_point_:.3g}) | "
            f"{ws[0].coupling_eta_upper_:.3f} | {_ms([a for a, _, _ in dp])} ({dp[0][2]:.3f}) | "
            f"{dp[0][1]:.2f} | {_ms([a for a, _, _ in gm])} ({gm[0][2]:.3f}) | {gm[0][1]:.2f} |"
        )
        print(rows[-1], flush=True)
    if args.check_rounds:
        rows += ["", engine_check(head, X_d, y_d, k, args.check_rounds, path[0].sensitivity_engine_)]
    text = "\n".join(rows)
    print("\n" + text)
    H.write_results(f"private_head_{args.task}{'_quick' if args.quick else ''}.md", text)


def engine_check(head, X, y, k, n_rounds, engine):
    """The engine the wrapper used against exact refits of the whole net on the same (x*, e)
    pairs (same seed, one pair per target and round), whitened by the same full noise shape."""
    from skmip.bounds import coupling_noise_scale
    from skmip.calibration.spread.noise_factor import estimate_noise_factor
    from skmip.calibration.swap import estimate_swap_deltas

    L = estimate_noise_factor(head, X, y, train_size=k, n_subsets=128, random_state=1)
    kw = dict(scale=L, train_size=k, n_rounds=n_rounds, pairs_per_target=1, random_state=7)
    t = time.perf_counter()
    fast = estimate_swap_deltas(head, X, y, polish=True, **kw).distances.ravel()
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    refit = estimate_swap_deltas(head, X, y, engine="refit", **kw).distances.ravel()
    t_refit = time.perf_counter() - t
    err = np.abs(fast / refit - 1)
    top = refit >= np.quantile(refit, 0.9)
    scales = [coupling_noise_scale(d.reshape(len(X), -1), 0.1, confidence=None).noise_scale for d in (fast, refit)]
    return (f"Engine check (`{engine}` vs refits of the whole net on the same {err.size} (x*, e) pairs, "
            f"{n_rounds} rounds): |d / d_refit - 1| median {np.median(err):.4f}, 90% {np.quantile(err, 0.9):.4f}, "
            f"max {err.max():.4f}; on the 10% largest distances median {np.median(err[top]):.4f}; "
            f"point-estimate noise scale at eta = 0.1 from these pairs {scales[0]:.3f} vs {scales[1]:.3f} "
            f"(ratio {scales[0] / scales[1]:.4f}); {t_fast:.1f} s vs {t_refit:.0f} s.")


def _ms(values):
    v = np.asarray(values, dtype=float)
    se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else 0.0
    return f"{v.mean():.3f} +- {se:.3f}"


if __name__ == "__main__":
    main()
