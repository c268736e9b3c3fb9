"""The declared floor is the tested floor (issue 31, item 10).

``.ci/run`` installs ``.ci/floor.txt`` exactly and runs a smoke subset there; these tests keep
that file equal to what ``pyproject.toml`` declares, and keep skmip off scikit-learn's private
modules (the policy in the README: a new scikit-learn release breaks only what changes its
public API).
"""

import ast
import pathlib
import re
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _floors_declared():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    out = {}
    for dep in deps:
        name, op, version = re.match(r"([A-Za-z0-9_.-]+)\s*(>=|==)\s*([0-9.]+)", dep).groups()
        out[name.lower()] = version
    return out


def _floors_tested():
    out = {}
    for line in (ROOT / ".ci" / "floor.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            out[name.strip().lower()] = version.strip()
    return out


def _same_release(a, b):
    pad = lambda v: tuple(int(p) for p in v.split(".")) + (0,) * (3 - len(v.split(".")))  # noqa: E731
    return pad(a) == pad(b)


def test_every_core_floor_is_installed_exactly_by_the_floor_job():
    declared, tested = _floors_declared(), _floors_tested()
    assert set(declared) <= set(tested), set(declared) - set(tested)
    for name, version in declared.items():
        assert _same_release(version, tested[name]), (name, version, tested[name])


def test_the_floor_job_runs_in_ci():
    script = (ROOT / ".ci" / "run").read_text()
    assert "-r .ci/floor.txt" in script and "--no-deps -e ." in script


#: Underscored names scikit-learn documents in its public API reference.
DOCUMENTED = {"sklearn.utils._safe_indexing"}


def test_skmip_imports_no_private_scikit_learn_module():
    private = []
    for path in (ROOT / "skmip").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            private += [(path.name, n) for n in names if n.startswith("sklearn") and n not in DOCUMENTED
                        and any(p.startswith("_") for p in n.split(".")[1:])]
    assert private == []
