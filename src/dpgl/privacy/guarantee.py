"""Privacy guarantees as data: (epsilon, delta) together with the *unit* they protect.

Units (what two neighbouring inputs differ in):

* ``EDGE_LDP`` — one bit of one user's neighbor list (edge local DP; Qin et al. 2017,
  Blink Def. 2, DPRR Def. 1).
* ``RELATIONSHIP_DP`` — one undirected edge {i, j}, which appears in *two* users' lists
  (Imola et al. 2021; DPRR Prop. 3). See :func:`edge_ldp_to_relationship_dp`.
* ``FEATURE_LDP`` — one user's whole feature vector (LPGNN Def. 1).
* ``LABEL_LDP`` — one user's label.
* ``USER_LDP`` — everything one user reports (neighbor list + features + label); the
  composition of the per-part local guarantees of one user (Solitude).
* ``NODE_DP`` — central DP where neighbouring graphs differ in one node with its features
  and all its edges (DPAR).
* ``BOUNDED_NODE_DP`` — node-level DP restricted to graphs whose in- and out-degrees stay
  within a declared public bound D (both neighbouring graphs satisfy it; Kasiviswanathan et
  al. 2013, "bounded-degree" node privacy). GAP and DP-SAGE state this guarantee: no degree
  bounding step with a proved node-level sensitivity on all graphs is known (docs/node-dp.md).
* ``EDGE_DP`` — central DP where neighbouring graphs differ in one edge.
* ``NONE`` — data used without protection (non-private baselines); epsilon = inf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from dpgl.errors import PrivacyError


class Unit(str, Enum):
    """What a guarantee protects (the difference between neighbouring inputs)."""

    EDGE_LDP = "edge-LDP"
    RELATIONSHIP_DP = "relationship-DP"
    FEATURE_LDP = "feature-LDP"
    LABEL_LDP = "label-LDP"
    USER_LDP = "user-LDP"
    NODE_DP = "node-DP"
    BOUNDED_NODE_DP = "bounded-degree node-DP"
    EDGE_DP = "edge-DP"
    NONE = "none"

    def __str__(self) -> str:
        return self.value


def check_epsilon(epsilon: float, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """Validate a privacy budget: a finite number > 0 (or +inf when ``allow_inf``)."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise PrivacyError(f"{name} must be a number > 0, got {epsilon!r}") from None
    if math.isnan(value):
        raise PrivacyError(f"{name} must be a number > 0, got NaN")
    if math.isinf(value):
        if allow_inf and value > 0:
            return value
        raise PrivacyError(f"{name} must be finite and > 0, got {value}")
    if value <= 0:
        raise PrivacyError(f"{name} must be > 0, got {value}")
    return value


def check_delta(delta: float, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Validate a failure probability: 0 <= delta < 1 (0 excluded unless ``allow_zero``)."""
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise PrivacyError(f"{name} must be a number in [0, 1), got {delta!r}") from None
    if math.isnan(value) or value < 0 or value >= 1 or (value == 0 and not allow_zero):
        lo = "[0, 1)" if allow_zero else "(0, 1)"
        raise PrivacyError(f"{name} must be in {lo}, got {delta!r}")
    return value


def check_fraction(
    value: float, name: str, *, low_open: bool = False, high_open: bool = False
) -> float:
    """Validate a split/share parameter in [0, 1] (ends optionally open)."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PrivacyError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if math.isnan(v) or v < 0 or v > 1 or (low_open and v == 0) or (high_open and v == 1):
        lo = "(" if low_open else "["
        hi = ")" if high_open else "]"
        raise PrivacyError(f"{name} must be in {lo}0, 1{hi}, got {value!r}")
    return v


@dataclass(frozen=True)
class Guarantee:
    """An (epsilon, delta)-DP statement about one unit. Pure DP when delta == 0."""

    epsilon: float
    delta: float = 0.0
    unit: Unit = Unit.EDGE_LDP

    def __post_init__(self) -> None:
        if self.unit is Unit.NONE:
            object.__setattr__(self, "epsilon", math.inf)
            return
        check_epsilon(self.epsilon, allow_inf=True)
        check_delta(self.delta)

    @property
    def is_pure(self) -> bool:
        return self.delta == 0.0

    @classmethod
    def pure(cls, epsilon: float, unit: Unit) -> Guarantee:
        return cls(float(epsilon), 0.0, unit)

    @classmethod
    def none(cls) -> Guarantee:
        """No protection (a non-private baseline uses the data as is)."""
        return cls(math.inf, 0.0, Unit.NONE)

    def to_dict(self) -> dict[str, float | str | None]:
        return {
            "epsilon": None if math.isinf(self.epsilon) else self.epsilon,
            "delta": self.delta,
            "unit": self.unit.value,
        }

    def __str__(self) -> str:
        if self.unit is Unit.NONE:
            return "no privacy (data used as is)"
        eps = "inf" if math.isinf(self.epsilon) else f"{self.epsilon:.4g}"
        if self.is_pure:
            return f"{eps}-{self.unit.value}"
        return f"({eps}, {self.delta:.3g})-{self.unit.value}"


def edge_ldp_to_relationship_dp(g: Guarantee) -> Guarantee:
    """epsilon-edge LDP on an undirected graph implies 2*epsilon relationship DP.

    An undirected edge {i, j} is held by both users i and j, so changing it changes two
    independent reports, each epsilon-edge LDP; by sequential composition the pair is
    (2 epsilon, 2 delta)-DP (Imola et al. 2021, Prop. 1; DPRR Prop. 3).
    """
    if g.unit is not Unit.EDGE_LDP:
        raise PrivacyError(f"expected an edge-LDP guarantee, got {g.unit.value}")
    return Guarantee(
        2.0 * g.epsilon, min(2.0 * g.delta, 1.0 - 1e-16) if g.delta else 0.0, Unit.RELATIONSHIP_DP
    )


def symmetric_edge_ldp_to_relationship_dp(g: Guarantee) -> Guarantee:
    """For a symmetric mechanism where only one endpoint reports each pair (SymRR, Imola et
    al.: the lower-triangular part), epsilon-edge LDP is epsilon relationship DP."""
    if g.unit is not Unit.EDGE_LDP:
        raise PrivacyError(f"expected an edge-LDP guarantee, got {g.unit.value}")
    return Guarantee(g.epsilon, g.delta, Unit.RELATIONSHIP_DP)


def check_unit(unit: Unit | str) -> Unit:
    """Accept a :class:`Unit` or its string value."""
    if isinstance(unit, Unit):
        return unit
    try:
        return Unit(unit)
    except ValueError:
        allowed = ", ".join(u.value for u in Unit)
        raise PrivacyError(f"unknown privacy unit {unit!r}; choose one of: {allowed}") from None
