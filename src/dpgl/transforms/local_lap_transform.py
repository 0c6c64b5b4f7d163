"""LocalLapTransform: Laplace noise on every bit and the server's top-T graph (L-DpGCN as run by
Blink, CCS 2023; LocalLap, the DPRR paper's baseline)."""

from __future__ import annotations

import numpy as np
import torch

from dpgl.errors import renamed_kwargs
from dpgl.estimators.toptt import simulate_top_t
from dpgl.mechanisms.lap import LocalLap
from dpgl.mechanisms.neighbor_list import edge_index_from_pairs
from dpgl.rng import SeedLike
from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform

__all__ = ["LocalLapTransform"]


class LocalLapTransform(EdgeLDPTransform):
    """PyG transform: Laplace bits (``variant="locallap"`` or ``"ldpgcn"``) + top-T server."""

    @renamed_kwargs(degree_fraction="degree_share")
    def __init__(self, epsilon: float, *, variant: str = "locallap",
                 degree_share: float = 0.1, seed: SeedLike = None,
                 secure: bool = False) -> None:
        self.mechanism = LocalLap(epsilon, variant=variant, degree_share=degree_share,
                                  secure=secure)
        super().__init__(seed, secure=secure)


    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        a, b, info = simulate_top_t(self.mechanism, u, v, num_nodes, rng)
        self.last_info = info
        return edge_index_from_pairs(a, b)
