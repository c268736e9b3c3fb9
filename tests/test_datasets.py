"""Bundled real datasets load offline, with the documented shapes and labels."""

import numpy as np
import pytest

from skmip.datasets import DATASETS, load_csv, load_dataset


@pytest.mark.parametrize("name", DATASETS)
def test_every_dataset_loads_as_finite_floats(name):
    d = load_dataset(name, n_samples=100)
    assert d.data.dtype == np.float64 and np.isfinite(d.data).all()
    assert d.data.shape[0] == len(d.target) == 100
    assert len(d.feature_names) == d.data.shape[1]


def test_adult_matches_the_uci_file():
    d = load_dataset("adult")
    assert d.data.shape == (32561, 108)
    assert int(d.target.sum()) == 7841  # rows with income >50K in adult.data
    assert "sex=Female" in d.feature_names


def test_unknown_dataset_names_the_choices():
    with pytest.raises(ValueError, match="german_credit"):
        load_dataset("mnist")


def test_csv_loader_errors(tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("a,b,label\n1,2,x\n3,4,y\n")
    d = load_csv(str(good), "label")
    assert d.data.shape == (2, 2) and d.target.tolist() == [0, 1]
    with pytest.raises(ValueError, match="no column named 'target'"):
        load_csv(str(good), "target")
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,label\n1,zz,x\n")
    with pytest.raises(ValueError, match="column 'b' row 2 is not numeric"):
        load_csv(str(bad), "label")
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b,label\n1,2\n")
    with pytest.raises(ValueError, match="row 2 has 2 fields"):
        load_csv(str(ragged), "label")
