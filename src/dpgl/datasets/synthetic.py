"""Synthetic graphs, generated sparsely and seeded by an explicit generator.

* :func:`csbm` — contextual stochastic block model (Deshpande et al., "Contextual stochastic
  block models", NeurIPS 2018): planted classes, edges within a class with probability
  ``p_in`` and across classes with ``p_out``, Gaussian node features around class means.
* :func:`barabasi_albert` — preferential attachment (Barabási & Albert, Science 1999), with
  the linear-time edge-slot method of Batagelj & Brandes ("Efficient generation of large
  random networks", Phys. Rev. E 71, 2005). PyG's ``barabasi_albert_graph`` grows its edge
  list with one ``torch.cat`` per node (quadratic) and draws from NumPy's global generator,
  so it is not used.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dpgl.datasets.base import undirected_edge_index
from dpgl.errors import ConfigError
from dpgl.rng import SeedLike, make_rng

if TYPE_CHECKING:
    import numpy as np
    from torch_geometric.data import Data


def _check_int(value: object, name: str, low: int) -> int:
    import numpy as np
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _check_float(value: object, name: str, low: float, high: float) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number in [{low}, {high}], got {value!r}") from None
    if not (low <= v <= high) or math.isnan(v):
        raise ConfigError(f"{name} must be in [{low}, {high}], got {value!r}")
    return v


def triu_pairs(t: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Map linear indices ``t`` in ``[0, m(m-1)/2)`` to pairs ``i < j`` (row-major order)."""
    import numpy as np
    t = np.asarray(t, dtype=np.int64)

    def offset(i: np.ndarray) -> np.ndarray:  # index of the first pair of row i
        return i * (2 * m - i - 1) // 2

    b = 2.0 * m - 1.0
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8.0 * t, 0.0))) / 2.0).astype(np.int64)
    i = np.clip(i, 0, max(m - 2, 0))
    for _ in range(3):  # exact integer correction of the floating-point estimate
        i = np.where(offset(i) > t, i - 1, i)
        i = np.where((i + 1 <= m - 2) & (offset(i + 1) <= t), i + 1, i)
    j = t - offset(i) + i + 1
    return i, j


def csbm(
    num_nodes: int = 2000,
    num_classes: int = 4,
    *,
    avg_degree: float = 5.0,
    homophily: float = 0.8,
    num_features: int = 32,
    mean_distance: float = 2.0,
    rng: SeedLike = 0,
) -> Data:
    """Contextual SBM with balanced classes.

    Expected degree ``avg_degree``, a fraction ``homophily`` of it inside the own class:
    ``p_in = homophily * avg_degree / (n_c - 1)``, ``p_out = (1 - homophily) * avg_degree /
    (n - n_c)`` with ``n_c = num_nodes / num_classes``. Features are ``x = mu_y + N(0, I)``
    with orthonormal random class directions scaled so that any two class means are
    ``mean_distance`` apart. With the defaults (2000 nodes, 4 classes, degree 5, homophily
    0.8, 32 features, distance 2) a 2-layer MLP reached 0.645 and a 2-layer GCN 0.935 test
    accuracy (50/25/25 split, mean of 3 seeds; measured when the defaults were chosen), so
    structure clearly helps. (Degree 10 pushes the GCN to ~0.99, leaving no headroom.)

    Edges are drawn per block pair: a binomial count, then that many distinct positions
    uniformly (never an ``n x n`` matrix).
    """
    import numpy as np
    import torch
    from torch_geometric.data import Data
    n = _check_int(num_nodes, "num_nodes", 2)
    c = _check_int(num_classes, "num_classes", 1)
    d = _check_int(num_features, "num_features", 1)
    if c > n:
        raise ConfigError(f"num_classes ({c}) must not exceed num_nodes ({n})")
    if d < c:
        raise ConfigError(f"num_features ({d}) must be >= num_classes ({c}) for distinct means")
    h = _check_float(homophily, "homophily", 0.0, 1.0)
    deg = _check_float(avg_degree, "avg_degree", 0.0, float(n - 1))
    dist = _check_float(mean_distance, "mean_distance", 0.0, math.inf)
    gen = make_rng(rng)

    y = gen.permutation(np.arange(n) % c)
    members = [np.flatnonzero(y == k) for k in range(c)]
    n_c = n / c
    p_in = min(1.0, h * deg / (n_c - 1)) if n_c > 1 else 0.0
    p_out = min(1.0, (1.0 - h) * deg / (n - n_c)) if c > 1 else 0.0

    src, dst = [], []
    for a in range(c):
        ma = members[a]
        pairs = len(ma) * (len(ma) - 1) // 2
        k = int(gen.binomial(pairs, p_in)) if pairs else 0
        if k:
            i, j = triu_pairs(gen.choice(pairs, size=k, replace=False), len(ma))
            src.append(ma[i])
            dst.append(ma[j])
        for b in range(a + 1, c):
            mb = members[b]
            pairs = len(ma) * len(mb)
            k = int(gen.binomial(pairs, p_out)) if pairs else 0
            if k:
                t = gen.choice(pairs, size=k, replace=False)
                src.append(ma[t // len(mb)])
                dst.append(mb[t % len(mb)])
    s = np.concatenate(src) if src else np.empty(0, np.int64)
    t_ = np.concatenate(dst) if dst else np.empty(0, np.int64)
    edge_index = undirected_edge_index(s, t_, n, what="csbm")

    q, _ = np.linalg.qr(gen.standard_normal((d, c)))  # orthonormal class directions
    means = (dist / math.sqrt(2.0)) * q.T  # pairwise distance = dist
    x = means[y] + gen.standard_normal((n, d))
    return Data(
        x=torch.from_numpy(x.astype(np.float32)),
        y=torch.from_numpy(y.astype(np.int64)),
        edge_index=edge_index,
        num_nodes=n,
    )


def barabasi_albert_edges(num_nodes: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """Directed edge list ``[2, E]`` (new node -> earlier node) of a BA graph, O(n m) time.

    Nodes ``0..m`` form a clique; every later node ``v`` draws ``m`` endpoints uniformly
    from the endpoint slots of all edges that existed before it (degree-proportional
    choice). The slots are resolved by pointer jumping, vectorised: a target slot of an
    earlier preferential edge points to that edge's own draw, and the chain ends at a
    source slot or a clique slot (expected chain length 2, maximum O(log nm)). Repeated
    targets of one node are merged later, so the graph has slightly fewer than
    ``m(m+1)/2 + (n-m-1) m`` edges; there are no self-loops.
    """
    import numpy as np
    n, k = num_nodes, m
    ci, cj = np.triu_indices(k + 1, 1)
    e0 = ci.size  # clique edges
    clique_slots = np.empty(2 * e0, dtype=np.int64)
    clique_slots[0::2], clique_slots[1::2] = cj, ci
    new = np.repeat(np.arange(k + 1, n, dtype=np.int64), k)  # source node of each PA edge
    e_pa = new.size
    if e_pa == 0:
        return np.stack([cj, ci]).astype(np.int64)
    before = 2 * (e0 + (new - (k + 1)) * k)  # slots available to each edge's draw
    draw = (rng.random(e_pa) * before).astype(np.int64)
    np.minimum(draw, before - 1, out=draw)
    pos = draw.copy()
    target = np.full(e_pa, -1, dtype=np.int64)
    todo = np.arange(e_pa)
    while todo.size:
        p = pos[todo]
        in_clique = p < 2 * e0
        is_src = ~in_clique & ((p & 1) == 0)
        done = in_clique | is_src
        idx_c = todo[in_clique]
        target[idx_c] = clique_slots[p[in_clique]]
        idx_s = todo[is_src]
        target[idx_s] = new[(p[is_src] - 2 * e0) // 2]
        rest = todo[~done]
        pos[rest] = draw[(pos[rest] - 2 * e0 - 1) // 2]  # follow the earlier edge's draw
        todo = rest
    src = np.concatenate([cj, new])
    dst = np.concatenate([ci, target])
    return np.stack([src, dst]).astype(np.int64)


def barabasi_albert(num_nodes: int = 1000, m: int = 5, *, rng: SeedLike = 0) -> Data:
    """Barabási-Albert graph with placeholder node data, for scaling studies.

    The graph has no meaningful features or labels: ``x`` is a column of ones
    (``[n, 1]``) and ``y`` is all zeros (one class). Generation is linear in ``n m``
    (10^6 nodes with m = 5 take a few seconds).
    """
    import torch
    from torch_geometric.data import Data
    n = _check_int(num_nodes, "num_nodes", 2)
    k = _check_int(m, "m", 1)
    if k >= n:
        raise ConfigError(f"m ({k}) must be smaller than num_nodes ({n})")
    gen = make_rng(rng)
    e = barabasi_albert_edges(n, k, gen)
    return Data(
        x=torch.ones(n, 1),
        y=torch.zeros(n, dtype=torch.long),
        edge_index=undirected_edge_index(e[0], e[1], n, what="ba"),
        num_nodes=n,
    )
