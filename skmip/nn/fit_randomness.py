"""The randomness of one training call: learner seeds, the release generator, torch's RNG block.

The seeds of one seeded training call (:func:`fit_seeds`), the generator of a release's
batches and noise (:func:`release_generator`), a block with torch's global RNG seeded then
restored (:func:`seeded_torch`), and the per-epoch data order (:class:`EpochPermutationSampler`).

The lowest layer of skmip's torch leaf: :mod:`skmip.nn.ensemble` (batched fits) and
:mod:`skmip.nn.seeded_nets` (the seeded skorch nets) both draw their randomness through these
functions, so a batched member and a sequential fit see the same draws. It imports nothing
else from skmip.
"""

from __future__ import annotations

import contextlib
import numbers

import numpy as np
import torch
from sklearn.utils import check_random_state

__all__ = ["fit_seeds", "release_generator", "seeded_torch", "EpochPermutationSampler"]


def fit_seeds(random_state, offset: int = 0) -> tuple[int, int, int]:
    """The seeds (module/dropout, data order, loader) a seeded net uses for one training call.

    Parameters
    ----------
    random_state : None, int or numpy.random.RandomState
        The net's ``random_state``.
    offset : int, default=0
        Number of epochs already trained (0 for a fresh ``fit``).

    Returns
    -------
    init_seed, data_seed, loader_seed : int
        Seeds for ``torch.manual_seed`` inside :func:`seeded_torch`, for the data-order
        generator (one ``randperm`` per epoch) and for the ``DataLoader``'s own generator
        (it draws a worker base seed at every epoch; kept apart so the permutations do
        not depend on torch's loader internals).

    Examples
    --------
    >>> fit_seeds(0) == fit_seeds(0)
    True
    >>> fit_seeds(0) == fit_seeds(0, offset=5)
    False
    """
    if random_state is None:
        seq = np.random.SeedSequence()
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        seq = np.random.SeedSequence([int(random_state), int(offset)])
    else:
        rng = check_random_state(random_state)
        seq = np.random.SeedSequence(rng.randint(0, 2**32 - 1, size=4, dtype=np.uint64).tolist())
    init_seed, data_seed, loader_seed = (int(s) for s in seq.generate_state(3, dtype=np.uint32))
    return init_seed, data_seed, loader_seed


def release_generator(random_state, offset: int = 0) -> np.random.Generator:
    """The generator of one training call's *release* randomness (DP-SGD batches and noise).

    Unlike :func:`fit_seeds`, which hands out 32-bit integers to make a learner
    deterministic, this keeps the full entropy of the seed sequence: ``None`` gives 128
    bits of fresh OS entropy, never narrowed to an integer seed.

    Parameters
    ----------
    random_state : None, int or numpy.random.RandomState
        The net's ``random_state``.
    offset : int, default=0
        Steps already trained (so successive ``partial_fit`` calls do not repeat draws).

    Returns
    -------
    numpy.random.Generator
        A PCG64 generator whose seed sequence carries the entropy of ``random_state``
        (its spawn key keeps it apart from :func:`fit_seeds`' stream).

    Examples
    --------
    >>> g = release_generator(None)
    >>> g.bit_generator.seed_seq.entropy.bit_length() > 64
    True
    >>> release_generator(0).random() == release_generator(0).random()
    True
    """
    if random_state is None:
        seq = np.random.SeedSequence(spawn_key=(1,))
    elif isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        seq = np.random.SeedSequence([int(random_state), int(offset)], spawn_key=(1,))
    else:
        rng = check_random_state(random_state)
        seq = np.random.SeedSequence(rng.randint(0, 2**32 - 1, size=4, dtype=np.uint64).tolist(), spawn_key=(1,))
    return np.random.Generator(np.random.PCG64(seq))


@contextlib.contextmanager
def seeded_torch(seed: int):
    """Seed torch's global generators for the duration of a block, then restore them.

    The CPU generator and the generator of every visible CUDA device are saved on entry,
    seeded with ``seed``, and restored on exit (``torch.random.fork_rng``): code outside
    the block sees the global stream exactly as it left it. Not thread-safe.

    Examples
    --------
    >>> before = torch.get_rng_state()
    >>> with seeded_torch(1):
    ...     a = torch.rand(2)
    >>> with seeded_torch(1):
    ...     b = torch.rand(2)
    >>> bool(torch.equal(a, b)), bool(torch.equal(before, torch.get_rng_state()))
    (True, True)
    """
    devices = list(range(torch.cuda.device_count())) if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        yield


class EpochPermutationSampler(torch.utils.data.Sampler):
    """Yield a fresh random permutation of ``range(n)`` each epoch from a local generator.

    Parameters
    ----------
    n : int
        Number of rows.
    generator : torch.Generator
        Local generator, advanced by one ``torch.randperm(n)`` per epoch.
    """

    def __init__(self, n: int, generator: torch.Generator):
        self.n = int(n)
        self.generator = generator

    def __iter__(self):
        return iter(torch.randperm(self.n, generator=self.generator).tolist())

    def __len__(self):
        return self.n
