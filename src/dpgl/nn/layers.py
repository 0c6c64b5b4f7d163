"""GCN and GraphSAGE layers over a precomputed :class:`~dpgl.graph.propagation.SparseOperator`.

Parameter names mirror PyG's ``GCNConv`` (``lin``, ``bias``) and ``SAGEConv`` (``lin_l`` with
bias, ``lin_r`` without), so weights load across; the tests check equality with PyG.
"""

from __future__ import annotations

import scipy.sparse as sp
import torch
from torch import nn

from dpgl.graph.propagation import SparseOperator
from dpgl.nn.init import finish_weight
from dpgl.nn.names import check_weight_init

Features = torch.Tensor | SparseOperator


def linear(lin: nn.Linear, x: Features) -> torch.Tensor:
    """``lin(x)`` for dense ``x`` or a sparse feature matrix (one sparse product; the gradient
    reaches ``lin``'s weight through the precomputed transpose)."""
    if isinstance(x, SparseOperator):
        out = x @ lin.weight.t()
        return out if lin.bias is None else out + lin.bias
    return lin(x)


def sparse_features(x: torch.Tensor, *, max_density: float = 0.05, min_dim: int = 256) -> Features:
    """``x`` as a :class:`SparseOperator` when it is wide and sparse (bag-of-words features of
    Cora, CiteSeer, Facebook: 0.3-1.3% non-zero), else ``x`` itself. The first layer's
    product then costs O(nnz x hidden) instead of O(n x d x hidden) (Facebook: ~300x less)."""
    if x.dim() != 2 or x.size(1) < min_dim or x.numel() == 0:
        return x
    if float((x != 0).float().mean()) > max_density:
        return x
    return SparseOperator(sp.csr_matrix(x.detach().cpu().numpy()))


class GCNLayer(nn.Module):
    """``A_hat (X W) + b`` with a pre-normalized ``A_hat`` (Kipf & Welling 2017, Eq. 2); ``W``
    drawn by ``weight_init`` (:mod:`dpgl.nn.init`), ``b`` zero."""

    owns_init = True  # dpgl.nn.init.reset_parameters: the layer draws its Linear's weight

    def __init__(self, in_channels: int, out_channels: int, weight_init: str = "torch") -> None:
        super().__init__()
        self.weight_init = check_weight_init(weight_init)
        self.lin = nn.Linear(in_channels, out_channels, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_channels))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin.weight)
        finish_weight(self.lin, self.weight_init)
        nn.init.zeros_(self.bias)

    def forward(self, x: Features, adj: SparseOperator) -> torch.Tensor:
        return adj @ linear(self.lin, x) + self.bias


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

    def forward(self, x: Features, adj: SparseOperator) -> torch.Tensor:
        if isinstance(x, SparseOperator) or self.lin_l.in_features > self.lin_l.out_features:
            # Project first (cheaper): W_l (A x) + b == A (x W_l^T) + b.
            agg = adj @ (x @ self.lin_l.weight.t()) + self.lin_l.bias
        else:
            agg = self.lin_l(adj @ x)
        return agg + linear(self.lin_r, x)
