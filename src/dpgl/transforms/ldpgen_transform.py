"""LDPGenTransform: LDPGen users (noisy degree vectors) and the server's synthetic graph
(Qin et al., CCS 2017)."""

from __future__ import annotations

import numpy as np
import torch

from dpgl.estimators.ldpgen import ldpgen_simulate
from dpgl.mechanisms.ldpgen import LDPGenClient
from dpgl.mechanisms.neighbor_list import edge_index_from_pairs
from dpgl.rng import SeedLike
from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform

__all__ = ["LDPGenTransform"]


class LDPGenTransform(EdgeLDPTransform):
    """PyG transform: LDPGen users + server; the output is the generated synthetic graph."""

    def __init__(self, epsilon: float, *, phase1_share: float = 0.5, k0: int = 2,
                 k1: int | None = None, max_k1: int = 64, seed: SeedLike = None,
                 secure: bool = False) -> None:
        self.mechanism = LDPGenClient(epsilon, phase1_share)
        self.k0, self.k1, self.max_k1 = k0, k1, max_k1
        super().__init__(seed, secure=secure)


    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        a, b, info = ldpgen_simulate(u, v, num_nodes, self.mechanism, rng, k0=self.k0, k1=self.k1,
                                     max_k1=self.max_k1)
        self.last_info = info
        return edge_index_from_pairs(a, b)
