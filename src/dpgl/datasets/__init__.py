"""Datasets: loaders for the real benchmark graphs, download/cache with integrity checks,
synthetic generators and preprocessing transforms. See ``docs/datasets.md``.

>>> from dpgl.datasets import load_dataset
>>> data = load_dataset("cora")  # reads $DPGL_DATA_DIR/planetoid/raw/ind.cora.*
"""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.datasets.api import (
        FEATURE_MODES,
        canonical_name,
        dataset_info,
        dataset_kind,
        list_datasets,
        load_dataset,
    )
    from dpgl.datasets.base import DatasetInfo, GraphDataset, undirected_edge_index
    from dpgl.datasets.download import (
        DatasetWarning,
        FileSpec,
        Source,
        resolve_data_dir,
        sha256_file,
        trust_file,
    )
    from dpgl.datasets.synthetic import barabasi_albert, csbm
    from dpgl.datasets.transforms import (
        NormalizeFeatures01,
        NormalizeRows,
        OneHotDegreeClipped,
        TopKClasses,
        largest_component,
    )

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "FEATURE_MODES",
    "DatasetInfo",
    "DatasetWarning",
    "FileSpec",
    "GraphDataset",
    "NormalizeFeatures01",
    "NormalizeRows",
    "OneHotDegreeClipped",
    "Source",
    "TopKClasses",
    "barabasi_albert",
    "canonical_name",
    "csbm",
    "dataset_info",
    "dataset_kind",
    "largest_component",
    "list_datasets",
    "load_dataset",
    "resolve_data_dir",
    "sha256_file",
    "trust_file",
    "undirected_edge_index",
]
