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
    sparse_op = getattr(PreparedGraph(ei, a.size(0), w), norm)()
    dense_op = getattr(DenseGraph(a), norm)()
    sparse, dense = sparse_op.to_dense(), dense_op.to_dense()
    torch.testing.assert_close(dense, sparse, rtol=1e-6, atol=1e-7)
    assert not torch.any(dense[3] if norm == "mean_adj" else dense[3, torch.arange(30) != 3])
    # the product and its gradient (A^T g, computed as (g^T A)^T) as the sparse operator's
    x = torch.randn(30, 4)
    g = torch.randn(30, 4)
    xs, xd = x.clone().requires_grad_(), x.clone().requires_grad_()
    ys, yd = sparse_op @ xs, dense_op @ xd
    torch.testing.assert_close(yd, ys, rtol=1e-5, atol=1e-6)
    (ys * g).sum().backward()
    (yd * g).sum().backward()
    torch.testing.assert_close(xd.grad, xs.grad, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(xd.grad, dense.t() @ g, rtol=1e-5, atol=1e-6)


def test_a_symmetric_graph_takes_the_symmetric_product_an_asymmetric_one_does_not() -> None:
    a = _weighted()[2]
    g = DenseGraph(a)
    assert g.is_symmetric() and g.gcn_adj().symmetric
    lopsided = a.clone()
    lopsided[0, 1] += 1.0
    h = DenseGraph(lopsided)
    assert not h.is_symmetric() and not h.gcn_adj().symmetric
    x = torch.randn(30, 3)
    torch.testing.assert_close(h.gcn_adj() @ x, h.gcn_adj().to_dense() @ x)


def test_counts_scaling_and_device() -> None:
    ei, w, a = _weighted()
    g = DenseGraph(a)
    assert g.num_nodes == 30 and g.num_edges == ei.size(1)
    assert g.num_edges == ei.size(1)  # the cached count
    assert g.scaled(0.5).num_edges == ei.size(1)
    assert DenseGraph(a[:5, :5]).num_edges == int((a[:5, :5] != 0).sum())
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
