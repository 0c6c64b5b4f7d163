"""CollectLabels: every user randomizes her label with k-ary RR
(:class:`dpgl.mechanisms.labels.LabelRR`)."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl.errors import ConfigError
from dpgl.mechanisms.labels import LabelRR
from dpgl.privacy import Guarantee
from dpgl.rng import SeedLike, make_rng

__all__ = ["CollectLabels"]


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
