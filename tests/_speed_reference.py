"""Reference implementations of code paths replaced by faster ones (issue #13 item 7): the
code as it was at 2d2d5b5, kept for the tests that check the fast paths give the same."""

from __future__ import annotations

import math

import numpy as np

from dpgl.graph.pairs import num_pairs, pair_to_index


def reference_bernoulli_positions(total: int, p: float, rng: np.random.Generator,
                                  chunk: int = 1 << 23) -> np.ndarray:
    """The sampler before the buffers (one fresh array per chunk, concatenated)."""
    if total == 0 or p == 0.0:
        return np.zeros(0, np.int64)
    inv = 0.0 if p >= 1.0 else -1.0 / math.log1p(-p)
    parts = []
    next_pos = 0
    while next_pos < total:
        remaining = total - next_pos
        mean = remaining * p
        size = int(min(chunk, max(16, math.ceil(mean + 3.0 * math.sqrt(mean) + 3.0))))
        size = min(size, remaining + 1)
        e = rng.standard_exponential(size)
        e *= inv
        if inv * 64.0 > remaining:
            np.minimum(e, float(remaining), out=e)
        pos = e.astype(np.int64)
        pos += 1
        np.cumsum(pos, out=pos)
        pos += next_pos - 1
        stop = int(np.searchsorted(pos, total, side="left"))
        parts.append(pos[:stop])
        if stop < size:
            break
        next_pos = int(pos[-1]) + 1
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def reference_xor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Symmetric difference of two sorted unique arrays (by Python sets)."""
    return np.array(sorted(set(a.tolist()) ^ set(b.tolist())), dtype=np.int64)


def reference_pair_decode(k: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper-triangle index -> (i, j) by the float square root and the +-1 correction."""
    k = np.asarray(k, dtype=np.int64)

    def start(i: np.ndarray) -> np.ndarray:
        return i * n - (i * (i + 1)) // 2

    m = 2.0 * n - 1.0
    i = np.floor((m - np.sqrt(np.maximum(m * m - 8.0 * k, 0.0))) / 2.0).astype(np.int64)
    i = np.clip(i, 0, max(n - 2, 0))
    for _ in range(2):
        i = np.where(start(i + 1) <= k, i + 1, i)
        i = np.where(start(i) > k, i - 1, i)
    return i, k - start(i) + i + 1


def reference_both_directions(u: np.ndarray, v: np.ndarray, w: np.ndarray | None
                              ) -> tuple[np.ndarray, np.ndarray | None]:
    """edge_index_from_pairs before the fast path: sort the 2E keys row n + col, split them
    by division."""
    n = max(int(max(u.max(initial=-1), v.max(initial=-1))) + 1, 1)
    keys = np.concatenate([u, v]).astype(np.int64) * n + np.concatenate([v, u])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    return np.stack([keys // n, keys % n]), None if w is None else np.concatenate([w, w])[order]


def reference_symrr_pairs(u: np.ndarray, v: np.ndarray, n: int, flip_probability: float,
                          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """SymRR.simulate as it was: flips over the upper-triangle indices XOR the true pairs,
    decoded index by index."""
    keys = np.sort(pair_to_index(np.asarray(u), np.asarray(v), n))
    flips = reference_bernoulli_positions(num_pairs(n), flip_probability, rng)
    return reference_pair_decode(reference_xor(flips, keys), n)


def reference_dpar_examples(pi, ids: np.ndarray, x, y, universe: int):
    """DPAR's training examples as they were built: through a universe-sized feature matrix
    and a per-node loop."""
    import torch

    x_u = torch.zeros(universe, x.size(1), dtype=x.dtype)
    x_u[torch.from_numpy(ids)] = x
    sub = pi[ids]
    counts = np.diff(sub.indptr)
    s = max(1, int(counts.max(initial=1)))
    idx = np.zeros((ids.size, s), dtype=np.int64)
    w = np.zeros((ids.size, s), dtype=np.float32)
    for i in range(ids.size):
        a, b = sub.indptr[i], sub.indptr[i + 1]
        idx[i, : b - a] = sub.indices[a:b]
        w[i, : b - a] = sub.data[a:b]
    return x_u[torch.from_numpy(idx)], torch.from_numpy(w), y
