"""Mutation closers (docs/mutation.md): a randomizer's stated guarantee is the one of the
parameters it draws with, under the unit it protects, whatever constructor made it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpgl.central.aggregation import AggregationPerturbation
from dpgl.privacy import (
    Accountant,
    GaussianMechanism,
    GumbelTopK,
    Unit,
    gaussian_epsilon,
    optimal_composition,
)
from dpgl.privacy.guarantee import Guarantee
from dpgl.rng import make_rng


def test_gumbel_from_per_selection_keeps_sensitivity_monotone_and_unit() -> None:
    """The keyword arguments reach the mechanism: the Gumbel scale that draws is
    c * sensitivity / eps_0 for the given sensitivity (a dropped sensitivity=3 would draw
    with a third of the noise under the same stated epsilon)."""
    mech = GumbelTopK.from_per_selection(4, 0.25, sensitivity=3.0, monotone=True,
                                         unit=Unit.EDGE_DP)
    assert mech.epsilon == pytest.approx(1.0)
    assert mech.scale == pytest.approx(1.0 * 3.0 / 0.25)
    assert mech.guarantee == Guarantee.pure(1.0, Unit.EDGE_DP)
    general = GumbelTopK.from_per_selection(2, 0.5, sensitivity=0.5)
    assert general.scale == pytest.approx(2.0 * 0.5 / 0.5)


def test_gumbel_approx_guarantee_is_the_composition_of_its_steps_under_its_unit() -> None:
    mech = GumbelTopK(5, 2.0, sensitivity=0.1, unit=Unit.EDGE_DP)
    got = mech.approx_guarantee(1e-6)
    want = optimal_composition(Guarantee.pure(0.4, Unit.EDGE_DP), 5, 1e-6)
    assert got.unit is Unit.EDGE_DP
    assert got.epsilon == pytest.approx(want.epsilon)
    assert got.delta == pytest.approx(want.delta)


def test_gaussian_from_sigma_charges_its_epsilon_under_its_unit() -> None:
    """A mechanism made from its sigma states the analytic epsilon of that sigma under the
    requested unit, and a charge lands in that unit's total."""
    sigma, delta = 3.0, 1e-5
    mech = GaussianMechanism.from_sigma(sigma, delta, 1.5, unit=Unit.EDGE_DP)
    assert mech.sigma == sigma and mech.sensitivity == 1.5 and mech.delta == delta
    assert mech.unit is Unit.EDGE_DP and mech.guarantee.unit is Unit.EDGE_DP
    # the default sensitivity is 1: epsilon of noise multiplier sigma
    plain = GaussianMechanism.from_sigma(sigma, delta)
    assert plain.sensitivity == 1.0
    assert plain.noise_multiplier == pytest.approx(sigma)
    assert plain.epsilon < mech.epsilon
    acc = Accountant()
    with acc.active():
        mech.charge()
    total = acc.report().total(Unit.EDGE_DP)
    assert total is not None and total.epsilon == pytest.approx(mech.epsilon)
    draw = mech.randomize(np.zeros(200_000), make_rng(3))
    assert float(draw.std()) == pytest.approx(sigma, rel=0.01)


def test_aggregation_guarantee_at_is_the_gaussian_epsilon_of_its_hops() -> None:
    ap = AggregationPerturbation(3, 2.0, 2, unit=Unit.BOUNDED_NODE_DP)
    got = ap.guarantee_at(1e-5)
    assert got.unit is Unit.BOUNDED_NODE_DP
    assert got.delta == pytest.approx(1e-5)
    assert got.epsilon == pytest.approx(gaussian_epsilon(2.0, 1e-5, steps=3), rel=1e-6)
    # the sigma that draws is noise multiplier x sqrt(D + D^2)
    out = ap.perturb(torch.zeros(4000, 3), torch.zeros(2, 0, dtype=torch.long), make_rng(0),
                     normalize=False)
    assert float(out[1].std()) == pytest.approx(2.0 * math.sqrt(2 + 4), rel=0.02)


def test_compose_parts_adds_epsilons_and_deltas() -> None:
    from dpgl.privacy.randomizer import compose_parts

    g = compose_parts({"a": Guarantee(0.5, 1e-6, Unit.EDGE_LDP),
                       "b": Guarantee(1.0, 2e-6, Unit.EDGE_LDP)}, Unit.EDGE_LDP)
    assert g.epsilon == pytest.approx(1.5) and g.delta == pytest.approx(3e-6)
    assert g.unit is Unit.EDGE_LDP


def test_classic_gaussian_uses_the_sensitivity_it_states() -> None:
    from dpgl.privacy import classic_gaussian_sigma

    mech = GaussianMechanism(0.5, 1e-5, sensitivity=3.0, calibration="classic")
    assert mech.sigma == pytest.approx(classic_gaussian_sigma(0.5, 1e-5, 3.0))
    assert mech.sigma == pytest.approx(3.0 * math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5)
    analytic = GaussianMechanism(0.5, 1e-5, sensitivity=3.0)
    assert analytic.noise_multiplier == pytest.approx(
        GaussianMechanism(0.5, 1e-5).sigma, rel=1e-6)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf")])
def test_spend_rdp_refuses_a_curve_that_would_lower_the_total(bad: float) -> None:
    from dpgl.errors import PrivacyError
    from dpgl.privacy.multiterm import ORDERS

    curve = np.full(ORDERS.shape, 0.01)
    curve[5] = bad
    with pytest.raises(PrivacyError):
        Accountant(delta=1e-5).spend_rdp("x", curve, unit=Unit.NODE_DP)
