"""Synthetic tabular data from noisy marginal tables: eta-MIP by the exact coupling bound.

A marginal table counts the training records in each cell of one or two categorical columns.
Divided by the (public) training size k it is a mean of per-row indicator features, so the
closed-form swap engine (:func:`skmip.calibration.swap.marginal_swap_deltas`) gives the coupling
bound exactly and :class:`MIPMarginalSynthesizer` adds the least Gaussian noise that meets
eta. The noisy tables are post-processed into non-negative, mutually consistent tables and
sampled along a forest of 2-way marginals, in the spirit of MST (McKenna et al. 2021).
:class:`DPMarginalSynthesizer` releases the same tables with (epsilon, delta)-DP noise and
the same post-processing and sampler: the baseline at the equal promise.

The choice of tables (:func:`chow_liu_tree`, :func:`select_pairs`) lives in
:mod:`skmip.release.marginal_selection` and the post-processing and sampler in
:mod:`skmip.release.marginal_sampling`; both public functions import from here too.
"""

from __future__ import annotations

import copy
import math

import numpy as np
from numpy.typing import ArrayLike
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted, validate_data

from skmip.exceptions import check_privacy_seed, warn_no_promise_on_given_subset
from skmip.release.marginal_sampling import (
    _CANDIDATES,
    _MIN_CANDIDATES,
    _consistent_tables,
    _draw_codes,
    _fit_weights,
    _round_counts,
    _rounding_marginals,
    _sampling_plan,
    _systematic_resample,
)
from skmip.release.marginal_selection import _check_marginals, _column_index, chow_liu_tree, select_pairs
from skmip.utils.rng import resolve_rng
from skmip.utils.validation import check_eta, check_int, check_interval, input_errors
from skmip.promise import MIPPromiseMixin, Promise, PromiseMixin

__all__ = ["MIPMarginalSynthesizer", "DPMarginalSynthesizer", "chow_liu_tree", "select_pairs"]



# ----------------------------------------------------------------------------- base class
class _MarginalSynthesizer(BaseEstimator):
    """Shared fit/sample: encoding, structure, D_train, counts, post-processing, sampler."""

    _owner = "_MarginalSynthesizer"

    def _structure(self, codes, names, sizes):
        raise NotImplementedError

    def _noise(self, codes, marginals, k_calibration, n_cells, rng):
        """``(noise on the cell fractions, fitted attributes)`` of the mechanism."""
        raise NotImplementedError

    def _encode(self, X):
        """``(categories, codes)``: each column's sorted distinct values in D and the codes."""
        n, n_columns = X.shape
        categories, codes = [], np.empty((n, n_columns), dtype=np.int64)
        for j in range(n_columns):
            # The category lists are a function of D only (Definition 1 conditions on D);
            # they are released so that samples can be decoded.
            cats, codes[:, j] = np.unique(X[:, j], return_inverse=True)
            categories.append(cats)
        return categories, codes

    def _validate_common(self):
        check_interval(
            self._owner, "train_size", self.train_size, 0, 1, closed="right",
            why="it is the fraction of rows drawn into D_train; use 1.0 if your data already "
            "is the random training subset.",
        )

    def fit(self, X: ArrayLike, y=None):
        """Release noisy marginal tables of a random subset of ``X``.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_columns)
            The dataset D: categorical or binned columns (any hashable values; every
            distinct value of a column is a category).
        y : ignored
            Present for scikit-learn compatibility; append the label as a column to
            synthesise it.

        Returns
        -------
        self
        """
        self._validate()
        probe = copy.copy(self)
        with input_errors(self._owner):
            X = validate_data(probe, X, dtype=None, ensure_all_finite=True)
        check_privacy_seed(self._owner, self.random_state)
        n, n_columns = X.shape
        categories, codes = self._encode(X)
        names = getattr(probe, "feature_names_in_", None)
        marginals = self._structure(codes, names, [len(c) for c in categories])
        if self.train_size == 1.0:
            rows_k, k_calibration = n, n // 2  # halves of the given D_train stand in for D
        else:
            rows_k = k_calibration = int(round(self.train_size * n))
        if k_calibration < 1 or k_calibration >= n:
            raise ValueError(
                f"{self._owner}: train_size={self.train_size} of n_samples={n} gives "
                f"k={k_calibration} rows; it needs at least 1 row in D_train and 1 outside. "
                "Pass more rows."
            )
        rng = resolve_rng(self.random_state)
        sizes = [len(c) for c in categories]
        shapes = [tuple(sizes[j] for j in m) for m in marginals]
        n_cells = sum(int(np.prod(s)) for s in shapes)
        noise, attrs = self._noise(codes, marginals, k_calibration, n_cells, rng)
        rows = np.arange(n) if rows_k == n else np.sort(rng.choice(n, size=rows_k, replace=False))
        noisy, start = [], 0
        for m, shape in zip(marginals, shapes):
            cell = np.ravel_multi_index(tuple(codes[rows, j] for j in m), shape)
            size = int(np.prod(shape))
            fractions = np.bincount(cell, minlength=size) / rows_k
            noisy.append((fractions + noise[start:start + size]).reshape(shape))
            start += size
        tables, one_way = _consistent_tables(marginals, noisy, sizes)
        # The noisy tables are the mechanism's output (the coupling bound and the DP
        # calibration are statements about them); tables_ is their post-processing. Kept so
        # that an audit can attack what the guarantee covers (skmip.audit.attacks.synthetic).
        del noise, rows, codes
        fitted = {
            "categories_": categories,
            "marginals_": marginals,
            "noisy_tables_": noisy,
            "tables_": tables,
            "one_way_": one_way,
            "n_train_": int(rows_k),
            "n_features_in_": probe.n_features_in_,
            **attrs,
        }
        if hasattr(probe, "feature_names_in_"):
            fitted["feature_names_in_"] = probe.feature_names_in_
        for name in [k for k in vars(self) if k.endswith("_") and not k.startswith("_")]:
            delattr(self, name)
        self.__dict__.update(fitted)
        return self

    def sample(self, n_samples: int = 1, random_state=None) -> np.ndarray:
        """Draw synthetic records from the released tables.

        The tables are visited in a fixed plan; each draws the columns it introduces from
        its released law conditioned on the columns already drawn (a tree of pairs is
        sampled from a root down its edges; a 1-way table draws its column from the
        consensus 1-way law). When the marginals close cycles (``marginals="select"``, or a
        list with cycles), the plan's model draws ``_CANDIDATES`` times as many candidate
        records, which are weighted so that their marginals fit *every* noisy table in
        least squares (:func:`_fit_weights`, the estimation step of Private-PGM and of
        PrivSyn's GUM, on a sample), ``n_samples`` of them are drawn by systematic
        resampling, and that draw is rounded towards the weighted candidates' 2-way tables
        by exchanging records (:func:`_round_counts`) before being shuffled. The records are
        then exchangeable but not independent: their tables sit closer to the weighted
        candidates' than those of independent draws. Post-processing of the release: a
        fixed seed costs no privacy.

        Parameters
        ----------
        n_samples : int, default=1
        random_state : None, int or Generator, default=None

        Returns
        -------
        ndarray of shape (n_samples, n_columns)
            Values from ``categories_`` (object dtype when the columns' types differ).
        """
        check_is_fitted(self)
        n_samples = check_int(self._owner, "n_samples", n_samples, 1, None)
        rng = resolve_rng(random_state)
        c = len(self.categories_)
        plan, extra = _sampling_plan(self._owner, self.marginals_)
        if extra:
            n_draw = max(_CANDIDATES * n_samples, _MIN_CANDIDATES)
            candidates = self._draw_plan(plan, n_draw, rng)
            weights = _fit_weights(candidates, self.marginals_, self.noisy_tables_)
            drawn = _systematic_resample(candidates, weights, n_samples, rng)
            targets = _rounding_marginals(self.marginals_, len(self.categories_))
            shapes = [tuple(len(self.categories_[j]) for j in m) for m in targets]
            drawn = _round_counts(candidates, weights, drawn, targets, shapes)
            codes = candidates[drawn[rng.permutation(n_samples)]]
        else:
            codes = self._draw_plan(plan, n_samples, rng)
        columns = [self.categories_[j][codes[:, j]] for j in range(c)]
        dtypes = {col.dtype for col in columns}
        out = np.empty((n_samples, c), dtype=dtypes.pop() if len(dtypes) == 1 else object)
        for j, col in enumerate(columns):
            out[:, j] = col
        return out

    def _draw_plan(self, plan, n_samples, rng):
        return _draw_codes(plan, self.marginals_, self.tables_, self.one_way_,
                           [len(c) for c in self.categories_], n_samples, rng)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = True
        return tags

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tables_")


# ----------------------------------------------------------------------------- MIP
class MIPMarginalSynthesizer(MIPPromiseMixin, _MarginalSynthesizer):
    """Synthetic categorical records from marginal tables released with an eta-MIP guarantee.

    ``fit`` draws a random training subset ``D_train`` of ``k`` rows, counts its records in
    every cell of the chosen 1- and 2-way marginals, and releases the cell fractions
    (counts / k) with Gaussian noise ``s z``, ``s`` the smallest scale whose coupling bound
    on the MIP level meets eta -- computed exactly, not estimated. The tables are then
    made non-negative and consistent, and ``sample`` draws records along the tree of
    tables. An attacker holding any record of the data cannot tell whether it was in
    ``D_train`` with accuracy above ``max(k/n, 1-k/n) + eta`` (Definition 1; ``1/2 + eta``
    when ``k = n/2``; :func:`skmip.bounds.mip_promise`), whatever they do with the tables
    or the samples (post-processing, Theorem 3).

    Parameters
    ----------
    eta : float, default=0.1
        Promised bound on the attacker's accuracy advantage over the prior
        ``max(k/n, 1-k/n)`` (Definition 1), in (0, 0.5].
    marginals : "tree", "select" or list, default="tree"
        Which tables to release. ``"tree"``: the 2-way marginals of the Chow-Liu tree
        (:func:`chow_liu_tree`) of the whole dataset D; with a ``label``, the tree of the
        other columns given the label, released as the triples (label, parent, child) and
        the pair (label, root) -- the tree-augmented naive Bayes structure, which keeps how
        every column depends on the label. ``"select"``: the same tree plus the pairs of
        columns it models worst on D, chosen greedily while the model's error on a pair
        exceeds a share of the error the noise is expected to bring
        (:func:`select_pairs`; AIM's rule, computed on D alone). A list: entries are a
        column (index or name), a pair or a triple of columns covering every column; they
        may close cycles. Marginals that close cycles are honoured by :meth:`sample`'s
        least-squares fit (see there).
    label : int, str or None, default=None
        With ``marginals="tree"``: the column (index or name) to condition the tree on,
        typically the target of a downstream model. ``None``: a plain Chow-Liu tree.
    train_size : float, default=0.5
        Fraction of the rows drawn at random into ``D_train``; ``1.0`` means the data passed
        to ``fit`` already is the random training subset (the calibration then takes halves
        of it as D, as :class:`~skmip.MIPNoiseWrapper` does). The category lists
        (``categories_``), the Chow-Liu tree (``marginals_``) and the noise scale are then
        computed from ``D_train`` itself and released: a record whose value is unique in
        the population is a member exactly when its value is in ``categories_``. This mode
        therefore **promises nothing**: ``mip_bound_`` is ``None`` and ``fit`` emits a
        :class:`~skmip.exceptions.PrivacyWarning`.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of ``D_train`` and the noise. ``None`` draws fresh OS entropy, the only
        setting under which the noise is secret; a fixed value emits a
        :class:`~skmip.exceptions.PrivacyWarning`. :meth:`sample` has its own.

    Attributes
    ----------
    categories_ : list of ndarray
        The categories of each column (sorted distinct values of D).
    marginals_ : list of tuple of int
        The released marginals (column indices).
    tables_ : list of ndarray
        The released tables after post-processing: probabilities, non-negative, summing to
        1, with 1-way margins equal to ``one_way_``.
    noisy_tables_ : list of ndarray
        The noisy cell fractions (counts / k plus the noise) before post-processing: the
        mechanism's output, which the bound is about; ``tables_`` is computed from them
        only. Attacked by :class:`skmip.audit.attacks.synthetic.MarginalLikelihoodAttack`.
    one_way_ : list of ndarray
        The consensus 1-way law of each column.
    noise_scale_ : float
        Standard deviation ``s`` of the Gaussian noise on each cell fraction
        (``k s`` in counts).
    coupling_eta_ : float
        The coupling bound on the MIP level at ``noise_scale_`` (equal to eta up to
        root-finding precision). It is the bound itself, computed exactly over every swap
        partner of every record of D: no confidence level enters.
    mip_bound_ : float or None
        The promised eta: membership accuracy at most ``max(k/n, 1-k/n) + mip_bound_``
        (:func:`skmip.bounds.mip_promise`). ``None`` with ``train_size=1.0``: no promise.
    target_eta_ : float
        The eta the noise was calibrated to (``mip_bound_`` when there is a promise).
    n_train_ : int
        Number of rows in ``D_train``.
    n_features_in_ : int
        Number of columns seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_columns,)
        Column names of ``X``, when it has string column names.

    Notes
    -----
    *Why the bound is exact.* A cell fraction is the mean over ``D_train`` of an indicator
    feature, so swapping a record ``e`` for ``x*`` moves the released vector by exactly
    ``sqrt(2 j) / k`` in norm, ``j`` the number of marginals on which the two records
    differ, and in the coupling ``e`` is uniform on the other rows of D.
    :func:`skmip.calibration.swap.marginal_swap_deltas` lists the law of ``j`` for every record
    of D; the coupling expectation is a finite sum (``docs/coupling.md``, "Statistics in
    closed form").

    *What may depend on D.* The Chow-Liu tree, the selected pairs and the category lists are
    computed from the whole dataset D, never from ``D_train``: given D they are fixed, like
    the noise scale (Definition 1 is about membership in ``D_train`` given D), and the noise
    is calibrated exactly over the final list of tables. They are released, so they
    reveal something about D itself; pass ``marginals`` as a list chosen from public
    knowledge (or the same list for every dataset) when D's structure must stay private.
    With ``train_size=1.0`` the data given to ``fit`` is ``D_train``, so the same lists,
    tree and noise scale are functions of ``D_train``: no promise is stated then.

    *Post-processing* (Theorem 3): the consensus of the 1-way laws, the least-squares move
    of each table to them, clipping, iterative proportional fitting, the least-squares
    weights of the candidate records and sampling use the noisy tables only.

    References
    ----------
    Izzo et al., "Provable Membership Inference Privacy": Definition 1, Proposition 2,
    Theorem 3. R. McKenna, G. Miklau, D. Sheldon (2021), "Winning the NIST Contest: A
    scalable and general approach to differentially private synthetic data" (MST).
    R. McKenna, B. Mullins, D. Sheldon, G. Miklau (2022), "AIM" (selection). R. McKenna,
    D. Sheldon, G. Miklau (2019), "Graphical-model based estimation and inference for
    differential privacy" (Private-PGM, least-squares estimation). C. Chow, C. Liu (1968).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 3, 2000)
    >>> X = np.c_[a, (a + rng.integers(0, 2, 2000)) % 3, rng.integers(0, 2, 2000)]
    >>> synth = MIPMarginalSynthesizer(eta=0.1).fit(X)
    >>> synth.marginals_[0], round(synth.coupling_eta_, 6)
    ((0, 1), 0.1)
    >>> synth.sample(4, random_state=0).shape
    (4, 3)
    """

    _owner = "MIPMarginalSynthesizer"

    def __init__(self, *, eta: float = 0.1, marginals="tree", label=None, train_size: float = 0.5,
                 random_state=None):
        self.eta = eta
        self.marginals = marginals
        self.label = label
        self.train_size = train_size
        self.random_state = random_state

    def _validate(self):
        check_eta(self._owner, self.eta)
        self._validate_common()

    def _structure(self, codes, names, sizes):
        if isinstance(self.marginals, str) and self.marginals in ("tree", "select"):
            if codes.shape[1] == 1:
                return [(0,)]
            # Functions of D only (not of D_train): fixed given D, like the noise scale.
            if self.label is None:
                base = chow_liu_tree(codes)
            else:
                label = _column_index(self._owner, self.label, codes.shape[1], names, "label")
                others = [j for j in range(codes.shape[1]) if j != label]
                if len(others) == 1:
                    return [tuple(sorted((label, others[0])))]
                edges = chow_liu_tree(codes, given=label)
                base = [tuple(sorted((label, edges[0][0])))] + [tuple(sorted((label, a, b))) for a, b in edges]
            if self.marginals == "tree":
                return base
            k = codes.shape[0] // 2 if self.train_size == 1.0 else int(round(self.train_size * codes.shape[0]))
            return base + select_pairs(codes, base, eta=self.eta, train_size=max(k, 1), sizes=sizes)
        if isinstance(self.marginals, str):
            raise ValueError(
                f"{self._owner}: marginals must be 'tree', 'select' or a list of columns, pairs and triples "
                f"of columns; got {self.marginals!r}."
            )
        if self.label is not None:
            raise ValueError(
                f"{self._owner}: label={self.label!r} shapes the 'tree' structure only; with a list "
                "of marginals, include the label's tables in the list and leave label=None."
            )
        return _check_marginals(self._owner, self.marginals, codes.shape[1], names)

    def _noise(self, codes, marginals, k_calibration, n_cells, rng):
        from skmip.bounds import coupling_noise_scale
        from skmip.calibration.swap import marginal_swap_deltas

        given_subset = self.train_size == 1.0
        if given_subset:
            warn_no_promise_on_given_subset(
                self._owner, "the category lists (categories_), the Chow-Liu tree (marginals_) "
                "and the noise scale",
            )

        deltas = marginal_swap_deltas(codes, marginals, train_size=k_calibration)
        cal = coupling_noise_scale(deltas.distances, self.eta, confidence=None, weights=deltas.weights,
                                   train_fraction=deltas.train_fraction)
        del deltas  # per-record sensitivities of the private data
        noise = cal.noise_scale * rng.standard_normal(n_cells)
        return noise, {"noise_scale_": float(cal.noise_scale), "coupling_eta_": float(cal.eta_point),
                       "mip_bound_": None if given_subset else float(self.eta),
                       "target_eta_": float(self.eta)}


# ----------------------------------------------------------------------------- DP baseline
class DPMarginalSynthesizer(PromiseMixin, _MarginalSynthesizer):
    """The same marginal synthesizer with (epsilon, delta)-DP noise: the baseline at equal promise.

    The cell counts of ``D_train`` get Gaussian noise of the analytic Gaussian mechanism
    (``delta > 0``; :func:`skmip.release.dp_baselines.gaussian_noise_scale`) or Laplace noise
    (``delta = 0``), calibrated to the replace-one sensitivity of all tables at once; the
    post-processing and the sampler are those of :class:`MIPMarginalSynthesizer`. Placed on
    the MIP axis with ``epsilon = skmip.bounds.mip_to_dp_epsilon(eta, delta)`` (Izzo et al.,
    Theorem 4).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy loss, > 0.
    delta : float, default=0.0
        ``0``: pure epsilon-DP by Laplace noise; ``> 0``: the Gaussian mechanism.
    marginals : list or None, default=None
        Columns and column pairs, as in :class:`MIPMarginalSynthesizer`. ``None``: every
        1-way marginal. A structure chosen from the data (e.g. the MIP synthesizer's
        ``marginals_``) is not covered by the DP guarantee: it hands the baseline a
        structure for free.
    train_size : float, default=0.5
        Fraction of the rows drawn into ``D_train``.
    random_state : None, int, numpy Generator or RandomState, default=None
        Source of ``D_train`` and the noise (a fixed value warns, as for MIP).

    Attributes
    ----------
    categories_ : list of ndarray
        As in :class:`MIPMarginalSynthesizer`.
    marginals_ : list of tuple of int
        As in :class:`MIPMarginalSynthesizer`.
    tables_ : list of ndarray
        As in :class:`MIPMarginalSynthesizer`.
    noisy_tables_ : list of ndarray
        As in :class:`MIPMarginalSynthesizer` (here with the DP noise).
    one_way_ : list of ndarray
        As in :class:`MIPMarginalSynthesizer`.
    n_train_ : int
        Number of rows in ``D_train``.
    n_features_in_ : int
        Number of columns seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_columns,)
        Column names of ``X``, when it has string column names.
    noise_scale_ : float
        Standard deviation of the noise on each cell fraction (counts / ``n_train_``).

    Notes
    -----
    Replacing one record changes two cells of each of the ``m`` tables by one count: L2
    sensitivity ``sqrt(2 m)`` (Gaussian), L1 sensitivity ``2 m`` (Laplace, scale
    ``2 m / epsilon``). Neighbours by replacement are those of Theorem 4's proof (Lemma 12).

    References
    ----------
    Dwork & Roth (2014), Theorem 3.6 (Laplace); Balle & Wang (2018) (analytic Gaussian);
    Izzo et al., Theorem 4.

    Examples
    --------
    >>> X = np.random.default_rng(0).integers(0, 3, size=(1000, 2))
    >>> dp = DPMarginalSynthesizer(epsilon=1.0, marginals=[(0, 1)]).fit(X)
    >>> round(dp.noise_scale_ * dp.n_train_, 3)   # Laplace scale 2 m / epsilon, in counts
    2.828
    """

    _owner = "DPMarginalSynthesizer"

    def __init__(self, *, epsilon: float = 1.0, delta: float = 0.0, marginals=None, train_size: float = 0.5,
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.marginals = marginals
        self.train_size = train_size
        self.random_state = random_state

    def stated_promise(self):
        """eta-MIP with ``eta = skmip.bounds.dp_to_mip(epsilon, delta)`` (Izzo et al., Theorem 4).

        The synthesizer is (epsilon, delta)-DP for replace-one neighbours, hence eta-MIP. With
        ``train_size=1.0`` the released category lists are those of the training set itself,
        outside the DP noise (a value held by one record is listed exactly when that record is
        a member): the eta is then stated with ``promised=False``, a target, not a promise.

        Returns
        -------
        skmip.promise.Promise
        """
        from skmip.bounds import dp_to_mip

        check_is_fitted(self)
        eta = float(dp_to_mip(self.epsilon, self.delta))
        return Promise.mip(eta, n_train=self.n_train_, promised=self.train_size != 1.0,
                           **{"from": f"({self.epsilon:g}, {self.delta:g})-DP, Theorem 4"})

    def _validate(self):
        check_interval(self._owner, "epsilon", self.epsilon, 0, None, closed="neither")
        if math.isinf(self.epsilon):
            raise ValueError(f"{self._owner}: epsilon must be finite; got {self.epsilon!r}.")
        check_interval(self._owner, "delta", self.delta, 0, 1, closed="left",
                       why="0 gives pure DP by Laplace noise; use delta well below 1/n_samples otherwise.")
        self._validate_common()

    def _structure(self, codes, names, sizes):
        if self.marginals is None:
            return [(j,) for j in range(codes.shape[1])]
        return _check_marginals(self._owner, self.marginals, codes.shape[1], names)

    def _noise(self, codes, marginals, k_calibration, n_cells, rng):
        from skmip.release.dp_baselines import gaussian_noise_scale

        m = len(marginals)
        k = codes.shape[0] if self.train_size == 1.0 else k_calibration
        if self.delta > 0:
            sd_counts = gaussian_noise_scale(self.epsilon, self.delta, math.sqrt(2.0 * m))
            noise = sd_counts * rng.standard_normal(n_cells)
        else:
            # Laplace(b) has standard deviation b sqrt(2).
            b = 2.0 * m / self.epsilon
            noise, sd_counts = rng.laplace(scale=b, size=n_cells), b * math.sqrt(2.0)
        return noise / k, {"noise_scale_": float(sd_counts / k)}
