"""RDP curves of what an accountant recorded (dpgl.privacy.rdp): what a private selection is
charged from, and what a run's privacy report stores."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting import rdp

from dpgl.errors import PrivacyError
from dpgl.privacy import Accountant, Guarantee, PrivacyReport, Unit, pure_rdp
from dpgl.privacy.multiterm import ORDERS, multiterm_rdp, rdp_to_epsilon
from dpgl.privacy.rdp import round_up


def _gaussian_rdp(sigma: float, q: float, steps: int) -> np.ndarray:
    acc = rdp.RdpAccountant(orders=list(ORDERS))
    acc.compose(dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
    return np.asarray(acc._rdp)


def test_curve_composes_gaussian_curve_and_pure_parts() -> None:
    acc = Accountant(delta=1e-5)
    acc.spend_gaussian("sgd", noise_multiplier=1.1, steps=300, sampling_rate=0.02)
    mt = multiterm_rdp(2.0, 0.05, 2) * 10
    acc.spend_rdp("multi-term", mt, unit=Unit.NODE_DP)
    acc.spend("top-k", Guarantee(0.05, 0.0, Unit.NODE_DP), count=7, composition="optimal",
              delta_slack=1e-6)
    acc.spend("labels", Guarantee(1.0, 0.0, Unit.LABEL_LDP))    # another unit: not counted
    expected = _gaussian_rdp(1.1, 0.02, 300) + mt + 7 * pure_rdp(0.05)
    assert np.allclose(acc.rdp_curve(Unit.NODE_DP), np.minimum.accumulate(expected[::-1])[::-1],
                       rtol=1e-12)
    # the joint epsilon of the Gaussian parts is the one the report states for them
    only_gauss = Accountant(delta=1e-5)
    only_gauss.spend_gaussian("sgd", noise_multiplier=1.1, steps=300, sampling_rate=0.02)
    assert rdp_to_epsilon(only_gauss.rdp_curve("node-DP"), 1e-5) == pytest.approx(
        only_gauss.report().total(Unit.NODE_DP).epsilon, rel=1e-4)  # its own orders


def test_scopes_parallel_is_the_maximum_and_subsampled_the_inner_curve() -> None:
    acc = Accountant(delta=1e-5)
    with acc.parallel("graphs") as scope:
        for eps in (0.5, 2.0, 1.0):
            with scope.member(f"g{eps}") as member:
                member.spend("rr", Guarantee(eps, 0.0, Unit.NODE_DP))
    assert np.allclose(acc.rdp_curve(Unit.NODE_DP), pure_rdp(2.0))
    sub = Accountant(delta=1e-5)
    with sub.subsampled("sample", rate=0.1) as inner:
        inner.spend_rdp("dp-sgd", multiterm_rdp(1.5, 0.1, 1), unit=Unit.NODE_DP)
    assert np.allclose(sub.rdp_curve(Unit.NODE_DP), multiterm_rdp(1.5, 0.1, 1))


def test_parts_without_a_curve_are_refused() -> None:
    acc = Accountant()
    acc.spend("approx", Guarantee(1.0, 1e-6, Unit.NODE_DP))
    with pytest.raises(PrivacyError, match="no RDP curve"):
        acc.rdp_curve(Unit.NODE_DP)
    acc = Accountant()
    acc.spend_nonprivate("graph", "used as is", Unit.NODE_DP)
    with pytest.raises(PrivacyError, match="as is"):
        acc.rdp_curve(Unit.NODE_DP)


def test_report_stores_the_curve_rounded_up_and_reads_it_back() -> None:
    acc = Accountant(delta=1e-5)
    acc.spend_gaussian("sgd", noise_multiplier=0.9, steps=50, sampling_rate=0.1)
    acc.spend_nonprivate("features", "public", Unit.FEATURE_LDP)
    report = acc.report()
    assert set(report.rdp) == {Unit.NODE_DP}              # units with noise only
    stored = report.to_dict()["rdp"]["node-DP"]
    assert len(stored) == ORDERS.size and all(len(f"{x:g}") <= 12 for x in stored)
    back = PrivacyReport.from_dict(report.to_dict())
    exact = acc.rdp_curve(Unit.NODE_DP)
    assert np.all(back.rdp[Unit.NODE_DP] >= exact)
    assert np.allclose(back.rdp[Unit.NODE_DP], exact, rtol=2e-5)
    # a report without noise has no curve (and the dict no "rdp" key, as before)
    plain = Accountant()
    plain.spend("rr", Guarantee(1.0, 0.0, Unit.EDGE_LDP))
    assert "rdp" not in plain.report().to_dict()


def test_round_up_never_decreases() -> None:
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.random(2000) * 10.0 ** rng.integers(-8, 4, 2000), [0.0]])
    assert all(r >= v for r, v in zip(round_up(values), values, strict=True))


def test_state_keeps_each_release_for_the_curve() -> None:
    acc = Accountant()
    acc.spend("top-k", Guarantee(0.2, 0.0, Unit.NODE_DP), count=5, composition="optimal",
              delta_slack=1e-6)
    restored = Accountant()
    restored.load_state_dict(acc.state_dict())
    assert np.allclose(restored.rdp_curve(Unit.NODE_DP), 5 * pure_rdp(0.2))
    assert math.isclose(float(restored.rdp_curve(Unit.NODE_DP)[-1]), 1.0)   # 5 x 0.2 at inf
