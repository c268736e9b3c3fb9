"""Every benchmark still runs: its ``--smoke`` mode, through the shared harness.

All scripts run in one subprocess (``python benchmarks/_harness.py``), so that numpy,
scikit-learn and torch are imported once; each script's outcome is then checked on its own.
The scripts in ``PARSER_ONLY`` take longer than this suite allows even in smoke mode (games of
many models, DP-SGD accounting, worker start-up): for them the test imports the script and runs
its argument parser (``--smoke --help``); ``python benchmarks/_harness.py NAME`` runs their
smoke mode in full. A script whose optional package (torch, ART, Privacy Meter, dp_accounting)
is missing is skipped; nothing downloads data.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "benchmarks" / "_harness.py"

SMOKE = [
    "bench_audit", "bench_coupling_audit", "bench_coupling_scale", "bench_coupling_utility",
    "bench_exact_audit_radius", "bench_influence", "bench_leemann", "bench_marginal_synthesis",
    "bench_nn_ensemble", "bench_statistic_audit", "bench_subsampling", "bench_synth_audit",
    "bench_synthetic", "bench_tabular_tv", "bench_wrapper", "reproduce",
]
PARSER_ONLY = [
    "bench_any_estimator", "bench_art", "bench_dpsgd_accounting", "bench_exact_audit", "bench_grid_search",
    "bench_learners", "bench_moments", "bench_nasr", "bench_nn_dpsgd", "bench_nn_gmip_utility", "bench_peers",
    "bench_pipelines", "bench_private_head",
]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bench")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               SKMIP_BENCH_SMOKE_DIR=str(tmp / "results"), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, str(HARNESS), *SMOKE, *PARSER_ONLY, "--help-only", *PARSER_ONLY,
                           "--json", str(tmp / "outcomes.json")],
                          cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    path = tmp / "outcomes.json"
    assert path.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(path.read_text())


def test_every_benchmark_is_checked():
    sys.path.insert(0, str(HARNESS.parent))
    try:
        import _harness
    finally:
        sys.path.remove(str(HARNESS.parent))
    assert sorted(SMOKE + PARSER_ONLY) == sorted(_harness.benchmarks())
    assert not set(SMOKE) & set(PARSER_ONLY)


@pytest.mark.parametrize("name", SMOKE + PARSER_ONLY)
def test_benchmark_runs(outcomes, name):
    outcome = outcomes[name]
    if outcome["status"] == "skipped":
        pytest.skip(outcome["detail"])
    assert outcome["status"] == "ok", outcome["detail"]
