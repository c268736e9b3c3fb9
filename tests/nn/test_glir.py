"""skmip.nn.grads: per-sample gradients with torch.func and GLiR audits of real nets."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")

from scipy import stats  # noqa: E402
from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skmip.bounds import gaussian_tradeoff, gmip_mu_step  # noqa: E402
from skmip.nn import (  # noqa: E402
    MLPModule,
    NeuralNetClassifier,
    NeuralNetRegressor,
    per_sample_gradients,
    sgd_step_gradients,
)


@pytest.fixture(scope="module")
def data():
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X).astype(np.float32)
    perm = np.random.default_rng(0).permutation(len(X))
    return X[perm], y[perm]


@pytest.fixture(scope="module")
def net(data):
    X, y = data
    # "Pretrained" on public rows (the first 200), as in Leemann §6's fine-tuning set-up.
    return NeuralNetClassifier(
        MLPModule, module__n_features=30, module__hidden=(8,), max_epochs=5, lr=0.1, verbose=0,
        random_state=0,
    ).fit(X[:200], y[:200])


def autograd_rows(net, X, y):
    rows = []
    for i in range(len(X)):
        net.module_.zero_grad()
        out = net.module_(torch.as_tensor(X[i : i + 1]))
        net.get_loss(out, torch.as_tensor(y[i : i + 1])).backward()
        rows.append(torch.cat([p.grad.flatten() for p in net.module_.parameters()]).double().numpy())
    net.module_.zero_grad()
    return np.stack(rows)


def test_matches_autograd_within_float32_roundoff(net, data):
    X, y = data
    G = per_sample_gradients(net, X[:40], y[:40], batch_size=16)
    ref = autograd_rows(net, X[:40], y[:40])
    # float32 accumulation: a few ulps of the largest entry of each row.
    tol = 64 * np.finfo(np.float32).eps * np.abs(ref).max(axis=1, keepdims=True)
    assert np.all(np.abs(G - ref) <= tol)


def test_selection_is_a_column_subset(net, data):
    X, y = data
    full = per_sample_gradients(net, X[:10], y[:10])
    last = per_sample_gradients(net, X[:10], y[:10], include=["output.*"])
    assert last.shape == (10, 8 * 2 + 2)
    np.testing.assert_array_equal(last, full[:, -18:])


def test_eval_mode_and_regressor(data):
    X, y = data
    reg = NeuralNetRegressor(
        MLPModule, module__n_features=30, module__n_outputs=1, module__dropout=0.5, max_epochs=1,
        verbose=0, random_state=0,
    ).fit(X[:50], y[:50, None].astype(np.float32))
    reg.module_.train()
    a = per_sample_gradients(reg, X[:5], y[:5, None].astype(np.float32))
    b = per_sample_gradients(reg, X[:5], y[:5, None].astype(np.float32))
    np.testing.assert_array_equal(a, b)  # dropout off while differentiating
    assert reg.module_.training


def test_sgd_steps_replay_and_leave_net_alone(net, data):
    X, y = data
    before = [p.detach().clone() for p in net.module_.parameters()]
    nets, means = sgd_step_gradients(net, X[200:232], y[200:232], n_steps=2, lr=0.5, include=["output.*"])
    for p, q in zip(before, net.module_.parameters()):
        assert torch.equal(p, q)
    w0 = torch.cat([p.flatten() for p in nets[0].module_.output.parameters()]).detach().double().numpy()
    w1 = torch.cat([p.flatten() for p in nets[1].module_.output.parameters()]).detach().double().numpy()
    np.testing.assert_allclose(w1, w0 - 0.5 * means[0], atol=1e-6)
    np.testing.assert_array_equal(nets[1].module_.hidden[0].weight.detach(), net.module_.hidden[0].weight.detach())


def test_glir_audit_on_real_gradients_fig2b(net, data):
    """Leemann Fig. 2b on breast cancer: one step of last-layer fine-tuning, estimated
    gradient mean and covariance. The attack is far better than chance and, as in the
    paper, not better than the analytic curve of Eq. 9 with K = d."""
    glir = pytest.importorskip("skmip.audit.attacks.glir")
    from skmip.nn import glir_audit

    X, y = data
    n, d = 16, 18
    background = slice(200, 400)
    pool = np.arange(400, len(X))  # 169 private rows: 5 audits of 16 members + 16 outsiders
    rng = np.random.default_rng(1)
    member_scores, outsider_scores = [], []
    for _ in range(5):
        rows = rng.choice(pool, size=2 * n, replace=False)
        batch, outside = rows[:n], rows[n:]
        queries = np.concatenate([batch, outside])
        s = glir_audit(net, X[batch], y[batch], X[queries], y[queries], X[background], y[background],
                       include=["output.*"], ridge=1e-3)
        member_scores.append(s[:n])
        outsider_scores.append(s[n:])
    members, outsiders = np.concatenate(member_scores), np.concatenate(outsider_scores)
    auc = stats.mannwhitneyu(members, outsiders, alternative="greater").statistic / (80 * 80)
    # Mann-Whitney one-sided test against chance (AUC = 0.5).
    assert stats.mannwhitneyu(members, outsiders, alternative="greater").pvalue < 1e-3
    analytic_auc = stats.norm.cdf(gmip_mu_step(n, d) / np.sqrt(2))
    # The AUC's standard error under the null is sqrt((n1 + n2 + 1) / (12 n1 n2)) ~ 0.046.
    assert auc <= analytic_auc + 3 * np.sqrt(161 / (12 * 80 * 80))
    assert gaussian_tradeoff(0.1, gmip_mu_step(n, d)) < 0.9  # the bound is informative here
    assert glir is not None


def test_k_step_audit_sums_log_p_values(net, data):
    glir = pytest.importorskip("skmip.audit.attacks.glir")
    from skmip.nn import glir_audit

    X, y = data
    batch, queries, background = np.arange(400, 416), np.arange(400, 432), slice(200, 400)
    args = (net, X[batch], y[batch], X[queries], y[queries], X[background], y[background])
    one = glir_audit(*args, include=["output.*"], ridge=1e-3, n_steps=1, lr=0.1, return_log_p=True)
    two = glir_audit(*args, include=["output.*"], ridge=1e-3, n_steps=2, lr=0.1, return_log_p=True)
    assert one.shape == two.shape == (32,)
    assert np.all(two <= one + 1e-9)  # log p-values are <= 0 and add up over steps
    # The second step's log p-values are those of a one-step audit from the updated net.
    nets, _ = sgd_step_gradients(net, X[batch], y[batch], n_steps=2, lr=0.1, include=["output.*"])
    second = glir_audit(nets[1], *args[1:], include=["output.*"], ridge=1e-3, n_steps=1, lr=0.1,
                        return_log_p=True)
    np.testing.assert_allclose(two, one + second, rtol=1e-6, atol=1e-6)
    assert glir is not None
