"""DP-SGD and mu-GMIP noisy SGD for skorch nets, with Opacus.

:class:`DPNeuralNetClassifier` is a skorch ``NeuralNetClassifier`` (seeded, see
:mod:`skmip.nn.seeded_nets`) whose training steps clip per-sample gradients and add Gaussian
noise (Abadi et al.; Opacus' ``DPOptimizer`` and per-sample gradient hooks). Three ways to
choose the noise:

``privacy="dp"``
    (epsilon, delta)-DP with **Poisson sampling** (every row joins every batch
    independently with probability ``q = batch_size / n``); the noise multiplier is
    calibrated from ``epsilon`` when not given.
``privacy="gdp"``
    noise calibrated to mu-GDP under the CLT of Dong, Roth & Su (Leemann Eq. 10 with one
    step :math:`2/\\sigma`-GDP), fixed-size batches drawn uniformly at every step.
``privacy="gmip"``
    noise calibrated to mu-GMIP (Leemann et al.): the smaller of the noise Eqs. 9-10 need
    and the GDP noise (GDP implies GMIP, Theorem 4.2); no noise at all above a threshold mu.

Whatever steered the noise, every printed figure comes from a rigorous accountant
(:mod:`skmip.bounds.accounting`, privacy loss distributions; the settings' checks, the
calibration and the reported figures are :mod:`skmip.nn.dpsgd_accounting`): ``epsilon_`` and
``mip_bound_`` are upper bounds for the mechanism as run. The central-limit values of the
``"gdp"``/``"gmip"`` calibrations are kept as ``epsilon_clt_``, ``mu_`` and
``mip_bound_clt_``: approximations, not guarantees.

Randomness: batches and noise are drawn with numpy from a generator holding 128 bits of
fresh OS entropy per fit (:func:`skmip.nn.fit_randomness.release_generator`), or with
``secure_mode=True`` from ``os.urandom`` with a floating-point-safe Gaussian sampler
(:class:`skmip.utils.os_random.OSRandomGenerator`); the noise is copied to the parameters'
device. Opacus' ``DPOptimizer`` clips, and its noise step is replaced by these draws.

:class:`DPSGDLogisticRegression` is the same machinery on a linear module, as a
scikit-learn classifier.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from skmip.exceptions import check_privacy_seed, warn_not_cryptographic
from skmip.promise import MIPPromiseMixin
from skmip.utils.os_random import OSRandomGenerator

from skmip.nn.dpsgd_accounting import calibrate_noise_multiplier, check_privacy_settings, report_privacy
from skmip.nn.modules import MLPModule
from skmip.nn.sampling import UniformBatchSampler, poisson_loader
from skmip.nn.seeded_nets import NeuralNetClassifier
from skmip.nn.fit_randomness import release_generator
from skmip.nn.validation import check_net_X, check_net_y

__all__ = ["DPNeuralNetClassifier", "DPSGDLogisticRegression", "UniformBatchSampler"]


def _release_noise_optimizer(original, rng, **kwargs):
    """Opacus' ``DPOptimizer`` whose noise is drawn from ``rng`` (numpy, full entropy or OS).

    Opacus draws the noise with a torch generator, whose seed is at most 64 bits; here every
    noise tensor is ``rng.standard_normal`` scaled by ``noise_multiplier * max_grad_norm``
    and copied to the gradient's device and dtype. Clipping, accumulation and scaling stay
    Opacus'.
    """
    from opacus.optimizers import DPOptimizer
    from opacus.optimizers.optimizer import _check_processed_flag, _mark_as_processed

    class ReleaseNoiseDPOptimizer(DPOptimizer):
        def add_noise(self):
            std = self.noise_multiplier * self.max_grad_norm
            for p in self.params:
                _check_processed_flag(p.summed_grad)
                ref = p.summed_grad
                if std == 0:
                    noise = torch.zeros_like(ref)
                else:
                    draw = rng.standard_normal(tuple(ref.shape)) * std
                    noise = torch.as_tensor(np.asarray(draw), dtype=ref.dtype).to(ref.device)
                p.grad = (ref + noise).view_as(p)
                _mark_as_processed(p.summed_grad)

    return ReleaseNoiseDPOptimizer(original, **kwargs)


class DPNeuralNetClassifier(MIPPromiseMixin, NeuralNetClassifier):
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
    accountant : {"pld", "rdp", "prv"}, default="pld"
        Accountant of ``epsilon_`` for ``privacy="dp"``: ``"pld"`` is
        :func:`skmip.bounds.dpsgd_epsilon` (dp_accounting's privacy loss distribution,
        pessimistic, the tightest); ``"rdp"`` and ``"prv"`` are Opacus' (upper bounds too,
        looser). The calibration from ``epsilon`` uses the same accountant.
    secure_mode : bool, default=False
        Draw the batches and the noise from ``os.urandom`` with a Gaussian sampler hardened
        against floating-point attacks (:class:`skmip.utils.os_random.OSRandomGenerator`; no
        torchcsprng needed). Requires ``random_state=None``. The default draws from numpy's
        PCG64 seeded with 128 bits of OS entropy per fit, which cannot be enumerated but is
        not a cryptographic generator; it warns once per process.
    gradient_susceptibility : float or None, default=None
        For ``privacy="gmip"``: the bound ``K`` of Leemann et al. Theorem 5.1 on every
        target's gradient susceptibility :math:`\\|\\Sigma^{-1/2}\\theta'\\|_2^2`, how
        atypical its gradient is for the gradient distribution; ``None`` means the number of
        trained parameters ``d`` (the typical target, Leemann Remark 5.1, Fig. 2).
    gmip_K : float or None, default="deprecated"
        The former name of ``gradient_susceptibility``: setting it warns (``FutureWarning``)
        and its value is used. It goes in 0.3.
    random_state : None, int or numpy.random.RandomState, default=None
        Seeds initialisation (through 32-bit learner seeds) and, through a separate
        full-entropy generator, batch sampling and noise. A fixed value makes the noise
        reproducible, which voids the guarantee (a :class:`~skmip.exceptions.PrivacyWarning`
        says so); use it for tests only.
    batch_size : int, default=128
        Expected batch size (Poisson, ``"dp"``) or exact batch size (``"gdp"``/``"gmip"``).
        One larger than the training rows is clipped to their number (as skorch does), and
        the accounting uses the clipped batch (``sample_rate_`` at most 1).
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
        Rigorous upper bound on the spent epsilon at ``delta_``. ``"dp"``: add/remove-one
        neighbours, Poisson sampling (the adjacency ``epsilon`` targets, and the one
        :class:`~skmip.defend.subsampled.SubsampledDPClassifier` needs). ``"gdp"``/``"gmip"``:
        replace-one neighbours, fixed-size batches (the only relation under which a fixed
        batch fraction is defined). ``inf`` without noise.
    epsilon_replace_one_ : float
        Rigorous epsilon at ``delta_`` under replace-one neighbours (the relation of Izzo et
        al.'s Theorem 4), from :func:`skmip.bounds.dpsgd_epsilon`.
    epsilon_clt_ : float or None
        ``"gdp"``/``"gmip"``: the epsilon of the CLT mu-GDP at ``delta_`` (Dong et al. Cor.
        2.13 of Cor. 5.4): an **approximation**, below the true value (4.53 where the
        rigorous accountant gives 6.64 at sigma 1, batch 10 of 1,000, 100 steps); ``None``
        for ``"dp"``.
    mu_ : float or None
        ``"gdp"``: the CLT mu-GDP; ``"gmip"``: the CLT mu-GMIP (the smaller of Eqs. 9-10 and
        the GDP mu); ``None`` for ``"dp"``. Asymptotic (central limit theorems), not a
        guarantee.
    mip_bound_ : float
        The membership advantage eta (Izzo et al. Definition 1), rigorous: half the total
        variation of the worst replace-one pair, :func:`skmip.bounds.dpsgd_eta`.
    mip_bound_clt_ : float or None
        ``Phi(mu_/2) - 1/2`` for ``"gdp"``/``"gmip"`` (an approximation); ``None`` for ``"dp"``.
    accountant_ : opacus accountant or None
        Opacus' accountant and its history (``accountant="rdp"``/``"prv"``, ``"dp"``).

    Notes
    -----
    *Sampling.* ``privacy="dp"`` draws Poisson batches at rate ``q = batch_size / n``
    (:class:`skmip.nn.sampling.PoissonBatchSampler`, collated as Opacus' ``DPDataLoader``);
    the accountant is charged ``q`` at every noisy step. Each epoch has
    ``int(n / batch_size)`` steps; batches can be empty with probability :math:`(1-q)^n`.

    *Neighbouring.* ``epsilon_`` of ``"dp"`` is for add/remove-one neighbours, as in Abadi
    et al. and Opacus. Membership inference privacy (Izzo et al. Definition 1, Theorem 4;
    Leemann Eq. 3) compares datasets of the same size: ``mip_bound_`` and
    ``epsilon_replace_one_`` are replace-one for every mode. Replacing one clipped gradient
    moves the sum by up to :math:`2C`, so one fixed-size step is :math:`2/\\sigma`-GDP
    (:func:`skmip.bounds.gdp_mu`) and, subsampled, the pair of
    :mod:`skmip.bounds.accounting`.

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
        accountant="pld",
        secure_mode=False,
        gradient_susceptibility=None,
        gmip_K="deprecated",
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
        self.gradient_susceptibility = gradient_susceptibility
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

    #: The class named in messages (DPSGDLogisticRegression sets its own name on its inner net).
    _owner_ = None

    def _owner(self):
        return self._owner_ or type(self).__name__

    def _n_trained_parameters(self):
        return sum(p.numel() for p in self.module_.parameters() if p.requires_grad)

    def _release_rng(self):
        """Where this call's batches and noise come from (never a torch generator)."""
        if self.secure_mode:
            return OSRandomGenerator()
        if self.random_state is None:
            warn_not_cryptographic(self._owner())
        return release_generator(self.random_state, offset=int(getattr(self, "n_steps_", 0) or 0))

    def _private_loader(self, dataset, rng):
        """``(B, q, steps_per_epoch, loader)``: the batches of one epoch, drawn from ``rng``."""
        n = len(dataset)
        # A batch larger than the data is clipped, as skorch does; the accounting reads the
        # clipped batch (q = B / n <= 1), the one the loader draws.
        B = min(int(self.batch_size), n)
        q = B / n
        # Poisson: int(1 / q) steps per epoch, as Opacus' DPDataLoader; fixed: n // B.
        steps_per_epoch = max(1, int(1 / q)) if self.privacy == "dp" else max(1, n // B)
        if self.privacy == "dp":
            return B, q, steps_per_epoch, poisson_loader(dataset, q, steps_per_epoch, rng)
        sampler = UniformBatchSampler(n, B, steps_per_epoch, rng)
        return B, q, steps_per_epoch, torch.utils.data.DataLoader(dataset, batch_sampler=sampler)

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        from opacus.accountants import create_accountant
        from opacus.accountants.utils import get_noise_multiplier
        from opacus.grad_sample import GradSampleHooks
        from opacus.validators import ModuleValidator

        epochs = self.max_epochs if epochs is None else epochs
        dataset, _ = self.get_split_datasets(X, y)
        n = len(dataset)
        delta, K = check_privacy_settings(self, n)
        check_privacy_seed(self._owner(), self.random_state)
        # score/predict leave the module in eval mode; Opacus' validator and per-sample
        # hooks need training mode (a partial_fit after a score).
        self.module_.train()
        ModuleValidator.validate(self.module_, strict=True)
        rng = self._release_rng()

        B, q, steps_per_epoch, loader = self._private_loader(dataset, rng)
        n_steps = epochs * steps_per_epoch

        first_call = self.accountant_ is None and self.n_steps_ == 0
        if first_call:
            self.delta_ = delta
            self.sample_rate_ = q
            self.steps_per_epoch_ = steps_per_epoch
            self.noise_multiplier_ = calibrate_noise_multiplier(
                self, n, B, q, n_steps, delta, get_noise_multiplier, K
            )
            opacus = self.privacy == "dp" and self.accountant != "pld"
            self.accountant_ = create_accountant(self.accountant) if opacus else None
        elif q != self.sample_rate_:
            raise ValueError(
                f"{self._owner()}: partial_fit on {n} rows changes the sampling rate from "
                f"{self.sample_rate_} to {q}; the accounting assumes one dataset. Call fit instead."
            )

        hooks = GradSampleHooks(self.module_, batch_first=True, loss_reduction="mean")
        if self.privacy == "dp":
            hooks.forbid_grad_accumulation()
        original = self.optimizer_
        dp_optimizer = _release_noise_optimizer(
            original, rng, noise_multiplier=self.noise_multiplier_, max_grad_norm=float(self.max_grad_norm),
            expected_batch_size=B, loss_reduction="mean",
        )
        # Opacus keeps one step hook: count steps and charge Opacus' accountant (if any)
        # with the rate actually used, at every noisy step.
        charge = self.accountant_.get_optimizer_hook_fn(sample_rate=q) if self.accountant_ is not None else None

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
        report_privacy(self, n, B, K)
        from skorch.history import History

        self.history_ = History()  # per-epoch losses on private rows are not private
        return self

    def get_iterator(self, dataset, training=False):
        if training and self._dp_loader_ is not None:
            return self._dp_loader_
        return super().get_iterator(dataset, training=training)


class DPSGDLogisticRegression(MIPPromiseMixin, ClassifierMixin, BaseEstimator):
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
    accountant : {"pld", "rdp", "prv"}, default="pld"
        Accountant of ``epsilon_`` (see :class:`DPNeuralNetClassifier`).
    secure_mode : bool, default=False
        Noise and batches from ``os.urandom`` with a floating-point-safe Gaussian sampler
        (needs ``random_state=None``); see :class:`DPNeuralNetClassifier`.
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
    epsilon_, epsilon_replace_one_, epsilon_clt_, delta_, mu_, noise_multiplier_, sample_rate_, n_steps_, mip_bound_, mip_bound_clt_
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
        accountant="pld",
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
        owner = type(self).__name__
        X = check_net_X(owner, X).astype(np.float64)
        labels, codes = check_net_y(owner, y, X.shape[0])
        if X.ndim != 2:
            raise ValueError(f"{owner}: X must be 2-D (n_samples, n_features); got shape {X.shape}.")
        module = self._initial_module(X.shape[1], len(labels), coef_init, intercept_init)
        shape = {} if isinstance(module, torch.nn.Module) else {
            "module__n_features": X.shape[1], "module__n_outputs": len(labels), "module__hidden": ()}
        net = DPNeuralNetClassifier(
            module, **shape, privacy=self.privacy, epsilon=self.epsilon, delta=self.delta,
            mu=self.mu, max_grad_norm=self.max_grad_norm, noise_multiplier=self.noise_multiplier,
            accountant=self.accountant, secure_mode=self.secure_mode, lr=self.lr,
            max_epochs=self.max_epochs, batch_size=min(self.batch_size, len(X)), device=self.device,
            random_state=self.random_state, verbose=0,
        )
        net._owner_ = owner  # its messages name the class the user called
        if self.random_state is None and not self.secure_mode:
            # Before the inner fit, whose own (silenced) call then finds it already shown.
            from skmip.exceptions import warn_not_cryptographic

            warn_not_cryptographic(owner)
        with warnings.catch_warnings():
            # The PrivacyWarning about a fixed seed is raised once, here, not by the inner net.
            warnings.simplefilter("ignore")
            net.fit(X.astype(np.float32), codes)
        check_privacy_seed(owner, self.random_state)
        W = net.module_.output.weight.detach().cpu().double().numpy()
        b = net.module_.output.bias.detach().cpu().double().numpy()
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
            raise ValueError(
                f"{owner}: training diverged (non-finite weights); the previous fit, if any, is kept. "
                "Scale the features and lower lr."
            )
        if len(labels) == 2:
            W, b = (W[1] - W[0])[None, :], np.array([b[1] - b[0]])
        # Only now, with everything computed, replace the fitted state (a failed fit keeps it).
        fitted = {"net_": net, "classes_": labels, "n_features_in_": X.shape[1], "coef_": W, "intercept_": b}
        for name in ("epsilon_", "epsilon_replace_one_", "epsilon_clt_", "delta_", "mu_", "noise_multiplier_",
                     "sample_rate_", "n_steps_", "mip_bound_", "mip_bound_clt_"):
            fitted[name] = getattr(net, name)
        self.__dict__.update(fitted)
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
        check_is_fitted(self, "coef_")
        X = check_net_X(type(self).__name__, X, n_features=self.n_features_in_).astype(np.float64)
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
        proba = self.predict_proba(X)  # raises NotFittedError before fit
        return self.classes_[np.argmax(proba, axis=1)]
