"""PublicPriorTransform: Blink's users unchanged and the server of dpgl's own method
``blink-pp`` (Blink's posterior with a prior from public features and training labels;
docs/own-method.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from dpgl.errors import unknown_name
from dpgl.rng import SeedLike
from dpgl.transforms.blink_transform import BlinkTransform

if TYPE_CHECKING:
    from dpgl.estimators.public_prior import PairCovariates
    from dpgl.mechanisms.rr import DirectedReports

__all__ = ["PublicPriorTransform"]


class PublicPriorTransform(BlinkTransform):
    """PyG transform: Blink users exactly as :class:`BlinkTransform` (same reports for the
    same seed), and the ``blink-pp`` server (:class:`dpgl.estimators.public_prior.
    PublicPriorServer`) whose prior uses the public ``covariates``; ``variant`` is ``"hard"``
    ``"hybrid"`` or ``"soft"`` (posteriors >= ``floor`` as weights)."""

    def __init__(self, epsilon: float, degree_share: float = 0.1, variant: str = "hybrid",
                 seed: SeedLike = None, *, covariates: PairCovariates, floor: float = 1e-2,
                 secure: bool = False) -> None:
        if variant not in ("hard", "hybrid", "soft"):
            raise unknown_name("blink-pp graph", variant, ("hard", "hybrid", "soft"))
        super().__init__(epsilon, degree_share, variant, seed, secure=secure)
        self.covariates = covariates
        self.floor = floor

    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        reports, noisy = self.mechanism.simulate(u, v, num_nodes, rng)
        return self.serve(reports, noisy)

    def serve(self, reports: DirectedReports, noisy_degrees: np.ndarray
              ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The server's side alone, on the users' reports: (edge_index, edge_weight)."""
        from dpgl.estimators.public_prior import PublicPriorServer
        server = PublicPriorServer(self.mechanism.eps_a).fit(
            reports, noisy_degrees, self.covariates,
            degree_noise_var=self.mechanism.degree.variance)
        est = (server.hard() if self.variant == "hard" else server.hybrid()
               if self.variant == "hybrid" else server.soft(floor=self.floor))
        self.last_info = dict(est.info, reports=len(reports))
        return est.edge_index()
