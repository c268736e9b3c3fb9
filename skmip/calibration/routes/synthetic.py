"""The synthetic route: no noise on the model, which trains on eta-MIP synthetic records.

For estimators without continuous parameters (trees, forests, boosting, k-NN): the model is
fitted on records drawn from an eta-MIP synthesizer of the table ``(X, y)``
(:class:`~skmip.release.tabular.MIPTabularSynthesizer`) and keeps the synthesizer's promise by
post-processing (Izzo et al., Theorem 3). The fit itself is the defence's
(:func:`skmip.defend.synthetic_route.fit_synthetic`): it trains on a release, a layer above
the calibration.
"""

from __future__ import annotations

from skmip.calibration.routes.base import CalibrationRoute, Cost

__all__ = ["SyntheticRoute"]


class SyntheticRoute(CalibrationRoute):
    """Train the estimator on records drawn from an eta-MIP synthesizer of ``(X, y)``.

    Parameters
    ----------
    synthesizer : MIPTabularSynthesizer or None, default=None
        An unfitted :class:`~skmip.release.tabular.MIPTabularSynthesizer` whose ``n_bins``,
        ``bins`` and ``categories`` set the columns' domains (user-given domains say nothing
        about D); its ``eta``, ``train_size`` and ``random_state`` are replaced by the
        wrapper's. ``None``: its defaults (domains computed from D).

    Notes
    -----
    The promise is the synthesizer's (its coupling bound on the noised cell fractions,
    ``coupling_eta_point_``), kept by post-processing (Theorem 3). ``X`` may be a DataFrame
    with string, categorical and missing values; the estimator (or its pipeline) must accept
    what the synthesizer returns. docs/pipelines.md ("Any estimator: training on MIP
    synthetic data").

    Examples
    --------
    >>> from skmip.calibration.routes import SyntheticRoute
    >>> SyntheticRoute().name
    'synthetic'
    """

    name = "synthetic"
    promise = ("the eta-MIP promise of the synthesizer's release, kept by post-processing "
               "(Izzo et al., Theorem 3)")

    def __init__(self, synthesizer=None):
        self.synthesizer = synthesizer

    def applies(self, estimator, params):
        """``None``: any estimator trains on synthetic records."""
        return None

    def cost(self, n_samples, n_features, n_train, estimator):
        """Rough seconds: the synthesizer's marginal tables, linear in the cells of D."""
        return Cost(1e-6 * n_samples * max(n_features, 1), "the size of D")
