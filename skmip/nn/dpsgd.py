"""DP-SGD and mu-GMIP noisy SGD for skorch nets, with Opacus.

:class:`DPNeuralNetClassifier` is a skorch ``NeuralNetClassifier`` (seeded, see
:mod:`skmip.nn.seeding`) whose training steps clip per-sample gradients and add Gaussian
noise (Abadi et al.; Opacus' ``DPOptimizer`` and per-sample gradient hooks). Three ways to
choose the noise:

``privacy="dp"``
    (epsilon, delta)-DP with **Poisson sampling** (Opacus' ``DPDataLoader``: every row
    joins every batch independently with probability ``q = batch_size / n``) and a
    rigorous RDP or PRV accountant; the noise multiplier is calibrated from ``epsilon``
    when not given.
``privacy="gdp"``
    mu-GDP under the CLT of Dong, Roth & Su (Leemann Eq. 10 with one step
    :math:`2/\\sigma`-GDP), fixed-size batches drawn uniformly at every step.
``privacy="gmip"``
    mu-GMIP (Leemann et al.): the smaller of the noise Eqs. 9-10 need and the GDP noise
    (GDP implies GMIP, Theorem 4.2); no noise at all above a threshold mu.

:class:`DPSGDLogisticRegression` is the same machinery on a linear module, as a
scikit-learn classifier.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y

from skmip._validation import check_interval, check_option
from skmip.bounds.gmip import (
    gdp_mu,
    gdp_noise_multiplier,
    gdp_to_dp,
    gmip_mu,
    gmip_noise_multiplier,
    mu_to_eta,
)
from skmip.bounds.mip import dp_to_mip
from skmip.exceptions import check_privacy_seed

from .modules import MLPModule
from .seeding import NeuralNetClassifier

__all__ = ["DPNeuralNetClassifier", "DPSGDLogisticRegression", "UniformBatchSampler"]


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
    generator : torch.Generator
        Source of randomness.
    """

    def __init__(self, n: int, batch_size: int, steps: int, generator: torch.Generator):
        self.n, self.batch_size, self.steps, self.generator = int(n), int(batch_size), int(steps), generator

    def __iter__(self):
        for _ in range(self.steps):
            yield torch.randperm(self.n, generator=self.generator)[: self.batch_size].tolist()

    def __len__(self):
        return self.steps


def _secure_generator():
    try:
        import torchcsprng as csprng
    except ImportError as exc:  # pragma: no cover - depends on an optional package
        raise ImportError(
            "secure_mode=True draws the noise and the batches from a cryptographically secure "
            "generator, which needs the torchcsprng package (as Opacus' PrivacyEngine does): "
            "pip install torchcsprng"
        ) from exc
    return csprng.create_random_device_generator("/dev/urandom")  # pragma: no cover


class DPNeuralNetClassifier(NeuralNetClassifier):
    """A skorch classifier trained with DP-SGD (Opacus), or noisy SGD calibrated to mu-GMIP.

    Parameters
    ----------
    module : torch.nn.Module class or instance
        As in skorch. Opacus must support its layers (no batch norm; use group norm).
    privacy : {"dp", "gdp", "gmip"}, default="dp"
        Which guarantee the noise is calibrated to (see the module docstring).
    epsilon : float, default=1.0
        Target epsilon for ``privacy="dp"`` when ``noise_multiplier`` is None.
    delta : float or None, default=None
        Target delta; ``None`` means ``1 / (10 n)`` for ``n`` training rows.
    mu : float or None, default=None
        Target mu for ``privacy="gdp"`` / ``"gmip"`` when ``noise_multiplier`` is None.
    max_grad_norm : float, default=1.0
        Per-sample clipping norm :math:`C`.
    noise_multiplier : float or None, default=None
        :math:`\\sigma`: noise std on the sum of clipped gradients over :math:`C`. Given,
        it is used as is and the fitted ``epsilon_`` / ``mu_`` report what it buys.
    accountant : {"rdp", "prv"}, default="rdp"
        Opacus accountant for ``privacy="dp"``.
    secure_mode : bool, default=False
        Opacus' secure mode: noise robust to floating-point attacks and a
        cryptographically secure generator (needs ``torchcsprng``); requires
        ``random_state=None``.
    gmip_K : float or None, default=None
        Gradient susceptibility bound for ``privacy="gmip"``; ``None`` means the number
        of trained parameters ``d`` (Leemann Remark 5.1, Fig. 2).
    random_state : None, int or numpy.random.RandomState, default=None
        Seeds initialisation, batch sampling and noise. A fixed value makes the noise
        reproducible, which voids the guarantee (a :class:`~skmip.exceptions.PrivacyWarning`
        says so); use it for tests only.
    batch_size : int, default=128
        Expected batch size (Poisson, ``"dp"``) or exact batch size (``"gdp"``/``"gmip"``).
    **kwargs
        Every other skorch argument (``lr``, ``max_epochs``, ``optimizer``, ...).
        ``train_split`` must stay None (a validation split would compute un-noised
        scores on private rows); ``iterator_train__*`` sampling options are replaced by
        the private sampler.

    Attributes
    ----------
    noise_multiplier_ : float
        The noise multiplier used.
    sample_rate_ : float
        ``batch_size / n``: the Poisson rate of the DP data loader, the rate the
        accountant was charged with (``"dp"``), or the batch fraction of Eq. 10.
    n_steps_ : int
        Noisy steps taken so far.
    steps_per_epoch_ : int
        Steps per epoch (``int(1 / sample_rate_)`` for Poisson, as Opacus).
    delta_ : float
        The delta used.
    epsilon_ : float
        ``"dp"``: spent epsilon from the accountant (rigorous). ``"gdp"``/``"gmip"``: the
        epsilon of the CLT mu-GDP at ``delta_`` (Dong et al. Cor. 2.13; asymptotic,
        ``inf`` without noise).
    mu_ : float or None
        ``"gdp"``: the mu-GDP; ``"gmip"``: the mu-GMIP (the smaller of Eqs. 9-10 and
        the GDP mu); ``None`` for ``"dp"``.
    mip_bound_ : float
        The implied membership advantage eta (Izzo et al.): ``dp_to_mip(epsilon_,
        delta_)`` for ``"dp"``, ``Phi(mu_/2) - 1/2`` otherwise.
    accountant_ : opacus accountant or None
        The accountant and its history (``"dp"``).

    Notes
    -----
    *Sampling.* ``privacy="dp"`` uses ``opacus.data_loader.DPDataLoader(dataset,
    sample_rate=batch_size / n)``; the accountant is charged with the loader's own
    ``sample_rate`` at every optimizer step (Opacus' step hook), so the rate accounted
    is the rate used. Each epoch has ``int(n / batch_size)`` steps; batches can be
    empty with probability :math:`(1-q)^n`, which Opacus handles.

    *Neighbouring.* Opacus' accountants are for add/remove-one neighbours. The GDP/GMIP
    calibrations use replace-one (the relation of f-MIP, Leemann Eq. 3), so one step is
    :math:`2/\\sigma`-GDP; see :func:`skmip.bounds.gdp_mu`.

    *Released state.* ``history_`` is emptied after training (per-epoch losses are
    computed on private rows without noise); the optimizer state is a function of the
    noised gradients only (post-processing).

    References
    ----------
    Abadi et al., "Deep Learning with Differential Privacy", CCS 2016 (DP-SGD).
    Leemann et al., Theorem 4.2, Corollary 5.1 (Eq. 9), Lemma 5.1 (Eq. 10), §6.2.
    Dong, Roth & Su, "Gaussian Differential Privacy", Corollary 5.4.
    Opacus 1.6: ``DPOptimizer``, ``DPDataLoader``, ``RDPAccountant``, ``PRVAccountant``.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skmip.nn import MLPModule
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> net = DPNeuralNetClassifier(MLPModule, module__n_features=30, epsilon=2.0,
    ...                             max_epochs=3, batch_size=64, lr=0.5, verbose=0)
    >>> net = net.fit(X, y)
    >>> bool(net.epsilon_ <= 2.0), net.sample_rate_ == 64 / len(X), net.n_steps_
    (True, True, 24)
    """

    def __init__(
        self,
        module,
        *args,
        privacy="dp",
        epsilon=1.0,
        delta=None,
        mu=None,
        max_grad_norm=1.0,
        noise_multiplier=None,
        accountant="rdp",
        secure_mode=False,
        gmip_K=None,
        random_state=None,
        **kwargs,
    ):
        super().__init__(module, *args, random_state=random_state, **kwargs)
        self.privacy = privacy
        self.epsilon = epsilon
        self.delta = delta
        self.mu = mu
        self.max_grad_norm = max_grad_norm
        self.noise_multiplier = noise_multiplier
        self.accountant = accountant
        self.secure_mode = secure_mode
        self.gmip_K = gmip_K

    # Training-time objects; names end in "_" so skorch does not take them for parameters.
    _dp_loader_ = None

    def initialize(self):
        """Initialise as skorch does and forget any earlier privacy accounting."""
        super().initialize()
        self.accountant_ = None
        self.n_steps_ = 0
        return self

    def _training_offset(self, resets):
        # history_ is emptied after each call, so count steps instead of epochs.
        if resets or not getattr(self, "initialized_", False):
            return 0
        return int(getattr(self, "n_steps_", 0))

    def _validate_privacy(self, n):
        owner = type(self).__name__
        check_option(owner, "privacy", self.privacy, ("dp", "gdp", "gmip"))
        check_option(owner, "accountant", self.accountant, ("rdp", "prv"))
        check_interval(owner, "max_grad_norm", self.max_grad_norm, 0, None, closed="neither")
        if self.noise_multiplier is not None:
            check_interval(owner, "noise_multiplier", self.noise_multiplier, 0, None, closed="left")
        elif self.privacy == "dp":
            check_interval(owner, "epsilon", self.epsilon, 0, None, closed="neither")
        elif self.mu is None:
            raise ValueError(
                f"{owner}: privacy={self.privacy!r} needs a target mu (or a noise_multiplier); got "
                "mu=None. Pass e.g. mu=1.0."
            )
        else:
            check_interval(owner, "mu", self.mu, 0, None, closed="neither")
        delta = 1.0 / (10 * n) if self.delta is None else self.delta
        check_interval(
            owner, "delta", delta, 0, 1, closed="neither",
            why="delta is the probability the epsilon guarantee fails; keep it below 1/n.",
        )
        if self.train_split is not None:
            raise ValueError(
                f"{owner}: train_split must be None; got {self.train_split!r}. A validation split "
                "scores held-out private rows without noise; evaluate on public data instead."
            )
        if self.secure_mode and self.random_state is not None:
            raise ValueError(
                f"{owner}: secure_mode=True draws from the OS's secure generator and cannot be "
                f"seeded; got random_state={self.random_state!r}. Pass random_state=None."
            )
        if not isinstance(self.batch_size, numbers.Integral) or not 0 < self.batch_size <= n:
            raise ValueError(f"{owner}: batch_size must be an integer in [1, n={n}]; got {self.batch_size!r}.")
        return delta

    def _n_trained_parameters(self):
        return sum(p.numel() for p in self.module_.parameters() if p.requires_grad)

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        from opacus.accountants import create_accountant
        from opacus.accountants.utils import get_noise_multiplier
        from opacus.data_loader import DPDataLoader
        from opacus.grad_sample import GradSampleHooks
        from opacus.optimizers import DPOptimizer
        from opacus.validators import ModuleValidator

        epochs = self.max_epochs if epochs is None else epochs
        dataset, _ = self.get_split_datasets(X, y)
        n = len(dataset)
        delta = self._validate_privacy(n)
        check_privacy_seed(type(self).__name__, self.random_state)
        ModuleValidator.validate(self.module_, strict=True)

        if self.secure_mode:  # pragma: no cover - needs torchcsprng
            sample_gen = noise_gen = _secure_generator()
        else:
            sample_gen = self._data_generator_
            noise_seed = int(torch.randint(0, 2**62, (1,), generator=sample_gen))
            # Opacus draws the noise on the parameters' device with this generator, so it
            # must live there too (a CPU generator cannot feed CUDA draws).
            device = next(self.module_.parameters()).device
            noise_gen = torch.Generator(device=device).manual_seed(noise_seed)

        B = int(self.batch_size)
        q = B / n
        if self.privacy == "dp":
            loader = DPDataLoader(dataset, sample_rate=q, generator=sample_gen)
            steps_per_epoch = len(loader)
            expected_batch_size = B
        else:
            steps_per_epoch = max(1, n // B)
            loader = torch.utils.data.DataLoader(
                dataset, batch_sampler=UniformBatchSampler(n, B, steps_per_epoch, sample_gen),
                generator=sample_gen,
            )
            expected_batch_size = B
        n_steps = epochs * steps_per_epoch

        first_call = self.accountant_ is None and self.n_steps_ == 0
        if first_call:
            self.delta_ = delta
            self.sample_rate_ = q
            self.steps_per_epoch_ = steps_per_epoch
            self.noise_multiplier_ = self._calibrate(n, B, q, n_steps, delta, get_noise_multiplier)
            self.accountant_ = create_accountant(self.accountant) if self.privacy == "dp" else None
        elif q != self.sample_rate_:
            raise ValueError(
                f"{type(self).__name__}: partial_fit on {n} rows changes the sampling rate from "
                f"{self.sample_rate_} to {q}; the accounting assumes one dataset. Call fit instead."
            )

        hooks = GradSampleHooks(self.module_, batch_first=True, loss_reduction="mean")
        if self.privacy == "dp":
            hooks.forbid_grad_accumulation()
        original = self.optimizer_
        dp_optimizer = DPOptimizer(
            original, noise_multiplier=self.noise_multiplier_, max_grad_norm=float(self.max_grad_norm),
            expected_batch_size=expected_batch_size, loss_reduction="mean", generator=noise_gen,
            secure_mode=bool(self.secure_mode),
        )
        # Opacus keeps one step hook: count steps and charge the accountant with the rate
        # of the loader actually used, at every noisy step.
        charge = (
            self.accountant_.get_optimizer_hook_fn(sample_rate=loader.sample_rate)
            if self.accountant_ is not None
            else None
        )

        def on_step(optimizer):
            self.n_steps_ += 1
            if charge is not None:
                charge(optimizer)

        dp_optimizer.attach_step_hook(on_step)
        self.optimizer_, self._dp_loader_ = dp_optimizer, loader
        try:
            with warnings.catch_warnings():
                # Opacus' hooks on a first layer whose input needs no gradient trigger this
                # torch notice on every step; the per-sample gradients are unaffected.
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                super().fit_loop(X, y, epochs=epochs, **fit_params)
        finally:
            hooks.cleanup()
            self.optimizer_ = original
            del self._dp_loader_
        self._report(n, B)
        from skorch.history import History

        self.history_ = History()  # per-epoch losses on private rows are not private
        return self

    def _calibrate(self, n, B, q, n_steps, delta, get_noise_multiplier):
        if self.noise_multiplier is not None:
            return float(self.noise_multiplier)
        if self.privacy == "dp":
            with warnings.catch_warnings():
                # Opacus' bisection visits huge noise levels whose optimal RDP order lies
                # beyond its default grid; the returned level is checked by the accountant.
                warnings.filterwarnings("ignore", message="Optimal order is the")
                return float(
                    get_noise_multiplier(
                        target_epsilon=float(self.epsilon), target_delta=delta, sample_rate=q,
                        steps=n_steps, accountant=self.accountant,
                    )
                )
        if self.privacy == "gdp":
            return gdp_noise_multiplier(float(self.mu), B, n, n_steps)
        return gmip_noise_multiplier(float(self.mu), B, n, n_steps, d=self._n_trained_parameters(), K=self.gmip_K)

    def _report(self, n, B):
        sigma = self.noise_multiplier_
        if self.privacy == "dp":
            with warnings.catch_warnings():
                # At the edges (no noise, huge noise) Opacus notes its order grid is too
                # narrow; the epsilon it returns is still a valid upper bound.
                warnings.filterwarnings("ignore", message="Optimal order is the")
                self.epsilon_ = float(self.accountant_.get_epsilon(delta=self.delta_)) if self.n_steps_ else 0.0
            self.mu_ = None
            self.mip_bound_ = float(dp_to_mip(self.epsilon_, self.delta_)) if np.isfinite(self.epsilon_) else 0.5
            return
        mu_dp = float(gdp_mu(sigma, B, n, self.n_steps_))
        if self.privacy == "gdp":
            self.mu_ = mu_dp
        else:
            mu_mip = float(gmip_mu(sigma, B, n, self.n_steps_, d=self._n_trained_parameters(), K=self.gmip_K))
            self.mu_ = min(mu_mip, mu_dp)  # GDP implies GMIP (Leemann Theorem 4.2)
        self.epsilon_ = gdp_to_dp(mu_dp, self.delta_) if np.isfinite(mu_dp) and mu_dp > 0 else (
            0.0 if mu_dp == 0 else float("inf")
        )
        self.mip_bound_ = float(mu_to_eta(self.mu_))

    def get_iterator(self, dataset, training=False):
        if training and self._dp_loader_ is not None:
            return self._dp_loader_
        return super().get_iterator(dataset, training=training)


class DPSGDLogisticRegression(ClassifierMixin, BaseEstimator):
    """Multinomial logistic regression trained with DP-SGD (Opacus) through skorch.

    Not to be confused with a torch-free, objective-perturbation DP logistic regression:
    this one privatises the training *steps* (clipping, Gaussian noise, Poisson
    sampling), like :class:`DPNeuralNetClassifier` on a linear module.

    Parameters
    ----------
    privacy : {"dp", "gdp", "gmip"}, default="dp"
        See :class:`DPNeuralNetClassifier`.
    epsilon : float, default=1.0
        Target epsilon (``privacy="dp"``).
    delta : float or None, default=None
        Target delta; ``None`` means ``1 / (10 n)``.
    mu : float or None, default=None
        Target mu (``privacy="gdp"``/``"gmip"``).
    max_grad_norm : float, default=1.0
        Per-sample clipping norm.
    noise_multiplier : float or None, default=None
        Fixed noise multiplier instead of a calibrated one.
    accountant : {"rdp", "prv"}, default="rdp"
        Opacus accountant.
    secure_mode : bool, default=False
        Opacus' secure mode (needs ``torchcsprng`` and ``random_state=None``).
    lr : float, default=0.5
        SGD learning rate.
    max_epochs : int, default=10
        Passes over the data (in expectation, under Poisson sampling).
    batch_size : int, default=64
        Expected batch size.
    device : str, default="cpu"
        Torch device.
    random_state : None, int or numpy.random.RandomState, default=None
        Seeds initialisation, sampling and noise (fixing it voids the guarantee).

    Attributes
    ----------
    net_ : DPNeuralNetClassifier
        The fitted net (its ``history_`` is empty).
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Weights; for two classes the difference of the two logits' weights, as in
        scikit-learn's binary ``LogisticRegression``.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts, likewise.
    n_features_in_ : int
        Number of features.
    epsilon_, delta_, mu_, noise_multiplier_, sample_rate_, n_steps_, mip_bound_
        Forwarded from ``net_`` (see :class:`DPNeuralNetClassifier`).

    Notes
    -----
    Input features should be scaled (the clipping norm bounds each row's gradient, whose
    size grows with the feature scale). See :class:`DPNeuralNetClassifier` for the
    sampling, accounting and neighbouring conventions.

    References
    ----------
    Abadi et al., CCS 2016; Leemann et al. §6.2; Opacus 1.6.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = DPSGDLogisticRegression(epsilon=1.0, max_epochs=5).fit(X, y)
    >>> clf.coef_.shape, bool(clf.epsilon_ <= 1.0), bool(clf.score(X, y) > 0.8)
    ((1, 30), True, True)
    """

    def __init__(
        self,
        *,
        privacy="dp",
        epsilon=1.0,
        delta=None,
        mu=None,
        max_grad_norm=1.0,
        noise_multiplier=None,
        accountant="rdp",
        secure_mode=False,
        lr=0.5,
        max_epochs=10,
        batch_size=64,
        device="cpu",
        random_state=None,
    ):
        self.privacy = privacy
        self.epsilon = epsilon
        self.delta = delta
        self.mu = mu
        self.max_grad_norm = max_grad_norm
        self.noise_multiplier = noise_multiplier
        self.accountant = accountant
        self.secure_mode = secure_mode
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.device = device
        self.random_state = random_state

    def fit(self, X, y, coef_init=None, intercept_init=None):
        """Fit with DP-SGD.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (scaled).
        y : array-like of shape (n_samples,)
            Labels.
        coef_init : array-like of shape (1, n_features) or (n_classes, n_features), default=None
            Starting weights, as in scikit-learn's ``SGDClassifier.fit`` (shape as ``coef_``).
            ``None`` (with ``intercept_init`` also ``None``) keeps torch's random
            initialisation; if only one of the two is given, the other starts at zero. The
            start must not depend on the private rows (it is not privatised).
        intercept_init : array-like of shape (1,) or (n_classes,), default=None
            Starting intercepts (shape as ``intercept_``).

        Returns
        -------
        self : DPSGDLogisticRegression

        Raises
        ------
        ValueError
            If fewer than two classes are present, or an initial value has the wrong shape.
        """
        X, y = check_X_y(X, y)
        encoder = LabelEncoder().fit(y)
        classes = encoder.classes_
        if len(classes) < 2:
            raise ValueError(f"{type(self).__name__}: needs at least 2 classes; got {classes.tolist()}.")
        module = self._initial_module(X.shape[1], len(classes), coef_init, intercept_init)
        self.classes_ = classes
        self.n_features_in_ = X.shape[1]
        shape = {} if isinstance(module, torch.nn.Module) else {
            "module__n_features": X.shape[1], "module__n_outputs": len(classes), "module__hidden": ()}
        self.net_ = DPNeuralNetClassifier(
            module, **shape, privacy=self.privacy, epsilon=self.epsilon, delta=self.delta,
            mu=self.mu, max_grad_norm=self.max_grad_norm, noise_multiplier=self.noise_multiplier,
            accountant=self.accountant, secure_mode=self.secure_mode, lr=self.lr,
            max_epochs=self.max_epochs, batch_size=min(self.batch_size, len(X)), device=self.device,
            random_state=self.random_state, verbose=0,
        )
        with warnings.catch_warnings():
            # The PrivacyWarning about a fixed seed is raised once, here, not by the inner net.
            warnings.simplefilter("ignore")
            self.net_.fit(X.astype(np.float32), encoder.transform(y).astype(np.int64))
        check_privacy_seed(type(self).__name__, self.random_state)
        for name in ("epsilon_", "delta_", "mu_", "noise_multiplier_", "sample_rate_", "n_steps_", "mip_bound_"):
            setattr(self, name, getattr(self.net_, name))
        W = self.net_.module_.output.weight.detach().cpu().double().numpy()
        b = self.net_.module_.output.bias.detach().cpu().double().numpy()
        if len(self.classes_) == 2:
            W, b = (W[1] - W[0])[None, :], np.array([b[1] - b[0]])
        self.coef_, self.intercept_ = W, b
        return self

    def _initial_module(self, d, n_classes, coef_init, intercept_init):
        """The module class with its arguments, or an instance starting at the given weights.

        For two classes the module still has two logits; ``coef_`` is their difference, so
        the start splits it evenly: ``W = [-coef / 2, coef / 2]`` (likewise the intercept).
        """
        if coef_init is None and intercept_init is None:
            return MLPModule  # skorch builds it from module__* below, seeded by random_state
        rows = 1 if n_classes == 2 else n_classes
        owner = type(self).__name__
        W = np.zeros((rows, d)) if coef_init is None else np.asarray(coef_init, dtype=float)
        b = np.zeros(rows) if intercept_init is None else np.asarray(intercept_init, dtype=float).ravel()
        if rows == 1 and W.shape == (d,):
            W = W[None, :]  # a binary problem's weights as a flat vector, as SGDClassifier takes them
        if W.shape != (rows, d):
            raise ValueError(f"{owner}.fit: coef_init must have shape {(rows, d)} (as coef_); got {W.shape}.")
        if b.shape != (rows,):
            raise ValueError(f"{owner}.fit: intercept_init must have shape {(rows,)} (as intercept_); got {b.shape}.")
        if n_classes == 2:
            W, b = np.vstack([-W / 2, W / 2]), np.r_[-b / 2, b / 2]
        # torch initialises the layer from its global generator; fork it so that building a
        # module whose every parameter is overwritten leaves the caller's torch RNG untouched.
        with torch.random.fork_rng(devices=[]):
            module = MLPModule(d, n_classes, hidden=())
        with torch.no_grad():  # every parameter is overwritten: no random draw survives
            module.output.weight.copy_(torch.as_tensor(W, dtype=module.output.weight.dtype))
            module.output.bias.copy_(torch.as_tensor(b, dtype=module.output.bias.dtype))
        return module

    def decision_function(self, X):
        """Logit (two classes) or per-class scores, ``X @ coef_.T + intercept_``."""
        check_is_fitted(self)
        X = check_array(X)
        scores = X @ self.coef_.T + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict_proba(self, X):
        """Class probabilities (softmax of the logits)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            scores = np.column_stack([np.zeros_like(scores), scores])
        scores = scores - scores.max(axis=1, keepdims=True)
        p = np.exp(scores)
        return p / p.sum(axis=1, keepdims=True)

    def predict(self, X):
        """Most probable class."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
