import os

# Keep BLAS single-threaded so joblib parallelism is what we measure and test. This must
# happen before numpy is imported, or the BLAS thread pool is already sized.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import contextlib  # noqa: E402
import importlib.util  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# The torch leaf's doctests need the optional extra; the core suite runs without it.
collect_ignore = []
if any(importlib.util.find_spec(m) is None for m in ("torch", "skorch", "opacus")):
    collect_ignore.append("skmip/nn")


# Property-based tests draw their examples from a fixed seed too (the same examples on every
# run): a rare falsifying example is then found by us, not by a landing's coin flip.
with contextlib.suppress(ImportError):
    from hypothesis import settings

    settings.register_profile("skmip", derandomize=True)
    settings.load_profile("skmip")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ------------------------------------------------------------------ the random-state audit
# The suite never depends on OS entropy: a test whose outcome rests on a fresh draw can fail
# on a coin flip (a fit that happens to have dead units, a subset that misses a class). Every
# test runs inside `entropy_audit`; a test that draws fresh entropy fails unless it is marked
# `os_entropy` (it then checks the unseeded path on purpose, with assertions that hold for any
# draw). Doctests and README snippets (marked `docs_example`) show users the unseeded calls a
# release needs, so in them fresh entropy is replaced by a fixed seed instead. numpy's global
# RandomState (what scikit-learn's random_state=None draws from, in scikit-learn's own estimator
# checks too) is set to a fixed seed at the start of every test, so it is deterministic.

#: What a fresh-entropy draw gets in a doctest, and the global RandomState at every test's start.
AUDIT_SEED = 20240601


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "os_entropy: the test exercises fresh OS entropy (random_state=None) on purpose; its "
        "assertions must hold for every draw",
    )
    config.addinivalue_line(
        "markers",
        "docs_example: runs documentation code, whose unseeded calls get a fixed seed instead of "
        "OS entropy (as in doctests)",
    )


def _where():
    """The innermost frames of skmip and the tests that asked for entropy."""
    stack = traceback.extract_stack()[:-2]
    ours = [f for f in stack if "skmip" in f.filename and "conftest" not in f.filename]
    tests = [f for f in stack if os.sep + "tests" + os.sep in f.filename]
    frames = ours[::-1][:2] + tests[-1:]
    return " <- ".join(f"{os.path.relpath(f.filename)}:{f.lineno} {f.name}" for f in frames)


def _importing():
    """Whether the caller runs inside a module's import (its top-level code)."""
    return any(f.filename.startswith("<frozen importlib") for f in traceback.extract_stack())


@contextlib.contextmanager
def entropy_audit(replace_with=None):
    """Record every draw of fresh OS entropy made inside the block.

    Catches ``numpy.random.default_rng()`` with no seed (skmip's ``resolve_rng(None)`` and any
    direct call) and any use of numpy's global ``RandomState`` (scikit-learn's
    ``random_state=None``), which is set to :data:`AUDIT_SEED` on entry so that it is
    deterministic either way. With ``replace_with`` an int, unseeded ``default_rng`` calls get
    that seed instead of OS entropy. Yields the list of records (strings).
    """
    records = []
    real = np.random.default_rng

    def default_rng(seed=None):
        # A module that builds a generator when it is first imported (which test imports it
        # first depends on the order, under xdist too) is not the test's draw.
        if seed is None and not _importing():
            records.append(f"numpy.random.default_rng() without a seed at {_where()}")
            if replace_with is not None:
                seed = replace_with
        return real(seed)

    global_state = np.random.get_state()
    np.random.seed(AUDIT_SEED)
    start = np.random.get_state()
    np.random.default_rng = default_rng
    try:
        yield records
    finally:
        np.random.default_rng = real
        end = np.random.get_state()
        if end[2] != start[2] or not np.array_equal(end[1], start[1]):
            records.append("numpy's global RandomState (e.g. a scikit-learn estimator with "
                           "random_state=None)")
        np.random.set_state(global_state)


@pytest.fixture(autouse=True)
def _random_state_audit(request):
    docs = (type(request.node).__name__ == "DoctestItem"
            or request.node.get_closest_marker("docs_example") is not None)
    allowed = request.node.get_closest_marker("os_entropy") is not None
    with entropy_audit(replace_with=AUDIT_SEED if docs else None) as records:
        yield
    verdict = audit_verdict(records, allowed=allowed or docs)
    if verdict:
        pytest.fail(verdict, pytrace=False)


def audit_verdict(records, *, allowed):
    """Why a test that left ``records`` breaks the rule, or ``None`` if it does not."""
    fresh = [r for r in records if "global RandomState" not in r]  # pinned at the test's start
    if not fresh or allowed:
        return None
    return (
        "the test draws fresh OS entropy, so its outcome can change from run to run:\n  "
        + "\n  ".join(dict.fromkeys(fresh))
        + "\nSeed it (random_state=0 on every estimator that fits), or mark it "
        "@pytest.mark.os_entropy if it checks the unseeded path on purpose."
    )
