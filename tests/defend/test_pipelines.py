"""Pipelines and DataFrames as scikit-learn users pass them (issue 22, points 1, 2 and 5).

A Pipeline whose last step has a registered smooth loss is calibrated by coupling: its
transformers are fitted on all of D (functions of D, outside Definition 1's attacker signal)
and the last step is calibrated, certified and released exactly as a bare estimator on the
transformed rows (docs/pipelines.md).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from sklearn.compose import make_column_transformer
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skmip import DPLogisticRegression, MIPNoiseWrapper, MIPNoiseWrapperCV, SubsampledDPClassifier
from skmip.exceptions import PrivacyWarning

pd = pytest.importorskip("pandas")


def _quiet(estimator, *args, **kwargs):
    """Fit, ignoring only the fixed-seed PrivacyWarning (the tests fix seeds on purpose)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*fixes the privacy noise", category=PrivacyWarning)
        return estimator.fit(*args, **kwargs)


def test_scaled_pipeline_on_raw_breast_cancer_is_calibrated_by_coupling():
    # Issue 22: on 30cd6d2 this pipeline fell back to method_='moments' at 0.629 accuracy.
    X, y = load_breast_cancer(return_X_y=True)
    X_d, X_test, y_d, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyWarning)  # no other privacy warning (no fallback)
        warnings.filterwarnings("ignore", message=".*fixes the privacy noise", category=PrivacyWarning)
        w = MIPNoiseWrapper(make_pipeline(StandardScaler(), LogisticRegression(C=0.1)), eta=0.1,
                            random_state=0).fit(X_d, y_d)
    assert w.method_ == "coupling" and w.coupling_certified_
    assert w.mip_bound_ == 0.1 and w.coupling_eta_upper_ <= 0.1
    assert w.score(X_test, y_test) >= 0.9
    # The released scaler is the one fitted on all of D (a function of D, not of D_train).
    scaler = w.estimator_[0]
    reference = StandardScaler().fit(X_d)
    np.testing.assert_array_equal(scaler.mean_, reference.mean_)
    np.testing.assert_array_equal(scaler.scale_, reference.scale_)
    # The user's pipeline is untouched, and the release is a fitted clone of it.
    assert not hasattr(w.estimator[0], "mean_")
    assert [name for name, _ in w.estimator_.steps] == [name for name, _ in w.estimator.steps]


def _table(n=300, seed=0):
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], size=n)
    size = pd.Categorical(rng.choice(["S", "M", "L"], size=n))
    x1, x2 = rng.normal(size=n), 50.0 + 10.0 * rng.normal(size=n)
    logit = 2.0 * x1 + 2.0 * (colour == "red") - 1.5 * (colour == "blue") + 0.1 * (x2 - 50.0)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return pd.DataFrame({"colour": colour, "x1": x1, "size": size, "x2": x2}), y


def _tabular_pipeline():
    return make_pipeline(
        make_column_transformer((OneHotEncoder(), ["colour", "size"]), (StandardScaler(), ["x1", "x2"])),
        LogisticRegression(C=0.1),
    )


@pytest.fixture(scope="module")
def tabular():
    df, y = _table()
    w = _quiet(MIPNoiseWrapper(_tabular_pipeline(), eta=0.3, n_rounds=100, random_state=0), df, y)
    return df, y, w


def test_column_transformer_takes_string_and_categorical_columns_of_a_dataframe(tabular):
    df, y, w = tabular
    assert w.method_ == "coupling" and w.coupling_certified_ and w.mip_bound_ == 0.3
    assert list(w.feature_names_in_) == list(df.columns) and w.n_features_in_ == 4
    # The encoder's categories are D's (what MIP does not protect: docs/pipelines.md).
    encoder = w.estimator_[0].named_transformers_["onehotencoder"]
    assert [list(c) for c in encoder.categories_] == [["blue", "green", "red"], ["L", "M", "S"]]
    assert set(w.predict(df)) <= {0, 1}
    # The signal survives eta = 0.3 (chance is the majority rate).
    majority = max(np.mean(y), 1 - np.mean(y))
    assert w.score(df, y) > majority + 0.05


@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function", "score"])
def test_reordered_or_missing_columns_are_an_error(tabular, method):
    df, y, w = tabular
    args = (y,) if method == "score" else ()
    with pytest.raises(ValueError, match="(?s)MIPNoiseWrapper: The feature names should match.*same order"):
        getattr(w, method)(df[["x2", "size", "x1", "colour"]], *args)
    with pytest.raises(ValueError, match="MIPNoiseWrapper: X has 3 features, but MIPNoiseWrapper is expecting 4"):
        getattr(w, method)(df.drop(columns="x1"), *args)
    with pytest.raises(ValueError, match="(?s)MIPNoiseWrapper: The feature names should match.*unseen at fit time"):
        getattr(w, method)(df.rename(columns={"x2": "height"}), *args)


def test_cv_wrapper_takes_the_same_dataframe():
    df, y = _table(n=200, seed=1)
    cv = _quiet(MIPNoiseWrapperCV(_tabular_pipeline(), etas=[0.3, 0.5], cv=2, n_rounds=60, random_state=0), df, y)
    assert cv.method_ == "coupling" and cv.eta_ in (0.3, 0.5)
    assert list(cv.feature_names_in_) == list(df.columns)
    with pytest.raises(ValueError, match="MIPNoiseWrapperCV: The feature names should match"):
        cv.predict(df[df.columns[::-1]])


def test_subsampled_dp_checks_feature_names_as_scikit_learn_does():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    X = X.iloc[:, :5]
    X = (X - X.mean()) / X.std()
    clf = _quiet(SubsampledDPClassifier(DPLogisticRegression(), random_state=0), X, y)
    with pytest.raises(ValueError, match="SubsampledDPClassifier: The feature names should match"):
        clf.predict(X[X.columns[::-1]])
    with pytest.raises(ValueError, match="SubsampledDPClassifier: X has 4 features"):
        clf.score(X.iloc[:, :4], y)


def test_pipeline_fit_params_name_their_step():
    X, y = load_breast_cancer(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), LogisticRegression())
    weights = np.where(y == 1, 2.0, 1.0)
    w = _quiet(MIPNoiseWrapper(pipe, eta=0.5, n_rounds=40, random_state=0), X, y,
               logisticregression__sample_weight=weights)
    assert w.method_ == "coupling"
    with pytest.raises(ValueError, match="'sample_weight' names no step.*'logisticregression__sample_weight'"):
        _quiet(MIPNoiseWrapper(pipe, eta=0.5, n_rounds=40, random_state=0), X, y, sample_weight=weights)
    with pytest.raises(ValueError, match="sample_weight must hold one weight per row"):
        _quiet(MIPNoiseWrapper(pipe, eta=0.5, n_rounds=40, random_state=0), X, y,
               logisticregression__sample_weight=weights[:10])


def test_moments_keeps_noising_every_step():
    # method='moments' (or a params list) keeps the route of skmip.params.PipelineAdapter:
    # every step fitted on D_train and noised together.
    X, y = load_breast_cancer(return_X_y=True)
    w = _quiet(MIPNoiseWrapper(make_pipeline(StandardScaler(), LogisticRegression()), eta=0.5,
                               method="moments", n_subsets=8, random_state=0), X, y)
    assert w.method_ == "moments"
    assert not np.allclose(w.estimator_[0].mean_, StandardScaler().fit(X).mean_)


def test_cli_row_shows_its_calibration_and_every_warning_of_its_fit(tmp_path, capsys):
    from skmip.app.cli import main

    out = tmp_path / "audit.json"
    argv = ["--n-models", "4", "--n-subsets", "8", "--n-samples", "160", "--n-jobs", "1", "-q",
            "--dataset", "breast_cancer", "--defense", "mip", "--eta", "0.45", "--json", str(out),
            "--estimator", "sklearn.neural_network.MLPClassifier(hidden_layer_sizes=(3,), max_iter=20)"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    rows = {r["defense"]: r for r in json.loads(out.read_text())["results"]}
    assert rows["baseline"]["calibration"] is None
    assert rows["MIP eta=0.45"]["calibration"] == "moments (Cor. 10)"
    assert any("PrivacyWarning: MIPNoiseWrapper: method='auto' releases this MLPClassifier" in w
               for w in rows["MIP eta=0.45"]["warnings"])
    assert not any("fixes the privacy noise" in w for r in rows.values() for w in r["warnings"])
    assert "calibration" in text and "moments (Cor. 10)" in text
    assert "Warnings raised by the fits" in text and "method_='moments'" in text


@parametrize_with_checks([
    MIPNoiseWrapper(make_pipeline(StandardScaler(), Ridge()), eta=0.45, random_state=0, n_rounds=40),
])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_cli_plans_the_mip_row_for_a_pipeline_the_route_covers():
    # A OneHotEncoder has no parameter adapter, but on the pipeline route it is fitted on D
    # and not noised: the command plans the MIP row (it skipped it before).
    from skmip.app.audit_plan import _mip_reason

    pipe = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression())
    assert _mip_reason(pipe, "auto") is None and _mip_reason(pipe, "coupling") is None
    assert "has none it can read" in _mip_reason(pipe, "moments")


@pytest.mark.parametrize("as_frame", [False, True])
def test_a_pandas_output_pipeline_predicts_without_a_feature_name_warning(as_frame):
    # Issue 31: set_output(transform="pandas") gave the last step a DataFrame at predict but
    # an array at fit, and scikit-learn warned "X has feature names" at every prediction.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] > 0).astype(int)
    X = pd.DataFrame(X, columns=["a", "b", "c"]) if as_frame else X
    pipe = make_pipeline(StandardScaler(), LogisticRegression(C=0.1)).set_output(transform="pandas")
    wrapper = _quiet(MIPNoiseWrapper(pipe, n_rounds=20, confidence=None, random_state=0), X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        proba = wrapper.predict_proba(X)
    assert proba.shape == (80, 2)
    assert list(wrapper.estimator_[-1].feature_names_in_) == list(wrapper.estimator_[:-1].get_feature_names_out())
