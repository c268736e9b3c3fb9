"""What every membership attack on a synthesizer implements: :class:`SyntheticAttack`.

The attacks (:mod:`skmip.audit.attacks.synthetic`, :mod:`skmip.audit.attacks.marginal_likelihood`)
and the auditor (:class:`skmip.audit.synth_audit.SynthesizerAuditor`) meet here.
"""

from __future__ import annotations

__all__ = ["SyntheticAttack", "CERTAIN"]

#: Finite stand-ins for "certainly a member / certainly not" (the metrics need finite scores).
CERTAIN = 1e300


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
