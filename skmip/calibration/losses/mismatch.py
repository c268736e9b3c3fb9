"""The refusal of an estimator configured outside the objective its registered smooth loss models."""

from __future__ import annotations


class ObjectiveMismatch(ValueError):
    """An estimator configured outside the objective its registered smooth loss models (the plain
    hinge, an L1 part, ``crammer_singer``, a constraint, subset-dependent weights, ...).

    ``why`` says what the configuration does that the objective does not (a sentence); ``fix``
    is the estimator's own way back (a clause, ``None`` where it has none). The message adds the
    influence engines' other way out, ``engine='refit'``; a caller that does not take engines
    (:class:`~skmip.MIPNoiseWrapper`) builds its own from ``why`` and ``fix``.

    Examples
    --------
    >>> str(ObjectiveMismatch("Owner", "It is not smooth.", "use l1_ratio=0"))
    "Owner: It is not smooth. Use l1_ratio=0, or engine='refit'."
    >>> str(ObjectiveMismatch("Owner", "It is constrained."))
    "Owner: It is constrained. Use engine='refit'."
    """

    def __init__(self, owner, why, fix=None):
        self.why, self.fix = why, fix
        super().__init__(f"{owner}: {why} {self.fix_sentence(', or engine=' + repr('refit'))}")

    def fix_sentence(self, alternative=""):
        """``fix`` as a sentence with ``alternative`` appended (``"Use engine='refit'."`` with
        neither)."""
        if self.fix is None:
            return f"Use{alternative.removeprefix(', or')}." if alternative else ""
        return f"{self.fix[0].upper()}{self.fix[1:]}{alternative}."
