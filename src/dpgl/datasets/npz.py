"""Attributed graphs stored as sparse matrices in ``.npz`` files.

Two key conventions exist:

* gnn-benchmark (Shchur et al., "Pitfalls of GNN evaluation", 2018; also graph2gauss):
  ``adj_data/adj_indices/adj_indptr/adj_shape``, ``attr_data/...`` (or a dense
  ``attr_matrix``), ``labels``;
* PPNP (Klicpera et al., ICLR 2019): ``adj_matrix.data/.indices/.indptr/.shape``,
  ``attr_matrix.*``, ``labels``.

Files are opened with ``allow_pickle=False``: extra entries that hold pickled objects
(``edge_attr_matrix``, ``metadata``, ...) are never read. The adjacency is symmetrised and
binarised and self-loops are dropped.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from dpgl.datasets.base import undirected_edge_index
from dpgl.errors import DatasetError


def _csr(f: np.lib.npyio.NpzFile, stem: str, sep: str) -> sp.csr_matrix:
    return sp.csr_matrix(
        (f[f"{stem}{sep}data"], f[f"{stem}{sep}indices"], f[f"{stem}{sep}indptr"]),
        shape=tuple(int(v) for v in f[f"{stem}{sep}shape"]),
    )


def _matrix(f: np.lib.npyio.NpzFile, stem: str) -> sp.csr_matrix | np.ndarray | None:
    keys = set(f.files)
    if f"{stem}_data" in keys:
        return _csr(f, stem, "_")
    if f"{stem}_matrix.data" in keys:
        return _csr(f, f"{stem}_matrix", ".")
    if f"{stem}_matrix" in keys:  # dense matrix (non-object dtype only)
        return np.asarray(f[f"{stem}_matrix"])
    return None


def read_npz(path: Path) -> Data:
    """Read a gnn-benchmark or PPNP ``.npz`` file into an undirected :class:`Data`."""
    if not zipfile.is_zipfile(path):
        raise DatasetError(f"{path.name} is not an .npz (zip) archive")
    try:
        # Our own handle: np.load leaks the file it opened when the archive is unreadable.
        with open(path, "rb") as fh, np.load(fh, allow_pickle=False) as f:
            adj = _matrix(f, "adj")
            if adj is None:
                raise DatasetError(f"{path.name}: no adjacency (adj_* or adj_matrix.*) entries")
            attr = _matrix(f, "attr")
            if "labels" not in f.files:
                raise DatasetError(f"{path.name}: no 'labels' entry")
            labels = np.asarray(f["labels"])
    except DatasetError:
        raise
    except ValueError as exc:  # e.g. an object array reached by a needed key
        raise DatasetError(f"{path.name}: unreadable entry without pickle: {exc}") from None
    except (OSError, zipfile.BadZipFile, zlib.error, EOFError, KeyError) as exc:
        raise DatasetError(f"{path.name} is not a readable .npz file: {exc}") from None

    adj = sp.csr_matrix(adj)  # a dense adjacency entry becomes sparse here
    n = adj.shape[0]
    if adj.shape != (n, n):
        raise DatasetError(f"{path.name}: adjacency is {adj.shape}, not square")
    if labels.ndim != 1 or labels.shape[0] != n:
        raise DatasetError(
            f"{path.name}: labels have shape {labels.shape}, expected one label per node ({n})"
        )
    if not np.issubdtype(labels.dtype, np.integer) or (n and labels.min() < 0):
        raise DatasetError(f"{path.name}: labels must be non-negative integers")
    coo = adj.tocoo()
    nz = coo.data != 0
    edge_index = undirected_edge_index(coo.row[nz], coo.col[nz], n, what=path.name)

    if attr is None:
        x = None
    else:
        if attr.shape[0] != n:
            raise DatasetError(f"{path.name}: {attr.shape[0]} feature rows for {n} nodes")
        dense = attr if isinstance(attr, np.ndarray) else attr.toarray()
        x = torch.from_numpy(np.ascontiguousarray(dense, dtype=np.float32))
    return Data(
        x=x,
        y=torch.from_numpy(labels.astype(np.int64)),
        edge_index=edge_index,
        num_nodes=n,
    )
