"""Attacks: LOSS, LiRA and RMIA against brute-force references, GLiR against its null law and
Leemann's Eq. (8), logistic per-sample gradients against finite differences, the registry."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.svm import LinearSVC

from skmip.audit.attacks import (
    RMIA,
    LiRA,
    LossAttack,
    available_attacks,
    get_attack,
    glir_scores,
    lira_scores,
    logistic_per_sample_gradients,
    loss_scores,
    register_attack,
    rmia_scores,
)
from skmip.audit.attacks.rmia import OFFLINE_A_GRID, _reference_means, _tune_offline_a
from skmip.audit.game import MembershipGame
from skmip.audit.metrics import mi_roc_auc, tpr_at_fpr


def _balanced_membership(rng, K, n):
    """Every row a member of exactly K/2 models: any K-1 references hold >= K/2-1 of each."""
    m = np.zeros((K, n), dtype=bool)
    for i in range(n):
        m[rng.permutation(K)[: K // 2], i] = True
    return m


def _game(membership, signal, loss=None, output="proba"):
    loss = -signal if loss is None else loss
    return MembershipGame(membership=membership, signal=signal, loss=loss, output=output)


# ---------------------------------------------------------------- LOSS
def test_loss_attack_is_minus_the_loss(rng):
    loss = rng.random((3, 5))
    np.testing.assert_array_equal(loss_scores(loss), -loss)
    game = _game(rng.random((3, 5)) < 0.5, rng.normal(size=(3, 5)), loss)
    np.testing.assert_array_equal(LossAttack().score(game), -loss)


# ---------------------------------------------------------------- LiRA
def _lira_brute_force(s, m, k, online, global_variance):
    refs = [j for j in range(s.shape[0]) if j != k]
    S, M = s[refs], m[refs]
    mu_in = np.array([S[M[:, i], i].mean() for i in range(s.shape[1])])
    mu_out = np.array([S[~M[:, i], i].mean() for i in range(s.shape[1])])
    if global_variance:
        def pooled(mask):
            ss = sum(((S[mask[:, i], i] - S[mask[:, i], i].mean()) ** 2).sum() for i in range(s.shape[1]))
            dof = sum(mask[:, i].sum() - 1 for i in range(s.shape[1]))
            return np.full(s.shape[1], ss / dof)
        v_in, v_out = pooled(M), pooled(~M)
    else:
        v_in = np.array([S[M[:, i], i].var(ddof=1) for i in range(s.shape[1])])
        v_out = np.array([S[~M[:, i], i].var(ddof=1) for i in range(s.shape[1])])
    x = s[k]
    if online:
        return stats.norm.logpdf(x, mu_in, np.sqrt(v_in)) - stats.norm.logpdf(x, mu_out, np.sqrt(v_out))
    return -stats.norm.logsf(x, mu_out, np.sqrt(v_out))


@pytest.mark.parametrize("online", [True, False])
@pytest.mark.parametrize("global_variance", [True, False])
def test_lira_leave_one_out_matches_brute_force(rng, online, global_variance):
    K, n = 12, 30
    m = _balanced_membership(rng, K, n)
    s = 3.0 * rng.normal(size=(1, n)) + np.where(m, 1.0, -1.0) + rng.normal(size=(K, n))
    got = lira_scores(s, m, online=online, global_variance=global_variance)
    for k in range(K):
        np.testing.assert_allclose(got[k], _lira_brute_force(s, m, k, online, global_variance),
                                   rtol=1e-7, atol=1e-7)


def test_lira_is_invariant_to_per_row_offsets(rng):
    m = _balanced_membership(rng, 10, 40)
    s = rng.normal(size=(10, 40)) + m
    shifted = s + 1e3 * rng.normal(size=(1, 40))
    np.testing.assert_allclose(lira_scores(s, m), lira_scores(shifted, m), rtol=1e-6, atol=1e-6)


def test_lira_global_variance_auto_switches_at_64_models(rng):
    for K, expect_global in [(16, True), (64, False)]:
        m = _balanced_membership(rng, K, 20)
        s = rng.normal(size=(K, 20)) + m
        np.testing.assert_array_equal(lira_scores(s, m), lira_scores(s, m, global_variance=expect_global))


def test_lira_rows_without_in_references_stay_finite(rng):
    m = rng.random((4, 200)) < 0.5
    s = rng.normal(size=(4, 200)) + m
    for online in (True, False):
        scores = lira_scores(s, m, online=online, global_variance=False)
        assert np.all(np.isfinite(scores))


def test_lira_beats_loss_when_rows_differ_in_difficulty(rng):
    """Per-row calibration is the point of LiRA: with row offsets ~ N(0, 3^2) the global LOSS
    threshold is nearly useless, the per-row likelihood ratio is not."""
    K, n = 16, 400
    m = rng.random((K, n)) < 0.5
    s = 3.0 * rng.normal(size=(1, n)) + 0.8 * m + 0.3 * rng.normal(size=(K, n))
    lira = lira_scores(s, m)
    loss = loss_scores(-s)
    assert tpr_at_fpr(m, lira, 0.01) > 5 * max(tpr_at_fpr(m, loss, 0.01), 0.01)
    assert mi_roc_auc(m, lira) > 0.9 > 0.6 > mi_roc_auc(m, loss)


def test_lira_validate():
    with pytest.raises(TypeError, match="predict_proba"):
        LiRA().validate(LinearSVC(), n_models=16, member_rate=0.5)
    with pytest.raises(ValueError, match="n_models >= 5"):
        LiRA(global_variance=False).validate(LogisticRegression(), n_models=4, member_rate=0.5)
    LiRA().validate(LogisticRegression(), n_models=4, member_rate=0.5)  # auto: global below 64


# ---------------------------------------------------------------- RMIA
def _rmia_brute_force(ll, m, k, online, a, gamma):
    K, n = m.shape
    refs = [j for j in range(K) if j != k]
    p = np.exp(ll)
    if online:
        prior = p[refs].mean(0)
    else:
        out = ~m[refs]
        prior = 0.5 * ((1 + a) * (p[refs] * out).sum(0) / out.sum(0) + (1 - a))
    ratio = p[k] / prior
    population = np.flatnonzero(~m[k])
    scores = np.empty(n)
    for i in range(n):
        zs = [z for z in population if z != i]
        scores[i] = np.mean([ratio[i] / ratio[z] >= gamma for z in zs])
    return scores


@pytest.mark.parametrize("online,a", [(True, None), (False, 0.0), (False, 0.6)])
@pytest.mark.parametrize("gamma", [1.0, 1.5])
def test_rmia_matches_brute_force(rng, online, a, gamma):
    K, n = 8, 40
    m = _balanced_membership(rng, K, n)
    ll = np.log(stats.norm.cdf(rng.normal(size=(1, n)) + 0.8 * m + 0.5 * rng.normal(size=(K, n))))
    got = rmia_scores(ll, m, online=online, offline_a=0.5 if a is None else a, gamma=gamma, tie_break=False, random_state=0)
    for k in range(K):
        np.testing.assert_allclose(got[k], _rmia_brute_force(ll, m, k, online, a, gamma), atol=1e-12)


def test_rmia_tie_break_keeps_every_strict_order(rng):
    m = _balanced_membership(rng, 8, 60)
    ll = np.log(stats.norm.cdf(rng.normal(size=(1, 60)) + 1.5 * m + 0.3 * rng.normal(size=(8, 60))))
    plain = rmia_scores(ll, m, tie_break=False, random_state=0)
    broken = rmia_scores(ll, m, tie_break=True, random_state=0)
    a, b = plain.ravel(), broken.ravel()
    strictly = a[:, None] > a[None, :]
    assert np.all((b[:, None] > b[None, :])[strictly])
    assert np.unique(b).size > np.unique(a).size


def test_rmia_offline_a_is_tuned_on_a_reference_model(rng):
    K, n = 8, 80
    m = _balanced_membership(rng, K, n)
    ll = np.log(stats.norm.cdf(rng.normal(size=(1, n)) + m + 0.5 * rng.normal(size=(K, n))))
    # target 0, pseudo-target 1, references 2..7: their OUT log-mean is row 0 of the
    # leave-one-out means over models 1..7
    others = _reference_means(ll[1:], m[1:], online=False)[1][0]
    a = _tune_offline_a(ll, m, 1, others, 0.0, None, np.random.default_rng(0))
    assert a in OFFLINE_A_GRID
    # the tuned value is the best of the grid on the pseudo-target (model 1, refs 2..7)
    aucs = [mi_roc_auc(m[1], rmia_scores(ll[1:], m[1:], online=False, offline_a=float(g), tie_break=False, random_state=0)[0])
            for g in OFFLINE_A_GRID]
    assert aucs[list(OFFLINE_A_GRID).index(a)] == pytest.approx(max(aucs))


def test_rmia_needs_likelihoods():
    game = _game(np.array([[True, False], [False, True]]), np.zeros((2, 2)), output="neg_squared_error")
    with pytest.raises(TypeError, match="not a likelihood"):
        RMIA().score(game)
    with pytest.raises(ValueError, match="densities"):
        rmia_scores(np.ones((2, 3)), np.eye(2, 3, dtype=bool), online=False)


# ---------------------------------------------------------------- GLiR
def test_glir_null_p_values_are_uniform_with_the_theorem_statistic(rng):
    """Non-members: n (m - theta)^T Sigma^-1 (m - theta) ~ chi2_d(nK) exactly for Gaussian
    gradients, so the p-values are Uniform(0, 1); the printed (n - 1) scale is not."""
    d, n, reps = 4, 5, 3000
    A = rng.normal(size=(d, d))
    cov = A @ A.T + np.eye(d)
    mu = rng.normal(size=d)
    chol = np.linalg.cholesky(cov)
    batch_means = mu + (rng.normal(size=(reps, n, d)) @ chol.T).mean(axis=1)
    queries = mu + rng.normal(size=(reps, d)) @ chol.T
    p_theorem = np.array([np.exp(glir_scores(batch_means[r], queries[r:r + 1], batch_size=n, mean=mu,
                                             covariance=cov, return_log_p=True)[0]) for r in range(reps)])
    p_paper = np.array([np.exp(glir_scores(batch_means[r], queries[r:r + 1], batch_size=n, mean=mu,
                                           covariance=cov, statistic="paper", return_log_p=True)[0])
                        for r in range(reps)])
    assert stats.kstest(p_theorem, "uniform").pvalue > 1e-3
    assert stats.kstest(p_paper, "uniform").pvalue < 1e-6


def test_glir_tpr_matches_leemann_eq8(rng):
    """For a fixed query gradient theta (susceptibility K), the member rate at FPR alpha is
    1 - beta(alpha) of Eq. (8) (tau = 0): checked with a binomial 99.9% interval."""
    from skmip.bounds import gmip_tradeoff

    d, n, reps, alpha = 3, 20, 4000, 0.1
    theta = np.array([1.0, -0.5, 0.8])
    K = float(theta @ theta)
    others = rng.normal(size=(reps, n - 1, d))
    m_in = (others.sum(axis=1) + theta) / n
    log_p = np.array([glir_scores(m_in[r], theta[None], batch_size=n, mean=np.zeros(d),
                                  covariance=np.eye(d), return_log_p=True)[0] for r in range(reps)])
    tpr = np.mean(log_p <= np.log(alpha))  # reject H0 at level alpha
    expected = 1.0 - gmip_tradeoff(alpha, n=n, d=d, K=K)
    lo, hi = stats.binomtest(int(round(tpr * reps)), reps).proportion_ci(0.999)
    assert lo <= expected <= hi


def test_glir_with_background_estimates_and_steps(rng):
    d, n = 3, 30
    batch = rng.normal(size=(n, d))
    outside = rng.normal(size=(n, d))
    # A background whose sample mean is exactly 0 and sample covariance exactly I: the
    # estimated path (Algorithm 1, lines 3-6) must then reproduce the known-parameter scores.
    background = rng.normal(size=(500, d))
    background -= background.mean(0)
    w, v = np.linalg.eigh(np.cov(background, rowvar=False))
    background = background @ (v / np.sqrt(w)) @ v.T
    queries = np.vstack([batch, outside])
    one = glir_scores(batch.mean(0), queries, background, batch_size=n)
    known = glir_scores(batch.mean(0), queries, batch_size=n, mean=np.zeros(d), covariance=np.eye(d))
    np.testing.assert_allclose(one, known, rtol=1e-9, atol=1e-9)
    two = glir_scores(np.stack([batch.mean(0)] * 2), np.stack([queries] * 2), np.stack([background] * 2),
                      batch_size=n)
    np.testing.assert_allclose(two, 2 * one)
    member = np.r_[np.ones(n), np.zeros(n)].astype(bool)
    assert mi_roc_auc(member, one) > 0.5


def test_glir_errors(rng):
    with pytest.raises(ValueError, match="singular"):
        glir_scores(np.zeros(5), rng.normal(size=(2, 5)), rng.normal(size=(3, 5)), batch_size=10)
    ok = glir_scores(np.zeros(5), rng.normal(size=(2, 5)), rng.normal(size=(3, 5)), batch_size=10, ridge=0.1)
    assert np.all(np.isfinite(ok))
    with pytest.raises(ValueError, match="background_gradients"):
        glir_scores(np.zeros(2), np.zeros((1, 2)), batch_size=10)
    with pytest.raises(ValueError, match="batch_size"):
        glir_scores(np.zeros(2), np.zeros((1, 2)), batch_size=1, mean=np.zeros(2), covariance=np.eye(2))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_logistic_gradients_match_finite_differences(n_classes):
    X, y = load_iris(return_X_y=True)
    keep = y < n_classes
    X, y = X[keep][::5], y[keep][::5]
    model = LogisticRegression(C=1.0, max_iter=500).fit(X, y)
    grads = logistic_per_sample_gradients(model, X, y)
    coef, intercept = model.coef_.copy(), model.intercept_.copy()
    theta = np.r_[coef.ravel(), intercept]
    assert grads.shape == (len(y), theta.size)

    def losses(vec):
        W = vec[: coef.size].reshape(coef.shape)
        b = vec[coef.size:]
        z = X @ W.T + b
        if z.shape[1] == 1:
            z = np.hstack([np.zeros_like(z), z])
        return -(z[np.arange(len(y)), y] - logsumexp(z, axis=1))

    h = 1e-6
    numeric = np.column_stack([(losses(theta + h * e) - losses(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])
    np.testing.assert_allclose(grads, numeric, rtol=1e-5, atol=1e-7)


def test_logistic_gradients_from_arrays():
    g = logistic_per_sample_gradients(np.array([1.0, -1.0]), [[1.0, 0.0], [0.0, 1.0]], [1, 0])
    expected = np.array([[1 / (1 + np.e) * -1 * 1.0, 0.0], [0.0, 1 / (1 + np.e)]])
    np.testing.assert_allclose(g, expected)
    with pytest.raises(ValueError, match="0/1"):
        logistic_per_sample_gradients(np.array([1.0, -1.0]), [[1.0, 0.0]], [2])


# ---------------------------------------------------------------- registry
def test_registry_aliases_and_objects():
    assert {"loss", "yeom", "lira", "lira_offline", "rmia", "rmia_offline"} <= set(available_attacks())
    assert get_attack("lira") == LiRA()
    assert get_attack("lira_offline") == LiRA(online=False)
    assert get_attack("yeom") == LossAttack()
    custom = RMIA(gamma=2.0)
    assert get_attack(custom) is custom
    with pytest.raises(ValueError, match="known: .*lira"):
        get_attack("lira2")
    with pytest.raises(TypeError, match="score"):
        get_attack(42)


def test_register_attack():
    class Constant:
        def score(self, game):
            return np.zeros(game.membership.shape)

    register_attack("constant_for_test", Constant)
    try:
        assert isinstance(get_attack("constant_for_test"), Constant)
    finally:
        from skmip.audit.attacks import _REGISTRY

        _REGISTRY.pop("constant_for_test")


def _naive_rmia_prior(ll, m, k, online, a):
    """log P(x) of target k by a direct sum over its K - 1 references (the O(K^2 n) way)."""
    from scipy.special import logsumexp

    refs = np.arange(ll.shape[0]) != k
    mean_all = logsumexp(ll[refs], axis=0) - np.log(refs.sum())
    if online:
        return mean_all
    out = refs[:, None] & ~m
    with np.errstate(divide="ignore"):
        mean_out = logsumexp(np.where(out, ll, -np.inf), axis=0) - np.log(out.sum(0))
    mean_out = np.where(out.sum(0) > 0, mean_out, mean_all)
    return np.logaddexp(np.log((1 + a) / 2) + mean_out, np.log((1 - a) / 2))


@pytest.mark.parametrize("online", [True, False])
def test_rmia_cost_is_linear_in_the_number_of_models(rng, monkeypatch, online):
    """Offline RMIA used to sum K - 1 references for each of K targets and each of the 11
    tuning values of a (O(K^2 n)). Now the reference means of all targets come from a fixed
    number of leave-one-out passes over the K x n matrix, and each target adds a fixed number
    of rankings of n rows: counted here, for K = 6 and K = 24. The scores equal the direct sums'."""
    import skmip.audit.attacks.rmia as rmia

    calls = {"loo_rows": [], "dominance": 0}
    loo, dominance = rmia._loo_log_mean, rmia._dominance

    def counting_loo(values, weights):
        calls["loo_rows"].append(values.shape[0])
        return loo(values, weights)

    def counting_dominance(*args):
        calls["dominance"] += 1
        return dominance(*args)

    monkeypatch.setattr(rmia, "_loo_log_mean", counting_loo)
    monkeypatch.setattr(rmia, "_dominance", counting_dominance)
    per_target = 1 if online else 1 + len(OFFLINE_A_GRID)
    for K in (6, 24):
        calls.update(loo_rows=[], dominance=0)
        m = _balanced_membership(rng, K, 60)
        ll = np.log(stats.norm.cdf(rng.normal(size=(1, 60)) + m + 0.5 * rng.normal(size=(K, 60))))
        scores = rmia_scores(ll, m, online=online, offline_a=0.3 if K == 6 else "auto", tie_break=False)
        # a fixed number of passes over (at most) all K models: O(K n) work
        assert len(calls["loo_rows"]) == (1 if online else 2 if K == 6 else 4)
        assert max(calls["loo_rows"]) == K
        # one ranking per target, plus the grid of a per target when a is tuned
        assert calls["dominance"] == K * (per_target if K == 24 else 1)
        if K == 6:  # the leave-one-out means are the direct sums
            for k in range(K):
                log_ratio = ll[k] - _naive_rmia_prior(ll, m, k, online, 0.3)
                population = np.flatnonzero(~m[k])
                np.testing.assert_allclose(scores[k], dominance(log_ratio, population, 0.0), atol=1e-12)
