"""PyG transforms of the edge-LDP pipelines: new Data, input untouched, output format,
guarantees, reproducibility, input validation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from _edge_graphs import random_graph
from dpgl.errors import ConfigError, GraphError
from dpgl.privacy import Unit
from dpgl.transforms import (
    BlinkTransform,
    DPRRTransform,
    LDPGenTransform,
    LocalLapTransform,
    RRTransform,
    SymRRTransform,
)

N = 120


def make_data() -> Data:
    u, v = random_graph(N, 0.05, seed=0)
    ei = torch.from_numpy(np.stack([np.concatenate([u, v]), np.concatenate([v, u])]))
    return Data(x=torch.randn(N, 3), y=torch.arange(N) % 2, edge_index=ei,
                edge_attr=torch.ones(ei.size(1), 1))


FACTORIES = {
    "rr": (lambda s: RRTransform(3.0, seed=s), False, False),
    "rr_or": (lambda s: RRTransform(3.0, symmetrize="or", seed=s), True, False),
    "symrr": (lambda s: SymRRTransform(3.0, seed=s), True, False),
    "dprr": (lambda s: DPRRTransform(3.0, seed=s), False, False),
    "dprr_reported": (lambda s: DPRRTransform(3.0, direction="reported", seed=s), False, False),
    "rr_reported": (lambda s: RRTransform(3.0, direction="reported", seed=s), False, False),
    "dprr_and_np": (lambda s: DPRRTransform(3.0, symmetrize="and", non_private_fraction=0.2,
                                            seed=s), True, False),
    "blink_hard": (lambda s: BlinkTransform(3.0, variant="hard", seed=s), True, False),
    "blink_hybrid": (lambda s: BlinkTransform(3.0, variant="hybrid", seed=s), True, True),
    "blink_soft": (lambda s: BlinkTransform(3.0, variant="soft", seed=s), True, True),
    "locallap": (lambda s: LocalLapTransform(3.0, seed=s), True, False),
    "ldpgcn": (lambda s: LocalLapTransform(3.0, variant="ldpgcn", seed=s), True, False),
    "ldpgen": (lambda s: LDPGenTransform(3.0, k1=4, seed=s), True, False),
    "ldpgen_blink_authors": (lambda s: LDPGenTransform(3.0, k1=4, generator="blink-authors-bug",
                                                       seed=s), False, False),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_transform_contract(name: str) -> None:
    factory, symmetric, weighted = FACTORIES[name]
    data = make_data()
    before = data.edge_index.clone()
    t = factory(7)
    out = t(data)
    assert out is not data
    assert torch.equal(data.edge_index, before) and "edge_attr" in data  # input untouched
    assert out.x is data.x and torch.equal(out.y, data.y)
    assert "edge_attr" not in out
    ei = out.edge_index
    assert ei.dtype == torch.int64 and ei.dim() == 2 and ei.size(0) == 2 and ei.size(1) > 0
    assert int(ei.min()) >= 0 and int(ei.max()) < N and not bool((ei[0] == ei[1]).any())
    pairs = set(map(tuple, ei.t().tolist()))
    assert len(pairs) == ei.size(1)
    if symmetric:
        assert pairs == {(b, a) for a, b in pairs}
    if weighted:
        assert out.edge_weight.dtype == torch.float32
        assert out.edge_weight.shape == (ei.size(1),)
        assert bool(((out.edge_weight > 0) & (out.edge_weight <= 1)).all())
    else:
        assert "edge_weight" not in out
    assert t.guarantee.epsilon == 3.0 and t.guarantee.unit is Unit.EDGE_LDP
    again = factory(7)(make_data())
    assert torch.equal(again.edge_index, ei)  # same seed, same graph


def test_transform_rejects_bad_graphs() -> None:
    t = RRTransform(1.0, seed=0)
    with pytest.raises(GraphError, match="not symmetric"):
        t(Data(edge_index=torch.tensor([[0, 1], [1, 2]]), num_nodes=3))
    with pytest.raises(GraphError, match="self-loops"):
        t(Data(edge_index=torch.tensor([[0, 0], [0, 0]]), num_nodes=3))
    with pytest.raises(GraphError, match="no edge_index"):
        t(Data(x=torch.zeros(3, 1)))
    with pytest.raises(ConfigError, match="seed"):
        RRTransform(1.0)
    with pytest.raises(ConfigError, match="symmetrization"):
        RRTransform(1.0, symmetrize="both", seed=0)
    with pytest.raises(ConfigError, match="Blink variant"):
        BlinkTransform(1.0, variant="medium", seed=0)


@pytest.mark.parametrize("make", [
    lambda direction: RRTransform(2.0, seed=5, direction=direction),
    lambda direction: DPRRTransform(2.0, seed=5, direction=direction),
], ids=["rr", "dprr"])
def test_report_directions_are_transposes(make) -> None:
    """direction="user": user i's report of j is the edge j -> i (she aggregates from her
    list); "reported": the edge i -> j (Blink's code: the reported node aggregates from its
    reporters). The same seed draws the same reports, so the graphs are transposes; the
    reports are not symmetric, so the two differ."""
    user = make("user")(make_data()).edge_index
    reported = make("reported")(make_data()).edge_index
    as_user = set(map(tuple, user.t().tolist()))
    as_reported = set(map(tuple, reported.t().tolist()))
    assert as_reported == {(b, a) for a, b in as_user}
    assert as_reported != as_user
    assert "direction='reported'" in repr(make("reported"))


def test_report_direction_orients_only_directed_reports() -> None:
    with pytest.raises(ConfigError, match="report direction"):
        RRTransform(1.0, seed=0, direction="both")
    with pytest.raises(ConfigError, match="orients directed reports"):
        RRTransform(1.0, seed=0, symmetrize="or", direction="reported")
    with pytest.raises(ConfigError, match="orients directed reports"):
        DPRRTransform(1.0, seed=0, symmetrize="and", direction="reported")
