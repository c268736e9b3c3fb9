r"""The promise contract: what a fitted defence states about itself, and how the audit reads it.

A defence (an estimator that trains on private data, or a synthesizer that releases data)
states its privacy promise through **one method** on the fitted object::

    fitted.stated_promise() -> Promise | None

and the audit (:class:`~skmip.audit.scoring.MIAttackScorer`,
:class:`~skmip.audit.synth_audit.SynthesizerAuditor`) reads it through this method only, by way
of :func:`stated_promise`. The fitted attributes users read (``mip_bound_``,
``positive_accuracy_bound_``, ``epsilon_``, ...) are the same numbers; the audit never looks at
them directly.

What a third-party defence implements to be audited against its promise
------------------------------------------------------------------------
Define ``stated_promise(self)`` on the estimator (inherit :class:`PromiseMixin` to say so in the
class statement) and return, once fitted:

* ``Promise.mip(eta, n_train=k)``: the estimator is eta-MIP in the sense of Izzo et al.,
  Definition 1: any attacker who knows the data set ``D`` (``n`` rows, the ``X`` given to
  ``fit``), the algorithm and its noise law, and sees the release, guesses whether a record of
  ``D`` is in the uniformly drawn training subset of ``k = n_train`` rows with accuracy at most
  ``max(k/n, 1 - k/n) + eta``. The scorer then checks ``TPR - FPR <= 2 eta`` on its membership
  game. Pass ``promised=False`` when the fit promises nothing but its noise was calibrated to
  ``eta`` (for instance ``train_size=1.0``: the calibration used the training set itself): the
  audit still tests the calibration, and says that no guarantee was tested.
* ``Promise.positive_accuracy(bound, epsilon=..., delta=..., sampling_rate=T, min_tpr=...)``:
  the estimator Poisson-subsamples its training data at rate ``T`` and trains an
  (epsilon, delta)-DP learner on the subsample; ``bound`` is Thudi et al.'s Theorem 3.3 bound on
  ``P(record in the subsample | attack says member)``. The scorer translates it to its game
  (amplification by subsampling) and checks the attack's precision against it.
* ``None``: the fit states nothing (the audit then measures leakage only).

Raise :class:`sklearn.exceptions.NotFittedError` before ``fit``. :class:`MIPPromiseMixin`
implements the first case for estimators that record ``mip_bound_`` (eta, or ``None`` when
nothing is promised), ``target_eta_`` (the eta the noise was calibrated to) and ``n_train_``,
as every eta-MIP defence and release of skmip does.

This module is the floor of the house: it imports nothing of skmip, so every pillar (defend,
release, nn, audit) can use it.

References
----------
Izzo, Z., Yoon, J., Arik, S. O., Zou, J. "Provable Membership Inference Privacy", Definition 1.
Thudi, A., Shumailov, I., Boenisch, F., Papernot, N. "Bounding Membership Inference", TMLR 2024,
Theorem 3.3.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

from sklearn.utils.validation import check_is_fitted

__all__ = ["Promise", "PromiseMixin", "MIPPromiseMixin", "stated_promise", "PROMISE_KINDS"]

#: The kinds of promise the audit knows how to test.
PROMISE_KINDS = ("mip", "positive_accuracy")


@dataclass(frozen=True)
class Promise:
    """A privacy bound a fitted estimator states about itself.

    Build one with :meth:`mip` or :meth:`positive_accuracy`; the audit reads it with
    :func:`stated_promise`.

    Parameters
    ----------
    kind : {"mip", "positive_accuracy"}
        ``"mip"``: eta-MIP (Izzo et al., Definition 1), ``value`` is eta.
        ``"positive_accuracy"``: Thudi et al.'s Theorem 3.3 bound on
        ``P(member | attack says member)`` for the estimator's own subsample, ``value`` the
        bound.
    value : float
        The stated number.
    details : dict, default={}
        What the audit needs to translate the statement to its game: ``n_train`` (rows the
        model was really trained on, or None), ``promised`` (False when the value is only the
        calibration's target, e.g. ``train_size=1.0``; absent means True), and for
        positive-accuracy bounds ``epsilon``, ``delta``, ``sampling_rate`` (the paper's ``T``)
        and ``min_tpr``. Other keys (e.g. ``"from"``, where the number comes from) are kept.

    Raises
    ------
    ValueError
        If ``kind`` is unknown or ``value`` is not a real number.

    Examples
    --------
    >>> p = Promise.mip(0.1, n_train=50)
    >>> p
    Promise(kind='mip', value=0.1, details={'n_train': 50, 'promised': True})
    >>> p.promised, p.n_train
    (True, 50)
    >>> Promise.mip(0.3, promised=False).promised
    False
    """

    kind: str
    value: float
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in PROMISE_KINDS:
            raise ValueError(
                f"Promise: kind must be one of {PROMISE_KINDS}; got {self.kind!r}. A defence "
                "that promises something else cannot be audited against it: return None."
            )
        if isinstance(self.value, bool) or not isinstance(self.value, numbers.Real) or math.isnan(self.value):
            raise ValueError(
                f"Promise: value must be a real number (eta, or the positive-accuracy bound); "
                f"got {self.value!r}."
            )
        object.__setattr__(self, "value", float(self.value))
        object.__setattr__(self, "details", dict(self.details))

    @property
    def promised(self) -> bool:
        """False when ``value`` is only the target the noise was calibrated to, not a guarantee."""
        return bool(self.details.get("promised", True))

    @property
    def n_train(self) -> int | None:
        """Rows the model was trained on, when the estimator says (None otherwise)."""
        return self.details.get("n_train")

    @classmethod
    def mip(cls, eta: float, *, n_train: int | None = None, promised: bool = True, **details) -> "Promise":
        """An eta-MIP promise (Izzo et al., Definition 1).

        Parameters
        ----------
        eta : float
            The promised eta (or, with ``promised=False``, the calibration's target).
        n_train : int or None, default=None
            Rows of ``D`` the released model was trained on (``k`` of Definition 1).
        promised : bool, default=True
            False when the fit promises nothing and ``eta`` is only the calibration's target.
        **details
            Further keys kept in :attr:`details`.

        Returns
        -------
        Promise
        """
        return cls("mip", eta, {"n_train": n_train, "promised": bool(promised), **details})

    @classmethod
    def positive_accuracy(
        cls,
        bound: float,
        *,
        epsilon: float | None,
        delta: float,
        sampling_rate: float | None,
        min_tpr: float | None = None,
        n_train: int | None = None,
    ) -> "Promise":
        """A bound on MI positive accuracy for a Poisson-subsampled (epsilon, delta)-DP learner.

        Parameters
        ----------
        bound : float
            Thudi et al.'s Theorem 3.3 bound for the estimator's own subsample.
        epsilon, delta : float
            The learner's DP guarantee.
        sampling_rate : float or None
            ``T``: the probability with which each row of the data given to ``fit`` trains.
        min_tpr : float or None, default=None
            The true-positive rate below which the bound with ``delta > 0`` is not stated.
        n_train : int or None, default=None
            Rows the model was trained on.

        Returns
        -------
        Promise
        """
        return cls("positive_accuracy", bound, {
            "n_train": n_train, "epsilon": epsilon, "delta": delta,
            "sampling_rate": sampling_rate, "min_tpr": min_tpr,
        })


def stated_promise(estimator) -> Promise | None:
    """The promise a fitted estimator states, read through its ``stated_promise()``, or None.

    This is how the audit reads every promise: an object without a ``stated_promise`` method
    (a plain scikit-learn model, a pipeline) states nothing.

    Parameters
    ----------
    estimator : object
        A fitted estimator.

    Returns
    -------
    Promise or None

    Raises
    ------
    TypeError
        If ``stated_promise()`` returns something other than a :class:`Promise` or None.
    sklearn.exceptions.NotFittedError
        If the estimator states a promise only once fitted and is not.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> stated_promise(LogisticRegression()) is None
    True
    """
    method = getattr(estimator, "stated_promise", None)
    if not callable(method):
        return None
    promise = method()
    if promise is not None and not isinstance(promise, Promise):
        raise TypeError(
            f"{type(estimator).__name__}.stated_promise() must return a skmip.promise.Promise or "
            f"None; got {type(promise).__name__}. Build it with Promise.mip(...) or "
            "Promise.positive_accuracy(...)."
        )
    return promise


class PromiseMixin:
    """Marks a defence that states a privacy promise; subclasses implement :meth:`stated_promise`.

    See the module docstring for the contract.
    """

    def stated_promise(self) -> Promise | None:
        """The promise of this fitted estimator (a :class:`Promise`), or None.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        """
        raise NotImplementedError(
            f"{type(self).__name__} inherits PromiseMixin but does not implement stated_promise()."
        )


class MIPPromiseMixin(PromiseMixin):
    """``stated_promise()`` of an eta-MIP defence, from its fitted ``mip_bound_``.

    The estimator records ``mip_bound_`` (the promised eta, or None when the fit promises
    nothing), ``target_eta_`` (the eta its noise was calibrated to) and ``n_train_`` (the rows
    it was trained on). A fitted estimator without ``mip_bound_`` (e.g. a search with
    ``refit=False``, which releases no model) states nothing.
    """

    def stated_promise(self) -> Promise | None:
        """The eta-MIP promise of the fitted estimator, or None.

        Returns
        -------
        Promise or None
            ``Promise.mip(mip_bound_)``; when ``mip_bound_`` is None (e.g. ``train_size=1.0``)
            but the noise was calibrated to ``target_eta_``, that eta with
            ``promised=False``, so that the audit can still test the calibration; None when
            there is neither.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        """
        check_is_fitted(self)
        n_train = getattr(self, "n_train_", None)
        eta = getattr(self, "mip_bound_", None)
        if eta is not None:
            return Promise.mip(eta, n_train=n_train)
        target = getattr(self, "target_eta_", None)
        if target is None:
            return None
        return Promise.mip(target, n_train=n_train, promised=False)
