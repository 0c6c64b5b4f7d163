"""Aggregation perturbation (GAP, Sajadmanesh, Shamsabadi, Bellet & Gatica-Perez, USENIX
Security 2023, Sec. 4.2-5) and degree bounding for node-level DP GNNs.

* :func:`bound_degree`: keep at most D out-edges per node, chosen by independent random edge
  priorities (GAP's ``BoundOutDegree``; DP-SAGE's degree-bounded sampling uses the same kind of
  step). After it every node sends messages to at most D nodes.
* :func:`aggregation_perturbation`: GAP's PMA module: X_0 = row-normalize(encoder output);
  for hop k = 1..H: X_k = A^T normalize(X_{k-1}) + N(0, sigma^2 I) (sum over in-neighbours),
  returned row-normalized for the next hop. Each row entering a sum has l2 norm 1, so removing
  one node changes the sums of its at most D out-neighbours by a unit vector each:
  l2 sensitivity sqrt(D) per hop (:func:`ap_sensitivity`; GAP Sec. 5, node-level).

What is checked and what is taken as stated is in docs/node-dp.md (in short: the sqrt(D)
count of affected rows for a fixed bounded graph is checked by a test; the effect of a node's
removal on which edges *other* nodes keep in :func:`bound_degree` is not counted by GAP's
analysis, and we follow it as stated).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from dpgl.errors import ConfigError, GraphError

__all__ = ["aggregation_perturbation", "ap_sensitivity", "bound_degree",
           "bound_in_degree_sample"]


def _edges(edge_index: torch.Tensor, num_nodes: int) -> np.ndarray:
    ei = edge_index.numpy() if isinstance(edge_index, torch.Tensor) else np.asarray(edge_index)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise GraphError(f"edge_index must have shape [2, E], got {ei.shape}")
    if ei.size and (ei.min() < 0 or ei.max() >= num_nodes):
        raise GraphError(f"edge_index has node ids outside [0, {num_nodes - 1}]")
    return ei.astype(np.int64)


def bound_degree(edge_index: torch.Tensor, num_nodes: int, max_degree: int,
                 rng: np.random.Generator, *, side: int = 0) -> torch.Tensor:
    """Keep, for every node, at most ``max_degree`` of its edges on ``side`` (0: out-edges,
    i.e. ``edge_index[0]``; 1: in-edges), chosen by i.i.d. uniform priorities."""
    if max_degree < 1:
        raise ConfigError(f"max_degree must be >= 1, got {max_degree}")
    ei = _edges(edge_index, num_nodes)
    if ei.shape[1] == 0:
        return torch.from_numpy(ei)
    prio = rng.random(ei.shape[1])
    key = ei[side]
    order = np.lexsort((prio, key))
    sk = key[order]
    first = np.r_[0, np.flatnonzero(np.diff(sk)) + 1]
    starts = np.repeat(first, np.diff(np.r_[first, sk.size]))
    rank = np.arange(sk.size) - starts
    kept = np.sort(order[rank < max_degree])
    return torch.from_numpy(ei[:, kept])


def bound_in_degree_sample(edge_index: torch.Tensor, num_nodes: int, max_degree: int,
                           rng: np.random.Generator) -> torch.Tensor:
    """Degree-bounded neighbourhood sampling for DP-SAGE (Daigavane et al. 2021, Alg. 1
    spirit): keep at most D in-edges *and* at most D out-edges per node (in-edges first, then
    out-edges of the result), so one node enters at most D neighbourhoods."""
    first = bound_degree(edge_index, num_nodes, max_degree, rng, side=1)
    return bound_degree(first, num_nodes, max_degree, rng, side=0)


def ap_sensitivity(max_degree: int) -> float:
    """Node-level l2 sensitivity of one aggregation hop over a graph with out-degree <= D and
    unit-norm rows: sqrt(D) (GAP Sec. 5)."""
    if max_degree < 1:
        raise ConfigError(f"max_degree must be >= 1, got {max_degree}")
    return math.sqrt(max_degree)


def _normalize(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)


def aggregation_perturbation(x: torch.Tensor, edge_index: torch.Tensor, hops: int,
                             sigma: float, rng: np.random.Generator) -> list[torch.Tensor]:
    """GAP's PMA: ``[X_0, X_1, ..., X_H]`` with X_0 = normalize(x) and X_k =
    normalize(A^T X_{k-1} + N(0, sigma^2)) (``sigma = 0``: no noise, non-private GAP).
    ``edge_index`` must already be degree-bounded (:func:`bound_degree`)."""
    if hops < 0:
        raise ConfigError(f"hops must be >= 0, got {hops}")
    if sigma < 0:
        raise ConfigError(f"sigma must be >= 0, got {sigma}")
    n = x.size(0)
    ei = torch.as_tensor(_edges(edge_index, n))
    src, dst = ei[0], ei[1]
    gen = torch.Generator()
    gen.manual_seed(int(rng.integers(0, 2**63 - 1)))
    out = [_normalize(x.float())]
    for _ in range(hops):
        h = out[-1]
        agg = torch.zeros_like(h).index_add_(0, dst, h[src])
        if sigma > 0:
            agg = agg + sigma * torch.randn(agg.shape, generator=gen)
        out.append(_normalize(agg))
    return out
