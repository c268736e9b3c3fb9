"""vmap ensembles vs a loop of skorch fits, and the wrapper's split fits (n_subsets = 32).

1. 32 small MLPs (64 -> 32 -> 10, Adam, 10 epochs, batches of 64) on half-splits of
   ``load_digits``: :func:`skmip.nn.fit_ensemble` vs 32 sequential ``fit`` calls of the
   same seeded net, measured side by side (best of ``--repeats``), with the largest
   parameter difference between the two (float32 round-off).
2. :class:`skmip.defend.MIPNoiseWrapper` with ``n_subsets=32`` on the same net: its
   sigma step (32 split fits) sequentially, vs the 32 split fits as one ensemble
   (:func:`skmip.nn.ensemble_vectors`) reduced to the same per-coordinate spread.

Run::

    python benchmarks/bench_nn_ensemble.py            # CPU
    python benchmarks/bench_nn_ensemble.py --device cuda

Writes ``benchmarks/results/nn_ensemble.md`` (ignored by git); ``docs/nn.md`` quotes it.
"""

from __future__ import annotations

import platform

import _harness as H  # the script's folder is on sys.path
import numpy as np
import torch
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from skmip.nn import MLPModule, NeuralNetClassifier, SkorchAdapter, ensemble_vectors, fit_ensemble


def _synced(fn):
    """``fn`` with the GPU's queue drained before and after it (so that its time is its own)."""
    def call():
        if device_is_cuda:
            torch.cuda.synchronize()
        out = fn()
        if device_is_cuda:
            torch.cuda.synchronize()
        return out
    return call


def best_of(fns, repeats):
    """``(best times, outputs)``, runs interleaved so that a change in machine load (the CPU is
    shared) hits both sides alike."""
    return H.side_by_side([_synced(fn) for fn in fns], repeats)


def main(argv=None):
    global device_is_cuda
    parser = H.parser(__doc__, threads=(
        1, "torch intra-op threads; on a shared, oversubscribed CPU more threads spin-wait "
        "and make every small op many times slower"), repeats=3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--members", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--skip-wrapper", action="store_true")
    # --smoke: 2 members, 1 epoch, 1 run.
    args = H.parse(parser, argv, smoke=dict(members=2, epochs=1, repeats=1))
    device_is_cuda = args.device.startswith("cuda")
    load_at_start = H.load_average()
    torch.set_num_threads(args.threads)

    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    net = NeuralNetClassifier(
        MLPModule, module__n_features=64, module__n_outputs=10, module__hidden=(32,),
        optimizer=torch.optim.Adam, lr=0.01, max_epochs=args.epochs, batch_size=64,
        iterator_train__shuffle=True, random_state=0, verbose=0, device=args.device,
    )
    rng = np.random.default_rng(0)
    subsets = [rng.choice(len(X), size=len(X) // 2, replace=False) for _ in range(args.members)]
    seeds = list(range(args.members))

    # Warm up both paths once (first-call overheads: vmap tracing, allocator, imports).
    fit_ensemble(net, X, y, subsets[:2], random_states=seeds[:2])
    clone(net).fit(X[subsets[0]], y[subsets[0]])

    (t_ens, t_seq), (members, seq) = best_of(
        [
            lambda: fit_ensemble(net, X, y, subsets, random_states=seeds),
            lambda: [clone(net).set_params(random_state=s).fit(X[r], y[r]) for s, r in zip(seeds, subsets)],
        ],
        args.repeats,
    )
    a = np.stack([SkorchAdapter().get_vector(m) for m in members])
    b = np.stack([SkorchAdapter().get_vector(m) for m in seq])
    lines = [
        f"# vmap ensembles ({platform.processor() or platform.machine()}, torch {torch.__version__}, "
        f"device {args.device}, {torch.get_num_threads()} torch thread(s), load average "
        f"{load_at_start:.1f} at the start)",
        "",
        f"{args.members} MLPs 64-32-10, Adam, {args.epochs} epochs, batch 64, {len(X) // 2} rows each "
        f"(load_digits), best of {args.repeats} interleaved runs:",
        "",
        "| path | seconds | ratio |",
        "|---|---|---|",
        f"| loop of skorch fits | {t_seq:.2f} | 1.0 |",
        f"| fit_ensemble (vmap) | {t_ens:.2f} | {t_seq / t_ens:.1f}x faster |",
        "",
        f"max |ensemble - sequential| over all parameters: {np.abs(a - b).max():.2e} "
        f"(largest |parameter| {np.abs(b).max():.2f})",
    ]

    if not args.skip_wrapper:
        from skmip.calibration.spread.moments import estimate_sigma

        # The wrapper fixes one seed for all split fits: random_state=0 on both paths.
        (t_sig, t_vec), (sigma_seq, vec) = best_of(
            [
                lambda: estimate_sigma(net, X, y, n_subsets=args.members, train_size=0.5, random_state=0),
                lambda: ensemble_vectors(net, X, y, subsets),
            ],
            1,
        )
        sigma_ens = np.sqrt(np.mean((vec - vec.mean(axis=0)) ** 2, axis=0))
        lines += [
            "",
            f"MIPNoiseWrapper's sigma step, n_subsets = {args.members} (split fits of {len(X) // 2} rows):",
            "",
            "| path | seconds | ratio |",
            "|---|---|---|",
            f"| estimate_sigma (sequential fits, n_jobs=1) | {t_sig:.2f} | 1.0 |",
            f"| ensemble_vectors + moments | {t_vec:.2f} | {t_sig / t_vec:.1f}x faster |",
            "",
            f"median sigma: sequential {np.median(sigma_seq):.4f}, ensemble {np.median(sigma_ens):.4f} "
            "(different random subsets, same law)",
        ]
    text = "\n".join(lines)
    print(text)
    H.write_results(f"nn_ensemble_{args.device.split(':')[0]}.md", text)


device_is_cuda = False

if __name__ == "__main__":
    main()
