"""Planetoid citation graphs (Cora, CiteSeer, PubMed) from the raw ``ind.<name>.*`` files.

Format (Yang, Cohen & Salakhutdinov, ICML 2016, github.com/kimiyoung/planetoid): Python-2
pickles of scipy CSR feature matrices (``x``, ``tx``, ``allx``), one-hot label arrays (``y``,
``ty``, ``ally``) and a ``defaultdict(list)`` adjacency (``graph``), plus the plain-text
``test.index``. The assembly follows the standard one (Kipf & Welling's GCN code, PyG's
``read_planetoid_data``): rows are ``allx`` then ``tx``, the test rows are put back at the
positions listed in ``test.index``, and CiteSeer's 15 test ids without a row get zero features
and label 0 (they are kept, as PyG keeps them).

The pickles are read with a *restricted* unpickler that resolves only the handful of numpy /
scipy / builtin callables the format uses, so a tampered file cannot run code.
"""

from __future__ import annotations

import collections
import io
import pickle
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from dpgl.datasets.base import undirected_edge_index
from dpgl.errors import DatasetError

try:  # numpy >= 2
    from numpy._core.multiarray import _reconstruct
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.core.multiarray import _reconstruct  # type: ignore[no-redef]


# (module, name) as written in the pickle -> object. Python-2 names appear as written
# (``__builtin__``), since the mapping to Python-3 names happens in the default find_class.
_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse._csr", "csr_matrix"): sp.csr_matrix,
    ("collections", "defaultdict"): collections.defaultdict,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
}


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves only the classes the Planetoid files need.

    Any other global (``os.system``, ``builtins.eval``, ...) raises
    :class:`~dpgl.errors.DatasetError` before it can be called.
    """

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise DatasetError(
                f"refusing to unpickle {module}.{name}: not a numpy/scipy type used by the "
                f"Planetoid format (file tampered with or not a Planetoid file)"
            ) from None


def restricted_load(path: Path) -> Any:
    """Unpickle a Planetoid file (Python-2 pickle, latin-1) with :class:`RestrictedUnpickler`."""
    try:
        data = path.read_bytes()
        return RestrictedUnpickler(io.BytesIO(data), encoding="latin1").load()
    except DatasetError as exc:
        raise DatasetError(f"{path.name}: {exc}") from None
    except Exception as exc:  # malformed pickle stream: many possible exception types
        raise DatasetError(f"{path.name} is not a readable Planetoid pickle: {exc}") from None


def _as_csr(obj: Any, path: Path) -> sp.csr_matrix:
    if not isinstance(obj, sp.csr_matrix):
        raise DatasetError(f"{path.name}: expected a scipy CSR matrix, got {type(obj).__name__}")
    # Rebuild from the raw arrays: old pickles carry attributes of old scipy versions.
    try:
        shape = tuple(int(v) for v in obj.__dict__.get("_shape", obj.shape))
        return sp.csr_matrix((obj.data, obj.indices, obj.indptr), shape=shape)
    except Exception as exc:
        raise DatasetError(f"{path.name}: malformed CSR matrix: {exc}") from None


def _as_labels(obj: Any, path: Path) -> np.ndarray:
    if not isinstance(obj, np.ndarray) or obj.ndim != 2:
        raise DatasetError(f"{path.name}: expected a 2-d one-hot label array")
    return obj


def read_planetoid(paths: dict[str, Path], name: str) -> Data:
    """Assemble a Planetoid dataset from its eight raw files (``paths`` keyed by part)."""
    x = _as_csr(restricted_load(paths["x"]), paths["x"])
    tx = _as_csr(restricted_load(paths["tx"]), paths["tx"])
    allx = _as_csr(restricted_load(paths["allx"]), paths["allx"])
    ty = _as_labels(restricted_load(paths["ty"]), paths["ty"])
    ally = _as_labels(restricted_load(paths["ally"]), paths["ally"])
    _as_labels(restricted_load(paths["y"]), paths["y"])  # validated; rows are part of ally
    graph = restricted_load(paths["graph"])
    if not isinstance(graph, dict):
        raise DatasetError(f"{paths['graph'].name}: expected a dict adjacency")
    try:
        test_index = np.array(paths["test.index"].read_text().split(), dtype=np.int64)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{paths['test.index'].name}: not a list of integers: {exc}") from None
    del x  # ``x`` rows are the first rows of ``allx``

    if tx.shape[0] != len(test_index) or ty.shape[0] != len(test_index):
        raise DatasetError(f"{name}: test.index has {len(test_index)} ids, tx {tx.shape[0]} rows")
    sorted_test = np.sort(test_index)
    if name == "citeseer":
        # Some test ids have no row (isolated nodes): pad with zero rows / zero labels.
        lo, hi = int(sorted_test[0]), int(sorted_test[-1])
        full = hi - lo + 1
        pos = sorted_test - lo
        coo = tx.tocoo()
        tx = sp.csr_matrix((coo.data, (pos[coo.row], coo.col)), shape=(full, tx.shape[1]))
        ty_ext = np.zeros((full, ty.shape[1]), dtype=ty.dtype)
        ty_ext[pos] = ty
        ty = ty_ext

    features = sp.vstack([allx, tx]).tocsr()
    labels = np.vstack([ally, ty]).argmax(axis=1)
    n = features.shape[0]
    if sorted_test[-1] >= n or sorted_test[0] < 0:
        raise DatasetError(f"{name}: test.index refers to node {sorted_test[-1]} of {n}")
    perm = np.arange(n)
    perm[test_index] = sorted_test
    features = features[perm]
    labels = labels[perm]

    keys = list(graph.keys())
    try:
        lengths = np.fromiter((len(graph[k]) for k in keys), dtype=np.int64, count=len(keys))
        src = np.repeat(np.asarray(keys, dtype=np.int64), lengths)
        dst = np.fromiter(chain.from_iterable(graph[k] for k in keys), dtype=np.int64)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{paths['graph'].name}: malformed adjacency: {exc}") from None
    edge_index = undirected_edge_index(src, dst, n, what=f"{name} graph")

    x_t = torch.from_numpy(np.asarray(features.todense(), dtype=np.float32))
    return Data(
        x=x_t,
        y=torch.from_numpy(labels.astype(np.int64)),
        edge_index=edge_index,
        num_nodes=n,
    )
