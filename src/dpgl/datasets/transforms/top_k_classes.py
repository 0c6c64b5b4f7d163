"""TopKClasses: Keep the nodes of the ``k`` most frequent classes and relabel them ``0..k-1``."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl.errors import ConfigError, DatasetError

__all__ = ["TopKClasses"]


class TopKClasses(BaseTransform):
    """Keep the nodes of the ``k`` most frequent classes and relabel them ``0..k-1``.

    New label 0 is the largest class (ties: smaller original label first). LPGNN keeps the
    10 largest of LastFM Asia's 18 classes (Sec. 5.1). The graph becomes the subgraph
    induced by the kept nodes (``Data.subgraph``; node-level attributes follow).
    """

    def __init__(self, k: int) -> None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"top_k_classes must be a positive integer, got {k!r}")
        self.k = int(k)

    def forward(self, data: Data) -> Data:
        if data.y is None or data.y.dim() != 1:
            raise DatasetError("TopKClasses needs one integer label per node in y")
        counts = np.bincount(data.y.numpy())
        present = int((counts > 0).sum())
        if self.k > present:
            raise ConfigError(f"top_k_classes={self.k} but the graph has {present} classes")
        order = np.argsort(-counts, kind="stable")[: self.k]
        relabel = np.full(counts.size, -1, dtype=np.int64)
        relabel[order] = np.arange(self.k)
        new_y = torch.from_numpy(relabel)[data.y]
        keep = new_y >= 0
        out = data.subgraph(keep)
        out.y = new_y[keep]
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.k})"
