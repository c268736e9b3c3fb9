"""Issue 22, point 3: a promise for any estimator, by training on eta-MIP synthetic data.

Estimators without a parameter adapter (trees, forests, boosting, k-NN) take
``method_="synthetic"`` under ``method="auto"``: MIPTabularSynthesizer on (X, y), then the
estimator on its samples. Privacy of the route is checked exactly in
tests/audit/test_exact_audit_suite.py; here: routing, mixed tables, domains, the promise's
conditions and scikit-learn compatibility.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.compose import make_column_transformer
from sklearn.ensemble import RandomForestClassifier
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip import MIPNoiseWrapper, MIPTabularSynthesizer, mip_noise_path
from skmip.release.domains import ColumnDomain, infer_domains, missing_mask
from skmip.exceptions import PrivacyWarning

pd = pytest.importorskip("pandas")


def _blobs(n=1200, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 2.0 * y[:, None]
    return X, y


def _frame(n=1500, seed=0):
    """A mixed table: integer age (with missing values), a string column, a mostly-zero amount."""
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n).astype(float)
    y = (age > 45).astype(int)
    color = np.where(y == 1, "red", rng.choice(["green", "blue"], n)).astype(object)
    amount = np.where(rng.random(n) < 0.6, 0.0, rng.exponential(500.0, n))
    age[:25] = np.nan
    color[25:40] = None
    return pd.DataFrame({"age": age, "color": color, "amount": amount}), y


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        return fn(*args, **kwargs)


# ----------------------------------------------------------------------------- routing
@pytest.mark.parametrize("estimator", [RandomForestClassifier(n_estimators=20, random_state=0),
                                       KNeighborsClassifier()], ids=["forest", "knn"])
def test_auto_trains_estimators_without_adapter_on_synthetic_data(estimator):
    X, y = _blobs()
    w = _quiet(MIPNoiseWrapper(estimator, eta=0.1, random_state=0).fit, X, y)
    assert w.method_ == "synthetic"
    assert w.mip_bound_ == 0.1 and w.target_eta_ == 0.1
    assert w.n_train_ == 600 and w.synthesizer_.mip_bound_ == 0.1
    assert type(w.estimator_) is type(estimator) and w.classes_.tolist() == [0, 1]
    # Two Gaussian blobs 2*sqrt(3) apart: Bayes accuracy Phi(sqrt(3)) = 0.958. Binned at D's
    # deciles and noised, the synthetic table keeps most of it; chance is 0.5.
    assert w.score(X, y) > 0.85
    assert w.predict_proba(X).shape == (len(X), 2)


def test_estimators_with_an_adapter_keep_their_route():
    X, y = _blobs(300)
    X = (X - X.mean(0)) / X.std(0)
    w = _quiet(MIPNoiseWrapper(LogisticRegression(), eta=0.3, n_rounds=50, random_state=0).fit, X, y)
    assert w.method_ == "coupling"


def test_method_synthetic_can_be_chosen_for_any_estimator_and_is_refused_by_the_path():
    X, y = _blobs(400)
    w = _quiet(MIPNoiseWrapper(LogisticRegression(), eta=0.2, method="synthetic", random_state=0).fit, X, y)
    assert w.method_ == "synthetic" and not hasattr(w, "sigma_")
    with pytest.raises(ValueError, match="mip_noise_path noises parameters"):
        mip_noise_path(LogisticRegression(), X, y, etas=[0.1], method="synthetic")


def test_dataframe_with_strings_and_missing_values_through_a_pipeline():
    df, y = _frame()
    pipe = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["color"]),
                                (SimpleImputer(), ["age", "amount"])),
        DecisionTreeClassifier(max_depth=4, random_state=0),
    )
    w = _quiet(MIPNoiseWrapper(pipe, eta=0.1, random_state=0).fit, df, y)
    assert w.method_ == "synthetic" and w.mip_bound_ == 0.1
    assert list(w.feature_names_in_) == ["age", "color", "amount"]
    # y = [age > 45] is learnable from the (binned) age column: far above chance (0.6).
    assert w.score(df, y) > 0.85
    with pytest.raises(ValueError, match="[Ff]eature names"):
        w.predict(df[["color", "age", "amount"]])
    kinds = {d.name: (d.kind, d.missing) for d in w.synthesizer_.domains_}
    assert kinds == {"age": ("numeric", True), "color": ("categorical", True),
                     "amount": ("numeric", False), "y": ("categorical", False)}


def test_regressor_and_fit_params():
    X, y = _blobs(500)
    target = X[:, 0] + 0.1 * X[:, 1]
    w = _quiet(MIPNoiseWrapper(DecisionTreeRegressor(max_depth=3, random_state=0), eta=0.2, random_state=0).fit,
               X, target)
    assert w.method_ == "synthetic" and w.synthesizer_.domains_[-1].kind == "numeric"
    assert w.score(X, target) > 0.5  # R^2 of a noisy binned copy of y ~ x0
    with pytest.raises(ValueError, match="fit parameters about the real rows"):
        MIPNoiseWrapper(DecisionTreeRegressor(), eta=0.2).fit(X, target, sample_weight=np.ones(500))


def test_unsupervised_estimator_without_adapter():
    from sklearn.ensemble import IsolationForest

    X, _ = _blobs(400)
    w = _quiet(MIPNoiseWrapper(IsolationForest(n_estimators=20), eta=0.2, random_state=0).fit, X)
    assert w.method_ == "synthetic" and not w.synthesizer_.has_target_ and w.mip_bound_ == 0.2
    # Points far outside every bin of D score as outliers of the synthetic data too.
    assert w.predict(np.full((1, 3), 50.0)).tolist() == [-1]


# ----------------------------------------------------------------------------- the promise
def test_given_subset_prints_no_promise():
    X, y = _blobs(400)
    with pytest.warns(PrivacyWarning, match="train_size=1.0 prints no"):
        w = MIPNoiseWrapper(RandomForestClassifier(n_estimators=5), eta=0.1, train_size=1.0,
                            random_state=0).fit(X, y)
    assert w.mip_bound_ is None and w.target_eta_ == 0.1 and w.n_train_ == 400


def test_fixed_seed_warns_once_and_the_release_keeps_no_rows():
    X, y = _blobs(300)
    with pytest.warns(PrivacyWarning) as record:
        w = MIPNoiseWrapper(KNeighborsClassifier(), eta=0.1, random_state=3).fit(X, y)
    assert sum("fixes the privacy noise" in str(r.message) for r in record) == 1
    assert w.synthesizer_.random_state is None and w.synthesizer_.model_.random_state is None
    # k-NN stores its training rows: they must be synthetic ones, none of D.
    stored = w.estimator_._fit_X
    assert not (stored[:, None, :] == X[None, :, :]).all(axis=2).any()


def test_clone_get_params_and_pickle():
    synth = MIPTabularSynthesizer(n_bins=6, bins={"age": [0, 30, 60, 120]})
    forest = make_pipeline(
        make_column_transformer((OneHotEncoder(handle_unknown="ignore"), ["color"]), remainder=SimpleImputer()),
        RandomForestClassifier(n_estimators=5, random_state=0),
    )
    w = MIPNoiseWrapper(forest, eta=0.2, synthesizer=synth, random_state=0)
    params = w.get_params()
    assert params["synthesizer__n_bins"] == 6 and params["synthesizer__bins"] == {"age": [0, 30, 60, 120]}
    c = clone(w).set_params(synthesizer__n_bins=4)
    assert c.synthesizer.n_bins == 4 and synth.n_bins == 6
    df, y = _frame(600)
    fitted = _quiet(c.fit, df, y)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict(df), fitted.predict(df))
    with pytest.raises(TypeError, match="synthesizer must be None or an unfitted MIPTabularSynthesizer"):
        MIPNoiseWrapper(RandomForestClassifier(), synthesizer=LogisticRegression()).fit(df, y)


# ----------------------------------------------------------------------------- domains
def test_user_given_domains_are_released_as_given():
    df, y = _frame(800)
    synth = _quiet(MIPTabularSynthesizer(eta=0.2, bins={"age": [0, 30, 60, 120]},
                                         categories={"color": ["red", "green", "blue", "violet"]},
                                         random_state=0).fit, df, y)
    age, color = synth.domains_[0], synth.domains_[1]
    assert age.source == "given" and age.edges.tolist() == [0, 30, 60, 120] and age.size == 4  # + missing
    assert color.source == "given" and color.categories.tolist() == ["red", "green", "blue", "violet"]
    assert synth.domains_[2].source == "data"
    Xs, ys = synth.sample(2000, random_state=1)
    ages = Xs["age"].dropna()
    assert ages.between(0, 120).all() and (ages == ages.round()).all()  # integer column
    assert set(Xs["color"].dropna()) <= {"red", "green", "blue", "violet"}
    assert Xs["age"].isna().any() and Xs["color"].isna().any()  # the missing cells are sampled
    with pytest.raises(ValueError, match="outside the bins you gave"):
        MIPTabularSynthesizer(bins={"age": [20, 30]}).fit(df, y)
    with pytest.raises(ValueError, match="not among its categories"):
        MIPTabularSynthesizer(categories={"color": ["red"]}).fit(df, y)
    with pytest.raises(ValueError, match="not columns of X"):
        MIPTabularSynthesizer(bins={"height": [0, 1]}).fit(df, y)


def test_numeric_domain_atoms_quantiles_and_decoding():
    x = np.r_[np.zeros(80), np.arange(1.0, 21.0)]
    (d,) = infer_domains([x], ["x"], n_bins=4)
    assert d.atoms.tolist() == [0.0] and d.edges[0] == 1.0 and d.edges[-1] == 20.0 and d.integer
    codes = d.encode(x)
    assert np.all(codes[:80] == 0) and codes[80] == 1 and codes[-1] == d.n_values - 1
    values = d.decode(codes, np.random.default_rng(0))
    # Atoms decode exactly; interval codes to integers inside their interval.
    assert np.all(values[:80] == 0)
    assert np.all(d.encode(values) == codes)
    small = infer_domains([np.array([1.0, 2.0, 2.0, 5.0])], [0], n_bins=4)[0]
    assert small.atoms.tolist() == [1.0, 2.0, 5.0] and small.edges.size == 0
    assert missing_mask(np.array([1.0, np.nan])).tolist() == [False, True]
    with pytest.raises(ValueError, match="no missing cell"):
        ColumnDomain("c", "categorical", categories=np.array(["a"], dtype=object)).encode(
            np.array(["a", None], dtype=object))


def test_integer_intervals_do_not_decode_to_atoms():
    # 9 and 10 are atoms inside the interval [8, 14): an interval code decodes to 8, 11, 12 or
    # 13, never to an atom, so decoding and re-encoding agree (as for adult's education_num).
    rng = np.random.default_rng(0)
    x = np.r_[np.full(500, 9.0), np.full(300, 10.0), rng.integers(1, 17, 400).astype(float)]
    (d,) = infer_domains([x], ["x"], n_bins=6)
    assert d.atoms.tolist() == [9.0, 10.0] and d.edges.tolist() == [1.0, 4.0, 8.0, 14.0, 16.0]
    codes = d.encode(x)
    values = d.decode(codes, np.random.default_rng(1))
    assert np.array_equal(d.encode(values), codes)
    inside = values[codes == 4]  # [8, 14), the interval that holds both atoms
    assert set(inside.tolist()) == {8.0, 11.0, 12.0, 13.0}


def test_rare_categories_share_one_cell_but_classes_never_do():
    values = np.array(["a"] * 90 + ["b", "c", "d"] * 3 + ["e"], dtype=object)
    (d,) = infer_domains([values], ["c"], min_frequency=0.05)
    assert d.categories.tolist() == ["a"] and d.pooled.tolist() == ["b", "c", "d", "e"] and d.size == 2
    codes = d.encode(values)
    assert np.all(codes[:90] == 0) and np.all(codes[90:] == 1)
    decoded = d.decode(np.ones(400, dtype=int), np.random.default_rng(0))
    assert set(decoded) == {"b", "c", "d", "e"}  # uniform over the pool: each about 100 of 400
    (label,) = infer_domains([values], ["y"], min_frequency=0.05, keep={"y"})
    assert label.pooled.size == 0 and label.size == 5


def test_synthesizer_on_arrays_without_target():
    X, _ = _blobs(500)
    synth = _quiet(MIPTabularSynthesizer(eta=0.3, n_bins=5, random_state=0).fit, X)
    Xs = synth.sample(50, random_state=0)
    assert isinstance(Xs, np.ndarray) and Xs.dtype == np.float64 and Xs.shape == (50, 3)
    lo, hi = X.min(0), X.max(0)
    assert np.all((Xs >= lo) & (Xs <= hi))  # decoded inside D's range
    assert not synth.has_target_ and synth.mip_bound_ == 0.3


@parametrize_with_checks([MIPTabularSynthesizer(random_state=0)])
def test_sklearn_compatible_synthesizer(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyWarning)
        check(estimator)
