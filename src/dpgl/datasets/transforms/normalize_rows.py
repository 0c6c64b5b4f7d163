"""NormalizeRows: divide every node's feature vector by its sum (PyG ``NormalizeFeatures``)."""

from __future__ import annotations

import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from dpgl.errors import DatasetError

__all__ = ["NormalizeRows"]


class NormalizeRows(BaseTransform):
    """Divide every node's non-negative feature vector by its sum, so that it sums to 1.

    PyG's :class:`~torch_geometric.transforms.NormalizeFeatures`, which the Blink authors
    apply to every dataset (Zhu, Tan & Xiao, CCS 2023; github.com/zhxchd/Blink_GNN
    ``src/data/cora.py``): ``x / clamp(x.sum(-1), min=1)``, so an all-zero row stays zero
    (and a row summing to less than 1 is left as it is, as PyG does). PyG first subtracts the
    global minimum of ``x``; that reads every node's features, so here negative features are
    refused instead (for non-negative features with a zero, the two agree). Each node's row
    depends on its own features only.
    """

    def forward(self, data: Data) -> Data:
        if data.x is None:
            raise DatasetError("NormalizeRows: the graph has no node features")
        x = data.x.to(torch.float32)
        if x.numel() and bool((x < 0).any()):
            raise DatasetError("NormalizeRows: features must be non-negative (a row is divided "
                               "by its sum)")
        data.x = x / x.sum(dim=-1, keepdim=True).clamp(min=1.0)
        return data

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}()"
