"""Mutation closers (docs/mutation.md): the accountant's scopes state what the draws inside
spend. A Poisson (node) subsample of rate q amplifies exactly to log(1 + q (e^eps - 1)) and
q delta, the subsample really keeps each node with probability q, parallel members report
their maximum, evaluation-only charges vanish, and per-user totals add the local units."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from dpgl.central.inductive import node_subsample, poisson_node_subsample
from dpgl.privacy import (
    Accountant,
    GaussianMechanism,
    Guarantee,
    RandomizedResponse,
    Unit,
    amplify_by_subsampling,
    current_accountant,
    evaluation_only,
    gaussian_epsilon,
)


def test_subsampled_scope_amplifies_pure_and_approximate_parts() -> None:
    acc = Accountant()
    with acc.subsampled("sample", 0.2) as inner:
        assert current_accountant() is inner
        RandomizedResponse(1.5, Unit.NODE_DP).charge()
        GaussianMechanism(0.5, 1e-6, unit=Unit.NODE_DP).charge()
    assert current_accountant() is None
    total = acc.report().total(Unit.NODE_DP)
    assert total is not None
    eps, delta = amplify_by_subsampling(2.0, 1e-6, 0.2)
    assert total.epsilon == pytest.approx(math.log1p(0.2 * math.expm1(2.0)))
    assert total.epsilon == pytest.approx(eps)
    assert total.delta == pytest.approx(0.2 * 1e-6) == pytest.approx(delta)
    # the scope's entry states the same, after the inner parts
    (scope_entry,) = [e for e in acc.report().entries if e.name == "sample"]
    assert scope_entry.epsilon == pytest.approx(eps) and scope_entry.unit is Unit.NODE_DP


def test_subsampled_scope_composes_gaussian_parts_at_the_inner_delta() -> None:
    acc = Accountant(delta=1e-5)
    with acc.subsampled("sample", 0.5, delta=1e-6):
        current_accountant().spend_gaussian("g", noise_multiplier=2.0, steps=3)  # type: ignore[union-attr]
    inner = gaussian_epsilon(2.0, 1e-6, steps=3)
    eps, delta = amplify_by_subsampling(inner, 1e-6, 0.5)
    total = acc.report().total(Unit.NODE_DP)
    assert total is not None
    assert total.epsilon == pytest.approx(eps, rel=1e-6)
    assert total.delta == pytest.approx(delta)
    # without an inner delta the outer one is used
    acc2 = Accountant(delta=1e-5)
    with acc2.subsampled("sample", 0.5):
        current_accountant().spend_gaussian("g", noise_multiplier=2.0, steps=3)  # type: ignore[union-attr]
    total2 = acc2.report().total(Unit.NODE_DP)
    assert total2 is not None
    assert total2.epsilon == pytest.approx(
        amplify_by_subsampling(gaussian_epsilon(2.0, 1e-5, steps=3), 1e-5, 0.5)[0], rel=1e-6)


def test_subsampled_scope_keeps_units_apart_and_no_privacy_stays_none() -> None:
    acc = Accountant()
    with acc.subsampled("sample", 0.1):
        RandomizedResponse(1.0, Unit.EDGE_LDP).charge()
        current_accountant().spend_nonprivate("raw", "used as is", Unit.LABEL_LDP)  # type: ignore[union-attr]
    report = acc.report()
    edge, label = report.total(Unit.EDGE_LDP), report.total(Unit.LABEL_LDP)
    assert edge is not None and label is not None
    assert edge.epsilon == pytest.approx(math.log1p(0.1 * math.expm1(1.0)))
    assert math.isinf(label.epsilon)


def test_node_subsample_keeps_rate_q_and_records_the_amplification() -> None:
    n = 4000
    graph = Data(x=torch.zeros(n, 1), edge_index=torch.zeros(2, 0, dtype=torch.long),
                 num_nodes=n)
    sub, ids = poisson_node_subsample(graph, 0.25, np.random.default_rng(0))
    assert ids.size == pytest.approx(0.25 * n, rel=0.06)
    assert int(sub.num_nodes) == ids.size
    full, all_ids = poisson_node_subsample(graph, 1.0, np.random.default_rng(0))
    assert full is graph and all_ids.tolist() == list(range(n))
    acc = Accountant()
    with acc.active():
        with node_subsample(graph, 0.25, np.random.default_rng(1), name="nodes") as (s, kept):
            assert kept.size == int(s.num_nodes)
            RandomizedResponse(2.0, Unit.NODE_DP).charge()
        with node_subsample(graph, 1.0, np.random.default_rng(1), name="all"):
            RandomizedResponse(0.5, Unit.NODE_DP).charge()
    total = acc.report().total(Unit.NODE_DP)
    assert total is not None
    assert total.epsilon == pytest.approx(math.log1p(0.25 * math.expm1(2.0)) + 0.5)


def test_parallel_members_report_their_maximum() -> None:
    acc = Accountant(delta=1e-5)
    with acc.active(), acc.parallel("graphs") as scope:
        with scope.member("a"):
            RandomizedResponse(1.0, Unit.EDGE_LDP).charge()
        with scope.member("b"):
            RandomizedResponse(2.5, Unit.EDGE_LDP).charge()
            RandomizedResponse(0.5, Unit.EDGE_LDP).charge()
        with scope.member("c"):
            GaussianMechanism(0.5, 1e-7, unit=Unit.EDGE_LDP).charge()
    assert len(scope) == 3
    total = acc.report().total(Unit.EDGE_LDP)
    assert total is not None
    assert total.epsilon == pytest.approx(3.0)
    assert total.delta == 0.0
    # a tie in epsilon goes to the larger delta
    acc2 = Accountant()
    with acc2.parallel("g") as scope2:
        with scope2.member("a"):
            current_accountant().spend("p", Guarantee(1.0, 0.0, Unit.NODE_DP))  # type: ignore[union-attr]
        with scope2.member("b"):
            current_accountant().spend("p", Guarantee(1.0, 1e-6, Unit.NODE_DP))  # type: ignore[union-attr]
    tie = acc2.report().total(Unit.NODE_DP)
    assert tie is not None and tie.epsilon == 1.0 and tie.delta == pytest.approx(1e-6)


def test_evaluation_only_charges_are_dropped_and_the_run_continues() -> None:
    acc = Accountant()
    with acc.active():
        RandomizedResponse(1.0, Unit.EDGE_LDP).charge()
        with evaluation_only() as scratch:
            RandomizedResponse(5.0, Unit.EDGE_LDP).charge()
        assert current_accountant() is acc
        assert len(scratch) == 1
        RandomizedResponse(0.25, Unit.EDGE_LDP).charge()
    total = acc.report().total(Unit.EDGE_LDP)
    assert total is not None and total.epsilon == pytest.approx(1.25)


def test_per_user_adds_every_local_unit() -> None:
    acc = Accountant()
    acc.spend("e", Guarantee(1.0, 1e-7, Unit.EDGE_LDP))
    acc.spend("f", Guarantee(2.0, 0.0, Unit.FEATURE_LDP))
    acc.spend("l", Guarantee(0.5, 2e-7, Unit.LABEL_LDP))
    acc.spend("n", Guarantee(9.0, 0.0, Unit.NODE_DP))
    per_user = acc.report().per_user
    assert per_user is not None and per_user.unit is Unit.USER_LDP
    assert per_user.epsilon == pytest.approx(3.5)
    assert per_user.delta == pytest.approx(3e-7)


def test_record_nonprivate_makes_the_unit_unprotected() -> None:
    from dpgl.privacy.randomizer import record_nonprivate

    acc = Accountant()
    with acc.active():
        RandomizedResponse(1.0, Unit.EDGE_LDP).charge()
        record_nonprivate("true lists", "sent as is", Unit.EDGE_LDP)
    report = acc.report()
    edge = report.total(Unit.EDGE_LDP)
    assert edge is not None and math.isinf(edge.epsilon)
    (entry,) = [e for e in report.entries if e.kind == "nonprivate"]
    assert entry.name == "true lists" and entry.unit is Unit.EDGE_LDP
    record_nonprivate("outside", "no accountant", Unit.EDGE_LDP)   # a no-op, no error
