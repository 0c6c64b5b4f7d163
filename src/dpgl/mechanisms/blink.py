"""Blink client side (Zhu, Tan & Xiao, "Blink: Link Local Differential Privacy in Graph Neural
Networks via Bayesian Estimation", CCS 2023; the server side, Algorithms 2-3, is in
:mod:`dpgl.estimators.blink`).

User i splits eps into eps_d = degree_share * eps and eps_a = (1 - degree_share) * eps and
sends

* her adjacency bits after Warner's RR with eps_a (all n - 1 bits), and
* her degree plus discrete Laplace noise with rate eps_d (degree sensitivity 1 under edge
  LDP; the exact integer sampler of :class:`dpgl.privacy.DiscreteLaplace`, so the released
  integer is safe from floating-point attacks; Blink uses continuous Laplace, whose law the
  discrete one matches on the integers),

which is eps-edge LDP by sequential composition. Both parts charge the active accountant
when they draw; the guarantee is their composition. (The paper calls the share delta; it is
``degree_share`` here so that it cannot be confused with the delta of (eps, delta)-DP.)
The whole-graph simulation is :class:`dpgl.mechanisms.rr.RR` with eps_a plus a noisy degree
vector: O(|E| + flips).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgl.mechanisms.neighbor_list import check_neighbor_list, check_num_nodes
from dpgl.mechanisms.rr import RR, DirectedReports, _directed_keys, both_directions
from dpgl.privacy import (
    DiscreteLaplace,
    Guarantee,
    Randomizer,
    Unit,
    check_epsilon,
    check_fraction,
    compose_parts,
)

__all__ = ["BlinkClient", "BlinkReport"]


@dataclass(frozen=True)
class BlinkReport:
    """One user's Blink report: RR'd neighbor list and noisy (integer) degree."""

    neighbors: np.ndarray
    noisy_degree: int


class BlinkClient(Randomizer):
    """Blink's randomizer with total budget ``epsilon`` and degree share in (0, 1)."""

    def __init__(self, epsilon: float, degree_share: float = 0.1) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.degree_share = check_fraction(degree_share, "degree_share", low_open=True,
                                           high_open=True)
        self.label = "neighbor lists: Blink"
        self.rr = RR(self.eps_a, label="RR (eps_a)")
        self.degree = DiscreteLaplace(self.eps_d, 1, Unit.EDGE_LDP,
                                      label="noisy degree (eps_d)")

    @property
    def eps_d(self) -> float:
        """Budget of the noisy degree: degree_share * eps."""
        return self.degree_share * self.epsilon

    @property
    def eps_a(self) -> float:
        """Budget of the RR'd adjacency list: (1 - degree_share) * eps."""
        return (1.0 - self.degree_share) * self.epsilon

    def parts(self) -> dict[str, Guarantee]:
        """The guarantees of the two parts as drawn: ``adjacency`` (RR) and ``degree``."""
        return {"adjacency": self.rr.guarantee, "degree": self.degree.guarantee}

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP = eps_a (RR) + eps_d (discrete Laplace degree), sequential
        composition (the degree sampler's rate is rounded down, so the total is <= eps)."""
        return compose_parts(self.parts(), Unit.EDGE_LDP)

    def report(self, neighbors: object, num_nodes: int, index: int,
               rng: np.random.Generator) -> BlinkReport:
        """What user ``index`` sends."""
        n = check_num_nodes(num_nodes)
        nb = check_neighbor_list(neighbors, n, index)
        adj = self.rr.report(nb, n, index, rng)
        degree = int(self.degree.randomize(np.array(nb.size), rng))
        self.degree.charge()
        return BlinkReport(adj, degree)

    def simulate_lists(self, src: np.ndarray, dst: np.ndarray, num_nodes: int,
                       rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray]:
        """All users' reports for their directed true lists: (RR reports, noisy degrees)."""
        n = check_num_nodes(num_nodes)
        _directed_keys(src, dst, n)
        reports = self.rr.simulate_lists(src, dst, n, rng)
        degree = np.bincount(np.asarray(src, dtype=np.int64), minlength=n)
        noisy = self.degree.randomize(degree, rng)
        self.degree.charge()
        return reports, noisy.astype(np.float64)

    def simulate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray]:
        """All users' reports for the undirected graph (u, v): (RR reports, noisy degrees)."""
        return self.simulate_lists(*both_directions(u, v), num_nodes, rng)

    def _repr_args(self) -> dict[str, object]:
        return {"epsilon": self.epsilon, "degree_share": self.degree_share}
