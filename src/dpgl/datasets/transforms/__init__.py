"""Dataset preprocessing transforms, one per module (PyG style: ``transform(data) -> Data``,
input never mutated).

PyG's :class:`~torch_geometric.transforms.BaseTransform` calls ``forward`` on a shallow copy
of the input; the ``forward`` methods here only rebind attributes (never write into the
input's tensors), so the caller's ``Data`` is left untouched.
"""

from torch_geometric.transforms import LargestConnectedComponents

from dpgl.datasets.transforms.largest_component import largest_component
from dpgl.datasets.transforms.normalize_features01 import NormalizeFeatures01
from dpgl.datasets.transforms.normalize_rows import NormalizeRows
from dpgl.datasets.transforms.one_hot_degree_clipped import OneHotDegreeClipped
from dpgl.datasets.transforms.top_k_classes import TopKClasses

__all__ = [
    "LargestConnectedComponents",
    "NormalizeFeatures01",
    "NormalizeRows",
    "OneHotDegreeClipped",
    "TopKClasses",
    "largest_component",
]
