"""LDPGen server side (Qin et al., CCS 2017), in the form Blink (CCS 2023) uses as a baseline.

1. Random initial partition into k0 groups (k0 = 2, as in Blink's baseline); users send noisy
   degree vectors (phase 1, :class:`dpgl.mechanisms.ldpgen.LDPGenClient`).
2. The server picks the number of clusters k1 from the noisy degrees eta_i = sum_g
   delta_i[g] (rounded, clipped to [1, n - 1]) with the rule of Blink's LDPGen baseline,
   k1 = ceil(mean_i f(eta_i / 2)), f(d) = d + (d^2 - 2 (1 + sqrt 5) d + 1) / eps2, clipped to
   [2, ``max_k1``], and clusters the phase-1 vectors with k-means (k-means++ start, Lloyd).
3. Users send noisy degree vectors towards these k1 clusters (phase 2).
4. The server generates a graph with a Chung-Lu model per pair of clusters: between clusters
   a and b the expected number of edges is E_ab = (sum_{i in a} w_i[b] + sum_{j in b} w_j[a])
   / 2 (E_aa = sum_{i in a} w_i[a] / 2) with w = max(delta, 0), and an edge lands on (i, j)
   with probability proportional to w_i[b] w_j[a].

Simplifications (documented, deliberate): the Chung-Lu sampling is Poissonized — per block
M_ab ~ Poisson(E_ab) endpoint pairs are drawn with probabilities proportional to the weights
and self-loops / repeats are dropped, so P[edge ij] = 1 - exp(-w_i[b] w_j[a] / S_ab)
instead of min(1, w_i[b] w_j[a] / S_ab) (Norros-Reittu; equal to first order on sparse
blocks); the final graph uses the phase-2 vectors with the phase-1 clustering (no third
re-clustering); k1's rule is taken from Blink's baseline code and not re-derived from the
LDPGen paper. Cost O(|E| + n k1 + output); never n x n.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpgl.errors import ConfigError
from dpgl.graph.pairs import index_to_pair, pair_to_index, unique_counts
from dpgl.mechanisms.ldpgen import LDPGenClient
from dpgl.mechanisms.neighbor_list import check_num_nodes
from dpgl.mechanisms.rr import both_directions

__all__ = ["choose_k1", "chung_lu_blocks", "kmeans", "ldpgen_reports",
           "ldpgen_simulate"]


def choose_k1(noisy_degree: np.ndarray, eps2: float, num_nodes: int, max_k1: int = 64) -> int:
    """Number of phase-2 clusters from the phase-1 noisy degrees (see the module docstring)."""
    eta = np.clip(np.round(noisy_degree), 1, max(num_nodes - 1, 1)) / 2.0
    f = eta + (eta * eta - 2.0 * (1.0 + math.sqrt(5.0)) * eta + 1.0) / eps2
    k1 = math.ceil(float(np.mean(f)))
    return int(min(max(k1, 2), max_k1, num_nodes))


def _sq_dist_argmin(x: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest center and squared distance per row, in row chunks."""
    n = x.shape[0]
    labels = np.empty(n, dtype=np.int64)
    dist = np.empty(n)
    c2 = np.sum(centers * centers, axis=1)
    step = max(1, (1 << 22) // max(centers.shape[0], 1))
    for s in range(0, n, step):
        blk = x[s:s + step]
        d = c2[None, :] - 2.0 * blk @ centers.T
        labels[s:s + step] = np.argmin(d, axis=1)
        dist[s:s + step] = np.maximum(d[np.arange(blk.shape[0]), labels[s:s + step]]
                                      + np.sum(blk * blk, axis=1), 0.0)
    return labels, dist


def kmeans(x: np.ndarray, k: int, rng: np.random.Generator, *, iters: int = 50) -> np.ndarray:
    """Lloyd's k-means with k-means++ seeding (Arthur & Vassilvitskii 2007); returns labels.

    Empty clusters are re-seeded at the point farthest from its center.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    k = int(min(k, n))
    if k < 1:
        raise ConfigError("k-means needs k >= 1")
    centers = np.empty((k, x.shape[1]))
    centers[0] = x[rng.integers(n)]
    d2 = np.sum((x - centers[0]) ** 2, axis=1)
    for c in range(1, k):
        total = d2.sum()
        idx = rng.choice(n, p=d2 / total) if total > 0 else rng.integers(n)
        centers[c] = x[idx]
        d2 = np.minimum(d2, np.sum((x - centers[c]) ** 2, axis=1))
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(iters):
        new, dist = _sq_dist_argmin(x, centers)
        counts = np.bincount(new, minlength=k)
        for empty in np.flatnonzero(counts == 0).tolist():
            far = int(np.argmax(dist))
            centers[empty] = x[far]
            dist[far] = 0.0
            new[far] = empty
        if np.array_equal(new, labels):
            break
        labels = new
        counts = np.bincount(labels, minlength=k).astype(np.float64)
        sums = np.zeros_like(centers)
        np.add.at(sums, labels, x)
        centers = sums / np.maximum(counts, 1.0)[:, None]
    return labels


def chung_lu_blocks(weights: np.ndarray, labels: np.ndarray, k: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Poissonized block Chung-Lu graph: node i has weight ``weights[i, b]`` towards cluster b.

    Returns undirected pairs (u < v), without self-loops or repeats.
    """
    n = labels.size
    w = np.maximum(np.asarray(weights, dtype=np.float64), 0.0)
    members = [np.flatnonzero(labels == a) for a in range(k)]
    # cumulative weights of cluster a's members towards group b, for inverse-CDF sampling
    cums = [np.cumsum(w[m], axis=0) for m in members]
    keys: list[np.ndarray] = []
    for a in range(k):
        for b in range(a, k):
            if members[a].size == 0 or members[b].size == 0:
                continue
            s_ab = cums[a][-1, b]
            s_ba = cums[b][-1, a]
            mean = s_ab / 2.0 if a == b else (s_ab + s_ba) / 2.0
            if mean <= 0 or s_ab <= 0 or s_ba <= 0:
                continue
            m = int(rng.poisson(mean))
            if m == 0:
                continue
            i = members[a][np.minimum(np.searchsorted(cums[a][:, b], rng.random(m) * s_ab,
                                                      side="right"), members[a].size - 1)]
            j = members[b][np.minimum(np.searchsorted(cums[b][:, a], rng.random(m) * s_ba,
                                                      side="right"), members[b].size - 1)]
            ok = i != j
            lo, hi = np.minimum(i[ok], j[ok]), np.maximum(i[ok], j[ok])
            keys.append(pair_to_index(lo, hi, n))
    if not keys:
        e = np.zeros(0, np.int64)
        return e, e
    return index_to_pair(unique_counts(np.concatenate(keys))[0], n)


def ldpgen_reports(src: np.ndarray, dst: np.ndarray, num_nodes: int, client: LDPGenClient,
                   rng: np.random.Generator, *, k0: int = 2, k1: int | None = None,
                   max_k1: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both LDPGen phases for every user's own list (directed entries: user ``src[k]`` has
    neighbor ``dst[k]``): the server's random phase-1 partition xi0, the phase-1 reports, the
    server's phase-2 clustering xi1 of those reports (post-processing) and the phase-2 reports.
    Returns ``(xi0, delta0, xi1, delta1)``."""
    n = check_num_nodes(num_nodes)
    if k0 < 1:
        raise ConfigError(f"k0 must be >= 1, got {k0}")
    xi0 = rng.integers(0, k0, size=n)
    delta0 = client.simulate_lists(src, dst, n, xi0, k0, 1, rng)
    if k1 is None:
        k1 = choose_k1(delta0.sum(axis=1), client.eps2, n, max_k1)
    elif k1 < 1:
        raise ConfigError(f"k1 must be >= 1, got {k1}")
    k1 = int(min(k1, n))
    xi1 = kmeans(delta0, k1, rng)
    delta1 = client.simulate_lists(src, dst, n, xi1, k1, 2, rng)
    return xi0, delta0, xi1, delta1


def ldpgen_simulate(u: np.ndarray, v: np.ndarray, num_nodes: int, client: LDPGenClient,
                    rng: np.random.Generator, *, k0: int = 2, k1: int | None = None,
                    max_k1: int = 64) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Both LDPGen phases (users and server) and the generated graph (pairs u < v)."""
    src, dst = both_directions(u, v)
    _, _, xi1, delta1 = ldpgen_reports(src, dst, num_nodes, client, rng, k0=k0, k1=k1,
                                       max_k1=max_k1)
    k1_used = delta1.shape[1]
    a, b = chung_lu_blocks(delta1, xi1, k1_used, rng)
    return a, b, {"k1": k1_used}
