"""DP-SGD's batches, drawn from a release generator (full entropy, or the OS's CSPRNG).

Which rows enter a noisy step is part of the mechanism the accountant analyses: an attacker
who could predict the batches would know when the target's gradient was (not) in the sum.
These samplers therefore draw from a *release* generator, a ``numpy.random.Generator``
spawned from 128 bits of OS entropy (:func:`skmip.nn.fit_randomness.release_generator`) or an
:class:`skmip.utils.os_random.OSRandomGenerator`, never from a torch generator with a 64-bit seed.
Both offer ``random(size)``, the one method used here.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["PoissonBatchSampler", "UniformBatchSampler", "poisson_loader"]


class PoissonBatchSampler(torch.utils.data.Sampler):
    """Each step, every row joins the batch independently with probability ``sample_rate``.

    The sampling of Opacus' ``UniformWithReplacementSampler`` (Abadi et al.; the rate the
    Poisson accountant is charged with). Batches may be empty.

    Parameters
    ----------
    n : int
        Number of rows.
    sample_rate : float
        Probability ``q`` that a row is in a batch.
    steps : int
        Batches per epoch.
    rng : numpy.random.Generator or OSRandomGenerator
        Release generator.

    Examples
    --------
    >>> s = PoissonBatchSampler(1000, 0.1, 3, np.random.default_rng(0))
    >>> [len(b) for b in s]
    [89, 121, 108]
    """

    def __init__(self, n: int, sample_rate: float, steps: int, rng):
        self.n, self.sample_rate, self.steps, self.rng = int(n), float(sample_rate), int(steps), rng

    def __iter__(self):
        for _ in range(self.steps):
            yield np.flatnonzero(self.rng.random(self.n) < self.sample_rate).tolist()

    def __len__(self):
        return self.steps


class UniformBatchSampler(torch.utils.data.Sampler):
    """Each step, a batch of exactly ``batch_size`` rows drawn uniformly without replacement.

    Steps are independent (a row may appear in consecutive batches); this is the sampling
    of Dong et al.'s NoisySGD and of Leemann Eq. 10.

    Parameters
    ----------
    n : int
        Number of rows.
    batch_size : int
        Rows per batch.
    steps : int
        Batches per epoch.
    rng : numpy.random.Generator or OSRandomGenerator
        Release generator.

    Notes
    -----
    The batch is the ``batch_size`` smallest of ``n`` i.i.d. uniform doubles: a uniform
    subset (ties have probability below :math:`n^2 / 2^{54}`).

    Examples
    --------
    >>> s = UniformBatchSampler(10, 3, 2, np.random.default_rng(0))
    >>> [sorted(b) for b in s]
    [[1, 2, 3], [1, 3, 5]]
    """

    def __init__(self, n: int, batch_size: int, steps: int, rng):
        self.n, self.batch_size, self.steps, self.rng = int(n), int(batch_size), int(steps), rng

    def __iter__(self):
        for _ in range(self.steps):
            yield np.argsort(self.rng.random(self.n), kind="stable")[: self.batch_size].tolist()

    def __len__(self):
        return self.steps


def poisson_loader(dataset, q, steps, rng):
    """A loader of Poisson batches (possibly empty), collated as Opacus' ``DPDataLoader`` does."""
    from opacus.data_loader import dtype_safe, shape_safe, wrap_collate_with_empty
    from torch.utils.data.dataloader import default_collate

    first = dataset[0]
    collate = wrap_collate_with_empty(
        collate_fn=default_collate, batch_first=True,
        sample_empty_shapes=[(0, *shape_safe(x)) for x in first], dtypes=[dtype_safe(x) for x in first],
    )
    return torch.utils.data.DataLoader(
        dataset, batch_sampler=PoissonBatchSampler(len(dataset), q, steps, rng), collate_fn=collate
    )
