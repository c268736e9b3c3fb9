r"""Which calibration subsets hold every class: the small-data rule of the calibration.

A classifier fitted on rows that lack a class of ``y`` has another parameter layout
(scikit-learn fits the classes it sees), so no distance or spread can be measured there. On
data of 12 to 30 rows such subsets are common, and stopping the calibration at the first one
made a fit a coin flip (issue 31, item 9). The calibration's draws are functions of
:math:`\mathcal{D}` alone, and what a subset lacking a class costs is already paid before the
draw (``skmip.defend._coverage``: the chance ``p`` that ``D_train`` lacks a class, as
``delta = p / max(q, 1 - q)``), so the calibration handles them without stopping
(docs/coupling.md, "Subsets that lack a class"):

- **The swap distances** (the coupling route): a pair :math:`(D_{out}, D_{in})` in which
  either set lacks a class is *bad*; the coupling bound needs only
  :math:`E[(2\Phi(\Delta/2) - 1)\,1\{\text{good}\}]`, so a bad pair is scored 0 (any value
  in [0, 1] would do). A fit set lacking a class is therefore not fitted: all its pairs score
  0. A pair whose :math:`D_{in} = H - e + x^*` lacks a class (``e`` the last row of its class
  in ``H``) keeps the influence engines' value (a non-negative score) and scores 0 where the
  engine would refit it (:meth:`ClassCover.swaps_hold_all`).
- **The spread's subsets** (the moments route, the noise shape): each subset is uniform among
  those of its size that hold every class, by rejection (:meth:`ClassCover.covering_seed`):
  the moments route's argument (the release :math:`M_h` that puts the mean fit on a
  ``D_train`` lacking a class) measures exactly that law, and a noise shape may be any
  function of :math:`\mathcal{D}`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import is_classifier

__all__ = ["ClassCover", "class_cover"]

#: Redraws of a subset before the calibration gives up. Where ``MIPNoiseWrapper`` did not
#: refuse before the draw, a subset of D_train's size lacks a class with probability
#: p < eta max(q, 1-q) < 1/2 (delta = p / max(q, 1-q) < eta <= 1/2), so the chance that 65
#: draws all lack one is below 2**-65.
MAX_REDRAWS = 64


class ClassCover:
    """The classes of ``y`` (each output column), and which rows hold them all.

    Parameters
    ----------
    y : array_like of shape (n_samples,) or (n_samples, n_outputs)
        The class labels of the whole data :math:`\\mathcal{D}`.
    """

    def __init__(self, y):
        y = np.asarray(y)
        columns = y.reshape(y.shape[0], -1)
        coded = [np.unique(columns[:, j], return_inverse=True) for j in range(columns.shape[1])]
        #: (n_outputs, n_samples): each row's class code in each output.
        self.codes = np.stack([np.ravel(inverse) for _, inverse in coded])
        self.n_classes = [labels.size for labels, _ in coded]
        self.labels = [labels for labels, _ in coded]

    def counts(self, rows):
        """Rows of each class of each output among ``rows``: a list of arrays."""
        return [np.bincount(codes[rows], minlength=m) for codes, m in zip(self.codes, self.n_classes)]

    def holds_all(self, rows):
        """Whether ``rows`` hold every class of every output."""
        return all(count.all() for count in self.counts(rows))

    def missing(self, rows):
        """The class labels that ``rows`` lack (every output), as a list."""
        return [label for count, labels in zip(self.counts(rows), self.labels)
                for label in labels[count == 0].tolist()]

    def swaps_hold_all(self, H, e, x):
        """Whether each swap ``H - e + x`` holds every class, for ``H`` that holds them all.

        Parameters
        ----------
        H : ndarray of int
            The fit set :math:`D_{out}` (every class present).
        e, x : ndarray of int, broadcastable
            The row swapped out (a row of ``H``) and the target swapped in.

        Returns
        -------
        ndarray of bool, shaped like ``e`` and ``x`` broadcast
            False exactly where ``e`` is the only row of its class in ``H`` (in some output)
            and ``x`` is of another class there.
        """
        e, x = np.broadcast_arrays(np.asarray(e), np.asarray(x))
        good = np.ones(e.shape, dtype=bool)
        for codes, count in zip(self.codes, self.counts(H)):
            ce, cx = codes[e], codes[x]
            good &= (count[ce] > 1) | (cx == ce)
        return good

    def covering_seed(self, seed, draw, n_rows, size):
        """``(seed, rows)``: ``seed`` if its subset holds every class, else the first of its
        redraws that does (a function of ``seed`` alone, so a worker rebuilds the rows).

        Parameters
        ----------
        seed : int
            The subset's seed.
        draw : callable
            ``draw(seed, n_rows, size)``: the sorted rows of a uniform subset.
        n_rows, size : int
            Rows of the data and of the subset.

        Returns
        -------
        seed : int
            The seed of the first subset that holds every class. Rejection makes the subset
            uniform among those of its size that hold every class.
        rows : ndarray of int
            Its rows.

        Raises
        ------
        MissingClassError
            If the subset and its :data:`MAX_REDRAWS` redraws all lack a class (see there).
        """
        from skmip.exceptions import MissingClassError

        rows = draw(seed, n_rows, size)
        for attempt in range(1, MAX_REDRAWS + 1):
            if self.holds_all(rows):
                return seed, rows
            seed = int(np.random.default_rng([int(seed), attempt]).integers(np.iinfo(np.int64).max))
            rows = draw(seed, n_rows, size)
        if self.holds_all(rows):
            return seed, rows
        raise MissingClassError(
            f"{MAX_REDRAWS + 1} random subsets of {size} of the {n_rows} rows in a row lacked a "
            f"class (class counts {[c.tolist() for c in self.counts(np.arange(n_rows))]}): a "
            "subset that holds every class is too rare to draw. Provide more rows of each class "
            "or a larger train_size.",
            missing=self.missing(rows), subset_size=size, n_samples=n_rows,
        )


def class_cover(estimator, y):
    """A :class:`ClassCover` of ``y`` for a classifier, ``None`` otherwise (a regressor's
    targets are not classes: every subset is usable)."""
    if y is None or not is_classifier(estimator):
        return None
    return ClassCover(y)
