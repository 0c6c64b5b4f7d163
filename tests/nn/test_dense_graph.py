"""DenseGraph: the same GCN and mean normalisations as PreparedGraph's sparse ones, clear
errors where an edge list is needed."""

from __future__ import annotations

import pytest
import torch

from dpgl.errors import ConfigError, GraphError
from dpgl.nn import PreparedGraph
from dpgl.nn.dense_graph import DenseGraph


def _weighted(n: int = 30, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A symmetric weighted graph with an isolated node: (edge_index, weight, dense)."""
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(n, n, generator=g) * (torch.rand(n, n, generator=g) < 0.3)
    a = torch.triu(a, 1)
    a = a + a.T
    a[3], a[:, 3] = 0.0, 0.0
    ei = a.nonzero().T.flip(0)  # [source j, target i] of a[i, j]
    return ei, a[ei[1], ei[0]], a


@pytest.mark.parametrize("norm", ["gcn_adj", "mean_adj"])
def test_normalisations_equal_the_sparse_ones(norm: str, monkeypatch) -> None:
    ei, w, a = _weighted()
    monkeypatch.setattr("dpgl.nn.dense_graph._BLOCK_ROWS", 7)  # several row blocks
    sparse = getattr(PreparedGraph(ei, a.size(0), w), norm)().to_dense()
    dense = getattr(DenseGraph(a), norm)()
    torch.testing.assert_close(dense, sparse, rtol=1e-6, atol=1e-7)
    assert not torch.any(dense[3] if norm == "mean_adj" else dense[3, torch.arange(30) != 3])
    x = torch.randn(30, 4)
    torch.testing.assert_close(dense @ x, sparse @ x, rtol=1e-5, atol=1e-6)


def test_counts_scaling_and_device() -> None:
    ei, w, a = _weighted()
    g = DenseGraph(a)
    assert g.num_nodes == 30 and g.num_edges == ei.size(1)
    assert g.edge_weight_sum == pytest.approx(float(w.sum()), rel=1e-6)
    assert g.scaled(1.0) is g
    torch.testing.assert_close(g.scaled(0.5).adjacency, a * 0.5)
    assert g.to("cpu") is g


def test_bad_inputs_and_edge_list_uses_are_clear_errors() -> None:
    with pytest.raises(GraphError, match=r"\[n, n\]"):
        DenseGraph(torch.zeros(3, 4))
    with pytest.raises(GraphError, match="float"):
        DenseGraph(torch.zeros(3, 3, dtype=torch.long))
    with pytest.raises(ConfigError, match="GAT"):
        DenseGraph(torch.zeros(3, 3)).attention_edges()
