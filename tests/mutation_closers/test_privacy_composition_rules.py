"""Mutation closers (docs/mutation.md): every composition rule states its result for the unit
it composed, and "best" is the smallest of the bounds it compares, never something smaller."""

from __future__ import annotations

import math

import pytest

from dpgl.privacy import (
    Guarantee,
    OneBit,
    Unit,
    advanced_composition,
    best_composition,
    optimal_composition,
)
from dpgl.privacy.composition import advanced_composition_epsilon


@pytest.mark.parametrize("unit", [Unit.NODE_DP, Unit.LABEL_LDP])
def test_composition_rules_keep_the_unit(unit: Unit) -> None:
    g = Guarantee(0.3, 1e-7, unit)
    assert advanced_composition(g, 10, 1e-6).unit is unit
    assert optimal_composition(g, 10, 1e-6).unit is unit
    for slack in (0.0, 1e-6):
        best, _ = best_composition(g, 10, slack)
        assert best.unit is unit


def test_best_composition_is_the_smallest_valid_bound() -> None:
    """For large epsilon the basic bound k eps wins; "best" must state exactly it (or a
    smaller *valid* bound: optimal composition is tight, so nothing below it is valid)."""
    g = Guarantee.pure(2.0, Unit.NODE_DP)
    best, _rule = best_composition(g, 3, 1e-6)
    tight = optimal_composition(g, 3, 1e-6)
    assert best.epsilon >= tight.epsilon - 1e-9
    assert best.epsilon == pytest.approx(min(6.0, tight.epsilon,
                                             advanced_composition(g, 3, 1e-6).epsilon))
    # small epsilon, many releases: the advanced/optimal bound beats k eps
    small = Guarantee.pure(0.05, Unit.NODE_DP)
    best_small, rule_small = best_composition(small, 400, 1e-5)
    assert rule_small != "basic" and best_small.epsilon < 400 * 0.05
    assert best_small.epsilon >= optimal_composition(small, 400, 1e-5).epsilon - 1e-9
    # without slack only basic / optimal apply, and the total delta is the parts' delta
    pure_best, _ = best_composition(small, 400, 0.0)
    assert pure_best.epsilon == pytest.approx(20.0) and pure_best.delta == 0.0


def test_advanced_composition_formula_and_delta() -> None:
    eps, k, slack = 0.1, 50, 1e-6
    want = math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * math.expm1(eps)
    assert advanced_composition_epsilon(eps, k, slack) == pytest.approx(want)
    g = advanced_composition(Guarantee(eps, 1e-8, Unit.NODE_DP), k, slack)
    assert g.epsilon == pytest.approx(want)
    assert g.delta == pytest.approx(k * 1e-8 + slack)


def test_one_bit_states_its_guarantee_for_the_unit_asked() -> None:
    mech = OneBit(1.5, alpha=-1.0, beta=1.0, unit=Unit.USER_LDP)
    assert mech.guarantee == Guarantee.pure(1.5, Unit.USER_LDP)
