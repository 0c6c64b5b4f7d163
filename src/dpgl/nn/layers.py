"""GCN and GraphSAGE layers over a precomputed :class:`~dpgl.graph.propagation.SparseOperator`.

Parameter names mirror PyG's ``GCNConv`` (``lin``, ``bias``) and ``SAGEConv`` (``lin_l`` with
bias, ``lin_r`` without), so weights load across; the tests check equality with PyG.
"""

from __future__ import annotations

import torch
from torch import nn

from dpgl.graph.propagation import SparseOperator


class GCNLayer(nn.Module):
    """``A_hat (X W) + b`` with a pre-normalized ``A_hat`` (Kipf & Welling 2017, Eq. 2)."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin.weight)
        nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, adj: SparseOperator) -> torch.Tensor:
        return adj @ self.lin(x) + self.bias


class SAGELayer(nn.Module):
    """``W_l (A_mean X) + b + W_r X`` (Hamilton et al. 2017, mean aggregator; weighted mean:
    Blink App. B Eq. 22)."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.lin_l = nn.Linear(in_channels, out_channels, bias=True)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)

    def reset_parameters(self) -> None:
        self.lin_l.reset_parameters()
        self.lin_r.reset_parameters()

    def forward(self, x: torch.Tensor, adj: SparseOperator) -> torch.Tensor:
        if self.lin_l.in_features > self.lin_l.out_features:
            agg = adj @ (x @ self.lin_l.weight.t()) + self.lin_l.bias  # project first: cheaper
        else:
            agg = self.lin_l(adj @ x)
        return agg + self.lin_r(x)
