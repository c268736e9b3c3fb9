"""MIPNoiseWrapper and MIPNoiseWrapperCV share one parameter table: signatures, docs, the
deprecated ``n_splits``, and the warning for a knob the route taken ignores."""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from skmip import MIPNoiseWrapper, MIPNoiseWrapperCV, mip_noise_path
from skmip.defend._parameters import DEPRECATED, SHARED, ignored_by

CLASSES = [MIPNoiseWrapper, MIPNoiseWrapperCV]


@pytest.fixture(scope="module")
def small():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X[:200, :5]), y[:200]


# ----------------------------------------------------------------------------- one table
@pytest.mark.parametrize("cls", CLASSES)
def test_signature_agrees_with_the_table(cls):
    signature = inspect.signature(cls).parameters
    for param in SHARED:
        assert param.name in signature, f"{cls.__name__} lacks {param.name}"
        assert signature[param.name].default == param.default, (cls.__name__, param.name)
        assert signature[param.name].kind is inspect.Parameter.KEYWORD_ONLY
    # The groups come in the table's order, after the class's own parameters.
    order = [name for name in signature if name in {p.name for p in SHARED}]
    assert order == [p.name for p in SHARED]


def test_the_two_signatures_share_every_table_default():
    wrapper, cv = (inspect.signature(c).parameters for c in CLASSES)
    shared = set(wrapper) & set(cv)
    assert {p.name for p in SHARED} | {"estimator"} == shared
    assert all(wrapper[n].default == cv[n].default for n in shared)


@pytest.mark.parametrize("cls", CLASSES)
def test_docstrings_are_filled_from_the_table(cls):
    docscrape = pytest.importorskip("numpydoc.docscrape")
    entries = {p.name: p for p in docscrape.ClassDoc(cls)["Parameters"]}
    assert "{{" not in cls.__doc__
    for param in SHARED:
        entry = entries[param.name]
        default = f'"{param.default}"' if isinstance(param.default, str) else repr(param.default)
        assert entry.type.endswith(f"default={default}"), (param.name, entry.type)
        assert entry.desc and entry.desc[0].strip()
    # Overridden where the CV means more; the table's text elsewhere.
    text = lambda name: " ".join(entries[name].desc)  # noqa: E731
    assert "Coupling calibration" in text("confidence")
    assert "deprecated:: 0.2" in text("n_splits")
    if cls is MIPNoiseWrapperCV:
        assert "one seed per fold" in text("random_state")
        assert '"synthetic"' not in entries["method"].type


def test_cv_forwards_every_shared_parameter(small):
    X, y = small
    cv = MIPNoiseWrapperCV(LogisticRegression(), method="moments", moment=3, n_subsets=5, radius="laplace",
                           sigma_from="train", train_size=0.6, n_jobs=1, verbose=0)
    inner = cv._wrapper(0.2, 7, n_subsets=5).get_params()
    for param in SHARED:
        expected = {"random_state": 7, "n_splits": DEPRECATED}.get(param.name, getattr(cv, param.name))
        assert inner[param.name] == expected, param.name


# ----------------------------------------------------------------------------- n_splits
def test_n_splits_still_works_with_a_future_warning(small):
    X, y = small
    kw = dict(method="moments", eta=0.3, random_state=0)
    new = MIPNoiseWrapper(LogisticRegression(), n_subsets=6, **kw).fit(X, y)
    with pytest.warns(FutureWarning, match=r"n_splits was renamed n_subsets.*n_subsets=6"):
        old = MIPNoiseWrapper(LogisticRegression(), n_splits=6, **kw).fit(X, y)
    np.testing.assert_array_equal(old.sigma_, new.sigma_)
    np.testing.assert_array_equal(old.estimator_.coef_, new.estimator_.coef_)
    assert old.n_splits == 6 and old.n_subsets == 128  # parameters are not mutated
    assert clone(old).get_params()["n_splits"] == 6


def test_n_splits_and_n_subsets_together_is_an_error(small):
    X, y = small
    w = MIPNoiseWrapper(LogisticRegression(), method="moments", n_splits=6, n_subsets=8)
    with pytest.raises(ValueError, match="n_splits=6 and n_subsets=8 were both set.*Pass only n_subsets"):
        w.fit(X, y)
    assert not hasattr(w, "estimator_")
    with pytest.warns(FutureWarning, match="n_splits was renamed"), \
            pytest.raises(ValueError, match=r"n_splits must be .*got 1"):
        MIPNoiseWrapper(LogisticRegression(), method="moments", n_splits=1).fit(X, y)


def test_grid_search_over_the_old_and_new_name(small):
    X, y = small
    base = MIPNoiseWrapper(LogisticRegression(), method="moments", eta=0.4, random_state=0)
    with pytest.warns(FutureWarning, match="n_splits was renamed"):
        search = GridSearchCV(base, {"n_splits": [4, 5]}, cv=2).fit(X, y)
    assert search.best_params_["n_splits"] in (4, 5)
    search = GridSearchCV(base, {"n_subsets": [4, 5]}, cv=2).fit(X, y)
    assert search.best_estimator_.n_splits == DEPRECATED


def test_cv_and_path_accept_n_splits(small):
    X, y = small
    with pytest.warns(FutureWarning, match="MIPNoiseWrapperCV: n_splits was renamed"):
        cv = MIPNoiseWrapperCV(LogisticRegression(), etas=[0.3, 0.5], cv=2, method="moments", n_splits=4,
                               random_state=0).fit(X, y)
    ref = MIPNoiseWrapperCV(LogisticRegression(), etas=[0.3, 0.5], cv=2, method="moments", n_subsets=4,
                            random_state=0).fit(X, y)
    np.testing.assert_array_equal(cv.scores_, ref.scores_)
    assert cv.best_estimator_.n_subsets == 4 and cv.best_estimator_.n_splits == DEPRECATED
    with pytest.warns(FutureWarning, match="n_splits was renamed"):
        path = mip_noise_path(LogisticRegression(), X, y, etas=[0.3], method="moments", n_splits=4,
                              random_state=0)
    assert path[0].mip_bound_ == 0.3


# ----------------------------------------------------------------------------- ignored knobs
def test_what_each_route_ignores():
    assert ignored_by("moments") == {"confidence", "n_rounds", "noise_shape"}
    assert ignored_by("coupling", "design") == {"moment", "n_subsets", "radius"}
    assert ignored_by("coupling", "full") == {"moment", "radius"}
    assert ignored_by("coupling", "diagonal") == {"radius"}
    assert ignored_by("synthetic") == {p.name for p in SHARED if p.group in ("coupling", "moments")}


def _user_warnings(record):
    return [str(w.message) for w in record if w.category is UserWarning and "no effect" in str(w.message)]


@pytest.mark.parametrize(
    "params, ignored",
    [
        (dict(method="coupling", moment=4), "moment=4 has no effect: method_='coupling' with the 'design' noise shape"),
        (dict(method="coupling", noise_shape="design", n_subsets=8, radius="laplace"),
         "n_subsets=8, radius='laplace' have no effect"),
        (dict(method="coupling", n_subsets=8, radius="laplace"), "radius='laplace' has no effect"),
        (dict(method="moments", confidence=0.9, n_rounds=50, n_subsets=8),
         "confidence=0.9, n_rounds=50 have no effect: method_='moments'"),
        (dict(method="moments", n_splits=4, noise_shape="full"), "noise_shape='full' has no effect"),
    ],
)
def test_a_knob_the_route_ignores_warns(small, params, ignored):
    X, y = small
    n_rounds = params.pop("n_rounds", 30 if params["method"] == "coupling" else 400)
    w = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.4, n_rounds=n_rounds, random_state=0, **params)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        w.fit(X, y)
    messages = _user_warnings(record)
    assert len(messages) == 1 and ignored in messages[0], messages


def test_knobs_the_route_reads_do_not_warn(small):
    X, y = small
    cases = [
        dict(method="coupling", noise_shape="full", n_subsets=8, sigma_from="train", confidence=0.9, n_rounds=40),
        dict(method="coupling", noise_shape="diagonal", n_subsets=8, moment=4, n_rounds=40),
        dict(method="moments", moment=4, n_subsets=8, radius="laplace", sigma_from="train"),
        dict(method="auto", n_rounds=40),  # it couples, which reads n_rounds
        # method="auto" could take either route: knobs for both are no contradiction
        dict(method="auto", n_rounds=40, moment=4, radius="laplace", n_subsets=8),
    ]
    for params in cases:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.4, random_state=0, **params).fit(X, y)
        assert not _user_warnings(record), (params, _user_warnings(record))


def test_the_synthetic_route_warns_about_calibration_knobs(small):
    X, y = small
    w = MIPNoiseWrapper(DecisionTreeClassifier(max_depth=2), method="synthetic", eta=0.4, n_rounds=50,
                        random_state=0)
    with pytest.warns(UserWarning, match=r"n_rounds=50 has no effect: method_='synthetic'"):
        w.fit(X, y)
    assert w.method_ == "synthetic"
    with warnings.catch_warnings(record=True) as record:  # "auto" chose it: no contradiction
        warnings.simplefilter("always")
        clone(w).set_params(method="auto").fit(X, y)
    assert not _user_warnings(record)


def test_only_knobs_no_auto_resolution_reads_are_reported():
    from types import SimpleNamespace

    from skmip.defend._parameters import surely_ignored

    knobs = lambda method, shape="auto": SimpleNamespace(method=method, noise_shape=shape)  # noqa: E731
    assert surely_ignored(knobs("auto"), "coupling", "design") == set()
    assert surely_ignored(knobs("coupling"), "coupling", "design") == {"moment", "radius"}
    assert surely_ignored(knobs("coupling", "design"), "coupling", "design") == {"moment", "n_subsets", "radius"}
    assert surely_ignored(knobs("moments"), "moments") == {"confidence", "n_rounds", "noise_shape"}
