"""Imports point down only (DESIGN.md, "Layers"): the graph of skmip's own imports, read statically.

Imports inside functions count too: a deferred import hides a cycle from the interpreter,
not from the design.
"""

import ast
from pathlib import Path

import skmip

ROOT = Path(skmip.__file__).parent


def _module_name(path):
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path):
    """Every skmip module a file imports, at any depth of its code."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("skmip"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("skmip"):
                found.add(module)
                # "from skmip.nn import seeding" imports a submodule.
                found.update(f"{module}.{a.name}" for a in node.names)
    return found


def _graph():
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    return {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}


def _reaches(graph, start, goal):
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m == goal:
            return True
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return False


def test_report_is_below_the_cli():
    graph = _graph()
    assert "skmip.app.report" in graph["skmip.app.cli"]
    assert not _reaches(graph, "skmip.app.report", "skmip.app.cli")


def test_nothing_but_the_entry_point_imports_the_cli():
    graph = _graph()
    importers = {m for m, deps in graph.items() if "skmip.app.cli" in deps}
    assert importers <= {"skmip.__main__"}


def test_the_torch_leaf_has_no_cycles():
    graph = _graph()
    nn = [m for m in graph if m.startswith("skmip.nn.")]
    for a in nn:
        for b in graph[a]:
            if b.startswith("skmip.nn.") and b != "skmip.nn":
                assert not _reaches(graph, b, a), f"{a} <-> {b}"
    # seeded_nets -> ensemble -> fit_randomness: the batched trainer never reaches back to the nets.
    assert "skmip.nn.ensemble" in graph["skmip.nn.seeded_nets"]
    assert not _reaches(graph, "skmip.nn.ensemble", "skmip.nn.seeded_nets")
    assert not any(d.startswith("skmip") for d in graph["skmip.nn.fit_randomness"])
