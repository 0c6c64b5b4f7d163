"""Client-side label collection under label-LDP: k-ary randomized response on each user's
label (LPGNN, Sajadmanesh & Gatica-Perez CCS 2021, Sec. 4.3, Eq. 7).

User v keeps y_v with probability e^eps / (e^eps + k - 1) and otherwise reports one of the
k - 1 other classes uniformly: eps-label-LDP. The server knows the transition matrix
T[i, j] = P(y' = j | y = i), which LPGNN's forward correction uses. Each user reports once
(:class:`CollectLabels` keeps the reports, like the feature transform).
"""

from __future__ import annotations

import numpy as np
import torch

from dpgl.privacy import Guarantee, KRandomizedResponse, Randomizer, Unit

__all__ = ["LabelRR"]


class LabelRR(Randomizer):
    """k-ary RR on labels in {0, ..., k-1}; eps-label-LDP per user. Charges the active
    accountant each time it randomizes (one report from every user of the call)."""

    def __init__(self, epsilon: float, num_classes: int) -> None:
        self.rr = KRandomizedResponse(epsilon, num_classes, unit=Unit.LABEL_LDP,
                                      label="labels")
        self.label = "labels"

    @property
    def epsilon(self) -> float:
        return self.rr.epsilon

    @property
    def num_classes(self) -> int:
        return self.rr.k

    @property
    def guarantee(self) -> Guarantee:
        return self.rr.guarantee

    @property
    def keep_probability(self) -> float:
        """P[report = true label] = e^eps / (e^eps + k - 1): public (eps and k only)."""
        return self.rr.keep_probability

    def transition_matrix(self) -> torch.Tensor:
        """T[i, j] = P(reported j | true i) (LPGNN Sec. 4.3), float32 (k, k)."""
        k = self.num_classes
        t = torch.full((k, k), self.rr.other_probability, dtype=torch.float64)
        t.fill_diagonal_(self.rr.keep_probability)
        return t.float()

    def randomize(self, y: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
        """Every user's report, int64 tensor of ``y``'s shape."""
        out = torch.from_numpy(self.rr.randomize(y.cpu().numpy(), rng).astype(np.int64))
        self.rr.charge(name="labels")
        return out

    def _repr_args(self) -> dict[str, object]:
        return {"epsilon": self.epsilon, "num_classes": self.num_classes}
