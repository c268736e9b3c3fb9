r"""Exact audit of the noisy-gradient route on tiny data: the release law, enumerated and integrated.

The route (:class:`~skmip.calibration.routes.NoisyGradientRoute`, through
:class:`~skmip.MIPNoiseWrapper`) trains a one-feature ``LogisticRegression(fit_intercept=False)``
by the steps of :mod:`skmip.calibration.noisy_gradient.engine`: from :math:`\theta_0 = 0` (the
route's default start, the null model of D's labels, is zero for an estimator without an
intercept), each row
of D_train joins the batch with probability :math:`q`, and

.. math::

    \theta_t = \theta_{t-1} - \lambda\Big(\frac{\sum_{i \in B_t}\mathrm{clip}_c(g_i(\theta_{t-1}))
    + \sigma c\,\xi_t}{qk} + \frac{\theta_{t-1}}{Ck}\Big),
    \qquad g_i(\theta) = (\mathrm{sigmoid}(\theta x_i) - t_i)\,x_i ,

the release is the last iterate (``average`` set so that one iterate is averaged). With two or
more features and the route's ``subspace`` reducing them to one direction, the engine runs the
same chain on :math:`x_i = z_i^\top v` (``z_i`` the row, ``v`` the top principal direction of D's
features, computed here from D independently of the engine) and releases the coefficients
:math:`v\,\theta_T`: a one-to-one map of :math:`\theta_T`, so every total variation and every
Bayes posterior is that of :math:`\theta_T`'s law; the audit checks that the release lies on
:math:`v` and refuses otherwise. Given D_train
the law of :math:`\theta_t` is a Markov chain on the line: :func:`release_density` enumerates the
:math:`2^k` batches of each step and integrates the Gaussian transition on a grid fine against the
noise (at least 12 points per standard deviation for the steps, 48 for the released law). From
the laws of every k-subset of D,
:func:`audit_noisy_gradient_route` computes exactly (to the quadrature) the total variation of the
worst replace-one pair, which :func:`skmip.bounds.dpsgd_eta` bounds by twice the printed eta, and
the Bayes-optimal attacker of Definition 1 for every record, whose advantage the printed eta bounds.
No Monte Carlo: the one error is the grid's, which the mass check measures (the returned
``mass_error``; above 1e-6 the audit refuses) and :data:`QUADRATURE_TOLERANCE` covers. The
penalty step ``lr / (C k)`` must be at most 2, where the chain contracts and the grid's box holds it.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
from scipy import special, stats

__all__ = ["QUADRATURE_TOLERANCE", "NoisyGradientChain", "release_density", "audit_noisy_gradient_route"]

#: Slack for the quadrature in the comparisons with the printed bound. The laws' mass is checked
#: to 1e-6. The Riemann sum of ``|f - g|`` errs most at the kink where the laws cross: at 12 points
#: per standard deviation it read 0.399901 for a one-step, full-batch pair whose exact TV (two
#: Gaussians) is at most 2 Phi(1/sigma) - 1 = 0.399855 (error 4.6e-5); at 48 points (the released
#: law's grid here) it reads 0.3998603, an error of 4.8e-6.
QUADRATURE_TOLERANCE = 1e-5

_POINTS_PER_SD = 12


class NoisyGradientChain:
    """The public settings of one run: what the release law depends on besides D_train.

    Parameters
    ----------
    sigma, clip, learning_rate, C : float
        Noise multiplier, clipping norm (row units), step size, ``LogisticRegression``'s ``C``.
    k : int
        Rows of D_train.
    sample_rate : float
        :math:`q`.
    n_steps : int
        :math:`T`.
    """

    def __init__(self, sigma, clip, learning_rate, C, k, sample_rate, n_steps):
        self.sigma, self.clip, self.lr, self.C = float(sigma), float(clip), float(learning_rate), float(C)
        self.k, self.q, self.T = int(k), float(sample_rate), int(n_steps)
        self.tau = self.lr * self.sigma * self.clip / (self.q * self.k)
        if not 0 < self.lr / (self.C * self.k) <= 2:
            raise ValueError("NoisyGradientChain: the penalty step lr / (C k) must lie in (0, 2] (a contraction).")
        # |theta_t| <= |1 - lr/(Ck)| |theta_{t-1}| + lr c k / (q k) + noise, the first factor <= 1:
        # the box holds all but about 1e-15 of the mass (8 standard deviations of the summed noise).
        half = self.T * self.lr * self.clip / self.q + 8 * self.tau * math.sqrt(self.T) + 1
        # The steps integrate smooth densities over theta (a coarse grid suffices); the last step's
        # law, whose |f - g| has kinks, is read on a grid four times finer.
        m = int(min(3001, max(801, 2 * half / (self.tau / _POINTS_PER_SD))))
        self.coarse = np.linspace(-half, half, m)
        self.grid = np.linspace(-half, half, 4 * (m - 1) + 1)
        self.h = self.grid[1] - self.grid[0]

    def _kernel(self, theta, x, t, grid):
        """Density on ``grid`` of one step from each ``theta`` (rows), the batches enumerated."""
        out = np.zeros((theta.size, grid.size))
        for mask in itertools.product([0, 1], repeat=len(x)):
            p = math.prod(self.q if m else 1 - self.q for m in mask)
            if p == 0:
                continue
            s = np.zeros_like(theta)
            for xi, ti, m in zip(x, t, mask):
                if m:
                    s += np.clip((special.expit(theta * xi) - ti) * xi, -self.clip, self.clip)
            mean = theta - self.lr * (s / (self.q * self.k) + theta / (self.C * self.k))
            out += p * stats.norm.pdf(grid[None, :], mean[:, None], self.tau)
        return out


def release_density(chain, x, t):
    """The density of the released coefficient on ``chain.grid`` for D_train's rows ``(x, t)``.

    Parameters
    ----------
    chain : NoisyGradientChain
    x : array of shape (k,)
        The feature of D_train's rows.
    t : array of shape (k,)
        Their labels as 0/1 (1 for the second class).

    Returns
    -------
    ndarray of shape (len(chain.grid),)
    """
    x, t = np.asarray(x, float), np.asarray(t, float)
    if chain.T == 1:
        return chain._kernel(np.zeros(1), x, t, chain.grid)[0]
    h = chain.coarse[1] - chain.coarse[0]
    density = chain._kernel(np.zeros(1), x, t, chain.coarse)[0]
    if chain.T > 2:
        step = chain._kernel(chain.coarse, x, t, chain.coarse) * h
        for _ in range(chain.T - 2):
            density = density @ step
    return density @ (chain._kernel(chain.coarse, x, t, chain.grid) * h)


def _direction_feature(X, release):
    """The feature the chain runs on: the one column, or the rows on D's top principal direction
    ``v`` (from the SVD of D's centred rows), after checking that the release lies on ``v``."""
    if X.shape[1] == 1:
        return X[:, 0]
    _, s, Vt = np.linalg.svd(X - X.mean(axis=0), full_matrices=False)
    if s.size > 1 and s[0] - s[1] <= 1e-6 * s[0]:
        raise ValueError("audit_noisy_gradient_route: D's top principal direction is not unique; the audit "
                         "cannot tell which line the release lies on.")
    v = Vt[0]
    coef = np.asarray(release.coef_, float).ravel()
    if np.linalg.norm(coef - (coef @ v) * v) > 1e-9 * (1.0 + np.linalg.norm(coef)):
        raise ValueError("audit_noisy_gradient_route: the release does not lie on D's top principal direction; "
                         "the one-dimensional chain does not describe it (pass subspace=1, or one feature).")
    return X @ v


def audit_noisy_gradient_route(wrapper, X, y):
    """Fit ``wrapper`` on ``(X, y)`` and audit its printed eta exactly.

    Parameters
    ----------
    wrapper : MIPNoiseWrapper
        Unfitted, ``method`` a :class:`~skmip.calibration.routes.NoisyGradientRoute` whose
        ``average`` makes the release the last iterate, estimator
        ``LogisticRegression(fit_intercept=False)``.
    X : array of shape (n, d)
        One feature, or ``d >= 2`` with the route trained in D's top principal direction
        (``subspace`` 1, or ``"auto"`` where its rule gives 1).
    y : array of shape (n,), two classes

    Returns
    -------
    dict
        ``bound`` (``mip_bound_``), ``k``, ``worst_pair_tv`` (largest TV over replace-one pairs of
        k-subsets), ``advantage`` and ``target`` (the largest exact Bayes advantage of Definition 1
        and its record), ``mass_error`` (the grid's largest lost mass), ``violation`` (either
        exceeds its bound, ``2 eta`` for the pair, ``eta`` for the attacker, by more than
        :data:`QUADRATURE_TOLERANCE`), and the run's ``sigma``, ``clip``, ``n_steps``.
    """
    if wrapper.estimator.fit_intercept and wrapper.method.start != "zero":
        raise ValueError("audit_noisy_gradient_route: the chain starts at zero; pass "
                         "LogisticRegression(fit_intercept=False) (its prior start is zero) or start='zero'.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the audit fixes seeds on purpose
        fitted = wrapper.fit(X, y)
    classes = fitted.classes_
    est = wrapper.estimator
    n, k = len(y), fitted.n_train_
    chain = NoisyGradientChain(fitted.noise_multiplier_, fitted.clip_norm_, wrapper.method.learning_rate, est.C,
                               k, fitted.sample_rate_, fitted.n_steps_)
    x, t = _direction_feature(np.asarray(X, float), fitted.estimator_), (np.asarray(y) == classes[1]).astype(float)
    subsets = list(itertools.combinations(range(n), k))
    laws = {s: release_density(chain, x[list(s)], t[list(s)]) for s in subsets}
    mass_error = max(abs(law.sum() * chain.h - 1.0) for law in laws.values())
    if mass_error > 1e-6:
        raise ValueError(f"audit_noisy_gradient_route: the grid lost {mass_error:.2g} of a law's mass; "
                         "the audit is not exact here.")
    worst_pair = max(0.5 * np.abs(laws[a] - laws[b]).sum() * chain.h
                     for a, b in itertools.combinations(subsets, 2) if len(set(a) & set(b)) == k - 1)
    prior = k / n
    advantages = []
    for target in range(n):
        f_in = np.mean([laws[s] for s in subsets if target in s], axis=0)
        f_out = np.mean([laws[s] for s in subsets if target not in s], axis=0)
        accuracy = np.maximum(prior * f_in, (1 - prior) * f_out).sum() * chain.h
        advantages.append(accuracy - max(prior, 1 - prior))
    bound = float(fitted.mip_bound_)
    i = int(np.argmax(advantages))
    return {
        "bound": bound, "k": k, "worst_pair_tv": float(worst_pair), "advantage": float(advantages[i]), "target": i,
        "mass_error": float(mass_error), "sigma": chain.sigma, "clip": chain.clip, "n_steps": chain.T,
        "violation": bool(worst_pair > 2 * bound + QUADRATURE_TOLERANCE or advantages[i] > bound + QUADRATURE_TOLERANCE),
    }
