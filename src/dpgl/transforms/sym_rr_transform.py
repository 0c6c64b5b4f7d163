"""SymRRTransform: RR on the lower triangle (:class:`dpgl.mechanisms.SymRR`, Imola et al. 2021),
used as the symmetric graph as is."""

from __future__ import annotations

import numpy as np
import torch

from dpgl.mechanisms.neighbor_list import edge_index_from_pairs
from dpgl.mechanisms.symrr import SymRR
from dpgl.rng import SeedLike
from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform

__all__ = ["SymRRTransform"]


class SymRRTransform(EdgeLDPTransform):
    """PyG transform: :class:`SymRR` reports, used as the (symmetric) graph as is."""

    def __init__(self, epsilon: float, seed: SeedLike = None, *, secure: bool = False) -> None:
        self.mechanism = SymRR(epsilon)
        super().__init__(seed, secure=secure)


    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        a, b = self.mechanism.simulate(u, v, num_nodes, rng)
        self.last_info = {"pairs": int(a.size)}
        return edge_index_from_pairs(a, b)
