"""EdgeOperator: A(w) @ x and its gradients in w and x against the dense matrix, and the
weighted GCN / GraphSAGE built on it against PyG's GCNConv and the edge-list sums."""

from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import GCNConv

from dpgl.errors import GraphError
from dpgl.graph.edge_operator import EdgeOperator, _sampled_values
from dpgl.graph.propagation import csr_tensor
from dpgl.nn.weighted_gnn import WeightedGNN, _gcn_norm, _WeightedGCN


def _edges(n: int = 9, e: int = 40, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ei = torch.randint(0, n, (2, e), generator=g)
    return ei[:, ei[0] != ei[1]]  # duplicates kept: their weights add


def _dense(ei: torch.Tensor, w: torch.Tensor, n: int) -> torch.Tensor:
    a = torch.zeros(n, n, dtype=w.dtype)
    return a.index_put((ei[1], ei[0]), w, accumulate=True)


@pytest.mark.parametrize("order", ["random", "by_source", "by_target"])
def test_product_and_both_gradients_match_the_dense_matrix(order: str) -> None:
    """Any edge order, including the two sorted ones that skip a permutation."""
    n, ei = 9, _edges()
    if order != "random":
        ei = ei[:, torch.argsort(ei[0 if order == "by_source" else 1], stable=True)]
    g = torch.Generator().manual_seed(1)
    w = torch.rand(ei.size(1), generator=g, dtype=torch.float64, requires_grad=True)
    x = torch.randn(n, 3, generator=g, dtype=torch.float64, requires_grad=True)
    op = EdgeOperator(ei, n)
    assert (op.perm_t is None) == (order == "by_source")
    assert (op.perm is None) == (order == "by_target")
    out = op(w, x)
    ref_w, ref_x = w.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
    ref = _dense(ei, ref_w, n) @ ref_x
    torch.testing.assert_close(out, ref)
    up = torch.randn(n, 3, generator=g, dtype=torch.float64)
    (out * up).sum().backward()
    (ref * up).sum().backward()
    torch.testing.assert_close(w.grad, ref_w.grad)
    torch.testing.assert_close(x.grad, ref_x.grad)
    # the chunked per-edge gradient gives the same with one edge a chunk
    torch.testing.assert_close(op.edge_dot(up, x.detach(), chunk=1), ref_w.grad)
    torch.testing.assert_close(op.in_degree(w.detach()), _dense(ei, w.detach(), n).sum(1))


@pytest.mark.parametrize("order", ["random", "by_target"])
def test_a_multigraph_with_more_entries_than_n_squared_has_its_weight_gradient(
        order: str) -> None:
    """torch's sampled product fails when the entries outnumber the matrix's n^2 cells
    (repeated edges); the operator takes the per-edge products there."""
    n, ei = 5, _edges(5, 60, seed=2)
    if order == "by_target":
        ei = ei[:, torch.argsort(ei[1], stable=True)]
    assert ei.size(1) > n * n
    g = torch.Generator().manual_seed(3)
    w = torch.rand(ei.size(1), generator=g, dtype=torch.float64, requires_grad=True)
    x = torch.randn(n, 2, generator=g, dtype=torch.float64)
    up = torch.randn(n, 2, generator=g, dtype=torch.float64)
    (EdgeOperator(ei, n)(w, x) * up).sum().backward()
    ref_w = w.detach().clone().requires_grad_()
    ((_dense(ei, ref_w, n) @ x) * up).sum().backward()
    torch.testing.assert_close(w.grad, ref_w.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("index", [torch.int32, torch.int64])
def test_the_sampled_product_in_row_blocks_gives_torchs_floats(
        dtype: torch.dtype, index: torch.dtype) -> None:
    """Blocks of whole rows (one entry a block, rows longer than a block, empty rows) give
    the same floats, bit for bit, as torch's one call; so does a row with more entries than
    the matrix has columns (a multigraph), which goes to that call."""
    g = torch.Generator().manual_seed(4)
    n = 40
    keys = torch.unique(torch.randint(0, n * n, (700,), generator=g))
    keys = keys[(keys // n) % 7 != 3]  # some empty rows
    crow = torch.searchsorted(keys // n, torch.arange(n + 1)).to(index)
    pattern = csr_tensor(crow, (keys % n).to(index), torch.ones(keys.numel(), dtype=dtype),
                         (n, n))
    a, b = torch.randn(n, 16, generator=g, dtype=dtype), torch.randn(16, n, generator=g,
                                                                      dtype=dtype)
    whole = torch.sparse.sampled_addmm(pattern, a, b, beta=0.0).values()
    for chunk in (1, 7, 40, 333, 1 << 22):
        assert torch.equal(_sampled_values(pattern, a, b, chunk), whole)
    rows = torch.tensor([0, 6, 6, 7, 8], dtype=index)  # row 0: 6 entries in 4 columns
    multi = csr_tensor(rows, torch.tensor([0, 1, 2, 3, 0, 1, 2, 3], dtype=index),
                       torch.ones(8, dtype=dtype), (4, 4))
    a, b = a[:4], b[:, :4]
    assert torch.equal(_sampled_values(multi, a, b, 2),
                       torch.sparse.sampled_addmm(multi, a, b, beta=0.0).values())


def test_the_weight_gradient_is_the_same_in_any_block_size() -> None:
    n, ei = 30, _edges(30, 500, seed=5)
    op = EdgeOperator(ei, n)
    g = torch.Generator().manual_seed(6)
    w, x = torch.rand(ei.size(1), generator=g), torch.randn(n, 8, generator=g)
    up = torch.randn(n, 8, generator=g)
    whole = op.weight_grad(op.matrix(w), up, x)
    for chunk in (1, 13, 100):
        assert torch.equal(op.weight_grad(op.matrix(w), up, x, chunk=chunk), whole)
    torch.testing.assert_close(whole, op.edge_dot(up, x))


def test_gradcheck_in_both_inputs() -> None:
    n, ei = 6, _edges(6, 15, seed=3)
    op = EdgeOperator(ei, n)
    w = torch.rand(ei.size(1), dtype=torch.float64, requires_grad=True)
    x = torch.randn(n, 2, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: op(a, b), (w, x))


@pytest.mark.parametrize("order", ["random", "by_target"])
def test_int32_indices_are_kept_and_give_the_same_sums(order: str) -> None:
    """An int32 edge list stays int32 (half the index memory) and gives bit for bit the
    products and gradients of the same list in int64."""
    n, ei = 9, _edges(e=60)
    if order == "by_target":
        ei = ei[:, torch.argsort(ei[1], stable=True)]
    g = torch.Generator().manual_seed(4)
    w0, x0 = torch.rand(ei.size(1), generator=g), torch.randn(n, 3, generator=g)
    up = torch.randn(n, 3, generator=g)
    results = []
    for dtype in (torch.int64, torch.int32):
        op = EdgeOperator(ei.to(dtype), n)
        parts = [op.src, op.dst, op.crow, op.col, op.crow_t, op.col_t, op.perm_t]
        parts += [op.perm] if order == "random" else []
        assert all(t.dtype == dtype for t in parts)
        w, x = w0.clone().requires_grad_(), x0.clone().requires_grad_()
        out = op(w, x)
        (out * up).sum().backward()
        results.append((out.detach(), w.grad, x.grad, op.in_degree(w0)))
    for a, b in zip(*results, strict=True):
        assert torch.equal(a, b)


def test_bad_shapes_are_errors() -> None:
    op = EdgeOperator(_edges(), 9)
    with pytest.raises(ValueError, match="one value per edge"):
        op(torch.ones(3), torch.ones(9, 2))
    with pytest.raises(ValueError, match=r"x must be \[9, d\]"):
        op(torch.ones(op.num_edges), torch.ones(8, 2))
    with pytest.raises(GraphError):
        EdgeOperator(torch.tensor([[0, 9], [1, 2]]), 9)
    with pytest.raises(GraphError, match="self-loops"):
        WeightedGNN.operator(torch.tensor([[0, 1], [0, 2]]), 3)


def test_weighted_gcn_is_pyg_gcnconv() -> None:
    """Same draw (seeded construction), same output and gradients as GCNConv with edge
    weights: the only difference is the order of the float sums."""
    n, ei = 9, _edges()
    g = torch.Generator().manual_seed(2)
    x = torch.randn(n, 5, generator=g)
    w = torch.rand(ei.size(1), generator=g)
    torch.manual_seed(7)
    ours = _WeightedGCN(5, 4)
    torch.manual_seed(7)
    pyg = GCNConv(5, 4)
    assert list(ours.state_dict()) == list(pyg.state_dict())
    for k, v in pyg.state_dict().items():
        assert torch.equal(ours.state_dict()[k], v)
    with torch.no_grad():
        ours.bias.uniform_(-1, 1, generator=g)
        pyg.bias.copy_(ours.bias)
    w1, w2 = w.clone().requires_grad_(), w.clone().requires_grad_()
    op = EdgeOperator(ei, n)
    edge_norm, self_norm = _gcn_norm(op, w1)
    out = ours(x, op.bind(edge_norm), self_norm)
    ref = pyg(x, ei, w2)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    up = torch.randn(n, 4, generator=g)
    (out * up).sum().backward()
    (ref * up).sum().backward()
    torch.testing.assert_close(w1.grad, w2.grad, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(ours.lin.weight.grad, pyg.lin.weight.grad, rtol=1e-4, atol=1e-6)


def test_weighted_sage_is_the_weighted_mean() -> None:
    n, ei = 9, _edges()
    ei = ei[:, ei[1] != 8]  # node 8 has no in-edges
    g = torch.Generator().manual_seed(4)
    x = torch.randn(n, 5, generator=g)
    w = torch.rand(ei.size(1), generator=g)
    w[:3] = 0.0
    model = WeightedGNN("sage", 5, 3, hidden=4, dropout=0.0)
    conv = model.conv1
    a = _dense(ei, w, n)
    deg = a.sum(1)
    h = conv.lin_l(x)
    expected = torch.where(deg[:, None] > 1e-12, (a @ h) / deg.clamp_min(1e-12)[:, None],
                           conv.lin_l.bias.expand_as(h)) + conv.lin_r(x)
    op = EdgeOperator(ei, n)
    torch.testing.assert_close(conv(x, op.bind(w), op.in_degree(w)), expected)
    # a node without in-edges keeps W_l's bias (plus W_r x)
    torch.testing.assert_close(expected[8], conv.lin_l.bias + conv.lin_r(x)[8])


def test_model_takes_an_edge_list_or_its_operator() -> None:
    n, ei = 9, _edges()
    x = torch.randn(n, 5, generator=torch.Generator().manual_seed(5))
    w = torch.rand(ei.size(1), generator=torch.Generator().manual_seed(6))
    for kind in ("gcn", "sage"):
        model = WeightedGNN(kind, 5, 3, hidden=4, dropout=0.0)
        assert torch.equal(model(x, ei, w), model(x, WeightedGNN.operator(ei, n), w))


def test_gpu_gather_path_forced_on_the_cpu_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU's deterministic path (gathers, forced here) and the CPU's (sparse products,
    sampled_addmm) give the same product and gradients."""
    from dpgl.graph import propagation
    n, ei = 9, _edges()
    op = EdgeOperator(ei, n)
    g = torch.Generator().manual_seed(8)
    w0, x0 = torch.rand(ei.size(1), generator=g), torch.randn(n, 3, generator=g)
    results, calls = [], []
    real = EdgeOperator.edge_dot
    monkeypatch.setattr(EdgeOperator, "edge_dot",
                        lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    for forced in (False, True):
        monkeypatch.setattr(propagation, "uses_gather", lambda x, f=forced: f)
        w, x = w0.clone().requires_grad_(), x0.clone().requires_grad_()
        out = op(w, torch.tanh(x))
        (out * torch.arange(3.0)).sum().backward()
        results.append((out.detach(), w.grad, x.grad))
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b)
    assert calls == [1]  # the gradient in w took each path once


def test_a_bound_operator_builds_each_matrix_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both layers of a GNN share one A(w): one forward and backward of the two-layer model
    builds A once and A^T once (each is a permuted copy of the weights on a large graph)."""
    n, ei = 9, _edges()
    x = torch.randn(n, 5, generator=torch.Generator().manual_seed(9), requires_grad=True)
    w = torch.rand(ei.size(1), generator=torch.Generator().manual_seed(10), requires_grad=True)
    built: list[bool] = []
    real = EdgeOperator.matrix
    monkeypatch.setattr(EdgeOperator, "matrix",
                        lambda self, weight, *, transpose=False:
                        built.append(transpose) or real(self, weight, transpose=transpose))
    for kind in ("gcn", "sage"):
        built.clear()
        model = WeightedGNN(kind, 5, 3, hidden=4, dropout=0.0)
        model(x, WeightedGNN.operator(ei, n), w).sum().backward()
        assert sorted(built) == [False, True]
