"""Per-sample gradients of skorch nets with ``torch.func``, and GLiR audits on top.

:func:`per_sample_gradients` computes one loss gradient per row with
``vmap(grad(loss))`` over ``functional_call`` of the net's module, in the layout of
:class:`skmip.nn.SkorchAdapter` (so gradients, parameters and noise share one vector
order). :func:`sgd_step_gradients` replays ``k`` plain SGD steps on a batch and records
what an attacker of Leemann et al. sees: the averaged gradient of each step and the
parameters it was taken at. :func:`glir_audit` feeds both to
:func:`skmip.audit.attacks.glir.glir_scores` (Leemann Algorithm 1).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch.func import functional_call, grad, vmap

from skmip.nn.params import SkorchAdapter

__all__ = ["per_sample_gradients", "sgd_step_gradients", "glir_audit"]


def _selection(net, include):
    adapter = include if isinstance(include, SkorchAdapter) else SkorchAdapter(
        include=include, buffers=False, require_seed=False
    )
    params = dict(net.module_.named_parameters())
    names = [name for name, _ in adapter.named_tensors(net) if name in params]
    if not names:
        raise ValueError(
            f"per_sample_gradients: the selection {adapter!r} holds no parameter of net.module_ "
            "(buffers have no gradient)."
        )
    return names


def _as_tensor(net, a, *, target=False):
    a = np.asarray(a)
    if target:
        dtype = torch.int64 if np.issubdtype(a.dtype, np.integer) else torch.float32
    else:
        dtype = torch.float32
    return torch.as_tensor(a, dtype=dtype, device=net.device)


def per_sample_gradients(
    net, X: ArrayLike, y: ArrayLike, *, include: Sequence[str] | SkorchAdapter | None = None,
    batch_size: int = 1024,
) -> np.ndarray:
    """Gradient of each row's loss with respect to the net's (selected) parameters.

    Parameters
    ----------
    net : fitted skorch net
        Any ``skorch.NeuralNet`` whose criterion averages over the batch (skorch's
        default); the loss is ``net.get_loss`` on a batch of one row.
    X : array_like of shape (n_samples, n_features)
        Inputs (cast to float32).
    y : array_like of shape (n_samples,) or (n_samples, n_targets)
        Targets (integers for classifiers).
    include : sequence of str, SkorchAdapter or None, default=None
        Which parameters, as ``fnmatch`` patterns (``["output.*"]`` for the last layer)
        or an adapter; ``None`` takes every trainable parameter.
    batch_size : int, default=1024
        Rows per vectorised chunk (memory: ``batch_size * d`` floats).

    Returns
    -------
    ndarray of shape (n_samples, d)
        float64 gradients, columns in :meth:`SkorchAdapter.get_vector` order (buffers
        left out).

    Notes
    -----
    The module runs in eval mode (no dropout; batch norm uses its running statistics)
    so a row's gradient does not depend on the other rows; training mode is restored
    afterwards. Averaging the rows of the result gives the gradient of the mean loss
    over those rows, the update Leemann et al. analyse (§5.1).

    Examples
    --------
    >>> from skmip.nn import NeuralNetClassifier, MLPModule
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20, 3)).astype("float32"); y = (X[:, 0] > 0).astype("int64")
    >>> net = NeuralNetClassifier(MLPModule, module__n_features=3, module__hidden=(4,),
    ...                           max_epochs=1, random_state=0, verbose=0).fit(X, y)
    >>> G = per_sample_gradients(net, X, y)
    >>> G.shape
    (20, 26)
    >>> net.module_.zero_grad()
    >>> net.get_loss(net.module_(torch.as_tensor(X)), torch.as_tensor(y)).backward()
    >>> full = torch.cat([p.grad.flatten() for p in net.module_.parameters()]).numpy()
    >>> bool(np.allclose(G.mean(axis=0), full, atol=1e-6))
    True
    """
    names = _selection(net, include)
    module = net.module_
    params = {k: v.detach() for k, v in module.named_parameters()}
    buffers = {k: v.detach() for k, v in module.named_buffers()}
    selected = {k: params[k] for k in names}

    def row_loss(sel, x, t):
        out = functional_call(module, ({**params, **sel}, buffers), (x.unsqueeze(0),))
        return net.get_loss(out, t.unsqueeze(0), training=False)

    per_row = vmap(grad(row_loss), in_dims=(None, 0, 0))
    Xt, yt = _as_tensor(net, X), _as_tensor(net, y, target=True)
    was_training = module.training
    module.eval()
    chunks = []
    try:
        for start in range(0, len(Xt), batch_size):
            g = per_row(selected, Xt[start : start + batch_size], yt[start : start + batch_size])
            chunks.append(torch.cat([g[k].reshape(len(g[k]), -1) for k in names], dim=1))
    finally:
        module.train(was_training)
    return torch.cat(chunks).to("cpu", torch.float64).numpy()


def sgd_step_gradients(net, X_batch, y_batch, *, n_steps=1, lr=None, include=None):
    """Replay ``n_steps`` full-batch SGD steps and record what a GLiR attacker sees.

    Parameters
    ----------
    net : fitted skorch net
        Starting point; it is deep-copied, never modified.
    X_batch, y_batch : array_like
        The batch of ``n`` rows used at every step (the training records to audit).
    n_steps : int, default=1
        Number of steps ``k``.
    lr : float or None, default=None
        Step size; ``None`` takes ``net.lr``.
    include : sequence of str or None, default=None
        Parameters that are trained (and observed); the others stay fixed, as in the
        last-layer fine-tuning of Leemann et al. §6.

    Returns
    -------
    nets : list of skorch nets
        ``n_steps`` copies holding the parameters at which each step's gradient was
        taken (``w_0, ..., w_{k-1}``).
    mean_gradients : ndarray of shape (n_steps, d)
        The averaged gradient :math:`m_t` of each step.
    """
    lr = float(net.lr if lr is None else lr)
    current = copy.deepcopy(net)
    names = _selection(current, include)
    nets, means = [], []
    for _ in range(int(n_steps)):
        nets.append(copy.deepcopy(current))
        m = per_sample_gradients(current, X_batch, y_batch, include=include).mean(axis=0)
        means.append(m)
        params = dict(current.module_.named_parameters())
        start = 0
        with torch.no_grad():
            for name in names:
                p = params[name]
                step = torch.as_tensor(m[start : start + p.numel()], dtype=p.dtype, device=p.device)
                p -= lr * step.view_as(p)
                start += p.numel()
    return nets, np.stack(means)


def glir_audit(
    net, X_batch, y_batch, X_query, y_query, X_background, y_background, *, n_steps=1, lr=None,
    include=None, ridge=0.0, statistic="theorem", return_log_p=False,
):
    """GLiR scores of query rows against ``n_steps`` SGD steps on ``X_batch`` (Leemann Alg. 1).

    Parameters
    ----------
    net : fitted skorch net
        Model at the start of the audited steps (not modified).
    X_batch, y_batch : array_like
        The ``n`` rows averaged into every step's gradient (the members).
    X_query, y_query : array_like
        Rows whose membership is tested (members and non-members).
    X_background, y_background : array_like
        Rows from the data distribution, outside the batch, for :math:`\\hat\\mu` and
        :math:`\\hat\\Sigma` (Algorithm 1, lines 3-6); more rows than parameters, or
        ``ridge > 0``.
    n_steps : int, default=1
        Steps ``k``; log p-values are summed over steps (Algorithm 1, line 11).
    lr : float or None, default=None
        SGD step size (``None``: ``net.lr``).
    include : sequence of str or None, default=None
        Trained/observed parameters (e.g. ``["output.*"]``).
    ridge : float, default=0.0
        Covariance regulariser, see :func:`skmip.audit.attacks.glir.glir_scores`.
    statistic : {"theorem", "paper"}, default="theorem"
        See :func:`skmip.audit.attacks.glir.glir_scores`.
    return_log_p : bool, default=False
        Return summed log p-values instead of scores.

    Returns
    -------
    ndarray of shape (n_query,)
        Membership scores (larger means member).

    Notes
    -----
    The analytic trade-off to compare with is :func:`skmip.bounds.gmip_tradeoff` (one
    step) or the Gaussian curve of :func:`skmip.bounds.gaussian_compose` of
    :func:`skmip.bounds.gmip_mu_step` (``k`` steps). With estimated parameters the
    empirical curve lies below it (Leemann Fig. 2b/2c), and successive steps add
    little because they are far from independent.

    References
    ----------
    Leemann et al., Algorithm 1, Theorem 5.1, §6.1, Figure 2.
    """
    from skmip.audit.attacks.glir import glir_scores

    nets, means = sgd_step_gradients(net, X_batch, y_batch, n_steps=n_steps, lr=lr, include=include)
    queries = np.stack([per_sample_gradients(w, X_query, y_query, include=include) for w in nets])
    background = np.stack([per_sample_gradients(w, X_background, y_background, include=include) for w in nets])
    return glir_scores(
        means, queries, background, batch_size=len(np.asarray(X_batch)), ridge=ridge,
        statistic=statistic, return_log_p=return_log_p,
    )
