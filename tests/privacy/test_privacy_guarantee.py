"""Guarantee objects and the explicit unit conversions (dpgl.privacy.guarantee)."""

from __future__ import annotations

import math

import pytest

from dpgl.errors import PrivacyError
from dpgl.privacy import (
    Guarantee,
    RandomizedResponse,
    Unit,
    check_delta,
    check_epsilon,
    edge_ldp_to_relationship_dp,
    symmetric_edge_ldp_to_relationship_dp,
)


def test_edge_ldp_to_relationship_dp_doubles() -> None:
    g = RandomizedResponse(1.5).guarantee
    r = edge_ldp_to_relationship_dp(g)
    assert r == Guarantee(3.0, 0.0, Unit.RELATIONSHIP_DP)
    assert edge_ldp_to_relationship_dp(Guarantee(1.0, 1e-6, Unit.EDGE_LDP)).delta == 2e-6
    assert symmetric_edge_ldp_to_relationship_dp(g) == Guarantee(1.5, 0.0, Unit.RELATIONSHIP_DP)
    with pytest.raises(PrivacyError, match="edge-LDP"):
        edge_ldp_to_relationship_dp(Guarantee.pure(1.0, Unit.NODE_DP))


def test_guarantee_text_and_dict() -> None:
    assert str(Guarantee.pure(2.0, Unit.FEATURE_LDP)) == "2-feature-LDP"
    assert str(Guarantee(1.0, 1e-5, Unit.NODE_DP)) == "(1, 1e-05)-node-DP"
    assert "no privacy" in str(Guarantee.none())
    assert Guarantee.none().to_dict()["epsilon"] is None
    assert Guarantee(math.inf, 0.0, Unit.EDGE_LDP).to_dict()["epsilon"] is None


@pytest.mark.parametrize("eps", [0, -0.1, float("nan"), float("-inf"), "x"])
def test_check_epsilon(eps: object) -> None:
    with pytest.raises(PrivacyError):
        check_epsilon(eps)  # type: ignore[arg-type]
    with pytest.raises(PrivacyError):
        Guarantee(eps, 0.0, Unit.EDGE_LDP)  # type: ignore[arg-type]


def test_check_epsilon_inf_only_when_allowed() -> None:
    with pytest.raises(PrivacyError):
        check_epsilon(math.inf)
    assert check_epsilon(math.inf, allow_inf=True) == math.inf


@pytest.mark.parametrize("delta", [-1e-9, 1.0, 2.0, float("nan")])
def test_check_delta(delta: float) -> None:
    with pytest.raises(PrivacyError):
        check_delta(delta)
    with pytest.raises(PrivacyError):
        check_delta(0.0, allow_zero=False)
