"""RRTransform: every user applies Warner's RR (:class:`dpgl.mechanisms.RR`) to her neighbor
list; the server uses the reports as they are (either orientation) or symmetrizes them."""

from __future__ import annotations

import numpy as np
import torch

from dpgl.errors import unknown_name
from dpgl.estimators.dprr import dprr_graph
from dpgl.graph.symmetrize import POLICIES
from dpgl.mechanisms.rr import RR, check_direction
from dpgl.rng import SeedLike
from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform

__all__ = ["RRTransform"]


class RRTransform(EdgeLDPTransform):
    """PyG transform: every user applies :class:`RR`; the server uses the reports as they are
    (``symmetrize="directed"``) or symmetrizes them with ``"or"`` / ``"and"``
    (:mod:`dpgl.graph.symmetrize`). ``direction`` orients directed reports
    (:meth:`dpgl.mechanisms.rr.DirectedReports.edge_index`): ``"user"``, each user aggregates
    from the neighbors she reported; ``"reported"``, a node aggregates from the users who
    reported it (Blink's code)."""

    def __init__(self, epsilon: float, symmetrize: str = "directed", seed: SeedLike = None, *,
                 direction: str = "user", secure: bool = False) -> None:
        if symmetrize not in POLICIES:
            raise unknown_name("symmetrization policy", symmetrize, POLICIES)
        self.mechanism = RR(epsilon)
        self.symmetrize = symmetrize
        self.direction = check_direction(direction, symmetrize)
        super().__init__(seed, secure=secure)

    def _repr_args(self) -> dict[str, object]:
        return {**super()._repr_args(), "symmetrize": self.symmetrize,
                "direction": self.direction}

    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        reports = self.mechanism.simulate(u, v, num_nodes, rng)
        self.last_info = {"reports": len(reports)}
        return dprr_graph(reports, self.symmetrize, self.direction)  # reports as they are
