"""Mutation closers (docs/mutation.md) for survivors of the random sample: the runner refuses
a private run that charged nothing for its own unit, the feature randomizers' noise is
calibrated to the width of the public range (not its sum), the exact discrete Laplace sampler
never uses a rate above eps / Delta, and the multi-bit encoder refuses ranges and m it cannot
encode."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from tests.methods.test_privacy_by_construction import _P, _Fake

from dpgl.errors import ConfigError, PrivacyError
from dpgl.experiments.execute import check_report
from dpgl.mechanisms.features import FeatureRandomizer, FeatureRange
from dpgl.privacy import Accountant, Guarantee, Unit
from dpgl.privacy.laplace import _rational_rate
from dpgl.privacy.multibit import MultiBit


def test_runner_refuses_a_private_run_that_charged_nothing_for_its_unit() -> None:
    """Only another unit used as is: the method's own unit (edge-LDP) has no total."""
    acc = Accountant()
    acc.spend_nonprivate("features as is", "features used without noise", Unit.FEATURE_LDP)
    with pytest.raises(PrivacyError, match="charged nothing for the unit it protects"):
        check_report(_Fake(), _P(), 1.0, acc.report())


@pytest.mark.parametrize(("low", "high"), [(-1.0, 2.0), (2.0, 5.0), (-3.0, -1.0)])
def test_feature_noise_is_calibrated_to_the_range_width(low: float, high: float) -> None:
    span, d, eps = high - low, 4, 2.0
    rng = FeatureRange(low, high, "declared bounds")
    lap = FeatureRandomizer(eps, d, "laplace", feature_range=rng)
    assert lap._impl.scale == pytest.approx(d * span / eps)
    gauss = FeatureRandomizer(eps, d, "gaussian", feature_range=rng, delta=1e-5)
    assert gauss._impl.sensitivity == pytest.approx(math.sqrt(d) * span)


def test_discrete_laplace_rate_never_exceeds_eps_over_sensitivity() -> None:
    """limit_denominator may round up; the sampler must then fall back below the exact rate
    (a larger rate is less noise than charged). Random eps hit both cases."""
    gen = random.Random(0)
    rounded_up = 0
    for _ in range(2000):
        eps = gen.uniform(0.01, 10.0)
        sens = gen.randint(1, 5)
        exact = Fraction(eps) / sens
        if exact.limit_denominator(2**20) > exact * (1 + Fraction(1, 10**12)):
            rounded_up += 1
        assert _rational_rate(eps, sens) <= exact * (1 + Fraction(1, 10**12))
    assert rounded_up > 100


@pytest.mark.parametrize(("alpha", "beta"), [(-math.inf, 1.0), (0.0, math.inf),
                                             (math.nan, 1.0), (0.0, math.nan)])
def test_multibit_refuses_a_non_finite_range_end(alpha: float, beta: float) -> None:
    with pytest.raises(ConfigError, match="finite"):
        MultiBit(1.0, alpha=alpha, beta=beta)


@pytest.mark.parametrize("m", [2.5, 0, -1, True, 1.0])
def test_multibit_refuses_m_that_is_not_a_positive_integer(m: object) -> None:
    with pytest.raises(ConfigError):
        MultiBit(1.0, m=m)  # type: ignore[arg-type]


def test_charge_of_a_nonprivate_use_keeps_delta_zero() -> None:
    acc = Accountant()
    g = acc.spend("as is", Guarantee(math.inf, 0.0, Unit.EDGE_LDP))
    assert g == Guarantee(math.inf, 0.0, Unit.EDGE_LDP)


@pytest.mark.parametrize("unit", [Unit.NODE_DP, Unit.EDGE_LDP])
def test_subsampled_scope_amplifies_every_unit_after_a_unitless_part(unit: Unit) -> None:
    """The scope's loop over the inner totals must go past Unit.NONE (a part that protects
    nothing), and the amplified total must be stated for its own unit."""
    acc = Accountant()
    with acc.subsampled("sample", 0.1) as inner:
        inner.spend_nonprivate("ids", "public ids", Unit.NONE)
        inner.spend("x", Guarantee(1.0, 0.0, unit))
    total = acc.report().total(unit)
    assert total is not None
    assert total.unit is unit
    assert total.epsilon == pytest.approx(math.log(1 + 0.1 * (math.e - 1)))
    assert total.delta == 0.0
