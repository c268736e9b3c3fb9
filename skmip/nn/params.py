"""Parameter adapter for fitted skorch nets (the torch side of :mod:`skmip.params`).

This module registers :class:`SkorchAdapter` for every ``skorch.NeuralNet`` (skmip's own
nets and users' subclasses included) when it is imported, so the root package holds no
skorch code and never imports torch. :func:`skmip.params.get_adapter` imports this module
the first time it meets a skorch net (:mod:`skmip.params.registry` explains why), so
``get_adapter(net)`` works whether or not :mod:`skmip.nn` was imported. Pass
``params=SkorchAdapter(include=[...])`` to select parameters by name.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

import numpy as np
import skorch
import torch

from skmip.params import register_adapter

__all__ = ["SkorchAdapter"]


class SkorchAdapter:
    """A fitted skorch net's tensors as one flat float64 vector, and back.

    Parameters
    ----------
    include : sequence of str or None, default=None
        ``fnmatch`` patterns on tensor names (``"output.*"``, ``"hidden.1.weight"``);
        ``None`` selects every trainable parameter and every floating-point buffer. Names
        are those of ``net.module_.named_parameters()``; tensors of further modules a
        custom net registers (``net.module2_``) are named ``"module2_.<name>"``.
    exclude : sequence of str, default=()
        Patterns removed from the selection.
    buffers : bool, default=True
        Include floating-point buffers (batch-norm ``running_mean``/``running_var``).
        They are computed from the private training rows, so a release must noise them
        like the weights; set ``False`` only when the module has none or they are public.
    require_seed : bool, default=True
        Refuse nets without a ``random_state`` parameter (see Raises).

    Raises
    ------
    TypeError
        From :meth:`get_vector` when ``require_seed`` and the net has no
        ``random_state``: a plain skorch net draws a new random initialisation at every
        fit, so the spread of its parameters over split fits (what
        :class:`skmip.defend.MIPNoiseWrapper` calibrates the noise to) would measure
        the initialisation, not the data.
    ValueError
        If the patterns select no tensor, or a vector of the wrong length is written.

    Notes
    -----
    *Selection.* Leemann et al. (§6) fine-tune and audit only the last layer
    (``include=["output.*"]`` with :class:`skmip.nn.MLPModule`); frozen parameters
    (``requires_grad=False``) are left out by default because training does not touch
    them. Selecting a subset is only private if the other tensors do not depend on the
    private data (pretrained on public data, or frozen).

    *Canonical order.* Hidden units of a network are permutation-symmetric. skmip's
    nets start every split fit from the same seeded initialisation, which keeps units
    aligned across fits far better than any post-hoc matching, so :meth:`canonicalize`
    leaves the order alone.

    *Projection.* Noised ``running_var`` buffers are clipped at 0 (batch norm takes their
    square root); post-processing keeps MIP (Izzo et al., Theorem 3).

    *Scrubbing* replaces ``history_`` by an empty history (the per-epoch losses are
    computed on private rows), re-initialises the callbacks (``EpochScoring`` keeps best
    scores) and the optimizer (momentum and Adam moments are running sums of un-noised
    private gradients).

    Examples
    --------
    >>> import numpy as np
    >>> from skmip.nn import NeuralNetClassifier, MLPModule
    >>> X = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
    >>> y = (X[:, 0] > 0).astype("int64")
    >>> net = NeuralNetClassifier(MLPModule, module__n_features=3, module__hidden=(4,),
    ...                           max_epochs=2, random_state=0, verbose=0).fit(X, y)
    >>> SkorchAdapter().get_vector(net).shape  # 3*4 + 4 + 4*2 + 2
    (26,)
    >>> SkorchAdapter(include=["output.*"]).get_vector(net).shape
    (10,)
    """

    def __init__(
        self,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        *,
        buffers: bool = True,
        require_seed: bool = True,
    ):
        self.include = None if include is None else tuple(include)
        self.exclude = tuple(exclude)
        self.buffers = buffers
        self.require_seed = require_seed

    # -- selection -------------------------------------------------------------------
    @staticmethod
    def _modules(net):
        names = getattr(net, "_modules", None) or ["module"]
        for name in names:
            module = getattr(net, name + "_", None)
            if isinstance(module, torch.nn.Module):
                yield ("" if name == "module" else name + "_."), module

    def named_tensors(self, net) -> list[tuple[str, torch.Tensor]]:
        """The selected ``(name, tensor)`` pairs of a fitted net, in vector order."""
        if not getattr(net, "initialized_", False):
            raise ValueError(
                f"{type(self).__name__}: the {type(net).__name__} is not initialized; fit it first."
            )
        out = []
        for prefix, module in self._modules(net):
            candidates = [
                (prefix + n, t) for n, t in module.named_parameters() if t.requires_grad or self.include
            ]
            if self.buffers:
                candidates += [(prefix + n, b) for n, b in module.named_buffers() if b.is_floating_point()]
            for name, tensor in candidates:
                if self.include is not None and not any(fnmatch.fnmatchcase(name, p) for p in self.include):
                    continue
                if any(fnmatch.fnmatchcase(name, p) for p in self.exclude):
                    continue
                out.append((name, tensor))
        if not out:
            raise ValueError(
                f"{type(self).__name__}: include={self.include!r}, exclude={self.exclude!r} select no "
                f"tensor of {type(net).__name__}; available: {[n for n, _ in self._all_names(net)]}."
            )
        return out

    def _all_names(self, net):
        for prefix, module in self._modules(net):
            for n, t in list(module.named_parameters()) + list(module.named_buffers()):
                yield prefix + n, t

    def _check_seed(self, net):
        if self.require_seed and "random_state" not in net.get_params(deep=False):
            raise TypeError(
                f"{type(self).__name__}: {type(net).__name__} has no random_state, so each fit starts "
                "from a different random initialisation and the parameter spread over split fits "
                "would measure the initialisation, not the data. Use "
                "skmip.nn.NeuralNetClassifier(..., random_state=0) (or NeuralNetRegressor, or mix "
                "skmip.nn.SeededNetMixin into your net class). If your module is deterministic by "
                "construction, pass params=SkorchAdapter(require_seed=False)."
            )

    # -- ParamAdapter protocol -------------------------------------------------------
    def get_vector(self, estimator) -> np.ndarray:
        """The selected tensors, flattened in order, as a float64 numpy vector (a copy)."""
        self._check_seed(estimator)
        tensors = [t.detach().to("cpu", torch.float64).reshape(-1) for _, t in self.named_tensors(estimator)]
        return torch.cat(tensors).numpy()

    def set_vector(self, estimator, vector):
        """Write ``vector`` into the selected tensors in place (dtype and device kept)."""
        vector = np.asarray(vector, dtype=np.float64).ravel()
        named = self.named_tensors(estimator)
        total = sum(t.numel() for _, t in named)
        if vector.size != total:
            raise ValueError(
                f"{type(self).__name__}: vector has {vector.size} entries but the selected tensors of "
                f"{type(estimator).__name__} have {total}."
            )
        start = 0
        with torch.no_grad():
            for _, tensor in named:
                chunk = torch.from_numpy(vector[start : start + tensor.numel()].copy())
                # In place, so the optimizer and any hooks keep pointing at the same tensors.
                tensor.copy_(chunk.view(tensor.shape).to(device=tensor.device, dtype=tensor.dtype))
                start += tensor.numel()
        return estimator

    def canonicalize(self, estimator):
        """Leave the order alone (seeded initialisation aligns units; see Notes)."""
        return estimator

    def project(self, estimator):
        """Clip noised batch-norm variances at zero."""
        with torch.no_grad():
            for name, tensor in self.named_tensors(estimator):
                if name.endswith("running_var"):
                    tensor.clamp_(min=0.0)
        return estimator

    def scrub(self, estimator):
        """Drop training history, callback state and optimizer state (see Notes)."""
        from skorch.history import History

        if getattr(estimator, "history_", None) is not None:
            estimator.history_ = History()
        if getattr(estimator, "initialized_", False):
            if estimator.callbacks != "disable":
                estimator.initialize_callbacks()
            estimator.initialize_optimizer()
        return estimator

    def __repr__(self):
        args = []
        if self.include is not None:
            args.append(f"include={list(self.include)!r}")
        if self.exclude:
            args.append(f"exclude={list(self.exclude)!r}")
        if not self.buffers:
            args.append("buffers=False")
        if not self.require_seed:
            args.append("require_seed=False")
        return f"{type(self).__name__}({', '.join(args)})"


register_adapter(skorch.NeuralNet, lambda est: SkorchAdapter(), first=False)
