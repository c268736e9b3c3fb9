"""The design of the draws: rounds of held-out blocks, the training size, and the Jensen summary."""

from __future__ import annotations

import math
import numbers
import sys
import time

import numpy as np
from sklearn.utils.parallel import Parallel, delayed

from skmip.utils.threads import single_threaded_blas
from skmip.utils.validation import check_int

from skmip.calibration.swap.compact import CompactDistances, encode_rounds

#: Default number of sorted-block means kept per target and round with pairs_per_target="all".
_SUMMARY_SIZE = 4


def _round_design(seed, n, k):
    """Permutation, held-out blocks and block assignment of one round (module docstring)."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    h = n - k
    r = -(-n // h)
    blocks = [perm[(j * h + np.arange(h)) % n] for j in range(r)]
    owner = np.empty(n, dtype=np.intp)
    owner[perm] = np.minimum(np.arange(n) // h, r - 1)
    fit_sets = []
    for block in blocks:
        keep = np.ones(n, dtype=bool)
        keep[block] = False
        fit_sets.append(np.flatnonzero(keep))
    return rng, fit_sets, owner


def _usable(H, cover):
    """Whether the fit set ``H`` holds every class (always, without a ``cover``): a fit set
    that lacks one is not fitted, its pairs score 0 (:mod:`skmip.calibration.class_cover`)."""
    return cover is None or cover.holds_all(H)


def _jensen_summary(values, size):
    r"""Sorted-block means of each row of ``values`` (shape (T, k)) -> (T, size).

    Block ``j`` averages the empirical quantile function over ``((j-1)/size, j/size]``
    (fractional weights at the edges), so every block has weight ``1/size`` exactly and,
    for a concave non-decreasing ``g``, ``mean(g(values)) <= mean(g(summary))``.
    """
    T, k = values.shape
    if size >= k:
        return np.sort(values, axis=1)
    v = np.sort(values, axis=1)
    finite = np.where(np.isfinite(v), v, 0.0)
    csum = np.concatenate([np.zeros((T, 1)), np.cumsum(finite, axis=1)], axis=1)
    edges = np.arange(size + 1) * (k / size)  # positions in units of rows
    lo_i = np.floor(edges).astype(np.intp)
    frac = edges - lo_i
    # integral of the quantile function from 0 to edge, times k
    idx = np.minimum(lo_i, k - 1)
    integ = csum[:, lo_i] + frac * finite[:, idx]
    out = (integ[:, 1:] - integ[:, :-1]) * (size / k)
    # A block that contains any infinite value (with positive weight) has an infinite mean.
    n_inf = np.isinf(v).sum(axis=1)  # infinities sit at the end of each sorted row
    first_inf = k - n_inf
    out[edges[None, 1:] > first_inf[:, None]] = np.inf
    return out


def _resolve_k(owner, train_size, n):
    if train_size is None:
        k = n // 2
    elif isinstance(train_size, numbers.Integral) and not isinstance(train_size, bool):
        k = int(train_size)
    elif isinstance(train_size, numbers.Real) and 0 < train_size < 1:
        k = int(round(float(train_size) * n))
    else:
        raise ValueError(
            f"{owner}: train_size must be an integer number of rows or a fraction in (0, 1); "
            f"got {train_size!r}."
        )
    return check_int(
        owner, "train_size", k, 1, n - 1,
        why=f"k rows are drawn into D_train out of n={n}; a target must be able to be in or out.",
    )


#: Most values (targets x rounds x kept) of one job's result: a job's rounds are held in
#: double precision until it returns (32 MiB).
_JOB_VALUES = 2**22


def _n_chunks(n_rounds, n_jobs, values_per_round=0):
    from joblib import effective_n_jobs

    # Enough jobs for every worker (4 each, for balance) and for a progress line every 5%,
    # and small enough that a job's result stays within _JOB_VALUES.
    return min(n_rounds, max(20, 4 * effective_n_jobs(n_jobs), -(-n_rounds * values_per_round // _JOB_VALUES)))


def _encoded(func, args, kwargs):
    """Run a chunk's job and return its rounds encoded (:func:`.compact.encode_rounds`), so
    that a quarter of the bytes travel back and are kept."""
    return encode_rounds(func(*args, **kwargs))


#: Times the rounds not yet received are resubmitted after a worker was lost.
_RETRIES = 3


def _lost_worker(exc):
    """Whether ``exc`` says a job was lost with its worker (a cluster's worker killed or
    restarted, its scattered data gone), not that the job itself failed."""
    from concurrent.futures import CancelledError

    return isinstance(exc, CancelledError) or type(exc).__name__ in ("KilledWorker", "CommClosedError")


def _chunk_results(job, chunks, n_jobs, prefer):
    """The results of ``job(chunk)`` for every chunk, in order. When a worker is lost (a
    dask worker killed mid-fit), the chunks not yet received are submitted again: each job
    is a pure function of its seeds, so the result is the same whoever runs it."""
    done = 0
    for attempt in range(_RETRIES + 1):
        try:
            # Generator results arrive in submission order, so chunk i fills its own rounds.
            for part in Parallel(n_jobs=n_jobs, prefer=prefer, return_as="generator")(
                    job(c) for c in chunks[done:]):
                done += 1
                yield part
            return
        except Exception as exc:
            if attempt == _RETRIES or not _lost_worker(exc):
                raise


def run_rounds(make_job, seeds, n_jobs, verbose, owner="estimate_swap_deltas", compact=False,
               values_per_round=0, prefer=None):
    """Run the rounds of ``seeds`` in chunks through joblib; stack them on axis 1.

    ``make_job(chunk_of_seeds)`` returns a ``delayed`` call whose result has shape
    ``(n, len(chunk), n_keep)``. Chunks are the unit of work of any joblib backend
    (``n_jobs`` processes, or a dask cluster under ``joblib.parallel_config(backend="dask")``);
    the seeds are drawn up front, so the result does not depend on how they are spread.
    With ``compact`` each chunk is encoded where it ran and the rounds are kept in a
    :class:`.compact.CompactDistances` (half precision, rounded up). ``values_per_round``
    (n x kept values) sizes the chunks; ``prefer`` is joblib's hint (``"threads"``: the jobs
    share the data and the process's memory instead of copies in worker processes; a
    backend chosen with ``joblib.parallel_config``, e.g. dask, still applies). With
    ``verbose`` a line per finished chunk reports the rounds done and an estimate of the
    time left.
    """
    seeds = list(seeds)
    n_chunks = _n_chunks(len(seeds), n_jobs, values_per_round)
    chunks = [list(c) for c in np.array_split(np.asarray(seeds, dtype=object), n_chunks)]
    out = None  # filled chunk by chunk: no second copy of the whole array
    start = time.perf_counter()
    done = 0

    def job(chunk):
        call = make_job(chunk)
        if not compact:
            return call
        func, args, kwargs = call
        # The inner function itself: the outer delayed carries scikit-learn's configuration.
        return delayed(_encoded)(getattr(func, "function", func), args, kwargs)

    with single_threaded_blas():
        for part in _chunk_results(job, chunks, n_jobs, prefer):
            if compact:
                codes, exponents = part
                if out is None:
                    out = CompactDistances(codes.shape[0], len(seeds), codes.shape[2])
                out.put(done, codes, exponents)
                done += codes.shape[1]
            else:
                if out is None:
                    out = np.empty((part.shape[0], len(seeds)) + part.shape[2:], dtype=part.dtype)
                out[:, done:done + part.shape[1]] = part
                done += part.shape[1]
            del part
            if verbose:
                elapsed = time.perf_counter() - start
                left = elapsed * (len(seeds) - done) / done
                print(f"[{owner}] rounds {done}/{len(seeds)}, {elapsed:.0f} s elapsed, "
                      f"about {math.ceil(left)} s left", file=sys.stderr, flush=True)
    return out
