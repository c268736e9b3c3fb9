"""skmip's parallel work on a dask.distributed cluster through joblib's dask backend: the split
fits of estimate_sigma, the rounds of estimate_swap_deltas, and a whole MIPNoiseWrapper fit as
docs/coupling.md ("Running the calibration on a cluster") tells users to run it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from joblib import parallel_config
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from skmip import MIPNoiseWrapper
from skmip.calibration.spread.moments import estimate_sigma
from skmip.calibration.swap import estimate_swap_deltas

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
    kwargs = dict(n_subsets=8, moment=moment, random_state=0, return_mean=True)
    expected = estimate_sigma(LogisticRegression(), X, y, n_jobs=1, **kwargs)
    with distributed.get_task_stream(client) as tasks, parallel_config(backend="dask"):
        got = estimate_sigma(LogisticRegression(), X, y, n_jobs=-1, **kwargs)
    assert len(tasks.data) > 0, "the split fits did not run on the dask cluster"
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    rows = np.random.default_rng(0).permutation(len(X))[:200]
    return StandardScaler().fit_transform(X[rows]), y[rows]


def test_swap_distance_rounds_on_the_cluster_are_the_sequential_ones(client, cancer):
    """The rounds' seeds are drawn up front, so spreading the rounds over a cluster must give
    the very same distances as running them one after another."""
    X, y = cancer
    model = LogisticRegression(C=0.1, solver="newton-cholesky", tol=1e-10)
    kwargs = dict(scale=np.full(X.shape[1] + 1, 0.05), n_rounds=30, polish=True, random_state=0)
    expected = estimate_swap_deltas(model, X, y, n_jobs=1, **kwargs)
    with distributed.get_task_stream(client) as tasks, parallel_config(backend="dask"):
        got = estimate_swap_deltas(model, X, y, n_jobs=-1, **kwargs)
    assert len(tasks.data) > 0, "the rounds did not run on the dask cluster"
    assert got.engine == expected.engine == "newton"
    np.testing.assert_array_equal(got.distances, expected.distances)


def test_wrapper_fit_on_the_cluster_as_documented(client, cancer):
    """docs/coupling.md: ``with parallel_config(backend="dask"): MIPNoiseWrapper(..., n_jobs=-1)``."""
    X, y = cancer
    kwargs = dict(eta=0.3, n_rounds=30, random_state=0)
    expected = MIPNoiseWrapper(LogisticRegression(C=0.1), n_jobs=1, **kwargs).fit(X, y)
    with distributed.get_task_stream(client) as tasks, parallel_config(backend="dask"):
        got = MIPNoiseWrapper(LogisticRegression(C=0.1), n_jobs=-1, **kwargs).fit(X, y)
    assert len(tasks.data) > 0, "the calibration did not run on the dask cluster"
    assert got.method_ == "coupling"
    assert got.noise_scale_ == expected.noise_scale_
    np.testing.assert_array_equal(got.estimator_.coef_, expected.estimator_.coef_)


def test_a_worker_killed_mid_fit_leaves_the_model_unchanged():
    """A long calibration on a cluster of worker processes: one worker is killed while rounds
    run (its nanny restarts it and dask reruns the lost jobs). The rounds' seeds are fixed up
    front and each job is a pure function of them, so the model is the sequential one."""
    import os
    import signal
    import threading
    import time

    rng = np.random.default_rng(0)
    X = rng.normal(size=(8000, 10))
    y = (X @ rng.normal(size=10) / 3 + rng.logistic(size=8000) > 0).astype(int)
    kwargs = dict(eta=0.2, method="coupling", n_rounds=160, random_state=0)  # "auto" takes noisy gradients here
    start = time.perf_counter()
    expected = MIPNoiseWrapper(LogisticRegression(C=0.1), n_jobs=1, **kwargs).fit(X, y)
    sequential = time.perf_counter() - start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            result, errors = {}, []

            def fit():
                try:
                    with parallel_config(backend="dask"):
                        result["model"] = MIPNoiseWrapper(LogisticRegression(C=0.1), n_jobs=-1, **kwargs).fit(X, y)
                except Exception as exc:  # reported below
                    errors.append(exc)

            worker = threading.Thread(target=fit)
            worker.start()
            # Wait until the rounds run on the cluster (jobs processing on both workers: the
            # sigma step before them runs in this process), then kill a busy worker.
            deadline = time.perf_counter() + 20 * sequential + 60
            busy = []
            while len(busy) < 2 and worker.is_alive() and time.perf_counter() < deadline:
                busy = [addr for addr, keys in client.processing().items() if keys]
                time.sleep(0.02)
            assert worker.is_alive() and busy, f"the fit ended before a worker could be killed: {errors}"
            pid = client.run(os.getpid, workers=busy[:1])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            assert worker.is_alive(), "the fit ended before the worker died"
            worker.join(timeout=20 * sequential + 120)
            assert not worker.is_alive() and not errors, errors
    got = result["model"]
    assert got.noise_scale_ == expected.noise_scale_
    np.testing.assert_array_equal(got.estimator_.coef_, expected.estimator_.coef_)
    np.testing.assert_array_equal(got.estimator_.intercept_, expected.estimator_.intercept_)
