"""A seeding story for skorch: ``random_state`` without the caller's global torch RNG.

skorch has no ``random_state``: a module draws its initial weights, a ``DataLoader`` with
``shuffle=True`` its order and dropout its masks from torch's *global* generator. skmip
needs more. :class:`skmip.defend.MIPNoiseWrapper` measures the spread of the fitted
parameters over many half-split fits and calibrates noise to it (Izzo et al., Algorithm 1);
if each fit started from a different random initialisation, that spread would measure
the initialisation, not the data. So every split fit and the final fit must start from
the same initial weights and see their rows in an order fixed by the seed.

:class:`SeededNetMixin` gives a skorch net a ``random_state`` parameter:

- **module initialisation and dropout** draw from torch's global generator (torch offers
  no other way: ``nn.Linear.reset_parameters`` takes no generator). The mixin therefore
  runs ``fit``/``partial_fit`` inside ``torch.random.fork_rng`` seeded with a seed drawn
  from ``random_state``: the global state (CPU and every CUDA device) is saved on entry
  and restored on exit, so the caller's stream is exactly as it was. ``fork_rng`` is not
  thread-safe: do not fit two nets concurrently in *threads* of one process (joblib's
  default process-based backend is fine).
- **data order** comes from a local ``torch.Generator`` seeded with a second seed: when
  ``iterator_train__shuffle=True`` the mixin replaces skorch's ``RandomSampler`` by
  :class:`EpochPermutationSampler`, one ``torch.randperm`` per epoch from that generator.
  :func:`skmip.nn.fit_ensemble` reproduces the same permutations.

Seeds per call: an integer ``random_state`` gives the seeds ``SeedSequence([random_state,
k])`` where ``k`` is the number of epochs already trained (0 for ``fit``), so ``fit`` is
reproducible and successive ``partial_fit`` calls do not repeat one order; ``None`` gives
fresh OS entropy; a ``RandomState`` instance is drawn from (and advanced), as in
scikit-learn.
"""

from __future__ import annotations

import contextlib

import numpy as np
import skorch
import torch
from sklearn.base import clone

from skmip.params import get_adapter

# The seed primitives live one layer down (skmip.nn.fit_randomness) so that the batched
# trainer can use them without importing this module: seeded_nets -> ensemble ->
# fit_randomness, one way.
from skmip.nn.ensemble import ensemble_vectors
from skmip.nn.fit_randomness import EpochPermutationSampler, fit_seeds, seeded_torch
from skmip.nn.validation import check_net_X, check_net_y

__all__ = [
    "SeededNetMixin",
    "NeuralNetClassifier",
    "NeuralNetRegressor",
    "EpochPermutationSampler",
    "fit_seeds",
    "seeded_torch",
]


def _as_float32(X):
    # skorch hands float64 numpy arrays to the module as float64 tensors, which clash with
    # float32 weights; scikit-learn data is float64, so cast here once.
    if isinstance(X, np.ndarray) and X.dtype == np.float64:
        return X.astype(np.float32)
    return X


def _take(a, rows):
    return None if a is None else np.asarray(a)[np.asarray(rows)]


class SeededNetMixin:
    """Give a skorch net a ``random_state`` (see the module docstring for the mechanism).

    Mix in *before* the skorch class: ``class Net(SeededNetMixin, skorch.NeuralNet)``.
    The subclass's ``__init__`` must store ``random_state``. Also casts float64 numpy
    inputs to float32, so scikit-learn datasets work as they are.
    """

    # Training-time state lives in an attribute ending in "_": skorch treats every other
    # instance attribute as a constructor parameter (clone would pass it back).
    _data_generator_ = None
    _loader_generator_ = None

    def _training_offset(self, resets):
        if resets or not getattr(self, "initialized_", False):
            return 0
        return len(self.history_) if getattr(self, "history_", None) is not None else 0

    @contextlib.contextmanager
    def _seed_scope(self, resets):
        if self._data_generator_ is not None:  # fit -> partial_fit: one scope per public call
            yield
            return
        init_seed, data_seed, loader_seed = fit_seeds(self.random_state, self._training_offset(resets))
        self._data_generator_ = torch.Generator().manual_seed(data_seed)
        self._loader_generator_ = torch.Generator().manual_seed(loader_seed)
        try:
            with seeded_torch(init_seed):
                yield
        finally:
            del self._data_generator_, self._loader_generator_

    def _prepare_y(self, y, n_rows, continuing, partial=False):
        """Targets as the module needs them (classifiers encode labels); the identity here."""
        return y, None

    def _validated(self, X, y, continuing, partial=False):
        """Check ``X`` and ``y`` before any state changes (a failed fit keeps the old net)."""
        owner = type(self).__name__
        width = getattr(self, "n_features_in_", None) if continuing else None
        X = check_net_X(owner, X, n_features=width, estimator=self)
        n_rows = X.shape[0] if isinstance(X, (np.ndarray, torch.Tensor)) else None
        y, labels = (y, None) if y is None else self._prepare_y(y, n_rows, continuing, partial)
        return X, y, labels

    def _record_fitted_input(self, X, labels, reset):
        if isinstance(X, (np.ndarray, torch.Tensor)) and X.ndim > 1:
            self.n_features_in_ = int(X.shape[1])
        if labels is not None:
            self.labels_ = labels
        elif reset:
            self.__dict__.pop("labels_", None)

    def fit(self, X, y=None, **fit_params):
        """Initialise (unless ``warm_start``) and train, seeded by ``random_state``."""
        resets = not self.warm_start or not getattr(self, "initialized_", False)
        X, y, labels = self._validated(X, y, continuing=not resets)
        with self._seed_scope(resets):
            super().fit(X, y, **fit_params)
        self._record_fitted_input(X, labels, reset=resets)
        return self

    def partial_fit(self, X, y=None, classes=None, **fit_params):
        """Continue training, seeded by ``random_state`` and the epochs already run."""
        X, y, labels = self._validated(X, y, continuing=getattr(self, "initialized_", False), partial=True)
        with self._seed_scope(False):
            super().partial_fit(X, y, classes=classes, **fit_params)
        self._record_fitted_input(X, labels, reset=False)
        return self

    def fit_subsets(self, X, y, subsets, *, adapter=None):
        """Parameter vectors of clones of this net fitted on each row subset.

        The hook for many fits of one net (the split fits of
        :func:`skmip.calibration.spread.moments.estimate_sigma`, a shadow-model pool): one batched
        :func:`skmip.nn.fit_ensemble` run when the net is supported, else a loop of
        ``clone(self).fit(X[rows], y[rows])``. Either way row ``i`` equals the sequential
        fit on ``subsets[i]`` (to float32 round-off).

        Parameters
        ----------
        X, y : ndarray
            All rows.
        subsets : sequence of index arrays
            Rows of each fit.
        adapter : ParamAdapter or None, default=None
            Which parameters (``None``: the registry's adapter for this net).

        Returns
        -------
        ndarray of shape (len(subsets), d)
        """
        try:
            return ensemble_vectors(self, X, y, subsets, adapter=adapter)
        except ValueError:
            pass  # a feature the batched trainer does not reproduce: fit one by one
        adapter = get_adapter(self) if adapter is None else adapter
        out = []
        for rows in subsets:
            fitted = clone(self).fit(_take(X, rows), _take(y, rows))
            adapter.canonicalize(fitted)
            out.append(adapter.get_vector(fitted))
        return np.stack(out)

    def get_dataset(self, X, y=None):
        if self._data_generator_ is None and getattr(self, "n_features_in_", None) is not None:
            # Inference (fit validates its own input first): same checks and width as fit.
            X = check_net_X(type(self).__name__, X, n_features=self.n_features_in_, estimator=self)
        return super().get_dataset(_as_float32(X), y)

    def get_iterator(self, dataset, training=False):
        if not training or self._data_generator_ is None:
            return super().get_iterator(dataset, training=training)
        kwargs = self.get_params_for("iterator_train")
        if kwargs.pop("shuffle", False) and "sampler" not in kwargs and "batch_sampler" not in kwargs:
            kwargs["sampler"] = EpochPermutationSampler(len(dataset), self._data_generator_)
        # A DataLoader draws a base seed for its workers from its generator, or from the
        # global one when it has none: give it a local one of its own.
        kwargs.setdefault("generator", self._loader_generator_)
        if "batch_size" not in kwargs:
            kwargs["batch_size"] = self.batch_size
        if kwargs["batch_size"] == -1:
            kwargs["batch_size"] = len(dataset)
        return self.iterator_train(dataset, **kwargs)


class NeuralNetClassifier(SeededNetMixin, skorch.NeuralNetClassifier):
    """skorch's ``NeuralNetClassifier`` with a ``random_state``.

    Parameters
    ----------
    module : torch.nn.Module class or instance
        As in skorch; route its arguments with ``module__name=value``.
    random_state : None, int or numpy.random.RandomState, default=None
        Seeds module initialisation, dropout and (with ``iterator_train__shuffle=True``)
        the data order, without touching the caller's global torch RNG. Fix it (or let
        :class:`skmip.defend.MIPNoiseWrapper` fix it) so that repeated fits on the same
        data give the same parameters.
    criterion : torch loss class, default=torch.nn.CrossEntropyLoss
        skorch defaults to ``NLLLoss`` on probabilities; skmip's modules return logits.
    train_split : callable or None, default=None
        skorch defaults to a 5-fold validation split. skmip defaults to ``None``: every
        row given to ``fit`` is trained on, and no validation scores on held-out private
        rows are computed (the release would drop them anyway).
    **kwargs
        Every other skorch argument (``lr``, ``max_epochs``, ``batch_size``,
        ``optimizer``, ``iterator_train__shuffle``, ``device``, ...).

    Notes
    -----
    Determinism holds for a fixed ``random_state``, device and torch build. On CUDA,
    some kernels are nondeterministic unless ``torch.use_deterministic_algorithms(True)``
    is set by the caller (a global switch skmip leaves alone).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skmip.nn import MLPModule
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> def make():
    ...     return NeuralNetClassifier(MLPModule, module__n_features=30, max_epochs=3,
    ...                                lr=0.1, random_state=0, verbose=0,
    ...                                iterator_train__shuffle=True).fit(X, y)
    >>> a, b = make(), make()
    >>> bool(torch.equal(a.module_.output.weight, b.module_.output.weight))
    True
    """

    def __init__(
        self,
        module,
        *args,
        random_state=None,
        criterion=torch.nn.CrossEntropyLoss,
        train_split=None,
        **kwargs,
    ):
        super().__init__(module, *args, criterion=criterion, train_split=train_split, **kwargs)
        self.random_state = random_state

    def _prepare_y(self, y, n_rows, continuing, partial=False):
        """Check the labels; non-index labels (strings, negative or float) become class indices.

        Non-negative integer labels are passed as they are (skorch's convention: they are
        the class indices). Others are encoded by their sorted order, learned by ``fit``
        and reused by ``partial_fit``; :attr:`classes_` and :meth:`predict` speak the
        original labels.
        """
        owner = type(self).__name__
        labels, codes = check_net_y(owner, y, n_rows, classes=self.classes, min_classes=1 if partial else 2)
        arr = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
        if arr.dtype.kind in "iu" and labels.min() >= 0:
            return y, None
        known = getattr(self, "labels_", None) if continuing else None
        if known is not None:
            idx = np.searchsorted(known, labels)
            if np.any(idx >= known.size) or np.any(known[np.minimum(idx, known.size - 1)] != labels):
                raise ValueError(
                    f"{owner}: y has labels {np.setdiff1d(labels, known).tolist()} not seen in fit "
                    f"({known.tolist()}). Refit with every label, or pass integer class indices."
                )
            codes = idx[codes]
            labels = known
        return codes, labels

    @property
    def classes_(self):
        labels = self.__dict__.get("labels_")
        return labels if labels is not None and self.classes is None else super().classes_

    def predict(self, X):
        """Most probable class, in the labels given to ``fit``."""
        index = super().predict(X)
        labels = self.__dict__.get("labels_")
        return index if labels is None else labels[index]


class NeuralNetRegressor(SeededNetMixin, skorch.NeuralNetRegressor):
    """skorch's ``NeuralNetRegressor`` with a ``random_state``.

    Parameters
    ----------
    module : torch.nn.Module class or instance
        As in skorch.
    random_state : None, int or numpy.random.RandomState, default=None
        As in :class:`NeuralNetClassifier`.
    train_split : callable or None, default=None
        As in :class:`NeuralNetClassifier` (skorch's default is a validation split).
    **kwargs
        Every other skorch argument.

    Notes
    -----
    Targets must be 2-D float32 arrays, as in skorch; float64 inputs ``X`` are cast.
    """

    def __init__(self, module, *args, random_state=None, train_split=None, **kwargs):
        super().__init__(module, *args, train_split=train_split, **kwargs)
        self.random_state = random_state
