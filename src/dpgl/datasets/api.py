"""Public entry points: :func:`load_dataset`, :func:`dataset_info`, :func:`list_datasets`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from dpgl.datasets.base import DatasetInfo, GraphDataset, Kind
from dpgl.datasets.check import looks_corrupt
from dpgl.datasets.download import DEFAULT_TIMEOUT, ensure_files, resolve_data_dir
from dpgl.datasets.registry import ALIASES, DATASETS, DatasetSpec
from dpgl.errors import ConfigError, unknown_name

if TYPE_CHECKING:
    from torch_geometric.data import Data

FEATURE_MODES = ("raw", "one-hot-degree")
DEFAULT_MAX_DEGREE = 64
_NODE_OPTIONS = ("normalize_features", "normalize_rows", "top_k_classes", "largest_component")
_KINDS = ("node", "graph")


def canonical_name(name: str) -> str:
    """The registered name for ``name`` (case-insensitive, ``_`` = ``-``, aliases resolved)."""
    if not isinstance(name, str):
        raise unknown_name("dataset", repr(name), list_datasets())
    key = name.strip().lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in DATASETS:
        raise unknown_name("dataset", name, list_datasets())
    return key


def get_spec(name: str) -> DatasetSpec:
    return DATASETS[canonical_name(name)]


def list_datasets(kind: str | None = None) -> list[str]:
    """Registered dataset names (aliases excluded), optionally only ``"node"``/``"graph"``."""
    if kind is not None and kind not in _KINDS:
        raise ConfigError(f"unknown dataset kind {kind!r}; choose one of: node, graph")
    return sorted(n for n, s in DATASETS.items() if kind is None or s.kind == kind)


def dataset_kind(name: str) -> Kind:
    """``"node"`` (node classification) or ``"graph"`` (graph classification)."""
    return get_spec(name).kind


def dataset_info(name: str, data_dir: str | os.PathLike[str] | None = None) -> DatasetInfo:
    """Statistics and local availability of a dataset; never raises for missing files."""
    spec = get_spec(name)
    root = resolve_data_dir(data_dir)
    missing_structure = [f.path for f in spec.files if not f.local(root).is_file()]
    missing = list(missing_structure)
    if spec.feature_file is not None and not spec.feature_file.local(root).is_file():
        missing.append(spec.feature_file.path)
    files = [*spec.files, *([spec.feature_file] if spec.feature_file is not None else [])]
    corrupt = {f.path: why for f in files if f.path not in missing
               and (why := looks_corrupt(f.local(root))) is not None}
    structure_corrupt = any(f.path in corrupt for f in spec.files)
    parts = [spec.source]
    if spec.note:
        parts.append(spec.note)
    return DatasetInfo(
        name=spec.name,
        kind=spec.kind,
        available=not missing and not corrupt,
        nodes=spec.stats.nodes,
        edges=spec.stats.edges,
        features=spec.stats.features,
        classes=spec.stats.classes,
        graphs=spec.stats.graphs,
        missing=missing,
        note="; ".join(parts),
        structure_available=not missing_structure and not structure_corrupt,
        aliases=tuple(a for a, target in ALIASES.items() if target == spec.name),
        corrupt=corrupt,
    )


def _check_options(spec: DatasetSpec, features: str, options: dict[str, Any]) -> None:
    if features not in FEATURE_MODES:
        raise ConfigError(
            f"unknown features mode {features!r}; choose one of: {', '.join(FEATURE_MODES)}"
        )
    allowed = set(spec.generator_options)
    if spec.kind == "node":
        allowed |= set(_NODE_OPTIONS)
    else:
        active = sorted(k for k in _NODE_OPTIONS if options.get(k) not in (None, False))
        if active:
            raise ConfigError(
                f"option(s) {', '.join(active)} apply only to node datasets; "
                f"{spec.name!r} is a graph dataset"
            )
        for k in _NODE_OPTIONS:  # neutral values (False / None) are accepted and ignored
            options.pop(k, None)
    if features == "one-hot-degree":
        allowed.add("max_degree")
    unknown = sorted(set(options) - allowed)
    if unknown:
        hint = (
            " (max_degree applies only with features='one-hot-degree')"
            if "max_degree" in unknown
            else ""
        )
        raise ConfigError(
            f"unknown option(s) {', '.join(unknown)} for dataset {spec.name!r}; allowed: "
            f"{', '.join(sorted(allowed)) or '(none)'}{hint}"
        )


def load_dataset(
    name: str,
    data_dir: str | os.PathLike[str] | None = None,
    *,
    download: bool = False,
    seed: int = 0,
    features: str = "raw",
    timeout: float = DEFAULT_TIMEOUT,
    **options: Any,
) -> Data | GraphDataset:
    """Load a dataset by name.

    Node datasets return a :class:`~torch_geometric.data.Data` (``x`` float32, ``y`` int64,
    undirected coalesced ``edge_index`` without self-loops, ``num_nodes``, ``name``); graph
    datasets a :class:`GraphDataset`. Files are read from ``data_dir`` (see
    :func:`resolve_data_dir`) and verified; missing files are fetched only with
    ``download=True``. ``seed`` seeds the synthetic generators.

    ``features``: ``"raw"`` (the dataset's own features; an error when they are not
    available) or ``"one-hot-degree"`` (one-hot node degree clipped at ``max_degree``,
    default 64; also gives graph datasets an ``x``).

    Options for node datasets, applied in this order: ``top_k_classes`` (int),
    ``largest_component`` (bool), ``normalize_features`` (bool, per-feature min-max to
    [0, 1]) or ``normalize_rows`` (bool, every node's features divided by their sum: PyG's
    ``NormalizeFeatures``, the Blink authors' preprocessing; not both). Synthetic datasets
    also take their generator options (``csbm``: num_nodes, num_classes, avg_degree,
    homophily, num_features, mean_distance; ``ba``: num_nodes, m).
    """
    from dpgl.datasets.transforms import (
        NormalizeFeatures01,
        NormalizeRows,
        OneHotDegreeClipped,
        TopKClasses,
        largest_component,
    )
    from dpgl.rng import make_rng
    spec = get_spec(name)
    _check_options(spec, features, options)
    max_degree = options.pop("max_degree", DEFAULT_MAX_DEGREE)
    top_k = options.pop("top_k_classes", None)
    lcc = bool(options.pop("largest_component", False))
    normalize = bool(options.pop("normalize_features", False))
    rows = bool(options.pop("normalize_rows", False))
    if normalize and rows:
        raise ConfigError("normalize_features (min-max per feature) and normalize_rows (per "
                          "node sum) exclude each other; choose one")

    if spec.generate is not None:
        result = spec.generate(rng=make_rng(seed), **options)
    else:
        assert spec.read is not None
        files = list(spec.files)
        if features == "raw" and spec.feature_file is not None:
            files.append(spec.feature_file)
        paths = ensure_files(
            files,
            resolve_data_dir(data_dir),
            download=download,
            dataset=spec.name,
            timeout=timeout,
        )
        result = spec.read(paths)

    if isinstance(result, GraphDataset):
        result.name = spec.name
        if features == "one-hot-degree":
            to_deg = OneHotDegreeClipped(max_degree)
            result.graphs = [to_deg(g) for g in result.graphs]
        return result

    data: Data = result
    feature_range = spec.feature_range
    if callable(feature_range):
        feature_range = feature_range(**options)
    if features == "one-hot-degree":
        data = OneHotDegreeClipped(max_degree)(data)
        feature_range = (0.0, 1.0, "one-hot degree: every value is 0 or 1")
    if top_k is not None:
        data = TopKClasses(top_k)(data)
    if lcc:
        data = largest_component(data)
    if normalize:
        data = NormalizeFeatures01()(data)
        feature_range = None  # min-max over all nodes: not a public, data-independent range
    if rows:
        data = NormalizeRows()(data)
        if feature_range is not None:  # a non-negative row divided by max(its sum, 1)
            feature_range = (0.0, 1.0, "non-negative features divided by their node's sum: "
                             "every value in [0, 1]") if feature_range[0] >= 0 else None
    data.name = spec.name
    # Public metadata for the feature-LDP mechanisms (dpgl.mechanisms.features.FeatureRange).
    data.feature_range = feature_range
    return data
