"""DP-SGD (Opacus, Poisson sampling) epoch time vs non-private skorch on the same net.

Same module (MLP 64 -> 64 -> 10 on ``load_digits``), same optimizer, learning rate and
(expected) batch size; the private net adds per-sample gradients (Opacus hooks),
clipping, noise and the accountant. Runs are interleaved and the best epoch time of each
is reported, so a change in the load of the shared machine hits both alike.

Run::

    python benchmarks/bench_nn_dpsgd.py [--device cuda] [--quick]

``--quick``: 1 repeat of 2 epochs (a smoke run for the reproduction entry point; its
timings are noisier). Writes ``benchmarks/results/nn_dpsgd_<device>.md``
(``nn_dpsgd_<device>_quick.md`` with ``--quick``; ignored by git); ``docs/nn.md`` quotes the
full run.
"""

from __future__ import annotations

import warnings

import _harness as H  # the script's folder is on sys.path
import numpy as np
import torch
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from skmip.nn import DPNeuralNetClassifier, MLPModule, NeuralNetClassifier


def main(argv=None):
    parser = H.parser(__doc__, quick="1 repeat of 2 epochs", threads=(
        1, "torch intra-op threads; on a shared, oversubscribed CPU more threads spin-wait "
        "and make every small op many times slower"),
        repeats=(None, "interleaved fits (default 3; 1 with --quick)"))
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=None, help="epochs per fit (default 5; 2 with --quick)")
    parser.add_argument("--batch-size", type=int, default=64)
    # --smoke: one epoch, one repeat, batches of 256.
    args = H.parse(parser, argv, smoke=dict(epochs=1, repeats=1, batch_size=256))
    if args.epochs is None:
        args.epochs = 2 if args.quick else 5
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    load_at_start = H.load_average()
    torch.set_num_threads(args.threads)
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    common = dict(
        module__n_features=64, module__n_outputs=10, module__hidden=(64,), lr=0.1,
        max_epochs=args.epochs, batch_size=args.batch_size, random_state=0, verbose=0,
        device=args.device,
    )
    plain = NeuralNetClassifier(MLPModule, iterator_train__shuffle=True, **common)
    private = DPNeuralNetClassifier(MLPModule, noise_multiplier=1.0, max_grad_norm=1.0, **common)

    def run(net):
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        fitted = clone(net).fit(X, y)
        if args.device.startswith("cuda"):
            torch.cuda.synchronize()
        return fitted

    warnings.simplefilter("ignore")
    run(plain), run(private)  # warm-up: imports, allocator
    # Best time of interleaved fits, per epoch.
    times, (_, fitted) = H.side_by_side([lambda: run(plain), lambda: run(private)], args.repeats)
    best = {"plain": times[0] / args.epochs, "private": times[1] / args.epochs}
    eps = fitted.epsilon_
    text = "\n".join(
        [
            f"# DP-SGD epoch time (torch {torch.__version__}, device {args.device}, "
            f"{torch.get_num_threads()} torch thread(s), load average {load_at_start:.1f} at the start)",
            "",
            f"MLP 64-64-10 on load_digits ({len(X)} rows), SGD lr 0.1, batch {args.batch_size}, "
            f"best epoch time of {args.repeats} interleaved fits of {args.epochs} epochs:",
            "",
            "| net | seconds / epoch | ratio |",
            "|---|---|---|",
            f"| skmip.nn.NeuralNetClassifier (non-private) | {best['plain']:.3f} | 1.0 |",
            f"| DPNeuralNetClassifier (Opacus, Poisson, sigma=1, C=1) | {best['private']:.3f} | "
            f"{best['private'] / best['plain']:.1f}x |",
            "",
            f"epsilon spent after {args.epochs} epochs ({fitted.accountant.upper()} accountant, "
            f"delta = 1/(10n)): {eps:.2f}",
        ]
    )
    print(text)
    H.write_results(f"nn_dpsgd_{args.device.split(':')[0]}{'_quick' if args.quick else ''}.md", text)


if __name__ == "__main__":
    main()
