"""Thudi et al. bounds: printed values, exact checks on enumerable mechanisms, the corrections."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skmip.bounds import (
    deletion_capacity,
    epsilon_for_positive_accuracy,
    negative_accuracy_bound,
    positive_accuracy_bound,
    unlearning_guarantee,
)
from skmip.exceptions import PrivacyWarning


# ---------------------------------------------------------------- exact membership games
def _posterior_member(T, p_member, p_nonmember):
    """P(x* in D | S) when H depends on D only through the bit [x* in D]."""
    return T * p_member / (T * p_member + (1 - T) * p_nonmember)


def _tight_mechanism(eps, delta, m):
    """Two outputs {a, b}; P(a | x* in D) = m, P(a | x* not in D) = e^-eps (m - delta).

    This is (eps, delta)-DP with equality in the constraint for S = {a}, i.e. the
    inequality used in the proof of Theorem 3.3 is tight.
    """
    p1 = np.array([m, 1 - m])
    p0 = np.array([np.exp(-eps) * (m - delta), 1 - np.exp(-eps) * (m - delta)])
    for S in ([0], [1], [0, 1]):
        assert p1[S].sum() <= np.exp(eps) * p0[S].sum() + delta + 1e-12
        assert p0[S].sum() <= np.exp(eps) * p1[S].sum() + delta + 1e-12
    return p1, p0


def _clamped_geometric_count(eps, N):
    """H(D) = clip(|D| + Z, 0, N), Z two-sided geometric(e^-eps): eps-DP for add/remove."""
    a = np.exp(-eps)
    out = np.empty((N + 1, N + 1))  # out[count, k] = P(H = k | |D| = count)
    for c in range(N + 1):
        for k in range(N + 1):
            if k == 0:
                out[c, k] = a**c / (1 + a)
            elif k == N:
                out[c, k] = a ** (N - c) / (1 + a)
            else:
                out[c, k] = (1 - a) / (1 + a) * a ** abs(k - c)
    assert np.allclose(out.sum(axis=1), 1)
    return out


def test_section_4_3_fixed_targets():
    # "those achieved when setting P_x*(1) = 0.5 and taking eps = 3, 2, 1 with delta = 1e-5",
    # P(S|x*) >= 1%; Figures 5-6 print 0.953, 0.881, 0.731.
    for form in ("corrected", "paper"):
        got = positive_accuracy_bound([3, 2, 1], sampling_rate=0.5, delta=1e-5, min_tpr=0.01, form=form)
        assert np.round(got, 3).tolist() == [0.953, 0.881, 0.731]


def test_delta_zero_closed_form_and_figure_1_limits():
    eps, T = 2.0, 0.3
    assert positive_accuracy_bound(eps, sampling_rate=T) == pytest.approx(1 / (1 + np.exp(-eps) * (1 - T) / T))
    # Figure 1: eps -> 0 leaves the bound at T; T -> 0 drives it to 0 for any eps.
    assert positive_accuracy_bound(1e-12, sampling_rate=T) == pytest.approx(T)
    assert positive_accuracy_bound(5.0, sampling_rate=1e-9) < 1e-6
    assert positive_accuracy_bound(np.inf, sampling_rate=T) == 1.0
    assert positive_accuracy_bound(3.0, sampling_rate=1.0) == 1.0


def test_randomized_response_attains_the_bound():
    # Randomized response on the membership bit is eps-DP and meets Theorem 3.3 with equality.
    for eps, T in itertools.product([0.1, 1.0, 4.0], [0.05, 0.5, 0.9]):
        p = np.exp(eps) / (1 + np.exp(eps))
        truth = _posterior_member(T, p, 1 - p)
        assert truth == pytest.approx(positive_accuracy_bound(eps, sampling_rate=T), rel=1e-12)
        truth_neg = (1 - T) * p / ((1 - T) * p + T * (1 - p))
        assert truth_neg == pytest.approx(negative_accuracy_bound(eps, sampling_rate=T), rel=1e-12)


@pytest.mark.parametrize("N,T,eps", [(3, 0.2, 0.5), (4, 0.5, 1.0), (4, 0.7, 2.0)])
def test_exhaustive_game_never_exceeds_the_bound(N, T, eps):
    # Every dataset of a pool of N records, every attack set S over the outputs.
    H = _clamped_geometric_count(eps, N)
    p_member = np.zeros(N + 1)
    p_non = np.zeros(N + 1)
    for D in itertools.product([0, 1], repeat=N):  # record 0 is x*
        prob = np.prod([T if b else 1 - T for b in D])
        row = H[sum(D)] * prob
        if D[0]:
            p_member += row
        else:
            p_non += row
    pos_bound = positive_accuracy_bound(eps, sampling_rate=T)
    neg_bound = negative_accuracy_bound(eps, sampling_rate=T)
    worst_pos = worst_neg = 0.0
    for r in range(1, N + 2):
        for S in itertools.combinations(range(N + 1), r):
            S = list(S)
            worst_pos = max(worst_pos, p_member[S].sum() / (p_member[S].sum() + p_non[S].sum()))
            worst_neg = max(worst_neg, p_non[S].sum() / (p_member[S].sum() + p_non[S].sum()))
    assert worst_pos <= pos_bound + 1e-12
    assert worst_neg <= neg_bound + 1e-12
    # The count mechanism is not tight, but it is not far either: the bound is informative.
    assert worst_pos > T


@pytest.mark.parametrize("eps,delta,m,T", [(1.0, 1e-3, 0.01, 0.5), (0.5, 0.05, 0.2, 0.3), (3.0, 1e-5, 1e-4, 0.1)])
def test_corrected_delta_term_is_tight_and_the_printed_one_is_violated(eps, delta, m, T):
    p1, p0 = _tight_mechanism(eps, delta, m)
    truth = _posterior_member(T, p1[0], p0[0])  # attack S = {a}, whose TPR is exactly m
    corrected = positive_accuracy_bound(eps, sampling_rate=T, delta=delta, min_tpr=m)
    paper = positive_accuracy_bound(eps, sampling_rate=T, delta=delta, min_tpr=m, form="paper")
    assert truth == pytest.approx(corrected, rel=1e-12)
    assert paper < truth  # the printed form does not bound this (eps, delta)-DP mechanism


def test_paper_form_is_valid_for_a_floor_on_the_joint_probability():
    # The printed delta-term is right if min_tpr floors P(S, x* in D) = T * P(S | x*).
    eps, delta, m, T = 1.0, 1e-3, 0.01, 0.4
    a = positive_accuracy_bound(eps, sampling_rate=T, delta=delta, min_tpr=m)
    b = positive_accuracy_bound(eps, sampling_rate=T, delta=delta, min_tpr=T * m, form="paper")
    assert a == pytest.approx(b, rel=1e-12)


def test_vacuous_bound_returns_one_and_warns():
    with pytest.warns(PrivacyWarning, match="vacuous"):
        assert positive_accuracy_bound(1.0, sampling_rate=0.5, delta=0.02, min_tpr=0.01) == 1.0
    with pytest.warns(PrivacyWarning, match="vacuous"):
        assert negative_accuracy_bound(1.0, sampling_rate=0.5, delta=0.02, min_tnr=0.02) == 1.0
    # The paper form is vacuous only when delta * T >= floor.
    assert positive_accuracy_bound(1.0, sampling_rate=0.5, delta=0.015, min_tpr=0.01, form="paper") < 1


def test_monotone_in_each_argument():
    eps = np.linspace(0, 8, 50)
    b = positive_accuracy_bound(eps, sampling_rate=0.3, delta=1e-5, min_tpr=0.01)
    assert np.all(np.diff(b) > 0)
    T = np.linspace(0.01, 0.99, 50)
    b = positive_accuracy_bound(2.0, sampling_rate=T, delta=1e-5, min_tpr=0.01)
    assert np.all(np.diff(b) > 0)
    m = np.linspace(0.001, 1, 50)
    b = positive_accuracy_bound(2.0, sampling_rate=0.3, delta=1e-4, min_tpr=m)
    assert np.all(np.diff(b) < 0)
    corrected = positive_accuracy_bound(2.0, sampling_rate=T, delta=1e-3, min_tpr=0.01)
    paper = positive_accuracy_bound(2.0, sampling_rate=T, delta=1e-3, min_tpr=0.01, form="paper")
    assert np.all(corrected >= paper)


def test_broadcasting_shapes():
    out = positive_accuracy_bound(np.array([[1.0], [2.0]]), sampling_rate=np.array([0.1, 0.5, 0.9]))
    assert out.shape == (2, 3)
    out = epsilon_for_positive_accuracy([0.9, 0.95], sampling_rate=[[0.1], [0.5]])
    assert out.shape == (2, 2)
    assert isinstance(positive_accuracy_bound(1.0, sampling_rate=0.5), float)


def test_negative_is_positive_with_the_roles_exchanged():
    T = np.linspace(0.05, 0.95, 19)
    for form in ("corrected", "paper"):
        neg = negative_accuracy_bound(1.5, sampling_rate=T, delta=1e-4, min_tnr=0.01, form=form)
        pos = positive_accuracy_bound(1.5, sampling_rate=1 - T, delta=1e-4, min_tpr=0.01, form=form)
        np.testing.assert_allclose(neg, pos, rtol=1e-12)
    assert negative_accuracy_bound(np.inf, sampling_rate=1.0) == 0.0


@settings(max_examples=200, deadline=None)
@given(
    eps=st.floats(0.0, 30.0),
    T=st.floats(1e-4, 0.9999),
    delta=st.sampled_from([0.0, 1e-6, 1e-5, 1e-3]),
    m=st.floats(0.002, 1.0),
    form=st.sampled_from(["corrected", "paper"]),
)
def test_epsilon_for_positive_accuracy_inverts_the_bound(eps, T, delta, m, form):
    target = positive_accuracy_bound(eps, sampling_rate=T, delta=delta, min_tpr=m, form=form)
    if target >= 1.0 - 1e-12:  # saturated: every epsilon above some point gives 1
        return
    back = epsilon_for_positive_accuracy(target, sampling_rate=T, delta=delta, min_tpr=m, form=form)
    assert back == pytest.approx(eps, abs=1e-7 * max(1.0, 1 / (1 - target)))
    again = positive_accuracy_bound(back, sampling_rate=T, delta=delta, min_tpr=m, form=form)
    assert again <= target + 1e-12


def test_epsilon_for_positive_accuracy_edges():
    assert epsilon_for_positive_accuracy(1.0, sampling_rate=0.5) == np.inf
    # The epsilon = 0 bound at T = 0.9 is 0.9: 0.731 is out of reach (Figure 5's curves stop).
    with pytest.raises(ValueError, match="even epsilon = 0 only guarantees 0.9"):
        epsilon_for_positive_accuracy(0.731, sampling_rate=0.9)
    assert epsilon_for_positive_accuracy(0.9, sampling_rate=0.9) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="vacuous"):
        epsilon_for_positive_accuracy(0.9, sampling_rate=0.5, delta=0.1, min_tpr=0.05)


def test_validation_messages():
    with pytest.raises(ValueError, match="min_tpr=0.01, the paper's choice"):
        positive_accuracy_bound(1.0, sampling_rate=0.5, delta=1e-5)
    with pytest.raises(ValueError, match=r"sampling_rate must be in \(0.0, 1.0\]"):
        positive_accuracy_bound(1.0, sampling_rate=0.0)
    with pytest.raises(ValueError, match="epsilon must be in"):
        positive_accuracy_bound(-1.0, sampling_rate=0.5)
    with pytest.raises(ValueError, match="form must be one of"):
        positive_accuracy_bound(1.0, sampling_rate=0.5, form="printed")
    with pytest.raises(ValueError, match="min_tnr"):
        negative_accuracy_bound(1.0, sampling_rate=0.5, delta=1e-5)
    with pytest.raises(TypeError, match="real number"):
        positive_accuracy_bound("one", sampling_rate=0.5)
    # delta = 0 needs no floor, and ignores one that is given.
    assert positive_accuracy_bound(1.0, sampling_rate=0.5, min_tpr=1e-9) == positive_accuracy_bound(
        1.0, sampling_rate=0.5
    )


# ---------------------------------------------------------------- unlearning (Section 5.1)
def test_unlearning_guarantee_is_one_minus_the_positive_bound():
    T = np.linspace(0.01, 0.99, 11)
    L = unlearning_guarantee(1.0, sampling_rate=T, delta=1e-5, min_tpr=0.01)
    np.testing.assert_allclose(L, 1 - positive_accuracy_bound(1.0, sampling_rate=T, delta=1e-5, min_tpr=0.01))
    np.testing.assert_allclose(unlearning_guarantee(1.0, sampling_rate=T), 1 / (1 + np.e * T / (1 - T)))


def test_printed_corollary_5_2_is_not_a_lower_bound():
    # Randomized response: S = "says member" has P(x* not in D | S) = 1 - bound = corrected L
    # exactly, below the printed L(c) -- the printed form promises deniability that is not there.
    eps, T = 1.0, 0.01
    p = np.exp(eps) / (1 + np.exp(eps))
    worst = 1 - _posterior_member(T, p, 1 - p)
    assert worst == pytest.approx(unlearning_guarantee(eps, sampling_rate=T), rel=1e-12)
    assert unlearning_guarantee(eps, sampling_rate=T, form="paper") > worst
    # Limits: no privacy (eps -> inf) leaves no deniability; the printed form gives certainty.
    assert unlearning_guarantee(50.0, sampling_rate=T) < 1e-15
    assert unlearning_guarantee(50.0, sampling_rate=T, form="paper") == pytest.approx(1.0)
    with pytest.raises(ValueError, match="takes delta = 0"):
        unlearning_guarantee(1.0, sampling_rate=T, delta=1e-5, min_tpr=0.01, form="paper")


def test_deletion_capacity_is_the_largest_m_with_L_to_the_m_at_least_B():
    B = 0.8
    c = np.array([1, 10, 50, 100, 200])
    for form in ("corrected", "paper"):
        m = deletion_capacity(B, 1.0, sampling_rate=c / 10000, form=form)
        L = unlearning_guarantee(1.0, sampling_rate=c / 10000, form=form)
        assert np.all(L**m >= B) and np.all(L ** (m + 1) < B)
    # Figure 7: capacity grows as the expected training-set size c shrinks.
    assert np.all(np.diff(deletion_capacity(B, 1.0, sampling_rate=c / 10000)) < 0)
    assert deletion_capacity(1.0, 1.0, sampling_rate=0.1) == 0
    assert deletion_capacity(0.5, np.inf, sampling_rate=0.1) == 0
    assert deletion_capacity(0.5, np.inf, sampling_rate=0.1, form="paper") == np.inf


def test_epsilon_zero_is_found_near_a_sampling_rate_of_one():
    # The falsifying example CI found: at T = 0.9999 the log-odds magnify round-off past 1e-12.
    # The formula's own float at epsilon = 0 (positive_accuracy_bound rounds it up, issue 31,
    # which is a target some epsilon > 0 reaches).
    from skmip.bounds.subsampling import _delta_factor, _log_odds, _posterior_bound

    g = _delta_factor(0.001, 0.00390625, 0.9999, "corrected")
    target = float(_posterior_bound(0.0, _log_odds(0.9999), g))
    assert epsilon_for_positive_accuracy(target, sampling_rate=0.9999, delta=0.001, min_tpr=0.00390625) == 0.0
