"""The accountant interface: what every accountant offers (record, per-unit totals, state).

The contract tests run on :class:`Accountant` and on a minimal second implementation
(``PureAccountant`` below: pure and approximate parts, basic composition), so they state the
interface, not one implementation's details.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dpgl.errors import ConfigError
from dpgl.privacy import (
    Accountant,
    AccountantInterface,
    Guarantee,
    PrivacyReport,
    RandomizedResponse,
    ReportEntry,
    Unit,
)
from dpgl.privacy.multiterm import ORDERS


class PureAccountant(AccountantInterface):
    """The smallest accountant: a list of (name, guarantee); epsilons and deltas add per unit."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, Guarantee]] = []

    def spend(self, name: str, guarantee: Guarantee, *, mechanism: str = "", count: int = 1,
              composition: str = "basic", delta_slack: float = 0.0) -> Guarantee:
        composed = Guarantee(count * guarantee.epsilon, count * guarantee.delta, guarantee.unit)
        self.parts.append((name, composed))
        return composed

    def spend_nonprivate(self, name: str, description: str, unit: Unit | str) -> None:
        self.parts.append((name, Guarantee(math.inf, 0.0, Unit(unit))))

    def report(self, delta: float | None = None, *, method: str = "rdp") -> PrivacyReport:
        totals: dict[Unit, Guarantee] = {}
        entries = []
        for name, g in self.parts:
            kind = "nonprivate" if math.isinf(g.epsilon) else "pure" if g.is_pure else "approx"
            entries.append(ReportEntry(name, g.unit, g.epsilon, g.delta, kind=kind))
            prev = totals.get(g.unit)
            totals[g.unit] = g if prev is None else Guarantee(
                prev.epsilon + g.epsilon, prev.delta + g.delta, g.unit)
        return PrivacyReport(entries, totals)

    def __len__(self) -> int:
        return len(self.parts)

    def state_dict(self) -> dict[str, Any]:
        return {"parts": [[n, g.to_dict()] for n, g in self.parts]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.parts = [(n, Guarantee(math.inf if g["epsilon"] is None else g["epsilon"],
                                    g["delta"], Unit(g["unit"])))
                      for n, g in state["parts"]]


IMPLEMENTATIONS: dict[str, Callable[[], AccountantInterface]] = {
    "Accountant": Accountant,
    "PureAccountant": PureAccountant,
}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def make(request: pytest.FixtureRequest) -> Callable[[], AccountantInterface]:
    return IMPLEMENTATIONS[request.param]


def _round_trip(acc: AccountantInterface, fresh: AccountantInterface) -> AccountantInterface:
    fresh.load_state_dict(json.loads(json.dumps(acc.state_dict(), allow_nan=False)))
    return fresh


# --------------------------------------------------------------------------- the interface


def test_accountant_implements_the_interface() -> None:
    assert issubclass(Accountant, AccountantInterface)
    assert isinstance(Accountant(), AccountantInterface)


def test_an_accountant_without_state_cannot_be_built() -> None:
    class NoState(PureAccountant):
        state_dict = AccountantInterface.state_dict   # still abstract
    with pytest.raises(TypeError, match="state_dict"):
        NoState()  # type: ignore[abstract]


# --------------------------------------------------------------------------- the contract


def test_spends_of_one_unit_add_up(make: Callable[[], AccountantInterface]) -> None:
    acc = make()
    acc.spend("a", Guarantee(0.5, 0.0, Unit.EDGE_LDP))
    acc.spend("b", Guarantee(1.0, 1e-6, Unit.EDGE_LDP), count=2)
    acc.spend("c", Guarantee(3.0, 0.0, Unit.FEATURE_LDP))
    assert len(acc) == 3
    total = acc.total(Unit.EDGE_LDP)
    assert total is not None
    assert (total.epsilon, total.delta) == pytest.approx((2.5, 2e-6))
    assert acc.total("feature-LDP") == Guarantee(3.0, 0.0, Unit.FEATURE_LDP)
    assert acc.total(Unit.NODE_DP) is None


def test_data_used_as_is_means_no_privacy(make: Callable[[], AccountantInterface]) -> None:
    acc = make()
    acc.spend("rr", Guarantee(1.0, 0.0, Unit.EDGE_LDP))
    acc.spend_nonprivate("labels", "true labels", Unit.LABEL_LDP)
    rep = acc.report()
    assert not rep.private
    assert math.isinf(rep.totals[Unit.LABEL_LDP].epsilon)
    assert rep.totals[Unit.EDGE_LDP].epsilon == 1.0
    assert rep.used_as_is == ["labels"]


def test_a_randomizer_charges_any_accountant(make: Callable[[], AccountantInterface]) -> None:
    acc = make()
    rr = RandomizedResponse(2.0)
    rr.charge(accountant=acc)
    rr.charge(accountant=acc)
    assert len(acc) == 2
    assert acc.total(Unit.EDGE_LDP) == Guarantee(4.0, 0.0, Unit.EDGE_LDP)


def test_state_round_trip_gives_the_same_report(make: Callable[[], AccountantInterface]) -> None:
    acc = make()
    acc.spend("a", Guarantee(0.5, 1e-7, Unit.EDGE_LDP), mechanism="RR", count=3)
    acc.spend("b", Guarantee(1.25, 0.0, Unit.FEATURE_LDP))
    acc.spend_nonprivate("labels", "true labels", Unit.LABEL_LDP)
    restored = _round_trip(acc, make())
    assert len(restored) == len(acc) == 3
    assert restored.report().to_dict() == acc.report().to_dict()
    # the restored accountant goes on recording from there
    for a in (acc, restored):
        a.spend("c", Guarantee(0.25, 0.0, Unit.EDGE_LDP))
    assert restored.report().to_dict() == acc.report().to_dict()


def test_loading_a_state_replaces_the_record(make: Callable[[], AccountantInterface]) -> None:
    acc = make()
    acc.spend("a", Guarantee(1.0, 0.0, Unit.EDGE_LDP))
    other = make()
    other.spend("x", Guarantee(7.0, 0.0, Unit.NODE_DP))
    other.spend("y", Guarantee(7.0, 0.0, Unit.NODE_DP))
    other.load_state_dict(acc.state_dict())
    assert len(other) == 1
    assert other.report().to_dict() == acc.report().to_dict()


# --------------------------------------------------------------------------- Accountant's state


def _every_kind_of_part() -> Accountant:
    acc = Accountant(delta=1e-5)
    acc.spend("pure", Guarantee(0.5, 0.0, Unit.EDGE_LDP), mechanism="RR(eps=0.5)")
    acc.spend("advanced", Guarantee(0.1, 1e-8, Unit.NODE_DP), count=50,
              composition="advanced", delta_slack=1e-6)
    acc.spend("best", Guarantee(0.1, 0.0, Unit.NODE_DP), count=20, composition="best",
              delta_slack=1e-7)
    acc.spend_gaussian("dp-sgd", noise_multiplier=1.1, steps=300, sampling_rate=0.02,
                       unit=Unit.NODE_DP, sensitivity_note="clip 1")
    acc.spend_gaussian("fixed", noise_multiplier=2.0, steps=10, sampling_rate=0.1,
                       sampling="fixed", dataset_size=500, unit=Unit.EDGE_DP)
    acc.spend_rdp("multi-term", 0.002 * ORDERS, unit=Unit.BOUNDED_NODE_DP,
                  mechanism="DP-SGD, multi-term", details="max degree 5")
    acc.spend_nonprivate("labels", "true labels", Unit.LABEL_LDP)
    with acc.parallel("graphs", "every graph's users are different people") as scope:
        for i, eps in enumerate((1.0, 2.0, 1.5)):
            with scope.member(f"graph {i}") as member:
                member.spend("rr", Guarantee(eps, 0.0, Unit.USER_LDP), mechanism="RR")
    with acc.subsampled("node sample", 0.1, delta=1e-4, description="DPAR") as inner:
        inner.spend_gaussian("inner dp-sgd", noise_multiplier=1.5, steps=100,
                             sampling_rate=0.05, unit=Unit.EDGE_DP)
        inner.spend("appr", Guarantee(0.3, 0.0, Unit.EDGE_DP))
    return acc


@pytest.mark.parametrize(("delta", "method"), [(None, "rdp"), (1e-6, "pld")])
def test_state_holds_the_record_not_a_report(delta: float | None, method: str) -> None:
    """Every kind of part and scope survives the round trip, so the restored accountant
    reports the same at any delta and accounting method, not only the one of a stored
    report."""
    acc = _every_kind_of_part()
    restored = _round_trip(acc, Accountant())
    assert restored.delta == acc.delta
    assert restored.units == acc.units
    assert restored.report(delta, method=method).to_dict() == \
        acc.report(delta, method=method).to_dict()
    assert restored.dp_event(Unit.NODE_DP) == acc.dp_event(Unit.NODE_DP)
    # and the state of the restored one is the state it was restored from
    assert restored.state_dict() == json.loads(json.dumps(acc.state_dict()))


def test_state_of_a_child_accountant_stays_in_its_scope() -> None:
    """A child accountant (scope member) loaded from a state still reports into its
    parent's scope: its record is not replaced by another list."""
    source = Accountant()
    source.spend("appr", Guarantee(2.0, 0.0, Unit.NODE_DP))
    acc = Accountant()
    with acc.subsampled("sample", 0.5) as inner:
        inner.load_state_dict(source.state_dict())
    total = acc.total(Unit.NODE_DP)
    assert total is not None
    assert total.epsilon == pytest.approx(math.log(1 + 0.5 * (math.exp(2.0) - 1)))


def test_a_malformed_state_is_refused() -> None:
    acc = Accountant()
    acc.spend("a", Guarantee(1.0, 0.0, Unit.EDGE_LDP))
    good = acc.state_dict()
    with pytest.raises(ConfigError, match="format"):
        Accountant().load_state_dict({"parts": good["parts"]})
    bad_unit = json.loads(json.dumps(good))
    bad_unit["parts"][0]["entry"]["unit"] = "no such unit"
    with pytest.raises(ConfigError, match="malformed accountant state"):
        Accountant().load_state_dict(bad_unit)
    curve = Accountant()
    curve.spend_rdp("c", np.ones(ORDERS.size), unit=Unit.NODE_DP)
    short = curve.state_dict()
    short["parts"][0]["rdp_curve"] = [1.0, 2.0]
    target = Accountant()
    target.spend("kept", Guarantee(1.0, 0.0, Unit.EDGE_LDP))
    with pytest.raises(ConfigError, match="RDP curve"):
        target.load_state_dict(short)
    assert len(target) == 1        # a refused state leaves the record as it was
