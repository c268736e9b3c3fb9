"""Membership attacks on synthetic data: density ratio (DOMIAS), closest record, noisy marginals.

A synthesizer is audited like a model (:class:`skmip.audit.synth_audit.SynthesizerAuditor`): it is
fitted on random halves of a pool D, and each attack scores every record of D against each
fitted synthesizer -- larger meaning "member". The attacks know D (Definition 1 of Izzo et
al.: the attacker holds the data, the algorithm and the noise law) and see only the release:
synthetic records, or for marginal synthesizers the released noisy tables.

========================  ===================================================  ==========================
alias                     attack                                               reference
========================  ===================================================  ==========================
``"density_ratio"``       :class:`DensityRatioAttack`: log p_synth(x) - log    van Breugel et al. 2023
                          p_ref(x), product-kernel KDEs (alias ``"domias"``)   (DOMIAS)
``"closest_record"``      :class:`ClosestRecordAttack`: minus the distance     e.g. Chen et al. 2020
                          to the closest synthetic record (alias ``"dcr"``)    (GAN-Leaks); TAPAS
``"marginal_likelihood"`` :class:`MarginalLikelihoodAttack`: likelihood ratio  Houssiau et al. 2022
                          of the noisy marginal tables, target in vs out       (TAPAS threat model)
========================  ===================================================  ==========================

Records are compared in one encoding fitted on D (a function of D only, public under
Definition 1): numeric columns standardised, every other column categorical with D's
categories (:class:`RecordEncoder`).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp

from skmip.utils.validation import check_interval

__all__ = [
    "RecordEncoder",
    "closest_record_distance",
    "closest_record_signal",
    "kde_log_density",
    "select_kde_bandwidth",
    "DensityRatioAttack",
    "ClosestRecordAttack",
    "MarginalLikelihoodAttack",
    "get_synthetic_attack",
    "SYNTHETIC_ATTACKS",
]

#: Finite stand-ins for "certainly a member / certainly not" (the metrics need finite scores).
CERTAIN = 1e300
#: Rows x synthetic records per block of a distance computation (memory ~ 8 bytes each).
_BLOCK = 2**22


# ----------------------------------------------------------------------------- encoding
def _numeric_column(col):
    try:
        values = np.asarray(col, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return values if np.all(np.isfinite(values)) else None


class RecordEncoder:
    """One encoding of records, fitted on the pool D: numeric columns and categorical codes.

    A column is numeric when every value of D converts to a finite float; it is then
    standardised with D's mean and standard deviation. Any other column is categorical
    with the sorted distinct values of D as its categories (code ``-1`` for a value D does
    not hold, e.g. a synthetic value). Both are functions of D only.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_columns)
        The pool D.

    Attributes
    ----------
    numeric : ndarray of int
        Indices of the numeric columns.
    categorical : ndarray of int
        Indices of the categorical columns.
    categories : list of ndarray
        Categories of each categorical column.

    Examples
    --------
    >>> enc = RecordEncoder(np.array([[1.0, "a"], [3.0, "b"]], dtype=object))
    >>> enc.transform(np.array([[2.0, "b"]], dtype=object))
    (array([[0.]]), array([[1]]))
    """

    def __init__(self, X: ArrayLike):
        X = np.asarray(X, dtype=object) if not isinstance(X, np.ndarray) else X
        if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
            raise ValueError(f"RecordEncoder: X must be a 2-D array with at least 2 rows; got shape {X.shape}.")
        numeric, categorical, self.mean, self.scale, self.categories = [], [], [], [], []
        for j in range(X.shape[1]):
            values = _numeric_column(X[:, j])
            if values is not None:
                numeric.append(j)
                self.mean.append(values.mean())
                sd = values.std()
                self.scale.append(sd if sd > 0 else 1.0)
            else:
                categorical.append(j)
                self.categories.append(np.unique(X[:, j].astype(str)))
        self.numeric = np.array(numeric, dtype=np.int64)
        self.categorical = np.array(categorical, dtype=np.int64)
        self.mean, self.scale = np.array(self.mean), np.array(self.scale)

    def transform(self, X: ArrayLike):
        """``(standardised numeric block (n, p), categorical codes (n, q))``; unknown values -> -1."""
        X = np.asarray(X)
        num = np.empty((X.shape[0], self.numeric.size))
        for i, j in enumerate(self.numeric):
            values = _numeric_column(X[:, j])
            if values is None:
                raise ValueError(
                    f"RecordEncoder: column {j} is numeric in D but the records to encode hold "
                    "non-numeric or non-finite values there; encode records of the same table."
                )
            num[:, i] = (values - self.mean[i]) / self.scale[i]
        codes = np.empty((X.shape[0], self.categorical.size), dtype=np.int64)
        for i, (j, cats) in enumerate(zip(self.categorical, self.categories)):
            col = X[:, j].astype(str)
            pos = np.minimum(np.searchsorted(cats, col), cats.size - 1)
            codes[:, i] = np.where(cats[pos] == col, pos, -1)
        return num, codes

    def one_hot(self, codes, weights=None):
        """Codes -> one-hot block (a code of -1 is the zero vector), optionally weighted per column."""
        sizes = [c.size for c in self.categories]
        out = np.zeros((codes.shape[0], int(sum(sizes))))
        start = 0
        for i, size in enumerate(sizes):
            ok = codes[:, i] >= 0
            out[np.flatnonzero(ok), start + codes[ok, i]] = 1.0 if weights is None else weights[i]
            start += size
        return out

    def embed(self, X):
        """Records as points of R^d: standardised numbers, one-hot categories scaled by 1/sqrt(2)
        (two different categories are at distance 1, the numbers' unit)."""
        num, codes = self.transform(X)
        return np.hstack([num, self.one_hot(codes) / math.sqrt(2.0)])


# ----------------------------------------------------------------------------- closest record
def closest_record_distance(X: ArrayLike, synthetic: ArrayLike) -> np.ndarray:
    """Euclidean distance from each row of ``X`` to its nearest row of ``synthetic``.

    Computed in blocks of rows (memory O(block), not O(n_rows x n_synthetic)).

    Parameters
    ----------
    X : array-like of shape (n_rows, d)
    synthetic : array-like of shape (n_synthetic, d)

    Returns
    -------
    ndarray of shape (n_rows,)

    Examples
    --------
    >>> closest_record_distance([[0.0, 0.0], [3.0, 4.0]], [[0.0, 0.0]]).tolist()
    [0.0, 5.0]
    """
    X = np.asarray(X, dtype=np.float64)
    S = np.asarray(synthetic, dtype=np.float64)
    s2 = np.sum(S**2, axis=1)
    out = np.empty(X.shape[0])
    step = max(1, _BLOCK // max(1, S.shape[0]))
    for a in range(0, X.shape[0], step):
        B = X[a:a + step]
        sq = np.sum(B**2, axis=1)[:, None] - 2 * B @ S.T + s2[None, :]
        out[a:a + step] = np.sqrt(np.maximum(sq.min(axis=1), 0.0))
    return out


def closest_record_signal(model, X: ArrayLike, y=None, *, n_samples: int = 1000, random_state=0) -> np.ndarray:
    """Distance-to-closest-record attack on a synthesizer: minus each row's distance to the
    nearest of ``n_samples`` synthetic records (larger = more likely a training record).

    Pass it as ``output=`` to :func:`skmip.audit.game.play_membership_game` (with
    ``functools.partial`` to change ``n_samples``). Any fitted object with
    ``sample(n_samples, random_state=...)`` works. Distances are Euclidean on the raw
    (numeric) columns; :class:`ClosestRecordAttack` is the same attack on the encoding of
    :class:`RecordEncoder` (mixed and categorical columns).

    Parameters
    ----------
    model : fitted synthesizer
    X : array-like of shape (n_rows, n_features)
        The records to score.
    y : ignored
    n_samples : int, default=1000
        Synthetic records drawn from ``model``.
    random_state : int, default=0
        Seed of the draw (post-processing of the release: fixing it costs no privacy).

    Returns
    -------
    ndarray of shape (n_rows,)

    Examples
    --------
    >>> from skmip.audit.synth_audit import CopyingSynthesizer
    >>> X = np.array([[0.0, 0.0], [3.0, 4.0]])
    >>> closest_record_signal(CopyingSynthesizer().fit(X[:1]), X, n_samples=5).tolist()
    [-0.0, -5.0]
    """
    synthetic = np.asarray(model.sample(n_samples, random_state=random_state), dtype=np.float64)
    return -closest_record_distance(X, synthetic)


# ----------------------------------------------------------------------------- densities
def _log_kernel_matrix(num_a, onehot_a, num_b, onehot_b, h, log_diff, log_gain):
    """log K(a_i, b_j) of the product kernel for blocks a, b (see :func:`kde_log_density`)."""
    out = np.full((num_a.shape[0], num_b.shape[0]), log_diff)
    if num_a.shape[1]:
        sq = np.sum(num_a**2, 1)[:, None] - 2 * num_a @ num_b.T + np.sum(num_b**2, 1)[None, :]
        out += -0.5 * np.maximum(sq, 0.0) / h**2 - num_a.shape[1] * math.log(math.sqrt(2 * math.pi) * h)
    if onehot_a.shape[1]:
        out += (onehot_a * log_gain) @ onehot_b.T
    return out


def kde_log_density(points, data, encoder: RecordEncoder, *, bandwidth: float = 0.5, smoothing: float = 0.1,
                    leave_one_out: bool = False) -> np.ndarray:
    r"""Log density of ``points`` under a product-kernel KDE of ``data``.

    The kernel is Gaussian with bandwidth ``h`` on the standardised numeric columns and the
    Aitchison-Aitken kernel on each categorical column with ``c`` categories,
    :math:`K(x, y) = 1 - \lambda` if :math:`x = y` and :math:`\lambda/(c - 1)` otherwise
    (a probability over the ``c`` categories), so the estimate is a density with respect to
    Lebesgue measure times counting measure on mixed data (Li & Racine 2003).

    Parameters
    ----------
    points, data : array-like of shape (n, n_columns)
        Records of the table ``encoder`` was fitted on.
    encoder : RecordEncoder
    bandwidth : float, default=0.5
        ``h`` (in standard deviations).
    smoothing : float, default=0.1
        ``lambda`` in (0, 1).
    leave_one_out : bool, default=False
        ``points`` is ``data`` and each point's own kernel is left out (for bandwidth selection).

    Returns
    -------
    ndarray of shape (n_points,)

    References
    ----------
    J. Aitchison, C. Aitken (1976), Biometrika 63(3). Q. Li, J. Racine (2003), "Nonparametric
    estimation of distributions with categorical and continuous data", J. Multivariate Anal. 86.
    """
    num_p, codes_p = encoder.transform(points)
    num_d, codes_d = encoder.transform(data)
    sizes = np.array([c.size for c in encoder.categories], dtype=np.float64)
    multi = sizes > 1
    # log K = sum_j log(lambda/(c_j-1)) + sum_j [x_j = y_j] log((1-lambda)(c_j-1)/lambda);
    # one-category columns carry no information (K = 1).
    log_diff = float(np.sum(np.log(smoothing / (sizes[multi] - 1)))) if multi.any() else 0.0
    gain = np.where(multi, np.log((1 - smoothing) * np.maximum(sizes - 1, 1) / smoothing), 0.0)
    oh_p, oh_d = encoder.one_hot(codes_p, gain), encoder.one_hot(codes_d)
    out = np.empty(num_p.shape[0])
    step = max(1, _BLOCK // max(1, num_d.shape[0]))
    for a in range(0, num_p.shape[0], step):
        L = _log_kernel_matrix(num_p[a:a + step], oh_p[a:a + step], num_d, oh_d, bandwidth, log_diff, 1.0)
        if leave_one_out:
            L[np.arange(L.shape[0]), np.arange(a, a + L.shape[0])] = -np.inf
        out[a:a + step] = logsumexp(L, axis=1)
    return out - math.log(num_d.shape[0] - (1 if leave_one_out else 0))


_BANDWIDTHS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5)
_SMOOTHINGS = (0.01, 0.03, 0.1, 0.2, 0.35, 0.5)


def select_kde_bandwidth(reference, encoder: RecordEncoder, *, max_rows: int = 1000, random_state=0):
    """``(bandwidth, smoothing)`` maximising the leave-one-out log-likelihood of ``reference``.

    Likelihood cross-validation (Duin 1976; Li & Racine 2003 for mixed data) over a fixed
    grid, on at most ``max_rows`` rows drawn with ``random_state``. A function of the
    reference data only.

    Returns
    -------
    (float, float)
    """
    reference = np.asarray(reference)
    if reference.shape[0] > max_rows:
        rows = np.random.default_rng(random_state).choice(reference.shape[0], max_rows, replace=False)
        reference = reference[np.sort(rows)]
    hs = _BANDWIDTHS if encoder.numeric.size else (1.0,)
    lams = _SMOOTHINGS if encoder.categorical.size else (0.1,)
    best, arg = -np.inf, (hs[0], lams[0])
    for h in hs:
        for lam in lams:
            ll = kde_log_density(reference, reference, encoder, bandwidth=h, smoothing=lam,
                                 leave_one_out=True).sum()
            if ll > best:
                best, arg = ll, (h, lam)
    return arg


# ----------------------------------------------------------------------------- attacks
class SyntheticAttack:
    """Base of the synthetic-data attacks.

    ``prepare(X, X_reference, encoder)`` computes, once, what the attacker derives from the
    public data (D and the reference records) and returns it; ``score(synthesizer, synthetic,
    X, state)`` scores every row of D against one fitted synthesizer and its synthetic
    records (larger = member); ``applies(synthesizer)`` says whether the attack can run.
    """

    name = ""

    def applies(self, synthesizer) -> bool:
        return True

    def prepare(self, X, X_reference, encoder):
        return None

    def score(self, synthesizer, synthetic, X, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class ClosestRecordAttack(SyntheticAttack):
    """Distance to the closest synthetic record (DCR): score = minus that distance.

    Distances are Euclidean in the embedding of :meth:`RecordEncoder.embed` (standardised
    numbers; a differing category counts 1). A synthesizer that copies records puts every
    sampled member at distance 0.

    Records at the same distance are ordered by how isolated they are in D (the distance to
    their nearest *other* record of D, larger first), with a weight below half the smallest
    gap between distinct distances, so every strict order of the plain DCR is kept. On
    categorical data many records share a distance (0 for every copied one); a copied
    record with no twin in D can only be there because it was a member, while one with a
    twin may be a copy of the twin.

    Examples
    --------
    >>> ClosestRecordAttack()
    ClosestRecordAttack()
    """

    name = "closest_record"

    def prepare(self, X, X_reference, encoder):
        Z = encoder.embed(X)
        # Distance of each record to its nearest other record of D (a function of D only).
        isolation = np.empty(Z.shape[0])
        z2 = np.sum(Z**2, axis=1)
        step = max(1, _BLOCK // max(1, Z.shape[0]))
        for a in range(0, Z.shape[0], step):
            sq = z2[a:a + step, None] - 2 * Z[a:a + step] @ Z.T + z2[None, :]
            sq[np.arange(sq.shape[0]), np.arange(a, a + sq.shape[0])] = np.inf
            isolation[a:a + step] = np.sqrt(np.maximum(sq.min(axis=1), 0.0))
        ranks = np.argsort(np.argsort(isolation, kind="stable"), kind="stable")
        return {"encoder": encoder, "embedded": Z, "tie": ranks / max(1, Z.shape[0])}

    def score(self, synthesizer, synthetic, X, state):
        distance = closest_record_distance(state["embedded"], state["encoder"].embed(synthetic))
        # Distances computed from squared norms carry rounding errors of ~1e-7: gaps below
        # that are ties.
        values = np.unique(np.round(distance, 7))
        gap = float(np.min(np.diff(values))) if values.size > 1 else 1.0
        return -np.round(distance, 7) + 0.5 * gap * state["tie"]


class DensityRatioAttack(SyntheticAttack):
    r"""DOMIAS: the ratio of the synthetic data's density to the population's at each record.

    Score :math:`\log \hat p_{synth}(x) - \log \hat p_{ref}(x)`, both kernel density estimates
    (:func:`kde_log_density`) with the same kernel, :math:`\hat p_{ref}` on reference records
    from the population (the pool D itself when no reference is given; every record of D is
    in it whether a member or not, so the reference treats both alike). A synthesizer that
    overfits its training records raises the synthetic density at them above the
    population's: the ratio, not the synthetic density alone, separates a member from a
    record that is merely typical.

    Parameters
    ----------
    bandwidth : "cv" or (float, float), default="cv"
        ``(h, lambda)`` of the kernel; ``"cv"`` chooses them by leave-one-out likelihood on
        the reference records (:func:`select_kde_bandwidth`).

    Notes
    -----
    Van Breugel et al. estimate both densities with normalising flows or Gaussian KDE; for
    tabular records with categorical columns a Gaussian kernel on one-hot vectors is not a
    density of the records (they lie on a finite set), so the categorical part uses the
    Aitchison-Aitken kernel, whose cross-validated smoothing adapts to how many records
    share a category pattern.

    References
    ----------
    B. van Breugel, H. Sun, Z. Qian, M. van der Schaar, "Membership inference attacks against
    synthetic data through overfitting detection", AISTATS 2023 (DOMIAS), Eq. (2).

    Examples
    --------
    >>> DensityRatioAttack()
    DensityRatioAttack(bandwidth='cv')
    """

    name = "density_ratio"

    def __init__(self, bandwidth="cv"):
        self.bandwidth = bandwidth

    def __repr__(self):
        return f"DensityRatioAttack(bandwidth={self.bandwidth!r})"

    def prepare(self, X, X_reference, encoder):
        reference = X if X_reference is None else X_reference
        if isinstance(self.bandwidth, str):
            if self.bandwidth != "cv":
                raise ValueError(
                    f"DensityRatioAttack: bandwidth must be 'cv' or a pair (h, lambda); got {self.bandwidth!r}."
                )
            h, lam = select_kde_bandwidth(reference, encoder)
        else:
            h, lam = self.bandwidth
            check_interval("DensityRatioAttack", "bandwidth h", h, 0, None, closed="neither")
            check_interval("DensityRatioAttack", "bandwidth lambda", lam, 0, 1, closed="neither")
        log_ref = kde_log_density(X, reference, encoder, bandwidth=h, smoothing=lam)
        return {"encoder": encoder, "h": h, "lam": lam, "log_ref": log_ref}

    def score(self, synthesizer, synthetic, X, state):
        log_syn = kde_log_density(X, synthetic, state["encoder"], bandwidth=state["h"], smoothing=state["lam"])
        return log_syn - state["log_ref"]


def _noise_law(synthesizer):
    """("gaussian" | "laplace", standard deviation per cell fraction) of a marginal synthesizer."""
    sd = float(synthesizer.noise_scale_)
    laplace = getattr(synthesizer, "delta", None) == 0 and hasattr(synthesizer, "epsilon")
    return ("laplace" if laplace else "gaussian"), sd


def _log_noise(residual, law, sd):
    """Log density of the noise at ``residual`` (..., cells), summed over cells."""
    if sd == 0:
        return np.where(np.all(residual == 0, axis=-1), 0.0, -np.inf)
    if law == "laplace":
        b = sd / math.sqrt(2.0)
        return -np.sum(np.abs(residual), axis=-1) / b - residual.shape[-1] * math.log(2 * b)
    return -0.5 * np.sum(residual**2, axis=-1) / sd**2 - residual.shape[-1] * math.log(math.sqrt(2 * math.pi) * sd)


class MarginalLikelihoodAttack(SyntheticAttack):
    r"""Likelihood ratio of the released noisy marginal tables, target in D_train vs out.

    For a marginal synthesizer (:class:`~skmip.MIPMarginalSynthesizer`,
    :class:`~skmip.DPMarginalSynthesizer`) the mechanism releases
    :math:`v = f(S) + \xi`, :math:`f(S)` the cell fractions of the tables on the training
    set :math:`S` (a uniform half of D, Definition 1) and :math:`\xi` Gaussian (or Laplace)
    noise of the released scale. The attack reads ``noisy_tables_`` (the mechanism's
    output; ``tables_`` is its post-processing, so no attack on it does better) and scores
    :math:`\log P(v \mid x^* \in S) - \log P(v \mid x^* \notin S)`:

    * **exact** when D's halves can be enumerated (at most 20,000,
      :func:`skmip.audit.attacks.exact_audit.enumerate_subsets`): the average of the noise density
      over every half containing / not containing :math:`x^*` -- the Bayes-optimal attacker
      of Izzo et al.'s Proposition 2 for this release;
    * otherwise with the sampling law of the other members approximated by a Gaussian
      (without-replacement covariance of the cell indicators over D), the noise by a
      Gaussian of its variance, and one covariance for "in" and "out": the log-ratio is then
      :math:`\delta^\top A (v - \mu_{out}) - \tfrac12 \delta^\top A \delta` with
      :math:`\delta = \mu_{in} - \mu_{out} = (\phi(x^*) - \bar\phi_{-x^*})/k` and
      :math:`A = (a C + s^2 I)^{-1}`.

    A record whose value of a column is missing from a synthesizer's ``categories_`` while
    that synthesizer listed its training set's categories (``train_size=1.0``) is certainly
    not a member, and the only record of D holding a listed value certainly is one; they get
    the lowest and the highest score (the leak that makes that mode promise nothing).

    Parameters
    ----------
    exact : {"auto", True, False}, default="auto"
        ``"auto"``: exact when the halves of D can be enumerated, else the Gaussian
        approximation. ``True`` raises if they cannot.

    Notes
    -----
    The released structure (``marginals_``) and noise scale are taken as given; a structure
    chosen from the training set (``marginals="tree"`` with ``train_size=1.0``) also carries
    information, which this attack does not use, so it is not optimal in that case.

    References
    ----------
    Izzo et al., Definition 1 and Proposition 2. F. Houssiau, J. Jordon, S. N. Cohen, O. Daniel,
    A. Elliott, J. Geddes, C. Mole, C. Rangel-Smith, L. Szpruch, "TAPAS: a toolbox for
    adversarial privacy auditing of synthetic data", NeurIPS 2022 workshop (threat models
    with auxiliary knowledge of the data).

    Examples
    --------
    >>> MarginalLikelihoodAttack()
    MarginalLikelihoodAttack(exact='auto')
    """

    name = "marginal_likelihood"

    def __init__(self, exact="auto"):
        self.exact = exact

    def __repr__(self):
        return f"MarginalLikelihoodAttack(exact={self.exact!r})"

    def applies(self, synthesizer) -> bool:
        return hasattr(synthesizer, "noisy_tables_") and hasattr(synthesizer, "marginals_")

    def prepare(self, X, X_reference, encoder):
        if self.exact not in ("auto", True, False):
            raise ValueError(f"MarginalLikelihoodAttack: exact must be 'auto', True or False; got {self.exact!r}.")
        from skmip.audit.attacks.exact_audit import _MAX_SUBSETS, enumerate_subsets

        X = np.asarray(X)
        n = X.shape[0]
        k = n // 2
        exact = self.exact is True or (self.exact == "auto" and math.comb(n, k) <= _MAX_SUBSETS)
        halves = None
        if exact:
            subsets = enumerate_subsets(n, k)  # raises, naming the limit, when there are too many
            halves = np.zeros((subsets.shape[0], n), dtype=bool)
            halves[np.arange(subsets.shape[0])[:, None], subsets] = True
        return {"values": X.astype(str), "exact": exact, "halves": halves, "cache": {}}

    # -- per synthesizer
    @staticmethod
    def _cells(synthesizer, values):
        """Per-row cell index of every released table (-1: a value the synthesizer did not list)."""
        cats = [np.asarray(c).astype(str) for c in synthesizer.categories_]
        codes = np.empty(values.shape, dtype=np.int64)
        for j, c in enumerate(cats):
            order = np.argsort(c)
            pos = np.minimum(np.searchsorted(c[order], values[:, j]), c.size - 1)
            found = c[order][pos] == values[:, j]
            codes[:, j] = np.where(found, order[pos], -1)
        cells, offsets, start = [], [], 0
        for m, table in zip(synthesizer.marginals_, synthesizer.noisy_tables_):
            shape = np.asarray(table).shape
            sub = codes[:, list(m)]
            ok = np.all(sub >= 0, axis=1)
            idx = np.full(values.shape[0], -1, dtype=np.int64)
            idx[ok] = np.ravel_multi_index(tuple(sub[ok].T), shape) + start
            cells.append(idx)
            offsets.append(start)
            start += int(np.prod(shape))
        return np.stack(cells, axis=1), start, np.all(codes >= 0, axis=1)

    def score(self, synthesizer, synthetic, X, state):
        values = state["values"]
        n = values.shape[0]
        cells, n_cells, listed = self._cells(synthesizer, values)
        v = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in synthesizer.noisy_tables_])
        k = int(synthesizer.n_train_)
        law, sd = _noise_law(synthesizer)
        given_subset = getattr(synthesizer, "train_size", None) == 1.0
        if state["exact"]:
            scores = self._exact(synthesizer, values, cells, listed, v, n_cells, k, law, sd, state["halves"],
                                 given_subset)
        else:
            scores = self._gaussian(cells, listed, v, n_cells, k, sd, state["cache"])
        if given_subset:
            scores = np.where(listed, scores, -CERTAIN)
            # ... and the only record of D holding a listed value is certainly a member.
            for j, cats in enumerate(synthesizer.categories_):
                held, counts = np.unique(values[:, j], return_counts=True)
                sole = held[counts == 1]
                scores = np.where(np.isin(values[:, j], np.intersect1d(sole, np.asarray(cats).astype(str))),
                                  CERTAIN, scores)
        return scores

    @staticmethod
    def _features(cells, n_cells):
        phi = np.zeros((cells.shape[0], n_cells))
        rows = np.repeat(np.arange(cells.shape[0]), cells.shape[1])
        flat = cells.ravel()
        ok = flat >= 0
        np.add.at(phi, (rows[ok], flat[ok]), 1.0)
        return phi

    def _exact(self, synthesizer, values, cells, listed, v, n_cells, k, law, sd, halves, given_subset):
        phi = self._features(cells, n_cells)
        means = halves @ phi / k                       # f(S) for every half S
        log_p = _log_noise(v[None, :] - means, law, sd)
        if given_subset:
            # categories_ lists exactly the training set's values: a half holding an unlisted
            # value is impossible, and so is one that misses a listed value.
            possible = ~halves[:, ~listed].any(axis=1)
            for j, cats in enumerate(synthesizer.categories_):
                for c in np.asarray(cats).astype(str):
                    possible &= halves[:, values[:, j] == c].any(axis=1)
            log_p = np.where(possible, log_p, -np.inf)
        member = halves.T                              # (n, H)
        with np.errstate(divide="ignore"):
            log_in = logsumexp(np.where(member, log_p[None, :], -np.inf), axis=1)
            log_out = logsumexp(np.where(~member, log_p[None, :], -np.inf), axis=1)
        scores = log_in - log_out
        scores = np.where(np.isnan(scores), 0.0, scores)
        return np.clip(scores, -CERTAIN, CERTAIN)

    @staticmethod
    def _gaussian(cells, listed, v, n_cells, k, sd, cache):
        n = cells.shape[0]
        key = (n_cells, cells.tobytes())
        if key not in cache:
            phi = MarginalLikelihoodAttack._features(cells, n_cells)
            mean = phi.mean(axis=0)
            U = phi - mean
            cov = U.T @ U / n
            lam, V = np.linalg.eigh(cov)
            cache.clear()  # one layout at a time: memory O(cells^2)
            cache[key] = (mean, np.maximum(lam, 0.0), V, U @ V)
        mean, lam, V, UV = cache[key]
        N = n - 1                                      # D without the target
        a = (N - k) / ((N - 1) * k) if N > 1 else 0.0  # Cov f(S) = a C (sampling without replacement)
        inv = 1.0 / (a * lam + max(sd, 1e-300) ** 2)
        r = (v - mean) @ V                             # v - mean of D, in the eigenbasis
        c1 = n / ((n - 1) * k)                         # delta = c1 u, u = phi(x*) - mean of D
        lin = UV @ (inv * r)                           # u' A (v - mean)
        quad = (UV**2) @ inv                           # u' A u
        # v - mu_out = (v - mean) + u / (n - 1)
        return c1 * lin + (c1 / (n - 1)) * quad - 0.5 * c1**2 * quad


SYNTHETIC_ATTACKS = {
    "density_ratio": DensityRatioAttack,
    "domias": DensityRatioAttack,
    "closest_record": ClosestRecordAttack,
    "dcr": ClosestRecordAttack,
    "marginal_likelihood": MarginalLikelihoodAttack,
}


def get_synthetic_attack(attack) -> SyntheticAttack:
    """Resolve an alias of :data:`SYNTHETIC_ATTACKS` or an attack object.

    Examples
    --------
    >>> get_synthetic_attack("dcr")
    ClosestRecordAttack()
    """
    if isinstance(attack, str):
        if attack not in SYNTHETIC_ATTACKS:
            raise ValueError(
                f"get_synthetic_attack: unknown attack {attack!r}; known: {', '.join(sorted(SYNTHETIC_ATTACKS))}."
            )
        return SYNTHETIC_ATTACKS[attack]()
    if isinstance(attack, SyntheticAttack):
        return attack
    raise TypeError(
        "get_synthetic_attack: attack must be an alias "
        f"({', '.join(sorted(SYNTHETIC_ATTACKS))}) or a SyntheticAttack; got {attack!r}."
    )
