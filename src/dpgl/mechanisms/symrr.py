"""Symmetric randomized response: RR on the lower-triangular part of the adjacency matrix only
(Imola, Murakami & Chaudhuri, "Locally Differentially Private Analysis of Graph Statistics",
USENIX Security 2021; used as the SymRR baseline by Blink, CCS 2023).

User i applies Warner's RR to the bits A[i, j] for j < i only, so every unordered pair
{j, i} is reported exactly once (by its larger endpoint) and the server's graph is symmetric
by construction. eps-edge LDP per user; since each edge is reported once it is also
eps-relationship DP (:func:`dpgl.privacy.symmetric_edge_ldp_to_relationship_dp`).

Whole-graph simulation: flips over the n (n - 1) / 2 upper-triangle pair indices by
geometric gaps, XOR the true pairs; O(|E| + flips), E[flips] = n (n - 1) / 2 / (1 + e^eps).
"""

from __future__ import annotations

import numpy as np

from dpgl.graph.pairs import index_to_ordered_pair, index_to_pair, num_pairs, pair_to_index
from dpgl.mechanisms.neighbor_list import (
    check_neighbor_list,
    check_num_nodes,
)
from dpgl.mechanisms.rr import RR, _directed_keys, both_directions, flip_bits
from dpgl.privacy import Guarantee, symmetric_edge_ldp_to_relationship_dp

__all__ = ["SymRR"]


class SymRR(RR):
    """RR with ``epsilon`` on the bits j < i of user i's list; eps-edge LDP (each reported bit
    is one Warner RR, as in :class:`~dpgl.mechanisms.rr.RR`, whose guarantee, flip
    probability and charging it shares)."""

    def __init__(self, epsilon: float, *,
                 label: str = "Warner RR (lower triangle)") -> None:
        super().__init__(epsilon, label=label)

    @property
    def relationship_guarantee(self) -> Guarantee:
        """eps relationship DP: each undirected edge is reported by one endpoint only."""
        return symmetric_edge_ldp_to_relationship_dp(self.guarantee)

    def report(self, neighbors: object, num_nodes: int, index: int,
               rng: np.random.Generator) -> np.ndarray:
        """What user ``index`` sends: sorted ids j < index whose randomized bit is 1."""
        n = check_num_nodes(num_nodes)
        nb = check_neighbor_list(neighbors, n, index)
        out = flip_bits(nb[nb < index], int(index), self.bit.flip_probability, rng)
        self.charge()
        return out

    def simulate_lists(self, src: np.ndarray, dst: np.ndarray, num_nodes: int,  # type: ignore[override]
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The server's undirected graph, as pairs (a, b) with a < b, from every user's own
        list: user i reports the bits j < i of her list (entries with ``dst < src``)."""
        n = check_num_nodes(num_nodes)
        keys_all = _directed_keys(src, dst, n)  # validates the lists
        user, nbr = index_to_ordered_pair(keys_all, n)
        low = nbr < user
        true_keys = np.sort(pair_to_index(nbr[low], user[low], n))
        keys = flip_bits(true_keys, num_pairs(n), self.bit.flip_probability, rng)
        self.charge()
        return index_to_pair(keys, n)

    def simulate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,  # type: ignore[override]
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The server's undirected graph, as pairs (a, b) with a < b, for the true pairs (u, v)
        (same distribution as every user calling :meth:`report`)."""
        return self.simulate_lists(*both_directions(u, v), num_nodes, rng)

    def expected_pairs(self, num_nodes: int, num_edges: int) -> float:
        """E[number of undirected pairs in the output]."""
        zeros = num_nodes * (num_nodes - 1) / 2.0 - num_edges
        return num_edges * self.keep_probability + zeros * self.flip_probability
