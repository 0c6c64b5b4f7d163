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
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl.errors import ConfigError
from dpgl.privacy import Guarantee, KRandomizedResponse, Randomizer, Unit
from dpgl.rng import SeedLike, make_rng

__all__ = ["CollectLabels", "LabelRR"]


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


class CollectLabels(BaseTransform):
    """PyG transform: returns a *new* ``Data`` whose ``y`` holds the users' RR reports (the
    input is never mutated). Each user's report is drawn once and kept (the transform and
    :meth:`user_report` share one store keyed by user index)."""

    def __init__(self, epsilon: float, num_classes: int, *, seed: SeedLike = None,
                 secure: bool = False) -> None:
        self.mechanism = LabelRR(epsilon, num_classes)
        self.rng = make_rng(seed, secure=secure)
        self._store = np.zeros(0, dtype=np.int64)
        self._has = np.zeros(0, dtype=bool)

    @property
    def guarantee(self) -> Guarantee:
        return self.mechanism.guarantee

    def _reserve(self, n: int) -> None:
        if self._store.size < n:
            store = np.zeros(n, dtype=np.int64)
            has = np.zeros(n, dtype=bool)
            store[: self._store.size] = self._store
            has[: self._has.size] = self._has
            self._store, self._has = store, has

    def _draw(self, users: np.ndarray, labels: np.ndarray) -> None:
        self._reserve(int(users.max()) + 1)
        self._store[users] = self.mechanism.randomize(torch.from_numpy(labels), self.rng).numpy()
        self._has[users] = True

    def user_report(self, user: int, label: int) -> int:
        """User ``user``'s report, drawn on first request and kept."""
        u = int(user)
        if u < 0:
            raise ConfigError(f"user index must be >= 0, got {user!r}")
        if u >= self._has.size or not self._has[u]:
            self._draw(np.array([u]), np.array([int(label)], dtype=np.int64))
        return int(self._store[u])

    def forward(self, data: Data) -> Data:
        if getattr(data, "y", None) is None:
            raise ConfigError("CollectLabels: the graph has no labels")
        y = data.y.detach().cpu().numpy().astype(np.int64).reshape(-1)
        n = y.size
        self._reserve(n)
        missing = np.flatnonzero(~self._has[:n])
        if missing.size:
            self._draw(missing, y[missing])
        data.y = torch.from_numpy(self._store[:n].copy())
        return data

    def __repr__(self) -> str:
        return f"CollectLabels(epsilon={self.mechanism.epsilon:g}, k={self.mechanism.num_classes})"
