"""The GNN Solitude trains on learned edge weights (Lin, Li & Wang, IEEE TIFS 2022, Sec. IV-C):
a weighted GCN or weighted-mean GraphSAGE, differentiable in the weights so the GNN loss
reaches the structure learner's A^c (:mod:`dpgl.estimators.solitude`)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GCNConv

from dpgl.errors import unknown_name
from dpgl.nn.models import ACTIVATIONS

__all__ = ["WeightedGNN"]


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

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                edge_weight: torch.Tensor) -> torch.Tensor:
        src, dst = edge_index
        h = self.lin_l(x)  # linear first: aggregation then runs on out_dim columns
        agg = h.new_zeros(x.size(0), h.size(1)).index_add_(
            0, dst, h[src] * edge_weight[:, None])
        deg = h.new_zeros(x.size(0)).index_add_(0, dst, edge_weight)
        agg = agg / deg.clamp_min(1e-12)[:, None]
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
            self.conv1: nn.Module = GCNConv(in_dim, hidden)
            self.conv2: nn.Module = GCNConv(hidden, out_dim)
        else:
            self.conv1 = _WeightedMeanSAGE(in_dim, hidden)
            self.conv2 = _WeightedMeanSAGE(hidden, out_dim)
        self.act = ACTIVATIONS[activation]
        self.dropout = dropout

    def reset_parameters(self) -> None:
        for conv in (self.conv1, self.conv2):
            conv.reset_parameters()  # GCNConv: glorot (Xavier) weights, zero bias

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                edge_weight: torch.Tensor) -> torch.Tensor:
        h = self.act(self.conv1(x, edge_index, edge_weight))
        h = F.dropout(h, self.dropout, self.training)
        return self.conv2(h, edge_index, edge_weight)
