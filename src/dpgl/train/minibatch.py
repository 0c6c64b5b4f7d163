"""Mini-batch node classification with neighbour sampling, for graphs or features too large
for full-batch training (issue #15): GCN, GraphSAGE and GAT (:class:`~dpgl.nn.NodeModel`)
on any graph a method trains on, with the edge weights an estimator gives.

Training. Every epoch shuffles the training nodes into batches of ``batch_size`` seeds
(:class:`torch_geometric.loader.NodeLoader` driven by
:class:`~dpgl.train.sampling.UniformNeighbourSampler`, ``fanout[h]`` in-neighbours per node
at hop h, -1 all); the model runs on the sampled subgraph (all its layers on all its nodes,
as PyG's ``NeighborLoader`` examples do) and the loss is the mean cross-entropy of the
seeds. One Adam step per batch. How each model sees the subgraph, with the sampled edges'
weights (the estimator's, e.g. Blink's posteriors; 1 for an unweighted graph):

* GCN: ``D^-1/2 (A + I) D^-1/2`` of the *subgraph* (weighted degrees counted over the
  sampled edges, self-loops weight 1): normalised per subgraph, as PyG's ``GCNConv``
  (``gcn_norm`` with ``edge_weight``) does on a sampled subgraph. A seed's degree is then
  ``1 + sum`` of its sampled weights, not of all its weights, and the last hop's nodes have
  only their self-loop (degree 1); this is the usual neighbour-sampled GCN, not an unbiased
  estimate of the full-graph layer.
* GraphSAGE: the weighted mean over the sampled in-neighbours plus the root weight (Blink
  App. B Eq. 22 on the subgraph).
* GAT: the weighted attention of :class:`~dpgl.nn.gat.WeightedGATConv` over the sampled
  in-edges plus self-loops: the weights enter exactly as in full-batch training
  (``alpha_ij ~ w_ij exp(e_ij)``, message ``w_ij alpha_ij W h_j``), never ignored.
* MLP: the batch's seeds only (no sampling).

Evaluation (every epoch on validation, at the end on all splits): **layer-wise inference
with every neighbour**, by node blocks. Layer l's output is computed for all nodes, a block
of ``eval_batch_size`` target nodes at a time, from layer l-1's outputs of the targets and
all their in-neighbours (the blocks come from the same sampler with fanout -1; they are
built once and cached). GCN blocks are normalised with the whole graph's degrees, so the
logits equal those of a full-batch forward up to float rounding (tested), unlike sampled
evaluation. The selection rule is the full-batch trainer's (:func:`~dpgl.train.node.
train_with_selection`: best validation accuracy, ties lower loss, ``patience``).

Determinism: the model is initialised and dropout drawn under ``seed`` (as full batch); the
batch order and the neighbour draws come from two torch generators seeded from ``seed``, so
the same seed gives the same numbers on one device. Sampling runs on the CPU; the batches
move to ``device``. Features stay where they are given (a dense tensor, or a SciPy sparse
matrix whose rows a batch gathers into a sparse operator), so only a batch's rows are on the
device.

Privacy: training on an edge-LDP or feature-LDP release is post-processing, sampled or not;
node-DP methods train with DP-SGD and their own samplers (docs/node-dp.md, "Mini-batches and
sampling").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.loader import NodeLoader

from dpgl.device import target_device
from dpgl.errors import ConfigError
from dpgl.graph.propagation import SparseOperator, gcn_degrees
from dpgl.nn.layers import Features
from dpgl.nn.models import NodeModel
from dpgl.nn.prepared import PreparedGraph
from dpgl.train.fanout import ALL, check_fanout
from dpgl.train.node import NOISE_CAPPED, TrainConfig, TrainResult, train_with_selection
from dpgl.train.sampling import UniformNeighbourSampler

__all__ = ["FeatureRows", "MiniBatchConfig", "layerwise_inference", "node_loader",
           "train_node_minibatch"]


@dataclass(frozen=True)
class MiniBatchConfig:
    """Mini-batches of ``batch_size`` seed nodes; ``fanout`` in-neighbours sampled per node
    and layer (first entry: the seeds' neighbours; -1: all; None: all at every layer);
    ``eval_batch_size`` target nodes per block of layer-wise inference (None: batch_size)."""

    batch_size: int
    fanout: tuple[int, ...] | None = None
    eval_batch_size: int | None = None

    def __post_init__(self) -> None:
        for name in ("batch_size", "eval_batch_size"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigError(f"{name} must be an int >= 1, got {v!r}")
        if self.fanout is not None:
            object.__setattr__(self, "fanout", check_fanout(self.fanout))

    def fanouts(self, num_layers: int) -> tuple[int, ...]:
        """One fanout per layer (ConfigError when the lengths differ)."""
        if self.fanout is None:
            return (ALL,) * num_layers
        return check_fanout(self.fanout, num_layers)


class FeatureRows:
    """Node features read a batch of rows at a time: a dense tensor (rows indexed) or a SciPy
    sparse matrix (rows as a :class:`~dpgl.graph.propagation.SparseOperator`, for wide
    bag-of-words features: a batch's first layer costs O(nnz x hidden))."""

    def __init__(self, x: torch.Tensor | sp.spmatrix | sp.sparray) -> None:
        if isinstance(x, torch.Tensor):
            if x.dim() != 2:
                raise ConfigError(f"features must be a [num_nodes, dim] matrix, got "
                                  f"{tuple(x.shape)}")
            self.dense: torch.Tensor | None = x
            self.sparse: sp.csr_matrix | None = None
        elif sp.issparse(x):
            self.dense, self.sparse = None, sp.csr_matrix(x, dtype=np.float32)
        else:
            raise ConfigError(f"features must be a tensor or a SciPy sparse matrix, got "
                              f"{type(x).__name__}")
        shape = self.dense.shape if self.dense is not None else self.sparse.shape  # type: ignore[union-attr]
        self.num_nodes, self.dim = int(shape[0]), int(shape[1])

    def rows(self, idx: torch.Tensor, device: torch.device | str) -> Features:
        """The rows ``idx`` on ``device``."""
        if self.dense is not None:
            return self.dense[idx.to(self.dense.device)].to(device)
        assert self.sparse is not None
        return SparseOperator(self.sparse[idx.cpu().numpy()]).to(device)


def _loader_data(graph: PreparedGraph | None, num_nodes: int) -> Data:
    """What the loader filters per batch: the edges and their weights (the features are read
    by :class:`FeatureRows`, not copied per batch by PyG)."""
    if graph is None:
        return Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=num_nodes)
    data = Data(edge_index=graph.edge_index.cpu(), num_nodes=num_nodes)
    if graph.edge_weight is not None:
        data.edge_weight = graph.edge_weight.cpu()
    return data


def node_loader(graph: PreparedGraph | None, num_nodes: int, input_nodes: torch.Tensor,
                batch_size: int, fanout: Sequence[int], *, shuffle: bool, seed: int = 0
                ) -> NodeLoader:
    """A :class:`~torch_geometric.loader.NodeLoader` over ``input_nodes`` with a
    :class:`UniformNeighbourSampler` (``graph`` None: no edges, seeds only). Batch order
    (``shuffle``) and neighbour draws are seeded from ``seed``. Each batch is a ``Data``
    with ``n_id`` (seeds first), ``batch_size``, local ``edge_index``, ``e_id`` and, for a
    weighted graph, the sampled edges' ``edge_weight``."""
    data = _loader_data(graph, num_nodes)
    seeds = np.random.SeedSequence(int(seed)).generate_state(2)
    sample_gen = torch.Generator()
    sample_gen.manual_seed(int(seeds[0]))
    order_gen = torch.Generator()
    order_gen.manual_seed(int(seeds[1]))
    sampler = UniformNeighbourSampler(data.edge_index, num_nodes, fanout, generator=sample_gen)
    return NodeLoader(data, node_sampler=sampler, input_nodes=input_nodes.cpu().long(),
                      batch_size=int(batch_size), shuffle=shuffle, generator=order_gen)


def _batch_graph(batch: Data, device: torch.device,
                 degrees: np.ndarray | None = None) -> PreparedGraph:
    weight = batch.edge_weight if "edge_weight" in batch else None
    deg = None if degrees is None else torch.from_numpy(degrees[batch.n_id.numpy()])
    return PreparedGraph(batch.edge_index, int(batch.n_id.numel()), weight,
                         gcn_degrees=deg).to(device)


def _check_model(model: torch.nn.Module) -> NodeModel:
    if not isinstance(model, NodeModel):
        raise ConfigError(f"mini-batch training needs a dpgl NodeModel (MLP, GCN, GraphSAGE, "
                          f"GAT), got {type(model).__name__}")
    return model


def _blocks(model: NodeModel, graph: PreparedGraph | None, num_nodes: int, batch_size: int,
            device: torch.device) -> list[tuple[torch.Tensor, int, PreparedGraph | None]]:
    """The full-neighbour blocks of layer-wise inference: (node ids, targets first; the number
    of targets; the block graph on ``device``), every node a target once."""
    uses_graph = model.kind != "mlp" and graph is not None
    degrees = None
    if uses_graph and model.kind == "gcn":
        assert graph is not None
        degrees = gcn_degrees(graph.edge_index.cpu(), num_nodes,
                              None if graph.edge_weight is None else graph.edge_weight.cpu())
    loader = node_loader(graph if uses_graph else None, num_nodes, torch.arange(num_nodes),
                         batch_size, (ALL,), shuffle=False)
    return [(b.n_id, int(b.batch_size), _batch_graph(b, device, degrees) if uses_graph else None)
            for b in loader]


def layerwise_inference(model: NodeModel, features: FeatureRows, graph: PreparedGraph | None,
                        *, batch_size: int, device: torch.device | str | None = None,
                        blocks: list[tuple[torch.Tensor, int, PreparedGraph | None]] | None = None
                        ) -> torch.Tensor:
    """Logits of every node from every neighbour, one layer at a time over blocks of
    ``batch_size`` target nodes (:meth:`~dpgl.nn.NodeModel.layer_step`); equal to
    ``model(x, graph)`` up to float rounding. Runs in the model's current mode (the trainer
    calls it in evaluation mode, without gradients)."""
    model = _check_model(model)
    dev = target_device(device)
    n = features.num_nodes
    if blocks is None:
        blocks = _blocks(model, graph, n, batch_size, dev)
    h: torch.Tensor | None = None
    for i in range(len(model.layers)):
        out: torch.Tensor | None = None
        for n_id, size, block in blocks:
            inp: Features = features.rows(n_id, dev) if h is None else h[n_id.to(dev)]
            if h is None and isinstance(inp, torch.Tensor):
                inp = F.dropout(inp, model.config.input_dropout, model.training)
            res = model.layer_step(i, inp, block)[:size]
            if out is None:
                out = res.new_zeros(n, res.size(1))
            out[n_id[:size].to(dev)] = res
        assert out is not None
        h = out
    assert h is not None
    return h


def train_node_minibatch(
    model: torch.nn.Module,
    x: torch.Tensor | sp.spmatrix | sp.sparray | FeatureRows,
    graph: PreparedGraph | None,
    y: torch.Tensor,
    train_idx: torch.Tensor,
    val_idx: torch.Tensor,
    test_idx: torch.Tensor,
    config: TrainConfig,
    batching: MiniBatchConfig,
    *,
    seed: int,
    train_targets: torch.Tensor | None = None,
    device: torch.device | str | None = None,
) -> TrainResult:
    """Train ``model`` (a :class:`~dpgl.nn.NodeModel`) on mini-batches of sampled
    subgraphs of ``graph`` (module docstring); same arguments, selection rule and result as
    :func:`~dpgl.train.node.train_node_classifier`, with the features ``x`` and the graph
    given instead of a forward function, and ``batching``. Facts about the batches (batches per
    epoch, mean sampled nodes and edges per training batch, inference blocks) are in
    ``TrainResult.history[-1]``."""
    net = _check_model(model)
    dev = target_device(device)
    features = x if isinstance(x, FeatureRows) else FeatureRows(x)
    n = features.num_nodes
    if graph is not None and graph.num_nodes != n:
        raise ConfigError(f"the graph has {graph.num_nodes} nodes, the features {n} rows")
    if train_idx.numel() == 0:
        raise ConfigError("the training split is empty")
    if config.select_by == NOISE_CAPPED:
        raise ConfigError("select_by='lpgnn-noise-capped' measures the training accuracy of "
                          "a full-batch forward: train full batch (unset batch_size)")
    fanout = batching.fanouts(len(net.layers))
    uses_graph = net.kind != "mlp" and graph is not None
    loader = node_loader(graph if uses_graph else None, n, train_idx, batching.batch_size,
                         fanout, shuffle=True, seed=seed)
    blocks = _blocks(net, graph, n, batching.eval_batch_size or batching.batch_size, dev)

    sizes = {"batches": 0, "nodes": 0, "edges": 0}

    def epoch(model: torch.nn.Module, opt: torch.optim.Optimizer,
              targets: torch.Tensor) -> float:
        total, count = 0.0, 0
        for batch in loader:
            size = int(batch.batch_size)
            sizes["batches"] += 1
            sizes["nodes"] += int(batch.n_id.numel())
            sizes["edges"] += int(batch.edge_index.size(1))
            sub = _batch_graph(batch, dev) if uses_graph else None
            out = model(features.rows(batch.n_id, dev), sub)[:size]
            loss = F.cross_entropy(out, targets[batch.n_id[:size].to(dev)])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * size
            count += size
        return total / count

    def predict(model: torch.nn.Module) -> torch.Tensor:
        return layerwise_inference(net, features, graph, batch_size=1, device=dev,
                                   blocks=blocks)

    result = train_with_selection(model, epoch, predict, y, train_idx, val_idx, test_idx,
                                  config, seed=seed, train_targets=train_targets, device=dev)
    result.history.append({"batches_per_epoch": float(math.ceil(train_idx.numel()
                                                                / batching.batch_size)),
                           "mean_batch_nodes": sizes["nodes"] / max(sizes["batches"], 1),
                           "mean_batch_edges": sizes["edges"] / max(sizes["batches"], 1),
                           "eval_blocks": float(len(blocks))})
    return result
