"""KProp (LPGNN, Sajadmanesh & Gatica-Perez, CCS 2021, Sec. 4.2, Alg. 2) and the LPGNN model.

KProp aggregates K times over N(v) - {v} (no self-loops) with a linear aggregator (GCN's
symmetric normalization D^-1/2 A D^-1/2 or the mean D^-1 A) and applies the UPDATE (linear
map + bias) only after the K-th step:

    h_v = W . AGG^K(x)_v + b,      AGG(x)_v = sum_{u in N(v)} a_vu x_u.

Because the aggregation is linear and parameter-free, the K-step propagation of the (noisy)
features is computed once (:func:`kprop`) and the layer is then a linear map of it. LPGNN uses
KProp as the first layer of a two-layer GCN (hidden 16, SeLU, batch norm on the first
layer's output, dropout): :class:`KPropGNN`. :class:`LabelPropagationHead` propagates the
model's predictions like the labels for LPGNN's label denoising ("Drop", Sec. 4.3).
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from dpgl.errors import ConfigError, unknown_name
from dpgl.graph.kprop import AGGREGATORS, kprop, kprop_matrix
from dpgl.graph.propagation import SparseOperator
from dpgl.nn.layers import GCNLayer, SAGELayer
from dpgl.nn.models import ACTIVATIONS
from dpgl.nn.prepared import PreparedGraph

__all__ = ["AGGREGATORS", "KPropGNN", "LabelPropagationHead", "centred_sparse", "kprop",
           "kprop_matrix"]

def centred_sparse(x: torch.Tensor, center: float) -> torch.Tensor:
    """``x - center`` as a sparse CSR tensor (for :class:`KPropGNN`'s factorised path)."""
    with warnings.catch_warnings():  # torch flags CSR support as beta; we use spmm only
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support is in beta.*")
        return (x - center).to_sparse_csr()


def _apply_operator(adj: Any, fn: Any) -> Any:
    """A module's ``_apply`` function on a propagation matrix (sparse tensor or operator)."""
    if adj is None:
        return None
    return adj.apply(fn) if isinstance(adj, SparseOperator) else fn(adj)


class KPropGNN(nn.Module):
    """LPGNN's model: KProp first layer (on pre-propagated features: a linear UPDATE), batch
    norm, activation, dropout, then a GCN (or GraphSAGE-mean) layer over the graph.

    ``forward(xk, graph)`` takes ``xk = kprop(x, A, K)`` computed once. For large n x d (e.g.
    Facebook, 22,470 x 4,714) pass ``propagate=(A, K)`` instead: the first layer then computes
    AGG^K(x W^T) + b, the same function by linearity of the aggregation, from ``x`` given as
    a sparse CSR matrix of the centred reports x' - ``center`` (multi-bit reports have only m
    non-centre entries per row), so neither x' nor AGG^K(x') is ever dense.

    ``weight_init`` (:mod:`dpgl.nn.init`) draws the GCN second layer's weight; the default,
    ``"torch"``, is the draw of the authors' KProp layers (``KPropConv.fc``, a
    ``torch.nn.Linear``, in sisaman/LPGNN's ``models.py`` until April 2021); our first layer
    draws it under both names.
    """

    def __init__(self, in_dim: int, out_dim: int, *, hidden: int = 16, dropout: float = 0.5,
                 activation: str = "selu", batch_norm: bool = True,
                 second_layer: str = "gcn", weight_init: str = "torch",
                 propagate: tuple[torch.Tensor | SparseOperator, int] | None = None,
                 center: float = 0.0) -> None:
        super().__init__()
        self.propagate = propagate
        self.center = float(center)
        if activation not in ACTIVATIONS:
            raise unknown_name("activation", activation, list(ACTIVATIONS))
        if second_layer not in ("gcn", "sage"):
            raise unknown_name("second layer", second_layer, ["gcn", "sage"])
        self.lin1 = nn.Linear(in_dim, hidden)
        self.norm = nn.BatchNorm1d(hidden) if batch_norm else nn.Identity()
        self.act = ACTIVATIONS[activation]
        self.dropout = dropout
        self.second_layer = second_layer
        if second_layer == "gcn":
            self.conv2: nn.Module = GCNLayer(hidden, out_dim, weight_init=weight_init)
        else:
            self.conv2 = SAGELayer(hidden, out_dim)

    def _apply(self, fn: Any, recurse: bool = True) -> KPropGNN:
        """``.to(device)`` and friends move the propagation matrix too (it is no buffer)."""
        super()._apply(fn, recurse)
        if self.propagate is not None:
            self.propagate = (_apply_operator(self.propagate[0], fn), self.propagate[1])
        return self

    def first_layer(self, x: torch.Tensor) -> torch.Tensor:
        """The KProp layer's output before batch norm."""
        if self.propagate is None:
            return self.lin1(x)
        adj, steps = self.propagate
        w = self.lin1.weight
        z = x @ w.t() + self.center * w.sum(dim=1)
        return kprop(z, adj, steps) + self.lin1.bias

    def forward(self, xk: torch.Tensor, graph: PreparedGraph) -> torch.Tensor:
        h = self.act(self.norm(self.first_layer(xk)))
        h = F.dropout(h, self.dropout, self.training)
        adj = graph.gcn_adj() if self.second_layer == "gcn" else graph.mean_adj()
        return self.conv2(h, adj)


class LabelPropagationHead(nn.Module):
    """LPGNN label denoising ("Drop", Sec. 4.3): in training mode the model's class
    probabilities are mapped through the RR transition matrix T (forward correction,
    P(y'|x) = P(y|x) T) and propagated like the noisy labels, softmax(AGG^K(.)), and the
    log-probabilities are returned (so cross-entropy against the denoised targets is the
    paper's loss). In eval mode the base model's logits are returned unchanged."""

    def __init__(self, base: nn.Module, adj: torch.Tensor | SparseOperator | None, steps: int,
                 transition: torch.Tensor | None = None) -> None:
        super().__init__()
        if steps > 0 and adj is None:
            raise ConfigError("label propagation with steps > 0 needs an aggregation matrix")
        self.base = base
        self.adj = adj
        self.steps = int(steps)
        self.register_buffer("transition", transition)

    def _apply(self, fn: Any, recurse: bool = True) -> LabelPropagationHead:
        """``.to(device)`` and friends move the aggregation matrix too (it is no buffer)."""
        super()._apply(fn, recurse)
        self.adj = _apply_operator(self.adj, fn)
        return self

    def forward(self, *args: object) -> torch.Tensor:
        logits = self.base(*args)
        if not self.training or (self.steps == 0 and self.transition is None):
            return logits
        p = torch.softmax(logits, dim=-1)
        if self.transition is not None:
            p = p @ self.transition
        if self.steps > 0:
            assert self.adj is not None
            p = torch.softmax(kprop(p, self.adj, self.steps), dim=-1)
        return torch.log(p.clamp_min(1e-20))

