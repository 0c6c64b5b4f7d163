"""A graph dense by nature, held as its n x n weighted adjacency: Blink-Soft's estimate, every
posterior of every pair as an edge weight (Zhu, Tan & Xiao, CCS 2023, Sec. 5.2), when keeping
its pairs as an edge list would take more memory than the matrix (each kept pair costs two
directed entries with 64-bit indices, about 40 bytes against the matrix's 8 a pair).

Same interface as :class:`~dpgl.nn.prepared.PreparedGraph` for the full-batch GCN and
GraphSAGE: :meth:`gcn_adj` and :meth:`mean_adj` are the same normalisations
(``D^-1/2 (A + I) D^-1/2``, Kipf & Welling 2017 Eq. 2, weighted: Blink App. B Eq. 20; and
``D^-1 A``, App. B Eq. 22), as :class:`DenseOperator` s over dense float32 matrices that a
layer multiplies (``adj @ h``), whose backward reads the matrix by rows.
Memory: 4 n^2 bytes for the adjacency and as much for the one normalisation a model reads
(Facebook, 22,470 nodes: 2 GB each). GAT and mini-batches need an edge list: a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from dpgl.device import indexed
from dpgl.errors import ConfigError, GraphError

__all__ = ["DenseGraph", "DenseOperator"]

#: rows normalised at a time (bounds the temporaries to a block of rows)
_BLOCK_ROWS = 2048


class _DenseProduct(torch.autograd.Function):
    """``A @ x`` for a constant dense ``A``; the gradient in ``x``, ``A^T g``, computed as
    ``(g^T A)^T``: BLAS then reads ``A`` by rows. ``A.t() @ g`` with the few columns of a GCN's
    last layer (one per class) is a slow kernel: on Facebook's n = 22,470 with 4 columns, one
    thread, 5.2 s against 0.28 s. A symmetric ``A`` takes the same form forward,
    ``(x^T A)^T`` (0.28 / 0.44 s against 0.63 / 0.69 s for ``A @ x`` with 4 / 16 columns)."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, x: torch.Tensor,  # type: ignore[override]
                symmetric: bool) -> torch.Tensor:
        ctx.a = a
        return (x.t() @ a).t() if symmetric else a @ x

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        return None, (grad.t() @ ctx.a).t(), None


class DenseOperator:
    """A constant dense matrix ``matrix`` ([n, n]) that a layer multiplies: ``op @ x``,
    differentiable in ``x`` (the dense counterpart of
    :class:`~dpgl.graph.propagation.SparseOperator`). ``symmetric``: the matrix equals its
    transpose (the faster product, :class:`_DenseProduct`); the caller has checked it."""

    def __init__(self, matrix: torch.Tensor, *, symmetric: bool = False) -> None:
        self.matrix, self.symmetric = matrix, symmetric

    def __matmul__(self, x: torch.Tensor) -> torch.Tensor:
        return _DenseProduct.apply(self.matrix, x, self.symmetric)

    @property
    def shape(self) -> torch.Size:
        return self.matrix.shape

    @property
    def device(self) -> torch.device:
        return self.matrix.device

    def to(self, device: torch.device | str) -> DenseOperator:
        """This operator on ``device`` (itself when it is there already)."""
        device = indexed(device)
        return self if self.device == device else DenseOperator(self.matrix.to(device),
                                                                symmetric=self.symmetric)

    def to_dense(self) -> torch.Tensor:
        return self.matrix


@dataclass
class DenseGraph:
    """The weighted adjacency ``adjacency`` ([n, n], ``adjacency[i, j]`` the weight of the edge
    j -> i, zero diagonal; Blink's is symmetric). Normalisations are built on first use and
    cached."""

    adjacency: torch.Tensor
    _cache: dict[str, DenseOperator] = field(default_factory=dict, repr=False)
    _symmetric: bool | None = field(default=None, repr=False)
    _num_edges: int | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        a = self.adjacency
        if not isinstance(a, torch.Tensor) or a.dim() != 2 or a.size(0) != a.size(1):
            shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a)
            raise GraphError(f"a dense adjacency must be an [n, n] tensor, got {shape}")
        if not a.is_floating_point():
            raise GraphError(f"a dense adjacency must hold float weights, got {a.dtype}")
        self.adjacency = a.float()

    @property
    def num_nodes(self) -> int:
        return int(self.adjacency.size(0))

    @property
    def num_edges(self) -> int:
        """Directed entries with a nonzero weight (an undirected pair counts twice, as in an
        edge list)."""
        if self._num_edges is None:  # counted once (a pass over n^2 entries)
            a = self.adjacency
            self._num_edges = int(torch.count_nonzero(a)) - int(torch.count_nonzero(a.diagonal()))
        return self._num_edges

    @property
    def edge_weight_sum(self) -> float:
        """The sum of the weights of every directed entry."""
        return float(self.adjacency.sum(dtype=torch.float64))

    @property
    def device(self) -> torch.device:
        return self.adjacency.device

    def to(self, device: torch.device | str) -> DenseGraph:
        """This graph on ``device`` (itself when it is there already)."""
        device = indexed(device)
        if self.device == device:
            return self
        moved = DenseGraph(self.adjacency.to(device))
        moved._cache = {k: m.to(device) for k, m in self._cache.items()}
        moved._symmetric, moved._num_edges = self._symmetric, self._num_edges
        return moved

    def scaled(self, scale: float) -> DenseGraph:
        """Every weight multiplied by ``scale`` (:func:`dpgl.methods.edge_scale.scaled_graph`)."""
        return self if scale == 1.0 else DenseGraph(self.adjacency * scale)

    def _normalized(self, left: torch.Tensor, right: torch.Tensor | None) -> torch.Tensor:
        """``diag(left) A diag(right)`` (``right`` None: ``diag(left) A``), row block by row
        block into one new matrix."""
        a = self.adjacency
        out = torch.empty_like(a)
        for r0 in range(0, a.size(0), _BLOCK_ROWS):
            r1 = min(r0 + _BLOCK_ROWS, a.size(0))
            block = a[r0:r1] * left[r0:r1, None]
            out[r0:r1] = block if right is None else block * right[None, :]
        return out

    def is_symmetric(self) -> bool:
        """Whether the adjacency equals its transpose (checked a block of rows at a time, once:
        about 6 s for Facebook's on one thread)."""
        if self._symmetric is None:
            a = self.adjacency
            self._symmetric = all(
                torch.equal(a[r:r + _BLOCK_ROWS], a[:, r:r + _BLOCK_ROWS].t())
                for r in range(0, a.size(0), _BLOCK_ROWS))
        return self._symmetric

    def gcn_adj(self) -> DenseOperator:
        """``D^-1/2 (A + I) D^-1/2`` with ``D_i = 1 + sum_j A[i, j]`` (rows = targets);
        symmetric (up to the rounding of its products) when ``A`` is."""
        if "gcn" not in self._cache:
            deg = self.adjacency.sum(dim=1, dtype=torch.float64) + 1.0
            inv_sqrt = deg.rsqrt().float()
            out = self._normalized(inv_sqrt, inv_sqrt)
            out.diagonal().add_(inv_sqrt * inv_sqrt)  # the self-loop's 1, normalised
            self._cache["gcn"] = DenseOperator(out, symmetric=self.is_symmetric())
        return self._cache["gcn"]

    def mean_adj(self) -> DenseOperator:
        """``D^-1 A``, the weighted mean over in-neighbours; a row without weight is zero."""
        if "mean" not in self._cache:
            deg = self.adjacency.sum(dim=1, dtype=torch.float64)
            inv = torch.where(deg > 0, 1.0 / deg, torch.zeros_like(deg)).float()
            self._cache["mean"] = DenseOperator(self._normalized(inv, None))
        return self._cache["mean"]

    def attention_edges(self) -> None:
        raise ConfigError("GAT attends over an edge list; a dense estimate (Blink-Soft beyond "
                          "its pair limit) trains a GCN or GraphSAGE only")
