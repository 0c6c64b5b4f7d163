"""Models for node-level DP training with per-example gradients (all vmap-friendly: no
in-place ops, no data-dependent shapes).

* :class:`DecoupledMLP`: DPAR's model (Zhang et al. 2024, Eq. 1, after PPRGo): an MLP f maps
  every node's features to class logits and a node's prediction is the DP-APPR-weighted sum
  z_i = sum_j pi_ij f(x_j) over its (at most K + 1) selected nodes. :func:`dpar_example_loss`
  is the per-source-node cross-entropy used by DP-SGD.
* :class:`GAPEncoder` / :class:`GAPClassifier`: GAP's encoder (MLP pre-trained with a linear
  head, its hidden output is the node embedding) and classification module (one MLP per hop
  on the perturbed aggregates, concatenated, then a head MLP; Sajadmanesh et al. 2023, Sec. 4).
* :class:`SAGE1`: DP-SAGE's one-layer GNN (Daigavane et al. 2021): h_v = act(W_r x_v + W_n
  sum_{u in N_D(v)} x_u / D) followed by a linear head, on a degree-bounded neighbourhood.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "SAGE1",
    "DecoupledMLP",
    "GAPClassifier",
    "GAPEncoder",
    "dpar_batch_losses",
    "dpar_example_loss",
    "mlp_example_loss",
    "sage_example_loss",
]


def _mlp(dims: list[int], dropout: float) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(dims) - 1):
        if i > 0:
            layers.append(nn.ReLU())
            if dropout > 0:
                layers.append(nn.Dropout(dropout))
        layers.append(nn.Linear(dims[i], dims[i + 1]))
    return nn.Sequential(*layers)


class DecoupledMLP(nn.Module):
    """The feature MLP f of DPAR (2 layers, hidden 32 in the paper)."""

    def __init__(self, in_dim: int, out_dim: int, hidden: int = 32, num_layers: int = 2,
                 dropout: float = 0.0) -> None:
        super().__init__()
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        self.net = _mlp(dims, dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def dpar_example_loss(model_fn: Callable[..., torch.Tensor], feats: torch.Tensor,
                      weights: torch.Tensor, label: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of z_i = sum_j w_ij f(x_j) for one source node: ``feats`` [S, d] (the
    node's selected nodes, zero-padded), ``weights`` [S] (0 for padding), ``label`` []."""
    logits = (weights[:, None] * model_fn(feats)).sum(0)
    return F.cross_entropy(logits[None], label[None])


def dpar_batch_losses(model_fn: Callable[..., torch.Tensor], feats: torch.Tensor,
                      weights: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """:func:`dpar_example_loss` of every example of a batch ([B] losses) in one ordinary
    forward pass: ``feats`` [B, S, d], ``weights`` [B, S], ``labels`` [B]. Example i's loss
    uses example i's tensors only (DP-SGD's exact linear-layer clipping relies on it,
    :func:`dpgl.train.dpsgd.linear_clipped_sum`)."""
    logits = (weights[..., None] * model_fn(feats)).sum(1)
    return F.cross_entropy(logits, labels, reduction="none")


#: the batched form the DP-SGD trainer uses for this loss (dpgl.train.dpsgd)
dpar_example_loss.batched = dpar_batch_losses  # type: ignore[attr-defined]


def mlp_example_loss(model_fn: Callable[..., torch.Tensor], x: torch.Tensor,
                     label: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of a model on one example's feature vector."""
    return F.cross_entropy(model_fn(x[None]), label[None])


class GAPEncoder(nn.Module):
    """GAP's encoder: MLP to ``dim``-dimensional embeddings plus a linear head used only for
    (DP-SGD) pre-training on the labels."""

    def __init__(self, in_dim: int, out_dim: int, dim: int = 16, hidden: int = 32,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.body = _mlp([in_dim, hidden, dim], dropout)
        self.head = nn.Linear(dim, out_dim)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.body(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(x))


class GAPClassifier(nn.Module):
    """GAP's classification module on ``hops + 1`` stacked inputs of width ``dim``: a base
    MLP per hop, concatenation, a head MLP."""

    def __init__(self, dim: int, hops: int, out_dim: int, hidden: int = 32,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.hops = hops
        self.dim = dim
        self.base = nn.ModuleList([_mlp([dim, hidden], 0.0) for _ in range(hops + 1)])
        self.head = _mlp([(hops + 1) * hidden, hidden, out_dim], dropout)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        """``z``: [B, (hops + 1) * dim], hop-major."""
        parts = [torch.relu(self.base[k](z[:, k * self.dim:(k + 1) * self.dim]))
                 for k in range(self.hops + 1)]
        return self.head(torch.cat(parts, dim=1))


class SAGE1(nn.Module):
    """DP-SAGE's one-layer GNN on a degree-bounded neighbourhood (neighbour sum / D)."""

    def __init__(self, in_dim: int, out_dim: int, hidden: int = 32, max_degree: int = 5,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.root = nn.Linear(in_dim, hidden)
        self.neigh = nn.Linear(in_dim, hidden, bias=False)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        self.head = nn.Linear(hidden, out_dim)
        self.max_degree = max_degree

    def forward(self, x: torch.Tensor, nb: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``x`` [B, d], ``nb`` [B, D, d] (padded), ``mask`` [B, D] (1 = real neighbour)."""
        agg = (nb * mask[..., None]).sum(1) / self.max_degree
        h = torch.relu(self.root(x) + self.neigh(agg))
        return self.head(self.drop(h))


def sage_example_loss(model_fn: Callable[..., torch.Tensor], x: torch.Tensor,
                      nb: torch.Tensor, mask: torch.Tensor, label: torch.Tensor
                      ) -> torch.Tensor:
    return F.cross_entropy(model_fn(x[None], nb[None], mask[None]), label[None])
