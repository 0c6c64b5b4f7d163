"""Mini-batch training with neighbour sampling (issue #15): the sampler's output contract, its
uniformity, exactness of full-fanout batches and of layer-wise inference against the
full-batch forward, the trainer's determinism, and the configuration's one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.nn import GCNConv

from dpgl.errors import ConfigError
from dpgl.methods import get_method
from dpgl.nn import ModelConfig, PreparedGraph, build_node_model
from dpgl.train import TrainConfig, train_node_classifier
from dpgl.train.minibatch import (
    FeatureRows,
    MiniBatchConfig,
    layerwise_inference,
    node_loader,
    train_node_minibatch,
)
from dpgl.train.sampling import UniformNeighbourSampler


def _graph(n: int = 300, p: float = 0.03, seed: int = 0, directed: bool = True):
    """A random directed graph with edge weights in (0, 1], features and two classes."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], n // 2)
    same = y[:, None] == y[None, :]
    a = rng.random((n, n)) < np.where(same, 2 * p, p / 4)
    np.fill_diagonal(a, False)
    if not directed:
        a = np.triu(a, 1)
        a = a | a.T
    ei = torch.tensor(np.stack(np.nonzero(a)), dtype=torch.long)
    w = torch.from_numpy(rng.uniform(0.05, 1.0, ei.size(1)).astype(np.float32))
    x = torch.from_numpy((rng.normal(size=(n, 6)) + 0.4 * y[:, None]).astype(np.float32))
    return x, torch.from_numpy(y), ei, w


# ----------------------------------------------------------------------------- the sampler


def test_sampler_output_contract_real_edges_fanout_weights_and_seeds_first() -> None:
    x, _, ei, w = _graph()
    n = x.size(0)
    g = PreparedGraph(ei, n, w)
    fanout = (3, 2)
    loader = node_loader(g, n, torch.arange(0, n, 2), 40, fanout, shuffle=True, seed=5)
    in_deg = torch.bincount(ei[1], minlength=n)
    edges = {(int(s), int(t)) for s, t in ei.t()}
    seen_seeds = []
    for batch in loader:
        n_id, size = batch.n_id, int(batch.batch_size)
        assert n_id.unique().numel() == n_id.numel()  # every node once
        seen_seeds.append(n_id[:size])
        src, dst = n_id[batch.edge_index[0]], n_id[batch.edge_index[1]]
        # the sampled edges are real edges, named by their ids, with their weights
        assert torch.equal(ei[:, batch.e_id], torch.stack([src, dst]))
        assert all((int(s), int(t)) in edges for s, t in zip(src, dst, strict=True))
        assert torch.equal(batch.edge_weight, w[batch.e_id])
        assert batch.e_id.unique().numel() == batch.e_id.numel()  # without replacement
        # hop 1: every seed gets min(deg, 3) in-edges; hop 2: the new nodes min(deg, 2)
        hops = batch.num_sampled_nodes
        assert hops[0] == size and sum(hops) == n_id.numel()
        got = torch.bincount(batch.edge_index[1], minlength=n_id.numel())
        seeds, first = n_id[:size], n_id[size:size + hops[1]]
        assert torch.equal(got[:size], in_deg[seeds].clamp(max=fanout[0]))
        assert torch.equal(got[size:size + hops[1]], in_deg[first].clamp(max=fanout[1]))
        assert int(got[size + hops[1]:].sum()) == 0  # the last hop is not expanded
        assert batch.num_sampled_edges == [int(got[:size].sum()),
                                           int(got[size:size + hops[1]].sum())]
    assert torch.equal(torch.cat(seen_seeds).sort().values, torch.arange(0, n, 2))


def _draws(seed: int) -> list[torch.Tensor]:
    x, _, ei, w = _graph()
    loader = node_loader(PreparedGraph(ei, x.size(0), w), x.size(0), torch.arange(x.size(0)),
                         64, (4, 4), shuffle=True, seed=seed)
    return [b.e_id for b in loader]


def test_sampler_and_batch_order_are_deterministic_given_the_seed() -> None:
    a, b, c = _draws(1), _draws(1), _draws(2)
    assert len(a) == len(b) and all(torch.equal(u, v) for u, v in zip(a, b, strict=True))
    assert not all(u.numel() == v.numel() and torch.equal(u, v)
                   for u, v in zip(a, c, strict=True))


def test_sampler_draws_a_uniform_subset_without_replacement() -> None:
    """A node with 10 in-neighbours, fanout 3: each neighbour is drawn with probability 3/10
    and the 3 are distinct; a sampler biased to CSR order or drawing with replacement
    fails."""
    ei = torch.stack([torch.arange(1, 11), torch.zeros(10, dtype=torch.long)])
    sampler = UniformNeighbourSampler(ei, 11, (3,), seed=0)
    trials = 4000
    counts = torch.zeros(11)
    for _ in range(trials):
        out = sampler.sample_nodes(torch.tensor([0]))
        assert out.edge.unique().numel() == 3
        counts[out.node[out.row]] += 1
    freq = counts[1:] / trials
    # binomial sd of each frequency: sqrt(0.3 * 0.7 / 4000) = 0.0072; 5 sd
    assert torch.all((freq - 0.3).abs() < 0.036), freq


def test_sampler_refuses_repeated_seeds_and_link_sampling() -> None:
    ei = torch.tensor([[1, 2], [0, 0]])
    sampler = UniformNeighbourSampler(ei, 3, (1,))
    with pytest.raises(ConfigError, match="distinct"):
        sampler.sample_nodes(torch.tensor([0, 0]))
    with pytest.raises(NotImplementedError):
        sampler.sample_from_edges(None)


# ---------------------------------------------------------------------- exactness


@pytest.mark.parametrize("kind", ["gcn", "sage", "gat"])
def test_full_fanout_batch_of_all_nodes_equals_the_full_batch_forward(kind: str) -> None:
    x, _, ei, w = _graph()
    n = x.size(0)
    g = PreparedGraph(ei, n, w)
    torch.manual_seed(0)
    model = build_node_model(kind, x.size(1), 2).eval()
    batch = next(iter(node_loader(g, n, torch.randperm(n), n, (-1, -1), shuffle=False)))
    sub = PreparedGraph(batch.edge_index, n, batch.edge_weight)
    with torch.no_grad():
        full = model(x, g)
        mini = model(x[batch.n_id], sub)[: batch.batch_size]
    assert torch.allclose(mini, full[batch.n_id], atol=1e-5), (mini - full[batch.n_id]).abs().max()
    # a sampled batch is *not* the full graph: the check above can fail
    small = next(iter(node_loader(g, n, torch.arange(n), n, (1, 1), shuffle=False)))
    with torch.no_grad():
        sampled = model(x[small.n_id], PreparedGraph(small.edge_index, n, small.edge_weight))
    assert not torch.allclose(sampled[: small.batch_size], full[small.n_id], atol=1e-3)


def test_gcn_on_a_sampled_subgraph_is_pyg_gcnconv_with_the_sampled_weights() -> None:
    """Per-subgraph normalisation: dpgl's GCN layer on a sampled subgraph equals PyG's
    ``GCNConv`` (gcn_norm with ``edge_weight``) run on that subgraph."""
    x, _, ei, w = _graph()
    n = x.size(0)
    batch = next(iter(node_loader(PreparedGraph(ei, n, w), n, torch.arange(50), 50, (5,),
                                  shuffle=False)))
    torch.manual_seed(1)
    model = build_node_model("gcn", x.size(1), 3, ModelConfig(num_layers=1)).eval()
    conv = GCNConv(x.size(1), 3)
    conv.load_state_dict(model.layers[0].state_dict())
    xs = x[batch.n_id]
    with torch.no_grad():
        ours = model(xs, PreparedGraph(batch.edge_index, xs.size(0), batch.edge_weight))
        pyg = conv(xs, batch.edge_index, batch.edge_weight)
    assert torch.allclose(ours, pyg, atol=1e-5)


@pytest.mark.parametrize("kind", ["gcn", "sage", "gat", "mlp"])
@pytest.mark.parametrize("sparse", [False, True])
def test_layerwise_inference_equals_the_full_batch_forward(kind: str, sparse: bool) -> None:
    x, _, ei, w = _graph(directed=True)
    n = x.size(0)
    g = PreparedGraph(ei, n, w)
    torch.manual_seed(2)
    model = build_node_model(kind, x.size(1), 2, ModelConfig(num_layers=3, batch_norm=True))
    with torch.no_grad():  # non-trivial batch-norm statistics
        model.train()
        model(x, g)
    model.eval()
    rows = FeatureRows(sp.csr_matrix(x.numpy()) if sparse else x)
    with torch.no_grad():
        full = model(x, g)
        layered = layerwise_inference(model, rows, g, batch_size=37)
    assert torch.allclose(layered, full, atol=1e-5), (layered - full).abs().max()


# ------------------------------------------------------------------------- the trainer


def _train(seed: int, kind: str = "gcn", **batching):
    x, y, ei, w = _graph(n=200, directed=False)
    perm = torch.from_numpy(np.random.default_rng(0).permutation(200))
    model = build_node_model(kind, x.size(1), 2)
    before = torch.random.get_rng_state()
    result = train_node_minibatch(
        model, x, PreparedGraph(ei, 200, w), y, perm[:100], perm[100:150], perm[150:],
        TrainConfig(epochs=15, patience=5), MiniBatchConfig(**{"batch_size": 32, **batching}),
        seed=seed)
    assert torch.equal(before, torch.random.get_rng_state())  # no global seeding leaks out
    return result


@pytest.mark.parametrize("kind", ["gcn", "sage", "gat"])
def test_minibatch_trainer_learns_and_is_deterministic(kind: str) -> None:
    r1, r2 = _train(3, kind, fanout=(4, 4)), _train(3, kind, fanout=(4, 4))
    assert r1.metrics == r2.metrics and r1.best_epoch == r2.best_epoch
    assert r1.metrics["test_accuracy"] > 0.85
    assert 1 <= r1.best_epoch <= r1.epochs_run <= 15
    assert r1.history[-1]["batches_per_epoch"] == 4
    assert r1.timings["train"] > 0 and r1.timings["eval"] > 0


def test_minibatch_trainer_selection_matches_its_reported_validation_score() -> None:
    """The reported validation accuracy is the kept epoch's, from full-neighbour inference
    of the returned model."""
    x, y, ei, w = _graph(n=200, directed=False)
    perm = torch.from_numpy(np.random.default_rng(0).permutation(200))
    g = PreparedGraph(ei, 200, w)
    model = build_node_model("sage", x.size(1), 2)
    r = train_node_minibatch(model, x, g, y, perm[:100], perm[100:150], perm[150:],
                             TrainConfig(epochs=10, patience=None), MiniBatchConfig(50, (3, 3)),
                             seed=0)
    with torch.no_grad():
        pred = model.eval()(x, g).argmax(-1)
    assert r.metrics["val_accuracy"] == pytest.approx(float((pred[perm[100:150]]
                                                            == y[perm[100:150]]).float().mean()))


def test_minibatch_trainer_refuses_other_models_and_bad_fanout() -> None:
    x, y, ei, _ = _graph(n=40)
    idx = torch.arange(40)
    with pytest.raises(ConfigError, match="NodeModel"):
        train_node_minibatch(torch.nn.Linear(6, 2), x, None, y, idx, idx, idx, TrainConfig(),
                             MiniBatchConfig(8), seed=0)
    with pytest.raises(ConfigError, match="3 hop"):
        train_node_minibatch(build_node_model("gcn", 6, 2), x, PreparedGraph(ei, 40), y, idx,
                             idx, idx, TrainConfig(), MiniBatchConfig(8, (2, 2, 2)), seed=0)
    for bad in ((0, 2), (-2,), ()):
        with pytest.raises(ConfigError, match="fanout"):
            MiniBatchConfig(8, bad)
    with pytest.raises(ConfigError, match="batch_size"):
        MiniBatchConfig(0)


def test_full_batch_trainer_is_unchanged_by_the_shared_loop() -> None:
    """train_node_classifier now runs through train_with_selection: timings are reported and
    the numbers do not depend on the refactoring (deterministic, learns)."""
    x, y, ei, w = _graph(n=200, directed=False)
    perm = torch.from_numpy(np.random.default_rng(0).permutation(200))
    g = PreparedGraph(ei, 200, w)
    runs = [train_node_classifier(build_node_model("gcn", 6, 2), lambda m: m(x, g), y,
                                  perm[:100], perm[100:150], perm[150:],
                                  TrainConfig(epochs=30, patience=10), seed=4)
            for _ in range(2)]
    assert runs[0].metrics == runs[1].metrics
    assert set(runs[0].timings) == {"train", "eval"}


# ------------------------------------------------------------------- configuration


@pytest.mark.parametrize(("method", "params", "message"), [
    ("blink-hard", {"fanout": [10, 10]}, "parameter 'fanout': .*set batch_size"),
    ("blink-hard", {"batch_size": 64, "fanout": [10]}, "fanout lists 1 hop"),
    ("blink-hard", {"batch_size": 64, "fanout": [10, 0]}, "each >= 1 or -1"),
    ("none", {"batch_size": 0}, "parameter 'batch_size'"),
    ("gap-ndp", {"fanout": 5}, "DP-SGD methods draw their own Poisson batches"),
    ("features-dpsgd", {"fanout": [5, 5]}, "not covered by their accounting"),
    ("lpgnn", {"batch_size": 64}, "lpgnn trains its KProp model full batch"),
    ("solitude-link", {"batch_size": 64}, "Solitude learns the graph"),
])
def test_bad_minibatch_options_are_one_line_config_errors(method: str, params: dict,
                                                          message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        get_method(method).params_model("node").parse(params, method)
    assert "\n" not in str(err.value)


def test_minibatch_options_parse_and_describe() -> None:
    p = get_method("blink-hybrid").params_model("node").parse(
        {"batch_size": 512, "fanout": 10}, "blink-hybrid")
    assert p.fanout == [10, 10]
    batching = p.minibatch()
    assert batching is not None and batching.fanout == (10, 10) and batching.batch_size == 512
    assert get_method("none").params_model("node").parse({}, "none").minibatch() is None
    full = get_method("none").params_model("node").parse({"batch_size": 8, "num_layers": 3},
                                                         "none")
    assert full.minibatch() == MiniBatchConfig(8) and full.minibatch().fanouts(3) == (-1,) * 3
    # DP-SGD's batch size keeps its meaning (expected Poisson batch)
    assert get_method("gap-ndp").params_model("node").parse({}, "gap-ndp").batch_size == 256


def test_a_bad_fanout_is_refused_before_torch_is_imported() -> None:
    probe = ("import json, sys\nfrom dpgl.cli import main\ntry:\n    main(sys.argv[1:])\n"
             "    code = 0\nexcept SystemExit as e:\n    code = int(e.code or 0)\n"
             "print('PROBE', json.dumps({'code': code, 'torch': 'torch' in sys.modules}))")
    proc = subprocess.run([sys.executable, "-c", probe, "train", "--dataset", "cora",
                           "--method", "none", "-p", "fanout=[10,10]"],
                          capture_output=True, text=True, timeout=120)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("PROBE"))
    result = json.loads(line.split(" ", 1)[1])
    assert result == {"code": 2, "torch": False}, proc.stderr
    assert "set batch_size" in proc.stderr


def test_a_run_trains_in_minibatches_on_the_same_estimated_graph() -> None:
    """Through the run path: the same configuration full batch and mini-batch estimates the
    same graph (same split and Blink release: the trainer's seed is drawn after them) and
    records the batching; the mini-batch run is deterministic."""
    from dpgl.experiments.config import RunConfig
    from dpgl.experiments.execute import execute_run

    base = {"epochs": 10, "patience": None}
    cfg = {"dataset": "csbm", "method": "blink-hybrid", "model": "gcn", "epsilon": 4.0,
           "seed": 1}
    full = execute_run(RunConfig(**cfg, params=base))
    mini = [execute_run(RunConfig(**cfg, params={**base, "batch_size": 256,
                                                 "fanout": [5, 5]})) for _ in range(2)]
    assert mini[0].metrics == mini[1].metrics
    for key in ("estimated_edges", "estimated_weight_sum"):
        assert mini[0].info[key] == full.info[key]
    assert mini[0].privacy == full.privacy
    assert mini[0].info["fanout"] == [5, 5] and mini[0].info["batches_per_epoch"] == 4
    assert "batch_size" not in full.info
    assert mini[0].metrics["test_accuracy"] > 0.5


def test_a_grid_wraps_the_list_valued_fanout_once_more() -> None:
    """docs/experiments.md: ``fanout: [[10, 10]]`` is one value, ``[[10, 10], [5, 5]]`` an
    axis of two."""
    from dpgl.experiments.grid import GridSpec

    def fanouts(value: object) -> list[object]:
        grid = GridSpec.from_dict({"name": "g", "datasets": ["csbm"], "seeds": 1,
                                   "methods": ["none"],
                                   "params": {"batch_size": 256, "fanout": value}})
        return [c.params["fanout"] for c in grid.expand(lambda m: False)]

    assert fanouts([[10, 10]]) == [[10, 10]]
    assert fanouts([[10, 10], [5, 5]]) == [[10, 10], [5, 5]]
    assert fanouts(10) == [10]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.filterwarnings("ignore:.*deterministic.*:UserWarning")
@pytest.mark.parametrize("kind", ["gcn", "sage", "gat"])
def test_minibatch_on_cuda_is_deterministic_and_returns_the_model_home(kind: str) -> None:
    """Sampling stays on the CPU, the batches and the blocks move to the GPU; the same seed
    gives the same numbers twice there (not run on the CPU-only machines; docs/gpu.md)."""
    x, y, ei, w = _graph(n=200, directed=False)
    perm = torch.from_numpy(np.random.default_rng(0).permutation(200))
    results, devices = [], []
    for _ in range(2):
        model = build_node_model(kind, x.size(1), 2)
        results.append(train_node_minibatch(
            model, sp.csr_matrix(x.numpy()), PreparedGraph(ei, 200, w), y, perm[:100],
            perm[100:150], perm[150:], TrainConfig(epochs=8, patience=None),
            MiniBatchConfig(32, (4, 4)), seed=1, device="cuda").metrics)
        devices.append(next(model.parameters()).device.type)
    assert results[0] == results[1] and devices == ["cpu", "cpu"]
    assert results[0]["test_accuracy"] > 0.8
