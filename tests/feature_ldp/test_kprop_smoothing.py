"""KProp (LPGNN Alg. 2), the LPGNN model, label propagation and Solitude smoothing."""

import numpy as np
import pytest
import torch

from dpgl.errors import ConfigError
from dpgl.estimators.smoothing import denoise_labels, feature_smoothing, propagate_labels
from dpgl.mechanisms.features import FeatureRandomizer
from dpgl.nn import PreparedGraph
from dpgl.nn.kprop import KPropGNN, LabelPropagationHead, centred_sparse, kprop, kprop_matrix

# path 0 - 1 - 2 - 3 plus a self-loop on node 1 that KProp must ignore
PATH = torch.tensor([[0, 1, 1, 2, 2, 3, 1], [1, 0, 2, 1, 3, 2, 1]])


def _dense(adj: torch.Tensor) -> torch.Tensor:
    return adj.to_dense()


def test_kprop_excludes_self_loops_by_default() -> None:
    for agg in ("gcn", "mean"):
        a = _dense(kprop_matrix(PATH, 4, aggregator=agg))
        assert torch.all(torch.diagonal(a) == 0)
        b = _dense(kprop_matrix(PATH, 4, aggregator=agg, self_loops=True))
        assert torch.all(torch.diagonal(b) > 0)
    mean = _dense(kprop_matrix(PATH, 4, aggregator="mean"))
    x = torch.tensor([[1.0], [10.0], [100.0], [1000.0]])
    # node 1 averages nodes 0 and 2 only: its own value 10 never enters
    assert (mean @ x)[1, 0].item() == pytest.approx(50.5)
    gcn = _dense(kprop_matrix(PATH, 4, aggregator="gcn"))
    assert gcn[0, 1].item() == pytest.approx(1 / np.sqrt(1 * 2))
    with pytest.raises(Exception, match="aggregator"):
        kprop_matrix(PATH, 4, aggregator="max")


def test_kprop_steps_compose() -> None:
    adj = kprop_matrix(PATH, 4, aggregator="mean")
    x = torch.randn(4, 3)
    assert torch.allclose(kprop(x, adj, 2), adj @ (adj @ x), atol=1e-6)
    assert torch.equal(kprop(x, adj, 0), x)
    with pytest.raises(ConfigError):
        kprop(x, adj, -1)


def test_kprop_aggregate_of_multibit_reports_is_unbiased() -> None:
    # E[AGG(x')] = AGG(x) because the aggregation is linear and x' is unbiased.
    x = torch.rand(4, 5, generator=torch.Generator().manual_seed(0)).double()
    adj = kprop_matrix(PATH, 4, aggregator="mean").to(torch.float64)
    rand = FeatureRandomizer(1.0, 5, "multibit")
    rng = np.random.default_rng(0)
    reps = 20000
    xs = rand.privatize(np.tile(x.numpy(), (reps, 1)), rng)[0].reshape(reps, 4, 5)
    agg = np.einsum("ij,rjk->rik", adj.to_dense().numpy(), xs)
    mean = agg.mean(axis=0)
    se = agg.std(axis=0) / np.sqrt(agg.shape[0])
    assert np.all(np.abs(mean - (adj @ x).numpy()) < 5 * se)


def test_kprop_gnn_shapes_and_label_head() -> None:
    torch.manual_seed(0)
    x = torch.rand(4, 6)
    graph = PreparedGraph(PATH[:, :6], 4)
    net = KPropGNN(6, 3, hidden=8, dropout=0.0, batch_norm=True)
    xk = kprop(x, kprop_matrix(PATH, 4), 2)
    assert net(xk, graph).shape == (4, 3)
    t = torch.full((3, 3), 0.1) + 0.7 * torch.eye(3)
    head = LabelPropagationHead(net, kprop_matrix(PATH, 4), 2, t)
    head.eval()
    assert torch.allclose(head(xk, graph), net(xk, graph))
    head.train()
    logp = head(xk, graph)
    assert torch.allclose(logp.exp().sum(-1), torch.ones(4), atol=1e-5)
    with pytest.raises(ConfigError):
        LabelPropagationHead(net, None, 2)


def test_label_smoothing_corrects_an_isolated_error() -> None:
    # star: centre 0 with leaves 1..4; the centre's noisy label is wrong, leaves agree
    ei = torch.tensor([[0, 0, 0, 0, 1, 2, 3, 4], [1, 2, 3, 4, 0, 0, 0, 0]])
    n = 6  # node 5 is isolated
    y_noisy = torch.tensor([2, 1, 1, 1, 1, 0])
    labelled = torch.arange(6)
    adj = kprop_matrix(ei, n)
    out = denoise_labels(y_noisy, labelled, 3, adj, 1)
    assert out[0].item() == 1          # corrected by its neighbours
    assert out[5].item() == 0          # isolated: keeps its own noisy label
    assert torch.equal(denoise_labels(y_noisy, labelled, 3, adj, 0), y_noisy)
    probs = propagate_labels(y_noisy, labelled, 3, adj, 1)
    assert torch.allclose(probs.sum(-1), torch.ones(n))
    # unlabelled nodes contribute nothing
    only_leaf = denoise_labels(y_noisy, torch.tensor([0, 1]), 3, adj, 1)
    assert only_leaf[0].item() == 1


def test_feature_smoothing_is_kprop() -> None:
    x = torch.rand(4, 2)
    adj = kprop_matrix(PATH, 4)
    assert torch.allclose(feature_smoothing(x, PATH, 4, 3), kprop(x, adj, 3))
    assert torch.equal(feature_smoothing(x, PATH, 4, 0), x)


def test_factorized_kprop_layer_equals_precomputed() -> None:
    torch.manual_seed(0)
    x = (torch.rand(4, 6) > 0.5).float()  # reports in {0, 1}: centre 1/2
    adj = kprop_matrix(PATH, 4)
    graph = PreparedGraph(PATH[:, :6], 4)
    pre = KPropGNN(6, 3, hidden=5, dropout=0.0, batch_norm=False)
    fac = KPropGNN(6, 3, hidden=5, dropout=0.0, batch_norm=False, propagate=(adj, 3),
                   center=0.5)
    fac.load_state_dict(pre.state_dict())
    out_pre = pre(kprop(x, adj, 3), graph)
    out_fac = fac(centred_sparse(x, 0.5), graph)
    assert torch.allclose(out_pre, out_fac, atol=1e-5)
    out_fac.sum().backward()
    assert fac.lin1.weight.grad is not None
