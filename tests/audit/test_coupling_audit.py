"""LiRA audit of the coupling-calibrated MIPNoiseWrapper in the exact Definition 1 game.

With ``train_size=1.0`` every model of the scorer's game is one run of the wrapper on the
game's member set, a uniform half of the pool, so the game is Definition 1 and eta-MIP
bounds the attack's ``max(TPR - FPR)`` by ``2 eta`` (Theorem 8, corrected).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.stats import norm
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression

from skmip import MIPNoiseWrapper
from skmip.exceptions import PrivacyWarning
from skmip.audit.scoring import MIAttackScorer

ETA = 0.3
N_POOL = 80
N_MODELS = 8


def test_lira_advantage_within_eta_on_coupling_wrapper():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    rows = rng.permutation(len(X))
    pool, rest = rows[:N_POOL], rows[N_POOL:]
    # Standardize with rows outside the pool: a public preprocessing choice.
    mu, sd = X[rest].mean(0), X[rest].std(0)
    Xp, yp = (X[pool] - mu) / sd, y[pool]
    wrapper = MIPNoiseWrapper(
        LogisticRegression(C=0.1, solver="newton-cholesky", tol=1e-10), eta=ETA,
        method="coupling", train_size=1.0, n_rounds=60, random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)  # fixed seeds: reproducible test
        audit = MIAttackScorer(wrapper, attack="lira", n_models=N_MODELS, random_state=1).fit(Xp, yp)

    assert audit.bound_ == ETA
    # Clopper-Pearson over every threshold of the ROC: the data do not refute 2 eta.
    assert audit.bound_holds_ is True
    # The maximum over thresholds of TPR - FPR, each with binomial standard error at most
    # sqrt(1/(4 n_pos) + 1/(4 n_neg)); Bonferroni over the n_trials thresholds at 5% total.
    m = audit.membership_
    n_pos, n_neg = int(m.sum()), int((~m).sum())
    z = norm.isf(0.05 / (2 * m.size))
    margin = z * np.sqrt(0.25 / n_pos + 0.25 / n_neg)
    assert audit.advantage_ <= 2 * ETA + margin
    assert 0.0 <= audit.advantage_ <= 1.0
