"""CollectFeatures: every user randomizes her feature vector (LPGNN's multi-bit encoder, 1-bit,
Gaussian or Laplace; :class:`dpgl.mechanisms.features.FeatureRandomizer`)."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl.errors import ConfigError, unknown_name
from dpgl.mechanisms.features import FEATURE_MECHANISMS, FeatureRandomizer, FeatureRange
from dpgl.privacy import Guarantee, check_epsilon
from dpgl.rng import SeedLike, make_rng

__all__ = ["CollectFeatures"]


class CollectFeatures(BaseTransform):
    """PyG transform: every user sends one feature report; returns a *new* ``Data`` whose
    ``x`` is the server's rectified estimate (float32). The input is never mutated.

    Each user's report is drawn once and kept (:meth:`user_report` and the transform share one
    store keyed by user index), so a user never sends two independent reports. ``seed`` is an
    int, a generator, or None with ``secure=True`` (deployment: OS entropy, and the Laplace
    mechanism draws with Mironov's snapping mechanism; docs/secure-mode.md). ``clipped``
    counts the values users clipped into the range (an evaluation-only diagnostic computed
    from raw data).
    """

    def __init__(self, epsilon: float, mechanism: str = "multibit", *,
                 feature_range: FeatureRange | None = None, m: int | str = "best",
                 delta: float = 1e-4, seed: SeedLike = None, secure: bool = False) -> None:
        if mechanism not in FEATURE_MECHANISMS:
            raise unknown_name("feature mechanism", mechanism, FEATURE_MECHANISMS)
        self.epsilon = check_epsilon(epsilon)
        self.mechanism = mechanism
        self.feature_range = feature_range or FeatureRange(0.0, 1.0, "default [0, 1]")
        self.m, self.delta = m, delta
        self.secure = bool(secure)
        self.rng = make_rng(seed, secure=secure)
        self._store = np.zeros((0, 0), dtype=np.float32)   # row u: user u's report
        self._has = np.zeros(0, dtype=bool)
        self.clipped = 0
        self.randomizer: FeatureRandomizer | None = None

    def randomizer_for(self, d: int) -> FeatureRandomizer:
        if self.randomizer is None:
            self.randomizer = FeatureRandomizer(self.epsilon, d, self.mechanism,
                                                feature_range=self.feature_range, m=self.m,
                                                delta=self.delta,
                                                secure=self.secure and self.mechanism
                                                == "laplace")
        elif self.randomizer.d != d:
            raise ConfigError(f"this collector holds reports of dimension {self.randomizer.d}; "
                              f"got features of dimension {d}")
        return self.randomizer

    def guarantee(self, d: int) -> Guarantee:
        """The per-user feature-LDP guarantee for dimension ``d``."""
        return self.randomizer_for(d).guarantee

    def _reserve(self, n: int, d: int) -> None:
        if self._store.shape[0] < n or self._store.shape[1] != d:
            store = np.zeros((n, d), dtype=np.float32)
            has = np.zeros(n, dtype=bool)
            k = min(self._has.size, n)
            if self._store.shape[1] == d:
                store[:k] = self._store[:k]
                has[:k] = self._has[:k]
            self._store, self._has = store, has

    def _draw(self, users: np.ndarray, rows: np.ndarray) -> None:
        d = int(rows.shape[1])
        rand = self.randomizer_for(d)
        self._reserve(int(users.max()) + 1, d)
        est, clipped = rand.privatize(rows, self.rng)
        self.clipped += clipped
        self._store[users] = est
        self._has[users] = True

    def user_report(self, user: int, x: object) -> np.ndarray:
        """What user ``user`` sends (rectified), drawn on first request and kept."""
        u = int(user)
        if u < 0:
            raise ConfigError(f"user index must be >= 0, got {user!r}")
        if u >= self._has.size or not self._has[u]:
            xv = np.asarray(x, dtype=np.float64)
            if xv.ndim != 1:
                raise ConfigError(f"a user's feature vector must be 1-d, got shape {xv.shape}")
            self._draw(np.array([u]), xv[None, :])
        return self._store[u].astype(np.float64)

    def forward(self, data: Data) -> Data:
        if getattr(data, "x", None) is None:
            raise ConfigError("CollectFeatures: the graph has no node features")
        x = data.x.detach().cpu().numpy()
        n, d = int(x.shape[0]), int(x.shape[1])
        self.randomizer_for(d)
        self._reserve(n, d)
        missing = np.flatnonzero(~self._has[:n])
        if missing.size:
            self._draw(missing, x[missing])
        data.x = torch.from_numpy(self._store[:n].copy())
        return data

    def __repr__(self) -> str:
        return (f"CollectFeatures(epsilon={self.epsilon:g}, mechanism={self.mechanism!r}, "
                f"range={self.feature_range})")
