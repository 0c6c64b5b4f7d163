"""The accountant: reference values, composition rules per unit, and the report."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from dpgl.errors import ConfigError, PrivacyError
from dpgl.privacy import (
    Accountant,
    Guarantee,
    PrivacyReport,
    Unit,
    advanced_composition_epsilon,
    gaussian_epsilon,
    optimal_composition_epsilon,
)


def dpsgd_accountant() -> Accountant:
    acc = Accountant()
    acc.spend_gaussian("dp-sgd", noise_multiplier=1.0, steps=1000, sampling_rate=0.01,
                       sampling="poisson", unit=Unit.NODE_DP)
    return acc


def test_reference_rdp() -> None:
    rep = dpsgd_accountant().report(1e-5, method="rdp")
    assert rep.totals[Unit.NODE_DP].epsilon == pytest.approx(2.1014, abs=1e-3)
    assert rep.totals[Unit.NODE_DP].delta == 1e-5
    assert rep.entries[0].epsilon == pytest.approx(2.1014, abs=1e-3)
    assert rep.method == "rdp" and rep.delta == 1e-5


def test_reference_pld() -> None:
    rep = dpsgd_accountant().report(1e-5, method="pld")
    assert rep.totals[Unit.NODE_DP].epsilon == pytest.approx(1.8282, abs=1e-3)


def test_default_delta_and_missing_delta() -> None:
    acc = Accountant(delta=1e-5)
    acc.spend_gaussian("g", noise_multiplier=1.0, steps=1000, sampling_rate=0.01)
    assert acc.report().totals[Unit.NODE_DP].epsilon == pytest.approx(2.1014, abs=1e-3)
    acc2 = dpsgd_accountant()
    with pytest.raises(PrivacyError, match="target delta"):
        acc2.report()
    acc2.delta = 1e-5          # e.g. set by a method from its delta hyper-parameter
    assert acc2.report().delta == 1e-5
    with pytest.raises(PrivacyError):
        acc2.delta = 2.0


def test_pure_parts_add_and_units_stay_separate() -> None:
    acc = Accountant()
    acc.spend("degree", Guarantee.pure(0.5, Unit.EDGE_LDP), mechanism="Laplace")
    acc.spend("rr", Guarantee.pure(1.5, Unit.EDGE_LDP), mechanism="RR")
    acc.spend("features", Guarantee.pure(2.0, Unit.FEATURE_LDP), mechanism="multi-bit")
    acc.spend("labels", Guarantee.pure(1.0, Unit.LABEL_LDP), mechanism="k-RR")
    acc.spend("central", Guarantee(3.0, 1e-6, Unit.NODE_DP), mechanism="x")
    rep = acc.report()
    assert rep.totals[Unit.EDGE_LDP] == Guarantee.pure(2.0, Unit.EDGE_LDP)
    assert rep.totals[Unit.FEATURE_LDP] == Guarantee.pure(2.0, Unit.FEATURE_LDP)
    assert rep.totals[Unit.NODE_DP] == Guarantee(3.0, 1e-6, Unit.NODE_DP)
    # per user: edge + feature + label LDP by basic composition; node-DP not included
    assert rep.per_user == Guarantee.pure(5.0, Unit.USER_LDP)
    assert rep.delta is None and rep.method is None   # no Gaussian parts
    assert rep.private


def test_no_local_parts_no_per_user() -> None:
    acc = Accountant()
    acc.spend("x", Guarantee.pure(1.0, Unit.NODE_DP))
    assert acc.report().per_user is None


def test_gaussian_parts_compose_jointly_then_add_to_pure() -> None:
    acc = Accountant()
    acc.spend_gaussian("a", noise_multiplier=1.0, steps=500, sampling_rate=0.01)
    acc.spend_gaussian("b", noise_multiplier=1.0, steps=500, sampling_rate=0.01)
    acc.spend("topk", Guarantee.pure(0.5, Unit.NODE_DP))
    rep = acc.report(1e-5)
    joint = gaussian_epsilon(1.0, 1e-5, steps=1000, sampling_rate=0.01)
    assert rep.totals[Unit.NODE_DP].epsilon == pytest.approx(joint + 0.5, rel=1e-9)
    assert rep.totals[Unit.NODE_DP].delta == pytest.approx(1e-5)
    separate = sum(e.epsilon for e in rep.entries if e.kind == "gaussian")
    assert joint < separate                # joint RDP composition beats adding epsilons


def test_gaussian_units_separate() -> None:
    acc = Accountant()
    acc.spend_gaussian("node", noise_multiplier=1.0, steps=1000, sampling_rate=0.01)
    acc.spend_gaussian("edge", noise_multiplier=2.0, steps=10, unit=Unit.EDGE_DP)
    rep = acc.report(1e-5)
    assert rep.totals[Unit.NODE_DP].epsilon == pytest.approx(2.1014, abs=1e-3)
    assert rep.totals[Unit.EDGE_DP].epsilon == pytest.approx(
        gaussian_epsilon(2.0, 1e-5, steps=10), rel=1e-12)


def test_fixed_size_sampling() -> None:
    acc = Accountant()
    acc.spend_gaussian("g", noise_multiplier=1.0, steps=1000, sampling_rate=0.01,
                       sampling="fixed")
    rdp = acc.report(1e-5).totals[Unit.NODE_DP].epsilon
    # replace-one fixed-size sampling costs more than add/remove Poisson sampling
    assert rdp > 2.1014
    pld = acc.report(1e-5, method="pld")
    assert pld.totals[Unit.NODE_DP].epsilon == pytest.approx(rdp)
    assert any("pld does not support fixed-size sampling" in n for n in pld.notes)
    with pytest.raises(PrivacyError, match="cannot compose Poisson"):
        acc.spend_gaussian("h", noise_multiplier=1.0, steps=10, sampling_rate=0.01)
    # an explicit dataset size gives the same event when the rate is exact
    acc2 = Accountant()
    acc2.spend_gaussian("g", noise_multiplier=1.0, steps=1000, sampling_rate=0.01,
                        sampling="fixed", dataset_size=5000)
    assert acc2.report(1e-5).totals[Unit.NODE_DP].epsilon == pytest.approx(rdp)


def test_count_with_compositions() -> None:
    acc = Accountant()
    g = Guarantee.pure(0.1, Unit.NODE_DP)
    basic = acc.spend("basic", g, count=100)
    adv = acc.spend("adv", g, count=100, composition="advanced", delta_slack=1e-6)
    opt = acc.spend("opt", g, count=100, composition="optimal", delta_slack=1e-6)
    best = acc.spend("best", g, count=100, composition="best", delta_slack=1e-6)
    assert basic == Guarantee.pure(10.0, Unit.NODE_DP)
    assert adv.epsilon == pytest.approx(advanced_composition_epsilon(0.1, 100, 1e-6))
    assert opt.epsilon == pytest.approx(optimal_composition_epsilon(0.1, 100, 1e-6))
    assert best.epsilon == pytest.approx(opt.epsilon)
    assert opt.epsilon < adv.epsilon < basic.epsilon
    rep = acc.report()
    assert [e.count for e in rep.entries] == [100] * 4
    assert rep.entries[3].composition == "best (optimal)"
    assert rep.totals[Unit.NODE_DP].epsilon == pytest.approx(
        basic.epsilon + adv.epsilon + opt.epsilon + best.epsilon)
    assert rep.totals[Unit.NODE_DP].delta == pytest.approx(3e-6)
    with pytest.raises(PrivacyError, match="delta_slack"):
        acc.spend("x", g, count=3, composition="advanced")


def test_nonprivate_is_stated_plainly() -> None:
    acc = Accountant()
    acc.spend("features", Guarantee.pure(2.0, Unit.FEATURE_LDP))
    acc.spend_nonprivate("graph", "adjacency matrix used as is", Unit.EDGE_LDP)
    rep = acc.report()
    assert math.isinf(rep.totals[Unit.EDGE_LDP].epsilon)
    assert rep.totals[Unit.FEATURE_LDP].epsilon == 2.0
    assert math.isinf(rep.per_user.epsilon)  # type: ignore[union-attr]
    assert not rep.private
    assert "edge-LDP no privacy: used as is" in str(rep)
    text = rep.render()
    assert "edge-LDP     no privacy: used as is" in text and "adjacency matrix used as is" in text
    assert text.splitlines()[-1] == "  Graph: used as is (no privacy)."
    acc2 = Accountant()
    acc2.spend_nonprivate("baseline", "everything used as is", Unit.NONE)
    assert "no privacy" in str(acc2.report())
    assert acc2.report().headline == "Nothing is protected: baseline used as is."
    # a Guarantee.none() spend is the same thing
    acc3 = Accountant()
    acc3.spend("baseline", Guarantee.none())
    assert acc3.report().entries[0].kind == "nonprivate"


def test_empty_report() -> None:
    rep = Accountant().report()
    assert rep.empty and not rep.private
    assert str(rep) == "privacy: no data release recorded"
    assert "no data release recorded" in rep.render()
    assert PrivacyReport.from_dict(json.loads(json.dumps(rep.to_dict()))).empty


def test_report_round_trip_and_render() -> None:
    acc = dpsgd_accountant()
    acc.spend("features", Guarantee.pure(2.0, Unit.FEATURE_LDP), mechanism="multi-bit")
    acc.spend_nonprivate("labels", "labels used as is", Unit.LABEL_LDP)
    rep = acc.report(1e-5)
    d = json.loads(json.dumps(rep.to_dict()))          # JSON-serializable (inf -> null)
    assert d["totals"]["label-LDP"]["epsilon"] is None
    back = PrivacyReport.from_dict(d)
    assert back.totals == rep.totals
    assert back.per_user == rep.per_user
    assert [e.name for e in back.entries] == ["dp-sgd", "features", "labels"]
    assert back.entries[0].epsilon == pytest.approx(rep.entries[0].epsilon)
    assert str(back) == str(rep)
    assert back.headline == rep.headline and back.render() == rep.render()
    text = rep.render()
    for needle in ("dp-sgd", "node-DP", "feature-LDP", "eps=2.101", "multi-bit", "RDP"):
        assert needle in text
    assert "\n" not in str(rep)
    with pytest.raises(ConfigError, match="malformed"):
        PrivacyReport.from_dict({"entries": [{"unit": "node-DP"}]})


def test_dp_event_exposed() -> None:
    acc = dpsgd_accountant()
    ev = acc.dp_event(Unit.NODE_DP)
    assert "PoissonSampledDpEvent" in repr(ev)
    assert "NoOp" in type(acc.dp_event(Unit.EDGE_LDP)).__name__


@pytest.mark.parametrize("kwargs", [
    {"noise_multiplier": 0.0}, {"noise_multiplier": -1.0}, {"noise_multiplier": float("nan")},
    {"noise_multiplier": 1.0, "steps": 0}, {"noise_multiplier": 1.0, "sampling_rate": 0.0},
    {"noise_multiplier": 1.0, "sampling_rate": 1.5}, {"noise_multiplier": 1.0, "sampling": "x"},
    {"noise_multiplier": 1.0, "unit": "bogus"}, {"noise_multiplier": 1.0, "unit": Unit.NONE},
])
def test_bad_gaussian_spends(kwargs: dict) -> None:
    with pytest.raises((PrivacyError, ConfigError)):
        Accountant().spend_gaussian("g", **kwargs)


def test_bad_spends_and_report_args() -> None:
    acc = Accountant()
    with pytest.raises(ConfigError, match="name"):
        acc.spend("", Guarantee.pure(1.0, Unit.NODE_DP))
    with pytest.raises(ConfigError, match="Guarantee"):
        acc.spend("x", 1.0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="composition"):
        acc.spend("x", Guarantee.pure(1.0, Unit.NODE_DP), count=2, composition="magic")
    with pytest.raises(PrivacyError):
        acc.spend("x", Guarantee.pure(1.0, Unit.NODE_DP), count=0)
    with pytest.raises(ConfigError, match="method"):
        acc.report(method="prv")
    with pytest.raises(PrivacyError):
        acc.report(delta=1.5)
    with pytest.raises(PrivacyError):
        Accountant(delta=0.0)
    assert len(acc) == 0


def test_headline_states_subject_budget_parts_and_what_is_used_as_is() -> None:
    acc = Accountant()
    acc.spend("RR", Guarantee(1.5, 0.0, Unit.EDGE_LDP))
    acc.spend("degree", Guarantee(0.5, 0.0, Unit.EDGE_LDP))
    acc.spend_nonprivate("labels", "labels used as is", Unit.LABEL_LDP)
    h = acc.report().headline
    assert h == ("Protected: each user's neighbour list, eps = 2 edge-LDP (RR 1.5 + degree 0.5). "
                 "Not protected: labels (used as is).")


def test_headline_says_noisy_parts_compose_jointly() -> None:
    acc = Accountant(delta=1e-5)
    for name in ("encoder", "classifier"):
        acc.spend_gaussian(name, noise_multiplier=1.0, steps=100, sampling_rate=0.01,
                           sampling="poisson", unit=Unit.NODE_DP)
    rep = acc.report()
    parts = [e.epsilon for e in rep.entries]
    assert rep.totals[Unit.NODE_DP].epsilon < sum(parts)     # joint RDP beats adding
    assert "each alone; the noisy parts compose jointly" in rep.headline
    assert "Not protected" not in rep.headline


def test_headline_says_what_the_setting_assumes_public() -> None:
    """Data used as is whose unit the method's setting assumes public (Blink: node features
    and labels) is said to be public, calmly; other data used as is is not protected."""
    acc = Accountant()
    acc.spend("RR", Guarantee(3.6, 0.0, Unit.EDGE_LDP))
    acc.spend("degree", Guarantee(0.4, 0.0, Unit.EDGE_LDP))
    acc.spend_nonprivate("node features", "known to the server", Unit.FEATURE_LDP)
    acc.spend_nonprivate("labels", "known to the server", Unit.LABEL_LDP)
    rep = dataclasses.replace(acc.report(), public=frozenset({Unit.FEATURE_LDP,
                                                              Unit.LABEL_LDP}))
    assert rep.headline == (
        "Protected: each user's neighbour list, eps = 4 edge-LDP (RR 3.6 + degree 0.4). "
        "Not protected: node features and labels (assumed public in this setting).")
    text = rep.render()
    assert text.splitlines()[0] == rep.headline
    assert "feature-LDP  not protected: used as is (public in this setting)" in text
    assert text.splitlines()[-1] == ("  Node features and labels: used as is (public in this "
                                     "setting).")
    assert "NO PRIVACY" not in text
    back = PrivacyReport.from_dict(json.loads(json.dumps(rep.to_dict())))
    assert back.public == rep.public and back.render() == text
    # an older stored report has no "public": everything used as is reads as not protected
    old = rep.to_dict()
    del old["public"]
    assert PrivacyReport.from_dict(old).headline.endswith(
        "Not protected: node features and labels (used as is).")
    # nothing protected, everything used is public in the setting
    acc = Accountant()
    acc.spend_nonprivate("graph", "known to the server", Unit.EDGE_LDP)
    rep = dataclasses.replace(acc.report(), public=frozenset({Unit.EDGE_LDP}))
    assert rep.headline == ("Nothing private is used: graph used as is (assumed public in this "
                            "setting).")
