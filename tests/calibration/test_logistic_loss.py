"""The binary logistic loss's derivatives (skmip.calibration.losses.linear), formed in place."""

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

from skmip.calibration.swap import get_smooth_loss


def test_logistic_derivatives_in_place_are_the_formula_to_every_bit():
    # dloss and d2loss overwrite one new array (the second stage calls them on (fits, rows,
    # pairs) stacks); the values must be c (expit(u) - t) and c p (1 - p) as written, in
    # every layout the engines use: matching shapes, rows broadcast over pairs, rows that
    # broadcast u beyond its own shape, and scalars.
    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    est = LogisticRegression(C=0.1, class_weight={0: 1.0, 1: 2.0}).fit(X, y)
    (block,) = get_smooth_loss(est).blocks(est, X, y, np.arange(len(X)), None)
    glm = block.glm
    cs = glm.d2loss(np.zeros(len(X)), np.arange(len(X))) * 4.0  # c_i: l''(0) = c / 4
    t = (y == est.classes_[1]).astype(float)

    def expit(u):
        return 0.5 * (1.0 + np.tanh(0.5 * u))

    rng = np.random.default_rng(0)
    rows = rng.integers(0, len(X), size=(3, 40))
    cases = [
        (rng.normal(scale=8, size=(3, 40)), rows),  # matching
        (rng.normal(scale=8, size=(3, 40, 7)), rows[..., None]),  # rows broadcast over pairs
        (rng.normal(scale=8, size=(3, 1)), rows),  # rows broadcast u
        (np.float64(1.5), np.int64(4)),  # scalars
        (2.5, rows[0]),
    ]
    for u, r in cases:
        p = expit(u)
        np.testing.assert_array_equal(glm.dloss(u, r), cs[r] * (p - t[r]))
        np.testing.assert_array_equal(glm.d2loss(u, r), cs[r] * p * (1.0 - p))
    u = rng.normal(size=20)
    kept = u.copy()
    glm.dloss(u, np.arange(20))
    glm.d2loss(u, np.arange(20))
    np.testing.assert_array_equal(u, kept)  # the margins are not overwritten
