"""largest_component: The subgraph induced by the largest connected component (PyG transform)."""

from __future__ import annotations

from torch_geometric.data import Data
from torch_geometric.transforms import LargestConnectedComponents

__all__ = ["largest_component"]


def largest_component(data: Data) -> Data:
    """The subgraph induced by the largest connected component (PyG transform)."""
    return LargestConnectedComponents(num_components=1)(data)
