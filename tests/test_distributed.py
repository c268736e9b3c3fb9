"""estimate_sigma's split fits on a dask.distributed cluster through joblib's dask backend."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skmip.moments import estimate_sigma

distributed = pytest.importorskip("distributed", reason='needs pip install "skmip[distributed]"')


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        # An in-process cluster may warn that it cannot find a public IP address (offline).
        warnings.simplefilter("ignore", RuntimeWarning)
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster, distributed.Client(cluster) as client:
            yield client


@pytest.mark.parametrize("moment", [2, 3])  # one pass; two passes
def test_dask_backend_gives_the_sequential_result(client, moment):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    kwargs = dict(n_splits=8, moment=moment, random_state=0, return_mean=True)
    expected = estimate_sigma(LogisticRegression(), X, y, n_jobs=1, **kwargs)
    with distributed.get_task_stream(client) as tasks, parallel_config(backend="dask"):
        got = estimate_sigma(LogisticRegression(), X, y, n_jobs=-1, **kwargs)
    assert len(tasks.data) > 0, "the split fits did not run on the dask cluster"
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
