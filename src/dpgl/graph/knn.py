"""k nearest neighbours by cosine similarity of node features, as undirected pairs, without an
n x n matrix (row blocks of the similarity, top-k per row)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np
import torch

from dpgl.errors import ConfigError, GraphError

__all__ = ["knn_edge_index", "knn_pairs"]

_BLOCK_ENTRIES = 1 << 24

#: knn_edge_index's results by (features, k): every run of a grid on one dataset reuses them
_CACHE: OrderedDict[bytes, torch.Tensor] = OrderedDict()
_CACHE_SIZE = 4


def knn_pairs(x: torch.Tensor, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Undirected pairs (u < v, sorted by (u, v), unique) where v is among u's ``k`` most
    cosine-similar nodes or u among v's. Zero rows are similar to nothing (ties broken by
    node id). O(n^2 d / block) time, O(block n) memory."""
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ConfigError(f"knn must be an integer >= 1, got {k!r}")
    if x.dim() != 2:
        raise GraphError(f"features must be a [n, d] matrix, got shape {tuple(x.shape)}")
    n = int(x.size(0))
    k = min(int(k), n - 1)
    if k < 1:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    z = x.detach().to(torch.float32)
    z = z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)
    block = max(1, _BLOCK_ENTRIES // max(n, 1))
    rows, cols = [], []
    for s in range(0, n, block):
        sim = z[s:s + block] @ z.T
        idx = torch.arange(s, min(s + block, n))
        sim[idx - s, idx] = -torch.inf  # never oneself
        top = torch.topk(sim, k, dim=1, sorted=False).indices
        rows.append(idx.repeat_interleave(k).numpy())
        cols.append(top.reshape(-1).numpy())
    r = np.concatenate(rows).astype(np.int64)
    c = np.concatenate(cols).astype(np.int64)
    u, v = np.minimum(r, c), np.maximum(r, c)
    key = np.unique(u * n + v)
    return key // n, key % n


def knn_edge_index(x: torch.Tensor, k: int) -> torch.Tensor:
    """:func:`knn_pairs` as a [2, E] edge index with both directions of every pair, sorted by
    (target, source); computed once per process for the same features and ``k``."""
    if isinstance(k, bool) or int(k) != k or k < 1:
        raise ConfigError(f"knn must be an integer >= 1, got {k!r}")
    t = x.detach().cpu().contiguous()
    h = hashlib.blake2b(f"{t.dtype}{tuple(t.shape)}|{int(k)}|".encode(), digest_size=20)
    h.update(t.numpy().tobytes())
    key = h.digest()
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    u, v = knn_pairs(x, k)
    src, dst = np.concatenate([u, v]), np.concatenate([v, u])
    order = np.lexsort((src, dst))
    ei = torch.from_numpy(np.stack([src[order], dst[order]]))
    _CACHE[key] = ei
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return ei
