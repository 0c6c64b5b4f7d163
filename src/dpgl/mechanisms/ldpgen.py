"""LDPGen client side (Qin, Yu, Yang, Khalil, Xiao & Ren, "Generating Synthetic Decentralized
Social Graphs with Local Differential Privacy", CCS 2017), as Blink (CCS 2023) runs it as a
baseline.

In each of two phases the server publishes a partition of the users into k groups and user i
sends her *degree vector* towards it, delta_i[g] = #{j in N(i) : group(j) = g}, plus
discrete Laplace noise with rate eps_phase on every entry (LDPGen uses continuous Laplace; the
exact integer sampler releases integers that are safe from floating-point attacks). Changing
one bit of her list changes one entry by 1 (L1 sensitivity 1), so a phase is
eps_phase-edge LDP, and the two phases compose to eps = eps_phase1 + eps_phase2 (split in
half by default, as in Blink's baseline). Each phase charges the active accountant when it
is drawn. The partition of phase 2 is computed by the server from the phase-1 reports only
(post-processing).
The whole-graph simulation counts the vectors sparsely (a bincount over the edge list):
O(|E| + n k).
"""

from __future__ import annotations

import numpy as np

from dpgl.errors import ConfigError
from dpgl.mechanisms.neighbor_list import check_neighbor_list, check_num_nodes
from dpgl.mechanisms.rr import _directed_keys, both_directions
from dpgl.privacy import (
    DiscreteLaplace,
    Guarantee,
    Randomizer,
    Unit,
    check_epsilon,
    check_fraction,
    compose_parts,
)

__all__ = ["LDPGenClient", "check_partition", "degree_vectors"]


def check_partition(partition: object, num_nodes: int, k: int) -> np.ndarray:
    """A length-n integer array with values in [0, k)."""
    arr = np.asarray(partition)
    if arr.shape != (num_nodes,) or not np.issubdtype(arr.dtype, np.integer):
        raise ConfigError(f"partition must be an integer array of shape ({num_nodes},)")
    if arr.size and (arr.min() < 0 or arr.max() >= k):
        raise ConfigError(f"partition labels must lie in [0, {k - 1}]")
    return arr.astype(np.int64, copy=False)


def degree_vectors_lists(src: np.ndarray, dst: np.ndarray, num_nodes: int,
                         partition: np.ndarray, k: int) -> np.ndarray:
    """True degree vectors (n x k) of directed lists: entry [i, g] counts i's neighbors in
    group g."""
    flat = np.bincount(np.asarray(src, dtype=np.int64) * k
                       + partition[np.asarray(dst, dtype=np.int64)], minlength=num_nodes * k)
    return flat.reshape(num_nodes, k).astype(np.int64)


def degree_vectors(u: np.ndarray, v: np.ndarray, num_nodes: int, partition: np.ndarray,
                   k: int) -> np.ndarray:
    """True degree vectors (n x k) of the undirected graph (u, v)."""
    return degree_vectors_lists(*both_directions(u, v), num_nodes, partition, k)


class LDPGenClient(Randomizer):
    """LDPGen's two-phase randomizer with budget ``epsilon`` (``phase1_share`` to phase 1)."""

    def __init__(self, epsilon: float, phase1_share: float = 0.5) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.phase1_share = check_fraction(phase1_share, "phase1_share", low_open=True,
                                           high_open=True)
        self.label = "neighbor lists: LDPGen"
        self.phases = (
            DiscreteLaplace(self.phase1_share * self.epsilon, 1, Unit.EDGE_LDP,
                            label="degree vector, phase 1"),
            DiscreteLaplace(self.epsilon - self.phase1_share * self.epsilon, 1, Unit.EDGE_LDP,
                            label="degree vector, phase 2"),
        )

    @property
    def eps1(self) -> float:
        return self.phases[0].epsilon

    @property
    def eps2(self) -> float:
        return self.phases[1].epsilon

    def parts(self) -> dict[str, Guarantee]:
        return {"phase1": self.phases[0].guarantee, "phase2": self.phases[1].guarantee}

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP: two discrete Laplace degree vectors (L1 sensitivity 1), composed."""
        return compose_parts(self.parts(), Unit.EDGE_LDP)

    def _phase(self, phase: int) -> DiscreteLaplace:
        if phase not in (1, 2):
            raise ConfigError(f"LDPGen phase must be 1 or 2, got {phase!r}")
        return self.phases[phase - 1]

    def report(self, neighbors: object, num_nodes: int, index: int, partition: object, k: int,
               phase: int, rng: np.random.Generator) -> np.ndarray:
        """User ``index``'s noisy degree vector towards ``partition`` (k groups)."""
        n = check_num_nodes(num_nodes)
        nb = check_neighbor_list(neighbors, n, index)
        part = check_partition(partition, n, k)
        mech = self._phase(phase)
        counts = np.bincount(part[nb], minlength=k)
        out = mech.randomize(counts, rng)
        mech.charge()
        return out.astype(np.float64)

    def simulate_lists(self, src: np.ndarray, dst: np.ndarray, num_nodes: int,
                       partition: object, k: int, phase: int, rng: np.random.Generator
                       ) -> np.ndarray:
        """All users' noisy degree vectors (n x k) for their directed true lists."""
        n = check_num_nodes(num_nodes)
        _directed_keys(src, dst, n)
        part = check_partition(partition, n, k)
        mech = self._phase(phase)
        out = mech.randomize(degree_vectors_lists(src, dst, n, part, k), rng)
        mech.charge()
        return out.astype(np.float64)

    def simulate(self, u: np.ndarray, v: np.ndarray, num_nodes: int, partition: object, k: int,
                 phase: int, rng: np.random.Generator) -> np.ndarray:
        """All users' noisy degree vectors (n x k) for the undirected graph (u, v)."""
        return self.simulate_lists(*both_directions(u, v), num_nodes, partition, k, phase, rng)

    def _repr_args(self) -> dict[str, object]:
        return {"epsilon": self.epsilon, "phase1_share": self.phase1_share}
