"""Small graphs for the edge-LDP tests (imported by tests in this directory)."""

from __future__ import annotations

import numpy as np


def random_graph(n: int, p: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Erdos-Renyi G(n, p) as pairs (u < v), sorted."""
    rng = np.random.default_rng(seed)
    iu, ju = np.triu_indices(n, 1)
    keep = rng.random(iu.size) < p
    return iu[keep].astype(np.int64), ju[keep].astype(np.int64)


def dense_adjacency(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    a = np.zeros((n, n), dtype=bool)
    a[u, v] = True
    a[v, u] = True
    return a


def neighbor_lists(u: np.ndarray, v: np.ndarray, n: int) -> list[np.ndarray]:
    a = dense_adjacency(u, v, n)
    return [np.flatnonzero(a[i]) for i in range(n)]


def binomial_ok(count: float, trials: float, p: float, z: float = 5.0) -> bool:
    """|count - trials p| within z standard deviations (plus one for discreteness)."""
    sd = np.sqrt(max(trials * p * (1 - p), 1e-12))
    return abs(count - trials * p) <= z * sd + 1.0
