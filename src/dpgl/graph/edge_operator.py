"""A fixed edge list whose weights are an input: ``out[i] = sum_{e: dst_e = i} w_e x[src_e]``,
differentiable in both ``w`` and ``x`` (Solitude's GNN reads learned edge weights, Lin, Li &
Wang, IEEE TIFS 2022, Eq. 14, so its loss must reach them).

PyG's message passing computes this as a gather of ``x[src]`` (E x d), a product and a
scatter-add, and its ``GCNConv`` redoes the normalisation (self-loops appended to a copy of the
edge list, a degree scatter) in every layer of every forward pass. Here the structure is sorted
into CSR once (rows = targets, and once more for the transpose), the forward and the gradient
in ``x`` are one sparse product each (:func:`dpgl.graph.propagation.csr_mm`), and the
gradient in ``w``, ``dL/dw_e = <dL/dout[dst_e], x[src_e]>``, is a sampled product over the
CSR entries on the CPU (``torch.sparse.sampled_addmm``, on blocks of rows) and chunked gathers
of bounded memory on a GPU. :meth:`EdgeOperator.bind` shares one ``A(w)`` between products
(both layers of a GNN). Measured on Facebook's RR reports at eps = 3 (24 million directed
edges, one CPU thread): a Solitude epoch from 43 s to about 7 s (docs/feature-ldp.md,
benchmarks/solitude_step.py).
"""

from __future__ import annotations

import torch

from dpgl.graph import propagation
from dpgl.graph.propagation import GATHER_CHUNK, check_edge_index, csr_mm, csr_tensor

__all__ = ["BoundEdgeOperator", "EdgeOperator", "index_dtype", "sort_order"]


def _csr_rows(rows: torch.Tensor, num_rows: int) -> torch.Tensor:
    """CSR row pointers of entries already sorted by ``rows`` (a search, not ``bincount``,
    which has no deterministic form on CUDA)."""
    bounds = torch.arange(num_rows + 1, device=rows.device, dtype=rows.dtype)
    return torch.searchsorted(rows, bounds, out_int32=rows.dtype == torch.int32)


def index_dtype(num_nodes: int, num_entries: int) -> torch.dtype:
    """int32 where the node ids and the entries' positions fit in it (half the memory of
    int64, and the same sums: :class:`EdgeOperator` keeps an int32 edge list's type), else
    int64."""
    return torch.int32 if max(int(num_nodes), int(num_entries)) < 2**31 else torch.int64


def sort_order(keys: torch.Tensor) -> torch.Tensor | None:
    """The stable order that sorts ``keys`` (in their integer type); None when they are sorted
    already."""
    if keys.numel() < 2 or bool((keys[1:] >= keys[:-1]).all()):
        return None
    return torch.argsort(keys, stable=True).to(keys.dtype)


def _take(t: torch.Tensor, perm: torch.Tensor | None) -> torch.Tensor:
    return t if perm is None else t.index_select(0, perm)  # (t[perm] is slower on a CPU)


#: entries a block of :func:`_sampled_values` holds (its int64 copy of the block's column
#: indices, 8 bytes an entry, is what a block costs beyond the output)
SAMPLED_CHUNK = 1 << 22


def _sampled_values(pattern: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                    chunk: int) -> torch.Tensor:
    """The values of ``torch.sparse.sampled_addmm(pattern, a, b, beta=0)``, ``<a[i], b[:, j]>``
    at each entry (i, j) of the CSR ``pattern``, computed on blocks of whole rows of about
    ``chunk`` entries. Each entry's dot product is computed alone, so the blocks give the same
    floats as one call (tests/graph/test_edge_operator.py); torch's call makes an int64 copy of
    all the column indices and row pointers besides its output (on Facebook's 136 million RR
    reports, 1.1 GB more than the output), a block only of its own."""
    crow, col, values = pattern.crow_indices(), pattern.col_indices(), pattern.values()
    rows, total = crow.numel() - 1, col.numel()
    if total <= chunk or bool(((crow[1:] - crow[:-1]) > pattern.size(1)).any()):
        # one block; also where a row repeats entries past the row's length, which torch's
        # product refuses in a block with more entries than cells
        return torch.sparse.sampled_addmm(pattern, a, b, beta=0.0).values()
    out = a.new_empty(total)
    start_row = 0
    while start_row < rows:
        begin = int(crow[start_row])
        stop_row = int(torch.searchsorted(crow, begin + chunk, right=True)) - 1
        stop_row = min(max(stop_row, start_row + 1), rows)  # a row longer than chunk: alone
        end = int(crow[stop_row])
        if end > begin:
            block = csr_tensor(crow[start_row:stop_row + 1] - begin, col[begin:end],
                               values[begin:end], (stop_row - start_row, pattern.size(1)))
            out[begin:end] = torch.sparse.sampled_addmm(
                block, a[start_row:stop_row], b, beta=0.0).values()
        start_row = stop_row
    return out


class EdgeOperator:
    """The edge list ``edge_index`` ([2, E], ``edge_index[0]`` the source j, ``[1]`` the target
    i, PyG's convention) of ``num_nodes`` nodes, prepared for weighted sums: ``op(w, x)`` is
    ``A(w) @ x`` with ``A(w)[i, j] = sum of w_e over the edges j -> i``. Memory O(E).

    Its indices keep ``edge_index``'s integer type: int32 halves them (on Facebook's RR reports
    at eps = 1, 136 million edges, 2.2 GB less; :class:`~dpgl.estimators.solitude.
    StructureLearner` passes int32 where the ids fit), with the same sums in the same order."""

    def __init__(self, edge_index: torch.Tensor, num_nodes: int) -> None:
        check_edge_index(edge_index, num_nodes)
        n = int(num_nodes)
        if index_dtype(n, edge_index.size(1)) == torch.int64:
            edge_index = edge_index.long()  # ids or edge positions (permutations) need 64 bits
        src, dst = edge_index[0], edge_index[1]
        self.num_nodes, self.num_edges = n, int(src.numel())
        self.src, self.dst = src, dst
        # CSR of A (rows = targets) and of A^T (rows = sources); perm maps CSR slot -> edge,
        # None where the edges are in that order already (RR reports come sorted by target)
        self.perm = sort_order(dst)
        self.crow, self.col = _csr_rows(_take(dst, self.perm), n), _take(src, self.perm)
        self.perm_t = sort_order(src)
        self.crow_t, self.col_t = _csr_rows(_take(src, self.perm_t), n), _take(dst, self.perm_t)

    def in_degree(self, weight: torch.Tensor) -> torch.Tensor:
        """``sum_{e: dst_e = i} w_e`` per node i (differentiable in ``weight``)."""
        self._check(weight)
        return weight.new_zeros(self.num_nodes).index_add(0, self.dst, weight)

    def __call__(self, weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """``A(weight) @ x`` (``weight`` one per edge, in ``edge_index``'s order)."""
        return self.bind(weight)(x)

    def bind(self, weight: torch.Tensor) -> BoundEdgeOperator:
        """``A(weight)``, for several products with the same weights (e.g. both layers of a
        GNN): its CSR matrices are built once, when first needed."""
        self._check(weight)
        return BoundEdgeOperator(self, weight)

    def _check(self, weight: torch.Tensor) -> None:
        if weight.dim() != 1 or weight.numel() != self.num_edges:
            raise ValueError(f"weight must hold one value per edge ({self.num_edges}), got "
                             f"shape {tuple(weight.shape)}")

    def matrix(self, weight: torch.Tensor, *, transpose: bool = False) -> torch.Tensor:
        """``A(weight)`` (or its transpose) as a torch CSR tensor (no gradient)."""
        perm, crow, col = ((self.perm_t, self.crow_t, self.col_t) if transpose
                           else (self.perm, self.crow, self.col))
        return csr_tensor(crow, col, _take(weight.detach(), perm),
                          (self.num_nodes, self.num_nodes))

    def weight_grad(self, pattern: torch.Tensor, grad: torch.Tensor, x: torch.Tensor, *,
                    chunk: int = SAMPLED_CHUNK) -> torch.Tensor:
        """The gradient of ``sum(grad * A(w) @ x)`` in ``w``: ``<grad[dst_e], x[src_e]>`` per
        edge, ``pattern`` any :meth:`matrix` (only its entries' positions are read). On the CPU
        a sampled product over the CSR entries (``torch.sparse.sampled_addmm``); on a GPU
        under torch's deterministic mode (the trainers switch it on there) :meth:`edge_dot`,
        which that mode keeps bit-deterministic, as :func:`~dpgl.graph.propagation.csr_mm`
        does for the product. The sampled product runs on blocks of rows of about ``chunk``
        entries (:func:`_sampled_values`)."""
        if propagation.uses_gather(x) or self.num_edges > self.num_nodes ** 2:
            # (torch's sampled product fails on a multigraph with more entries than n^2)
            return self.edge_dot(grad, x)
        values = _sampled_values(pattern, grad, x.t().contiguous(), chunk)
        if self.perm is None:
            return values
        out = x.new_empty(self.num_edges)
        out[self.perm] = values
        return out

    def edge_dot(self, grad: torch.Tensor, x: torch.Tensor, *,
                 chunk: int = GATHER_CHUNK) -> torch.Tensor:
        """``<grad[dst_e], x[src_e]>`` per edge: the gradient of ``sum(grad * A(w) @ x)`` in
        ``w``, in chunks of about ``chunk`` floats."""
        out = x.new_empty(self.num_edges)
        step = max(1, chunk // max(1, x.size(1)))
        for start in range(0, self.num_edges, step):
            stop = min(start + step, self.num_edges)
            out[start:stop] = (grad.index_select(0, self.dst[start:stop])
                               * x.index_select(0, self.src[start:stop])).sum(1)
        return out


class BoundEdgeOperator:
    """``A(weight)`` of an :class:`EdgeOperator`: ``bound(x)`` is ``A(weight) @ x``,
    differentiable in ``weight`` and ``x``; ``A`` and ``A^T`` are built once, when first
    needed (a permuted copy of the weights each, none where the edges are in that order)."""

    def __init__(self, op: EdgeOperator, weight: torch.Tensor) -> None:
        self.op, self.weight = op, weight
        self._mats: dict[bool, torch.Tensor] = {}

    def matrix(self, *, transpose: bool = False) -> torch.Tensor:
        if transpose not in self._mats:
            self._mats[transpose] = self.op.matrix(self.weight, transpose=transpose)
        return self._mats[transpose]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n = self.op.num_nodes
        if x.dim() != 2 or x.size(0) != n:
            raise ValueError(f"x must be [{n}, d], got {tuple(x.shape)}")
        return _WeightedSpMM.apply(self.weight, x, self)


class _WeightedSpMM(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight: torch.Tensor, x: torch.Tensor,  # type: ignore[override]
                bound: BoundEdgeOperator) -> torch.Tensor:
        ctx.bound = bound
        ctx.save_for_backward(x)
        return csr_mm(bound.matrix(), x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        (x,) = ctx.saved_tensors
        bound: BoundEdgeOperator = ctx.bound
        grad = grad.contiguous()
        grad_w = (bound.op.weight_grad(bound.matrix(), grad, x.detach())
                  if ctx.needs_input_grad[0] else None)
        grad_x = csr_mm(bound.matrix(transpose=True), grad) if ctx.needs_input_grad[1] else None
        return grad_w, grad_x, None
