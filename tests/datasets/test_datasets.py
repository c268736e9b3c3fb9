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
    with pytest.raises(ValueError, match=r"1 column\(s\) are not numeric: 'b' \(row 2: 'zz'\)"):
        load_csv(str(bad), "label")
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b,label\n1,2\n")
    with pytest.raises(ValueError, match="row 2 has 2 fields"):
        load_csv(str(ragged), "label")


@pytest.mark.parametrize("delimiter", [",", ";", "\t"])
def test_csv_delimiter_is_sniffed_and_a_bom_stripped(tmp_path, delimiter):
    path = tmp_path / "data.csv"
    rows = [["age", "score", "label"], ["31", "1.5", "0"], ["45", "2.5", "1"], ["28", "0.5", "1"]]
    text = "\n".join(delimiter.join(r) for r in rows) + "\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())  # Excel's UTF-8 byte-order mark
    d = load_csv(str(path), "label")
    assert d.feature_names == ["age", "score"]  # not "\ufeffage"
    np.testing.assert_array_equal(d.data, [[31, 1.5], [45, 2.5], [28, 0.5]])
    assert d.target.tolist() == [0, 1, 1]


def test_csv_names_every_undeclared_text_column_at_once(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,colour,b,city,label\n1,red,2,Oslo,0\n2,blue,3,Rome,1\n")
    with pytest.raises(ValueError) as info:
        load_csv(str(path), "label")
    message = str(info.value)
    assert "2 column(s) are not numeric" in message
    assert "'colour' (row 2: 'red')" in message and "'city' (row 2: 'Oslo')" in message
    assert "--categorical colour --categorical city" in message
    d = load_csv(str(path), "label", categorical=["colour", "city"])
    assert d.data.shape == (2, 6)


def test_csv_subsample_is_chosen_while_reading(tmp_path):
    import tracemalloc

    n = 60_000
    path = tmp_path / "big.csv"
    with open(path, "w") as fh:
        fh.write("i,x,label\n")
        for i in range(n):
            fh.write(f"{i},{i * 0.5},{i % 2}\n")
    size = path.stat().st_size
    tracemalloc.start()
    d = load_csv(str(path), "label", n_samples=500, random_state=3)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert d.data.shape == (500, 2)
    rows = d.data[:, 0].astype(int)
    assert np.all(np.diff(rows) > 0) and rows.min() >= 0 and rows.max() < n  # distinct file rows
    np.testing.assert_array_equal(d.data[:, 1], rows * 0.5)  # whole rows, not mixed cells
    np.testing.assert_array_equal(d.target, rows % 2)
    # The whole file parsed into lists of strings takes many times its size; the subsample
    # must stay a small fraction of it.
    assert peak < size / 4, (peak, size)
    again = load_csv(str(path), "label", n_samples=500, random_state=3)
    np.testing.assert_array_equal(again.data, d.data)
    assert load_csv(str(path), "label", n_samples=10 * n).data.shape == (n, 2)


@pytest.mark.parametrize("name, n_columns", [("german_credit", 20), ("adult", 14), ("iris", 4)])
def test_as_frame_gives_scikit_learns_frame(name, n_columns):
    pd = pytest.importorskip("pandas")
    d = load_dataset(name, as_frame=True, n_samples=50)
    assert isinstance(d.data, pd.DataFrame) and d.data.shape == (50, n_columns)
    assert isinstance(d.target, pd.Series) and d.target.name == "target"
    assert list(d.frame.columns) == [*d.data.columns, "target"] and list(d.data.columns) == d.feature_names
    if name != "iris":  # categorical columns keep the fixed category list the one-hot encoding uses
        encoded = load_dataset(name, n_samples=50)
        cats = d.data.select_dtypes("category")
        assert sum(len(cats[c].cat.categories) for c in cats) + d.data.shape[1] - cats.shape[1] \
            == encoded.data.shape[1]
    np.testing.assert_array_equal(d.target.to_numpy(), load_dataset(name, n_samples=50).target)


def test_label_classes_unify_numeric_spellings():
    from skmip.datasets import label_classes

    names, y = label_classes(["1", "1.0", " 1", "+1e0", "-0", "0", "10", "2", "2.5"])
    assert names == ["0", "1", "2", "2.5", "10"]  # by value: 2 before 10
    assert y.tolist() == [1, 1, 1, 1, 0, 0, 4, 2, 3]
    names, y = label_classes(["yes", " no", "1", "1.0", "inf"])
    assert names == ["1", "inf", "no", "yes"] and y.tolist() == [3, 2, 0, 0, 1]


def test_csv_header_with_a_repeated_name_is_refused(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("a, b,label,b\n1,2,0,3\n4,5,1,6\n")
    with pytest.raises(ValueError, match=r"more than once: 'b' \(columns 2, 4\)"):
        load_csv(str(path), "label")


def test_an_over_long_field_names_its_line(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text('a,b,label\n1,2,0\n3,"' + "y" * 140_000 + '",1\n')
    with pytest.raises(ValueError, match=r"line 3: a field is longer than 131,072 characters"):
        load_csv(str(path), "label")
