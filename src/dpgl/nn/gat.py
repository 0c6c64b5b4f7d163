"""Single-head graph attention with edge weights (Blink, Zhu et al. CCS 2023, App. B Eq. 24).

With weights ``w_ij`` the attention is the weight-scaled softmax
``alpha_ij = w_ij exp(e_ij) / sum_k w_ik exp(e_ik)``, ``e_ij = LeakyReLU(a_s^T W h_i +
a_d^T W h_j)``, and the message is ``w_ij alpha_ij W h_j``; self-loops get weight 1. With all
weights equal to 1 this is the GAT layer of Velickovic et al. (2018). Computed on the edge list
(never n x n), via PyG's sparse softmax.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.utils import softmax

from dpgl.nn.init import finish_weight
from dpgl.nn.layers import Features, linear
from dpgl.nn.names import check_weight_init


class WeightedGATConv(nn.Module):
    """Weighted single-head GAT layer over an edge list (targets = ``edge_index[1]``); ``W``
    drawn by ``weight_init`` (:mod:`dpgl.nn.init`), attention vectors Glorot, bias zero."""

    owns_init = True  # dpgl.nn.init.reset_parameters: the layer draws its Linear's weight

    def __init__(self, in_channels: int, out_channels: int, negative_slope: float = 0.2,
                 weight_init: str = "torch") -> None:
        super().__init__()
        self.weight_init = check_weight_init(weight_init)
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.att_src = nn.Parameter(torch.empty(out_channels))
        self.att_dst = nn.Parameter(torch.empty(out_channels))
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.negative_slope = negative_slope
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin.weight)
        bound = (6.0 / (1 + self.att_src.numel())) ** 0.5
        nn.init.uniform_(self.att_src, -bound, bound)
        nn.init.uniform_(self.att_dst, -bound, bound)
        nn.init.zeros_(self.bias)
        finish_weight(self.lin, self.weight_init)

    def forward(
        self, x: Features, edge_index: torch.Tensor, edge_weight: torch.Tensor | None = None
    ) -> torch.Tensor:
        h = linear(self.lin, x)
        n = h.size(0)
        loops = torch.arange(n, device=h.device)
        src = torch.cat([edge_index[0], loops])
        dst = torch.cat([edge_index[1], loops])
        if edge_weight is None:
            w = torch.ones(src.numel(), device=h.device)
        else:
            w = torch.cat([edge_weight.float(), torch.ones(n, device=h.device)])
        logits = F.leaky_relu(
            (h * self.att_src).sum(-1)[src] + (h * self.att_dst).sum(-1)[dst], self.negative_slope
        )
        # softmax(e + log w) = w exp(e) / sum w exp(e); zero-weight edges drop out.
        alpha = softmax(logits + torch.log(w.clamp_min(1e-30)), dst, num_nodes=n)
        out = torch.zeros_like(h).index_add_(0, dst, (w * alpha).unsqueeze(-1) * h[src])
        return out + self.bias
