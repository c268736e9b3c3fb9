"""benchmarks/reproduce.py: the reproductions' one entry point lists and runs its entries."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "reproduce.py"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_list_names_every_reproduction_and_each_script_exists():
    done = _run("--list")
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines()]
    assert {"izzo_fig1", "izzo_fig2", "thudi", "leemann_figs", "leemann_utility", "nasr_epsilon"} <= set(names)
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import reproduce
    finally:
        sys.path.remove(str(SCRIPT.parent))
    for _, full, quick in reproduce.SCRIPTS.values():
        assert (SCRIPT.parent / full[0]).is_file() and quick is not None and quick[0] == full[0]


def test_izzo_fig1_prints_corollary_10_and_theorem_4():
    done = _run("--quick", "--only", "izzo_fig1")
    assert done.returncode == 0, done.stderr
    # eta = 0.1: (6.16 / 0.1)^2 = 3794.6 (Cor. 10, M = 2) and eps = log((1 + 2 eta) / (1 - 2 eta)) = 0.4055.
    row = next(line.split() for line in done.stdout.splitlines() if line.strip().startswith("0.10"))
    assert row[1] == "0.4055" and row[2] == "3795"
