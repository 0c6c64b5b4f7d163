"""Pre-normalized sparse propagation matrices (CSR) for full-batch GNNs.

Message passing convention (PyG): ``edge_index[0]`` is the source j, ``edge_index[1]`` the
target i, and a layer computes ``out[i] = sum_j A[i, j] x[j]``. The matrices below are built
once per graph as ``torch.sparse_csr_tensor`` with rows = targets, so a layer is one sparse
matrix product. Measured on this machine kind: ~2.4x faster per epoch than edge-list message
passing for a two-layer GCN (docs/architecture.md).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import torch

from dpgl.errors import GraphError


def check_edge_index(edge_index: torch.Tensor, num_nodes: int) -> None:
    """Raise :class:`GraphError` unless ``edge_index`` is an int [2, E] tensor of valid ids."""
    if not isinstance(edge_index, torch.Tensor) or edge_index.dim() != 2 or edge_index.size(0) != 2:
        shape = (
            tuple(edge_index.shape) if isinstance(edge_index, torch.Tensor) else type(edge_index)
        )
        raise GraphError(f"edge_index must be a [2, E] tensor, got {shape}")
    if edge_index.dtype not in (torch.int64, torch.int32):
        raise GraphError(f"edge_index must hold integer ids, got {edge_index.dtype}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise GraphError(f"edge_index has node ids outside [0, {num_nodes - 1}]")


def to_scipy(
    edge_index: torch.Tensor, num_nodes: int, edge_weight: torch.Tensor | None = None
) -> sp.csr_matrix:
    """``A[i, j] = w`` for each edge j -> i, as a SciPy CSR matrix (duplicates summed)."""
    check_edge_index(edge_index, num_nodes)
    src = edge_index[0].numpy()
    dst = edge_index[1].numpy()
    w = (
        np.ones(src.shape[0], dtype=np.float32)
        if edge_weight is None
        else edge_weight.detach().cpu().numpy().astype(np.float32)
    )
    if w.shape[0] != src.shape[0]:
        raise GraphError(f"edge_weight has {w.shape[0]} entries for {src.shape[0]} edges")
    return sp.csr_matrix((w, (dst, src)), shape=(num_nodes, num_nodes))


def to_torch_csr(mat: sp.csr_matrix) -> torch.Tensor:
    """SciPy CSR -> ``torch.sparse_csr_tensor`` (float32)."""
    mat = mat.tocsr()
    mat.sort_indices()
    with warnings.catch_warnings():  # torch flags CSR support as beta; we rely on spmm only
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support is in beta.*")
        return torch.sparse_csr_tensor(
            torch.from_numpy(mat.indptr.astype(np.int64)),
            torch.from_numpy(mat.indices.astype(np.int64)),
            torch.from_numpy(mat.data.astype(np.float32)),
            size=mat.shape,
            check_invariants=False,  # built from a canonical SciPy CSR matrix
        )


def gcn_normalized(
    edge_index: torch.Tensor,
    num_nodes: int,
    edge_weight: torch.Tensor | None = None,
    *,
    add_self_loops: bool = True,
) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2`` (Kipf & Welling 2017, Eq. 2; weighted: Blink App. B Eq. 20).

    Degrees are weighted row sums; isolated nodes get a zero row (or only their self-loop).
    """
    a = to_scipy(edge_index, num_nodes, edge_weight)
    if add_self_loops:
        a = a + sp.identity(num_nodes, dtype=np.float32, format="csr")
    deg = np.asarray(a.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        inv_sqrt = np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0).astype(np.float32)
    d = sp.diags(inv_sqrt)
    return to_torch_csr((d @ a @ d).tocsr())


def mean_normalized(
    edge_index: torch.Tensor, num_nodes: int, edge_weight: torch.Tensor | None = None
) -> torch.Tensor:
    """Row-normalized ``D^-1 A``: the (weighted) mean over in-neighbours (GraphSAGE-mean;
    weighted form of Blink App. B Eq. 22). Rows of isolated nodes are zero."""
    a = to_scipy(edge_index, num_nodes, edge_weight)
    deg = np.asarray(a.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        inv = np.where(deg > 0, 1.0 / deg, 0.0).astype(np.float32)
    return to_torch_csr((sp.diags(inv) @ a).tocsr())
