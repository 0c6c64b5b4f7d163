"""Client-side label collection under label-LDP: k-ary randomized response on each user's
label (LPGNN, Sajadmanesh & Gatica-Perez CCS 2021, Sec. 4.3, Eq. 7).

User v keeps y_v with probability e^eps / (e^eps + k - 1) and otherwise reports one of the
k - 1 other classes uniformly: eps-label-LDP. The server knows the transition matrix
T[i, j] = P(y' = j | y = i), which LPGNN's forward correction uses. Reports are generated
once per user and reused (:class:`CollectLabels` caches them like the feature transform).
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl.errors import ConfigError
from dpgl.privacy import Guarantee, KRandomizedResponse, Unit
from dpgl.rng import SeedLike, make_rng

__all__ = ["CollectLabels", "LabelRR"]


class LabelRR:
    """k-ary RR on labels in {0, ..., k-1}; eps-label-LDP per user."""

    def __init__(self, epsilon: float, num_classes: int) -> None:
        self.rr = KRandomizedResponse(epsilon, num_classes, unit=Unit.LABEL_LDP)

    @property
    def epsilon(self) -> float:
        return self.rr.epsilon

    @property
    def num_classes(self) -> int:
        return self.rr.k

    @property
    def guarantee(self) -> Guarantee:
        return self.rr.guarantee

    def transition_matrix(self) -> torch.Tensor:
        """T[i, j] = P(reported j | true i) (LPGNN Sec. 4.3), float32 (k, k)."""
        k = self.num_classes
        t = torch.full((k, k), self.rr.other_probability, dtype=torch.float64)
        t.fill_diagonal_(self.rr.keep_probability)
        return t.float()

    def randomize(self, y: torch.Tensor, rng: np.random.Generator) -> torch.Tensor:
        """Every user's report, int64 tensor of ``y``'s shape."""
        return torch.from_numpy(self.rr.randomize(y.cpu().numpy(), rng).astype(np.int64))


class CollectLabels(BaseTransform):
    """PyG transform: returns a *new* ``Data`` whose ``y`` holds the users' RR reports
    (the input is never mutated). Reports are cached per label vector and per user."""

    def __init__(self, epsilon: float, num_classes: int, *, seed: SeedLike = None,
                 secure: bool = False) -> None:
        self.mechanism = LabelRR(epsilon, num_classes)
        self.rng = make_rng(seed, secure=secure)
        self._reports: dict[str, torch.Tensor] = {}
        self._user_reports: dict[int, int] = {}

    @property
    def guarantee(self) -> Guarantee:
        return self.mechanism.guarantee

    def user_report(self, user: int, label: int) -> int:
        """User ``user``'s report, drawn on first request and reused."""
        if user not in self._user_reports:
            out = self.mechanism.rr.randomize(np.array([int(label)]), self.rng)
            self._user_reports[user] = int(out[0])
        return self._user_reports[user]

    def forward(self, data: Data) -> Data:
        if getattr(data, "y", None) is None:
            raise ConfigError("CollectLabels: the graph has no labels")
        arr = np.ascontiguousarray(data.y.cpu().numpy())
        key = hashlib.blake2b(arr.tobytes() + repr(arr.shape).encode(),
                              digest_size=16).hexdigest()
        if key not in self._reports:
            self._reports[key] = self.mechanism.randomize(data.y, self.rng)
        data.y = self._reports[key]
        return data
