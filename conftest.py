import os

# Keep BLAS single-threaded so joblib parallelism is what we measure and test. This must
# happen before numpy is imported, or the BLAS thread pool is already sized.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import importlib.util  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# The torch leaf's doctests need the optional extra; the core suite runs without it.
collect_ignore = []
if any(importlib.util.find_spec(m) is None for m in ("torch", "skorch", "opacus")):
    collect_ignore.append("skmip/nn")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
