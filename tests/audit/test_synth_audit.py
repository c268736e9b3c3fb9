"""The membership game on synthesizers (skmip.audit.synth_audit) and its attacks (skmip.audit.attacks.synthetic)."""

import itertools
import json
import math
import warnings

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import norm
from sklearn.base import BaseEstimator

from skmip import DPMarginalSynthesizer, MIPMarginalSynthesizer
from skmip.audit.attacks.synthetic import (
    ClosestRecordAttack,
    DensityRatioAttack,
    MarginalLikelihoodAttack,
    RecordEncoder,
    closest_record_distance,
    kde_log_density,
)
from skmip.bounds import dp_to_mip
from skmip.app.cli import main
from skmip.exceptions import PrivacyWarning
from skmip.audit.metrics import mi_roc_auc
from skmip.audit.synth_audit import CopyingSynthesizer, SynthesizerAuditor, synthesizer_promise


class _IndependentSynthesizer(BaseEstimator):
    """Samples N(0, I) whatever it is fitted on: its release carries no information on membership."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def fit(self, X, y=None):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def sample(self, n_samples=1, random_state=None):
        return np.random.default_rng(random_state).normal(size=(n_samples, self.n_features_in_))


@pytest.fixture(scope="module")
def gaussian_pool():
    return np.random.default_rng(0).normal(size=(100, 3))


def test_copying_is_detected(gaussian_pool):
    audit = SynthesizerAuditor(CopyingSynthesizer(), n_models=8, random_state=0).fit(gaussian_pool)
    dcr = audit.results_["closest_record"]
    # A member is copied at least once among n = 2k draws with probability 1 - (1 - 1/k)^(2k)
    # ~ 0.867, then at distance 0, where no non-member (continuous data) is: TPR ~ 0.867 at
    # FPR 0 (sd ~ 0.017 over 400 member trials), AUC ~ 0.867 + 0.133 / 2 = 0.93.
    assert dcr.tpr[0] > 0.8 and dcr.tpr[1] > 0.8
    assert dcr.roc_auc > 0.9
    assert audit.results_["density_ratio"].roc_auc > 0.75
    assert audit.attack_ in ("closest_record", "density_ratio")
    assert audit.bound_ is None and audit.bound_holds_ is None
    assert audit.empirical_epsilon_ > 1.0
    low, high = dcr.tpr_interval
    assert np.all(low <= dcr.tpr) and np.all(dcr.tpr <= high)


def test_independent_synthesizer_is_at_chance(gaussian_pool):
    audit = SynthesizerAuditor(_IndependentSynthesizer(), n_models=8, random_state=0).fit(gaussian_pool)
    n_pos = int(audit.membership_.sum())
    n_neg = audit.membership_.size - n_pos
    # Membership is independent of the scores: the AUC is a Mann-Whitney statistic under the
    # null, standard deviation sqrt((n_pos + n_neg + 1) / (12 n_pos n_neg)); 4 of them.
    tolerance = 4 * math.sqrt((n_pos + n_neg + 1) / (12 * n_pos * n_neg))
    for result in audit.results_.values():
        assert abs(result.roc_auc - 0.5) < tolerance, result


def _brute_force_scores(synth, X):
    """Independent exact log P(v | i in S) - log P(v | i not in S) for a 1-way marginal release."""
    values = X[:, 0].astype(str)
    cats = np.asarray(synth.categories_[0]).astype(str)
    v = np.asarray(synth.noisy_tables_[0], dtype=float).ravel()
    n, k = len(values), synth.n_train_
    log_in = [[] for _ in range(n)]
    log_out = [[] for _ in range(n)]
    for half in itertools.combinations(range(n), k):
        present = set(values[list(half)])
        if present != set(cats):  # categories_ lists the training half's values exactly
            lp = -np.inf
        else:
            f = np.array([np.sum(values[list(half)] == c) for c in cats]) / k
            lp = norm.logpdf(v, loc=f, scale=synth.noise_scale_).sum()
        for i in range(n):
            (log_in if i in half else log_out)[i].append(lp)
    return np.array([logsumexp(a) - logsumexp(b) for a, b in zip(log_in, log_out)])


def test_exact_marginal_likelihood_matches_enumeration():
    X = np.array([["a"], ["a"], ["b"], ["b"], ["b"], ["c"]], dtype=object)
    attack = MarginalLikelihoodAttack()
    state = attack.prepare(X, None, RecordEncoder(X))
    assert state["exact"] and state["halves"].shape == (20, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        for seed, rows in [(0, [0, 2, 5]), (1, [1, 3, 4]), (2, [0, 1, 2])]:
            synth = MIPMarginalSynthesizer(eta=0.3, marginals=[(0,)], train_size=1.0, random_state=seed)
            synth.fit(X[rows])
            got = attack.score(synth, None, X, state)
            want = _brute_force_scores(synth, X)
            finite = np.isfinite(want)
            np.testing.assert_allclose(got[finite], want[finite], rtol=1e-9, atol=1e-9)
            # Certain cases (a value the synthesizer does not list: not a member; the only
            # record of a listed value: a member) are the largest finite scores, signed.
            assert np.all(np.abs(got[~finite]) == 1e300)
            np.testing.assert_array_equal(np.sign(got[~finite]), np.sign(want[~finite]))


def test_gaussian_approximation_agrees_with_the_exact_attack_under_large_noise():
    """The Gaussian approximation is exact to first order in (sampling variance / noise variance)."""
    rng = np.random.default_rng(0)
    X = np.c_[rng.integers(0, 3, 12), rng.integers(0, 2, 12)]
    enc = RecordEncoder(X)
    exact, approx = MarginalLikelihoodAttack(exact=True), MarginalLikelihoodAttack(exact=False)
    state_exact, state_approx = exact.prepare(X, None, enc), approx.prepare(X, None, enc)
    assert state_exact["exact"] and not state_approx["exact"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        # train_size=0.5: categories from D, D_train a random half of the 12 rows (the release mode).
        synth = DPMarginalSynthesizer(epsilon=0.05, delta=1e-6, marginals=[(0, 1)], random_state=1).fit(X)
    a = exact.score(synth, None, X, state_exact)
    b = approx.score(synth, None, X, state_approx)
    # A cell fraction of a half of 12 rows varies by at most 1/4 (sd); the noise sd is ~16, so the
    # neglected terms are ~(0.25 / 16)^2 = 2e-4 of the score.
    ratio = (0.25 / synth.noise_scale_) ** 2
    assert np.max(np.abs(a - b)) <= 5 * ratio * np.max(np.abs(a))


def test_marginal_attack_in_the_game_and_dp_promise():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 3, 300)
    X = np.c_[a, (a + rng.integers(0, 2, 300)) % 3, rng.integers(0, 2, 300)]
    audit = SynthesizerAuditor(
        DPMarginalSynthesizer(epsilon=1.0, delta=1e-6, marginals=[(0, 1), (1, 2)]), n_models=4, random_state=0,
    ).fit(X)
    assert audit.attacks_ == ["density_ratio", "closest_record", "marginal_likelihood"]
    assert audit.bound_ == pytest.approx(float(dp_to_mip(1.0, 1e-6)))
    assert audit.bound_promised_ is False  # train_size=1.0 lists the half's own categories
    assert audit.bound_holds_ is True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        fitted = DPMarginalSynthesizer(epsilon=1.0, marginals=[(0, 1), (1, 2)], random_state=0).fit(X)
    assert synthesizer_promise(fitted).details["promised"] is True


def test_attack_building_blocks():
    np.testing.assert_allclose(closest_record_distance([[0, 0], [3, 4]], [[0, 0], [3, 0]]), [0.0, 4.0])
    X = np.array([["a", 1.0], ["b", 2.0], ["a", 3.0]], dtype=object)
    enc = RecordEncoder(X)
    assert enc.numeric.tolist() == [1] and enc.categorical.tolist() == [0]
    # The product kernel integrates to one: categories sum, numbers integrate (Riemann sum).
    grid = np.linspace(-12, 12, 2001)
    total = 0.0
    for c in ("a", "b"):
        pts = np.array([[c, 2.0 + g * enc.scale[0]] for g in grid], dtype=object)
        total += np.exp(kde_log_density(pts, X, enc, bandwidth=0.7, smoothing=0.2)).sum() * (grid[1] - grid[0])
    assert total == pytest.approx(1.0, abs=1e-3)
    assert repr(DensityRatioAttack()) == "DensityRatioAttack(bandwidth='cv')"
    assert ClosestRecordAttack().name == "closest_record"


def test_moved_names_still_import():
    with pytest.warns(FutureWarning, match=r"skmip.release.gaussian.\w+ moved to skmip.audit"):
        from skmip.release.gaussian import CopyingSynthesizer as Moved, closest_record_signal

    assert Moved is CopyingSynthesizer
    X = np.array([[0.0, 0.0], [3.0, 4.0]])
    assert closest_record_signal(CopyingSynthesizer().fit(X[:1]), X, n_samples=5).tolist() == [-0.0, -5.0]


@pytest.mark.parametrize(
    "kwargs, X, error, match",
    [
        ({"synthesizer": None}, None, ValueError, "synthesizer is None"),
        ({"n_models": 1}, None, ValueError, "n_models"),
        ({"attacks": ["no_such"]}, None, ValueError, "unknown attack"),
        ({"attacks": ["marginal_likelihood"]}, None, ValueError, "releases none"),
        ({"attacks": ["dcr", "closest_record"]}, None, ValueError, "twice"),
        ({"fpr": 1.5}, None, ValueError, "fpr"),
        ({"confidence": 1.0}, None, ValueError, "confidence"),
        ({"synthesizer": object()}, None, TypeError, "sample"),
        ({}, np.zeros((3, 2)), ValueError, "at least 4 rows"),
    ],
)
def test_input_validation(kwargs, X, error, match, gaussian_pool):
    params = {"synthesizer": CopyingSynthesizer(), "n_models": 2, "random_state": 0, **kwargs}
    auditor = SynthesizerAuditor(**params)
    with pytest.raises(error, match=match):
        auditor.fit(gaussian_pool if X is None else X)
    assert not hasattr(auditor, "results_")


def test_bad_reference_leaves_a_fitted_auditor_unchanged(gaussian_pool):
    auditor = SynthesizerAuditor(CopyingSynthesizer(), attacks=["dcr"], n_models=2, random_state=0).fit(gaussian_pool)
    before = auditor.results_
    with pytest.raises(ValueError, match="X_reference"):
        auditor.fit(gaussian_pool, X_reference=np.zeros((5, 2)))
    assert auditor.results_ is before


def test_cli_synthesizer_audit(tmp_path, capsys):
    out = tmp_path / "synth.json"
    code = main(["--synthesizer", "copying", "--synthesizer", "mip-marginal", "--dataset", "german_credit",
                 "--n-samples", "200", "--n-models", "4", "--eta", "0.2", "--json", str(out), "-q"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "copying (control)" in printed and "marginal_likelihood" in printed
    report = json.loads(out.read_text())
    assert report["complete"] is True
    copying = [r for r in report["results"] if r["synthesizer"] == "copying (control)"]
    assert {r["attack"] for r in copying} == {"density_ratio", "closest_record"}
    assert max(r["tpr_at_1pct_fpr"] for r in copying) > 0.5
    mip = [r for r in report["results"] if r["synthesizer"].startswith("MIP")]
    assert all(r["bound"] == pytest.approx(0.2) and r["bound_holds"] for r in mip)


def test_cli_synthesizer_errors(capsys):
    assert main(["--synthesizer", "nope", "--dataset", "german_credit", "-q"]) == 2
    assert "unknown" in capsys.readouterr().err
    assert main(["--synthesizer", "copying", "--estimator", "logreg", "--dataset", "german_credit", "-q"]) == 2
    assert "two commands" in capsys.readouterr().err


def test_auc_metric_is_the_one_of_the_model_audit(gaussian_pool):
    audit = SynthesizerAuditor(CopyingSynthesizer(), attacks=["dcr"], n_models=2, random_state=0).fit(gaussian_pool)
    assert audit.roc_auc_ == mi_roc_auc(audit.membership_, audit.scores_["closest_record"])
