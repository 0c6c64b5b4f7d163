"""Preprocessing transforms (PyG style: ``transform(data) -> Data``, input never mutated).

PyG's :class:`~torch_geometric.transforms.BaseTransform` calls ``forward`` on a shallow copy
of the input; the ``forward`` methods here only rebind attributes (never write into the
input's tensors), so the caller's ``Data`` is left untouched.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform, LargestConnectedComponents
from torch_geometric.utils import degree

from dpgl.errors import ConfigError, DatasetError

__all__ = [
    "LargestConnectedComponents",
    "NormalizeFeatures01",
    "OneHotDegreeClipped",
    "TopKClasses",
    "largest_component",
]


class NormalizeFeatures01(BaseTransform):
    """Per-feature min-max scaling of ``x`` to ``[0, 1]``.

    LPGNN (Sajadmanesh & Gatica-Perez, CCS 2021, Sec. 5.1) assumes features in a known
    range ``[alpha, beta]`` before the multi-bit mechanism; the datasets are normalised to
    ``[0, 1]`` per feature. Constant features become 0.
    """

    def forward(self, data: Data) -> Data:
        if data.x is None:
            raise DatasetError("NormalizeFeatures01: the graph has no node features")
        x = data.x.to(torch.float32)
        lo = x.min(dim=0).values
        span = x.max(dim=0).values - lo
        scale = torch.where(span > 0, 1.0 / torch.where(span > 0, span, 1.0), 0.0)
        data.x = (x - lo) * scale
        return data


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


class OneHotDegreeClipped(BaseTransform):
    """Replace ``x`` by the one-hot node degree, degrees above ``max_degree`` clipped.

    Like PyG's :class:`~torch_geometric.transforms.OneHotDegree` (which fails on degrees
    above its maximum) but with the last column meaning "degree >= max_degree", so it
    applies to heavy-tailed graphs. Output width ``max_degree + 1``, float32. Used as the
    documented structural substitute when node features are unavailable.
    """

    def __init__(self, max_degree: int = 64) -> None:
        if isinstance(max_degree, bool) or not isinstance(max_degree, (int, np.integer)):
            raise ConfigError(f"max_degree must be an integer >= 1, got {max_degree!r}")
        if max_degree < 1:
            raise ConfigError(f"max_degree must be an integer >= 1, got {max_degree!r}")
        self.max_degree = int(max_degree)

    def forward(self, data: Data) -> Data:
        n = int(data.num_nodes)
        deg = degree(data.edge_index[0], n, dtype=torch.long).clamp(max=self.max_degree)
        x = torch.zeros(n, self.max_degree + 1, dtype=torch.float32)
        x[torch.arange(n), deg] = 1.0
        data.x = x
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.max_degree})"


def largest_component(data: Data) -> Data:
    """The subgraph induced by the largest connected component (PyG transform)."""
    return LargestConnectedComponents(num_components=1)(data)
