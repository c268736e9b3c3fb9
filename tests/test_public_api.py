"""Rules that hold library-wide: public names, light imports, clonable/picklable estimators,
documented parameters."""

import importlib
import inspect
import pickle
import re
import subprocess
import sys

import pytest
from sklearn.base import BaseEstimator, clone

import skmip
from skmip import _moved


@pytest.mark.parametrize("name", skmip.__all__)
def test_every_public_name_imports(name):
    assert getattr(skmip, name) is not None


def test_unknown_attribute_raises():
    with pytest.raises(AttributeError):
        skmip.no_such_thing  # noqa: B018


def test_import_skmip_stays_light():
    """Importing skmip and using its core never imports torch, skorch, opacus, matplotlib or dask."""
    code = (
        "import sys, skmip, skmip.bounds, skmip.params, skmip.defend, skmip.audit.scoring, skmip.audit.display, skmip.app.cli;"
        "from skmip import MIPNoiseWrapper, MIAttackScorer, SubsampledDPClassifier;"
        "heavy = [m for m in ('torch', 'skorch', 'opacus', 'matplotlib', 'dask') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _public_estimator_classes():
    classes = []
    for name in skmip.__all__:
        obj = getattr(skmip, name)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
            classes.append(obj)
    return classes


def _instance(cls):
    from sklearn.linear_model import LogisticRegression

    params = inspect.signature(cls).parameters
    if "estimator" in params and params["estimator"].default is inspect.Parameter.empty:
        return cls(LogisticRegression())
    return cls()


@pytest.mark.parametrize("cls", _public_estimator_classes(), ids=lambda c: c.__name__)
def test_estimators_clone_and_pickle(cls):
    est = _instance(cls)
    cloned = clone(est)
    assert type(cloned) is cls
    assert pickle.loads(pickle.dumps(est)).get_params().keys() == est.get_params().keys()


@pytest.mark.parametrize("cls", _public_estimator_classes(), ids=lambda c: c.__name__)
def test_every_init_parameter_is_documented(cls):
    docscrape = pytest.importorskip("numpydoc.docscrape")
    documented = {p.name.split(":")[0].strip() for p in docscrape.ClassDoc(cls)["Parameters"]}
    names = set()
    for n in documented:  # "fpr, tpr" documents two parameters
        names.update(x.strip() for x in n.split(","))
    missing = [p for p in inspect.signature(cls).parameters if p not in names]
    assert not missing, f"{cls.__name__}: undocumented parameters {missing}"


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_module_path_imports_the_moved_module_with_a_warning(old):
    new = _moved.MOVED[old]
    if new.startswith("skmip.nn"):
        pytest.importorskip("skorch")
    sys.modules.pop(old, None)
    with pytest.warns(FutureWarning, match=re.escape(f"{old} moved to {new}")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
