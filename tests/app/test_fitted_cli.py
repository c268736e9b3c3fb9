"""`skmip --fitted-model MODEL.pkl --members ROWS.txt`: a trained model audited, never refit (issue 30)."""

import json
import pickle

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skmip.app.cli import main
from skmip.app.fitted_cli import read_members, split_rows
from skmip.datasets import load_dataset

BASE = ["--dataset", "breast_cancer", "-q", "--reference-models", "2"]


def _fitted(tmp_path, model):
    bunch = load_dataset("breast_cancer")
    rows = np.sort(np.random.default_rng(0).choice(len(bunch.target), 150, replace=False))
    model.fit(bunch.data[rows], bunch.target[rows])
    path, members = tmp_path / "model.pkl", tmp_path / "members.txt"
    path.write_bytes(pickle.dumps(model))
    members.write_text("\n".join(map(str, rows)))
    return str(path), str(members)


def test_a_pickled_model_is_audited_with_its_member_list(tmp_path, capsys):
    model = Pipeline([("s", StandardScaler()), ("c", LogisticRegression(C=100, max_iter=2000))])
    path, members = _fitted(tmp_path, model)
    out = tmp_path / "out.json"
    assert main(BASE + ["--fitted-model", path, "--members", members, "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "runs code stored in it" in captured.err  # the trust warning, as for --estimator-file
    assert "never refit" in captured.out and "rmia_offline" in captured.out
    result = json.loads(out.read_text())
    assert result["n_members"] == 150 and result["n_pool"] == 300
    assert set(result["attacks"]) == {"rmia_offline", "lira_offline", "loss"}


def test_io_parameters_and_missing_members_are_refused(tmp_path, capsys):
    cache = tmp_path / "cache"
    cache.mkdir()
    model = Pipeline([("s", StandardScaler()), ("c", LogisticRegression())], memory=str(cache))
    path, members = _fitted(tmp_path, model)
    n_cached = len(list(cache.iterdir()))
    assert main(BASE + ["--fitted-model", path, "--members", members]) == 2
    assert "memory=" in capsys.readouterr().err
    assert len(list(cache.iterdir())) == n_cached  # the audit cached nothing more
    assert main(BASE + ["--fitted-model", path]) == 2
    assert "needs --members" in capsys.readouterr().err


def test_member_files_are_checked(tmp_path):
    import pytest

    from skmip.app.fitted_cli import FittedPlanError

    f = tmp_path / "m.txt"
    for text, match in [("1\n1\n", "listed twice"), ("7\n", "past the dataset"), ("a\n", "not a row number"),
                        ("", "lists no row")]:
        f.write_text(text)
        with pytest.raises(FittedPlanError, match=match):
            read_members(str(f), 5)
    pool, ref = split_rows(np.arange(100) < 20, seed=0)
    assert len(pool) == 40 and len(ref) == 40 and not set(pool) & set(ref)
