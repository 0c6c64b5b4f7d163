"""Solitude's graph-structure denoising, learned jointly with the GNN (Lin, Li & Wang,
"Towards Private Learning on Decentralized Graphs with Local Differential Privacy",
IEEE TIFS 2022, Sec. IV-C, Eq. 14):

    min_{theta, A^c}  L_GNN(theta; A^c, X_s, Y~) + lambda1 ||A~ - A^c||_F^2 + lambda2 ||A^c||_1,

with A~ the RR-noisy adjacency the users reported. Optimised by alternating updates: an Adam
step on the GNN parameters theta with A^c fixed, then ``inner_steps`` proximal-gradient steps
on A^c: an Adam step on L_GNN followed by the exact proximal operator of the regulariser
lambda1 ||A~ - A^c||_F^2 + lambda2 ||A^c||_1 (a shifted soft-threshold, closed form) and the
projection onto [0, 1]. (Putting the Frobenius term through Adam instead would let Adam's
per-coordinate normalisation cancel the l1 prox: every weight would drift to 0 at the same
rate. With the exact prox, a weight without GNN gradient converges to
max(t - lambda2 / (2 lambda1), 0), t its A~ value.)

Sparse by design: A^c is restricted to the candidate set of the noisy edges (A^c_ij = 0 off
the support of A~), so A^c is a weight vector over |E~| entries and memory stays O(|E~|);
off the support A~ = A^c = 0, so the Frobenius term is sum_e (1 - w_e)^2. The GNN consumes the
weights differentiably (weighted GCN normalization / weighted mean), so the GNN loss reaches
A^c. (The reference implementation builds a dense n x n estimator that the GNN never reads,
so its A^c gets no gradient from the GNN loss; here it does, see tests/feature_ldp.)
"""

from __future__ import annotations

import torch
from torch import nn

from dpgl.errors import ConfigError
from dpgl.graph.edge_operator import index_dtype, sort_order

__all__ = ["StructureLearner"]

#: weights a block of :meth:`StructureLearner.proximal_step` updates at once
PROX_CHUNK = 1 << 22


class StructureLearner(nn.Module):
    """A^c on the candidate set of the noisy edges ``edge_index`` (directed reports).

    ``symmetric=True`` (default; the graph is undirected, as in Pro-GNN's symmetric
    estimator): one weight per unordered candidate pair {i, j}, used in both directions; the
    pair's entries of A~ are a_ij, a_ji in {0, 1} and its Frobenius term
    (a_ij - w)^2 + (a_ji - w)^2 is minimised at their mean, so A^c starts at
    (A~ + A~^T) / 2: 1 on pairs both users reported, 1/2 on pairs only one reported (under RR
    mostly fake edges). ``symmetric=False``: one weight per directed report, A~ = 1 there.
    Memory O(|E~|) either way.

    The candidate edges are kept sorted by target (stably: a target's edges keep the order they
    were given in), the order of the GNN's CSR products
    (:class:`~dpgl.graph.edge_operator.EdgeOperator`), so a pass reads the weights in place
    instead of permuting them. RR's reports come in that order (by target, then source), so
    with ``symmetric=False`` nothing moves; otherwise the sums over a target's edges keep
    their order and those over a source's edges (the backward product) can round differently
    from the order given.
    """

    def __init__(self, edge_index: torch.Tensor, num_nodes: int, *,
                 symmetric: bool = True) -> None:
        super().__init__()
        if edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ConfigError(f"edge_index must be [2, E], got {tuple(edge_index.shape)}")
        n = int(num_nodes)
        self.num_nodes, self.symmetric = n, symmetric
        # indices as int32 where the ids and the (at most 2E) edge positions fit
        dtype = index_dtype(n, 2 * edge_index.size(1))
        dev = edge_index.device
        if symmetric:
            ei = edge_index.long()
            ei = ei[:, ei[0] != ei[1]]
            lo, hi = torch.minimum(ei[0], ei[1]), torch.maximum(ei[0], ei[1])
            del ei
            keys, counts = torch.unique(lo * n + hi, return_counts=True)
            del lo, hi
            u, v = keys // n, keys % n
            del keys
            target = counts.float() / 2.0  # (a_ij + a_ji) / 2
            self.register_buffer("target", target)
            # every pair stands for two entries of A~
            self.register_buffer("entries", torch.tensor(2.0, device=dev))
            pair = torch.arange(target.numel(), dtype=dtype, device=dev)
            both = torch.stack([torch.cat([u, v]), torch.cat([v, u])]).to(dtype)
            del u, v
            order = torch.argsort(both[1], stable=True)  # by target (class docstring)
            self.register_buffer("edge_index", both[:, order])
            self.register_buffer("edge_pair", torch.cat([pair, pair])[order])
            # Frobenius optimum: sum over the two entries of (a - w)^2 = 2 (w - mean)^2 + const
            self.register_buffer("frob_const", (target * (1 - target) * 2).sum())
            weight = target.clone()
        else:
            ei = edge_index.to(dtype)
            ei = ei[:, ei[0] != ei[1]]
            order = sort_order(ei[1])
            if order is not None:
                ei = ei[:, order]
            # A~ = 1 on every report, each weight one entry: scalars, broadcast
            self.register_buffer("target", torch.tensor(1.0, device=dev))
            self.register_buffer("entries", torch.tensor(1.0, device=dev))
            self.register_buffer("edge_index", ei)
            self.register_buffer("edge_pair", None)  # one weight an edge: the weight itself
            self.register_buffer("frob_const", torch.zeros((), device=dev))
            weight = torch.ones(ei.size(1), device=dev)
        self.weight = nn.Parameter(weight)

    @property
    def num_candidates(self) -> int:
        return int(self.weight.numel())

    def edge_weight(self, detach: bool = False) -> torch.Tensor:
        """The weight of every edge of :attr:`edge_index` (differentiable in A^c)."""
        w = self.weight.detach() if detach else self.weight
        return w if self.edge_pair is None else w[self.edge_pair]

    def frobenius(self) -> torch.Tensor:
        """||A~ - A^c||_F^2 (entries off the candidate set are 0 in both)."""
        return (self.entries * (self.target - self.weight) ** 2).sum() + self.frob_const

    def l1(self) -> torch.Tensor:
        return (self.entries * self.weight.abs()).sum()

    @torch.no_grad()
    def proximal_step(self, step: float, lambda1: float, lambda2: float) -> None:
        """Exact proximal operator, with step ``step``, of the structure regulariser
        lambda1 ||A~ - A^c||_F^2 + lambda2 ||A^c||_1 (each weight stands for ``entries``
        matrix entries), followed by the projection onto [0, 1]:
        w <- argmin_w (w - z)^2 / (2 step) + e lambda1 (w - t)^2 + e lambda2 |w|."""
        e = self.entries
        den = 1.0 + 2.0 * step * lambda1 * e
        per_weight = self.target.dim() > 0
        # in blocks: the same floats as one pass, with five block-sized temporaries instead of
        # five weight-sized ones (136 million weights on Facebook's RR reports at eps = 1)
        for start in range(0, self.weight.numel(), PROX_CHUNK):
            z = self.weight[start:start + PROX_CHUNK]
            t = self.target[start:start + PROX_CHUNK] if per_weight else self.target
            pos = (z + 2.0 * step * lambda1 * e * t - step * lambda2 * e) / den
            neg = (z + 2.0 * step * lambda1 * e * t + step * lambda2 * e) / den
            z.copy_(torch.where(pos > 0, pos, torch.where(neg < 0, neg, torch.zeros_like(z))))
            z.clamp_(0.0, 1.0)

    def edges(self, threshold: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
        """The learned graph: edges whose weight exceeds ``threshold``, with weights."""
        w = self.edge_weight(detach=True)
        keep = w > threshold
        return self.edge_index[:, keep], w[keep]
