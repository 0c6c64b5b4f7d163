"""Preprocessing transforms: values, relabelling, and that inputs are never mutated."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

from dpgl.datasets import NormalizeFeatures01, OneHotDegreeClipped, TopKClasses, largest_component
from dpgl.datasets.base import undirected_edge_index
from dpgl.errors import ConfigError, DatasetError


@pytest.fixture
def toy() -> Data:
    # Two components: a triangle {0, 1, 2} plus pendant 3, and an edge {4, 5}; node 6 isolated.
    edge_index = undirected_edge_index([0, 1, 2, 2, 4], [1, 2, 0, 3, 5], 7)
    x = torch.tensor(
        [
            [1.0, 5.0, 2.0],
            [3.0, 5.0, 2.0],
            [2.0, 5.0, 4.0],
            [0.0, 5.0, 3.0],
            [1.0, 5.0, 2.0],
            [4.0, 5.0, 2.0],
            [2.0, 5.0, 2.0],
        ]
    )
    y = torch.tensor([2, 2, 0, 2, 1, 0, 3])
    return Data(x=x, y=y, edge_index=edge_index, num_nodes=7)


def _snapshot(data: Data) -> dict:
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in data.items()}


def _unchanged(data: Data, snap: dict) -> bool:
    return all(
        torch.equal(data[k], v) if isinstance(v, torch.Tensor) else data[k] == v
        for k, v in snap.items()
    ) and set(data.keys()) == set(snap)


def test_normalize_features_01(toy):
    snap = _snapshot(toy)
    out = NormalizeFeatures01()(toy)
    assert _unchanged(toy, snap)
    assert torch.allclose(out.x[:, 0], torch.tensor([0.25, 0.75, 0.5, 0.0, 0.25, 1.0, 0.5]))
    assert torch.equal(out.x[:, 1], torch.zeros(7))  # constant feature -> 0
    assert torch.allclose(out.x[:, 2], torch.tensor([0.0, 0.0, 1.0, 0.5, 0.0, 0.0, 0.0]))
    with pytest.raises(DatasetError, match="no node features"):
        NormalizeFeatures01()(Data(edge_index=toy.edge_index, num_nodes=7))


def test_top_k_classes_relabels_by_size_and_induces_subgraph(toy):
    snap = _snapshot(toy)
    out = TopKClasses(2)(toy)
    assert _unchanged(toy, snap)
    # class sizes: 2 -> 3 nodes, 0 -> 2 nodes (tie with nothing); kept nodes 0, 1, 2, 3, 5
    assert out.num_nodes == 5
    assert out.y.tolist() == [0, 0, 1, 0, 1]
    assert torch.equal(out.x, toy.x[[0, 1, 2, 3, 5]])
    # edges among kept nodes only: triangle + {2, 3}; {4, 5} dropped with node 4
    assert out.edge_index.size(1) == 8
    with pytest.raises(ConfigError, match="has 4 classes"):
        TopKClasses(5)(toy)
    with pytest.raises(ConfigError):
        TopKClasses(0)


def test_top_k_ties_prefer_the_smaller_label():
    data = Data(
        y=torch.tensor([3, 3, 1, 1, 0]), edge_index=torch.empty(2, 0, dtype=torch.long), num_nodes=5
    )
    out = TopKClasses(2)(data)
    assert out.y.tolist() == [1, 1, 0, 0]  # classes 1 and 3 (size 2); 1 comes first


def test_one_hot_degree_clipped(toy):
    snap = _snapshot(toy)
    out = OneHotDegreeClipped(2)(toy)
    assert _unchanged(toy, snap)
    assert tuple(out.x.shape) == (7, 3)
    # degrees 2, 2, 3, 1, 1, 1, 0 -> clipped at 2
    assert out.x.argmax(1).tolist() == [2, 2, 2, 1, 1, 1, 0]
    assert torch.equal(out.x.sum(1), torch.ones(7))
    with pytest.raises(ConfigError):
        OneHotDegreeClipped(0)


def test_largest_component(toy):
    snap = _snapshot(toy)
    out = largest_component(toy)
    assert _unchanged(toy, snap)
    assert out.num_nodes == 4
    assert torch.equal(out.x, toy.x[:4]) and out.y.tolist() == [2, 2, 0, 2]
    assert out.edge_index.size(1) == 8
