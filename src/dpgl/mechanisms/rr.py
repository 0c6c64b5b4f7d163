"""Warner's randomized response on every bit of a neighbor list (edge LDP).

User i holds the n - 1 bits A[i, j], j != i, and flips each independently with probability
1 / (1 + e^eps): eps-edge LDP (Warner 1965; Qin et al. CCS 2017 Sec. 3; Blink Sec. 3.1;
DPRR Sec. III-B). Neighbouring neighbor lists differ in one bit, and the likelihood ratio
of one RR bit is at most e^eps. :class:`RR` charges the active accountant with the guarantee
of the flip probability it drew with, each time it draws (:class:`dpgl.privacy.Randomizer`).

Whole-graph simulation without an n x n matrix: the flips form an iid Bernoulli process over
the n (n - 1) ordered pairs, drawn with geometric gaps (:func:`dpgl.graph.pairs.
bernoulli_positions`); the report is the symmetric difference of the flip set and the true
(directed) edge set. Cost O(|E| + flips), with E[flips] = n (n - 1) / (1 + e^eps). The
simulation takes every user's own list (:meth:`RR.simulate_lists`, directed entries
``(user, neighbor)``); an undirected graph is the special case of symmetric lists.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dpgl.errors import ConfigError, GraphError, unknown_name
from dpgl.graph.pairs import (
    bernoulli_positions,
    index_to_ordered_pair,
    num_ordered_pairs,
    ordered_pair_to_index,
)
from dpgl.mechanisms.neighbor_list import (
    check_neighbor_list,
    check_num_nodes,
    edge_index_from_directed,
)
from dpgl.privacy import Guarantee, RandomizedResponse, Randomizer, Unit

__all__ = ["DIRECTIONS", "RR", "DirectedReports", "both_directions", "check_direction",
           "flip_bits", "xor_sorted"]


#: which end of a directed report receives the messages (:meth:`DirectedReports.edge_index`)
DIRECTIONS = ("user", "reported")


def check_direction(direction: str, symmetrize: str = "directed") -> str:
    """``direction`` if it is one of :data:`DIRECTIONS` and applies: ``"reported"`` only
    orients directed reports (a symmetrized graph has no direction)."""
    if direction not in DIRECTIONS:
        raise unknown_name("report direction", direction, DIRECTIONS)
    if direction != "user" and symmetrize != "directed":
        raise ConfigError(f"direction={direction!r} orients directed reports; with "
                          f"symmetrize={symmetrize!r} the graph is undirected")
    return direction


@dataclass(frozen=True)
class DirectedReports:
    """What the server receives from all users: user ``user[k]`` reported ``neighbor[k]``.

    Sorted by (user, neighbor). In PyG's source -> target convention the report is the edge
    neighbor -> user (the user aggregates from the neighbors she reported).
    """

    user: np.ndarray
    neighbor: np.ndarray
    num_nodes: int

    def __len__(self) -> int:
        return int(self.user.size)

    def edge_index(self, direction: str = "user") -> torch.Tensor:
        """[2, E] int64 in PyG's source -> target convention. ``direction="user"`` (dpgl's
        default): row 0 = reported neighbor (source), row 1 = reporting user (target), sorted
        by (target, source): each user aggregates from the neighbors she reported.
        ``"reported"``: the transpose, row 0 = reporting user, row 1 = reported neighbor,
        sorted by (source, target): a node aggregates from the users who reported it, as in
        Blink's code (``edge_index = nonzero(R)`` with R[i, j] user i's report on j; Zhu, Tan
        & Xiao, CCS 2023, github.com/zhxchd/Blink_GNN ``src/rr/server.py``,
        ``src/dprr/server.py``)."""
        check_direction(direction)
        if direction == "reported":
            ei, _ = edge_index_from_directed(self.user, self.neighbor, presorted=True)
        else:
            ei, _ = edge_index_from_directed(self.neighbor, self.user, presorted=True)
        return ei

    def keys(self) -> np.ndarray:
        """Ordered-pair linear indices (user, neighbor), sorted."""
        return ordered_pair_to_index(self.user, self.neighbor, self.num_nodes)


def xor_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Symmetric difference of two sorted, duplicate-free int64 arrays (sorted result).

    O(|a| + |b| log |a|): membership of the (usually smaller) ``b`` in ``a`` by binary search;
    every new entry of ``b`` goes to its final slot (its insertion point in ``a``, minus the
    removed entries of ``a`` before it, plus the new entries before it) and the kept entries
    of ``a`` fill the other slots in order: no sort.
    """
    if a.size == 0:
        return b.copy()
    if b.size == 0:
        return a.copy()
    idx = np.searchsorted(a, b)
    hit = np.zeros(b.size, dtype=bool)
    inside = idx < a.size
    hit[inside] = a[idx[inside]] == b[inside]
    removed = idx[hit]                      # sorted positions in a
    new, ins = b[~hit], idx[~hit]
    out = np.empty(a.size - removed.size + new.size, dtype=np.result_type(a, b))
    pos = ins - np.searchsorted(removed, ins) + np.arange(new.size)
    out[pos] = new
    rest = np.ones(out.size, dtype=bool)
    rest[pos] = False
    out[rest] = np.delete(a, removed) if removed.size else a
    return out


def flip_bits(true_positions: np.ndarray, length: int, flip_probability: float,
              rng: np.random.Generator) -> np.ndarray:
    """RR on a bit vector of ``length`` bits given by its sorted 1-positions.

    Returns the sorted 1-positions of the randomized vector: the flip set (an iid
    Bernoulli(flip_probability) process) XOR the true set.
    """
    flips = bernoulli_positions(length, flip_probability, rng)
    return xor_sorted(flips, np.asarray(true_positions, dtype=np.int64))


def _directed_keys(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Sorted ordered-pair keys of directed true entries (user src[k] has neighbor dst[k]);
    refuses self-loops and duplicates (one user's list holds each neighbor once)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if src.shape != dst.shape or src.ndim != 1:
        raise GraphError("directed lists need two 1-d arrays (users, neighbors) of one length")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise GraphError(f"node ids must lie in [0, {n - 1}]")
    if np.any(src == dst):
        raise GraphError("a neighbor list contains the user itself (self-loop)")
    keys = np.sort(ordered_pair_to_index(src, dst, n))
    if keys.size and np.any(keys[1:] == keys[:-1]):
        raise GraphError("a neighbor list has duplicate ids")
    return keys


def both_directions(u: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The directed lists (user, neighbor) of an undirected graph with pairs (u, v)."""
    return (np.concatenate([u, v]).astype(np.int64), np.concatenate([v, u]).astype(np.int64))


class RR(Randomizer):
    """Warner's RR on all n - 1 bits of a neighbor list; eps-edge LDP.

    ``keep_probability`` p = e^eps / (1 + e^eps); the bit-level mechanism is
    :attr:`bit` (:class:`dpgl.privacy.RandomizedResponse`), whose flip probability every draw
    uses and whose guarantee every draw charges.
    """

    def __init__(self, epsilon: float, *, label: str = "Warner RR") -> None:
        self.bit = RandomizedResponse(epsilon, Unit.EDGE_LDP, label=label)
        self.label = label

    @property
    def epsilon(self) -> float:
        return self.bit.epsilon

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP: each bit is one Warner RR with likelihood ratio <= e^eps."""
        return self.bit.guarantee

    @property
    def keep_probability(self) -> float:
        return self.bit.keep_probability

    @property
    def flip_probability(self) -> float:
        return self.bit.flip_probability

    def report(self, neighbors: object, num_nodes: int, index: int,
               rng: np.random.Generator) -> np.ndarray:
        """What user ``index`` sends: the sorted ids j != index whose randomized bit is 1."""
        n = check_num_nodes(num_nodes)
        nb = check_neighbor_list(neighbors, n, index)
        # Bit position b <-> node j = b + [b >= index] (the user's own bit is not reported).
        pos = nb - (nb > index)
        out = flip_bits(pos, n - 1, self.bit.flip_probability, rng)
        self.charge()
        return out + (out >= index)

    def simulate_lists(self, src: np.ndarray, dst: np.ndarray, num_nodes: int,
                       rng: np.random.Generator) -> DirectedReports:
        """All users' reports for the directed true lists (user ``src[k]`` has neighbor
        ``dst[k]``). Same distribution as calling :meth:`report` for every user;
        O(|E| + flips)."""
        n = check_num_nodes(num_nodes)
        true_keys = _directed_keys(src, dst, n)
        keys = flip_bits(true_keys, num_ordered_pairs(n), self.bit.flip_probability, rng)
        self.charge()
        user, neighbor = index_to_ordered_pair(keys, n)
        return DirectedReports(user, neighbor, n)

    def simulate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> DirectedReports:
        """All users' reports for the undirected graph with pairs (u, v), u < v."""
        return self.simulate_lists(*both_directions(u, v), num_nodes, rng)

    def expected_reports(self, num_nodes: int, num_edges: int) -> float:
        """E[number of reported pairs] for a graph with ``num_edges`` undirected edges."""
        ones = 2.0 * num_edges
        zeros = float(num_nodes) * (num_nodes - 1) - ones
        return ones * self.keep_probability + zeros * self.flip_probability

    def _repr_args(self) -> dict[str, object]:
        return {"epsilon": self.epsilon}
