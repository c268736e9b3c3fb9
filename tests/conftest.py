import os

import numpy as np
import pytest

# Keep BLAS single-threaded so joblib parallelism is what we measure and test.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
