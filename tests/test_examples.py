"""The gallery scripts in examples/ run to completion (each in its own interpreter)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NEEDS_MATPLOTLIB = {"plot_audit.py", "grid_search_privacy.py"}
SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py"))


def test_gallery_is_present():
    assert {"plot_mip_wrapper.py", "plot_audit.py", "grid_search_privacy.py",
            "subsampled_dp.py"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_example_runs(script, tmp_path):
    if script in NEEDS_MATPLOTLIB and importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed")
    # Figures go to tmp_path, never into the repository.
    env = dict(os.environ, SKMIP_EXAMPLES_OUT=str(tmp_path), MPLBACKEND="Agg")
    proc = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip(), "an example should print its result"
    if script in NEEDS_MATPLOTLIB:
        assert list(tmp_path.glob("*.png")), "the figure was not written to SKMIP_EXAMPLES_OUT"
