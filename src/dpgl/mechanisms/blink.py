"""Blink client side (Zhu, Tan & Xiao, "Blink: Link Local Differential Privacy in Graph Neural
Networks via Bayesian Estimation", CCS 2023; the server side, Algorithms 2-3, is in
:mod:`dpgl.estimators.blink`).

User i splits eps into eps_d = degree_share * eps and eps_a = (1 - degree_share) * eps and
sends

* her adjacency bits after Warner's RR with eps_a (all n - 1 bits), and
* her degree plus Lap(1 / eps_d) (degree sensitivity 1 under edge LDP),

which is eps-edge LDP by sequential composition. (The paper calls the share delta; it is
``degree_share`` here so that it cannot be confused with the delta of (eps, delta)-DP.)
The whole-graph simulation is :class:`dpgl.mechanisms.rr.RR` with eps_a plus a Laplace
vector: O(|E| + flips).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgl.mechanisms._primitives import laplace_noise
from dpgl.mechanisms.neighbor_list import check_neighbor_list, check_num_nodes
from dpgl.mechanisms.rr import RR, DirectedReports
from dpgl.privacy import Guarantee, Unit, check_epsilon, check_fraction

__all__ = ["BlinkClient", "BlinkReport"]


@dataclass(frozen=True)
class BlinkReport:
    """One user's Blink report: RR'd neighbor list and noisy degree."""

    neighbors: np.ndarray
    noisy_degree: float


class BlinkClient:
    """Blink's randomizer with total budget ``epsilon`` and degree share in (0, 1)."""

    def __init__(self, epsilon: float, degree_share: float = 0.1) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.degree_share = check_fraction(degree_share, "degree_share", low_open=True,
                                           high_open=True)
        self.rr = RR(self.eps_a)

    @property
    def eps_d(self) -> float:
        """Budget of the Laplace degree: degree_share * eps."""
        return self.degree_share * self.epsilon

    @property
    def eps_a(self) -> float:
        """Budget of the RR'd adjacency list: (1 - degree_share) * eps."""
        return (1.0 - self.degree_share) * self.epsilon

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP = eps_a (RR) + eps_d (Laplace degree), sequential composition."""
        return Guarantee(self.epsilon, 0.0, Unit.EDGE_LDP)

    @property
    def parts(self) -> dict[str, Guarantee]:
        return {"adjacency": Guarantee(self.eps_a, 0.0, Unit.EDGE_LDP),
                "degree": Guarantee(self.eps_d, 0.0, Unit.EDGE_LDP)}

    def report(self, neighbors: object, num_nodes: int, index: int,
               rng: np.random.Generator) -> BlinkReport:
        """What user ``index`` sends."""
        n = check_num_nodes(num_nodes)
        nb = check_neighbor_list(neighbors, n, index)
        adj = self.rr.report(nb, n, index, rng)
        return BlinkReport(adj, float(nb.size + laplace_noise(self.eps_d, None, rng)))

    def simulate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[DirectedReports, np.ndarray]:
        """All users' reports for the undirected graph (u, v): (RR reports, noisy degrees)."""
        n = check_num_nodes(num_nodes)
        reports = self.rr.simulate(u, v, n, rng)
        degree = np.bincount(np.concatenate([u, v]), minlength=n).astype(np.float64)
        return reports, degree + laplace_noise(self.eps_d, n, rng)
