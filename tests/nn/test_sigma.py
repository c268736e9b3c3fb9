"""estimate_sigma on skmip's seeded skorch nets: batched split fits equal sequential ones."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")

from sklearn.base import clone  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skmip.calibration.spread.moments import estimate_sigma  # noqa: E402
from skmip.calibration.spread.subsets import draw_split_seeds, rows_by_choice  # noqa: E402
from skmip.nn import MLPModule, NeuralNetClassifier, SkorchAdapter  # noqa: E402


def test_batched_split_fits_match_a_sequential_loop(monkeypatch):
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(np.float32)[:400]
    y = y[:400]
    net = NeuralNetClassifier(
        MLPModule, module__n_features=64, module__n_outputs=10, module__hidden=(8,),
        max_epochs=2, batch_size=50, lr=0.05, random_state=0, verbose=0,
    )
    calls = []
    original = NeuralNetClassifier.fit_subsets

    def spy(self, *args, **kwargs):
        calls.append(len(args[2]))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(NeuralNetClassifier, "fit_subsets", spy)
    sigma = estimate_sigma(net, X, y, n_subsets=8, train_size=200, random_state=3)
    assert sum(calls) == 8  # every split went through the batched hook

    seeds = draw_split_seeds(3, 8)
    vecs = np.stack([
        SkorchAdapter().get_vector(clone(net).fit(X[r], y[r]))
        for r in (rows_by_choice(s, 400, 200) for s in seeds)
    ])
    brute = vecs.std(axis=0)  # M = 2, 1/B normalisation (Algorithm 1)
    steps = net.max_epochs * 4
    tol = 8 * steps * np.finfo(np.float32).eps * np.abs(vecs).max()
    np.testing.assert_allclose(sigma, brute, atol=4 * tol)
