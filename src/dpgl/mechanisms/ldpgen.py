"""LDPGen client side (Qin, Yu, Yang, Khalil, Xiao & Ren, "Generating Synthetic Decentralized
Social Graphs with Local Differential Privacy", CCS 2017), as Blink (CCS 2023) runs it as a
baseline.

In each of two phases the server publishes a partition of the users into k groups and user i
sends her *degree vector* towards it, delta_i[g] = #{j in N(i) : group(j) = g}, plus
Lap(1 / eps_phase) noise on every entry. Changing one bit of her list changes one entry by
1 (L1 sensitivity 1), so a phase is eps_phase-edge LDP, and the two phases compose to
eps = eps_phase1 + eps_phase2 (split in half by default, as in Blink's baseline).
The whole-graph simulation counts the vectors sparsely (a bincount over the edge list):
O(|E| + n k).
"""

from __future__ import annotations

import numpy as np

from dpgl.errors import ConfigError
from dpgl.mechanisms._primitives import laplace_noise
from dpgl.mechanisms.neighbor_list import check_neighbor_list, check_num_nodes
from dpgl.privacy import Guarantee, Unit, check_epsilon, check_fraction

__all__ = ["LDPGenClient", "check_partition", "degree_vectors"]


def check_partition(partition: object, num_nodes: int, k: int) -> np.ndarray:
    """A length-n integer array with values in [0, k)."""
    arr = np.asarray(partition)
    if arr.shape != (num_nodes,) or not np.issubdtype(arr.dtype, np.integer):
        raise ConfigError(f"partition must be an integer array of shape ({num_nodes},)")
    if arr.size and (arr.min() < 0 or arr.max() >= k):
        raise ConfigError(f"partition labels must lie in [0, {k - 1}]")
    return arr.astype(np.int64, copy=False)


def degree_vectors(u: np.ndarray, v: np.ndarray, num_nodes: int, partition: np.ndarray,
                   k: int) -> np.ndarray:
    """True degree vectors (n x k): entry [i, g] counts i's neighbors in group g."""
    rows = np.concatenate([u, v])
    cols = np.concatenate([v, u])
    flat = np.bincount(rows * k + partition[cols], minlength=num_nodes * k)
    return flat.reshape(num_nodes, k).astype(np.float64)


class LDPGenClient:
    """LDPGen's two-phase randomizer with budget ``epsilon`` (``phase1_share`` to phase 1)."""

    def __init__(self, epsilon: float, phase1_share: float = 0.5) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.phase1_share = check_fraction(phase1_share, "phase1_share", low_open=True,
                                           high_open=True)

    @property
    def eps1(self) -> float:
        return self.phase1_share * self.epsilon

    @property
    def eps2(self) -> float:
        return self.epsilon - self.eps1

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP: two Laplace degree vectors (sensitivity 1), eps1 + eps2."""
        return Guarantee(self.epsilon, 0.0, Unit.EDGE_LDP)

    @property
    def parts(self) -> dict[str, Guarantee]:
        return {"phase1": Guarantee(self.eps1, 0.0, Unit.EDGE_LDP),
                "phase2": Guarantee(self.eps2, 0.0, Unit.EDGE_LDP)}

    def _eps(self, phase: int) -> float:
        if phase not in (1, 2):
            raise ConfigError(f"LDPGen phase must be 1 or 2, got {phase!r}")
        return self.eps1 if phase == 1 else self.eps2

    def report(self, neighbors: object, num_nodes: int, index: int, partition: object, k: int,
               phase: int, rng: np.random.Generator) -> np.ndarray:
        """User ``index``'s noisy degree vector towards ``partition`` (k groups)."""
        n = check_num_nodes(num_nodes)
        nb = check_neighbor_list(neighbors, n, index)
        part = check_partition(partition, n, k)
        counts = np.bincount(part[nb], minlength=k).astype(np.float64)
        return counts + laplace_noise(self._eps(phase), k, rng)

    def simulate(self, u: np.ndarray, v: np.ndarray, num_nodes: int, partition: object, k: int,
                 phase: int, rng: np.random.Generator) -> np.ndarray:
        """All users' noisy degree vectors (n x k) for the undirected graph (u, v)."""
        n = check_num_nodes(num_nodes)
        part = check_partition(partition, n, k)
        return degree_vectors(u, v, n, part, k) + laplace_noise(self._eps(phase), (n, k), rng)
