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
product. Nothing per edge is kept for the backward pass: the attention is recomputed there
from the per-node scores (:class:`_Attend`). PyG's ``GATConv`` (and this layer before
2026-11-28) gathers ``W h_j`` per edge: E x d floats, kept for the backward pass, which is
what ran a GAT on Facebook's RR graph at eps <= 4 (24 to 136 million edges, d = 16) out of
the CPU machine's 24 GB.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric.utils import segment

from dpgl.graph.edge_operator import EdgeOperator, index_dtype
from dpgl.graph.propagation import csr_mm
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
        score_src = (h * self.att_src).sum(-1)
        score_dst = (h * self.att_dst).sum(-1)
        return _Attend.apply(score_src, score_dst, h, edges, self.negative_slope) + self.bias


def _to_entries(per_row: torch.Tensor, ptr: torch.Tensor, size: int) -> torch.Tensor:
    """A value per CSR row repeated for each of the row's ``size`` entries in all (PyG's
    softmax broadcasts its segment reductions so)."""
    return per_row.repeat_interleave(ptr[1:] - ptr[:-1], output_size=size)


def _segment_softmax_(x: torch.Tensor, ptr: torch.Tensor) -> torch.Tensor:
    """PyG's CSR softmax (``torch_geometric.utils.softmax`` with ``ptr``: the same
    operations, so the same floats) computed in ``x``'s own storage: one E-sized temporary at a
    time instead of five."""
    x.sub_(_to_entries(segment(x, ptr, reduce="max"), ptr, x.numel()))
    x.exp_()
    total = segment(x, ptr, reduce="sum") + 1e-16
    return x.div_(_to_entries(total, ptr, x.numel()))


def _attention(score_src: torch.Tensor, score_dst: torch.Tensor, edges: AttentionEdges,
               negative_slope: float, *, with_sign: bool = False
               ) -> tuple[torch.Tensor | None, torch.Tensor, torch.Tensor]:
    """Per edge: whether the LeakyReLU's argument ``s_src + s_dst`` is positive (if
    ``with_sign``), the softmax alpha over each target's edges (by the CSR row pointers: the
    edges are sorted by target) and the message weights ``w alpha`` (alpha itself when
    unweighted)."""
    op = edges.op
    logits = score_src.index_select(0, op.src).add_(score_dst.index_select(0, op.dst))
    positive = logits > 0 if with_sign else None
    F.leaky_relu_(logits, negative_slope)
    if edges.log_weight is None:
        alpha = _segment_softmax_(logits, op.crow)
        return positive, alpha, alpha
    # softmax(e + log w) = w exp(e) / sum w exp(e)
    alpha = _segment_softmax_(logits.add_(edges.log_weight), op.crow)
    return positive, alpha, edges.weight * alpha


class _Attend(torch.autograd.Function):
    """``A(w alpha) @ h`` with alpha the attention of Eq. 24, keeping nothing per edge for the
    backward pass: it recomputes alpha from the per-node scores (a few E-sized temporaries
    while it runs) instead of autograd's ~40 bytes an edge a layer (the LeakyReLU's input, the
    softmax's exponentials and sums, alpha), which on Facebook's RR graph at eps = 1 (136
    million edges) is 11 GB for two layers. Forward: the same operations as the plain
    composition (the same floats); backward: the softmax's closed-form gradient
    alpha (g - sum_row alpha g)."""

    @staticmethod
    def forward(ctx, score_src: torch.Tensor, score_dst: torch.Tensor,  # type: ignore[override]
                h: torch.Tensor, edges: AttentionEdges, negative_slope: float) -> torch.Tensor:
        ctx.edges, ctx.negative_slope = edges, negative_slope
        ctx.save_for_backward(score_src, score_dst, h)
        _, _, message = _attention(score_src, score_dst, edges, negative_slope)
        return csr_mm(edges.op.matrix(message), h)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        score_src, score_dst, h = ctx.saved_tensors
        edges: AttentionEdges = ctx.edges
        op = edges.op
        grad = grad.contiguous()
        positive, alpha, message = _attention(score_src, score_dst, edges, ctx.negative_slope,
                                              with_sign=True)
        grad_h = (csr_mm(op.matrix(message, transpose=True), grad)
                  if ctx.needs_input_grad[2] else None)
        if not (ctx.needs_input_grad[0] or ctx.needs_input_grad[1]):
            return None, None, grad_h, None, None
        # d/d(message_e) = <grad[dst_e], h[src_e]>, then through w: d/d(alpha_e)
        g = op.weight_grad(op.matrix(message), grad, h)
        del message
        if edges.weight is not None:
            g.mul_(edges.weight)
        # softmax: d/d(logit_e) = alpha_e (g_e - sum over the target's edges of alpha g)
        row = segment(alpha * g, op.crow, reduce="sum")
        g.sub_(_to_entries(row, op.crow, g.numel())).mul_(alpha)
        del alpha, row
        # LeakyReLU: slope where the argument is not positive (torch's rule)
        g = torch.where(positive, g, g * ctx.negative_slope)
        grad_src = score_src.new_zeros(op.num_nodes).index_add_(0, op.src, g)
        grad_dst = score_dst.new_zeros(op.num_nodes).index_add_(0, op.dst, g)
        return grad_src, grad_dst, grad_h, None, None
