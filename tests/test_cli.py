"""The `skmip` command end to end (small settings) and its error paths."""

import json
import subprocess
import sys

import pytest

from skmip.cli import main

SMALL = ["--n-models", "4", "--n-splits", "16", "--n-samples", "160", "--n-rounds", "60", "-q"]
ETAS = ["--eta", "0.3", "--eta", "0.45"]


def test_default_audit_prints_the_table(capsys, tmp_path):
    out_json = tmp_path / "audit.json"
    code = main(SMALL + ETAS + ["--json", str(out_json)])
    assert code == 0
    text = capsys.readouterr().out
    for label in ("baseline", "MIP eta=0.3", "MIP eta=0.45", "subsampled DP T=0.5"):
        assert label in text
    assert "Izzo et al. Def. 1" in text and "Thudi et al. Thm 3.3" in text
    data = json.loads(out_json.read_text())
    rows = {r["defense"]: r for r in data["results"]}
    assert rows["baseline"]["bound"] is None
    assert rows["MIP eta=0.3"]["bound"] == pytest.approx(0.3)
    for r in rows.values():
        assert 0.0 <= r["auc"] <= 1.0 and 0.0 <= r["test_accuracy"] <= 1.0


def test_html_report_is_self_contained(tmp_path):
    pytest.importorskip("matplotlib")
    report = tmp_path / "audit.html"
    assert main(SMALL + ["--defense", "none", "--defense", "mip", "--eta", "0.45", "--report", str(report)]) == 0
    page = report.read_text()
    assert page.count("data:image/png;base64,") == 2
    assert "<script" not in page and "http" not in page.split("<body>")[1]


def test_csv_dataset_and_errors(tmp_path, capsys):
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    csv = tmp_path / "data.csv"
    lines = ["a,b,c,label"] + [f"{r[0]},{r[1]},{r[2]},{t}" for r, t in zip(X[:120], y[:120])]
    csv.write_text("\n".join(lines) + "\n")
    assert main(SMALL + ["--dataset", str(csv), "--target", "label", "--defense", "none"]) == 0

    assert main(SMALL + ["--dataset", str(csv)]) == 2
    assert "--target" in capsys.readouterr().err
    assert main(SMALL + ["--dataset", str(csv), "--target", "nope"]) == 2
    assert "no column named 'nope'" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("a,label\nx,1\ny,0\n")
    assert main(SMALL + ["--dataset", str(bad), "--target", "label"]) == 2
    assert "not numeric" in capsys.readouterr().err
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("a,label\n1,1\n2,0\n3,1\n")
    assert main(SMALL + ["--dataset", str(tiny), "--target", "label"]) == 2
    assert "too few" in capsys.readouterr().err
    assert main(SMALL + ["--dataset", str(tmp_path / "missing.csv"), "--target", "label"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(SMALL + ["--eta", "0.9"]) == 2


def test_python_dash_m_entry_point():
    res = subprocess.run([sys.executable, "-m", "skmip", "--help"], capture_output=True, text=True, check=True)
    assert "--dataset" in res.stdout and "--report" in res.stdout
