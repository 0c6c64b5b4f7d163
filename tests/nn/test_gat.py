"""dpgl.nn.gat: the weighted GAT layer through AttentionEdges (one value per edge, the messages'
sum a sparse product) against the edge-list formula (a gather of W h_j per edge), in values
and gradients, and its memory bound: nothing of E x d is kept for the backward pass."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.utils import softmax

from dpgl.nn import PreparedGraph, build_node_model
from dpgl.nn.gat import AttentionEdges, WeightedGATConv


def _edges(n: int, e: int, seed: int, *, sorted_by_target: bool) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    dst = torch.randint(0, n, (e,), generator=g)
    src = torch.randint(0, n - 1, (e,), generator=g)
    src = src + (src >= dst).long()
    ei = torch.stack([src, dst])
    return ei[:, torch.argsort(dst, stable=True)] if sorted_by_target else ei


def _gather_reference(layer: WeightedGATConv, x, ei, w):
    """The layer as an edge list (its code until 2026-11-28, PyG's GATConv's way): W h_j
    gathered for every edge."""
    h = layer.lin(x)
    n = h.size(0)
    loops = torch.arange(n)
    src, dst = torch.cat([ei[0], loops]), torch.cat([ei[1], loops])
    w = torch.ones(src.numel()) if w is None else torch.cat([w, torch.ones(n)])
    logits = F.leaky_relu((h * layer.att_src).sum(-1)[src] + (h * layer.att_dst).sum(-1)[dst],
                          layer.negative_slope)
    alpha = softmax(logits + torch.log(w.clamp_min(1e-30)), dst, num_nodes=n)
    return torch.zeros_like(h).index_add_(0, dst, (w * alpha).unsqueeze(-1) * h[src]) + layer.bias


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("sorted_by_target", [False, True])
def test_layer_equals_the_edge_list_formula_in_values_and_gradients(weighted,
                                                                   sorted_by_target) -> None:
    torch.manual_seed(0)
    n, e = 40, 300
    ei = _edges(n, e, seed=1, sorted_by_target=sorted_by_target)
    w = (torch.rand(e) * 2) if weighted else None
    if weighted:
        w[:20] = 0.0  # dropped edges
    layer = WeightedGATConv(7, 5)
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(n, 7)
    edges = AttentionEdges.build(ei, n, w)
    assert edges.op.perm is None  # built sorted by target: no permutation kept
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ours, ref = layer(xa, edges), _gather_reference(layer, xb, ei, w)
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)
    probe = torch.randn_like(ref)
    got = torch.autograd.grad((ours * probe).sum(), [xa, *layer.parameters()])
    want = torch.autograd.grad((ref * probe).sum(), [xb, *layer.parameters()])
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    # the edge list prepared on the spot gives the same
    torch.testing.assert_close(layer(x, ei, w), ours.detach())


@pytest.mark.parametrize("weighted", [False, True])
def test_int32_attention_edges_give_the_int64_layers_floats(weighted) -> None:
    """The attention edges are int32 (half the index memory); the same edges in int64 give
    the same logits and gradients bit for bit."""
    import dataclasses

    from dpgl.graph.edge_operator import EdgeOperator
    torch.manual_seed(0)
    n, e = 40, 300
    ei = _edges(n, e, seed=2, sorted_by_target=False)
    edges = AttentionEdges.build(ei, n, torch.rand(e) if weighted else None)
    assert edges.op.src.dtype == edges.op.crow.dtype == torch.int32
    wide = dataclasses.replace(edges, op=EdgeOperator(
        torch.stack([edges.op.src, edges.op.dst]).long(), n))
    assert wide.op.crow.dtype == torch.int64
    layer = WeightedGATConv(7, 5)
    x = torch.randn(n, 7)
    outs = [layer(x, g) for g in (edges, wide)]
    assert torch.equal(outs[0], outs[1])
    grads = [torch.autograd.grad(o.square().sum(), list(layer.parameters())) for o in outs]
    assert all(torch.equal(a, b) for a, b in zip(*grads, strict=True))


def test_unit_weights_and_no_weights_are_the_same_layer() -> None:
    torch.manual_seed(0)
    ei, x = _edges(20, 120, seed=3, sorted_by_target=False), torch.randn(20, 4)
    layer = WeightedGATConv(4, 3)
    plain = AttentionEdges.build(ei, 20)
    assert plain.weight is None and plain.log_weight is None
    torch.testing.assert_close(layer(x, plain), layer(x, AttentionEdges.build(ei, 20,
                                                                              torch.ones(120))))


@pytest.mark.parametrize("weighted", [False, True])
def test_attention_gradients_pass_gradcheck_in_float64(weighted) -> None:
    """The attention's hand-written backward (recomputed softmax, closed-form gradient)
    against finite differences, in the per-node scores and in h."""
    from dpgl.nn.gat import _Attend
    torch.manual_seed(0)
    n, e = 12, 60
    ei = _edges(n, e, seed=5, sorted_by_target=False)
    w = torch.rand(e, dtype=torch.float64) + 0.1 if weighted else None
    edges = AttentionEdges.build(ei, n, w)
    if weighted:  # the float64 weights (build keeps float32 for the float32 layers)
        import dataclasses
        wt = edges.weight.double()
        edges = dataclasses.replace(edges, weight=wt, log_weight=torch.log(wt))
    s, d = torch.randn(n, dtype=torch.float64), torch.randn(n, dtype=torch.float64)
    h = torch.randn(n, 3, dtype=torch.float64)
    args = [t.clone().requires_grad_() for t in (s, d, h)]
    assert torch.autograd.gradcheck(lambda a, b, c: _Attend.apply(a, b, c, edges, 0.2), args)


def test_nothing_per_edge_is_kept_for_the_backward_pass() -> None:
    """The point of the layer: saved tensors are O(n d), never E x d and not even one value
    per edge (the attention is recomputed in the backward pass)."""
    torch.manual_seed(0)
    n, e, d = 50, 2000, 32
    ei = _edges(n, e, seed=4, sorted_by_target=True)
    layer, x = WeightedGATConv(16, d), torch.randn(n, 16, requires_grad=True)
    edges = AttentionEdges.build(ei, n, torch.rand(e))
    saved: list[int] = []

    def pack(t):
        saved.append(t.numel())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(x, edges)
    assert saved and max(saved) <= n * d < e
    out.sum().backward()  # and the backward pass runs
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        saved.clear()
        _gather_reference(layer, x, ei, torch.rand(e))
    assert max(saved) >= (e + n) * d  # what the edge-list form keeps (the test can fail)


def test_prepared_graph_builds_the_attention_edges_once() -> None:
    ei = _edges(10, 30, seed=5, sorted_by_target=False)
    graph = PreparedGraph(ei, 10, torch.rand(30))
    assert graph.attention_edges() is graph.attention_edges()
    model = build_node_model("gat", 4, 3).eval()
    x = torch.randn(10, 4)
    torch.testing.assert_close(model(x, graph), model(x, PreparedGraph(ei, 10,
                                                                       graph.edge_weight)))


def test_mismatched_inputs_are_clear_errors() -> None:
    ei = _edges(10, 30, seed=6, sorted_by_target=False)
    layer = WeightedGATConv(4, 3)
    with pytest.raises(ValueError, match="on 10 nodes, x has 12 rows"):
        layer(torch.randn(12, 4), AttentionEdges.build(ei, 10))
    with pytest.raises(ValueError, match="edge_weight goes with an edge list"):
        layer(torch.randn(10, 4), AttentionEdges.build(ei, 10), torch.ones(30))
