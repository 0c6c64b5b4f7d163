"""Single-head graph attention with edge weights (Blink, Zhu et al. CCS 2023, App. B Eq. 24).

With weights ``w_ij`` the attention is the weight-scaled softmax
``alpha_ij = w_ij exp(e_ij) / sum_k w_ik exp(e_ik)``, ``e_ij = LeakyReLU(a_s^T W h_i +
a_d^T W h_j)``, and the message is ``w_ij alpha_ij W h_j``; self-loops get weight 1. With all
weights equal to 1 this is the GAT layer of Velickovic et al. (2018).

Memory O(E), never n x n and never E x d: the logits and the softmax (PyG's segment softmax
over the CSR rows, int32 indices where the ids fit) are one value per edge, and the weighted
sum of messages is one sparse product ``A(w alpha) @ W h`` through
:class:`~dpgl.graph.edge_operator.EdgeOperator` (the edges with their self-loops sorted into
CSR once a graph, :class:`AttentionEdges`), whose gradient in ``alpha`` is a sampled
product. PyG's ``GATConv`` (and this layer before 2026-11-28) gathers
``W h_j`` per edge: E x d floats, kept for the backward pass, which is what ran a GAT on
Facebook's RR graph at eps <= 4 (24 to 136 million edges, d = 16) out of the CPU machine's
24 GB.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.utils import softmax

from dpgl.graph.edge_operator import EdgeOperator, index_dtype
from dpgl.nn.init import finish_weight
from dpgl.nn.layers import Features, linear
from dpgl.nn.names import check_weight_init

__all__ = ["AttentionEdges", "WeightedGATConv"]


@dataclass(frozen=True)
class AttentionEdges:
    """What a GAT layer attends over, prepared once a graph: the edges ``edge_index`` (targets
    ``edge_index[1]``) followed by one self-loop per node as an
    :class:`~dpgl.graph.edge_operator.EdgeOperator`, their weights (the loops' 1) and the
    weights' logs (``log w`` shifts the logits so that the softmax is weight-scaled)."""

    op: EdgeOperator
    #: one per edge of ``op`` (None: every weight is 1, nothing to scale)
    weight: torch.Tensor | None
    log_weight: torch.Tensor | None

    @classmethod
    def build(cls, edge_index: torch.Tensor, num_nodes: int,
              edge_weight: torch.Tensor | None = None) -> AttentionEdges:
        device = edge_index.device
        dtype = index_dtype(num_nodes, edge_index.size(1) + num_nodes)  # int32 where it fits
        loops = torch.arange(num_nodes, device=device, dtype=dtype)
        looped = torch.cat([edge_index.to(dtype), loops.expand(2, -1)], dim=1)
        # sorted by target once, stably (a row's edges keep their order, its loop last, as
        # in the concatenation), so the operator needs no permutation of its own
        order = torch.argsort(looped[1], stable=True)
        op = EdgeOperator(looped[:, order], num_nodes)
        if edge_weight is None:
            return cls(op, None, None)
        weight = torch.cat([edge_weight.detach().float(),
                            torch.ones(num_nodes, device=device)])[order]
        # a zero weight drops its edge from the softmax: exp(log 1e-30) is nothing beside e^e
        return cls(op, weight, torch.log(weight.clamp_min(1e-30)))

    @property
    def num_nodes(self) -> int:
        return self.op.num_nodes


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

    def forward(self, x: Features, edges: AttentionEdges | torch.Tensor,
                edge_weight: torch.Tensor | None = None) -> torch.Tensor:
        """``edges``: prepared :class:`AttentionEdges` (what :class:`~dpgl.nn.NodeModel`
        passes, built once a graph by :meth:`~dpgl.nn.prepared.PreparedGraph.attention_edges`),
        or an edge list with optional ``edge_weight``, prepared on the spot."""
        h = linear(self.lin, x)
        n = h.size(0)
        if isinstance(edges, torch.Tensor):
            edges = AttentionEdges.build(edges, n, edge_weight)
        elif edge_weight is not None:
            raise ValueError("edge_weight goes with an edge list; AttentionEdges hold theirs")
        if edges.num_nodes != n:
            raise ValueError(f"the edges are on {edges.num_nodes} nodes, x has {n} rows")
        op = edges.op
        logits = F.leaky_relu(
            (h * self.att_src).sum(-1).index_select(0, op.src)
            + (h * self.att_dst).sum(-1).index_select(0, op.dst),
            self.negative_slope,
        )
        # the softmax over each target's edges by their CSR row pointers (the edges are
        # sorted by target): segment reductions, no int64 target index needed
        if edges.log_weight is None:
            return op(softmax(logits, ptr=op.crow, num_nodes=n), h) + self.bias
        # softmax(e + log w) = w exp(e) / sum w exp(e)
        alpha = softmax(logits + edges.log_weight, ptr=op.crow, num_nodes=n)
        return op(edges.weight * alpha, h) + self.bias
