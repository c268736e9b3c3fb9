r"""The likelihood ratio of a marginal synthesizer's noisy tables, target in D_train vs out.

:class:`MarginalLikelihoodAttack` reads the tables a marginal synthesizer releases (the
mechanism's output) and scores every record of D exactly when D's halves can be enumerated,
by a Gaussian approximation otherwise (Houssiau et al. 2022, the TAPAS threat model).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from skmip.audit.attacks.synthetic_attack import CERTAIN, SyntheticAttack

__all__ = ["MarginalLikelihoodAttack"]


def _noise_law(synthesizer):
    """("gaussian" | "laplace", standard deviation per cell fraction) of a marginal synthesizer."""
    sd = float(synthesizer.noise_scale_)
    laplace = getattr(synthesizer, "delta", None) == 0 and hasattr(synthesizer, "epsilon")
    return ("laplace" if laplace else "gaussian"), sd


def _log_noise(residual, law, sd):
    """Log density of the noise at ``residual`` (..., cells), summed over cells."""
    if sd == 0:
        return np.where(np.all(residual == 0, axis=-1), 0.0, -np.inf)
    if law == "laplace":
        b = sd / math.sqrt(2.0)
        return -np.sum(np.abs(residual), axis=-1) / b - residual.shape[-1] * math.log(2 * b)
    return -0.5 * np.sum(residual**2, axis=-1) / sd**2 - residual.shape[-1] * math.log(math.sqrt(2 * math.pi) * sd)


class MarginalLikelihoodAttack(SyntheticAttack):
    r"""Likelihood ratio of the released noisy marginal tables, target in D_train vs out.

    For a marginal synthesizer (:class:`~skmip.MIPMarginalSynthesizer`,
    :class:`~skmip.DPMarginalSynthesizer`) the mechanism releases
    :math:`v = f(S) + \xi`, :math:`f(S)` the cell fractions of the tables on the training
    set :math:`S` (a uniform half of D, Definition 1) and :math:`\xi` Gaussian (or Laplace)
    noise of the released scale. The attack reads ``noisy_tables_`` (the mechanism's
    output; ``tables_`` is its post-processing, so no attack on it does better) and scores
    :math:`\log P(v \mid x^* \in S) - \log P(v \mid x^* \notin S)`:

    * **exact** when D's halves can be enumerated (at most 20,000,
      :func:`skmip.audit.attacks.exact_posterior.enumerate_subsets`): the average of the noise density
      over every half containing / not containing :math:`x^*` -- the Bayes-optimal attacker
      of Izzo et al.'s Proposition 2 for this release;
    * otherwise with the sampling law of the other members approximated by a Gaussian
      (without-replacement covariance of the cell indicators over D), the noise by a
      Gaussian of its variance, and one covariance for "in" and "out": the log-ratio is then
      :math:`\delta^\top A (v - \mu_{out}) - \tfrac12 \delta^\top A \delta` with
      :math:`\delta = \mu_{in} - \mu_{out} = (\phi(x^*) - \bar\phi_{-x^*})/k` and
      :math:`A = (a C + s^2 I)^{-1}`.

    A record whose value of a column is missing from a synthesizer's ``categories_`` while
    that synthesizer listed its training set's categories (``train_size=1.0``) is certainly
    not a member, and the only record of D holding a listed value certainly is one; they get
    the lowest and the highest score (the leak that makes that mode promise nothing).

    Parameters
    ----------
    exact : {"auto", True, False}, default="auto"
        ``"auto"``: exact when the halves of D can be enumerated, else the Gaussian
        approximation. ``True`` raises if they cannot.

    Notes
    -----
    The released structure (``marginals_``) and noise scale are taken as given; a structure
    chosen from the training set (``marginals="tree"`` with ``train_size=1.0``) also carries
    information, which this attack does not use, so it is not optimal in that case.

    References
    ----------
    Izzo et al., Definition 1 and Proposition 2. F. Houssiau, J. Jordon, S. N. Cohen, O. Daniel,
    A. Elliott, J. Geddes, C. Mole, C. Rangel-Smith, L. Szpruch, "TAPAS: a toolbox for
    adversarial privacy auditing of synthetic data", NeurIPS 2022 workshop (threat models
    with auxiliary knowledge of the data).

    Examples
    --------
    >>> MarginalLikelihoodAttack()
    MarginalLikelihoodAttack(exact='auto')
    """

    name = "marginal_likelihood"

    def __init__(self, exact="auto"):
        self.exact = exact

    def __repr__(self):
        return f"MarginalLikelihoodAttack(exact={self.exact!r})"

    def applies(self, synthesizer) -> bool:
        return hasattr(synthesizer, "noisy_tables_") and hasattr(synthesizer, "marginals_")

    def prepare(self, X, X_reference, encoder):
        if self.exact not in ("auto", True, False):
            raise ValueError(f"MarginalLikelihoodAttack: exact must be 'auto', True or False; got {self.exact!r}.")
        from skmip.audit.attacks.exact_posterior import _MAX_SUBSETS, enumerate_subsets

        X = np.asarray(X)
        n = X.shape[0]
        k = n // 2
        exact = self.exact is True or (self.exact == "auto" and math.comb(n, k) <= _MAX_SUBSETS)
        halves = None
        if exact:
            subsets = enumerate_subsets(n, k)  # raises, naming the limit, when there are too many
            halves = np.zeros((subsets.shape[0], n), dtype=bool)
            halves[np.arange(subsets.shape[0])[:, None], subsets] = True
        return {"values": X.astype(str), "exact": exact, "halves": halves, "cache": {}}

    # -- per synthesizer
    @staticmethod
    def _cells(synthesizer, values):
        """Per-row cell index of every released table (-1: a value the synthesizer did not list)."""
        cats = [np.asarray(c).astype(str) for c in synthesizer.categories_]
        codes = np.empty(values.shape, dtype=np.int64)
        for j, c in enumerate(cats):
            order = np.argsort(c)
            pos = np.minimum(np.searchsorted(c[order], values[:, j]), c.size - 1)
            found = c[order][pos] == values[:, j]
            codes[:, j] = np.where(found, order[pos], -1)
        cells, offsets, start = [], [], 0
        for m, table in zip(synthesizer.marginals_, synthesizer.noisy_tables_):
            shape = np.asarray(table).shape
            sub = codes[:, list(m)]
            ok = np.all(sub >= 0, axis=1)
            idx = np.full(values.shape[0], -1, dtype=np.int64)
            idx[ok] = np.ravel_multi_index(tuple(sub[ok].T), shape) + start
            cells.append(idx)
            offsets.append(start)
            start += int(np.prod(shape))
        return np.stack(cells, axis=1), start, np.all(codes >= 0, axis=1)

    def score(self, synthesizer, synthetic, X, state):
        values = state["values"]
        cells, n_cells, listed = self._cells(synthesizer, values)
        v = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in synthesizer.noisy_tables_])
        k = int(synthesizer.n_train_)
        law, sd = _noise_law(synthesizer)
        given_subset = getattr(synthesizer, "train_size", None) == 1.0
        if state["exact"]:
            scores = self._exact(synthesizer, values, cells, listed, v, n_cells, k, law, sd, state["halves"],
                                 given_subset)
        else:
            scores = self._gaussian(cells, listed, v, n_cells, k, sd, state["cache"])
        if given_subset:
            scores = np.where(listed, scores, -CERTAIN)
            # ... and the only record of D holding a listed value is certainly a member.
            for j, cats in enumerate(synthesizer.categories_):
                held, counts = np.unique(values[:, j], return_counts=True)
                sole = held[counts == 1]
                scores = np.where(np.isin(values[:, j], np.intersect1d(sole, np.asarray(cats).astype(str))),
                                  CERTAIN, scores)
        return scores

    @staticmethod
    def _features(cells, n_cells):
        phi = np.zeros((cells.shape[0], n_cells))
        rows = np.repeat(np.arange(cells.shape[0]), cells.shape[1])
        flat = cells.ravel()
        ok = flat >= 0
        np.add.at(phi, (rows[ok], flat[ok]), 1.0)
        return phi

    def _exact(self, synthesizer, values, cells, listed, v, n_cells, k, law, sd, halves, given_subset):
        phi = self._features(cells, n_cells)
        means = halves @ phi / k                       # f(S) for every half S
        log_p = _log_noise(v[None, :] - means, law, sd)
        if given_subset:
            # categories_ lists exactly the training set's values: a half holding an unlisted
            # value is impossible, and so is one that misses a listed value.
            possible = ~halves[:, ~listed].any(axis=1)
            for j, cats in enumerate(synthesizer.categories_):
                for c in np.asarray(cats).astype(str):
                    possible &= halves[:, values[:, j] == c].any(axis=1)
            log_p = np.where(possible, log_p, -np.inf)
        member = halves.T                              # (n, H)
        with np.errstate(divide="ignore"):
            log_in = logsumexp(np.where(member, log_p[None, :], -np.inf), axis=1)
            log_out = logsumexp(np.where(~member, log_p[None, :], -np.inf), axis=1)
        scores = log_in - log_out
        scores = np.where(np.isnan(scores), 0.0, scores)
        return np.clip(scores, -CERTAIN, CERTAIN)

    @staticmethod
    def _gaussian(cells, listed, v, n_cells, k, sd, cache):
        n = cells.shape[0]
        key = (n_cells, cells.tobytes())
        if key not in cache:
            phi = MarginalLikelihoodAttack._features(cells, n_cells)
            mean = phi.mean(axis=0)
            U = phi - mean
            cov = U.T @ U / n
            lam, V = np.linalg.eigh(cov)
            cache.clear()  # one layout at a time: memory O(cells^2)
            cache[key] = (mean, np.maximum(lam, 0.0), V, U @ V)
        mean, lam, V, UV = cache[key]
        N = n - 1                                      # D without the target
        a = (N - k) / ((N - 1) * k) if N > 1 else 0.0  # Cov f(S) = a C (sampling without replacement)
        inv = 1.0 / (a * lam + max(sd, 1e-300) ** 2)
        r = (v - mean) @ V                             # v - mean of D, in the eigenbasis
        c1 = n / ((n - 1) * k)                         # delta = c1 u, u = phi(x*) - mean of D
        lin = UV @ (inv * r)                           # u' A (v - mean)
        quad = (UV**2) @ inv                           # u' A u
        # v - mu_out = (v - mean) + u / (n - 1)
        return c1 * lin + (c1 / (n - 1)) * quad - 0.5 * c1**2 * quad
