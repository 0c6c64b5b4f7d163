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

``generator="blink-authors-bug"`` (:func:`blink_authors_graph`) replaces step 4 by the
generation in the Blink authors' LDPGen baseline (github.com/zhxchd/Blink_GNN at e55cb7b,
``src/ldpgen/server.py`` lines 41-76), which is *not* a Chung-Lu model: it reproduces a
defect of that code, for comparison with Blink's Fig. 5 only. Their p_uv (u in cluster a,
v in cluster b) is dhat_u[b] * (S_b / |C_b|) / (S_b + T_ab), S_b the sum of dhat[:, b] over
all users and T_ab over cluster a: v's own report never enters (the cluster mean stands in
for it), p_uv != p_vu, and every ordered pair is drawn on its own, so the graph is directed
(edge u -> v, v aggregates from u): a user's out-degree follows her noisy degree, her
in-degree does not (every member of a cluster receives the same expected number of edges).
On Cora this graph is as random w.r.t. the labels as dpgl's Chung-Lu graph (homophily 0.17,
the chance level) but a GCN or GAT on it falls to the constant predictor (34 %, Fig. 5's
LDPGen) where one on the undirected Chung-Lu graph keeps 41-44 % (notes: ldpgen-gap.md).
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

__all__ = ["GENERATORS", "blink_authors_graph", "choose_k1", "chung_lu_blocks", "kmeans",
           "ldpgen_reports", "ldpgen_simulate"]

#: the server's graph generation: dpgl's block Chung-Lu, or the Blink authors' code (a defect
#: reproduced for comparison; see the module docstring)
GENERATORS = ("chung-lu", "blink-authors-bug")


def check_generator(generator: str) -> str:
    if generator not in GENERATORS:
        raise ConfigError(f"unknown LDPGen generator {generator!r}; choose one of: "
                          + ", ".join(GENERATORS))
    return generator


def choose_k1(noisy_degree: np.ndarray, eps2: float, num_nodes: int, max_k1: int = 64,
              min_k1: int = 2) -> int:
    """Number of phase-2 clusters from the phase-1 noisy degrees (see the module docstring),
    clipped to [``min_k1``, ``max_k1``] and to n. (The Blink authors' code clips to [1, n]:
    ``src/ldpgen/server.py`` line 31.)"""
    eta = np.clip(np.round(noisy_degree), 1, max(num_nodes - 1, 1)) / 2.0
    f = eta + (eta * eta - 2.0 * (1.0 + math.sqrt(5.0)) * eta + 1.0) / eps2
    k1 = math.ceil(float(np.mean(f)))
    return int(min(max(k1, min_k1), max_k1, num_nodes))


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


def blink_authors_graph(delta1: np.ndarray, xi1: np.ndarray, k1: int,
                        rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The Blink authors' LDPGen generation (github.com/zhxchd/Blink_GNN e55cb7b,
    ``src/ldpgen/server.py``), reproducing its defect (see the module docstring); for
    comparison with Blink's Fig. 5, not as LDPGen.

    From the phase-2 reports ``delta1`` (n x k1) towards the phase-1 clusters ``xi1``:

    * line 48: a second k-means of ``delta1`` into k1 clusters xi2;
    * lines 55-59: dhat[:, i] = sum_j round(delta1[:, j]) / |xi1 = j| * |xi1 = j, xi2 = i|
      (``delta1`` rounded and clipped to [0, n - 1]);
    * lines 62-65: P[a, b] = (S_b / |xi2 = b|) / (S_b + T_ab), S_b = sum over all users of
      dhat[:, b], T_ab = the sum over the users of xi2 cluster a;
    * lines 67-74: p_uv = clip(dhat[u, xi2_v] P[xi2_u, xi2_v], 0, 1), zero diagonal, one
      Bernoulli per ordered pair (u, v);
    * line 76: the edges are the nonzero entries (u, v), i.e. PyG's u -> v.

    Returns the directed edges ``(src, dst)``. Exact in law and O(n k1 + edges): p_uv
    depends on v only through its cluster, so row u's trials towards cluster b are
    |b| - [u in b] iid Bernoulli(p) (:func:`dpgl.graph.pairs.bernoulli_rows`). Where their
    code divides 0 by 0 (a cluster whose dhat column sums to 0) it gets NaN; here p = 0.
    """
    from dpgl.graph.pairs import bernoulli_rows

    d1 = np.asarray(delta1, dtype=np.float64)
    n = d1.shape[0]
    xi1 = np.asarray(xi1, dtype=np.int64)
    if d1.shape != (n, k1) or xi1.shape != (n,):
        raise ConfigError(f"delta1 must be (n, k1) = ({n}, {k1}) and xi1 of length n")
    xi2 = kmeans(d1, k1, rng)
    rounded = np.clip(np.round(d1), 0, n - 1)
    size1 = np.bincount(xi1, minlength=k1).astype(np.float64)
    overlap = np.zeros((k1, k1))  # overlap[j, i] = |xi1 = j and xi2 = i|
    np.add.at(overlap, (xi1, xi2), 1.0)
    dhat = rounded @ (overlap / np.maximum(size1, 1.0)[:, None])
    total = dhat.sum(axis=0)  # S_b
    size2 = np.bincount(xi2, minlength=k1)
    block = np.zeros((k1, k1))  # T_ab
    np.add.at(block, xi2, dhat)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_block = (total / np.maximum(size2, 1))[None, :] / (total[None, :] + block)
    p_block = np.nan_to_num(p_block, nan=0.0, posinf=0.0, neginf=0.0)
    rates = np.clip(dhat * p_block[xi2], 0.0, 1.0)  # rates[u, b] = p_uv for v in cluster b
    own = xi2[:, None] == np.arange(k1)[None, :]
    lengths = size2[None, :] - own  # v ranges over cluster b without u
    rows, cols = bernoulli_rows(rates.ravel(), lengths.ravel(), rng)
    src, b = np.divmod(rows, k1)
    order = np.argsort(xi2, kind="stable")  # cluster b's members: order[start[b]:start[b+1]]
    start = np.concatenate([[0], np.cumsum(size2)[:-1]])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - start[xi2[order]]
    cols = cols + ((xi2[src] == b) & (cols >= rank[src]))  # skip u's own place in its cluster
    return src, order[start[b] + cols]


def ldpgen_reports(src: np.ndarray, dst: np.ndarray, num_nodes: int, client: LDPGenClient,
                   rng: np.random.Generator, *, k0: int = 2, k1: int | None = None,
                   max_k1: int = 64, min_k1: int = 2
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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
        k1 = choose_k1(delta0.sum(axis=1), client.eps2, n, max_k1, min_k1)
    elif k1 < 1:
        raise ConfigError(f"k1 must be >= 1, got {k1}")
    k1 = int(min(k1, n))
    xi1 = kmeans(delta0, k1, rng)
    delta1 = client.simulate_lists(src, dst, n, xi1, k1, 2, rng)
    return xi0, delta0, xi1, delta1


def ldpgen_simulate(u: np.ndarray, v: np.ndarray, num_nodes: int, client: LDPGenClient,
                    rng: np.random.Generator, *, k0: int = 2, k1: int | None = None,
                    max_k1: int = 64, generator: str = "chung-lu"
                    ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """Both LDPGen phases (users and server) and the generated graph: with ``generator=
    "chung-lu"`` undirected pairs (a, b), a < b; with ``"blink-authors-bug"`` directed edges
    a -> b (:func:`blink_authors_graph`; k1 then clipped to [1, n] as in their code, and
    ``max_k1`` not applied)."""
    check_generator(generator)
    src, dst = both_directions(u, v)
    n = check_num_nodes(num_nodes)
    authors = generator == "blink-authors-bug"
    _, _, xi1, delta1 = ldpgen_reports(src, dst, n, client, rng, k0=k0, k1=k1,
                                       max_k1=n if authors else max_k1,
                                       min_k1=1 if authors else 2)
    k1_used = delta1.shape[1]
    generate = blink_authors_graph if authors else chung_lu_blocks
    a, b = generate(delta1, xi1, k1_used, rng)
    return a, b, {"k1": k1_used, "generator": generator}
