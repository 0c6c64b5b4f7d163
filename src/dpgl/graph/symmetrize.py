"""Symmetrization policies for directed reports (e.g. randomized-response outputs).

Under edge LDP each endpoint of a pair reports the pair separately, so the server receives a
*directed* graph: user i reporting j is the edge (j -> i) in PyG's source -> target
convention (i aggregates from the neighbors it reported). Policies:

* ``"directed"`` — keep the reports as they are (asymmetric graph);
* ``"or"``  — undirected edge {i, j} if *either* endpoint reported it (union; more edges);
* ``"and"`` — undirected edge {i, j} only if *both* endpoints reported it (intersection).

Under RR with keep probability p, a true edge survives OR with probability 1 - (1 - p)^2 and
AND with p^2; a non-edge appears with probability 1 - p^2 (OR) or (1 - p)^2 (AND).
"""

from __future__ import annotations

import numpy as np
import torch

from dpgl.errors import GraphError, unknown_name
from dpgl.graph.pairs import (
    index_to_pair,
    ordered_pair_to_index,
    pair_to_index,
    sort_pairs,
    unique_counts,
)

__all__ = ["POLICIES", "symmetrize", "symmetrize_pairs"]

POLICIES = ("directed", "or", "and")


def symmetrize_pairs(row: np.ndarray, col: np.ndarray, num_nodes: int,
                     how: str) -> tuple[np.ndarray, np.ndarray]:
    """Apply a policy to directed pairs (row, col) without self-loops or duplicates.

    Returns directed pairs for ``"directed"`` (sorted) and undirected pairs (u, v), u < v,
    for ``"or"`` / ``"and"``.
    """
    if how not in POLICIES:
        raise unknown_name("symmetrization policy", how, POLICIES)
    row = np.asarray(row, dtype=np.int64)
    col = np.asarray(col, dtype=np.int64)
    if row.size and np.any(row == col):
        raise GraphError("reports contain self-loops")
    if how == "directed":
        keys = ordered_pair_to_index(row, col, num_nodes)
        order = np.argsort(keys)
        if keys.size and np.any(keys[order][1:] == keys[order][:-1]):
            raise GraphError("reports contain duplicate pairs")
        return row[order], col[order]
    u, v = np.minimum(row, col), np.maximum(row, col)
    keys, counts = unique_counts(pair_to_index(u, v, num_nodes))
    if counts.size and counts.max() > 2:
        raise GraphError("reports contain duplicate pairs")
    if how == "and":
        keys = keys[counts == 2]
    return index_to_pair(keys, num_nodes)


def symmetrize(edge_index: torch.Tensor, num_nodes: int, how: str = "or") -> torch.Tensor:
    """Apply a symmetrization policy to a directed ``edge_index`` ([2, E] int64).

    ``"or"`` and ``"and"`` return both directions of every kept pair, sorted by (row, col);
    ``"directed"`` returns the edges sorted.
    """
    if not isinstance(edge_index, torch.Tensor) or edge_index.dim() != 2 \
            or edge_index.size(0) != 2:
        raise GraphError("edge_index must be a [2, E] tensor")
    arr = edge_index.detach().cpu().numpy().astype(np.int64)
    if arr.size and (arr.min() < 0 or arr.max() >= num_nodes):
        raise GraphError(f"edge_index has node ids outside [0, {num_nodes - 1}]")
    a, b = symmetrize_pairs(arr[0], arr[1], num_nodes, how)
    if how == "directed":
        return torch.from_numpy(np.stack([a, b]))
    rows, cols, _ = sort_pairs(np.concatenate([a, b]), np.concatenate([b, a]), num_nodes)
    return torch.from_numpy(np.stack([rows, cols]))
