import numpy as np
import pytest
import torch
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

from dpgl.errors import ConfigError
from dpgl.nn import ModelConfig, PreparedGraph, build_node_model
from dpgl.nn.gat import WeightedGATConv
from dpgl.nn.gin import GIN
from dpgl.nn.layers import GCNLayer, SAGELayer, sparse_features


def _graph(n: int = 15, seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < 0.25, 1)
    a = a | a.T
    return torch.tensor(np.stack(np.nonzero(a)))


def _check_against_pyg(ours: torch.nn.Module, ref: torch.nn.Module, adj, ei, x) -> None:
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_()
    ours.load_state_dict(ref.state_dict())
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    out_ours, out_ref = ours(xa, adj), ref(xb, ei)
    torch.testing.assert_close(out_ours, out_ref, rtol=1e-5, atol=1e-5)
    weights = torch.randn_like(out_ref)
    (out_ours * weights).sum().backward()
    (out_ref * weights).sum().backward()
    torch.testing.assert_close(xa.grad, xb.grad, rtol=1e-5, atol=1e-5)  # custom sparse backward
    for (name, pa), pb in zip(ours.named_parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(pa.grad, pb.grad, rtol=1e-4, atol=1e-5, msg=name)


@pytest.mark.parametrize("in_dim", [5, 2])
def test_gcn_layer_equals_pyg_gcnconv_values_and_gradients(in_dim: int) -> None:
    torch.manual_seed(0)
    ei, x = _graph(), torch.randn(15, in_dim)
    g = PreparedGraph(ei, 15)  # PyG normalizes and adds self-loops itself, on the edge list
    _check_against_pyg(GCNLayer(in_dim, 3), GCNConv(in_dim, 3), g.gcn_adj(), ei, x)


@pytest.mark.parametrize("in_dim", [5, 2])
def test_sage_layer_equals_pyg_mean_sageconv_values_and_gradients(in_dim: int) -> None:
    torch.manual_seed(0)
    ei, x = _graph(seed=1), torch.randn(15, in_dim)
    g = PreparedGraph(ei, 15)
    _check_against_pyg(SAGELayer(in_dim, 3), SAGEConv(in_dim, 3, aggr="mean"), g.mean_adj(), ei, x)


def test_sparse_operator_gradient_on_directed_weighted_graph() -> None:
    ei = torch.tensor([[0, 0, 1, 2, 3], [1, 2, 2, 3, 0]])
    w = torch.tensor([0.5, 2.0, 1.0, 3.0, 0.25])
    op = PreparedGraph(ei, 4, w).mean_adj()
    dense = op.to_dense()
    x = torch.randn(4, 3, requires_grad=True)
    (op @ x).pow(2).sum().backward()
    x2 = x.detach().clone().requires_grad_()
    (dense @ x2).pow(2).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)


def test_weighted_gat_with_unit_weights_equals_pyg_gat() -> None:
    torch.manual_seed(0)
    ei, x = _graph(seed=2), torch.randn(15, 5)
    ref = GATConv(5, 3, heads=1)
    ours = WeightedGATConv(5, 3)
    with torch.no_grad():
        ours.lin.weight.copy_(ref.lin.weight)
        ours.att_src.copy_(ref.att_src.view(-1))
        ours.att_dst.copy_(ref.att_dst.view(-1))
        ours.bias.copy_(torch.randn(3))
        ref.bias.copy_(ours.bias)
    torch.testing.assert_close(ours(x, ei), ref(x, ei), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(
        ours(x, ei, torch.ones(ei.size(1))), ref(x, ei), rtol=1e-5, atol=1e-5
    )


def test_weighted_gat_matches_dense_blink_formula() -> None:
    """Blink App. B Eq. 24: alpha_ij = w_ij e^{e_ij} / sum_k w_ik e^{e_ik}; out = sum w alpha h."""
    torch.manual_seed(1)
    ei, x = _graph(seed=4), torch.randn(15, 4)
    w = torch.rand(ei.size(1)) + 0.05
    layer = WeightedGATConv(4, 2)
    with torch.no_grad():
        layer.bias.normal_()
    W = torch.zeros(15, 15)
    W[ei[1], ei[0]] = w  # row = target
    W += torch.eye(15)
    h = layer.lin(x)
    e = torch.nn.functional.leaky_relu(
        (h * layer.att_dst).sum(-1)[:, None] + (h * layer.att_src).sum(-1)[None, :], 0.2
    )
    alpha = W * torch.exp(e)
    alpha = alpha / alpha.sum(1, keepdim=True)
    expected = (W * alpha) @ h + layer.bias
    torch.testing.assert_close(layer(x, ei, w), expected, rtol=1e-4, atol=1e-5)


def test_zero_weight_edge_is_ignored_by_weighted_layers() -> None:
    torch.manual_seed(0)
    ei, x = _graph(seed=5), torch.randn(15, 4)
    w = torch.ones(ei.size(1))
    w[:4] = 0.0
    kept = PreparedGraph(ei[:, 4:], 15)
    weighted = PreparedGraph(ei, 15, w)
    for kind in ("gcn", "sage", "gat"):
        m = build_node_model(kind, 4, 3).eval()
        torch.testing.assert_close(m(x, weighted), m(x, kept), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["mlp", "gcn", "sage", "gat", "graphsage"])
def test_models_build_and_run(kind: str) -> None:
    m = build_node_model(
        kind, 6, 4, ModelConfig(hidden=8, num_layers=3, batch_norm=True, activation="selu")
    )
    out = m(torch.randn(15, 6), PreparedGraph(_graph(), 15))
    assert out.shape == (15, 4)
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())


def test_unknown_model_and_bad_config() -> None:
    with pytest.raises(ConfigError, match=r"unknown model 'gin2'.*gcn"):
        build_node_model("gin2", 3, 2)
    with pytest.raises(ConfigError, match="dropout"):
        ModelConfig(dropout=1.5)
    with pytest.raises(ConfigError, match="activation"):
        ModelConfig(activation="swish")


def test_gin_shapes_and_mean_readout() -> None:
    torch.manual_seed(0)
    model = GIN(1, 3, hidden=8, num_layers=2).eval()
    ei = _graph(10)
    x = torch.ones(20, 1)
    batch = torch.cat([torch.zeros(10), torch.ones(10)]).long()
    both = torch.cat([ei, ei + 10], 1)
    out = model(x, both, batch)
    assert out.shape == (2, 3)
    torch.testing.assert_close(out[0], out[1])  # identical graphs, identical scores


@pytest.mark.parametrize("kind", ["mlp", "gcn", "sage", "gat"])
def test_sparse_features_give_the_same_outputs_and_gradients(kind: str) -> None:
    torch.manual_seed(0)
    x = (torch.rand(15, 300) < 0.02).float()
    sparse = sparse_features(x)
    assert not isinstance(sparse, torch.Tensor)  # wide and sparse -> operator
    g = PreparedGraph(_graph(seed=6), 15)
    model = build_node_model(kind, 300, 3, ModelConfig(hidden=8)).eval()
    dense_out = model(x, g)
    grads_dense = torch.autograd.grad(dense_out.pow(2).sum(), list(model.parameters()))
    sparse_out = model(sparse, g)
    grads_sparse = torch.autograd.grad(sparse_out.pow(2).sum(), list(model.parameters()))
    torch.testing.assert_close(sparse_out, dense_out, rtol=1e-5, atol=1e-5)
    for a, b in zip(grads_sparse, grads_dense, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_dense_or_narrow_features_stay_dense() -> None:
    assert isinstance(sparse_features(torch.rand(10, 300)), torch.Tensor)
    assert isinstance(sparse_features((torch.rand(10, 20) < 0.01).float()), torch.Tensor)
