"""Synthetic data under membership-inference privacy: a privatised Gaussian generator.

Izzo et al., Section 5.2: privatise the parameters of a generative model with the MIP
wrapper; by post-processing (Theorem 3) every sample it generates keeps the guarantee.
:class:`MIPGaussianSynthesizer` is their construction -- a linear generator
``G(z) = W z + mean`` with ``z ~ N(0, I)`` -- built on :class:`skmip.MIPNoiseWrapper` and
:class:`skmip.release.statistic.Statistic`. Gaussian mixtures are released the same way with
``MIPNoiseWrapper(GaussianMixture(...))`` (its adapter orders the components canonically).
"""

from __future__ import annotations

import copy
import re
import warnings

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from skmip.utils.rng import resolve_rng
from skmip.utils.deprecation import RenamedParametersMixin, is_unset, moved_names, renamed_parameter
from skmip.utils.validation import (
    check_eta,
    check_int,
    check_interval,
    check_magnitude,
    check_moment,
    check_n_jobs,
    check_option,
    input_errors,
)
from skmip.exceptions import (
    NO_PROMISE_MESSAGE,
    PrivacyWarning,
    check_privacy_seed,
    warn_no_promise_on_given_subset,
)
from skmip.params import nearest_psd as _project_psd, unpack_symmetric as _unpack_symmetric
from skmip.promise import MIPPromiseMixin
from skmip.release.statistic import Statistic

__all__ = ["MIPGaussianSynthesizer", "mean_and_covariance"]

_OWNER = "MIPGaussianSynthesizer"
_FITTED = (
    "mean_",
    "covariance_",
    "sqrt_covariance_",
    "method_",
    "noise_constant_",
    "noise_scale_",
    "coupling_eta_",
    "coupling_pairs_",
    "mip_bound_",
    "target_eta_",
    "n_train_",
    "n_features_in_",
    "feature_names_in_",
)


def mean_and_covariance(X: ArrayLike) -> np.ndarray:
    r"""The column means and the upper triangle of the covariance, as one vector.

    ``[mean (d entries), C[0, 0], C[0, 1], ..., C[0, d-1], C[1, 1], ..., C[d-1, d-1]]`` with
    :math:`C = \frac1n\sum_i (x_i - \bar x)(x_i - \bar x)^\top`, the centred second-moment
    matrix (maximum-likelihood normalisation, like :func:`skmip.release.statistic.second_moment`).
    This is the statistic :class:`MIPGaussianSynthesizer` privatises when ``center=True``:
    both parts in one vector, so one noise draw under one eta covers them jointly.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_features + n_features * (n_features + 1) / 2,)

    Examples
    --------
    >>> mean_and_covariance([[0.0, 1.0], [2.0, 3.0]])
    array([1., 2., 1., 1., 1.])
    """
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(axis=0)
    centred = X - mean
    cov = centred.T @ centred / X.shape[0]
    return np.concatenate([mean, cov[np.triu_indices(X.shape[1])]])


#: Up to this many distinct rows the coupling sum over e is stored pair by pair (memory
#: O(rows^2)); above, the closed-form Jensen bound per record (memory O(rows * features)).
_EXACT_ROWS = 2048


def _moment_features(X, center):
    """phi(x) per row: (x, upper(x x^T)) with center, upper(x x^T) without; means over rows
    are :func:`skmip.release.statistic.mean_and_second_moment` / the packed second moment."""
    rows, cols = np.triu_indices(X.shape[1])
    second = X[:, rows] * X[:, cols]
    return np.concatenate([X, second], axis=1) if center else second


def _psd_sqrt(matrix):
    """Symmetric square root ``V diag(sqrt(lambda)) V^T`` of a symmetric PSD matrix."""
    eigval, eigvec = np.linalg.eigh(matrix)
    root = (eigvec * np.sqrt(np.maximum(eigval, 0.0))) @ eigvec.T
    return 0.5 * (root + root.T)


class MIPGaussianSynthesizer(RenamedParametersMixin, MIPPromiseMixin, BaseEstimator):
    """Release a Gaussian generator of synthetic records with an eta-MIP guarantee.

    ``fit`` draws a random training subset ``D_train`` of the data, privatises its first and
    second moments -- by default with Gaussian noise calibrated by the coupling bound, whose
    expectation is computed exactly for these statistics (``method="coupling"``); or with
    :class:`~skmip.MIPNoiseWrapper` and the noise of Corollary 10 (``method="moments"``,
    Izzo et al.'s construction) -- projects the covariance to the positive semidefinite cone
    and takes its square root ``W``. ``sample`` then draws ``mean_ + W z`` with ``z ~ N(0, I)``.
    Everything after the noise is post-processing, so the released parameters and every
    sample drawn from them are eta-MIP (Theorem 3): an attacker holding any record of the
    data cannot tell whether it was in ``D_train`` with accuracy above
    ``max(k/n, 1-k/n) + eta`` (Definition 1; ``1/2 + eta`` when ``k = n/2``).

    Parameters
    ----------
    eta : float, default=0.1
        Promised bound on the attacker's accuracy advantage over the prior
        ``max(k/n, 1-k/n)`` (Definition 1), in (0, 0.5].
    method : {"auto", "coupling", "moments"}, default="auto"
        ``"coupling"``: Gaussian noise ``s L z`` on the released moments, with ``L`` the
        Cholesky factor of the Ledoit-Wolf covariance of the per-row features over the
        whole of ``D`` and ``s`` the smallest scale whose coupling bound meets eta, the
        bound computed exactly (:func:`skmip.calibration.swap.statistic_swap_deltas`; no
        confidence term). ``"moments"``: Corollary 10 through
        :class:`~skmip.MIPNoiseWrapper` (Izzo et al.'s Section 5.2, kept for their
        Figure 2). ``"auto"`` means ``"coupling"``.
    moment : float, default=2
        ``method="moments"``: order M >= 2 of the central moment measuring the statistic's
        spread (Corollary 10); the noise constant is ``(6.16/eta)**(1 + 2/M)``.
    n_subsets : int, default=128
        ``method="moments"``: number of random subsets B over which the spread is
        estimated (>= 2).
    radius : {"gamma", "laplace"}, default="gamma"
        ``method="moments"``: law of the noise radius; see :class:`~skmip.MIPNoiseWrapper`.
        ``"laplace"`` is Corollary 10 as printed and emits a
        :class:`~skmip.exceptions.PrivacyWarning`.
    center : bool, default=True
        ``True``: release the mean and the covariance. ``method="coupling"`` noises the mean
        and the uncentred second moment (:func:`skmip.release.statistic.mean_and_second_moment`,
        both means of per-row features) and forms the covariance ``A - mean mean^T``
        afterwards (post-processing); ``method="moments"`` noises the mean and the centred
        covariance (:func:`mean_and_covariance`). ``False``: Izzo et al.'s experiment
        exactly -- the data are assumed to have mean zero, only the uncentred second moment
        ``A = (1/n) sum_i x_i x_i^T`` is released, and ``mean_`` is zero.
    train_size : float, default=0.5
        Fraction of the rows drawn at random into ``D_train``; ``1.0`` means the data
        passed to ``fit`` already is a random training subset (as in the membership game).
        The noise shape (Ledoit-Wolf covariance of the features) and scale are then
        computed from ``D_train`` itself, which Definition 1 does not cover, so this mode
        **promises nothing**: ``mip_bound_`` is ``None`` and ``fit`` emits a
        :class:`~skmip.exceptions.PrivacyWarning` (``target_eta_`` keeps the eta the noise
        was calibrated to, for audits).
    sigma_from : {"dataset", "train"}, default="dataset"
        ``method="moments"``: where the spread is measured; see
        :class:`~skmip.MIPNoiseWrapper`. ``"train"`` is Algorithm 1 as printed.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of every random draw of ``fit`` (subsets, noise). ``None`` draws fresh OS
        entropy, the only setting under which the noise is secret; a fixed value emits a
        :class:`~skmip.exceptions.PrivacyWarning`. :meth:`sample` has its own.
    n_jobs : int, default=None
        Parallel split fits through joblib.
    n_splits : int or "deprecated", default="deprecated"
        Deprecated name of ``n_subsets`` (renamed in 0.2, removed in 0.3; when set, its value
        is used and ``fit`` emits a ``FutureWarning``).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        Released (noised) mean; zeros when ``center=False``.
    covariance_ : ndarray of shape (n_features, n_features)
        Released matrix ``A``: the noised covariance (``center=True``) or uncentred second
        moment (``center=False``), symmetric and projected to the PSD cone. It is the
        covariance of the synthetic distribution.
    sqrt_covariance_ : ndarray of shape (n_features, n_features)
        ``W = covariance_ ** (1/2)`` (symmetric square root), the generator's weights.
    method_ : str
        The calibration used, ``"coupling"`` or ``"moments"``.
    noise_constant_ : float or None
        ``method_ == "moments"``: ``c = (6.16/eta)**(1 + 2/M)`` (Corollary 10).
    noise_scale_ : float or None
        ``method_ == "coupling"``: the scale ``s`` of the noise ``s L z``.
    coupling_eta_ : float or None
        ``method_ == "coupling"``: the coupling bound on the MIP level at ``noise_scale_``
        (equal to eta up to root-finding precision). It is the bound itself, not an
        estimate: the expectation over the coupling is computed exactly, so no confidence
        level enters.
    coupling_pairs_ : str or None
        ``method_ == "coupling"``: ``"exhaustive"`` (the exact finite sum over every swap
        partner ``e``) or ``"jensen"`` (for more than 2,048 distinct rows: one closed-form
        value per record that bounds that sum from above, by concavity). Both are exact
        statements; neither is estimated from random draws.
    mip_bound_ : float or None
        The promised eta: membership accuracy at most ``max(k/n, 1-k/n) + mip_bound_``
        (:func:`skmip.bounds.mip_promise`). ``None`` with ``train_size=1.0``: no promise.
    target_eta_ : float
        The eta the noise was calibrated to (``mip_bound_`` when there is a promise).
    n_train_ : int
        Number of rows in ``D_train``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features,)
        Column names of ``X``, when it has string column names.

    Notes
    -----
    **Coupling calibration** (``docs/coupling.md``, "Statistics in closed form"). The
    released vector is the mean over ``D_train`` of a per-row feature map
    ``phi(x) = (x, upper(x x^T))``; swapping a record ``e`` for ``x*`` moves it by exactly
    ``(phi(x*) - phi(e)) / k``, and in the coupling ``e`` is uniform on the other rows of
    ``D``. The coupling expectation is therefore a finite sum, computed exactly, and ``s``
    solves it equal to eta for the most exposed record of ``D``. The noise shape ``L`` (the
    Ledoit-Wolf shrunk covariance of ``phi`` over ``D``, so that noise goes where the data
    vary) is a function of ``D`` only, never of ``D_train``, as the bound requires; like
    Definition 1 itself, the guarantee is conditional on ``D``.

    Izzo et al., Section 5.2, learn ``A`` close to the second moment of zero-mean data and
    set ``W = (A + A^T)^(1/2)``. Printed this way ``W`` has ``W W^T = A + A^T``, twice the
    covariance; the intended (and here implemented) symmetrisation is ``(A + A^T)/2``, after
    which ``W = A^(1/2)`` reproduces ``N(0, A)``. skmip noises each free entry of the
    symmetric matrix once (``d(d+1)/2`` coordinates rather than the paper's ``d^2``; the
    noise radius of Theorem 9 grows with the number of coordinates), so ``A`` is symmetric
    by construction. The paper's ``d^2``-entry release remains available as
    ``MIPNoiseWrapper(Statistic("second_moment", structure="vector"))``.

    The PSD projection (clip negative eigenvalues at zero, the nearest PSD matrix in
    Frobenius norm) is post-processing (Theorem 3); it also never increases the Frobenius
    distance to the true covariance, which lies in the cone.

    The released attributes hold only noised, post-processed values: no copy of the data,
    no split indices, and not the spread ``sigma`` of the statistic (a function of the
    private data that the guarantee does not cover).

    The noise of Corollary 10 is calibrated to the spread of the statistic over random
    subsets, estimated from the data (as Algorithm 1 does); the guarantee holds to the
    extent that estimate bounds the true moment. The noise grows with the number of
    released coordinates, ``d + d(d+1)/2``: for more than a handful of features the
    synthetic data are dominated by noise (see the docs page "Releasing synthetic data").

    References
    ----------
    Izzo et al., "Provable Membership Inference Privacy": Theorem 3 (post-processing),
    Theorem 9, Corollary 10, Algorithm 1, Section 5.2.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([1.0, -1.0], [[1.0, 0.5], [0.5, 1.0]], size=20_000)
    >>> synth = MIPGaussianSynthesizer(eta=0.5, moment=6, n_subsets=32).fit(X)
    >>> synth.sample(5, random_state=0).shape
    (5, 2)
    >>> synth.mip_bound_
    0.5
    """

    _renamed_parameters = {"n_splits": "n_subsets"}  # pickles of skmip 0.1

    def __init__(
        self,
        *,
        eta: float = 0.1,
        method: str = "auto",
        moment: float = 2,
        n_subsets: int = 128,
        radius: str = "gamma",
        center: bool = True,
        train_size: float = 0.5,
        sigma_from: str = "dataset",
        random_state=None,
        n_jobs: int | None = None,
        n_splits="deprecated",
    ):
        self.eta = eta
        self.method = method
        self.moment = moment
        self.n_subsets = n_subsets
        self.radius = radius
        self.center = center
        self.train_size = train_size
        self.sigma_from = sigma_from
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.n_splits = n_splits

    def _n_subsets(self, warn=False):
        """``n_subsets``, or the deprecated ``n_splits`` when that is set."""
        return renamed_parameter(_OWNER, "n_splits", self.n_splits, "n_subsets", self.n_subsets, 128,
                                 warn=warn, stacklevel=5)

    def _validate_hyperparameters(self):
        check_eta(_OWNER, self.eta)
        check_option(_OWNER, "method", self.method, ("auto", "coupling", "moments"))
        check_moment(_OWNER, self.moment)
        check_int(
            _OWNER, "n_subsets" if is_unset(self.n_splits) else "n_splits", self._n_subsets(), 2, None,
            why="the spread is measured over random subsets and needs at least 2 of them; "
            "the paper uses 128.",
        )
        check_option(_OWNER, "radius", self.radius, ("gamma", "laplace"))
        if not isinstance(self.center, (bool, np.bool_)):
            raise TypeError(f"{_OWNER}: center must be True or False; got {self.center!r}.")
        check_interval(
            _OWNER, "train_size", self.train_size, 0, 1, closed="right",
            why="it is the fraction of rows drawn into D_train; use 1.0 if your data "
            "already is the random training subset.",
        )
        check_option(_OWNER, "sigma_from", self.sigma_from, ("dataset", "train"))
        check_n_jobs(_OWNER, self.n_jobs)

    def fit(self, X: ArrayLike, y=None) -> "MIPGaussianSynthesizer":
        """Privatise the mean and covariance of a random subset of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The dataset D (numeric, finite). With ``train_size < 1`` a random ``D_train`` is
            drawn from it.
        y : ignored
            Present for scikit-learn compatibility. To synthesise labelled records, append
            the label (e.g. one-hot) to ``X`` as columns.

        Returns
        -------
        self : MIPGaussianSynthesizer

        Raises
        ------
        ValueError
            For an invalid hyper-parameter, NaN/inf in ``X`` or too few rows.
        TypeError
            For a non-boolean ``center`` or a non-numeric ``X``.
        """
        self._validate_hyperparameters()
        # Validate on a copy: nothing may be recorded on self before the whole fit succeeded.
        probe = copy.copy(self)
        with input_errors(_OWNER):
            X = validate_data(probe, X, dtype=np.float64, ensure_all_finite=True)
        # The second moments are products of two values: data of magnitude 1e300 is finite,
        # its statistic is not.
        check_magnitude(_OWNER, X)
        check_privacy_seed(_OWNER, self.random_state)
        if self.train_size == 1.0:
            warn_no_promise_on_given_subset(
                _OWNER, "the noise shape (the features' covariance) and scale",
            )

        if self.method == "moments":
            mean, cov, noise_attrs = self._fit_moments(X)
        else:
            mean, cov, noise_attrs = self._fit_coupling(X)
        # Statistic("second_moment") is already projected by its adapter; projecting again
        # is the identity there and post-processing either way.
        cov = _project_psd(cov, 0.0)
        fitted = {
            "mean_": mean,
            "covariance_": cov,
            "sqrt_covariance_": _psd_sqrt(cov),
            **noise_attrs,
            "mip_bound_": None if self.train_size == 1.0 else float(self.eta),
            "target_eta_": float(self.eta),
            "n_features_in_": probe.n_features_in_,
        }
        if hasattr(probe, "feature_names_in_"):
            fitted["feature_names_in_"] = probe.feature_names_in_
        for name in _FITTED:
            if name in vars(self):
                delattr(self, name)
        self.__dict__.update(fitted)
        return self

    def _fit_moments(self, X):
        """Izzo et al.'s construction: MIPNoiseWrapper with Corollary 10's noise."""
        from skmip.calibration.routes import MomentsRoute
        from skmip.defend import MIPNoiseWrapper

        d = X.shape[1]
        statistic = (
            Statistic(mean_and_covariance, structure="vector")
            if self.center
            else Statistic("second_moment")
        )
        route = MomentsRoute(moment=self.moment, n_subsets=self._n_subsets(warn=True), radius=self.radius,
                             sigma_from=self.sigma_from)
        wrapper = MIPNoiseWrapper(
            statistic, eta=self.eta, method=route, train_size=self.train_size,
            random_state=self.random_state, n_jobs=self.n_jobs,
        )
        with warnings.catch_warnings():
            # The seed warning was just given under this class's name; any other
            # PrivacyWarning (e.g. the printed Laplace radius) still reaches the user.
            warnings.filterwarnings(
                "ignore", message=r".*fixes the privacy noise", category=PrivacyWarning
            )
            warnings.filterwarnings(
                "ignore", message=".*" + re.escape(NO_PROMISE_MESSAGE), category=PrivacyWarning
            )
            wrapper.fit(X)
        released = np.asarray(wrapper.estimator_.statistic_, dtype=np.float64)
        if self.center:
            mean = released[:d].copy()
            cov = _unpack_symmetric(released[d:], d)
        else:
            mean = np.zeros(d)
            cov = released
        attrs = {"method_": "moments", "noise_constant_": wrapper.noise_constant_, "noise_scale_": None,
                 "coupling_eta_": None, "coupling_pairs_": None, "n_train_": wrapper.n_train_}
        # The wrapper holds sigma_, a function of the private data: it must not outlive fit.
        del wrapper, released
        return mean, cov, attrs

    def _fit_coupling(self, X):
        """Gaussian noise on the mean of phi(x) over D_train, calibrated by the exact coupling bound."""
        from sklearn.covariance import ledoit_wolf

        from skmip.bounds import coupling_noise_scale
        from skmip.calibration.swap import statistic_swap_deltas

        n, d = X.shape
        rng = resolve_rng(self.random_state)
        features = _moment_features(X, self.center)
        if self.train_size == 1.0:
            # X already is D_train: halves of it stand in for the unknown D (as Algorithm 1
            # does for sigma, and MIPNoiseWrapper does with train_size=1.0).
            rows, k_calibration = np.arange(n), n // 2
        else:
            k_calibration = int(round(self.train_size * n))
            rows = np.sort(rng.choice(n, size=k_calibration, replace=False))
        if k_calibration < 2 or k_calibration >= n:
            raise ValueError(
                f"{_OWNER}: train_size={self.train_size} of n_samples={n} gives k={k_calibration} "
                "training rows for the coupling calibration; it needs at least 2 rows in D_train "
                "and 1 outside. Pass more rows."
            )
        # Noise shape: where phi varies over D (a function of D only; Ledoit-Wolf keeps it
        # invertible when phi has more coordinates than D has rows).
        shape = ledoit_wolf(features)[0]
        # A constant D has no spread at all (no swap moves anything); any positive shape works.
        spread = float(np.trace(shape)) / len(shape)
        shape[np.diag_indices_from(shape)] += 1e-12 * spread if spread > 0 else 1.0
        factor = np.linalg.cholesky(shape)
        deltas = statistic_swap_deltas(features, scale=factor, train_size=k_calibration,
                                       max_pairs=_EXACT_ROWS**2)
        cal = coupling_noise_scale(deltas.distances, self.eta, confidence=None, weights=deltas.weights,
                                   train_fraction=deltas.train_fraction)
        released = features[rows].mean(axis=0) + cal.noise_scale * factor @ rng.standard_normal(factor.shape[0])
        if self.center:
            mean = released[:d].copy()
            cov = _unpack_symmetric(released[d:], d) - np.outer(mean, mean)
        else:
            mean, cov = np.zeros(d), _unpack_symmetric(released, d)
        attrs = {"method_": "coupling", "noise_constant_": None, "noise_scale_": float(cal.noise_scale),
                 "coupling_eta_": float(cal.eta_point), "coupling_pairs_": deltas.pairs,
                 "n_train_": int(rows.size)}
        # Per-row sensitivities and the noise shape are functions of the private data.
        del features, factor, deltas, released
        return mean, cov, attrs

    def sample(self, n_samples: int = 1, random_state=None) -> np.ndarray:
        """Draw synthetic records ``mean_ + z W`` with ``z ~ N(0, I)``.

        Parameters
        ----------
        n_samples : int, default=1
            Number of records (>= 1).
        random_state : None, int, numpy Generator or RandomState, default=None
            Source of ``z``. Sampling is post-processing of the released parameters, so a
            fixed seed here does not weaken the guarantee.

        Returns
        -------
        ndarray of shape (n_samples, n_features)

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If called before :meth:`fit`.
        ValueError
            If ``n_samples < 1``.
        """
        check_is_fitted(self)
        n_samples = check_int(_OWNER, "n_samples", n_samples, 1, None)
        z = resolve_rng(random_state).standard_normal((n_samples, self.n_features_in_))
        # W is symmetric, so z W has covariance W^T W = covariance_.
        return self.mean_ + z @ self.sqrt_covariance_

    def score_samples(self, X: ArrayLike) -> np.ndarray:
        """Log density of each row under the released ``N(mean_, covariance_)``.

        The released covariance is projected to the PSD cone and may be singular; its
        eigenvalues are floored at ``1e-6`` times the largest so that the density is finite.
        Computed from released parameters only (post-processing), so it is what a membership
        attack on the release sees (``play_membership_game``'s default output for density
        estimators).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        with input_errors(_OWNER):
            X = validate_data(self, X, dtype=np.float64, reset=False)
        eigval, eigvec = np.linalg.eigh(self.covariance_)
        eigval = np.maximum(eigval, 1e-6 * max(eigval.max(), 1e-12))
        z = (X - self.mean_) @ eigvec / np.sqrt(eigval)
        return -0.5 * (np.sum(z**2, axis=1) + np.sum(np.log(eigval)) + X.shape[1] * np.log(2 * np.pi))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        # Fresh noise on every fit unless random_state is fixed.
        tags.non_deterministic = True
        return tags

    def __sklearn_is_fitted__(self):
        return hasattr(self, "covariance_")


# The distance attack and the copying control belong to the audit; their 0.1 home answers for them.
__getattr__ = moved_names("skmip.release.gaussian", {
    "closest_record_signal": "skmip.audit.attacks.synthetic",
    "CopyingSynthesizer": "skmip.audit.synth_audit",
})
