"""The GNN Solitude trains on learned edge weights (Lin, Li & Wang, IEEE TIFS 2022, Sec. IV-C):
a weighted GCN or weighted-mean GraphSAGE, differentiable in the weights so the GNN loss
reaches the structure learner's A^c (:mod:`dpgl.estimators.solitude`).

Both propagate with :class:`dpgl.graph.edge_operator.EdgeOperator` (one sparse product a layer;
the GCN normalisation computed once a forward pass for both layers) instead of PyG's
edge-list message passing; the GCN layer is PyG's ``GCNConv`` in parameters, initialisation
and output (tests/graph/test_edge_operator.py compares them), not always in the order of
its float sums.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn.dense.linear import Linear

from dpgl.errors import GraphError, unknown_name
from dpgl.graph.edge_operator import BoundEdgeOperator, EdgeOperator
from dpgl.nn.models import ACTIVATIONS

__all__ = ["WeightedGNN"]


class _WeightedGCN(nn.Module):
    """GCN layer on weighted edges, PyG ``GCNConv``'s defaults (Kipf & Welling 2017, Eq. 2;
    weighted: Blink App. B Eq. 20): ``D^-1/2 (A(w) + I) D^-1/2 x W + b`` with ``D`` the weighted
    in-degree plus the self-loop's 1. Same parameters and draws as ``GCNConv(in, out)``: ``W``
    Glorot (``lin.weight``), ``b`` zero (``bias``). The normalised adjacency and the self-loops'
    ``1 / D`` are inputs (:func:`_gcn_norm`), shared by both layers of :class:`WeightedGNN`."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.lin = Linear(in_dim, out_dim, bias=False, weight_initializer="glorot")
        self.bias = nn.Parameter(torch.empty(out_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.lin.reset_parameters()
        nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, adj: BoundEdgeOperator,
                self_norm: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)  # linear first: propagation then runs on out_dim columns
        return adj(h) + h * self_norm[:, None] + self.bias


def _gcn_norm(op: EdgeOperator, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``D^-1/2 w_e D^-1/2`` per edge and ``1 / D`` per node (the self-loop's entry), with
    ``D_i = 1 + sum_{e -> i} w_e`` (PyG's ``gcn_norm`` with ``add_remaining_self_loops`` on
    an edge list without self-loops); a zero degree gives a zero row."""
    deg = op.in_degree(weight) + 1.0
    inv_sqrt = deg.pow(-0.5).masked_fill(deg <= 0, 0.0)
    edge = inv_sqrt.index_select(0, op.src) * weight * inv_sqrt.index_select(0, op.dst)
    return edge, inv_sqrt * inv_sqrt


class _WeightedMeanSAGE(nn.Module):
    """GraphSAGE-mean with edge weights: W_l (sum_j w_ij x_j / sum_j w_ij) + W_r x_i
    (weighted form of Blink App. B Eq. 22); differentiable in the weights."""

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.lin_l = nn.Linear(in_dim, out_dim)
        self.lin_r = nn.Linear(in_dim, out_dim, bias=False)

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin_l.weight)
        nn.init.zeros_(self.lin_l.bias)
        nn.init.xavier_uniform_(self.lin_r.weight)

    def forward(self, x: torch.Tensor, adj: BoundEdgeOperator,
                deg: torch.Tensor) -> torch.Tensor:
        h = self.lin_l(x)  # linear first: aggregation then runs on out_dim columns
        agg = adj(h) / deg.clamp_min(1e-12)[:, None]
        bias = self.lin_l.bias
        agg = agg + bias * (deg <= 1e-12).to(h.dtype)[:, None]  # isolated rows keep the bias
        return agg + self.lin_r(x)


class WeightedGNN(nn.Module):
    """Two-layer GCN or GraphSAGE (hidden 16, SeLU, dropout; Solitude Sec. V-A) whose edge
    weights are an input, so gradients flow to A^c. Xavier initialisation."""

    def __init__(self, kind: str, in_dim: int, out_dim: int, *, hidden: int = 16,
                 dropout: float = 0.5, activation: str = "selu") -> None:
        super().__init__()
        if kind not in ("gcn", "sage"):
            raise unknown_name("Solitude backbone", kind, ["gcn", "sage"])
        self.kind = kind
        if kind == "gcn":
            self.conv1: nn.Module = _WeightedGCN(in_dim, hidden)
            self.conv2: nn.Module = _WeightedGCN(hidden, out_dim)
        else:
            self.conv1 = _WeightedMeanSAGE(in_dim, hidden)
            self.conv2 = _WeightedMeanSAGE(hidden, out_dim)
        self.act = ACTIVATIONS[activation]
        self.dropout = dropout

    def reset_parameters(self) -> None:
        for conv in (self.conv1, self.conv2):
            conv.reset_parameters()  # GCN: glorot (Xavier) weights, zero bias

    def forward(self, x: torch.Tensor, edges: torch.Tensor | EdgeOperator,
                edge_weight: torch.Tensor) -> torch.Tensor:
        """Logits; ``edges`` is an edge list without self-loops ([2, E]) or, prepared once for
        many calls, its :class:`~dpgl.graph.edge_operator.EdgeOperator`."""
        op = edges if isinstance(edges, EdgeOperator) else self.operator(edges, x.size(0))
        if self.kind == "gcn":
            edge_norm, per_node = _gcn_norm(op, edge_weight)
            adj = op.bind(edge_norm)
        else:
            adj, per_node = op.bind(edge_weight), op.in_degree(edge_weight)
        h = self.act(self.conv1(x, adj, per_node))
        h = F.dropout(h, self.dropout, self.training)
        return self.conv2(h, adj, per_node)

    @staticmethod
    def operator(edge_index: torch.Tensor, num_nodes: int) -> EdgeOperator:
        """``edge_index`` prepared for :meth:`forward`; self-loops are an error (the GCN adds
        each node's own, as PyG's ``GCNConv`` does)."""
        if edge_index.numel() and bool((edge_index[0] == edge_index[1]).any()):
            raise GraphError("the edge list holds self-loops; the layers add each node's own")
        return EdgeOperator(edge_index, num_nodes)
