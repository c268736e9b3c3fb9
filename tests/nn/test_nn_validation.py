"""The torch nets reject bad input with clear errors before any state changes (issues 20, 24)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("skorch")
pytest.importorskip("opacus")

from sklearn.exceptions import NotFittedError  # noqa: E402

from skmip.nn import DPNeuralNetClassifier, DPSGDLogisticRegression, MLPModule, NeuralNetClassifier  # noqa: E402

rng = np.random.default_rng(0)
X = rng.normal(size=(40, 3))
y = (X[:, 0] > 0).astype(int)


def net(kind):
    common = dict(max_epochs=1, batch_size=8, lr=0.1, verbose=0, random_state=0)
    if kind == "net":
        return NeuralNetClassifier(MLPModule, module__n_features=3, **common)
    if kind == "dp":
        return DPNeuralNetClassifier(MLPModule, module__n_features=3, noise_multiplier=1.0, **common)
    return DPSGDLogisticRegression(noise_multiplier=1.0, max_epochs=1, batch_size=8, random_state=0)


KINDS = ["net", "dp", "logreg"]
NAMES = {"net": "NeuralNetClassifier", "dp": "DPNeuralNetClassifier", "logreg": "DPSGDLogisticRegression"}


def with_value(value):
    Z = X.copy()
    Z[3, 1] = value
    return Z


BAD = {
    "nan": (lambda: (with_value(np.nan), y), r"X contains NaN"),
    "inf": (lambda: (with_value(np.inf), y), r"X contains infinity"),
    "empty": (lambda: (X[:0], y[:0]), r"0 sample\(s\)"),
    "one class": (lambda: (X, np.zeros(40, dtype=int)), r"only one class"),
    "nan label": (lambda: (X, np.where(y == 1, 1.0, np.nan)), r"y contains NaN"),
    "continuous label": (lambda: (X, X[:, 0]), r"Unknown label type"),
    "length": (lambda: (X, y[:-1]), r"inconsistent numbers of samples"),
    "text column": (lambda: (np.c_[X, np.array(["a"] * 40)].astype(object), y), r"could not convert|Unable to convert"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_a_clear_error_and_keeps_the_previous_fit(kind, case):
    make_data, match = BAD[case]
    model = net(kind).fit(X, y)
    before = model.predict_proba(X).copy()
    inner = getattr(model, "net_", None)
    Xb, yb = make_data()
    with pytest.raises(ValueError, match=match) as err:
        model.fit(Xb, yb)
    assert NAMES[kind] in str(err.value)
    # The failed refit changed nothing.
    np.testing.assert_array_equal(model.predict_proba(X), before)
    if inner is not None:
        assert model.net_ is inner


@pytest.mark.parametrize("kind", KINDS)
def test_strings_dataframes_predict_before_fit_and_width(kind):
    pd = pytest.importorskip("pandas")
    labels = np.where(y == 1, "yes", "no")
    model = net(kind)
    with pytest.raises(NotFittedError):
        model.predict(X)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model.fit(frame, labels)
    assert set(model.predict(frame)) <= {"yes", "no"}
    assert list(model.classes_) == ["no", "yes"]
    with pytest.raises(ValueError, match=r"X has 2 features, but .* fitted with 3") as err:
        model.predict(X[:, :2])
    assert NAMES[kind] in str(err.value)


def test_dp_net_never_certifies_a_model_trained_on_nan():
    model = net("dp")
    with pytest.raises(ValueError, match="NaN"):
        model.fit(with_value(np.nan), y)
    assert not hasattr(model, "epsilon_")
