"""Composition theorems against closed forms and an independent computation."""

from __future__ import annotations

import math

import dp_accounting
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from dpgl.errors import PrivacyError
from dpgl.privacy import (
    Guarantee,
    Unit,
    advanced_composition,
    advanced_composition_epsilon,
    basic_composition,
    best_composition,
    kov_delta,
    optimal_composition,
    optimal_composition_epsilon,
)


def test_basic_composition_sums() -> None:
    g = basic_composition([Guarantee(1.0, 1e-6, Unit.NODE_DP), Guarantee.pure(0.5, Unit.NODE_DP),
                           Guarantee(0.25, 1e-7, Unit.NODE_DP)])
    assert g == Guarantee(1.75, 1.1e-6, Unit.NODE_DP)
    with pytest.raises(PrivacyError, match="different units"):
        basic_composition([Guarantee.pure(1.0, Unit.NODE_DP), Guarantee.pure(1.0, Unit.EDGE_LDP)])
    with pytest.raises(PrivacyError):
        basic_composition([])


@pytest.mark.parametrize("eps,k,slack", [(0.1, 100, 1e-5), (0.5, 10, 1e-6), (1.0, 1000, 1e-8)])
def test_advanced_composition_closed_form(eps: float, k: int, slack: float) -> None:
    expected = math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * (math.exp(eps) - 1)
    assert advanced_composition_epsilon(eps, k, slack) == pytest.approx(expected, rel=1e-12)
    g = advanced_composition(Guarantee(eps, 1e-9, Unit.NODE_DP), k, slack)
    assert g.epsilon == pytest.approx(expected, rel=1e-12)
    assert g.delta == pytest.approx(k * 1e-9 + slack)


def _kov_delta_i(eps: float, k: int, i: int) -> float:
    """KOV 2015 Thm 3.3, delta_i, written out literally."""
    return sum(math.comb(k, j) * (math.exp((k - j) * eps) - math.exp((k - 2 * i + j) * eps))
               for j in range(i)) / (1 + math.exp(eps)) ** k


@pytest.mark.parametrize("eps,k", [(0.7, 5), (0.2, 12), (1.5, 7)])
def test_kov_delta_matches_theorem_points(eps: float, k: int) -> None:
    for i in range(k // 2 + 1):
        assert kov_delta(eps, k, (k - 2 * i) * eps) == pytest.approx(_kov_delta_i(eps, k, i),
                                                                     rel=1e-10, abs=1e-15)


@pytest.mark.parametrize("eps,k,t", [(0.5, 10, 2.0), (0.1, 100, 1.0), (1.0, 5, 3.0),
                                     (1.0, 1, 0.5)])
def test_kov_delta_matches_dp_accounting_pld_of_rr(eps: float, k: int, t: float) -> None:
    """Independent check: KOV's delta is the hockey-stick divergence of k-fold eps-RR, which
    dp-accounting computes as a (pessimistic) privacy loss distribution."""
    rr = pld_lib.from_randomized_response(
        2 / (1 + math.exp(eps)), 2, value_discretization_interval=1e-5,
        neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE,
    ).self_compose(k)
    ours = kov_delta(eps, k, t)
    theirs = rr.get_delta_for_epsilon(t)
    assert ours == pytest.approx(theirs, rel=1e-3)
    assert ours <= theirs + 1e-12


def test_optimal_composition_small_cases() -> None:
    g = Guarantee.pure(0.8, Unit.NODE_DP)
    assert optimal_composition(g, 1, 0.0).epsilon == pytest.approx(0.8, abs=1e-9)
    assert optimal_composition(g, 7, 0.0).epsilon == pytest.approx(7 * 0.8, abs=1e-8)
    # k=1 with slack: eps' = log((p - delta')/(1 - p)), p = e^eps/(1+e^eps)
    p = math.exp(0.8) / (1 + math.exp(0.8))
    assert optimal_composition_epsilon(0.8, 1, 0.05) == pytest.approx(
        math.log((p - 0.05) / (1 - p)), abs=1e-8)
    # delta of the composition of (eps, delta) mechanisms: 1 - (1-delta)^k (1-delta')
    h = optimal_composition(Guarantee(0.8, 1e-6, Unit.NODE_DP), 10, 1e-5)
    assert h.delta == pytest.approx(1 - (1 - 1e-6) ** 10 * (1 - 1e-5), rel=1e-9)


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.5, 2.0])
@pytest.mark.parametrize("k", [2, 10, 100, 1000])
def test_optimal_never_worse_than_basic_or_advanced(eps: float, k: int) -> None:
    slack = 1e-6
    opt = optimal_composition_epsilon(eps, k, slack)
    assert opt <= k * eps + 1e-9
    assert opt <= advanced_composition_epsilon(eps, k, slack) + 1e-9
    # and it is exactly at the slack: delta_k(opt) <= slack < delta_k(opt - small)
    assert kov_delta(eps, k, opt) <= slack
    if opt > 1e-6:
        assert kov_delta(eps, k, opt * (1 - 1e-6)) > slack * (1 - 1e-3)


def test_best_composition_picks_smallest() -> None:
    g = Guarantee.pure(0.05, Unit.NODE_DP)
    best, rule = best_composition(g, 1000, 1e-6)
    assert rule == "optimal"
    assert best.epsilon == pytest.approx(optimal_composition_epsilon(0.05, 1000, 1e-6))
    best2, rule2 = best_composition(Guarantee.pure(3.0, Unit.NODE_DP), 2, 1e-6)
    assert best2.epsilon <= 6.0 and rule2 in ("basic", "optimal")


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_counts(bad: object) -> None:
    with pytest.raises(PrivacyError):
        advanced_composition_epsilon(1.0, bad, 1e-5)  # type: ignore[arg-type]


@pytest.mark.parametrize("slack", [0.0, 1.0, -0.1, float("nan")])
def test_advanced_needs_slack_in_open_interval(slack: float) -> None:
    with pytest.raises(PrivacyError):
        advanced_composition_epsilon(1.0, 10, slack)


def test_kov_rejects_bad_total() -> None:
    with pytest.raises(PrivacyError):
        kov_delta(1.0, 3, -0.5)
    with pytest.raises(PrivacyError):
        optimal_composition_epsilon(float("inf"), 3, 1e-5)
