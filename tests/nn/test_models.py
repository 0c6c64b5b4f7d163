import numpy as np
import pytest
import torch
from torch_geometric.nn import GATConv, GCNConv, SAGEConv

from dpgl.errors import ConfigError
from dpgl.nn import ModelConfig, PreparedGraph, build_node_model
from dpgl.nn.gat import WeightedGATConv
from dpgl.nn.gin import GIN


def _graph(n: int = 15, seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < 0.25, 1)
    a = a | a.T
    return torch.tensor(np.stack(np.nonzero(a)))


def test_gcn_layer_on_csr_equals_pyg_message_passing() -> None:
    torch.manual_seed(0)
    ei, x = _graph(), torch.randn(15, 5)
    ref = GCNConv(5, 3)  # normalizes and adds self-loops itself, on the edge list
    ours = GCNConv(5, 3, normalize=False, add_self_loops=False)
    ours.load_state_dict(ref.state_dict())
    g = PreparedGraph(ei, 15)
    torch.testing.assert_close(ours(x, g.gcn_adj()), ref(x, ei), rtol=1e-5, atol=1e-5)


def test_sage_layer_on_mean_csr_equals_pyg_mean_aggregation() -> None:
    torch.manual_seed(0)
    ei, x = _graph(seed=1), torch.randn(15, 5)
    ref = SAGEConv(5, 3, aggr="mean")
    ours = SAGEConv(5, 3, aggr="sum")
    ours.load_state_dict(ref.state_dict())
    g = PreparedGraph(ei, 15)
    torch.testing.assert_close(ours(x, g.mean_adj()), ref(x, ei), rtol=1e-5, atol=1e-5)


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
