"""MIPNoiseWrapper and MIPNoiseWrapperCV share one parameter table: signatures, docs, the
deprecated ``n_splits``, and the 0.2 knobs that moved into the calibration routes."""

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
from skmip.calibration.routes import CouplingRoute, MomentsRoute
from skmip.defend._parameters import DEPRECATED, MOVED, SHARED

CLASSES = [MIPNoiseWrapper, MIPNoiseWrapperCV]


@pytest.fixture(scope="module")
def small():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X[:200, :5]), y[:200]


# ----------------------------------------------------------------------------- one table
@pytest.mark.parametrize("cls", CLASSES)
def test_signature_agrees_with_the_table(cls):
    signature = inspect.signature(cls).parameters
    table = [p for p in SHARED + MOVED if p.name in signature]
    for param in SHARED:
        assert param.name in signature, f"{cls.__name__} lacks {param.name}"
    for param in table:
        assert signature[param.name].default == param.default, (cls.__name__, param.name)
        assert signature[param.name].kind is inspect.Parameter.KEYWORD_ONLY
    # The groups come in the table's order, after the class's own parameters.
    assert [name for name in signature if name in {p.name for p in table}] == [p.name for p in table]
    # Every moved knob but the synthesizer (the search takes no synthetic route) is kept.
    assert {p.name for p in MOVED} - set(signature) <= {"synthesizer"}


def test_the_two_signatures_share_every_table_default():
    wrapper, cv = (inspect.signature(c).parameters for c in CLASSES)
    shared = set(wrapper) & set(cv)
    assert {p.name for p in SHARED + MOVED if p.name != "synthesizer"} | {"estimator"} == shared
    assert all(wrapper[n].default == cv[n].default for n in shared)


@pytest.mark.parametrize("cls", CLASSES)
def test_docstrings_are_filled_from_the_table(cls):
    docscrape = pytest.importorskip("numpydoc.docscrape")
    entries = {p.name: p for p in docscrape.ClassDoc(cls)["Parameters"]}
    assert "{{" not in cls.__doc__
    for param in SHARED + MOVED:
        if param.name not in entries:  # the search has no synthesizer
            continue
        entry = entries[param.name]
        default = f'"{param.default}"' if isinstance(param.default, str) else repr(param.default)
        assert entry.type.endswith(f"default={default}"), (param.name, entry.type)
        assert entry.desc and entry.desc[0].strip()
    # Overridden where the CV means more; the table's text elsewhere.
    text = lambda name: " ".join(entries[name].desc)  # noqa: E731
    assert "Moved into the calibration route" in text("n_rounds") and "CouplingRoute" in text("n_rounds")
    assert "deprecated:: 0.2" in text("n_splits")
    if cls is MIPNoiseWrapperCV:
        assert "one seed per fold" in text("random_state")
        assert '"synthetic"' not in entries["method"].type


def test_cv_forwards_every_shared_parameter_and_the_route(small):
    route = MomentsRoute(moment=3, n_subsets=5, radius="laplace", sigma_from="train")
    cv = MIPNoiseWrapperCV(LogisticRegression(), method=route, train_size=0.6, n_jobs=1, verbose=0)
    _, resolved = cv._validate_hyperparameters()
    inner = cv._wrapper(0.2, 7, resolved).get_params()
    for param in SHARED:
        expected = {"random_state": 7, "method": resolved}.get(param.name, getattr(cv, param.name))
        assert inner[param.name] is expected or inner[param.name] == expected, param.name
    assert inner["method"].get_params() == route.get_params() and inner["method"] is not route
    assert all(inner[p.name] == DEPRECATED for p in MOVED)


# ----------------------------------------------------------------------------- n_splits
def test_n_splits_still_works_with_a_future_warning(small):
    X, y = small
    kw = dict(method="moments", eta=0.3, random_state=0)
    new = MIPNoiseWrapper(LogisticRegression(), n_subsets=6, **kw).fit(X, y)
    with pytest.warns(FutureWarning, match=r"n_splits was renamed n_subsets.*n_subsets=6"):
        old = MIPNoiseWrapper(LogisticRegression(), n_splits=6, **kw).fit(X, y)
    np.testing.assert_array_equal(old.sigma_, new.sigma_)
    np.testing.assert_array_equal(old.estimator_.coef_, new.estimator_.coef_)
    assert old.n_splits == 6 and old.n_subsets == DEPRECATED  # parameters are not mutated
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
    with pytest.warns(FutureWarning, match="n_subsets moved to method__n_subsets"):
        search = GridSearchCV(base, {"n_subsets": [4, 5]}, cv=2).fit(X, y)
    assert search.best_estimator_.n_splits == DEPRECATED
    # The 0.3 spelling: the route's own knob, through the wrapper's method.
    base = MIPNoiseWrapper(LogisticRegression(), method=MomentsRoute(), eta=0.4, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        search = GridSearchCV(base, {"method__n_subsets": [4, 5]}, cv=2).fit(X, y)
    assert search.best_params_["method__n_subsets"] in (4, 5)
    assert base.method.n_subsets == 128  # the user's route object is never mutated


def test_cv_and_path_accept_n_splits(small):
    X, y = small
    with pytest.warns(FutureWarning, match="MIPNoiseWrapperCV: n_splits was renamed"):
        cv = MIPNoiseWrapperCV(LogisticRegression(), etas=[0.3, 0.5], cv=2, method="moments", n_splits=4,
                               random_state=0).fit(X, y)
    ref = MIPNoiseWrapperCV(LogisticRegression(), etas=[0.3, 0.5], cv=2, method="moments", n_subsets=4,
                            random_state=0).fit(X, y)
    np.testing.assert_array_equal(cv.scores_, ref.scores_)
    assert cv.best_estimator_.method.n_subsets == 4 and cv.best_estimator_.n_splits == DEPRECATED
    with pytest.warns(FutureWarning, match="n_splits was renamed"):
        path = mip_noise_path(LogisticRegression(), X, y, etas=[0.3], method="moments", n_splits=4,
                              random_state=0)
    assert path[0].mip_bound_ == 0.3


# ----------------------------------------------------------------------------- moved knobs
def test_a_moved_knob_and_the_route_s_own_is_an_error(small):
    X, y = small
    w = MIPNoiseWrapper(LogisticRegression(), method=CouplingRoute(n_rounds=100), n_rounds=50)
    with pytest.raises(ValueError, match=r"n_rounds=50 and method__n_rounds=100 were both set"):
        w.fit(X, y)
    assert not hasattr(w, "estimator_")


def test_a_moved_knob_the_named_route_lacks_warns(small):
    X, y = small
    w = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.4, method="coupling", radius="laplace",
                        n_rounds=40, random_state=0)
    with pytest.warns(UserWarning, match=r"radius='laplace' has no effect: the 'coupling' route"):
        w.fit(X, y)
    w = MIPNoiseWrapper(DecisionTreeClassifier(max_depth=2), method="synthetic", eta=0.4, n_rounds=50,
                        random_state=0)
    with pytest.warns(UserWarning, match=r"n_rounds=50 has no effect: the 'synthetic' route"):
        w.fit(X, y)
    assert w.method_ == "synthetic"


def test_auto_may_be_given_knobs_for_every_route(small):
    """``method="auto"`` could take either route: knobs for both are no contradiction (the
    ``skmip`` command passes its ``--n-subsets`` and ``--n-rounds`` to every wrapper)."""
    X, y = small
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        w = MIPNoiseWrapper(LogisticRegression(C=0.1), eta=0.4, random_state=0, n_rounds=40, moment=4,
                            radius="laplace", n_subsets=8).fit(X, y)
    assert w.method_ == "coupling"
    assert not [r for r in record if r.category is UserWarning and "no effect" in str(r.message)]
    moved = sorted(str(r.message).split(": ")[1].split(" ")[0] for r in record if r.category is FutureWarning)
    assert moved == ["moment", "n_rounds", "n_subsets"]  # each knob the route has: forwarded, warned


def test_the_route_validates_its_knobs_naming_the_wrapper(small):
    X, y = small
    with pytest.raises(ValueError, match=r"MIPNoiseWrapper: n_rounds must be .*got 1"):
        MIPNoiseWrapper(LogisticRegression(), method=CouplingRoute(n_rounds=1)).fit(X, y)
    with pytest.raises(ValueError, match=r"MIPNoiseWrapperCV: radius must be one of"):
        MIPNoiseWrapperCV(LogisticRegression(), method=MomentsRoute(radius="cauchy")).fit(X, y)
    with pytest.raises(ValueError, match=r"MIPNoiseWrapperCV: method must be one of 'auto', 'coupling', "
                                         r"'moments', 'noisy_gradient' or a route object"):
        MIPNoiseWrapperCV(LogisticRegression(), method="synthetic").fit(X, y)


def test_a_0_2_pickle_does_not_warn_about_knobs_its_author_never_set(small):
    """A 0.2 wrapper held every moved knob at its default; loaded now, those are unset."""
    X, y = small
    state = dict(vars(MIPNoiseWrapper(LogisticRegression(), eta=0.4, method="moments", random_state=0)))
    state.update(synthesizer=None, confidence=0.95, n_rounds=400, noise_shape="auto", moment=2,
                 n_subsets=8, radius="gamma", sigma_from="dataset")
    loaded = MIPNoiseWrapper.__new__(MIPNoiseWrapper)
    loaded.__setstate__(state)
    params = loaded.get_params()
    assert params["n_subsets"] == 8 and params["moment"] == DEPRECATED and params["n_rounds"] == DEPRECATED
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        loaded.fit(X, y)
    assert [str(r.message).split(": ")[1].split(" ")[0] for r in record if r.category is FutureWarning] == ["n_subsets"]
