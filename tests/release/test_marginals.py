"""MIPMarginalSynthesizer and DPMarginalSynthesizer: exact calibration, post-processing, sampler."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip import DPMarginalSynthesizer, MIPMarginalSynthesizer, PrivacyWarning
from skmip.bounds import coupling_eta
from skmip.release.marginal_sampling import (_consistent_tables, _round_counts, _rounding_marginals,
                                            _systematic_resample)
from skmip.release.marginals import chow_liu_tree, select_pairs
from skmip.calibration.swap import marginal_swap_deltas

pytestmark = pytest.mark.filterwarnings("ignore::skmip.exceptions.PrivacyWarning")


@pytest.fixture(scope="module")
def chain():
    """A Markov chain a -> b -> c over 3, 3 and 2 categories, plus an independent d."""
    rng = np.random.default_rng(0)
    n = 6000
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.8, a, rng.integers(0, 3, n))
    c = np.where(rng.random(n) < 0.9, b % 2, 1 - b % 2)
    d = rng.integers(0, 2, n)
    return np.c_[a, b, c, d]


def test_tree_recovers_the_chain(chain):
    edges = chow_liu_tree(chain)
    assert {(0, 1), (1, 2)} <= set(edges) and len(edges) == 3


def test_calibration_is_the_exact_coupling_bound(chain):
    synth = MIPMarginalSynthesizer(eta=0.1, random_state=0).fit(chain)
    assert synth.coupling_eta_ == pytest.approx(0.1, rel=1e-6) and synth.mip_bound_ == 0.1
    res = marginal_swap_deltas(chain, synth.marginals_, train_size=3000)
    assert coupling_eta(res.distances, synth.noise_scale_, weights=res.weights) == pytest.approx(0.1, rel=1e-6)
    # Worst case over pairs: every swap partner differing on every marginal gives the
    # largest noise; the expectation over e needs strictly less.
    m = len(synth.marginals_)
    worst = coupling_eta(np.full((1, 1, 1), np.sqrt(2 * m) / 3000), synth.noise_scale_)
    assert worst > 0.1


def test_tables_are_consistent_probabilities(chain):
    synth = MIPMarginalSynthesizer(eta=0.1, random_state=1).fit(chain)
    for m, table in zip(synth.marginals_, synth.tables_):
        assert table.min() >= 0 and table.sum() == pytest.approx(1.0)
        if len(m) == 2:
            np.testing.assert_allclose(table.sum(axis=1), synth.one_way_[m[0]], atol=1e-6)
            np.testing.assert_allclose(table.sum(axis=0), synth.one_way_[m[1]], atol=1e-6)


def test_least_squares_step_reaches_the_margins_exactly():
    rng = np.random.default_rng(3)
    noisy = [rng.normal(0.1, 0.05, size=(3, 4)), rng.normal(0.2, 0.05, size=(4, 2)), rng.normal(0.3, 0.1, size=3)]
    tables, one_way = _consistent_tables([(0, 1), (1, 2), (0,)], noisy, [3, 4, 2])
    for p in one_way:
        assert p.min() >= 0 and p.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(tables[0].sum(1), one_way[0], atol=1e-6)
    np.testing.assert_allclose(tables[1].sum(0), one_way[2], atol=1e-6)
    np.testing.assert_allclose(tables[2], one_way[0])


def test_sampler_draws_the_tree_law(chain):
    # With negligible noise the samples follow the tree's law: their 2-way tables on the
    # edges match the data's within binomial error (4 standard errors of a cell fraction).
    dp = DPMarginalSynthesizer(epsilon=1e9, marginals=[(0, 1), (1, 2), (3,)], train_size=1.0, random_state=0).fit(chain)
    samples = dp.sample(20_000, random_state=0)
    for i, j in [(0, 1), (1, 2)]:
        for u in np.unique(chain[:, i]):
            for v in np.unique(chain[:, j]):
                p = np.mean((chain[:, i] == u) & (chain[:, j] == v))
                q = np.mean((samples[:, i] == u) & (samples[:, j] == v))
                se = np.sqrt(p * (1 - p) / 20_000 + p * (1 - p) / len(chain))
                assert abs(p - q) < 4 * se + 1e-9


def test_label_tree_is_tree_augmented_naive_bayes(chain):
    # Label = column 2 (c): the tree over a, b, d given c, released as (c, root) and
    # (c, parent, child) triples; sampled with negligible noise, the records keep how
    # every column depends on the label (within binomial error, 4 standard errors).
    synth = MIPMarginalSynthesizer(eta=0.1, label=2, random_state=0).fit(chain)
    assert synth.marginals_[0] == (0, 2) and all(2 in m and len(m) == 3 for m in synth.marginals_[1:])
    assert len(synth.marginals_) == 3 and synth.coupling_eta_ == pytest.approx(0.1, rel=1e-6)
    dp = DPMarginalSynthesizer(epsilon=1e9, marginals=synth.marginals_, train_size=1.0, random_state=0).fit(chain)
    samples = dp.sample(20_000, random_state=1)
    for j in (0, 1, 3):
        for u in np.unique(chain[:, j]):
            for v in (0, 1):
                p = np.mean((chain[:, j] == u) & (chain[:, 2] == v))
                q = np.mean((samples[:, j] == u) & (samples[:, 2] == v))
                se = np.sqrt(p * (1 - p) / 20_000 + p * (1 - p) / len(chain))
                assert abs(p - q) < 4 * se + 1e-9
    for table in synth.tables_:
        assert table.min() >= 0 and table.sum() == pytest.approx(1.0)


@pytest.fixture(scope="module")
def parity():
    """b = a up to 10% flips, c = a xor b up to 5% flips: the tree (a, b), (b, c) misses how
    c depends on a given b."""
    rng = np.random.default_rng(4)
    n = 8000
    a = rng.integers(0, 2, n)
    b = a ^ (rng.random(n) < 0.1)
    c = a ^ b ^ (rng.random(n) < 0.05)
    return np.c_[a, b, c]


def test_select_is_a_function_of_D_only(parity):
    # Two releases with different D_train (different seeds) choose the same tables: the
    # selection never sees D_train. The noise is calibrated exactly over the final set.
    fits = [MIPMarginalSynthesizer(eta=0.1, marginals="select", random_state=seed).fit(parity) for seed in (0, 1)]
    assert fits[0].marginals_ == fits[1].marginals_
    chosen = fits[0].marginals_
    assert chosen[:2] == chow_liu_tree(parity) and chosen[2:] == select_pairs(parity, chosen[:2], eta=0.1,
                                                                              train_size=4000)
    assert len(chosen) == 3, "the pair the tree misses is measured"
    res = marginal_swap_deltas(parity, chosen, train_size=4000)
    assert coupling_eta(res.distances, fits[0].noise_scale_, weights=res.weights) == pytest.approx(0.1, rel=1e-6)
    # A smaller eta means more noise per table: the same gap no longer pays for it.
    assert select_pairs(parity, chosen[:2], eta=0.001, train_size=4000) == []


def test_cycles_are_fitted_by_least_squares():
    # a uniform on 4 values, b = a // 2, c = a % 2 (5% flips): given b, c still depends on a.
    # With negligible noise, samples of the cycle (a, b), (b, c), (a, c) reproduce the (a, c)
    # table, which the tree (a, b), (b, c) alone gets wrong. Tolerance: 4 binomial standard
    # errors of a cell fraction (samples and data), as in test_sampler_draws_the_tree_law.
    rng = np.random.default_rng(4)
    n, n_s = 8000, 20_000
    a = rng.integers(0, 4, n)
    X = np.c_[a, a // 2, (a % 2) ^ (rng.random(n) < 0.05)]
    for marginals, expect_match in (([(0, 1), (1, 2), (0, 2)], True), ([(0, 1), (1, 2)], False)):
        dp = DPMarginalSynthesizer(epsilon=1e9, marginals=marginals, train_size=1.0, random_state=0).fit(X)
        samples = dp.sample(n_s, random_state=0).astype(int)
        within = []
        for u in range(4):
            for v in (0, 1):
                p = np.mean((X[:, 0] == u) & (X[:, 2] == v))
                q = np.mean((samples[:, 0] == u) & (samples[:, 2] == v))
                within.append(abs(p - q) < 4 * np.sqrt(p * (1 - p) / n_s + p * (1 - p) / n) + 1e-9)
        assert all(within) == expect_match


def test_rounding_never_moves_the_draw_away_from_the_weighted_candidates():
    # _round_counts keeps an exchange only when the squared distance between the draw's
    # tables and the weighted candidates' falls, so the result is never further than the
    # systematic draw it starts from; it keeps the number of records and the candidates.
    rng = np.random.default_rng(7)
    candidates = rng.integers(0, 3, size=(3000, 4))
    weights = rng.random(3000) ** 3
    weights /= weights.sum()
    tables = _rounding_marginals([(0, 1), (1, 2, 3)], 4)
    assert tables[:2] == [(0, 1), (1, 2, 3)] and (0, 2) in tables and (1, 2) in tables and len(tables) == 7
    shapes = [(3,) * len(m) for m in tables]

    def distance(drawn):
        total = 0.0
        for m, s in zip(tables, shapes):
            cell = np.ravel_multi_index(tuple(candidates[:, j] for j in m), s)
            size = int(np.prod(s))
            r = np.bincount(cell[drawn], minlength=size) / drawn.size - np.bincount(cell, weights=weights, minlength=size)
            total += float(r @ r)
        return total

    for n in (1, 7, 500):
        drawn = _systematic_resample(candidates, weights, n, rng)
        rounded = _round_counts(candidates, weights, drawn, tables, shapes)
        assert rounded.shape == (n,) and rounded.min() >= 0 and rounded.max() < 3000
        assert distance(rounded) <= distance(drawn)
    assert distance(rounded) < distance(drawn)  # and it does move it (n = 500)


def test_string_columns_are_categories():
    rng = np.random.default_rng(2)
    X = np.c_[rng.choice(["f", "m"], 500), rng.choice(["a", "b", "c"], 500)].astype(object)
    synth = MIPMarginalSynthesizer(eta=0.2, marginals=[(0, 1)], random_state=0).fit(X)
    assert [c.tolist() for c in synth.categories_] == [["f", "m"], ["a", "b", "c"]]
    assert set(synth.sample(20, random_state=0)[:, 1]) <= {"a", "b", "c"}


def test_dataframe_input_names_and_strings():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"sex": rng.choice(["f", "m"], 500), "job": rng.choice(["a", "b", "c"], 500),
                       "income": rng.choice(["<=50K", ">50K"], 500)})
    synth = MIPMarginalSynthesizer(eta=0.2, marginals=[("sex", "income"), ("job", "income")],
                                   random_state=0).fit(df)
    assert synth.marginals_ == [(0, 2), (1, 2)]
    assert list(synth.feature_names_in_) == ["sex", "job", "income"]
    sample = synth.sample(10, random_state=0)
    assert set(sample[:, 2]) <= {"<=50K", ">50K"} and set(sample[:, 0]) <= {"f", "m"}


@pytest.mark.parametrize(
    "params, match",
    [
        ({"marginals": [(0, 1)]}, "in no marginal"),
        ({"marginals": [(0, 1, 1)]}, "distinct columns"),
        ({"marginals": [(0, 1), (2,)], "label": 2}, "shapes the 'tree'"),
        ({"label": 5}, "not a column"),
        ({"marginals": [(0, 7)]}, "not a column"),
        ({"marginals": "star"}, "'tree', 'select' or a list"),
        ({"eta": 0.6}, "eta must be in"),
        ({"train_size": 0.0}, "train_size"),
    ],
)
def test_invalid_parameters(params, match):
    X = np.random.default_rng(0).integers(0, 2, size=(50, 3))
    synth = MIPMarginalSynthesizer(**params)
    with pytest.raises(ValueError, match=match):
        synth.fit(X)
    assert not [k for k in vars(synth) if k.endswith("_")]
    with pytest.raises(NotFittedError):
        synth.sample(2)


def test_dp_noise_and_errors():
    X = np.random.default_rng(0).integers(0, 3, size=(1000, 3))
    gauss = DPMarginalSynthesizer(epsilon=0.5, delta=1e-6, marginals=[(0, 1), (2,)], random_state=0).fit(X)
    from skmip.release.dp_baselines import gaussian_noise_scale

    assert gauss.noise_scale_ * gauss.n_train_ == pytest.approx(gaussian_noise_scale(0.5, 1e-6, 2.0))
    with pytest.raises(ValueError, match="epsilon"):
        DPMarginalSynthesizer(epsilon=0.0).fit(X)
    with pytest.raises(ValueError, match="delta"):
        DPMarginalSynthesizer(delta=1.0).fit(X)


def test_fixed_seed_warns_and_nothing_private_is_kept(chain):
    with pytest.warns(PrivacyWarning, match="MIPMarginalSynthesizer"):
        warnings.simplefilter("always")
        synth = MIPMarginalSynthesizer(eta=0.1, random_state=0).fit(chain)
    blob = pickle.dumps(synth)
    assert len(blob) < 5000  # tables and categories only, no rows
    assert not hasattr(synth, "codes_") and not hasattr(synth, "deltas_")


@parametrize_with_checks([MIPMarginalSynthesizer(random_state=0), DPMarginalSynthesizer(random_state=0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
