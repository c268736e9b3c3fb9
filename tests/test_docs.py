"""The documentation site builds with warnings as errors (a CI step, kept fast)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("numpydoc")
pytest.importorskip("myst_parser")

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_sphinx_build_has_no_warnings(tmp_path):
    src = tmp_path / "docs"
    # Build a copy: autosummary writes generated pages next to the sources.
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "generated"))
    # The gallery page includes the scripts from ../examples.
    shutil.copytree(DOCS.parent / "examples", tmp_path / "examples")
    res = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
         str(src), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=600,
    )
    assert res.returncode == 0, res.stderr[-4000:]
    assert (tmp_path / "html" / "index.html").exists()
