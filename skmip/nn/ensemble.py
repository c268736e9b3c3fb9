"""Many copies of one skorch net, trained on different row subsets in one batched run.

:class:`skmip.defend.MIPNoiseWrapper` fits the same net on many half-splits of the data
(Izzo et al., Algorithm 1), and membership audits train pools of shadow models. For small
nets each fit is dominated by Python and kernel-launch overhead, so training M copies as
one "stacked" model (``torch.func.stack_module_state`` + ``vmap`` over
``functional_call``) is many times faster, on CPU and more so on a GPU.

:func:`fit_ensemble` reproduces what M sequential ``fit`` calls of a seeded skmip net do:
the same initialisation per member (its ``random_state`` seeds the module exactly as
:meth:`SeededNetMixin.fit` does), the same data order (the same per-epoch permutations),
the same batches, loss, optimizer class and hyper-parameters, and the same number of
epochs. Optimizers whose update is elementwise in the parameters (SGD with or without
momentum, Adam, AdamW, RMSprop, Adagrad, ...) act on the stacked tensors exactly as on each
member's own tensors, so the members' parameters match sequential fits up to float32
round-off.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from sklearn.base import clone
from torch.func import functional_call, stack_module_state, vmap

from skmip.nn.fit_randomness import fit_seeds, seeded_torch

__all__ = ["fit_ensemble", "ensemble_vectors"]

_OWNER = "fit_ensemble"


def _check_template(net):
    params = net.get_params(deep=False)
    if "random_state" not in params:
        raise TypeError(
            f"{_OWNER}: {type(net).__name__} has no random_state, so its members' initialisation "
            "cannot be reproduced. Use skmip.nn.NeuralNetClassifier / NeuralNetRegressor."
        )
    if net.train_split is not None:
        raise ValueError(
            f"{_OWNER}: train_split must be None; got {net.train_split!r}. A validation split "
            "changes which rows each member trains on."
        )
    if net.callbacks not in (None, [], "disable"):
        raise ValueError(
            f"{_OWNER}: callbacks={net.callbacks!r} may change training (schedulers, gradient "
            "clipping, early stopping) and are not run by the batched trainer; fit "
            "sequentially instead."
        )
    if any(k.startswith("optimizer__param_groups") for k in params):
        raise ValueError(f"{_OWNER}: optimizer__param_groups is not supported; fit sequentially.")
    extra = [k for k in params if k.startswith("iterator_train__") and k != "iterator_train__shuffle"]
    if extra:
        raise ValueError(f"{_OWNER}: {extra} change the data loading and are not supported; fit sequentially.")


def fit_ensemble(
    net,
    X,
    y,
    subsets: Sequence[Sequence[int]],
    *,
    random_states: Sequence | None = None,
) -> list:
    """Train one copy of ``net`` per row subset in a single vmapped run.

    Parameters
    ----------
    net : skmip seeded skorch net
        Template (:class:`skmip.nn.NeuralNetClassifier` or ``NeuralNetRegressor``); cloned,
        never modified. ``train_split`` must be None and no callbacks may be set.
    X : ndarray of shape (n_samples, n_features)
        All rows (cast to float32).
    y : ndarray of shape (n_samples,) or (n_samples, n_targets)
        Targets.
    subsets : sequence of index arrays, all of the same length
        Rows of member ``i`` (in the order a sequential ``fit(X[subsets[i]], ...)`` would
        see them before shuffling).
    random_states : sequence or None, default=None
        One ``random_state`` per member; ``None`` gives every member ``net.random_state``
        (the wrapper's case: one fixed seed shared by all split fits).

    Returns
    -------
    list of nets
        Member ``i`` equals ``clone(net).set_params(random_state=random_states[i]).fit(
        X[subsets[i]], y[subsets[i]])`` up to float32 round-off: parameters, ``classes_``
        for classifiers, an empty ``history_`` and a freshly initialised optimizer.

    Raises
    ------
    ValueError
        If subsets differ in length, or the template uses features the batched trainer
        does not reproduce (validation split, callbacks, param groups, custom loaders,
        modules with buffers such as batch norm).

    Notes
    -----
    Exact agreement needs a deterministic module: with dropout the members draw their
    masks independently (``vmap(randomness="different")``), a valid but different draw
    from the sequential fits'.

    Examples
    --------
    >>> from skmip.nn import NeuralNetClassifier, MLPModule
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(60, 4)).astype("float32"); y = (X[:, 0] > 0).astype("int64")
    >>> net = NeuralNetClassifier(MLPModule, module__n_features=4, module__hidden=(8,),
    ...                           max_epochs=3, batch_size=8, random_state=0, verbose=0,
    ...                           iterator_train__shuffle=True)
    >>> subsets = [rng.choice(60, size=30, replace=False) for _ in range(4)]
    >>> members = fit_ensemble(net, X, y, subsets)
    >>> seq = clone(net).fit(X[subsets[2]], y[subsets[2]])
    >>> diff = (members[2].module_.output.weight - seq.module_.output.weight).abs().max()
    >>> bool(diff < 1e-5)
    True
    """
    _check_template(net)
    subsets, random_states = _check_subsets(net, subsets, random_states)
    X = np.asarray(X)
    X = X.astype(np.float32) if X.dtype == np.float64 else X
    y = np.asarray(y)
    members, data_gens = _initialized_members(net, X, y, subsets, random_states)
    params = _train_batched(members, data_gens, X, y, subsets)
    with torch.no_grad():
        for i, member in enumerate(members):
            for name, p in member.module_.named_parameters():
                p.copy_(params[name][i])
            member.initialize_optimizer()  # fresh state, as after SkorchAdapter.scrub
    return members


def _check_subsets(net, subsets, random_states):
    """The subsets as int64 index arrays of one positive length, and one random_state each."""
    subsets = [np.asarray(s, dtype=np.int64).ravel() for s in subsets]
    if not subsets:
        raise ValueError(f"{_OWNER}: subsets is empty.")
    size = len(subsets[0])
    if size == 0 or any(len(s) != size for s in subsets):
        raise ValueError(
            f"{_OWNER}: all subsets must have the same positive length (batched steps need equal "
            f"batch shapes); got lengths {sorted({len(s) for s in subsets})}."
        )
    M = len(subsets)
    if random_states is None:
        random_states = [net.random_state] * M
    if len(random_states) != M:
        raise ValueError(f"{_OWNER}: {len(random_states)} random_states for {M} subsets.")
    return subsets, random_states


def _initialized_members(net, X, y, subsets, random_states):
    """One clone of ``net`` per subset, initialised as its sequential fit is, with its data-order generator."""
    members, data_gens = [], []
    for rs, rows in zip(random_states, subsets):
        member = clone(net).set_params(random_state=copy.deepcopy(rs))
        init_seed, data_seed, _ = fit_seeds(member.random_state, 0)
        with seeded_torch(init_seed):  # the first draws of SeededNetMixin.fit
            member.initialize()
        member.check_data(X[rows], y[rows])  # classifiers infer classes_ here
        members.append(member)
        data_gens.append(torch.Generator().manual_seed(data_seed))
    if any(True for _ in members[0].module_.buffers()):
        raise ValueError(
            f"{_OWNER}: the module has buffers (e.g. batch-norm running statistics), which the "
            "batched trainer does not update member by member; fit sequentially."
        )
    return members, data_gens


def _train_batched(members, data_gens, X, y, subsets):
    """Train the members' stacked parameters in one vmapped run; return them by name, shape (M, ...)."""
    template = members[0]
    size = len(subsets[0])
    params, buffers = stack_module_state([m.module_ for m in members])
    args, kwargs = template.get_params_for_optimizer("optimizer", list(params.items()))
    optimizer = template.optimizer(*args, **kwargs)

    device = next(iter(params.values())).device
    Xt = torch.as_tensor(X, device=device)
    yt = torch.as_tensor(y, device=device)
    rows = torch.as_tensor(np.stack(subsets), device=device)  # (M, size)
    batch_size = size if template.batch_size == -1 else int(template.batch_size)
    shuffle = bool(template.get_params().get("iterator_train__shuffle", False))

    base = copy.deepcopy(template.module_).to("meta")

    def member_loss(p, b, xb, tb):
        out = functional_call(base, (p, b), (xb,))
        return template.get_loss(out, tb, X=xb, training=True)

    # Members are independent, so the gradient of the *sum* of their losses with respect
    # to the stacked parameters is each member's own gradient: one vmapped forward and one
    # ordinary backward (cheaper than vmap(grad(...))).
    losses = vmap(member_loss, in_dims=(0, 0, 0, 0), randomness="different")
    base.train()
    for _ in range(int(template.max_epochs)):
        if shuffle:
            perms = torch.stack([torch.randperm(size, generator=g) for g in data_gens]).to(device)
            order = torch.gather(rows, 1, perms)
        else:
            order = rows
        for start in range(0, size, batch_size):
            idx = order[:, start : start + batch_size]
            optimizer.zero_grad()
            losses(params, buffers, Xt[idx], yt[idx]).sum().backward()
            optimizer.step()
    return params


def ensemble_vectors(net, X, y, subsets, *, adapter=None, random_states=None) -> np.ndarray:
    """Parameter vectors of :func:`fit_ensemble`'s members, one row per subset.

    Parameters
    ----------
    net, X, y, subsets, random_states
        As in :func:`fit_ensemble`.
    adapter : SkorchAdapter or None, default=None
        Which parameters (``None``: :func:`skmip.params.get_adapter` of ``net``).

    Returns
    -------
    ndarray of shape (n_subsets, d)
        float64 vectors in the adapter's layout, ready for a moment accumulator.
    """
    from skmip.params import get_adapter

    members = fit_ensemble(net, X, y, subsets, random_states=random_states)
    adapter = get_adapter(members[0]) if adapter is None else adapter
    out = []
    for member in members:
        adapter.canonicalize(member)
        out.append(adapter.get_vector(member))
    return np.stack(out)
