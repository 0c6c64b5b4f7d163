"""LDPGenTransform: LDPGen users (noisy degree vectors) and the server's synthetic graph
(Qin et al., CCS 2017). ``generator="blink-authors-bug"`` generates the graph as the Blink
authors' baseline code does, a directed graph reproducing a defect of that code
(:func:`dpgl.estimators.ldpgen.blink_authors_graph`)."""

from __future__ import annotations

import numpy as np
import torch

from dpgl.estimators.ldpgen import check_generator, ldpgen_simulate
from dpgl.mechanisms.ldpgen import LDPGenClient
from dpgl.mechanisms.neighbor_list import edge_index_from_directed, edge_index_from_pairs
from dpgl.rng import SeedLike
from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform

__all__ = ["LDPGenTransform"]


class LDPGenTransform(EdgeLDPTransform):
    """PyG transform: LDPGen users + server; the output is the generated synthetic graph."""

    def __init__(self, epsilon: float, *, phase1_share: float = 0.5, k0: int = 2,
                 k1: int | None = None, max_k1: int = 64, generator: str = "chung-lu",
                 seed: SeedLike = None, secure: bool = False) -> None:
        self.mechanism = LDPGenClient(epsilon, phase1_share)
        self.k0, self.k1, self.max_k1 = k0, k1, max_k1
        self.generator = check_generator(generator)
        super().__init__(seed, secure=secure)


    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        a, b, info = ldpgen_simulate(u, v, num_nodes, self.mechanism, rng, k0=self.k0, k1=self.k1,
                                     max_k1=self.max_k1, generator=self.generator)
        self.last_info = info
        if self.generator == "chung-lu":
            return edge_index_from_pairs(a, b)
        return edge_index_from_directed(a, b)  # a -> b: b aggregates from a

    def _repr_args(self) -> dict[str, object]:
        args = dict(self.mechanism._repr_args())
        if self.generator != "chung-lu":
            args["generator"] = self.generator
        return args
