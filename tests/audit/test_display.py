"""MIAttackDisplay and PrivacyUtilityDisplay (matplotlib, Agg backend)."""

import subprocess
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from sklearn.datasets import load_breast_cancer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skmip.audit.display import MIAttackDisplay, PrivacyUtilityDisplay  # noqa: E402
from skmip.audit.metrics import mi_roc_auc, mi_roc_curve  # noqa: E402
from skmip.audit.scoring import MIAttackScorer  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X)[:200], y[:200]


def test_importing_the_module_does_not_import_matplotlib():
    code = "import sys, skmip.audit.display, skmip.audit.scoring; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_from_predictions_draws_roc_diagonal_and_bounds(rng):
    member = rng.random(3000) < 0.5
    scores = rng.normal(size=3000) + member
    disp = MIAttackDisplay.from_predictions(member, scores, eta=0.1, mu=1.0, name="toy")
    fpr, tpr, _ = mi_roc_curve(member, scores)
    assert disp.roc_auc == pytest.approx(mi_roc_auc(member, scores))
    assert disp.ax_.get_xscale() == disp.ax_.get_yscale() == "log"
    x, y = disp.line_.get_data()
    np.testing.assert_allclose(y, tpr)
    np.testing.assert_allclose(x[fpr > 0], fpr[fpr > 0])
    assert np.all(x > 0)  # FPR = 0 moved onto the log axis
    bx, by = disp.mip_line_.get_data()
    np.testing.assert_allclose(by, np.minimum(1.0, bx + 0.2))
    gx, gy = disp.gmip_line_.get_data()
    from scipy.stats import norm

    np.testing.assert_allclose(gy, norm.cdf(norm.ppf(gx) + 1.0), atol=1e-12)
    labels = [t.get_text() for t in disp.ax_.get_legend().get_texts()]
    assert labels[0].startswith("toy (AUC = ") and any("0.1-MIP" in t for t in labels)
    assert disp.figure_ is disp.ax_.figure


def test_no_bound_lines_without_bounds_and_linear_axes(rng):
    member = rng.random(200) < 0.5
    disp = MIAttackDisplay.from_predictions(member, rng.normal(size=200), log_scale=False, plot_chance_level=False)
    assert disp.mip_line_ is None and disp.gmip_line_ is None and disp.chance_level_ is None
    assert disp.ax_.get_xscale() == "linear"


def test_from_scores_is_a_deprecated_alias_of_from_predictions(rng):
    member = rng.random(200) < 0.5
    scores = rng.normal(size=200) + member
    with pytest.warns(FutureWarning, match="renamed from_predictions"):
        old = MIAttackDisplay.from_scores(member, scores, eta=0.1, name="old")
    new = MIAttackDisplay.from_predictions(member, scores, eta=0.1, name="old")
    np.testing.assert_array_equal(old.line_.get_data()[1], new.line_.get_data()[1])
    assert old.roc_auc == new.roc_auc and old.eta == new.eta


def test_from_estimator_plays_the_game_or_reuses_a_fitted_audit(cancer):
    X, y = cancer
    disp = MIAttackDisplay.from_estimator(LogisticRegression(), X, y, attack="loss", n_models=3, random_state=0)
    assert disp.eta is None and disp.name == "loss"
    audit = MIAttackScorer(LogisticRegression(), attack="loss", n_models=3, random_state=0).fit(X, y)
    again = MIAttackDisplay.from_estimator(audit)
    np.testing.assert_allclose(again.tpr, disp.tpr)


def test_from_estimator_draws_the_stated_mip_bound(cancer):
    from skmip import MIPNoiseWrapper

    X, y = cancer
    wrapper = MIPNoiseWrapper(LogisticRegression(), method="moments", eta=0.25, n_subsets=4, train_size=1.0)
    disp = MIAttackDisplay.from_estimator(wrapper, X, y, attack="loss", n_models=3, random_state=0)
    assert disp.eta == 0.25 and disp.mip_line_ is not None


def test_privacy_utility_from_cv_results():
    cv_results = {
        "param_eta": np.ma.masked_array([0.4, 0.05, 0.2]),
        "mean_test_mi": np.array([-0.60, -0.50, -0.55]),
        "std_test_mi": np.array([0.02, 0.01, 0.01]),
        "mean_test_accuracy": np.array([0.95, 0.60, 0.80]),
        "std_test_accuracy": np.array([0.01, 0.05, 0.02]),
    }
    disp = PrivacyUtilityDisplay.from_cv_results(cv_results)
    np.testing.assert_allclose(disp.privacy, [0.60, 0.50, 0.55])
    x, y = disp.line_.get_data()
    np.testing.assert_allclose(x, [0.50, 0.55, 0.60])  # sorted by leakage
    np.testing.assert_allclose(y, [0.60, 0.80, 0.95])
    assert disp.errorbar_ is not None
    assert sorted(t.get_text() for t in disp.ax_.texts) == ["0.05", "0.2", "0.4"]
    assert disp.ax_.get_xlabel() == "membership-inference leakage (mi)"
    with pytest.raises(KeyError, match="mean_test_auc"):
        PrivacyUtilityDisplay.from_cv_results(cv_results, privacy="auc")
