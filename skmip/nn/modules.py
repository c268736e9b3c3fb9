"""Small torch modules for tabular data, used by skmip's nets, tests and benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["MLPModule"]


class MLPModule(nn.Module):
    """A fully connected network ``Linear -> ReLU -> ... -> Linear`` returning logits.

    Parameters
    ----------
    n_features : int
        Number of input features.
    n_outputs : int, default=2
        Number of outputs (classes for a classifier trained with
        ``torch.nn.CrossEntropyLoss``, targets for a regressor).
    hidden : sequence of int, default=(32,)
        Widths of the hidden layers; ``()`` gives a linear model (logistic regression
        under a cross-entropy loss).
    dropout : float, default=0.0
        Dropout probability after each hidden activation. Dropout draws random masks,
        which :func:`skmip.nn.fit_ensemble` cannot reproduce draw for draw.

    Notes
    -----
    The last layer is named ``output`` so that fine-tuning experiments (Leemann et al.,
    §6: only the last layer is trained and audited) can select it with
    ``SkorchAdapter(include=["output.*"])``.

    Examples
    --------
    >>> m = MLPModule(4, 3, hidden=(8,))
    >>> [name for name, _ in m.named_parameters()]
    ['hidden.0.weight', 'hidden.0.bias', 'output.weight', 'output.bias']
    >>> m(torch.zeros(5, 4)).shape
    torch.Size([5, 3])
    """

    def __init__(
        self, n_features: int, n_outputs: int = 2, hidden: Sequence[int] = (32,), dropout: float = 0.0
    ):
        super().__init__()
        layers = []
        width = int(n_features)
        for h in hidden:
            layers.append(nn.Linear(width, int(h)))
            width = int(h)
        self.hidden = nn.ModuleList(layers)
        self.dropout = nn.Dropout(dropout) if dropout > 0 else None
        self.output = nn.Linear(width, int(n_outputs))

    def forward(self, X):
        for layer in self.hidden:
            X = torch.relu(layer(X))
            if self.dropout is not None:
                X = self.dropout(X)
        return self.output(X)
