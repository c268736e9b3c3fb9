"""What the `skmip` command refuses to run: parameters that reach the disk, modules outside the
installed distributions, pickles that name anything but installed classes (issue 31, items 1-2)."""

import os
import pickle
import subprocess
import sys

import joblib
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skmip.app.cli import main
from skmip.utils.trust import UntrustedError, check_installed, load_pickle, refuse_io_parameters

SMALL = ["--n-models", "4", "--n-subsets", "16", "--n-samples", "160", "--n-rounds", "60", "--n-jobs", "1", "-q",
         "--dataset", "breast_cancer"]

PIPE = ("sklearn.pipeline.Pipeline(steps=[('s', sklearn.preprocessing.StandardScaler()), "
        "('c', sklearn.linear_model.LogisticRegression())]{extra})")


class _Planted:
    """What an attacker plants: unpickling it runs a shell command."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("argv", [
    ["--estimator", PIPE.format(extra=", memory='{cache}'")],
    ["--estimator", PIPE.format(extra=""), "--param", "memory={cache}"],
    ["--estimator", "sklearn.ensemble.BaggingClassifier(estimator=" + PIPE.format(extra=", memory='{cache}'") + ")"],
])
def test_a_cache_directory_is_refused_before_any_work(tmp_path, capsys, argv):
    """The reviewer's exploit: a Pipeline with memory=DIR loads (and runs) pickles planted in DIR."""
    cache = tmp_path / "cache"
    cache.mkdir()
    code = main(SMALL + [a.format(cache=cache) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert "memory=" in err and "Leave memory unset" in err
    assert list(cache.iterdir()) == []  # nothing was cached, nothing loaded


@pytest.mark.parametrize("est, ok", [
    (Pipeline([("s", StandardScaler()), ("c", LogisticRegression())]), True),
    (Pipeline([("s", StandardScaler()), ("c", LogisticRegression())], memory="/tmp/x"), False),
    (__import__("sklearn.svm", fromlist=["SVC"]).SVC(cache_size=500), True),  # a number of MB, not a path
    (__import__("sklearn.feature_extraction.text", fromlist=["x"]).CountVectorizer(input="filename"), False),
    (__import__("sklearn.feature_extraction.text", fromlist=["x"]).CountVectorizer(), True),
])
def test_io_parameters_at_any_depth(est, ok):
    if ok:
        refuse_io_parameters(est, "--estimator")
    else:
        with pytest.raises(UntrustedError, match="--estimator: .* (names a path|read the files)"):
            refuse_io_parameters(est, "--estimator")


def test_a_planted_pickle_is_refused_before_it_runs(tmp_path, capsys):
    marker = tmp_path / "pwned"
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(_Planted(marker)))
    assert main(SMALL + ["--estimator-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert not marker.exists()
    assert "runs code stored in it" in err  # said where it happens, before unpickling
    assert "refused to unpickle" in err and "system" in err


@pytest.mark.parametrize("dump", [pickle.dump, joblib.dump])
def test_estimators_people_pickle_still_load(tmp_path, dump):
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.pipeline import make_pipeline

    X, y = load_breast_cancer(return_X_y=True)
    for est in (make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y),
                RandomForestClassifier(n_estimators=3, random_state=0).fit(X, y),
                HistGradientBoostingClassifier(max_iter=3).fit(X, y)):
        path = tmp_path / "m.pkl"
        with open(path, "wb") as fh:
            dump(est, fh)
        loaded = load_pickle(path)
        assert (loaded.predict(X) == est.predict(X)).all()


def test_a_pickled_class_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "cls.pkl"
    path.write_bytes(pickle.dumps(LogisticRegression))
    assert main(SMALL + ["--estimator-file", str(path)]) == 2
    err = capsys.readouterr().err
    assert "holds the class sklearn.linear_model._logistic.LogisticRegression, not an estimator" in err


def test_a_module_outside_the_installed_distributions_is_never_imported(tmp_path, monkeypatch, capsys):
    marker = tmp_path / "imported"
    (tmp_path / "lurking_models.py").write_text(f"open({str(marker)!r}, 'w').close()\nclass M: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(SMALL + ["--estimator", "lurking_models.M"]) == 2
    assert "no installed distribution provides it" in capsys.readouterr().err
    assert not marker.exists()


def test_a_file_in_the_working_directory_does_not_shadow_an_installed_package(tmp_path):
    """``python -m skmip`` puts the working directory first on sys.path; the name must still
    resolve to the installed package or be refused. ``threadpoolctl`` is installed (scikit-learn
    needs it) and not imported by ``skmip --help``'s path, so the shadow would be the one found."""
    (tmp_path / "threadpoolctl.py").write_text("raise SystemExit('shadow ran')\n")
    sys.path.insert(0, str(tmp_path))
    old = os.getcwd()
    try:
        os.chdir(tmp_path)
        with pytest.raises(UntrustedError, match="shadows the installed package"):
            _check_not_imported("threadpoolctl")
    finally:
        os.chdir(old)
        sys.path.remove(str(tmp_path))


def _check_not_imported(name):
    saved = sys.modules.pop(name, None)
    try:
        check_installed(name, "--estimator")
    finally:
        if saved is not None:
            sys.modules[name] = saved


def test_help_and_docs_say_what_is_refused():
    res = subprocess.run([sys.executable, "-m", "skmip", "--help"], capture_output=True, text=True, check=True)
    text = " ".join(res.stdout.split())
    assert "only from installed packages" in text
    assert "a parameter that names a path, a cache or a file (Pipeline memory=...) is refused" in text
    assert "only classes of installed packages and array reconstructors are unpickled" in text
