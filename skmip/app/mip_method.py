"""Which calibration route the ``skmip`` command's MIP rows take for ``--mip-method``."""

from __future__ import annotations

__all__ = ["mip_method"]


def mip_method(method, estimator, d, k, n_rows, eta):
    """The route name for ``--mip-method``: ``"auto"`` decided as the wrapper decides it
    (:func:`skmip.calibration.routes.auto_route`), from the shape of the data each game's
    wrapper is given -- a member set of half the ``n_rows`` pool rows, whose D_train is half of
    that -- so that the command's knobs (``--n-rounds``, ``--n-subsets``) go to the route it takes."""
    if method != "auto":
        return method
    import numpy as np

    from skmip.calibration.routes import auto_route
    from skmip.calibration.routes.auto import DataShape

    members = n_rows // 2
    shape = DataShape(n_samples=members, n_features=d, n_train=int(round(0.5 * members)),
                      classes=np.arange(k), eta=eta)
    chosen = auto_route(estimator, "auto", shape)[0].name
    # Where the data do not change the choice, "auto" itself is built (with what it says).
    return "auto" if chosen == auto_route(estimator, "auto")[0].name else chosen
