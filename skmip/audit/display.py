"""Plots of membership-inference audits (scikit-learn's Display API; matplotlib imported lazily).

- :class:`MIAttackDisplay`: the attack's ROC on log-log axes, with the chance diagonal, the
  eta-MIP line ``TPR = FPR + 2 eta`` when a bound is known and a mu-GMIP curve when given.
- :class:`PrivacyUtilityDisplay`: measured leakage against utility across the candidates of
  a ``GridSearchCV`` (e.g. over ``eta``).

Both follow :class:`sklearn.metrics.RocCurveDisplay`: ``from_*`` class methods compute and
plot, ``plot(ax=None)`` returns the display with ``ax_``, ``figure_`` and ``line_`` set.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["MIAttackDisplay", "PrivacyUtilityDisplay"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'skmip.audit.display needs matplotlib: pip install "skmip[plot]"'
        ) from exc
    return plt


def _axes(ax):
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots()
    return ax, ax.figure


class MIAttackDisplay:
    """ROC of a membership-inference attack on log-log axes, with the privacy bounds.

    Parameters
    ----------
    fpr, tpr : ndarray
        The attack's ROC (:func:`skmip.audit.metrics.mi_roc_curve`).
    roc_auc : float, default=None
        Shown in the legend when given.
    eta : float, default=None
        An eta-MIP promise; plotted as ``TPR = min(1, FPR + 2 eta)`` (Izzo et al., Theorem 8
        corrected, :func:`skmip.bounds.mip_tpr_bound`).
    mu : float, default=None
        A mu-GMIP promise; plotted as ``TPR = 1 - g_mu(FPR)`` (Leemann et al., Definition
        4.3, :func:`skmip.bounds.gaussian_tradeoff`).
    name : str, default=None
        Legend label of the attack curve.
    n_negatives : int, default=None
        Number of non-member trials; the smallest nonzero FPR is ``1 / n_negatives``, which
        sets the left edge of the log axis.

    Attributes
    ----------
    line_ : matplotlib Line2D
        The attack's ROC.
    chance_level_ : matplotlib Line2D or None
        The diagonal TPR = FPR.
    mip_line_ : matplotlib Line2D or None
        The eta-MIP line.
    gmip_line_ : matplotlib Line2D or None
        The mu-GMIP curve.
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Notes
    -----
    Log-log axes show what matters for membership inference, the TPR at low FPR (Carlini
    et al. 2022, Section III). Points with FPR = 0 cannot be drawn on a log axis and are
    moved to half the smallest nonzero FPR.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(2000) < 0.5
    >>> scores = rng.normal(size=2000) + member
    >>> disp = MIAttackDisplay.from_predictions(member, scores, eta=0.2, name="toy")
    >>> disp.ax_.get_xscale(), disp.mip_line_ is not None
    ('log', True)
    """

    def __init__(self, *, fpr, tpr, roc_auc=None, eta=None, mu=None, name=None, n_negatives=None):
        self.fpr = fpr
        self.tpr = tpr
        self.roc_auc = roc_auc
        self.eta = eta
        self.mu = mu
        self.name = name
        self.n_negatives = n_negatives

    def plot(self, ax=None, *, name=None, log_scale: bool = True, plot_chance_level: bool = True, **kwargs):
        """Draw the ROC, the diagonal and the known bounds.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Axes to draw on; a new figure if None.
        name : str, default=None
            Overrides the legend label.
        log_scale : bool, default=True
            Log-log axes (linear otherwise).
        plot_chance_level : bool, default=True
            Draw the diagonal.
        **kwargs
            Passed to ``ax.plot`` for the ROC line.

        Returns
        -------
        self : MIAttackDisplay
        """
        from skmip.bounds import gaussian_tradeoff, mip_tpr_bound

        ax, fig = _axes(ax)
        fpr = np.asarray(self.fpr, dtype=np.float64)
        tpr = np.asarray(self.tpr, dtype=np.float64)
        positive = fpr[fpr > 0]
        floor = 1.0 / self.n_negatives if self.n_negatives else (positive.min() if positive.size else 1e-4)
        lo = floor / 2
        label = name if name is not None else self.name
        if self.roc_auc is not None:
            label = f"{label or 'attack'} (AUC = {self.roc_auc:.3f})"
        x = np.where(fpr > 0, fpr, lo) if log_scale else fpr
        (self.line_,) = ax.plot(x, tpr, label=label, drawstyle="steps-post", **kwargs)
        grid = np.logspace(np.log10(lo), 0, 200) if log_scale else np.linspace(0, 1, 200)
        self.chance_level_ = None
        if plot_chance_level:
            (self.chance_level_,) = ax.plot(grid, grid, "k--", lw=1, label="chance (TPR = FPR)")
        self.mip_line_ = None
        if self.eta is not None:
            (self.mip_line_,) = ax.plot(
                grid, mip_tpr_bound(grid, self.eta), color="tab:red", lw=1.5,
                label=f"{self.eta:g}-MIP bound (TPR = FPR + 2 eta)",
            )
        self.gmip_line_ = None
        if self.mu is not None:
            (self.gmip_line_,) = ax.plot(
                grid, 1.0 - gaussian_tradeoff(grid, self.mu), color="tab:purple", lw=1.5, ls=":",
                label=f"{self.mu:g}-GMIP bound",
            )
        if log_scale:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlim(lo, 1.0)
            ax.set_ylim(lo, 1.05)
        ax.set_xlabel("False positive rate")
        ax.set_ylabel("True positive rate")
        ax.legend(loc="lower right")
        self.ax_, self.figure_ = ax, fig
        return self

    @classmethod
    def from_predictions(cls, membership: ArrayLike, scores: ArrayLike, *, eta=None, mu=None, name=None,
                         ax=None, log_scale: bool = True, **kwargs):
        """Plot the ROC of attack ``scores`` against the true ``membership``.

        The name is scikit-learn's (:meth:`sklearn.metrics.RocCurveDisplay.from_predictions`):
        the truth, then the scores.

        Parameters
        ----------
        membership, scores : array_like
            As in :func:`skmip.audit.metrics.mi_roc_curve` (any shape; every entry is a trial).
        eta, mu : float, default=None
            Bounds to draw.
        name : str, default=None
            Legend label.
        ax : matplotlib Axes, default=None
        log_scale : bool, default=True
        **kwargs
            Passed to :meth:`plot`.

        Returns
        -------
        MIAttackDisplay
        """
        from skmip.audit.metrics import mi_roc_auc, mi_roc_curve

        fpr, tpr, _ = mi_roc_curve(membership, scores)
        n_neg = int(np.size(membership) - np.count_nonzero(membership))
        disp = cls(fpr=fpr, tpr=tpr, roc_auc=mi_roc_auc(membership, scores), eta=eta, mu=mu,
                   name=name, n_negatives=n_neg)
        return disp.plot(ax=ax, log_scale=log_scale, **kwargs)

    @classmethod
    def from_scores(cls, membership: ArrayLike, scores: ArrayLike, **kwargs):
        """Deprecated name of :meth:`from_predictions` (renamed in 0.2, removed in 0.3).

        Parameters
        ----------
        membership, scores : array_like
            As in :meth:`from_predictions`.
        **kwargs
            As in :meth:`from_predictions`.

        Returns
        -------
        MIAttackDisplay
        """
        warnings.warn(
            "MIAttackDisplay.from_scores was renamed from_predictions (scikit-learn's name) in "
            "skmip 0.2 and will be removed in 0.3; call MIAttackDisplay.from_predictions(membership, "
            "scores, ...) instead.",
            FutureWarning, stacklevel=2,
        )
        return cls.from_predictions(membership, scores, **kwargs)

    @classmethod
    def from_estimator(cls, estimator, X=None, y=None, *, attack="lira", n_models: int = 16,
                       member_rate: float = 0.5, sampling: str = "exact", random_state=None,
                       n_jobs=None, eta="auto", mu=None, name=None, ax=None,
                       log_scale: bool = True, **kwargs):
        """Audit ``estimator`` with :class:`~skmip.audit.scoring.MIAttackScorer` and plot the ROC.

        Parameters
        ----------
        estimator : estimator instance, fitted MIAttackScorer or FittedAudit
            The training algorithm to audit on ``(X, y)``; a fitted
            :class:`~skmip.audit.scoring.MIAttackScorer` or the result of
            :func:`~skmip.audit.fitted.audit_fitted` is plotted as it is (``X``, ``y`` unused).
        X, y : array-like
            The audit pool.
        attack, n_models, member_rate, sampling, random_state, n_jobs
            As in :class:`~skmip.audit.scoring.MIAttackScorer`.
        eta : float, "auto" or None, default="auto"
            ``"auto"`` draws the eta-MIP line when the audited estimator states one.
        mu : float, default=None
            A mu-GMIP curve to draw.
        name : str, default=None
            Legend label (default: the attack).
        ax, log_scale, **kwargs
            As in :meth:`plot`.

        Returns
        -------
        MIAttackDisplay
        """
        from skmip.audit.scoring import MIAttackScorer

        if hasattr(estimator, "scores_") and hasattr(estimator, "membership_"):  # a fitted audit
            audit = estimator
        else:
            audit = MIAttackScorer(
                estimator, attack=attack, n_models=n_models, member_rate=member_rate,
                sampling=sampling, random_state=random_state, n_jobs=n_jobs,
            ).fit(X, y)
        if isinstance(eta, str):
            if eta != "auto":
                raise ValueError(f"MIAttackDisplay: eta must be a float, 'auto' or None; got {eta!r}.")
            check = audit.bound_check_
            eta = audit.bound_ if check is not None and check.kind == "mip" else None
        label = name if name is not None else (audit.attack if isinstance(audit.attack, str) else repr(audit.attack_))
        return cls.from_predictions(audit.membership_, audit.scores_, eta=eta, mu=mu, name=label,
                                    ax=ax, log_scale=log_scale, **kwargs)


class PrivacyUtilityDisplay:
    """Leakage against utility for the candidates of a hyper-parameter search.

    Parameters
    ----------
    privacy : ndarray
        Measured leakage per candidate (larger = more leakage), e.g. the attack AUC.
    utility : ndarray
        Utility per candidate (larger = better), e.g. accuracy.
    params : ndarray, default=None
        The hyper-parameter value of each candidate, used to annotate the points.
    privacy_std, utility_std : ndarray, default=None
        Error bars (standard deviation over CV folds).
    privacy_label, utility_label : str
        Axis labels.
    name : str, default=None
        Legend label.

    Attributes
    ----------
    line_ : matplotlib Line2D
    errorbar_ : matplotlib ErrorbarContainer or None
    ax_ : matplotlib Axes
    figure_ : matplotlib Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> cv_results = {"param_eta": np.array([0.05, 0.2]), "mean_test_mi": np.array([-0.51, -0.6]),
    ...               "std_test_mi": np.array([0.01, 0.02]), "mean_test_accuracy": np.array([0.7, 0.9]),
    ...               "std_test_accuracy": np.array([0.03, 0.01])}
    >>> disp = PrivacyUtilityDisplay.from_cv_results(cv_results, privacy="mi", utility="accuracy")
    >>> disp.privacy.tolist(), disp.params.tolist()
    ([0.51, 0.6], [0.05, 0.2])
    """

    def __init__(self, *, privacy, utility, params=None, privacy_std=None, utility_std=None,
                 privacy_label="membership-inference leakage", utility_label="utility", name=None):
        self.privacy = privacy
        self.utility = utility
        self.params = params
        self.privacy_std = privacy_std
        self.utility_std = utility_std
        self.privacy_label = privacy_label
        self.utility_label = utility_label
        self.name = name

    def plot(self, ax=None, *, name=None, annotate: bool = True, **kwargs):
        """Draw utility (y) against leakage (x), one point per candidate.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
        name : str, default=None
            Legend label.
        annotate : bool, default=True
            Write each candidate's parameter value beside its point.
        **kwargs
            Passed to ``ax.plot``.

        Returns
        -------
        self : PrivacyUtilityDisplay
        """
        ax, fig = _axes(ax)
        x = np.asarray(self.privacy, dtype=np.float64)
        yv = np.asarray(self.utility, dtype=np.float64)
        order = np.argsort(x)
        label = name if name is not None else self.name
        kwargs.setdefault("marker", "o")
        (self.line_,) = ax.plot(x[order], yv[order], label=label, **kwargs)
        self.errorbar_ = None
        if self.privacy_std is not None or self.utility_std is not None:
            self.errorbar_ = ax.errorbar(
                x, yv, xerr=self.privacy_std, yerr=self.utility_std, fmt="none",
                ecolor=self.line_.get_color(), alpha=0.5,
            )
        if annotate and self.params is not None:
            for xi, yi, p in zip(x, yv, np.asarray(self.params, dtype=object), strict=True):
                ax.annotate(f"{p}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel(self.privacy_label)
        ax.set_ylabel(self.utility_label)
        if label is not None:
            ax.legend(loc="lower right")
        self.ax_, self.figure_ = ax, fig
        return self

    @classmethod
    def from_cv_results(cls, cv_results, *, privacy: str = "mi", utility: str = "accuracy",
                        param: str | None = None, negate_privacy: bool = True, ax=None,
                        name=None, **kwargs):
        """Read a multi-metric ``cv_results_`` and plot leakage against utility.

        Parameters
        ----------
        cv_results : dict
            ``GridSearchCV(..., scoring={utility: ..., privacy: mi_scorer}).cv_results_``.
        privacy : str, default="mi"
            Scoring key of the membership-inference scorer (``mean_test_<privacy>``).
        utility : str, default="accuracy"
            Scoring key of the utility metric.
        param : str, default=None
            Hyper-parameter to annotate (``"eta"`` reads ``param_eta``); with one searched
            parameter it is found automatically.
        negate_privacy : bool, default=True
            skmip's scorers return the leakage negated (greater is better); plot the leakage.
        ax, name, **kwargs
            As in :meth:`plot`.

        Returns
        -------
        PrivacyUtilityDisplay

        Raises
        ------
        KeyError
            If a ``mean_test_*`` column is missing, naming the keys that exist.
        """
        def column(key):
            if key not in cv_results:
                have = sorted(k for k in cv_results if k.startswith("mean_test_"))
                raise KeyError(f"PrivacyUtilityDisplay: cv_results has no {key!r}; it has {have}.")
            return np.asarray(cv_results[key], dtype=np.float64)

        sign = -1.0 if negate_privacy else 1.0
        priv = sign * column(f"mean_test_{privacy}")
        util = column(f"mean_test_{utility}")
        priv_std = np.asarray(cv_results[f"std_test_{privacy}"]) if f"std_test_{privacy}" in cv_results else None
        util_std = np.asarray(cv_results[f"std_test_{utility}"]) if f"std_test_{utility}" in cv_results else None
        if param is None:
            keys = [k for k in cv_results if k.startswith("param_")]
            param_values = np.asarray(cv_results[keys[0]]) if len(keys) == 1 else None
            param_name = keys[0][len("param_"):] if len(keys) == 1 else None
        else:
            key = param if param.startswith("param_") else f"param_{param}"
            if key not in cv_results:
                raise KeyError(f"PrivacyUtilityDisplay: cv_results has no {key!r}.")
            param_values, param_name = np.asarray(cv_results[key]), key[len("param_"):]
        disp = cls(
            privacy=priv, utility=util, params=param_values, privacy_std=priv_std, utility_std=util_std,
            privacy_label=f"membership-inference leakage ({privacy})", utility_label=utility,
            name=name if name is not None else param_name,
        )
        return disp.plot(ax=ax, **kwargs)
