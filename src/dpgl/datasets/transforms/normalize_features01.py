"""NormalizeFeatures01: Per-feature min-max scaling of ``x`` to ``[0, 1]``."""

from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl.errors import DatasetError

__all__ = ["NormalizeFeatures01"]


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
