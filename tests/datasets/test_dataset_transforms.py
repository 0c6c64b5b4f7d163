"""Preprocessing transforms: values, relabelling, and that inputs are never mutated."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

from dpgl.datasets import (
    NormalizeFeatures01,
    NormalizeRows,
    OneHotDegreeClipped,
    TopKClasses,
    largest_component,
    load_dataset,
)
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


def test_normalize_rows_is_pygs_normalize_features_on_non_negative_features(toy):
    from torch_geometric.transforms import NormalizeFeatures
    toy.x = torch.cat([toy.x[:6], torch.zeros(1, 3)])  # an all-zero row stays zero
    toy.x[5] = torch.tensor([0.2, 0.1, 0.0])            # a row summing below 1: as PyG, kept
    snap = _snapshot(toy)
    out = NormalizeRows()(toy)
    assert _unchanged(toy, snap)
    assert torch.allclose(out.x[0], torch.tensor([1.0, 5.0, 2.0]) / 8)
    assert torch.allclose(out.x[:5].sum(-1), torch.ones(5))
    assert torch.equal(out.x[6], torch.zeros(3)) and torch.allclose(out.x[5], toy.x[5])
    assert torch.allclose(out.x, NormalizeFeatures()(toy.clone()).x)
    assert repr(NormalizeRows()) == "NormalizeRows()"
    toy.x[0, 0] = -1.0
    with pytest.raises(DatasetError, match="non-negative"):
        NormalizeRows()(toy)
    with pytest.raises(DatasetError, match="no node features"):
        NormalizeRows()(Data(edge_index=toy.edge_index, num_nodes=7))


def test_normalize_rows_option_of_load_dataset() -> None:
    onehot = load_dataset("csbm", seed=0, num_nodes=50, features="one-hot-degree",
                          max_degree=8)
    rows = load_dataset("csbm", seed=0, num_nodes=50, features="one-hot-degree",
                        max_degree=8, normalize_rows=True)
    assert torch.equal(rows.x, onehot.x) and rows.feature_range[:2] == (0.0, 1.0)
    with pytest.raises(DatasetError, match="non-negative"):  # csbm's features are Gaussian
        load_dataset("csbm", seed=0, num_nodes=50, normalize_rows=True)
    with pytest.raises(ConfigError, match="exclude each other"):
        load_dataset("csbm", seed=0, num_nodes=50, normalize_rows=True,
                     normalize_features=True)


def test_blink_protocol_data_on_cora_and_citeseer(shared_data_dir) -> None:
    """The authors' fixed split on PyG's node order: the test part's largest class is 34.1 %
    of it on Cora and 20.6 % on CiteSeer, the constant-predictor floors of the paper's flat
    RR / DPRR / LDPGen curves; row-normalised binary features sum to 1 (0 for CiteSeer's
    featureless padded test ids)."""
    from dpgl.graph.splits import blink_fixed_split
    for name, n, share in (("cora", 2708, 0.341), ("citeseer", 3327, 0.206)):
        data = load_dataset(name, shared_data_dir, normalize_rows=True)
        assert data.num_nodes == n
        test = blink_fixed_split(n).test
        assert test.numel() == n // 4 + (name == "citeseer")  # 677 and 832
        y = data.y[test]
        assert float(torch.bincount(y).max()) / y.numel() == pytest.approx(share, abs=5e-4)
        sums = data.x.sum(-1)
        assert bool(torch.isclose(sums, torch.ones(n)).logical_or(sums == 0).all())
        assert data.feature_range[:2] == (0.0, 1.0)
