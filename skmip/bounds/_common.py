"""Helpers shared by the bounds modules."""

from __future__ import annotations

import numpy as np


def scalar_or_array(x):
    """Return a Python float for 0-d input and the float array otherwise (vectorised API)."""
    x = np.asarray(x, dtype=np.float64)
    return x.item() if x.ndim == 0 else x
