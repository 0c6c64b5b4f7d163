"""GIN-0 for graph classification (Xu et al., ICLR 2019) as DPRR (Hidano & Murakami) uses it.

Sum aggregation with epsilon fixed to 0, a 2-layer MLP with batch norm as COMBINE, a mean
readout of every layer's node representations (including the input), each followed by a
linear map and dropout; the graph score is the sum over layers (Xu et al., Eq. 4.2).
"""

from __future__ import annotations

from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.nn import GINConv, global_mean_pool


def _mlp(a: int, b: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(a, b), nn.BatchNorm1d(b), nn.ReLU(), nn.Linear(b, b))


class GIN(nn.Module):
    """GIN-0 with ``num_layers`` message-passing layers."""

    def __init__(
        self,
        in_dim: int,
        out_dim: int,
        *,
        hidden: int = 64,
        num_layers: int = 5,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        dims = [in_dim] + [hidden] * num_layers
        self.convs = nn.ModuleList(
            GINConv(_mlp(a, b), eps=0.0, train_eps=False) for a, b in pairwise(dims)
        )
        self.norms = nn.ModuleList(nn.BatchNorm1d(hidden) for _ in range(num_layers))
        self.heads = nn.ModuleList(nn.Linear(d, out_dim) for d in dims)
        self.dropout = dropout

    def forward(
        self, x: torch.Tensor, edge_index: torch.Tensor, batch: torch.Tensor
    ) -> torch.Tensor:
        reps = [x]
        for conv, norm in zip(self.convs, self.norms, strict=True):
            x = F.relu(norm(conv(x, edge_index)))
            reps.append(x)
        return sum(
            F.dropout(head(global_mean_pool(h, batch)), self.dropout, self.training)
            for head, h in zip(self.heads, reps, strict=True)
        )
