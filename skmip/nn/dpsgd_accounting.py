"""DP-SGD's privacy settings, the noise they call for, and the figures a fit reports.

The accountant's side of :class:`skmip.nn.DPNeuralNetClassifier` (:mod:`skmip.nn.dpsgd` holds
the skorch net and its noisy training loop): :func:`check_privacy_settings` checks the privacy
parameters before anything is trained, :func:`calibrate_noise_multiplier` turns the target
(``epsilon`` or ``mu``) into a noise multiplier, and :func:`report_privacy` sets the fitted
figures. Every printed bound comes from the rigorous accountant of
:mod:`skmip.bounds.accounting` (privacy loss distributions); the central-limit values of
Dong, Roth & Su and Leemann et al. steer the noise of ``"gdp"``/``"gmip"`` and are kept under
names that say so (``epsilon_clt_``, ``mu_``, ``mip_bound_clt_``).
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from skmip.bounds.accounting import dpsgd_epsilon, dpsgd_eta, dpsgd_noise_multiplier
from skmip.bounds.gmip import (
    gdp_mu,
    gdp_noise_multiplier,
    gdp_to_dp,
    gmip_mu,
    gmip_noise_multiplier,
    mu_to_eta,
)
from skmip.utils.deprecation import renamed_parameter
from skmip.utils.validation import check_interval, check_option

__all__ = ["calibrate_noise_multiplier", "check_privacy_settings", "gradient_susceptibility", "report_privacy"]


def check_privacy_settings(net, n):
    """Check a DP-SGD net's privacy parameters for ``n`` training rows, before any training.

    Parameters
    ----------
    net : DPNeuralNetClassifier
        The net whose ``privacy``, ``accountant``, ``max_grad_norm``, ``noise_multiplier``,
        ``epsilon``, ``mu``, ``delta``, ``train_split``, ``secure_mode``, ``random_state``
        and ``batch_size`` are checked.
    n : int
        Number of training rows.

    Returns
    -------
    delta : float
        The delta to use: ``net.delta``, or ``1 / (10 n)`` when it is None.
    K : float or None
        The gradient susceptibility bound of ``privacy="gmip"`` (:func:`gradient_susceptibility`).

    Raises
    ------
    ValueError, TypeError
        Naming the parameter, its value and the fix.
    """
    owner = net._owner()
    check_option(owner, "privacy", net.privacy, ("dp", "gdp", "gmip"))
    check_option(owner, "accountant", net.accountant, ("pld", "rdp", "prv"))
    check_interval(owner, "max_grad_norm", net.max_grad_norm, 0, None, closed="neither")
    if net.noise_multiplier is not None:
        check_interval(owner, "noise_multiplier", net.noise_multiplier, 0, None, closed="left")
    elif net.privacy == "dp":
        check_interval(owner, "epsilon", net.epsilon, 0, None, closed="neither")
    elif net.mu is None:
        raise ValueError(
            f"{owner}: privacy={net.privacy!r} needs a target mu (or a noise_multiplier); got "
            "mu=None. Pass e.g. mu=1.0."
        )
    else:
        check_interval(owner, "mu", net.mu, 0, None, closed="neither")
    delta = 1.0 / (10 * n) if net.delta is None else net.delta
    check_interval(
        owner, "delta", delta, 0, 1, closed="neither",
        why="delta is the probability the epsilon guarantee fails; keep it below 1/n.",
    )
    if net.train_split is not None:
        raise ValueError(
            f"{owner}: train_split must be None; got {net.train_split!r}. A validation split "
            "scores held-out private rows without noise; evaluate on public data instead."
        )
    if net.secure_mode and net.random_state is not None:
        raise ValueError(
            f"{owner}: secure_mode=True draws from the OS's secure generator and cannot be "
            f"seeded; got random_state={net.random_state!r}. Pass random_state=None."
        )
    if not isinstance(net.secure_mode, (bool, np.bool_)):
        raise TypeError(f"{owner}: secure_mode must be True or False; got {net.secure_mode!r}.")
    if not isinstance(net.batch_size, numbers.Integral) or isinstance(net.batch_size, bool) or net.batch_size < 1:
        raise ValueError(
            f"{owner}: batch_size must be an integer >= 1 (one larger than the n={n} rows is "
            f"clipped to n, as skorch does); got {net.batch_size!r}."
        )
    K = gradient_susceptibility(net)
    if K is not None:
        check_interval(owner, "gradient_susceptibility", K, 0, None, closed="left")
    return delta, K


def gradient_susceptibility(net):
    """The bound ``K`` on the gradient susceptibility that a ``privacy="gmip"`` net assumes.

    Leemann et al. Theorem 5.1: ``K >= ||Sigma^{-1/2} theta'||_2^2`` for every target's
    gradient ``theta'``; ``None`` means ``K = d`` (Remark 5.1). The value is the net's
    ``gradient_susceptibility``, or its deprecated alias ``gmip_K`` when that is set (with
    a ``FutureWarning``).

    Raises
    ------
    ValueError
        If both names are set.
    """
    return renamed_parameter(net._owner(), "gmip_K", net.gmip_K, "gradient_susceptibility",
                             net.gradient_susceptibility, None, stacklevel=4)


def calibrate_noise_multiplier(net, n, B, q, n_steps, delta, get_noise_multiplier, K=None):
    """The noise multiplier of a DP-SGD fit: the given one, or the one its target calls for.

    ``privacy="dp"``: the smallest noise whose ``epsilon`` at ``delta`` meets the target
    under add/remove-one neighbours and Poisson sampling at rate ``q`` for ``n_steps``
    steps (:func:`skmip.bounds.dpsgd_noise_multiplier`, or Opacus' accountants);
    ``"gdp"``: the CLT noise of Dong et al. Cor. 5.4 (Leemann Eq. 10,
    :func:`skmip.bounds.gdp_noise_multiplier`); ``"gmip"``: the smaller of the GMIP noise
    (Leemann Eqs. 9-10) and the GDP one (:func:`skmip.bounds.gmip_noise_multiplier`).

    Parameters
    ----------
    net : DPNeuralNetClassifier
        The net (its privacy parameters and module).
    n, B, q, n_steps : int, int, float, int
        Training rows, batch size, sampling rate ``B / n`` and noisy steps.
    delta : float
        The delta of the target.
    get_noise_multiplier : callable
        Opacus' ``get_noise_multiplier`` (for ``accountant="rdp"``/``"prv"``).
    K : float or None, default=None
        The gradient susceptibility bound of ``"gmip"``; None means ``d``.

    Returns
    -------
    float
    """
    if net.noise_multiplier is not None:
        return float(net.noise_multiplier)
    if net.privacy == "dp":
        if net.accountant == "pld":
            return dpsgd_noise_multiplier(float(net.epsilon), delta, q, n_steps, adjacency="add_remove")
        with warnings.catch_warnings():
            # Opacus' bisection visits huge noise levels whose optimal RDP order lies
            # beyond its default grid; the returned level is checked by the accountant.
            warnings.filterwarnings("ignore", message="Optimal order is the")
            return float(
                get_noise_multiplier(
                    target_epsilon=float(net.epsilon), target_delta=delta, sample_rate=q,
                    steps=n_steps, accountant=net.accountant,
                )
            )
    if net.privacy == "gdp":
        return gdp_noise_multiplier(float(net.mu), B, n, n_steps)
    return gmip_noise_multiplier(float(net.mu), B, n, n_steps, d=net._n_trained_parameters(), K=K)


def report_privacy(net, n, B, K=None):
    """Set a fitted DP-SGD net's figures: rigorous ones, and the central-limit ones named so.

    Sets ``epsilon_replace_one_`` and ``mip_bound_`` (rigorous, replace-one,
    :func:`skmip.bounds.dpsgd_epsilon` and :func:`skmip.bounds.dpsgd_eta`), ``epsilon_``
    (rigorous; add/remove-one for ``"dp"``), and ``mu_``, ``epsilon_clt_``,
    ``mip_bound_clt_`` (CLT approximations for ``"gdp"``/``"gmip"``, None for ``"dp"``).

    Parameters
    ----------
    net : DPNeuralNetClassifier
        The net after training (``noise_multiplier_``, ``sample_rate_``, ``n_steps_`` and
        ``delta_`` set).
    n, B : int
        Training rows and batch size.
    K : float or None, default=None
        The gradient susceptibility bound of ``"gmip"``; None means ``d``.
    """
    sigma, q, T = net.noise_multiplier_, net.sample_rate_, net.n_steps_
    sampling = "poisson" if net.privacy == "dp" else "fixed"
    net.epsilon_replace_one_ = dpsgd_epsilon(sigma, q, T, net.delta_, sampling=sampling, adjacency="replace_one")
    net.mip_bound_ = dpsgd_eta(sigma, q, T, sampling=sampling)
    if net.privacy == "dp":
        if net.accountant_ is None:
            net.epsilon_ = dpsgd_epsilon(sigma, q, T, net.delta_, adjacency="add_remove")
        else:
            with warnings.catch_warnings():
                # At the edges (no noise, huge noise) Opacus notes its order grid is too
                # narrow; the epsilon it returns is still a valid upper bound.
                warnings.filterwarnings("ignore", message="Optimal order is the")
                net.epsilon_ = float(net.accountant_.get_epsilon(delta=net.delta_)) if T else 0.0
        net.mu_ = net.epsilon_clt_ = net.mip_bound_clt_ = None
        return
    net.epsilon_ = net.epsilon_replace_one_
    mu_dp = float(gdp_mu(sigma, B, n, T))
    if net.privacy == "gdp":
        net.mu_ = mu_dp
    else:
        mu_mip = float(gmip_mu(sigma, B, n, T, d=net._n_trained_parameters(), K=K))
        net.mu_ = min(mu_mip, mu_dp)  # GDP implies GMIP (Leemann Theorem 4.2)
    net.epsilon_clt_ = gdp_to_dp(mu_dp, net.delta_) if np.isfinite(mu_dp) and mu_dp > 0 else (
        0.0 if mu_dp == 0 else float("inf")
    )
    net.mip_bound_clt_ = float(mu_to_eta(net.mu_))
