"""OneHotDegreeClipped: ``x`` replaced by the one-hot node degree, clipped at ``max_degree``."""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform
from torch_geometric.utils import degree

from dpgl.errors import ConfigError

__all__ = ["OneHotDegreeClipped"]


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
