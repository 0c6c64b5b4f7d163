"""Pre-normalized sparse propagation matrices (CSR) for full-batch GNNs.

Message passing convention (PyG): ``edge_index[0]`` is the source j, ``edge_index[1]`` the
target i, and a layer computes ``out[i] = sum_j A[i, j] x[j]``. The matrices below are built
once per graph (SciPy CSR, rows = targets) and wrapped in a :class:`SparseOperator`, so a layer
is one sparse matrix product forward and one backward. Measured on this machine kind: ~2.4x
faster per epoch than edge-list message passing for a two-layer GCN (docs/architecture.md).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import torch

from dpgl.device import indexed
from dpgl.errors import GraphError


class SparseOperator:
    """A fixed sparse matrix ``A`` (CSR) with its transpose precomputed, so that ``A @ x``
    is differentiable in ``x`` at the cost of one more sparse product: torch's own CSR
    backward re-transposes ``A`` on every call (measured here: 75 ms vs 2 ms per product for
    a 140k-edge graph). ``A`` itself is constant (no gradient)."""

    def __init__(self, mat: sp.csr_matrix) -> None:
        mat = sp.csr_matrix(mat, dtype=np.float32)
        self.shape = mat.shape
        self.nnz = int(mat.nnz)
        self.matrix = to_torch_csr(mat)
        self.transpose = to_torch_csr(mat.T.tocsr())

    def __matmul__(self, x: torch.Tensor) -> torch.Tensor:
        return _SpMM.apply(self.matrix, self.transpose, x)

    @property
    def device(self) -> torch.device:
        return self.matrix.device

    def to(self, device: torch.device | str) -> SparseOperator:
        """This operator on ``device`` (itself when it is there already)."""
        device = indexed(device)
        if self.matrix.device == device:
            return self
        return self.apply(lambda t: t.to(device))

    def apply(self, fn: Callable[[torch.Tensor], torch.Tensor]) -> SparseOperator:
        """A copy whose matrix and transpose are ``fn`` of these (a module's ``_apply``)."""
        out = object.__new__(SparseOperator)
        out.shape, out.nnz = self.shape, self.nnz
        out.matrix, out.transpose = fn(self.matrix), fn(self.transpose)
        return out

    def to_dense(self) -> torch.Tensor:
        return self.matrix.to_dense()


#: Entries of ``a`` per chunk of :func:`gather_mm`, over the product's width: a chunk's
#: gathered rows hold about this many floats (128 MB in float32).
GATHER_CHUNK = 1 << 25


def csr_mm(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``a @ x`` for a CSR matrix ``a`` and a dense ``x``: torch's sparse product, except on a
    GPU under torch's deterministic mode (the trainers switch it on there), where it is
    :func:`gather_mm`. cuSPARSE's CSR product is not bit-deterministic and that mode does not
    cover it (docs/gpu.md, measured on an H200); on the CPU both are deterministic and the
    CPU keeps the faster product, so its numbers are unchanged."""
    if uses_gather(x):
        return gather_mm(a, x)
    return torch.sparse.mm(a, x)


def uses_gather(x: torch.Tensor) -> bool:
    """Whether products with ``x`` take the deterministic gather path (a GPU under torch's
    deterministic mode) instead of torch's sparse kernels."""
    return x.device.type != "cpu" and torch.are_deterministic_algorithms_enabled()


def gather_mm(a: torch.Tensor, x: torch.Tensor, *, chunk: int = GATHER_CHUNK) -> torch.Tensor:
    """``a @ x`` as ``out[i] += a[i, j] x[j]`` over ``a``'s entries in storage order: a gather
    (``index_select``) and an ``index_add_``, which torch's deterministic mode makes
    bit-deterministic on CUDA, in chunks of about ``chunk`` floats (the chunks are added in a
    fixed order, and memory stays bounded on graphs of ~10^8 entries). Any device."""
    crow, col, val = a.crow_indices(), a.col_indices(), a.values().to(x.dtype)
    out = x.new_zeros(a.size(0), x.size(1))
    step = max(1, chunk // max(1, x.size(1)))
    for start in range(0, col.numel(), step):
        stop = min(start + step, col.numel())
        pos = torch.arange(start, stop, device=col.device)
        rows = torch.searchsorted(crow, pos, right=True) - 1  # the row of each entry
        out.index_add_(0, rows, x.index_select(0, col[start:stop]) * val[start:stop, None])
    return out


class _SpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a: torch.Tensor, a_t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.a_t = a_t
        return csr_mm(a, x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[None, None, torch.Tensor]:  # type: ignore[override]
        return None, None, csr_mm(ctx.a_t, grad.contiguous())


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
    src = edge_index[0].cpu().numpy()
    dst = edge_index[1].cpu().numpy()
    w = (
        np.ones(src.shape[0], dtype=np.float32)
        if edge_weight is None
        else edge_weight.detach().cpu().numpy().astype(np.float32)
    )
    if w.shape[0] != src.shape[0]:
        raise GraphError(f"edge_weight has {w.shape[0]} entries for {src.shape[0]} edges")
    return sp.csr_matrix((w, (dst, src)), shape=(num_nodes, num_nodes))


def csr_tensor(crow: torch.Tensor, col: torch.Tensor, values: torch.Tensor,
               shape: tuple[int, int]) -> torch.Tensor:
    """``torch.sparse_csr_tensor`` of parts the caller built consistently (row pointers, column
    indices and values; invariants not re-checked), without torch's beta warning: dpgl relies
    on its sparse products only."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse CSR tensor support is in beta.*")
        return torch.sparse_csr_tensor(crow, col, values, size=shape, check_invariants=False)


def to_torch_csr(mat: sp.csr_matrix) -> torch.Tensor:
    """SciPy CSR -> ``torch.sparse_csr_tensor`` (float32)."""
    mat = mat.tocsr()
    mat.sort_indices()  # a canonical SciPy CSR matrix
    return csr_tensor(torch.from_numpy(mat.indptr.astype(np.int64)),
                      torch.from_numpy(mat.indices.astype(np.int64)),
                      torch.from_numpy(mat.data.astype(np.float32)), mat.shape)


def gcn_normalized_scipy(
    edge_index: torch.Tensor,
    num_nodes: int,
    edge_weight: torch.Tensor | None = None,
    *,
    add_self_loops: bool = True,
    degrees: torch.Tensor | np.ndarray | None = None,
) -> sp.csr_matrix:
    """``D^-1/2 (A + I) D^-1/2`` (Kipf & Welling 2017, Eq. 2; weighted: Blink App. B Eq. 20).

    Degrees are weighted row sums; isolated nodes get a zero row (or only their self-loop).
    ``degrees`` (one per node) replaces the row sums in ``D``: a block of a larger graph
    normalises with the larger graph's degrees.
    """
    a = to_scipy(edge_index, num_nodes, edge_weight)
    if add_self_loops:
        a = a + sp.identity(num_nodes, dtype=np.float32, format="csr")
    if degrees is None:
        deg = np.asarray(a.sum(axis=1)).ravel()
    else:
        deg = np.asarray(degrees.cpu() if isinstance(degrees, torch.Tensor) else degrees
                         ).ravel()
    with np.errstate(divide="ignore"):
        inv_sqrt = np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0).astype(np.float32)
    d = sp.diags(inv_sqrt)
    return (d @ a @ d).tocsr()


def gcn_degrees(edge_index: torch.Tensor, num_nodes: int,
                edge_weight: torch.Tensor | None = None) -> np.ndarray:
    """The weighted in-degrees with the self-loop, ``D`` of :func:`gcn_normalized_scipy`."""
    a = to_scipy(edge_index, num_nodes, edge_weight)
    a = a + sp.identity(num_nodes, dtype=np.float32, format="csr")
    return np.asarray(a.sum(axis=1)).ravel()


def mean_normalized_scipy(
    edge_index: torch.Tensor, num_nodes: int, edge_weight: torch.Tensor | None = None
) -> sp.csr_matrix:
    """Row-normalized ``D^-1 A``: the (weighted) mean over in-neighbours (GraphSAGE-mean;
    weighted form of Blink App. B Eq. 22). Rows of isolated nodes are zero."""
    a = to_scipy(edge_index, num_nodes, edge_weight)
    deg = np.asarray(a.sum(axis=1)).ravel()
    with np.errstate(divide="ignore"):
        inv = np.where(deg > 0, 1.0 / deg, 0.0).astype(np.float32)
    return (sp.diags(inv) @ a).tocsr()
