"""DPRRTransform: DPRR users (Hidano & Murakami 2022, Alg. 1) and the as-is server."""

from __future__ import annotations

import numpy as np
import torch

from dpgl.errors import unknown_name
from dpgl.estimators.dprr import dprr_graph
from dpgl.graph.symmetrize import POLICIES
from dpgl.mechanisms.dprr import DPRR, draw_private_mask
from dpgl.privacy import Guarantee, check_fraction
from dpgl.rng import SeedLike
from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform

__all__ = ["DPRRTransform"]


class DPRRTransform(EdgeLDPTransform):
    """PyG transform: DPRR users + the as-is server.

    ``nonprivate_fraction`` of the users (drawn at random on each call) send their true lists
    and have no protection; the guarantee below is that of the private users.
    """

    def __init__(self, epsilon: float, *, n_max: int | None = None, alpha: float = 0.9,
                 allocation: str = "eq8", symmetrize: str = "directed",
                 nonprivate_fraction: float = 0.0, seed: SeedLike = None,
                 secure: bool = False) -> None:
        if symmetrize not in POLICIES:
            raise unknown_name("symmetrization policy", symmetrize, POLICIES)
        self.mechanism = DPRR(epsilon, n_max=n_max, alpha=alpha, allocation=allocation,
                              secure=secure)
        self.symmetrize = symmetrize
        self.nonprivate_fraction = check_fraction(nonprivate_fraction, "nonprivate_fraction",
                                                  high_open=True)
        super().__init__(seed, secure=secure)

    @property
    def guarantee(self) -> Guarantee:
        """eps-edge LDP for every private user (eps1 + eps2)."""
        return self.mechanism.guarantee

    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        mask = None
        if self.nonprivate_fraction > 0:
            mask = draw_private_mask(num_nodes, self.nonprivate_fraction, rng)
        reports, _noisy = self.mechanism.simulate(u, v, num_nodes, rng, private_mask=mask)
        eps1, eps2 = self.mechanism.budget(num_nodes)
        self.last_info = {"reports": len(reports), "eps1": eps1, "eps2": eps2}
        return dprr_graph(reports, self.symmetrize)
