"""BlinkTransform: Blink users (RR + Laplace degree) and the Blink server's posterior graph
(Zhu, Tan, Xiao, CCS 2023, Sec. 4-5)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from dpgl.errors import unknown_name
from dpgl.estimators.blink import VARIANTS, BlinkServer
from dpgl.graph.pairs import undirected_counts
from dpgl.mechanisms.blink import BlinkClient
from dpgl.rng import SeedLike
from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform

__all__ = ["BlinkTransform"]


class BlinkTransform(EdgeLDPTransform):
    """PyG transform: Blink users (:class:`dpgl.mechanisms.blink.BlinkClient`) and server.

    ``variant`` is ``"hard"`` (unweighted), ``"hybrid"`` or ``"soft"`` (weighted);
    ``soft_options`` go to :meth:`BlinkServer.soft` (with ``dense_max_n``, a Soft estimate
    beyond its pair limit is the dense matrix of every posterior: ``dense_adjacency``).
    """

    def __init__(self, epsilon: float, degree_share: float = 0.1, variant: str = "hybrid",
                 seed: SeedLike = None, *, secure: bool = False,
                 soft_options: dict[str, Any] | None = None) -> None:
        if variant not in VARIANTS:
            raise unknown_name("Blink variant", variant, VARIANTS)
        self.mechanism = BlinkClient(epsilon, degree_share)
        self.variant = variant
        self.soft_options = dict(soft_options or {})
        super().__init__(seed, secure=secure)


    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        reports, noisy = self.mechanism.simulate(u, v, num_nodes, rng)
        num_reports = len(reports)
        keys, counts = undirected_counts(reports.user, reports.neighbor, num_nodes)
        del reports  # before the server builds its posteriors: it keeps each pair once
        server = BlinkServer(self.mechanism.eps_a).fit_pairs(keys, counts, noisy, num_nodes)
        if self.variant == "hard":
            est = server.hard()
        elif self.variant == "hybrid":
            est = server.hybrid()
        else:
            est = server.soft(**self.soft_options)
        self.last_info = dict(est.info, reports=num_reports)
        if est.dense is not None:
            return None, est.dense  # type: ignore[return-value]  # EdgeLDPTransform.estimate
        return est.edge_index()

