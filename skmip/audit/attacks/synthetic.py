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

The record attacks and the registry of aliases live here; the encoding, distances and kernel
densities in :mod:`skmip.audit.attacks.record_similarity`, the marginal attack in
:mod:`skmip.audit.attacks.marginal_likelihood` and the interface every attack implements
(:class:`~skmip.audit.attacks.synthetic_attack.SyntheticAttack`) in
:mod:`skmip.audit.attacks.synthetic_attack`. Every public name imports from here too.
"""

from __future__ import annotations

import numpy as np

from skmip.audit.attacks.marginal_likelihood import MarginalLikelihoodAttack
from skmip.audit.attacks.record_similarity import (
    _BLOCK,
    RecordEncoder,
    closest_record_distance,
    closest_record_signal,
    kde_log_density,
    select_kde_bandwidth,
)
from skmip.audit.attacks.synthetic_attack import CERTAIN, SyntheticAttack  # noqa: F401 (CERTAIN re-exported)
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
