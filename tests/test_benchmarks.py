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
    "bench_audit", "bench_audit_fitted", "bench_one_run", "bench_one_run_peers", "bench_coupling_audit", "bench_coupling_scale", "bench_coupling_utility",
    "bench_exact_audit_radius", "bench_exact_stack", "bench_german_levers", "bench_influence", "bench_learners", "bench_leemann", "bench_linear_svc", "bench_marginal_synthesis",
    "bench_nn_dpsgd", "bench_nn_ensemble", "bench_statistic_audit", "bench_subsampling", "bench_synth_audit",
    "bench_synthetic", "bench_tabular_tv", "bench_wrapper", "reproduce",
]
PARSER_ONLY = [
    "bench_any_estimator", "bench_art", "bench_auto", "bench_dpsgd_accounting", "bench_exact_audit", "bench_grid_search",
    "bench_moments", "bench_multiclass", "bench_nasr", "bench_nn_gmip_utility", "bench_noisy_gradient", "bench_peers", "bench_pipelines",
    "bench_private_head", "bench_routes",
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
    assert sorted(SMOKE + PARSER_ONLY) == sorted(_harness_module().benchmarks())
    assert not set(SMOKE) & set(PARSER_ONLY)


@pytest.mark.parametrize("name", SMOKE + PARSER_ONLY)
def test_benchmark_runs(outcomes, name):
    outcome = outcomes[name]
    if outcome["status"] == "skipped":
        pytest.skip(outcome["detail"])
    assert outcome["status"] == "ok", outcome["detail"]


def _harness_module():
    sys.path.insert(0, str(HARNESS.parent))
    try:
        import _harness
    finally:
        sys.path.remove(str(HARNESS.parent))
    return _harness


def test_smoke_settings_follow_quick_ones(monkeypatch):
    H = _harness_module()
    monkeypatch.setattr(H, "pin_threads", lambda *a, **k: None)  # leave this process's threads alone
    p = H.parser("doc", quick="q", reps=3)
    p.add_argument("--rows", type=int, default=100)
    try:
        args = H.parse(p, ["--smoke"], quick=dict(reps=2, rows=50), smoke=dict(rows=10))
        assert (args.quick, args.reps, args.rows, H.smoke()) == (True, 2, 10, True)
        args = H.parse(p, ["--quick", "--rows", "70"], quick=dict(reps=1))
        assert (args.reps, args.rows, H.smoke()) == (1, 70, False)
        args = H.parse(p, ["--smoke", "--rows", "30"], quick=dict(reps=2), smoke=dict(rows=10, reps=1))
        assert (args.reps, args.rows) == (1, 30)  # smoke settings yield to the command line
        with pytest.raises(AttributeError, match="'n_models' is not an option"):
            H.parse(p, ["--smoke"], smoke=dict(n_models=2))
    finally:
        H._STATE["smoke"] = False


def test_a_missing_optional_package_is_a_skip(tmp_path):
    # Stand-ins that fail to import as the real packages do when absent.
    for name in ("torch", "art"):
        (tmp_path / f"{name}.py").write_text(f'raise ModuleNotFoundError("No module named {name!r}", name={name!r})\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]),
               SKMIP_BENCH_SMOKE_DIR=str(tmp_path / "results"), OMP_NUM_THREADS="1")
    names = ["bench_nn_dpsgd", "bench_art"]
    done = subprocess.run([sys.executable, str(HARNESS), *names, "--json", str(tmp_path / "o.json")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    outcomes = json.loads((tmp_path / "o.json").read_text())
    assert done.returncode == 0, done.stdout[-2000:]
    assert outcomes["bench_nn_dpsgd"] == dict(outcomes["bench_nn_dpsgd"], status="skipped", detail="needs torch")
    assert outcomes["bench_art"]["status"] == "skipped" and "pip install" in outcomes["bench_art"]["detail"]
