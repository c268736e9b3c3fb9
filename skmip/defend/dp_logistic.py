"""DPLogisticRegression: epsilon-differentially private logistic regression without torch.

Objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2) with numpy and
scipy only, so that scikit-learn users have a working DP learner today (diffprivlib 0.6.6
does not import with scikit-learn 1.9) and :class:`skmip.defend.subsampled.SubsampledDPClassifier`
has a default inner estimator.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from skmip.utils.rng import resolve_rng
from skmip.utils.threads import single_threaded_blas
from skmip.utils.validation import check_int, check_interval, input_errors, refuse_dp_sample_weight
from skmip.exceptions import PrivacyWarning, check_privacy_seed

__all__ = ["DPLogisticRegression"]

_OWNER = "DPLogisticRegression"

#: sup |l''(z)| of the logistic loss l(z) = log(1 + e^-z): l'' = sigma(z)(1 - sigma(z)) <= 1/4.
#: Chaudhuri et al. (2011), Corollary 11.
_HESSIAN_BOUND = 0.25

#: The intercept's constant feature and the scaled row share the unit ball: [x, 1] / sqrt(2).
_INTERCEPT_SCALE = 1.0 / np.sqrt(2.0)

#: Newton polishing after L-BFGS: at most this many steps, only up to this many coefficients.
_NEWTON_STEPS = 8
_NEWTON_MAX_DIM = 2000


def _calibrate(epsilon: float, C: float, c: float = _HESSIAN_BOUND) -> tuple[float, float]:
    """Steps 1-2 of Algorithm 2 in the un-normalised parameterisation: ``(eps', Delta)``.

    Chaudhuri et al. minimise ``(1/n) sum l + Lambda/2 ||f||^2 + b.f/n + Delta/2 ||f||^2``. We
    minimise ``n`` times that with ``Lambda = 1/(C n)``, so ``n Lambda = 1/C`` and every
    constant of the algorithm is free of ``n``:

    * ``eps' = eps - log(1 + 2c/(n Lambda) + c^2/(n Lambda)^2) = eps - 2 log(1 + c C)``;
    * if ``eps' <= 0``: ``n Delta = c / (e^{eps/4} - 1) - 1/C`` and ``eps' = eps/2``; else 0.

    Returns ``eps'`` (the noise has density proportional to ``exp(-eps' ||b|| / 2)``) and the
    extra regularisation ``n Delta`` added to ``1/C``.
    """
    eps_prime = epsilon - 2.0 * np.log1p(c * C)
    if eps_prime > 0:
        return float(eps_prime), 0.0
    return float(epsilon / 2.0), float(c / np.expm1(epsilon / 4.0) - 1.0 / C)


def _draw_noise(dim: int, eps_prime: float, rng: np.random.Generator) -> np.ndarray:
    """b with density proportional to ``exp(-(eps'/2) ||b||)`` on R^dim (Algorithm 2, step 3).

    In polar coordinates the density of the radius r is proportional to
    ``r^(dim-1) exp(-(eps'/2) r)``, i.e. ``||b|| ~ Gamma(dim, scale=2/eps')``, independent of
    a uniform direction (a normalised standard normal vector).
    """
    direction = rng.standard_normal(dim)
    direction /= np.linalg.norm(direction)
    return rng.gamma(shape=dim, scale=2.0 / eps_prime) * direction


def _prepare_rows(X: np.ndarray, data_norm: float, fit_intercept: bool) -> np.ndarray:
    """Rows with Euclidean norm <= 1, as Theorem 9 requires (clip to data_norm, then scale)."""
    norms = np.linalg.norm(X, axis=1)
    # Rows longer than data_norm are shrunk onto the sphere of that radius; data_norm is the
    # user's bound, never estimated from X (that would itself leak).
    shrink = np.minimum(1.0, data_norm / np.maximum(norms, np.finfo(float).tiny))
    Z = X * (shrink / data_norm)[:, None]
    if fit_intercept:
        Z = np.hstack([Z, np.ones((Z.shape[0], 1))]) * _INTERCEPT_SCALE
    return Z


def _perturbed_objective(w, Z, s, reg, b):
    """``sum_i log(1 + exp(-s_i z_i.w)) + reg/2 ||w||^2 + b.w`` and its gradient."""
    margin = s * (Z @ w)
    loss = -log_expit(margin).sum() + 0.5 * reg * (w @ w) + b @ w
    grad = -Z.T @ (s * expit(-margin)) + reg * w + b
    return loss, grad


def _stationarity_residual(w, Z, s, reg, b):
    return np.linalg.norm(_perturbed_objective(w, Z, s, reg, b)[1], ord=np.inf)


class DPLogisticRegression(ClassifierMixin, BaseEstimator):
    """Logistic regression with pure epsilon-differential privacy (objective perturbation).

    The model minimises the L2-regularised logistic loss plus a random linear term
    ``b.w``, with ``b`` drawn once per fit (Chaudhuri, Monteleoni & Sarwate 2011,
    Algorithm 2). Binary problems spend the whole budget on one model; ``K > 2`` classes are
    fitted one-vs-rest with ``epsilon / K`` each.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy budget, > 0 and finite. The whole fit is epsilon-DP (see Notes).
    data_norm : float, default=1.0
        Your bound on the Euclidean norm of a row of ``X``. Rows longer than it are shrunk
        to it (clipped) before training; all rows are then divided by it so that they lie
        in the unit ball, as the guarantee requires. It must come from knowledge of the
        domain, not from the private data (the library never computes it from ``X``). Scale
        features beforehand so that typical rows have norm near ``data_norm``.
    C : float, default=1.0
        Inverse regularisation strength, as in :class:`sklearn.linear_model.LogisticRegression`:
        the objective is ``sum_i loss_i + ||w||^2 / (2C)``, i.e. Chaudhuri et al.'s
        ``Lambda = 1 / (C n)``. Larger C means less regularisation and, for a fixed epsilon,
        more noise (see Notes).
    fit_intercept : bool, default=True
        Learn an intercept through a constant feature appended to each (scaled) row; the
        augmented row is divided by ``sqrt(2)`` so its norm stays <= 1. The intercept is
        therefore regularised like the coefficients.
    classes : array-like, default=None
        The set of class labels, if known in advance. ``None`` takes the labels present in
        ``y``, which releases which labels occur in the private data (not covered by the
        guarantee) and emits a :class:`~skmip.exceptions.PrivacyWarning`.
    tol : float, default=1e-10
        Required max-norm of the gradient of the perturbed objective divided by ``n`` at the
        returned coefficients. L-BFGS is followed by Newton steps on the exact Hessian (up
        to 2000 coefficients) to reach it. The guarantee assumes the exact minimiser (Notes).
    max_iter : int, default=1000
        Maximum L-BFGS iterations per binary model.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of the noise ``b``. ``None`` draws fresh OS entropy, the only setting under
        which the noise is secret; a fixed value emits a
        :class:`~skmip.exceptions.PrivacyWarning`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Coefficients on the original (unscaled) features.
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts (zeros when ``fit_intercept=False``).
    epsilon_per_model_ : float
        Budget of each binary model: ``epsilon`` (binary) or ``epsilon / n_classes``.
    noise_epsilon_ : float
        ``eps'`` of Algorithm 2: ``b`` has density proportional to ``exp(-eps' ||b|| / 2)``,
        so ``||b|| ~ Gamma(d, 2/eps')`` with ``d`` the number of coefficients per model.
    extra_regularization_ : float
        ``n Delta`` of Algorithm 2, added to ``1/C`` when ``1/C`` alone is too weak for the
        budget (0 otherwise).
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of str
        Feature names, when ``X`` has them.

    Notes
    -----
    **Mechanism** (Algorithm 2, objective perturbation, with ``n Lambda = 1/C`` and
    ``c = 1/4``, the bound on the logistic loss' second derivative, Corollary 11):

    1. ``eps' = eps - log(1 + 2c/(n Lambda) + c^2/(n Lambda)^2) = eps - 2 log(1 + cC)``;
    2. if ``eps' <= 0``: add ``n Delta = c/(e^{eps/4} - 1) - 1/C`` to the regularisation and
       set ``eps' = eps/2``;
    3. draw ``b`` with density proportional to ``exp(-(eps'/2) ||b||)``: a uniform direction
       times a ``Gamma(d, 2/eps')`` radius;
    4. return ``argmin_w  sum_i log(1 + exp(-y_i w.x_i)) + (1/C + n Delta)/2 ||w||^2 + b.w``.

    **Assumptions of Theorem 9** and how they are met: rows ``||x_i|| <= 1`` (clipping to
    ``data_norm`` and scaling, plus ``1/sqrt(2)`` with the intercept feature); labels in
    {-1, +1} (each binary model codes its class +1); loss convex, twice differentiable,
    ``|l'| <= 1``, ``|l''| <= 1/4``; regulariser ``||w||^2 / 2``, 1-strongly convex
    (the intercept is regularised too); and the **exact** minimiser. L-BFGS and Newton
    polishing reach a gradient of ``tol`` (1e-10 by default, typically 1e-15); a fit that
    stops short emits a ``ConvergenceWarning``, since the guarantee is then approximate.

    **Neighbouring datasets.** Theorem 9 proves epsilon-DP for datasets of equal size
    differing in one record (replace-one). Because ``n Lambda = 1/C`` is fixed, nothing in
    the mechanism depends on ``n``, and the same change-of-variables argument covers adding
    or removing one record, which Thudi et al.'s Theorem 3.3 (and so
    :class:`~skmip.defend.subsampled.SubsampledDPClassifier`) needs: the output ``w`` determines
    ``b = -sum_i grad l_i(w) - (1/C + n Delta) w``; adding a record shifts ``b`` by one
    gradient (norm <= 1, against 2 for a replacement) and the Jacobian by a rank-one term
    (determinant ratio <= ``1 + c/(1/C + n Delta)``). The log density ratio is then at most
    ``eps'/2 + log(1 + c/(1/C + n Delta))``, which in both branches of step 2 equals
    ``eps/2``. We keep the replace-one calibration, so ``epsilon`` is a valid (conservative
    by a factor 2) add/remove budget.

    **Multiclass.** One-vs-rest with ``epsilon/K`` per class model: every model reads every
    record, so the budgets add up (sequential composition) to ``epsilon``.

    **Not covered**: which labels occur (pass ``classes``), any preprocessing fitted on the
    private data (a ``StandardScaler`` fitted on it leaks its mean and scale), and a seeded
    ``random_state``. ``predict`` applies the released linear model to raw rows (no
    clipping), which is post-processing.

    References
    ----------
    Chaudhuri, K., Monteleoni, C., Sarwate, A. D. "Differentially Private Empirical Risk
    Minimization". JMLR 12 (2011) 1069-1109: Algorithm 2, Theorem 9, Corollary 11.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = (X - X.mean(0)) / X.std(0)  # stand-in for a public scaling; see Notes
    >>> clf = DPLogisticRegression(epsilon=1.0, data_norm=5.0, classes=[0, 1]).fit(X, y)
    >>> clf.coef_.shape, clf.epsilon_per_model_
    ((1, 30), 1.0)
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        *,
        data_norm: float = 1.0,
        C: float = 1.0,
        fit_intercept: bool = True,
        classes: ArrayLike | None = None,
        tol: float = 1e-10,
        max_iter: int = 1000,
        random_state=None,
    ):
        self.epsilon = epsilon
        self.data_norm = data_norm
        self.C = C
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    def _validate_hyperparameters(self):
        check_interval(_OWNER, "epsilon", self.epsilon, 0, np.inf, closed="neither",
                       why="epsilon is the privacy budget; it must be positive and finite.")
        check_interval(_OWNER, "data_norm", self.data_norm, 0, np.inf, closed="neither",
                       why="it is your bound on a row's Euclidean norm, set from domain knowledge.")
        check_interval(_OWNER, "C", self.C, 0, np.inf, closed="neither",
                       why="C is the inverse regularisation strength; objective perturbation needs "
                       "a strongly convex objective, hence a finite C.")
        if not isinstance(self.fit_intercept, (bool, np.bool_)):
            raise TypeError(f"{_OWNER}: fit_intercept must be True or False; got {self.fit_intercept!r}.")
        check_interval(_OWNER, "tol", self.tol, 0, np.inf, closed="neither")
        check_int(_OWNER, "max_iter", self.max_iter, 1, None)

    def fit(self, X: ArrayLike, y: ArrayLike, **fit_params):
        """Fit the epsilon-DP model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (dense, finite). Rows with norm above ``data_norm`` are clipped.
        y : array-like of shape (n_samples,)
            Class labels.
        **fit_params
            None accepted; ``sample_weight`` is refused with a ValueError that says why
            (weights change the sensitivity the DP noise is calibrated to).

        Returns
        -------
        self : DPLogisticRegression
            The fitted estimator.

        Raises
        ------
        ValueError
            For an invalid hyper-parameter, fewer than two classes, a label of ``y``
            missing from ``classes``, or ``sample_weight``.
        TypeError
            For another fit parameter.
        """
        refuse_dp_sample_weight(_OWNER, fit_params)
        self._validate_hyperparameters()
        # Validate on a copy: nothing may be recorded on self before the whole fit succeeded.
        probe = copy.copy(self)
        with input_errors(_OWNER):
            X, y = validate_data(probe, X, y, dtype=np.float64, ensure_all_finite=True)
        check_classification_targets(y)
        if self.classes is None:
            classes = np.unique(y)
            warnings.warn(
                f"{_OWNER}: classes=None takes the label set from y, which releases which "
                "labels occur in the private data. Pass classes=[...] (known in advance) to "
                "keep it out of what is released.",
                PrivacyWarning,
                stacklevel=2,
            )
        else:
            classes = np.unique(np.asarray(self.classes))
            unknown = np.setdiff1d(np.unique(y), classes)
            if unknown.size:
                raise ValueError(
                    f"{_OWNER}: y has label(s) {unknown.tolist()} that are not in classes="
                    f"{classes.tolist()}. Pass the full label set as classes."
                )
        if classes.size < 2:
            raise ValueError(
                f"{_OWNER}: needs at least 2 classes to learn a classifier; got "
                f"{classes.size} class ({classes.tolist()}). Pass classes=[...] with the full "
                "label set."
            )
        check_privacy_seed(_OWNER, self.random_state)
        rng = resolve_rng(self.random_state)

        Z = _prepare_rows(X, float(self.data_norm), bool(self.fit_intercept))
        n, dim = Z.shape
        positives = classes[1:] if classes.size == 2 else classes
        n_models = positives.size
        eps_each = float(self.epsilon) / n_models
        eps_prime, extra = _calibrate(eps_each, float(self.C))
        reg = 1.0 / float(self.C) + extra
        # All noise drawn up front, in class order: reproducible for a fixed seed.
        noises = [_draw_noise(dim, eps_prime, rng) for _ in range(n_models)]

        W = np.empty((n_models, dim))
        for k, (label, b) in enumerate(zip(positives, noises)):
            s = np.where(y == label, 1.0, -1.0)
            W[k] = self._solve(Z, s, reg, b)

        scale = _INTERCEPT_SCALE if self.fit_intercept else 1.0
        self.__dict__.pop("feature_names_in_", None)
        if hasattr(probe, "feature_names_in_"):
            self.feature_names_in_ = probe.feature_names_in_
        self.n_features_in_ = probe.n_features_in_
        self.classes_ = classes
        self.coef_ = W[:, : X.shape[1]] * (scale / float(self.data_norm))
        self.intercept_ = W[:, -1] * scale if self.fit_intercept else np.zeros(n_models)
        self.epsilon_per_model_ = eps_each
        self.noise_epsilon_ = eps_prime
        self.extra_regularization_ = extra
        return self

    def _solve(self, Z, s, reg, b):
        """The minimiser of the perturbed objective, to a gradient (divided by n) below ``tol``.

        L-BFGS alone stalls near a gradient of 1e-9: its line search compares objective
        values, whose round-off is about 1e-16. A few Newton steps on the exact Hessian
        (which only use gradients) then reach machine precision; they are skipped above
        ``_NEWTON_MAX_DIM`` coefficients, where the Hessian would be too large.
        """
        n = Z.shape[0]

        def fun(w):
            f, g = _perturbed_objective(w, Z, s, reg, b)
            return f / n, g / n

        with single_threaded_blas():
            res = minimize(
                fun, np.zeros(Z.shape[1]), jac=True, method="L-BFGS-B",
                options={"maxiter": int(self.max_iter), "gtol": float(self.tol), "ftol": 0.0, "maxcor": 30},
            )
            return self._polish(res, Z, s, reg, b)

    def _polish(self, res, Z, s, reg, b):
        """Newton steps from the L-BFGS point until the gradient / n is below ``tol``."""
        n = Z.shape[0]
        w = res.x
        residual = _stationarity_residual(w, Z, s, reg, b) / n
        if residual > self.tol and Z.shape[1] <= _NEWTON_MAX_DIM:
            for _ in range(_NEWTON_STEPS):
                grad = _perturbed_objective(w, Z, s, reg, b)[1]
                p = expit(s * (Z @ w))
                hess = (Z.T * (p * (1.0 - p))) @ Z + reg * np.eye(Z.shape[1])
                candidate = w - np.linalg.solve(hess, grad)
                new_residual = _stationarity_residual(candidate, Z, s, reg, b) / n
                if not new_residual < residual:
                    break
                w, residual = candidate, new_residual
                if residual <= self.tol:
                    break
        if not residual <= self.tol:
            warnings.warn(
                f"{_OWNER}: the optimiser stopped with gradient {residual:.2e} > tol={self.tol:g} "
                f"after {res.nit} L-BFGS iterations. The DP guarantee assumes the exact "
                "minimiser; raise max_iter or tol only knowingly.",
                ConvergenceWarning,
                stacklevel=4,
            )
        return w

    def decision_function(self, X: ArrayLike) -> np.ndarray:
        """Signed distance to the separating hyperplane(s).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes (positive favours ``classes_[1]``),
        else (n_samples, n_classes).
        """
        check_is_fitted(self)
        with input_errors(_OWNER):
            X = validate_data(self, X, reset=False, dtype=np.float64)
        scores = X @ self.coef_.T + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Most likely class of each row."""
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]

    def predict_proba(self, X: ArrayLike) -> np.ndarray:
        """Class probabilities (one-vs-rest sigmoids normalised to sum 1 for K > 2)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        p = expit(scores)
        return p / p.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X: ArrayLike) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = False
        tags.input_tags.allow_nan = False
        return tags
