"""Validation and conversion of neighbor lists and edge lists for the edge-LDP mechanisms.

A *neighbor list* is what one user holds: the sorted, duplicate-free ids of her neighbors
among ``n`` users, never including herself (one row of the adjacency matrix). An undirected
graph is handled as its pairs ``(u, v)`` with ``u < v`` (int64 arrays); reports of users are
*directed* pairs ``(user, reported neighbor)``.
"""

from __future__ import annotations

import numpy as np
import torch

from dpgl.errors import GraphError
from dpgl.graph.pairs import (
    MAX_NODES,
    index_to_pair,
    pair_to_index,
    repeat_into,
    sort_pairs,
)

__all__ = [
    "MAX_USERS",
    "check_csr_rows",
    "check_neighbor_list",
    "check_num_nodes",
    "check_population",
    "directed_pairs",
    "edge_index_from_directed",
    "edge_index_from_pairs",
    "neighbor_csr",
    "undirected_pairs",
]


def check_num_nodes(num_nodes: object) -> int:
    """A node count: an integer in [1, 10^7]."""
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)):
        raise GraphError(f"num_nodes must be an integer, got {num_nodes!r}")
    if not 1 <= int(num_nodes) <= MAX_NODES:
        raise GraphError(f"num_nodes must be in [1, {MAX_NODES}], got {num_nodes}")
    return int(num_nodes)


#: Largest population of the block-wise (sharded) simulations: int32 ids in the CSR store.
MAX_USERS = 2**31 - 1


def check_population(num_users: object) -> int:
    """A population size for the block-wise simulations: an integer in [2, 2^31 - 1] (they
    never form unordered pair indices, so the whole-graph cap of 10^7 does not apply)."""
    if isinstance(num_users, bool) or not isinstance(num_users, (int, np.integer)):
        raise GraphError(f"the number of users must be an integer, got {num_users!r}")
    if not 2 <= int(num_users) <= MAX_USERS:
        raise GraphError(f"the number of users must be in [2, {MAX_USERS}], got {num_users}")
    return int(num_users)


def check_csr_rows(indptr: np.ndarray, indices: np.ndarray, first: int,
                   num_users: int) -> np.ndarray:
    """Validate the neighbor lists of users ``first, first + 1, ...`` given as CSR rows
    (``indptr`` from 0, ids in [0, num_users), sorted and unique within each row, no
    self-loop); returns each entry's row (int64)."""
    if indptr.ndim != 1 or indptr.size < 1 or indptr[0] != 0 or indptr[-1] != indices.size:
        raise GraphError("a block's indptr must start at 0 and end at the number of entries")
    counts = np.diff(indptr)
    if np.any(counts < 0):
        raise GraphError("a block's indptr must be non-decreasing")
    local = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    if indices.size == 0:
        return local
    if indices.min() < 0 or indices.max() >= num_users:
        raise GraphError(f"neighbor ids must lie in [0, {num_users - 1}]")
    if np.any(indices == local + first):
        bad = int(local[np.argmax(indices == local + first)]) + first
        raise GraphError(f"neighbor list of user {bad} contains the user itself (self-loop)")
    same_row = local[1:] == local[:-1]
    if np.any(same_row & (np.diff(indices) <= 0)):
        raise GraphError("each neighbor list must be sorted in increasing order without "
                         "duplicates")
    return local


def _as_int_array(values: object, name: str) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    arr = np.asarray(values)
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise GraphError(f"{name} must hold integer node ids, got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)


def check_neighbor_list(neighbors: object, num_nodes: int,
                        index: int | None = None) -> np.ndarray:
    """Validate one user's neighbor list; return it as a sorted int64 array.

    Rejects non-integer ids, ids outside [0, num_nodes), unsorted or duplicate ids, and the
    user's own id (a self-loop) when ``index`` is given.
    """
    n = check_num_nodes(num_nodes)
    arr = _as_int_array(neighbors, "neighbor list")
    if arr.ndim != 1:
        raise GraphError(f"a neighbor list must be one-dimensional, got shape {arr.shape}")
    if index is not None and (isinstance(index, bool)
                              or not isinstance(index, (int, np.integer))
                              or not 0 <= int(index) < n):
        raise GraphError(f"user index must be an integer in [0, {n - 1}], got {index!r}")
    if arr.size == 0:
        return arr
    if arr.min() < 0 or arr.max() >= n:
        raise GraphError(f"neighbor ids must lie in [0, {n - 1}]")
    steps = np.diff(arr)
    if np.any(steps == 0):
        raise GraphError("neighbor list has duplicate ids")
    if np.any(steps < 0):
        raise GraphError("neighbor list must be sorted in increasing order")
    if index is not None and np.any(arr == index):
        raise GraphError(f"neighbor list of user {index} contains the user itself (self-loop)")
    return arr


def _as_edge_index(edge_index: object, num_nodes: int) -> np.ndarray:
    arr = _as_int_array(edge_index, "edge_index")
    if arr.ndim != 2 or arr.shape[0] != 2:
        raise GraphError(f"edge_index must have shape [2, E], got {tuple(arr.shape)}")
    if arr.size and (arr.min() < 0 or arr.max() >= num_nodes):
        raise GraphError(f"edge_index has node ids outside [0, {num_nodes - 1}]")
    return arr


def undirected_pairs(edge_index: object, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (u, v), u < v, of a symmetric edge_index (both directions present).

    Rejects self-loops, duplicate entries and asymmetric edge lists (a graph in which some
    (i, j) lacks its (j, i): every user must hold the same edge as her neighbor). Returns
    int64 arrays sorted by (u, v).
    """
    n = check_num_nodes(num_nodes)
    arr = _as_edge_index(edge_index, n)
    row, col = arr[0], arr[1]
    if np.any(row == col):
        raise GraphError("edge_index contains self-loops; remove them first")
    fwd = row < col
    u_f, v_f = row[fwd], col[fwd]
    u_b, v_b = col[~fwd], row[~fwd]
    if u_f.size != u_b.size:
        raise GraphError("edge_index is not symmetric: an undirected graph needs both (i, j) "
                         "and (j, i)")
    kf = np.sort(pair_to_index(u_f, v_f, n)) if u_f.size else np.zeros(0, np.int64)
    kb = np.sort(pair_to_index(u_b, v_b, n)) if u_b.size else np.zeros(0, np.int64)
    if kf.size and np.any(kf[1:] == kf[:-1]):
        raise GraphError("edge_index contains duplicate edges; coalesce it first")
    if not np.array_equal(kf, kb):
        raise GraphError("edge_index is not symmetric: an undirected graph needs both (i, j) "
                         "and (j, i)")
    return index_to_pair(kf, n)


def directed_pairs(edge_index: object, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """The (row, col) arrays of a directed edge_index without self-loops."""
    n = check_num_nodes(num_nodes)
    arr = _as_edge_index(edge_index, n)
    if np.any(arr[0] == arr[1]):
        raise GraphError("edge_index contains self-loops; remove them first")
    return arr[0].copy(), arr[1].copy()


def _sorted_upper_pairs(u: np.ndarray, v: np.ndarray, n: int) -> bool:
    """Whether pairs (u, v) all have 0 <= u < v < n and are strictly increasing in (u, v)
    order (as sampled or deduplicated pair lists are): one pass over the keys u n + v."""
    if u.size == 0 or u.shape != v.shape or u.ndim != 1:
        return False
    if u[0] < 0 or not np.all(u < v) or int(v.max()) >= n:
        return False
    keys = u * n + v
    return bool(np.all(keys[1:] > keys[:-1]))


def _both_directions_sorted(u: np.ndarray, v: np.ndarray, n: int, w: np.ndarray | None
                            ) -> tuple[np.ndarray, np.ndarray | None]:
    """Both directions of pairs that pass :func:`_sorted_upper_pairs`, sorted by (row, col),
    as one [2, 2E] array (rows, cols) and the weights: the same as ``sort_pairs`` of the 2E
    entries, without sorting them. Row r is its partners below r (the pairs with v = r, i.e.
    the transposed list in (v, u) order) followed by its partners above r (the input's run
    with u = r, already in order): only the E transposed entries are sorted, and both halves
    are written to their slots by counting (two E-sized temporaries)."""
    m = u.size
    cnt_up = np.bincount(u, minlength=n)
    cnt_low = np.bincount(v, minlength=n)
    ids = np.arange(n, dtype=np.int64)
    out = np.empty((2, 2 * m), dtype=np.int64)
    rows, cols = out[0], out[1]
    repeat_into(rows, ids, cnt_low + cnt_up)
    buf = np.empty(m, dtype=np.int64)
    # slot of the k-th input pair (row r): k + the transposed entries of rows <= r
    repeat_into(buf, np.cumsum(cnt_low), cnt_up, step=1)
    cols[buf] = v
    vals = None if w is None else np.empty(2 * m, dtype=np.result_type(w))
    if vals is not None:
        vals[buf] = w
    if w is None:
        # transposed keys (v, u), unique, so any sort is exact; 32-bit when they fit (half
        # the memory, a faster sort)
        low = np.empty(m, dtype=np.int32 if n * n < 1 << 31 else np.int64)
        np.multiply(v, n, out=low, casting="unsafe")
        np.add(low, u, out=low, casting="unsafe")
        low.sort()
        # -> the column u of each entry
        np.subtract(low, repeat_into(buf, ids * n, cnt_low), out=low, casting="unsafe")
        low_w = None
    else:
        # radix sort (stable) of 16-bit rows; else the unique transposed keys
        order = (np.argsort(v.astype(np.uint16), kind="stable") if n <= 1 << 16
                 else np.argsort(v * n + u))
        low, low_w = u[order], np.asarray(w)[order]
        del order
    # slot of the k-th transposed entry (row r): k + the input pairs of rows < r
    repeat_into(buf, np.cumsum(cnt_up) - cnt_up, cnt_low, step=1)
    cols[buf] = low
    if vals is not None:
        vals[buf] = low_w
    return out, vals


def _both_directions(u: np.ndarray, v: np.ndarray, n: int, w: np.ndarray | None
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """[2, 2E] (rows, cols) and weights of both directions of the undirected pairs (u, v),
    sorted by (row, col); presorted pair lists skip the sort of the 2E entries."""
    if _sorted_upper_pairs(u, v, n):
        return _both_directions_sorted(u, v, n, w)
    rows, cols, vals = sort_pairs(np.concatenate([u, v]), np.concatenate([v, u]), n,
                                  None if w is None else np.concatenate([w, w]))
    return np.stack([rows, cols]), vals


def neighbor_csr(u: np.ndarray, v: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the undirected graph with pairs (u, v): row i is user i's
    sorted neighbor list."""
    n = check_num_nodes(num_nodes)
    both, _ = _both_directions(np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64),
                               n, None)
    rows, cols = both[0], both[1]
    counts = np.bincount(rows, minlength=n)
    indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return indptr, cols


def edge_index_from_pairs(u: np.ndarray, v: np.ndarray, weight: np.ndarray | None = None
                          ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """PyG ``edge_index`` (int64 [2, 2E], both directions, sorted by (row, col)) and optional
    ``edge_weight`` (float32 [2E]) for undirected pairs (u, v)."""
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    n = int(max(u.max(initial=-1), v.max(initial=-1))) + 1
    w = None if weight is None else np.asarray(weight)
    both, w = _both_directions(u, v, max(n, 1), w)
    ei = torch.from_numpy(both)
    return ei, None if w is None else torch.from_numpy(w.astype(np.float32))


def edge_index_from_directed(row: np.ndarray, col: np.ndarray, weight: np.ndarray | None = None,
                             *, presorted: bool = False
                             ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """PyG ``edge_index`` (int64 [2, E]) for directed pairs, sorted by (row, col) unless
    ``presorted`` says the caller's order is to be kept."""
    row = np.asarray(row, dtype=np.int64)
    col = np.asarray(col, dtype=np.int64)
    w = None if weight is None else np.asarray(weight)
    if not presorted:
        n = int(max(row.max(initial=-1), col.max(initial=-1))) + 1
        row, col, w = sort_pairs(row, col, max(n, 1), w)
    ei = torch.from_numpy(np.stack([row, col]))
    return ei, None if w is None else torch.from_numpy(w.astype(np.float32))
