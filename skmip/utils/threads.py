"""BLAS threading: skmip's heavy work is many small dense problems, parallel through joblib."""

from __future__ import annotations

_CONTROLLER = None


def single_threaded_blas():
    """Context in which BLAS runs on one thread.

    Solvers and the coupling engines call BLAS on small blocks (a d x d Hessian, a
    (k x d) panel), far too small to gain from threads; with a threaded BLAS on a busy
    machine the threads spin against each other: one wrapper fit on 400 rows took 48 s
    instead of 3 s, a 200 x 31 L-BFGS fit 97 ms instead of 2 ms. Parallelism in skmip comes
    from ``n_jobs`` instead. The controller is built once: enumerating the loaded libraries
    costs milliseconds.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")
