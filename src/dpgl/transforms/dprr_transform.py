"""DPRRTransform: DPRR users (Hidano & Murakami 2022, Alg. 1) and the as-is server."""

from __future__ import annotations

import numpy as np
import torch

from dpgl.errors import renamed_kwargs, unknown_name
from dpgl.estimators.dprr import dprr_graph
from dpgl.graph.symmetrize import POLICIES
from dpgl.mechanisms.dprr import DPRR, draw_private_mask
from dpgl.mechanisms.rr import check_direction
from dpgl.privacy import check_fraction
from dpgl.rng import SeedLike
from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform

__all__ = ["DPRRTransform"]


class DPRRTransform(EdgeLDPTransform):
    """PyG transform: DPRR users + the as-is server.

    ``degree_share`` is the share of epsilon for the noisy degree (1 - alpha of the paper's
    Eq. 8). ``non_private_fraction`` of the users (drawn at random on each call) send their
    true lists and have no protection; its guarantee is that of the private users.
    ``direction`` orients directed reports (:func:`dpgl.estimators.dprr.dprr_graph`):
    ``"user"`` (each user aggregates from her sampled list) or ``"reported"`` (Blink's code).
    """

    @renamed_kwargs(alpha=("degree_share", lambda a: 1.0 - a),
                    nonprivate_fraction="non_private_fraction")
    def __init__(self, epsilon: float, *, n_max: int | None = None, degree_share: float = 0.1,
                 allocation: str = "eq8", symmetrize: str = "directed",
                 non_private_fraction: float = 0.0, seed: SeedLike = None,
                 direction: str = "user", secure: bool = False) -> None:
        if symmetrize not in POLICIES:
            raise unknown_name("symmetrization policy", symmetrize, POLICIES)
        self.direction = check_direction(direction, symmetrize)
        share = check_fraction(degree_share, "degree_share", low_open=True, high_open=True)
        self.mechanism = DPRR(epsilon, n_max=n_max, alpha=1.0 - share, allocation=allocation,
                              secure=secure)
        self.degree_share = share
        self.symmetrize = symmetrize
        self.non_private_fraction = check_fraction(non_private_fraction,
                                                   "non_private_fraction", high_open=True)
        super().__init__(seed, secure=secure)

    def _repr_args(self) -> dict[str, object]:
        args = dict(self.mechanism._repr_args())
        args.pop("alpha")
        return {**args, "degree_share": self.degree_share, "symmetrize": self.symmetrize,
                "direction": self.direction, "non_private_fraction": self.non_private_fraction}

    def estimate(self, u: np.ndarray, v: np.ndarray, num_nodes: int,
                 rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor | None]:
        mask = None
        if self.non_private_fraction > 0:
            mask = draw_private_mask(num_nodes, self.non_private_fraction, rng)
        reports, _noisy = self.mechanism.simulate(u, v, num_nodes, rng, private_mask=mask)
        eps1, eps2 = self.mechanism.budget(num_nodes)
        self.last_info = {"reports": len(reports), "eps1": eps1, "eps2": eps2}
        return dprr_graph(reports, self.symmetrize, self.direction)
