"""Graph-classification benchmarks in the TU Dortmund format (Morris et al., "TUDataset",
ICML GRL+ workshop 2020), read straight from the distributed zip (no extraction).

Files inside ``NAME.zip`` (matched by name, any leading folder):

* ``NAME_A.txt``: ``row, col`` per line, 1-based node ids over the whole collection;
* ``NAME_graph_indicator.txt``: graph id (1-based) of node ``i`` on line ``i``;
* ``NAME_graph_labels.txt``: one label per graph (remapped to ``0..C-1`` in sorted order);
* ``NAME_node_labels.txt`` (optional): one integer label per node (kept as ``node_label``).

Parsing is vectorised (pandas' C reader): REDDIT-BINARY has about 1.7 million rows.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch_geometric.data import Data

from dpgl.datasets.base import GraphDataset, undirected_edge_index
from dpgl.errors import DatasetError


def _member(zf: zipfile.ZipFile, suffix: str) -> str | None:
    names = [n for n in zf.namelist() if n == suffix or n.endswith("/" + suffix)]
    if len(names) > 1:
        raise DatasetError(f"{zf.filename}: several members named {suffix}")
    return names[0] if names else None


def _read_ints(zf: zipfile.ZipFile, member: str, columns: int) -> np.ndarray:
    with zf.open(member) as fh:
        df = pd.read_csv(
            fh,
            header=None,
            sep=",",
            skipinitialspace=True,
            dtype=np.int64,
            engine="c",
            usecols=list(range(columns)),
        )
    arr = df.to_numpy(dtype=np.int64, copy=True)
    return arr if columns > 1 else arr[:, 0]


def read_tu_zip(path: Path, name: str) -> GraphDataset:
    """Read TU dataset ``name`` (e.g. ``"REDDIT-BINARY"``) from the zip at ``path``."""
    try:
        with zipfile.ZipFile(path) as zf:
            required = []
            for part in ("A", "graph_indicator", "graph_labels"):
                member = _member(zf, f"{name}_{part}.txt")
                if member is None:
                    raise DatasetError(f"{path.name}: no {name}_{part}.txt inside the zip")
                required.append(member)
            edges = _read_ints(zf, required[0], 2)
            indicator = _read_ints(zf, required[1], 1)
            graph_labels = _read_ints(zf, required[2], 1)
            labels_member = _member(zf, f"{name}_node_labels.txt")
            node_labels = _read_ints(zf, labels_member, 1) if labels_member else None
    except DatasetError:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, zipfile.LargeZipFile) as exc:
        raise DatasetError(f"{path.name} is not a readable zip file: {exc}") from None
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DatasetError(f"{path.name}: malformed TU text file: {exc}") from None
    return _assemble(path.name, name, edges, indicator, graph_labels, node_labels)


def _assemble(
    fname: str,
    name: str,
    edges: np.ndarray,
    indicator: np.ndarray,
    graph_labels: np.ndarray,
    node_labels: np.ndarray | None,
) -> GraphDataset:
    num_nodes = len(indicator)
    num_graphs = len(graph_labels)
    if num_graphs == 0:
        raise DatasetError(f"{fname}: no graphs")
    graph_of = indicator - 1
    if graph_of.min() < 0 or graph_of.max() >= num_graphs:
        raise DatasetError(f"{fname}: graph indicator outside 1..{num_graphs}")
    if np.any(np.diff(graph_of) < 0):
        raise DatasetError(f"{fname}: nodes are not grouped by graph")
    counts = np.bincount(graph_of, minlength=num_graphs)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    if node_labels is not None and len(node_labels) != num_nodes:
        raise DatasetError(f"{fname}: {len(node_labels)} node labels for {num_nodes} nodes")

    edge_index = undirected_edge_index(edges[:, 0] - 1, edges[:, 1] - 1, num_nodes, what=fname)
    src_graph = torch.from_numpy(graph_of)[edge_index[0]]
    if not torch.equal(src_graph, torch.from_numpy(graph_of)[edge_index[1]]):
        raise DatasetError(f"{fname}: an edge joins two different graphs")
    # Coalesced edges are sorted by source node, hence grouped by graph.
    edge_counts = torch.bincount(src_graph, minlength=num_graphs).tolist()
    per_graph = torch.split(edge_index, edge_counts, dim=1)

    classes, y = np.unique(graph_labels, return_inverse=True)
    y_t = torch.from_numpy(y.astype(np.int64))
    nl = torch.from_numpy(node_labels) if node_labels is not None else None
    graphs = []
    for g in range(num_graphs):
        start, n_g = int(offsets[g]), int(counts[g])
        data = Data(edge_index=per_graph[g] - start, y=y_t[g : g + 1], num_nodes=n_g)
        if nl is not None:
            data.node_label = nl[start : start + n_g]
        graphs.append(data)
    return GraphDataset(name, graphs, len(classes))
